"""Pipeline schedules as data: the order each stage runs its passes in, and a simulation that times them.

Five schedules, each a fixed per-stage order of passes (see
[`SCHEDULES`][calc.parallel.pipeline_schedules.SCHEDULES]); the simulation starts every pass as soon as its
stage is free and its input has arrived, so bubbles and in-flight activations are *measured*
from the result, never assumed. Passes are ``F`` (forward), ``B`` (backward: input gradients,
plus the weight gradients unless the schedule splits them off) and ``W`` (weight gradients, in
the schedules that split the backward: ZB-H1 and DualPipe). DualPipe runs some forward and
backward passes of two micro-batches at once; those pairs are two ops with the same start and
duration, both marked ``overlapped``.

The simulation is event driven: each stage advances through its order until a pass needs an
input not yet computed, then waits on that one input; finishing a pass wakes the one stage
waiting on it. Every pass is placed exactly once, so building a schedule costs time linear in
its passes, ``O(p·m·v)``, whatever ``p`` is.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import NamedTuple

from calc.errors import CalcError
from calc.parallel.pipeline_orders import _Pass, stage_orders
from calc.units import parse_positive_int

__all__ = [
    "BUBBLE_CONVENTIONS",
    "MAX_SCHEDULE_OPS",
    "PipelineOp",
    "SCHEDULES",
    "SPLIT_BACKWARD",
    "Schedule",
    "Slot",
    "check_schedule",
    "pipeline_schedule",
]

SCHEDULES: tuple[str, ...] = ("gpipe", "1f1b", "interleaved", "zb-h1", "dualpipe")
"""Pipeline schedules, by the names every function here takes.

* ``"gpipe"``: all forwards, then all backwards (Huang et al. 2019, arXiv:1811.06965);
* ``"1f1b"``: one forward, one backward (PipeDream-Flush; Narayanan et al. 2021, arXiv:2104.04473,
  Sec. 2.2.1);
* ``"interleaved"``: 1F1B over ``v`` model chunks per stage (Narayanan et al. 2021, Sec. 2.2.2);
* ``"zb-h1"``: zero-bubble ZB-H1, 1F1B with the weight-gradient passes deferred into the bubble
  (Qi et al. 2023, "Zero Bubble Pipeline Parallelism", arXiv:2401.10241, Sec. 2.1);
