"""Pipeline parallelism: the bubble, the schedule as data, and a drawing of it.

With ``p`` pipeline stages and ``m`` micro-batches per step, a GPipe or 1F1B
schedule leaves every stage idle for ``(p-1)`` forward+backward times per step
(Narayanan et al. 2021, arXiv:2104.04473, Sec. 2.2.1). Two conventions turn that
into a fraction, and both are in use, so both are named here:

* ``"ideal"``: bubble time / ideal (busy) time = ``(p-1)/m``, Narayanan's
  ``t_pb / t_id``;
* ``"total"``: bubble time / total step time = ``(p-1)/(m+p-1)``, the share of
  each GPU's step spent idle.

The interleaved schedule (``v`` model chunks per stage, Sec. 2.2.2) divides the
bubble by ``v`` and requires ``m`` to be a multiple of ``p``.

[`pipeline_schedule`][calc.pipeline.pipeline_schedule] builds the schedule
itself, op by op, by simulating the order each stage runs its passes in; the
bubble measured from that data equals the formulas exactly (the tests check it).
Time is in whole units: a forward pass of one stage's model chunk takes 1 unit,
its backward ``backward_units`` (default 2, backward costing about twice the
forward's FLOPs, as in Narayanan et al. 2021 Eq. 3's derivation).
"""

from __future__ import annotations

import html
from dataclasses import dataclass
from fractions import Fraction

from calc.errors import CalcError
from calc.units import parse_positive_int

__all__ = [
    "BUBBLE_CONVENTIONS",
    "MAX_SCHEDULE_OPS",
    "PipelineOp",
    "SCHEDULES",
    "Schedule",
    "Slot",
    "bubble_fraction",
    "pipeline_schedule",
    "schedule_svg",
]

SCHEDULES: tuple[str, ...] = ("gpipe", "1f1b", "interleaved")
"""Pipeline schedules: GPipe (all forwards, then all backwards), 1F1B (PipeDream-Flush), interleaved 1F1B."""

BUBBLE_CONVENTIONS: tuple[str, ...] = ("ideal", "total")
"""``ideal``: bubble / ideal time (Narayanan's ``(p-1)/m``); ``total``: bubble / total time (``(p-1)/(m+p-1)``)."""

MAX_SCHEDULE_OPS = 20_000
"""Most forward+backward passes ``2·p·m·v`` that [`pipeline_schedule`][calc.pipeline.pipeline_schedule] builds.

The bubble formula has no limit; the schedule is data meant to be drawn, and a
drawing of more passes than this is not readable.
"""


def _schedule_name(schedule: object) -> str:
    if schedule not in SCHEDULES:
        raise CalcError("schedule", f"must be one of {', '.join(SCHEDULES)}", schedule, code="unknown-name")
    return str(schedule)


def _check(p: object, m: object, schedule: object, v: object) -> tuple[int, int, str, int]:
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
    return stages, micro, name, chunks


