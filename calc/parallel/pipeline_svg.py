"""Pipeline schedules drawn: an SVG timeline whose size grows with the stages, not with the passes.

Each stage is one row: a background rectangle (the idle time, the bubble) and one ``<path>`` per
kind of pass and model chunk, holding every box of that kind as a sub-path. A schedule of
``p`` stages is thus at most about ``p·(1 + 3·chunks)`` elements however many micro-batches it
has, and the browser paints it in one go. Micro-batch numbers are drawn only on small schedules
(at most [`MAX_LABELLED_PASSES`][calc.parallel.pipeline_svg.MAX_LABELLED_PASSES] passes), where they are
readable; [`schedule_text`][calc.parallel.pipeline_svg.schedule_text] gives every stage's passes as text,
the alternative a screen reader or a search reads.
"""

from __future__ import annotations

import html

from calc.parallel.pipeline_schedules import PipelineOp, Schedule

__all__ = ["MAX_LABELLED_PASSES", "schedule_svg", "schedule_text"]

MAX_LABELLED_PASSES = 256
"""Most passes whose micro-batch number is written in its box (one ``<text>`` each); above it boxes only."""

_FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
_CHUNK_OPACITY = (0.28, 0.55, 0.75, 0.9)
_NAMES = {
    "gpipe": "GPipe",
    "1f1b": "1F1B",
    "interleaved": "interleaved 1F1B",
    "zb-h1": "ZB-H1 (zero bubble)",
    "dualpipe": "DualPipe",
}
_KINDS = {"F": "forward", "B": "backward", "W": "weight-gradient"}


def _name(s: Schedule) -> str:
    return _NAMES[s.schedule] + (f" (v={s.v})" if s.schedule == "interleaved" else "")


def _passes(s: Schedule) -> int:
    return sum(len(ops) for ops in s.ops)


def _stage_row(
    parts: list[str],
    labels: list[str],
    s: Schedule,
    i: int,
    ops: tuple[PipelineOp, ...],
    geometry: tuple[int, int, int, int],
    labelled: bool,
) -> None:
    """Draw stage ``i``'s row (its label, idle background and passes) into ``parts``; pass labels into ``labels``."""
    y, row_h, label_w, unit = geometry
    if s.p <= 64 or i in (0, s.p - 1):
        parts.append(
            f'<text class="pp-label" x="{label_w - 6}" y="{y + row_h / 2}" text-anchor="end" '
            f'dominant-baseline="central">Stage {i + 1}</text>'
        )
    parts.append(f'<rect class="pp-idle" x="{label_w}" y="{y}" width="{s.makespan * unit}" height="{row_h}"/>')
    boxes: dict[tuple[str, int], list[str]] = {}
    half = row_h // 2
    for op in ops:
        x = label_w + op.start * unit
        w = op.duration * unit
        if op.overlapped:
            y0, h = (y, half) if op.kind == "F" else (y + half, row_h - half)
        else:
            y0, h = y, row_h
        boxes.setdefault((op.kind, op.chunk % len(_CHUNK_OPACITY)), []).append(f"M{x} {y0}h{w}v{h}h{-w}z")
        if labelled:
            labels.append(
                f'<text x="{x + w / 2}" y="{y0 + h / 2}" text-anchor="middle" '
                f'dominant-baseline="central">{op.microbatch + 1}</text>'
            )
    for (kind, chunk), subpaths in sorted(boxes.items()):
        parts.append(f'<path class="pp-op pp-{kind}" fill-opacity="{_CHUNK_OPACITY[chunk]}" d="{"".join(subpaths)}"/>')


