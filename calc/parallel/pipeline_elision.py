"""A pipeline schedule of any length, drawn from a short one: the steady middle elided, the ends exact.

A schedule's warm-up and cool-down (where the bubble is) depend on the stages, not on how many
micro-batches run; in between, every stage is busy and the pattern repeats once per micro-batch
(per ``p`` of them when interleaved, per two for DualPipe, one from each end). So a schedule of
``m`` micro-batches is a short schedule of ``m'`` with the repeats between cut out:
[`elided_schedule`][calc.parallel.pipeline_elision.elided_schedule] simulates the short one and
says where the cut is and how many micro-batches and time units it stands for;
[`drawn_passes`][calc.parallel.pipeline_elision.drawn_passes] gives every pass on either side of
the cut with its real micro-batch number and real time. The tests compare these with the full
simulation, pass by pass, for every schedule. A cut only ever falls where every stage is busy, so
no idle time (the bubble) is ever elided.
"""

from __future__ import annotations

import bisect
import functools
from typing import NamedTuple

from calc.errors import CalcError
from calc.parallel.pipeline_orders import stage_orders
from calc.parallel.pipeline_schedules import (
    MAX_SCHEDULE_OPS,
    Schedule,
    _simulate,
    _units,
    check_schedule,
    pipeline_schedule,
)
from calc.units import parse_positive_int

__all__ = ["DrawnPass", "ElidedSchedule", "Elision", "KEEP_MICROBATCHES", "drawn_passes", "elided_schedule"]

KEEP_MICROBATCHES = 3
"""Steady-state micro-batches (rounded up to the schedule's period) kept on each side of the cut, beyond those
the warm-up and cool-down need: enough to see the repeating pattern before it is elided."""


class Elision(NamedTuple):
    """One cut in a drawn schedule: where it is, and what it stands for.

    Attributes:
        at: Time unit of the short schedule where the cut is (inside a stretch where every stage is busy).
        kinds: The kinds of pass that run across the cut (``"FB"``, ``"FBW"``; GPipe's two cuts ``"F"``
            and ``"B"``): passes of these kinds after the cut have later micro-batch numbers.
        microbatches: Micro-batches elided, all directions together.
        units: Time units elided.
    """

    at: int
    kinds: str
    microbatches: int
    units: int


class DrawnPass(NamedTuple):
    """One pass (or the part of one on one side of a cut) as drawn, in the real schedule's terms.

    Attributes:
        stage: Device index, 0-based.
        start: Real start time (the cut's side of it, for a pass the cut crosses).
        end: Real end time, likewise.
        kind: ``"F"``, ``"B"`` or ``"W"``.
        microbatch: Real micro-batch index, 0-based.
        chunk: Model chunk on the device, 0-based.
        overlapped: One of a DualPipe overlapped pair.
        segment: How many cuts lie before it (0 left of every cut).
    """

    stage: int
    start: int
    end: int
    kind: str
    microbatch: int
    chunk: int
    overlapped: bool
    segment: int


class ElidedSchedule(NamedTuple):
    """A schedule of ``m`` micro-batches as a short schedule and its cuts (no cut: the full schedule).

    Attributes:
        schedule: The short (or full) schedule, as simulated.
        cuts: Its cuts, in time order.
        m: The real schedule's micro-batches.
    """

    schedule: Schedule
    cuts: tuple[Elision, ...]
    m: int


def _period(name: str, p: int) -> int:
    """Micro-batches in one repeat of the steady state (interleaving needs ``m`` a multiple of ``p``)."""
    return {"interleaved": p, "dualpipe": 2}.get(name, 1)