* ``"dualpipe"``: DeepSeek-V3's bidirectional schedule (DeepSeek-AI 2024, arXiv:2412.19437, Sec. 3.2.1).
"""

SPLIT_BACKWARD: frozenset[str] = frozenset({"zb-h1", "dualpipe"})
"""Schedules that run the weight-gradient part of the backward as separate ``W`` passes."""

BUBBLE_CONVENTIONS: tuple[str, ...] = ("ideal", "total")
"""``ideal``: bubble / ideal time (Narayanan's ``(p-1)/m``); ``total``: bubble / total time (``(p-1)/(m+p-1)``)."""

MAX_SCHEDULE_OPS = 20_000
"""Most forward+backward passes ``2·p·m·v`` that
[`pipeline_schedule`][calc.parallel.pipeline_schedules.pipeline_schedule]
builds.

The bubble formulas have no limit; the schedule is data meant to be drawn or checked, and a
drawing of more passes than this is not readable.
"""


def _schedule_name(schedule: object) -> str:
    if schedule not in SCHEDULES:
        raise CalcError("schedule", f"must be one of {', '.join(SCHEDULES)}", schedule, code="unknown-name")
    return str(schedule)


def check_schedule(p: object, m: object, schedule: object, v: object) -> tuple[int, int, str, int]:
    """Validate ``(p, m, schedule, v)`` as every schedule function here needs them.

    Interleaving needs ``m`` a multiple of ``p`` (Narayanan et al. 2021, Sec. 2.2.2); DualPipe an
    even ``p`` and an even ``m`` of at least ``2p`` (DeepSeek's reference implementation asserts
    ``num_chunks >= num_ranks * 2``, half the micro-batches entering from each end).

    Args:
        p: Pipeline stages (devices).
        m: Micro-batches per step.
        schedule: One of [`SCHEDULES`][calc.parallel.pipeline_schedules.SCHEDULES].
        v: Model chunks per stage (only the interleaved schedule takes ``v > 1``).

    Returns:
        ``(p, m, schedule, v)`` as clean values.

    Raises:
        CalcError: Naming the field, the rule and the value.

    Examples:
        >>> check_schedule(8, 16, "dualpipe", 1)
        (8, 16, 'dualpipe', 1)
        >>> check_schedule(8, 12, "dualpipe", 1)
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: m must be even and at least 2p (= 16) for the dualpipe schedule (got 12)
    """
    stages = parse_positive_int(p, "p")
    micro = parse_positive_int(m, "m")
    name = _schedule_name(schedule)
    chunks = parse_positive_int(v, "v")
    if name != "interleaved" and chunks != 1:
        raise CalcError("v", f"must be 1 for the {name} schedule (model chunks need the interleaved schedule)", chunks)
    if name == "interleaved" and micro % stages:
        raise CalcError(
            "m", f"must be a multiple of p (= {stages}) for the interleaved schedule", micro, code="not-divisible"
        )
    if name == "dualpipe":
        if stages % 2:
            raise CalcError("p", "must be even for the dualpipe schedule (stages pair up from both ends)", stages)
        if micro % 2 or micro < 2 * stages:
            raise CalcError("m", f"must be even and at least 2p (= {2 * stages}) for the dualpipe schedule", micro)
    return stages, micro, name, chunks


class PipelineOp(NamedTuple):
    """One pass of one model chunk on one stage (a named tuple: cheap to build by the thousand).

    Attributes:
        stage: Device index, 0-based.
        start: First time unit it occupies.
        duration: Time units it takes.
        kind: ``"F"`` (forward), ``"B"`` (backward) or ``"W"`` (weight gradients, split schedules only).
        microbatch: Micro-batch index, 0-based (DualPipe: the first ``m/2`` enter at stage 0, the rest
            at stage ``p-1``).
        chunk: Model chunk on this device, 0-based (interleaved: ``0..v-1``; DualPipe: 0 for the
            chunk that micro-batches entering at stage 0 use, 1 for the other).
        overlapped: Runs at the same time as the other pass of a DualPipe forward-and-backward pair.
    """

    stage: int
    start: int
    duration: int
    kind: str
    microbatch: int
    chunk: int
    overlapped: bool = False


class Slot(NamedTuple):
    """One time unit of one stage.

    Attributes:
        time: The time unit, 0-based.
        kind: ``"F"``, ``"B"``, ``"W"`` or ``"idle"`` (an overlapped pair shows its backward).
        microbatch: Micro-batch index (0-based), ``None`` when idle.
        chunk: Model chunk (0-based), ``None`` when idle.
    """

    time: int
    kind: str
    microbatch: int | None
    chunk: int | None


def _busy(ops: tuple[PipelineOp, ...]) -> int:
    total = 0
    previous = None
    for op in ops:
        if not (op.overlapped and previous is not None and previous.overlapped and previous.start == op.start):
            total += op.duration
        previous = op
    return total


@dataclass(frozen=True)
class Schedule:
    """A pipeline schedule as data.

    Attributes:
        p: Stages.
        m: Micro-batches.
        v: Model chunks per stage.
        schedule: One of [`SCHEDULES`][calc.parallel.pipeline_schedules.SCHEDULES].
        backward_units: Time units of one whole backward pass (input and weight gradients).
        ops: Per stage, its passes in time order.
        makespan: Time units from the first forward to the last backward.
        forward_units: Time units of one forward pass.
        weight_units: Time units of the weight-gradient part of a backward (0 unless the schedule
            splits it off as ``W`` passes).
    """

    p: int
    m: int
    v: int
    schedule: str
    backward_units: int
    ops: tuple[tuple[PipelineOp, ...], ...]
    makespan: int
    forward_units: int = 1
    weight_units: int = 0

    @property
    def stages(self) -> tuple[tuple[Slot, ...], ...]:
        """Per stage, one [`Slot`][calc.parallel.pipeline_schedules.Slot] per time unit from 0 to ``makespan - 1``.

        Examples:
            >>> [s.kind for s in pipeline_schedule(2, 1, backward_units=1).stages[1]]
            ['idle', 'F', 'B', 'idle']
        """
        out = []
        for ops in self.ops:
            row: list[Slot] = [Slot(t, "idle", None, None) for t in range(self.makespan)]
            for op in ops:
                for t in range(op.start, op.start + op.duration):
                    row[t] = Slot(t, op.kind, op.microbatch, op.chunk)
            out.append(tuple(row))
        return tuple(out)

    @property
    def busy_units(self) -> int:
        """Busy time units of the busiest stage: ``m·v·(forward + backward)`` unless passes overlap.

        Examples:
            >>> pipeline_schedule(4, 8).busy_units
            24
        """
        return max(_busy(ops) for ops in self.ops)

    def idle_units(self, stage: int) -> int:
        """Idle time units of ``stage`` within the makespan.

        Examples:
            >>> pipeline_schedule(4, 8).idle_units(0)
            9
        """
        return self.makespan - _busy(self.ops[stage])

    def bubble_units(self) -> int:
        """The bubble: idle time units of the idlest stage within the makespan.

        Examples:
            >>> pipeline_schedule(4, 8).bubble_units(), pipeline_schedule(4, 8, "zb-h1").bubble_units()
            (9, 3)
        """
        return max(self.idle_units(i) for i in range(self.p))

    def bubble(self, convention: str = "ideal") -> Fraction:
        """The bubble measured from the schedule: idle / busy (``ideal``) or idle / makespan (``total``).

        The idlest stage is used (in GPipe, 1F1B and interleaving every stage idles the same time).

        Examples:
            >>> sched = pipeline_schedule(4, 8)
            >>> sched.bubble(), sched.bubble("total")
            (Fraction(3, 8), Fraction(3, 11))
        """
        if convention not in BUBBLE_CONVENTIONS:
            raise CalcError(
                "convention", f"must be one of {', '.join(BUBBLE_CONVENTIONS)}", convention, code="unknown-name"
            )
        idle = self.bubble_units()
        return Fraction(idle, self.makespan - idle if convention == "ideal" else self.makespan)

    def peak_in_flight(self, stage: int = 0) -> int:
        """Most micro-batch chunks whose forward has started and whose backward has not finished.

        This is how many chunks' activations ``stage`` holds at once: ``m`` for GPipe, at most
        ``p`` for 1F1B and ZB-H1 on the first stage (Narayanan et al. 2021, Sec. 2.2.1; Qi et al.
        2023, Sec. 2.1), ``p + 1`` for DualPipe (DeepSeek-V3 report, Table 2). An overlapped pair's
        forward is counted before its backward frees anything. A split schedule's ``W`` pass still
        needs the layer inputs and output gradients, a smaller residue that this count leaves out,
        as Qi et al. do (their ``M_W`` next to ``M_B``).

        Examples:
            >>> pipeline_schedule(4, 8, "gpipe").peak_in_flight(), pipeline_schedule(4, 8).peak_in_flight()
            (8, 4)
        """
        live = peak = 0
        for op in self.ops[stage]:
            if op.kind == "F":
                live += 1
                peak = max(peak, live)
            elif op.kind == "B":
                live -= 1
        return peak

    def max_in_flight(self) -> int:
        """[`peak_in_flight`][calc.parallel.pipeline_schedules.Schedule.peak_in_flight] at the busiest stage.

        Examples:
            >>> pipeline_schedule(4, 8, "dualpipe").max_in_flight()
            5
        """
        return max(self.peak_in_flight(i) for i in range(self.p))

    def as_dict(self) -> dict[str, object]:
        """The schedule as plain data: parameters, measured bubbles and ops per stage.

        Examples:
            >>> pipeline_schedule(2, 2).as_dict()["ops"][0][0]
            {'start': 0, 'duration': 1, 'kind': 'F', 'microbatch': 0, 'chunk': 0, 'overlapped': False}
        """
        return {
            "p": self.p,
            "m": self.m,
            "v": self.v,
            "schedule": self.schedule,
            "forward_units": self.forward_units,
            "backward_units": self.backward_units,
            "weight_units": self.weight_units,
            "makespan": self.makespan,
            "bubble_ideal": float(self.bubble("ideal")),
            "bubble_total": float(self.bubble("total")),
            "ops": [
                [
                    {
                        "start": o.start,
                        "duration": o.duration,
                        "kind": o.kind,
                        "microbatch": o.microbatch,
                        "chunk": o.chunk,
                        "overlapped": o.overlapped,
                    }
                    for o in ops
                ]
                for ops in self.ops
            ],
        }


def _units(
    name: str, forward_units: int, backward_units: int, weight_units: int | None, pair_units: int | None
) -> tuple[int, int, int, int]:
    """``(forward, backward, weight, pair)`` time units, checked (``weight`` is 0 unless the schedule splits)."""
    bwd = parse_positive_int(backward_units, "backward_units")
    fwd = parse_positive_int(forward_units, "forward_units")
    if name in SPLIT_BACKWARD:
        wgt = max(1, bwd // 2) if weight_units is None else parse_positive_int(weight_units, "weight_units")
        if wgt >= bwd:
            raise CalcError(
                "weight_units",
                f"must be less than backward_units (= {bwd}): the input gradients take the rest",
                wgt,
            )
    else:
        wgt = 0
    overlap = fwd + bwd if pair_units is None else parse_positive_int(pair_units, "pair_units")
    return fwd, bwd, wgt, overlap


def _simulate(
    orders: list[list[tuple[_Pass, ...]]], name: str, last: int, fwd: int, bwd: int, wgt: int, overlap: int
) -> tuple[list[list[PipelineOp]], list[int]]:
    """Run every stage's order, each pass as soon as its stage is free and its input is ready (event driven:
    a blocked stage waits on one input, and finishing it wakes that stage). Returns the placed passes per stage
    and each stage's finish time."""
    stages = len(orders)
    split = (
        {(mb, g) for order in orders for task in order for kind, mb, _, g in task if kind == "W"}
        if name in SPLIT_BACKWARD
        else set()
    )
    finish: dict[tuple[str, int, int], int] = {}
    waiting: dict[tuple[str, int, int], list[int]] = {}
    free = [0] * stages
    position = [0] * stages
    placed: list[list[PipelineOp]] = [[] for _ in range(stages)]
    ready = list(range(stages - 1, -1, -1))
    while ready:
        i = ready.pop()
        order = orders[i]
        row = placed[i]
        while position[i] < len(order):
            task = order[position[i]]
            start = free[i]
            blocked = None
            duration = 0
            for kind, mb, _, g in task:
                if kind == "F":
                    dep = ("F", mb, g - 1) if g > 0 else None
                    duration += fwd
                elif kind == "B":
                    dep = ("B", mb, g + 1) if g < last else ("F", mb, g)
                    duration += bwd - wgt if (mb, g) in split else bwd
                else:
                    dep = ("B", mb, g)
                    duration += wgt
                if dep is not None:
                    done = finish.get(dep)
                    if done is None:
                        blocked = dep
                        break
                    start = max(start, done)
            if blocked is not None:
                waiting.setdefault(blocked, []).append(i)
                break
            if len(task) > 1:
                duration = overlap
            end = free[i] = start + duration
            for kind, mb, chunk, g in task:
                key = (kind, mb, g)
                finish[key] = end
                if key in waiting:
                    ready.extend(waiting.pop(key))
                row.append(PipelineOp(i, start, duration, kind, mb, chunk, len(task) > 1))
            position[i] += 1
    if any(position[i] < len(orders[i]) for i in range(stages)):  # pragma: no cover - orders are deadlock-free
        raise RuntimeError("pipeline schedule deadlocked")
    return placed, free


def pipeline_schedule(
    p: int,
    m: int,
    schedule: str = "1f1b",
    v: int = 1,
    *,
    backward_units: int = 2,
    forward_units: int = 1,
    weight_units: int | None = None,
    pair_units: int | None = None,
) -> Schedule:
    """Build a pipeline schedule, op by op, by simulating each stage's order of passes.

    Each stage runs its passes in a fixed order (GPipe: all forwards, then all backwards, Huang
    et al. 2019; 1F1B: ``p - stage - 1`` warm-up forwards, then alternating one forward and one
    backward, Narayanan et al. 2021 Sec. 2.2.1; interleaved: Megatron-LM's order for ``v`` chunks,
    Sec. 2.2.2; ZB-H1: Qi et al. 2023 Sec. 2.1; DualPipe: DeepSeek-V3 report Sec. 3.2.1). A pass
    starts as soon as its stage is free and its input is ready: the forward of model stage ``g``
    needs stage ``g-1``'s forward of that micro-batch, the backward needs stage ``g+1``'s backward
    (or, on the last stage, its own forward), a ``W`` its own ``B``. Chunk ``c`` of device ``i`` is
    model stage ``g = c·p + i`` (interleaved), ``i`` or ``p-1-i`` (DualPipe's two directions).
    Communication takes no time.

    Args:
        p: Stages.
        m: Micro-batches per step.
        schedule: One of [`SCHEDULES`][calc.parallel.pipeline_schedules.SCHEDULES].
        v: Model chunks per stage (interleaved only).
        backward_units: Time units of a whole backward pass (input and weight gradients).
        forward_units: Time units of a forward pass.
        weight_units: ZB-H1 and DualPipe only: the weight-gradient share of ``backward_units``,
            run as separate ``W`` passes; defaults to half of it (at least 1), the
            ``T_B = T_W`` of Qi et al.'s analysis. Must leave the input-gradient pass at least 1 unit.

    Returns:
        A [`Schedule`][calc.parallel.pipeline_schedules.Schedule]; its measured bubble equals the closed forms in
        [`calc.parallel.pipeline`][calc.parallel.pipeline] (the tests check it).

    Raises:
        CalcError: On the inputs [`check_schedule`][calc.parallel.pipeline_schedules.check_schedule] rejects, bad
            unit counts, or more than [`MAX_SCHEDULE_OPS`][calc.parallel.pipeline_schedules.MAX_SCHEDULE_OPS] passes.

    Examples:
        >>> sched = pipeline_schedule(4, 8)
        >>> sched.makespan, sched.bubble()
        (33, Fraction(3, 8))
        >>> "".join(s.kind[0] for s in pipeline_schedule(2, 2, backward_units=1).stages[0])
        'FFiBiB'
        >>> pipeline_schedule(4, 8, "zb-h1").makespan  # 3 m + (p - 1): W passes fill the bubble
        27
    """
    stages, micro, name, chunks = check_schedule(p, m, schedule, v)
    fwd, bwd, wgt, overlap = _units(name, forward_units, backward_units, weight_units, pair_units)
    if 2 * stages * micro * chunks > MAX_SCHEDULE_OPS:
        raise CalcError(
            "m",
            f"is too large to build: 2 × p × m × v must be at most {MAX_SCHEDULE_OPS:,} (p={stages}, v={chunks})",
            micro,
        )
    placed, free = _simulate(
        stage_orders(stages, micro, name, chunks), name, stages * chunks - 1, fwd, bwd, wgt, overlap
    )
    return Schedule(
        p=stages,
        m=micro,
        v=chunks,
        schedule=name,
        backward_units=bwd,
        ops=tuple(tuple(row) for row in placed),
        makespan=max(free),
        forward_units=fwd,
        weight_units=wgt,
    )