def schedule_svg(schedule: Schedule, *, title: str | None = None, id_prefix: str = "pp") -> str:
    """Draw a schedule as an SVG timeline: stages as rows, forward, backward and weight passes as boxes.

    The drawing reads in light and dark themes: text and outlines use ``currentColor``; boxes
    are tinted by CSS classes (``pp-F``, ``pp-B``, ``pp-W``, ``pp-idle``) whose colours come from
    ``--pp-forward`` / ``--pp-backward`` / ``--pp-weight`` custom properties with fallbacks, at
    partial opacity so the text stays legible on either background. Interleaved chunks (and
    DualPipe's two directions) are told apart by opacity; DualPipe's overlapped
    forward-and-backward pairs share one box, forward above, backward below. Micro-batches are
    labelled from 1, as in Narayanan et al. 2021 Figs. 3-4, on schedules of at most
    [`MAX_LABELLED_PASSES`][calc.parallel.pipeline_svg.MAX_LABELLED_PASSES] passes. No external fonts; a
    ``viewBox`` lets it scale; ``<title>`` and ``<desc>`` describe it for screen readers.

    Args:
        schedule: From [`pipeline_schedule`][calc.parallel.pipeline_schedules.pipeline_schedule].
        title: Accessible title (a default names the schedule and its bubble).
        id_prefix: Prefix for the element ids, unique per page.

    Returns:
        The SVG document as a string.

    Examples:
        >>> from calc.parallel.pipeline_schedules import pipeline_schedule
        >>> svg = schedule_svg(pipeline_schedule(2, 2))
        >>> svg.startswith("<svg"), "<title" in svg, "currentColor" in svg
        (True, True, True)
    """
    s = schedule
    ideal = s.bubble("ideal")
    total = s.bubble("total")
    if title is None:
        title = f"{_name(s)} pipeline schedule, p={s.p}, m={s.m}"
    passes = _passes(s)
    weights = f", weight-gradient passes {s.weight_units}" if s.weight_units else ""
    desc = (
        f"{s.p} stages as rows, time left to right; forward passes take {s.forward_units} unit"
        f"{'s' if s.forward_units != 1 else ''}, backward passes {s.backward_units - s.weight_units}{weights}. "
        f"Bubble: {float(ideal):.1%} of ideal time ({ideal}), {float(total):.1%} of total time; "
        f"{passes:,} passes over {s.makespan:,} time units."
    )
    labelled = passes <= MAX_LABELLED_PASSES
    unit = max(12, 7 * len(str(s.m)) + 4) if labelled else max(2, min(12, 2400 // max(1, s.makespan)))
    row_h, gap, label_w, top, axis_h = (20, 4, 60, 4, 18) if s.p <= 64 else (6, 1, 60, 4, 18)
    legend = "F = forward, B = backward" + (", W = weight gradients" if s.weight_units else "")
    axis_text = f"time → ({s.makespan} units; {legend})"
    width = label_w + max(s.makespan * unit, 6 * len(axis_text)) + 4
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
            ".pp-W{fill:var(--pp-weight,#d97706)}"
            ".pp-idle{fill:currentColor;fill-opacity:.07}"
            ".pp-axis{stroke:currentColor;stroke-opacity:.5}"
            "</style>"
        ),
    ]
    labels: list[str] = []
    for i, ops in enumerate(s.ops):
        _stage_row(parts, labels, s, i, ops, (top + i * (row_h + gap), row_h, label_w, unit), labelled)
    parts.extend(labels)
    axis_y = top + s.p * (row_h + gap)
    end = label_w + s.makespan * unit
    parts.append(f'<line class="pp-axis" x1="{label_w}" y1="{axis_y}" x2="{end}" y2="{axis_y}"/>')
    parts.append(f'<text x="{label_w}" y="{axis_y + 12}">{html.escape(axis_text)}</text>')
    parts.append("</svg>")
    return "".join(parts)


def schedule_text(schedule: Schedule) -> list[str]:
    """Every stage's passes in time order, as text: the drawing's alternative for screen readers.

    One line per stage: ``Stage 1: F1 F2 … B1 …``, micro-batches numbered from 1, ``.2`` after
    the number for a later model chunk (interleaved) or the second direction (DualPipe), ``&``
    joining an overlapped pair, ``(idle n)`` for each gap.

    Args:
        schedule: From [`pipeline_schedule`][calc.parallel.pipeline_schedules.pipeline_schedule].

    Returns:
        One string per stage.

    Examples:
        >>> from calc.parallel.pipeline_schedules import pipeline_schedule
        >>> schedule_text(pipeline_schedule(2, 2, backward_units=1))
        ['Stage 1: F1 F2 (idle 1) B1 (idle 1) B2', 'Stage 2: (idle 1) F1 B1 F2 B2']
    """
    s = schedule
    out = []
    for i, ops in enumerate(s.ops):
        words: list[str] = []
        t = 0
        previous = None
        for op in ops:
            tag = f"{op.kind}{op.microbatch + 1}" + (f".{op.chunk + 1}" if op.chunk else "")
            if op.overlapped and previous is not None and previous.overlapped and previous.start == op.start:
                words[-1] += f"&{tag}"
            else:
                if op.start > t:
                    words.append(f"(idle {op.start - t})")
                words.append(tag)
            t = max(t, op.start + op.duration)
            previous = op
        out.append(f"Stage {i + 1}: " + " ".join(words))
    return out
