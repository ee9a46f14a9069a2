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

from calc import markup
from calc.parallel.pipeline_elision import DrawnPass, ElidedSchedule, Elision, drawn_passes
from calc.parallel.pipeline_schedules import Schedule

__all__ = ["CUT_WIDTH", "FONT_PX", "MAX_LABELLED_PASSES", "schedule_svg", "schedule_text"]

MAX_LABELLED_PASSES = 256
"""Most passes whose micro-batch number is written in its box (one ``<text>`` each); above it boxes only."""

CUT_WIDTH = 40
"""Pixels between the two sides of a cut in an elided schedule's drawing:
room for the ellipsis, however many time units the cut stands for."""

FONT_PX = 11
"""The drawing's text size in px at its natural size, the least the site lets any figure's text be (issue 19): the
page shows the drawing at that size, in a box that scrolls sideways when it is wider than the column, never scaled
down."""

_CHAR_PX = 6.5
"""About how wide a character of the axis line is at ``FONT_PX``, for the drawing's width."""

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


def _stage_row(
    parts: list[str],
    labels: list[str],
    s: Schedule,
    i: int,
    row: list[DrawnPass],
    geometry: tuple[int, int, int, int],
    cuts: tuple[Elision, ...],
    labelled: bool,
) -> None:
    """Draw stage ``i``'s row (its label, idle background and passes) into ``parts``; pass labels into ``labels``."""
    y, row_h, label_w, unit = geometry
    if s.p <= 64 or i in (0, s.p - 1):
        parts.append(
            f'<text class="pp-label" x="{label_w - 6}" y="{y + row_h / 2}" text-anchor="end" '
            f'dominant-baseline="central">Stage {i + 1}</text>'
        )
    edges = [0, *(c.at for c in cuts), s.makespan]
    for n in range(len(edges) - 1):
        x = label_w + edges[n] * unit + n * CUT_WIDTH
        w = (edges[n + 1] - edges[n]) * unit
        parts.append(f'<rect class="pp-idle" x="{x}" y="{y}" width="{w}" height="{row_h}"/>')
    shift = [0]
    for c in cuts:
        shift.append(shift[-1] + c.units)
    boxes: dict[tuple[str, int], list[str]] = {}
    half = row_h // 2
    for op in row:
        x = label_w + (op.start - shift[op.segment]) * unit + op.segment * CUT_WIDTH
        w = (op.end - op.start) * unit
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


def _cut_text(c: Elision) -> str:
    what = {"F": " of forwards", "B": " of backwards"}.get(c.kinds, "")
    return f"{c.microbatches:,} micro-batches{what} ({c.units:,} time units) elided"


def _desc(s: Schedule, m: int, passes: int, makespan: int, cuts: tuple[Elision, ...]) -> str:
    """The drawing's ``<desc>``: what the rows and boxes are, the bubble, and what each cut elides."""
    ideal, total = s.bubble("ideal"), s.bubble("total")
    weights = f", weight-gradient passes {s.weight_units}" if s.weight_units else ""
    rows = "1 stage as a row" if s.p == 1 else f"{s.p} stages as rows"
    text = (
        f"{rows}, time left to right; forward passes take {s.forward_units} unit"
        f"{'s' if s.forward_units != 1 else ''}, backward passes {s.backward_units - s.weight_units}{weights}. "
    )
    if not cuts:
        return text + (
            f"Bubble: {float(ideal):.1%} of ideal time ({ideal}), {float(total):.1%} of total time; "
            f"{passes:,} passes over {makespan:,} time units."
        )
    done, where = 0, []
    for c in cuts:
        where.append(f"{_cut_text(c)} from time {c.at + done:,}")
        done += c.units
    return text + (
        f"Micro-batches 1 to {m:,} over {makespan:,} time units; the steady state in the middle is elided "
        f"({'; '.join(where)}); the warm-up and cool-down, where the bubble is, are drawn in full."
    )