def _short_m(p: int, name: str, v: int, keep: int) -> int:
    """The short schedule's micro-batches: its warm-up, cool-down and ``keep`` steady ones each side of a cut."""
    step = _period(name, p)
    base = {"interleaved": 2 * p, "zb-h1": 2 * p, "dualpipe": 4 * p}.get(name, p)
    return base + step * -(-2 * keep // step)


def _phase_change(s: Schedule) -> tuple[int, int]:
    """GPipe's turn from forwards to backwards: the last forward's end and the first backward's start."""
    ends = [op.start + op.duration for ops in s.ops for op in ops if op.kind == "F"]
    starts = [op.start for ops in s.ops for op in ops if op.kind == "B"]
    return max(ends), min(starts)


def _all_busy(s: Schedule, split_at: tuple[int, int] | None = None) -> list[tuple[int, int, str]]:
    """The stretches ``(start, end, kinds)`` where every stage is busy, with the kinds of pass run in them.

    ``split_at``: ``(a, b)`` keeps only what lies before ``min(a, b)`` or after ``max(a, b)`` (GPipe's forwards
    and backwards are cut apart)."""
    edges: list[list[tuple[int, int]]] = []
    for ops in s.ops:
        merged: list[tuple[int, int]] = []
        for op in ops:
            if merged and op.start <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], op.start + op.duration))
            else:
                merged.append((op.start, op.start + op.duration))
        edges.append(merged)
    common = edges[0]
    for row in edges[1:]:
        out, i, j = [], 0, 0
        while i < len(common) and j < len(row):
            lo, hi = max(common[i][0], row[j][0]), min(common[i][1], row[j][1])
            if lo < hi:
                out.append((lo, hi))
            if common[i][1] < row[j][1]:
                i += 1
            else:
                j += 1
        common = out
    if split_at is not None:
        a, b = min(split_at), max(split_at)
        common = [(lo, min(hi, a)) for lo, hi in common if lo < a] + [(max(lo, b), hi) for lo, hi in common if hi > b]
    events = sorted((op.start, op.kind) for ops in s.ops for op in ops)
    starts = [start for start, _ in events]
    out = []
    for lo, hi in common:  # the kinds of the passes that start in it (disjoint stretches: one pass over all)
        ran = {kind for _, kind in events[bisect.bisect_left(starts, lo) : bisect.bisect_left(starts, hi)]}
        out.append((lo, hi, "".join(k for k in "FBW" if k in ran)))
    return out


@functools.lru_cache(maxsize=8)
def _short_schedule(
    stages: int, short: int, name: str, chunks: int, units: tuple[int, int, int, int]
) -> tuple[Schedule, list[tuple[int, int, str]]]:
    """The short schedule and its all-busy stretches, simulated once for the drawing and its text (both immutable)."""
    fwd, bwd, wgt, overlap = units
    orders = stage_orders(stages, short, name, chunks)
    placed, free = _simulate(orders, name, stages * chunks - 1, fwd, bwd, wgt, overlap)
    s = Schedule(stages, short, chunks, name, bwd, tuple(map(tuple, placed)), max(free), fwd, wgt)
    return s, _all_busy(s, split_at=_phase_change(s) if name == "gpipe" else None)