def bubble_fraction(
    p: int,
    m: int,
    *,
    schedule: str = "1f1b",
    v: int = 1,
    convention: str = "ideal",
) -> Fraction:
    """The pipeline bubble as a fraction, in a named convention.

    Narayanan et al. 2021 (arXiv:2104.04473), Sec. 2.2.1: for GPipe and 1F1B the
    bubble time is ``t_pb = (p-1)(t_f + t_b)`` against an ideal ``t_id = m(t_f + t_b)``,
    so ``t_pb / t_id = (p-1)/m``. Sec. 2.2.2: with ``v`` model chunks per device
    (interleaved) the bubble shrinks to ``(1/v)(p-1)/m``; the schedule requires
    ``m`` to be a multiple of ``p``. The ``total`` convention divides the same bubble
    by the whole step instead: ``(p-1)/(v·m + p-1)``.

    Args:
        p: Pipeline stages (devices).
        m: Micro-batches per step per pipeline.
        schedule: One of [`SCHEDULES`][calc.pipeline.SCHEDULES].
        v: Model chunks per device (only the interleaved schedule takes ``v > 1``).
        convention: ``"ideal"`` (bubble / ideal time) or ``"total"`` (bubble / total time).

    Returns:
        The exact fraction.

    Raises:
        CalcError: On bad numbers, an unknown schedule or convention, ``v > 1`` without
            interleaving, or an interleaved ``m`` that is not a multiple of ``p``.

    Examples:
        >>> bubble_fraction(8, 32)
        Fraction(7, 32)
        >>> bubble_fraction(8, 32, convention="total")
        Fraction(7, 39)
        >>> bubble_fraction(8, 32, schedule="interleaved", v=2)
        Fraction(7, 64)
        >>> bubble_fraction(8, 12, schedule="interleaved", v=2)
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: m must be a multiple of p (= 8) for the interleaved schedule (got 12)
    """
    stages, micro, _, chunks = _check(p, m, schedule, v)
    if convention not in BUBBLE_CONVENTIONS:
        raise CalcError(
            "convention", f"must be one of {', '.join(BUBBLE_CONVENTIONS)}", convention, code="unknown-name"
        )
    if convention == "ideal":
        return Fraction(stages - 1, chunks * micro)
    return Fraction(stages - 1, chunks * micro + stages - 1)


@dataclass(frozen=True)
class PipelineOp:
    """One forward or backward pass of one model chunk on one stage.

    Attributes:
        stage: Device index, 0-based.
        start: First time unit it occupies.
        duration: Time units it takes (1 for ``F``, ``backward_units`` for ``B``).
        kind: ``"F"`` or ``"B"``.
        microbatch: Micro-batch index, 0-based.
        chunk: Model chunk on this device, 0-based (always 0 unless interleaved).
    """

    stage: int
    start: int
    duration: int
    kind: str
    microbatch: int
    chunk: int


@dataclass(frozen=True)
class Slot:
    """One time unit of one stage.

    Attributes:
        time: The time unit, 0-based.
        kind: ``"F"``, ``"B"`` or ``"idle"``.
        microbatch: Micro-batch index (0-based), ``None`` when idle.
        chunk: Model chunk (0-based), ``None`` when idle.
    """

    time: int
    kind: str
    microbatch: int | None
    chunk: int | None