def _axis(parts: list[str], s: Schedule, geometry: tuple[int, int, int], cuts: tuple[Elision, ...], text: str) -> None:
    """The time axis under the rows; at each cut, a dashed gap with an ellipsis and the real times it spans."""
    axis_y, label_w, unit = geometry
    end = label_w + s.makespan * unit + len(cuts) * CUT_WIDTH
    parts.append(f'<line class="pp-axis" x1="{label_w}" y1="{axis_y}" x2="{end}" y2="{axis_y}"/>')
    done = 0
    for n, c in enumerate(cuts):
        x = label_w + c.at * unit + n * CUT_WIDTH
        mid = x + CUT_WIDTH / 2
        parts.append(
            f'<g class="pp-cut"><title>{markup.escape(_cut_text(c))}</title>'
            f'<rect class="pp-gap" x="{x}" y="0" width="{CUT_WIDTH}" height="{axis_y + 4}"/>'
            f'<text class="pp-ellipsis" x="{mid}" y="{axis_y / 2}" text-anchor="middle" '
            f'dominant-baseline="central">⋯</text>'
            f'<text x="{mid}" y="{axis_y + 12}" text-anchor="middle">{c.at + done:,}…{c.at + done + c.units:,}</text>'
            "</g>"
        )
        done += c.units
    parts.append(f'<text x="{label_w}" y="{axis_y + (24 if cuts else 12)}">{markup.escape(text)}</text>')


_STYLE = (
    ".pp-op{stroke:currentColor;stroke-opacity:.45;stroke-width:.6}"
    ".pp-F{fill:var(--pp-forward,#3b82f6)}"
    ".pp-B{fill:var(--pp-backward,#16a34a)}"
    ".pp-W{fill:var(--pp-weight,#d97706)}"
    ".pp-idle{fill:currentColor;fill-opacity:.07}"
    ".pp-axis{stroke:currentColor;stroke-opacity:.5}"
)
_CUT_STYLE = (
    ".pp-gap{fill:none;stroke:currentColor;stroke-opacity:.5;stroke-dasharray:3 3}"
    ".pp-schedule .pp-ellipsis{font-size:20px;font-weight:bold}"
)


def _render(s: Schedule, rows: list[list[DrawnPass]], cuts: tuple[Elision, ...], m: int, title: str, pid: str) -> str:
    """The SVG of the passes ``rows`` (per stage) of the short or full schedule ``s``, with its ``cuts``."""
    passes = sum(len(r) for r in rows)
    makespan = s.makespan + sum(c.units for c in cuts)
    labelled = passes <= MAX_LABELLED_PASSES
    unit = max(12, 7 * len(str(m)) + 4) if labelled else max(2, min(12, 2400 // max(1, s.makespan)))
    row_h, gap, label_w, top, axis_h = (20, 4, 60, 4, 18) if s.p <= 64 else (6, 1, 60, 4, 18)
    legend = "F = forward, B = backward" + (", W = weight gradients" if s.weight_units else "")
    elided = f", {cuts[0].microbatches:,} micro-batches elided at each ⋯" if cuts else ""
    axis_text = f"time → ({makespan} units{elided}; {legend})"
    width = label_w + max(s.makespan * unit + len(cuts) * CUT_WIDTH, _CHAR_PX * len(axis_text)) + 4
    height = top + s.p * (row_h + gap) + axis_h + (12 if cuts else 0)
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" '
            f'height="{height}" role="img" aria-labelledby="{pid}-title {pid}-desc" class="pp-schedule">'
        ),
        f'<title id="{pid}-title">{markup.escape(title)}</title>',
        f'<desc id="{pid}-desc">{markup.escape(_desc(s, m, passes, makespan, cuts))}</desc>',
        (
            f"<style>.pp-schedule text{{fill:currentColor;font-family:{_FONT};font-size:{FONT_PX}px}}"
            f"{_STYLE}{_CUT_STYLE if cuts else ''}</style>"
        ),
    ]
    labels: list[str] = []
    for i, row in enumerate(rows):
        _stage_row(parts, labels, s, i, row, (top + i * (row_h + gap), row_h, label_w, unit), cuts, labelled)
    parts.extend(labels)
    _axis(parts, s, (top + s.p * (row_h + gap), label_w, unit), cuts, axis_text)
    parts.append("</svg>")
    return "".join(parts)


def _rows(schedule: Schedule | ElidedSchedule) -> tuple[Schedule, list[list[DrawnPass]], tuple[Elision, ...], int]:
    """The schedule simulated, its passes per stage as drawn, its cuts and its real micro-batches."""
    if isinstance(schedule, Schedule):
        s, cuts, m = schedule, (), schedule.m
        passes = [DrawnPass(o.stage, o.start, o.start + o.duration, o.kind, o.microbatch, o.chunk, o.overlapped, 0)
                  for ops in s.ops for o in ops]  # fmt: skip
    else:
        s, cuts, m = schedule
        passes = drawn_passes(schedule)
    rows: list[list[DrawnPass]] = [[] for _ in range(s.p)]
    for d in passes:
        rows[d.stage].append(d)
    return s, rows, cuts, m