def elided_schedule(
    p: int, m: int, schedule: str = "1f1b", v: int = 1, *, keep: int = KEEP_MICROBATCHES, **units: int | None
) -> ElidedSchedule:
    """A short schedule and the cuts that make it stand for ``m`` micro-batches.

    When ``m`` is at most the short schedule's own count, this is the full
    [`pipeline_schedule`][calc.parallel.pipeline_schedules.pipeline_schedule] and no cut. Otherwise the short
    schedule runs its warm-up, ``keep`` steady micro-batches, one cut per stretch where every stage is busy (one
    for the 1F1B family; GPipe has two, in its forwards and in its backwards), ``keep`` more, and its cool-down;
    each cut stands for ``m - m'`` micro-batches of ``v·(F + B)`` time units each (each stage runs every pass of
    every micro-batch once per chunk, back to back, in the steady state: Narayanan et al. 2021 Sec. 2.2).

    Args:
        p: Stages.
        m: Micro-batches per step.
        schedule: One of [`SCHEDULES`][calc.parallel.pipeline_schedules.SCHEDULES].
        v: Model chunks per stage (interleaved only).
        keep: Steady micro-batches kept each side of the cut.
        **units: ``backward_units``, ``forward_units``, ``weight_units``, as
            [`pipeline_schedule`][calc.parallel.pipeline_schedules.pipeline_schedule] takes them.

    Returns:
        The short schedule (its ``m`` its own count), its cuts, and the real ``m``.

    Examples:
        >>> short, cuts, m = elided_schedule(8, 1024)
        >>> short.m, cuts
        (14, (Elision(at=32, kinds='FB', microbatches=1010, units=3030),))
        >>> short.makespan + sum(c.units for c in cuts) == pipeline_schedule(8, 32).makespan + (1024 - 32) * 3
        True
        >>> elided_schedule(4, 8).cuts
        ()
    """
    stages, micro, name, chunks = check_schedule(p, m, schedule, v)
    short = _short_m(stages, name, chunks, parse_positive_int(keep, "keep"))
    if micro <= short + _period(name, stages):
        return ElidedSchedule(pipeline_schedule(stages, micro, name, chunks, **units), (), micro)
    if set(units) - {"backward_units", "forward_units", "weight_units"}:
        raise TypeError(f"elided_schedule() got unexpected keyword arguments {sorted(units)}")
    got = units.get
    fwd, bwd, wgt, overlap = _units(name, got("forward_units", 1), got("backward_units", 2), got("weight_units"), None)
    if 2 * stages * short * chunks > MAX_SCHEDULE_OPS:
        msg = f"is too large to draw with v={chunks}: even the short schedule ({short} micro-batches) has more than"
        raise CalcError("p", f"{msg} {MAX_SCHEDULE_OPS:,} passes", stages)
    s, stretches = _short_schedule(stages, short, name, chunks, (fwd, bwd, wgt, overlap))
    cuts = []
    for kinds in ("F", "B") if name == "gpipe" else ("",):  # GPipe: one cut in its forwards, one in its backwards
        lo, hi, ran = max((x for x in stretches if kinds in x[2]), key=lambda x: x[1] - x[0])
        # every stage runs each micro-batch's passes of these kinds once per chunk, back to back
        per = fwd * ("F" in ran) + bwd * ("B" in ran)
        cuts.append(Elision((lo + hi) // 2, ran, micro - short, (micro - short) * chunks * per))
    cuts.sort()
    return ElidedSchedule(s, tuple(cuts), micro)


def _real_id(s: Schedule, m: int, kind: str, microbatch: int, cuts_before: tuple[Elision, ...]) -> int:
    """A short-schedule micro-batch number as the real schedule numbers it (a ``W`` moves on with its ``B``)."""
    kind = "B" if kind == "W" else kind
    if s.schedule == "dualpipe":
        half, shift = s.m // 2, sum(c.microbatches for c in cuts_before if kind in c.kinds) // 2
        return microbatch + shift + (m // 2 - half if microbatch >= half else 0)
    return microbatch + sum(c.microbatches for c in cuts_before if kind in c.kinds)


def drawn_passes(elided: ElidedSchedule) -> list[DrawnPass]:
    """Every pass of a short schedule on either side of its cuts, in the real schedule's micro-batches and times.

    A pass a cut runs across is split in two at the cut: its start on one side, the same shape on the other
    (the repeat the cut stands for), with the next micro-batch numbers.

    Args:
        elided: From [`elided_schedule`][calc.parallel.pipeline_elision.elided_schedule].

    Returns:
        The passes, stage by stage, in time order.

    Examples:
        >>> passes = drawn_passes(elided_schedule(2, 100, backward_units=1))
        >>> [(d.kind, d.microbatch + 1, d.start) for d in passes if d.stage == 0][-3:]
        [('F', 100, 198), ('B', 99, 199), ('B', 100, 201)]
    """
    s, cuts, m = elided
    out = []
    for ops in s.ops:
        for op in ops:
            start, end = op.start, op.start + op.duration
            offset = 0
            for n in range(len(cuts) + 1):
                lo = cuts[n - 1].at if n else None
                hi = cuts[n].at if n < len(cuts) else None
                a = start if lo is None else max(start, lo)
                b = end if hi is None else min(end, hi)
                if a < b:
                    real = _real_id(s, m, op.kind, op.microbatch, cuts[:n])
                    out.append(DrawnPass(op.stage, a + offset, b + offset, op.kind, real, op.chunk, op.overlapped, n))
                if n < len(cuts):
                    offset += cuts[n].units
    return out