@dataclass(frozen=True)
class Schedule:
    """A pipeline schedule as data.

    Attributes:
        p: Stages.
        m: Micro-batches.
        v: Model chunks per stage.
        schedule: One of [`SCHEDULES`][calc.pipeline.SCHEDULES].
        backward_units: Time units of one backward pass (forward = 1).
        ops: Per stage, its passes in time order.
        makespan: Time units from the first forward to the last backward.
    """

    p: int
    m: int
    v: int
    schedule: str
    backward_units: int
    ops: tuple[tuple[PipelineOp, ...], ...]
    makespan: int

    @property
    def stages(self) -> tuple[tuple[Slot, ...], ...]:
        """Per stage, one [`Slot`][calc.pipeline.Slot] per time unit from 0 to ``makespan - 1``.

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
        """Busy time units of one stage (the same for every stage): ``m·v·(1 + backward_units)``."""
        return self.m * self.v * (1 + self.backward_units)

    def idle_units(self, stage: int) -> int:
        """Idle time units of ``stage`` within the makespan.

        Examples:
            >>> pipeline_schedule(4, 8).idle_units(0)
            9
        """
        return self.makespan - sum(op.duration for op in self.ops[stage])

    def bubble(self, convention: str = "ideal") -> Fraction:
        """The bubble measured from the schedule: idle / busy (``ideal``) or idle / makespan (``total``).

        Every stage is idle for the same time in these schedules; the largest is used.

        Examples:
            >>> sched = pipeline_schedule(4, 8)
            >>> sched.bubble(), sched.bubble("total")
            (Fraction(3, 8), Fraction(3, 11))
        """
        if convention not in BUBBLE_CONVENTIONS:
            raise CalcError(
                "convention", f"must be one of {', '.join(BUBBLE_CONVENTIONS)}", convention, code="unknown-name"
            )
        idle = max(self.idle_units(i) for i in range(self.p))
        return Fraction(idle, self.busy_units if convention == "ideal" else self.makespan)

    def peak_in_flight(self, stage: int = 0) -> int:
        """Most micro-batch chunks whose forward has started and whose backward has not finished.

        This is how many chunks' activations ``stage`` holds at once: ``m`` for GPipe,
        at most ``p`` for 1F1B on the first stage (Narayanan et al. 2021, Sec. 2.2.1).

        Examples:
            >>> pipeline_schedule(4, 8, "gpipe").peak_in_flight(), pipeline_schedule(4, 8).peak_in_flight()
            (8, 4)
        """
        live = peak = 0
        for op in self.ops[stage]:
            if op.kind == "F":
                live += 1
                peak = max(peak, live)
            else:
                live -= 1
        return peak

    def as_dict(self) -> dict[str, object]:
        """The schedule as plain data: parameters, measured bubbles and ops per stage.

        Examples:
            >>> pipeline_schedule(2, 2).as_dict()["ops"][0][0]
            {'start': 0, 'duration': 1, 'kind': 'F', 'microbatch': 0, 'chunk': 0}
        """
        return {
            "p": self.p,
            "m": self.m,
            "v": self.v,
            "schedule": self.schedule,
            "backward_units": self.backward_units,
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
                    }
                    for o in ops
                ]
                for ops in self.ops
            ],
        }


def _stage_order(stage: int, p: int, m: int, name: str, v: int) -> list[tuple[str, int, int]]:
    """The order in which ``stage`` runs its passes: ``(kind, microbatch, chunk)``."""
    if name == "gpipe":
        return [("F", j, 0) for j in range(m)] + [("B", j, 0) for j in range(m)]
    if name == "1f1b":
        warmup = min(p - stage - 1, m)
        order = [("F", j, 0) for j in range(warmup)]
        for j in range(m - warmup):
            order += [("F", warmup + j, 0), ("B", j, 0)]
        return order + [("B", j, 0) for j in range(m - warmup, m)]

    # Interleaved 1F1B, as Megatron-LM's forward_backward_pipelining_with_interleaving:
    # virtual micro-batch k runs chunk (k // p) % v of micro-batch (k // (p v)) p + k % p;
    # warm-up is 2 (p - stage - 1) + (v - 1) p forwards; backwards visit the chunks in reverse.
    total = m * v

    def forward(k: int) -> tuple[str, int, int]:
        return "F", (k // (p * v)) * p + k % p, (k % (p * v)) // p

    def backward(k: int) -> tuple[str, int, int]:
        _, mb, chunk = forward(k)
        return "B", mb, v - 1 - chunk

    warmup = min(2 * (p - stage - 1) + (v - 1) * p, total)
    order = [forward(k) for k in range(warmup)]
    for k in range(total - warmup):
        order += [forward(warmup + k), backward(k)]
    return order + [backward(k) for k in range(total - warmup, total)]


def pipeline_schedule(
    p: int,
    m: int,
    schedule: str = "1f1b",
    v: int = 1,
    *,
    backward_units: int = 2,
) -> Schedule:
    """Build a pipeline schedule, op by op, with unit-time passes.

    Each stage runs its passes in a fixed order (GPipe: all forwards, then all
    backwards, Huang et al. 2019; 1F1B: ``p - stage - 1`` warm-up forwards, then
    alternating one forward and one backward, Narayanan et al. 2021 Sec. 2.2.1;
    interleaved: Megatron-LM's order for ``v`` chunks, Sec. 2.2.2). A pass starts
    as soon as its stage is free and its input is ready: the forward of model chunk
    ``g`` needs chunk ``g-1``'s forward of that micro-batch, the backward needs chunk
    ``g+1``'s backward (or, on the last chunk, its own forward). Chunk ``c`` of
    device ``i`` is model chunk ``g = c·p + i``. Communication takes no time.

    Args:
        p: Stages.
        m: Micro-batches per step.
        schedule: One of [`SCHEDULES`][calc.pipeline.SCHEDULES].
        v: Model chunks per stage (interleaved only).
        backward_units: Time units of a backward pass; a forward takes 1.

    Returns:
        A [`Schedule`][calc.pipeline.Schedule]; its measured bubble equals
        [`bubble_fraction`][calc.pipeline.bubble_fraction].

    Raises:
        CalcError: On the inputs [`bubble_fraction`][calc.pipeline.bubble_fraction] rejects,
            or more than [`MAX_SCHEDULE_OPS`][calc.pipeline.MAX_SCHEDULE_OPS] passes.

    Examples:
        >>> sched = pipeline_schedule(4, 8)
        >>> sched.makespan, sched.bubble() == bubble_fraction(4, 8)
        (33, True)
        >>> "".join(s.kind[0] for s in pipeline_schedule(2, 2, backward_units=1).stages[0])
        'FFiBiB'
    """
    stages, micro, name, chunks = _check(p, m, schedule, v)
    bwd = parse_positive_int(backward_units, "backward_units")
    if 2 * stages * micro * chunks > MAX_SCHEDULE_OPS:
        raise CalcError(
            "m",
            f"is too large to draw: 2 × p × m × v must be at most {MAX_SCHEDULE_OPS:,} (p={stages}, v={chunks})",
            micro,
        )
    orders = [_stage_order(i, stages, micro, name, chunks) for i in range(stages)]
    last = stages * chunks - 1
    finish: dict[tuple[str, int, int], int] = {}
    free = [0] * stages
    position = [0] * stages
    placed: list[list[PipelineOp]] = [[] for _ in range(stages)]
    progressed = True
    while progressed:
        progressed = False
        for i in range(stages):
            while position[i] < len(orders[i]):
                kind, mb, chunk = orders[i][position[i]]
                g = chunk * stages + i
                if kind == "F":
                    dep = ("F", mb, g - 1) if g > 0 else None
                else:
                    dep = ("B", mb, g + 1) if g < last else ("F", mb, g)
                if dep is not None and dep not in finish:
                    break
                start = max(free[i], finish[dep] if dep is not None else 0)
                duration = 1 if kind == "F" else bwd
                finish[(kind, mb, g)] = free[i] = start + duration
                placed[i].append(PipelineOp(i, start, duration, kind, mb, chunk))
                position[i] += 1
                progressed = True
    if any(position[i] < len(orders[i]) for i in range(stages)):  # pragma: no cover - orders are deadlock-free
        raise RuntimeError("pipeline schedule deadlocked")
    return Schedule(
        p=stages,
        m=micro,
        v=chunks,
        schedule=name,
        backward_units=bwd,
        ops=tuple(tuple(row) for row in placed),
        makespan=max(free),
    )


_FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
_CHUNK_OPACITY = (0.28, 0.55, 0.75, 0.9)


def schedule_svg(schedule: Schedule, *, title: str | None = None, id_prefix: str = "pp") -> str:
    """Draw a schedule as an SVG timeline: stages as rows, forward and backward passes as boxes.

    The drawing reads in light and dark themes: text and outlines use
    ``currentColor``; boxes are tinted by CSS classes (``pp-F``, ``pp-B``, ``pp-idle``)
    whose colours come from ``--pp-forward`` / ``--pp-backward`` custom properties
    with fallbacks, at partial opacity so the text stays legible on either
    background. Interleaved chunks are told apart by opacity. Micro-batches are
    labelled from 1, as in Narayanan et al. 2021 Figs. 3-4. No external fonts; a
    ``viewBox`` lets it scale; ``<title>`` and ``<desc>`` describe it for screen readers.

    Args:
        schedule: From [`pipeline_schedule`][calc.pipeline.pipeline_schedule].
        title: Accessible title (a default names the schedule and its bubble).
        id_prefix: Prefix for the element ids, unique per page.

    Returns:
        The SVG document as a string.

    Examples:
        >>> svg = schedule_svg(pipeline_schedule(2, 2))
        >>> svg.startswith("<svg"), "<title" in svg, "currentColor" in svg
        (True, True, True)
    """
    s = schedule
    ideal = s.bubble("ideal")
    total = s.bubble("total")
    names = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": f"interleaved 1F1B (v={s.v})"}
    if title is None:
        title = f"{names[s.schedule]} pipeline schedule, p={s.p}, m={s.m}"
    desc = (
        f"{s.p} stages as rows, time left to right; forward passes take 1 unit, backward passes "
        f"{s.backward_units}. Bubble: {float(ideal):.1%} of ideal time ((p-1)/(v m) = {ideal}), "
        f"{float(total):.1%} of total time."
    )
    unit = max(12, 7 * len(str(s.m)) + 4)
    row_h, gap, label_w, top, axis_h = 20, 4, 60, 4, 18
    width = label_w + s.makespan * unit + 4
    height = top + s.p * (row_h + gap) + axis_h
    pid = html.escape(id_prefix, quote=True)
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" role="img" aria-labelledby="{pid}-title {pid}-desc" class="pp-schedule">'
        ),
        f'<title id="{pid}-title">{html.escape(title)}</title>',
        f'<desc id="{pid}-desc">{html.escape(desc)}</desc>',
        (
            "<style>"
            f".pp-schedule text{{fill:currentColor;font-family:{_FONT};font-size:10px}}"
            ".pp-op{stroke:currentColor;stroke-opacity:.45;stroke-width:.6}"
            ".pp-F{fill:var(--pp-forward,#3b82f6)}"
            ".pp-B{fill:var(--pp-backward,#16a34a)}"
            ".pp-idle{fill:currentColor;fill-opacity:.07}"
            ".pp-axis{stroke:currentColor;stroke-opacity:.5}"
            "</style>"
        ),
    ]
    for i, ops in enumerate(s.ops):
        y = top + i * (row_h + gap)
        parts.append(
            f'<text class="pp-label" x="{label_w - 6}" y="{y + row_h / 2}" text-anchor="end" '
            f'dominant-baseline="central">Stage {i + 1}</text>'
        )
        t = 0
        for op in ops:
            if op.start > t:
                parts.append(
                    f'<rect class="pp-idle" x="{label_w + t * unit}" y="{y}" width="{(op.start - t) * unit}" '
                    f'height="{row_h}"/>'
                )
            x = label_w + op.start * unit
            w = op.duration * unit
            opacity = _CHUNK_OPACITY[op.chunk % len(_CHUNK_OPACITY)]
            parts.append(
                f'<rect class="pp-op pp-{op.kind}" x="{x}" y="{y}" width="{w}" height="{row_h}" '
                f'fill-opacity="{opacity}"><title>{op.kind} micro-batch {op.microbatch + 1}'
                f"{f', chunk {op.chunk + 1}' if s.v > 1 else ''}</title></rect>"
            )
            parts.append(
                f'<text x="{x + w / 2}" y="{y + row_h / 2}" text-anchor="middle" '
                f'dominant-baseline="central">{op.microbatch + 1}</text>'
            )
            t = op.start + op.duration
        if t < s.makespan:
            parts.append(
                f'<rect class="pp-idle" x="{label_w + t * unit}" y="{y}" width="{(s.makespan - t) * unit}" '
                f'height="{row_h}"/>'
            )
    axis_y = top + s.p * (row_h + gap)
    parts.append(f'<line class="pp-axis" x1="{label_w}" y1="{axis_y}" x2="{width - 4}" y2="{axis_y}"/>')
    parts.append(f'<text x="{label_w}" y="{axis_y + 12}">time → ({s.makespan} units; F = forward, B = backward)</text>')
    parts.append("</svg>")
    return "".join(parts)