def schedule_svg(schedule: Schedule | ElidedSchedule, *, title: str | None = None, id_prefix: str = "pp") -> str:
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

    A schedule of any length is drawn from
    [`elided_schedule`][calc.parallel.pipeline_elision.elided_schedule]: every pass of the warm-up and the
    cool-down (where the bubble is) and a few steady micro-batches, where the full schedule has them and with
    their real numbers; at each cut a dashed gap with an ellipsis, under it the real time units it spans, in
    its tooltip and the ``<desc>`` how many micro-batches it elides. The axis counts every real time unit. Its
    size grows with ``p`` and ``v``, not with ``m``.

    Args:
        schedule: From [`pipeline_schedule`][calc.parallel.pipeline_schedules.pipeline_schedule], or
            [`elided_schedule`][calc.parallel.pipeline_elision.elided_schedule] for any length.
        title: Accessible title (a default names the schedule and its bubble).
        id_prefix: Prefix for the element ids, unique per page.

    Returns:
        The SVG document as a string.

    Examples:
        >>> from calc.parallel.pipeline_schedules import pipeline_schedule
        >>> svg = schedule_svg(pipeline_schedule(2, 2))
        >>> svg.startswith("<svg"), "<title" in svg, "currentColor" in svg
        (True, True, True)
        >>> from calc.parallel.pipeline_elision import elided_schedule
        >>> svg = schedule_svg(elided_schedule(8, 1024))  # p = 8, m = 1,024: the middle elided
        >>> "⋯" in svg, ">1024<" in svg, len(svg) < 40_000
        (True, True, True)
    """
    s, rows, cuts, m = _rows(schedule)
    if title is None:
        title = f"{_name(s)} pipeline schedule, p={s.p}, m={m}"
    return _render(s, rows, cuts, m, title, markup.escape(id_prefix, quote=True))


def schedule_text(schedule: Schedule | ElidedSchedule) -> list[str]:
    """Every stage's passes in time order, as text: the drawing's alternative for screen readers.

    One line per stage: ``Stage 1: F1 F2 … B1 …``, micro-batches numbered from 1, ``.2`` after
    the number for a later model chunk (interleaved) or the second direction (DualPipe), ``&``
    joining an overlapped pair, ``(idle n)`` for each gap, and ``(… n micro-batches, t time units elided …)``
    at each cut of an elided schedule (a pass a cut runs across is named on both sides of it).

    Args:
        schedule: From [`pipeline_schedule`][calc.parallel.pipeline_schedules.pipeline_schedule] or
            [`elided_schedule`][calc.parallel.pipeline_elision.elided_schedule].

    Returns:
        One string per stage.

    Examples:
        >>> from calc.parallel.pipeline_schedules import pipeline_schedule
        >>> schedule_text(pipeline_schedule(2, 2, backward_units=1))
        ['Stage 1: F1 F2 (idle 1) B1 (idle 1) B2', 'Stage 2: (idle 1) F1 B1 F2 B2']
        >>> from calc.parallel.pipeline_elision import elided_schedule
        >>> schedule_text(elided_schedule(1, 100, backward_units=1))[0][:60]
        'Stage 1: F1 B1 F2 B2 F3 B3 F4 (… 93 micro-batches, 186 time '
    """
    _, rows, cuts, _ = _rows(schedule)
    return _text(rows, cuts)


def _text(rows: list[list[DrawnPass]], cuts: tuple[Elision, ...]) -> list[str]:
    """The text alternative of ``rows`` (per stage), a ``(… n micro-batches elided …)`` at each cut."""
    out = []
    for i, row in enumerate(rows):
        words: list[str] = []
        t = 0
        segment = 0
        previous = None
        for op in row:
            while segment < op.segment:
                c = cuts[segment]
                words.append(f"(… {c.microbatches:,} micro-batches, {c.units:,} time units elided …)")
                t += c.units
                segment += 1
            tag = f"{op.kind}{op.microbatch + 1}" + (f".{op.chunk + 1}" if op.chunk else "")
            if op.overlapped and previous is not None and previous.overlapped and previous.start == op.start:
                words[-1] += f"&{tag}"
            else:
                if op.start > t:
                    words.append(f"(idle {op.start - t})")
                words.append(tag)
            t = max(t, op.end)
            previous = op
        out.append(f"Stage {i + 1}: " + " ".join(words))
    return out
