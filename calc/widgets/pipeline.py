"""The "Pipeline bubble" calculator: bubble and in-flight activations of five schedules, and the schedule drawn."""

from __future__ import annotations

import contextlib

from calc.errors import CalcError
from calc.markup import escape
from calc.memory.layout_rules import check_parallelism
from calc.parallel.pipeline import SCHEDULES, bubble_fraction, pipeline_schedule, schedule_in_flight
from calc.parallel.pipeline_elision import drawn_passes, elided_schedule
from calc.parallel.pipeline_svg import MAX_LABELLED_PASSES, schedule_svg, schedule_text
from calc.units import parse_positive_int
from calc.widgets import Calculator, Field
from calc.widgets._code import call, snippet
from calc.widgets._fields import degree, one_of, select
from calc.widgets._html import out, verdict
from calc.widgets._parts import kv_notes

__all__ = ["CALCULATOR", "MAX_DRAWN_PASSES", "MAX_DRAWN_STAGES", "MAX_ELIDED_PASSES"]

_FIELD_NAMES = {"p": "pp", "m": "num_microbatches", "v": "virtual_stages"}
"""Engine argument names -> this calculator's field names, so an error points at the right box."""

_SCROLL_NOTE_PX = 600
"""A drawing wider than this (px; a laptop's column is about 700) may scroll in its box: the caption says so."""

_SCHEDULES = {
    "gpipe": ("GPipe", "(p−1)(F+B)", "Narayanan et al. 2021 Sec. 2.2.1"),
    "1f1b": ("1F1B", "(p−1)(F+B)", "Narayanan et al. 2021 Sec. 2.2.1"),
    "interleaved": ("interleaved 1F1B", "(p−1)(F+B)/v", "Narayanan et al. 2021 Sec. 2.2.2"),
    "zb-h1": ("ZB-H1 (zero bubble)", "(p−1)(F+B−2W)", "Qi et al. 2023 Sec. 2.1; DeepSeek-V3 Table 2"),
    "dualpipe": ("DualPipe", "(p/2−1)(F&B+B−3W)", "DeepSeek-V3 report Sec. 3.2.1, Table 2"),
}
"""Each schedule's name in the verdict and its bubble time per step in the papers' notation (B the whole
backward, W its weight-gradient part), with the source."""

MAX_DRAWN_PASSES = 512
"""Most passes (forward, backward and weight-gradient) the calculator draws.

The drawing is one ``<path>`` per stage and kind of pass (calc.parallel.pipeline_svg), so its DOM grows
with the stages, not the passes: 512 passes at 32 stages is under 300 elements and about 20 KB.
The cost is building the schedule, linear in the passes (about 6 µs each in CPython, all told):
512 keep the whole render near 3 ms in CPython, the 10 ms budget in Pyodide. The bubble and
in-flight numbers above the drawing are closed forms and need no schedule at all; a timeline of
more boxes than this is no longer readable at page width anyway (Narayanan et al. 2021 draw 4
stages and 8 micro-batches, 64 to 128 passes)."""

MAX_ELIDED_PASSES = 1024
"""Most passes drawn when the steady middle of a longer schedule is elided (calc.parallel.pipeline_elision):
the short schedule keeps every stage's warm-up and cool-down, so p = 8 with m = 32, or interleaved with v = 2,
still draws (about 10 µs a pass in CPython, all told: 1,024 passes near 10 ms)."""

MAX_DRAWN_STAGES = 32
"""Most stages drawn: 32 rows fill a page; the text alternative lists one line per stage."""


def _pct(value) -> str:
    return f"{float(value) * 100:.3g}%"


def _read(v: dict[str, str]) -> tuple[int, int, str, int, dict[str, int]]:
    """Stages, micro-batches, schedule, model chunks and the time units of each kind of pass."""
    p = parse_positive_int(v["pp"], "pp", maximum=1024)
    m = parse_positive_int(v["num_microbatches"], "num_microbatches", maximum=10**6)
    schedule = one_of(v, "schedule", SCHEDULES)
    chunks = parse_positive_int(v["virtual_stages"], "virtual_stages", maximum=64) if schedule == "interleaved" else 1
    if v["backward_units"] not in ("1", "2"):
        raise CalcError("backward_units", "must be 1 or 2", v["backward_units"])
    backward = int(v["backward_units"])
    check_parallelism(pp=p, virtual_stages=chunks, num_microbatches=m if schedule == "interleaved" else None)
    # Whole time units: a forward is 1 and a backward 2, or (same as forward) both 2 with the
    # split schedules' weight-gradient pass 1, so every pass is a whole number of units.
    split = schedule in ("zb-h1", "dualpipe")
    units = {"forward_units": 2 if split and backward == 1 else 1, "backward_units": 2 if split else backward}
    if split:
        units["weight_units"] = 1
    return p, m, schedule, chunks, units


def _rows(schedule: str, ideal, total, in_flight: float) -> list[tuple[str, str, str]]:
    _, formula, source = _SCHEDULES[schedule]
    note = "activations the busiest stage holds at its peak, in micro-batches of its layers"
    if schedule in ("zb-h1", "dualpipe"):
        note += "; the W passes keep a smaller residue (layer inputs, output gradients) a while longer"
    if schedule == "dualpipe":
        note += "; each device holds two stages' parameters"
    return [
        (
            "Bubble / ideal time",
            out("bubble_ideal", f"{_pct(ideal)} ({ideal})", value=ideal),
            f"bubble {formula} over m(F+B), {source}",
        ),
        (
            "Bubble / total step time",
            out("bubble_total", f"{_pct(total)} ({total})", value=total),
            "the share of each GPU's step spent idle",
        ),
        ("Step time vs. no bubble", out("slowdown", f"{float(1 + ideal):.3g}×", value=1 + ideal), "1 + bubble/ideal"),
        ("Micro-batches in flight, busiest stage", out("in_flight", f"{in_flight:.3g}", value=in_flight), note),
    ]


def _compute(v: dict[str, str]) -> str:
    p, m, schedule, chunks, units = _read(v)
    try:
        ideal = bubble_fraction(p, m, schedule=schedule, v=chunks, **units)
        total = bubble_fraction(p, m, schedule=schedule, v=chunks, convention="total", **units)
        live = schedule_in_flight(schedule, p, m, chunks)
    except CalcError as err:
        raise CalcError(_FIELD_NAMES.get(err.field, err.field), err.rule, err.value, code=err.code) from None
    name = _SCHEDULES[schedule][0] + (f" (v = {chunks})" if schedule == "interleaved" else "")
    line = (
        f"{name}, p = {p}, m = {m}: each GPU idles {_pct(total)} of the step; "
        f"the bubble is {_pct(ideal)} of the ideal (bubble-free) time."
    )
    rows = _rows(schedule, ideal, total, live / chunks)
    return verdict(True, line) + kv_notes(rows) + _figure(p, m, schedule, chunks, units)


def _figure(p: int, m: int, schedule: str, chunks: int, units: dict[str, int]) -> str:
    kinds_per = 3 if schedule in ("zb-h1", "dualpipe") else 2
    passes = kinds_per * p * m * chunks
    why = f"{p:,} stages is more than {MAX_DRAWN_STAGES}" if p > MAX_DRAWN_STAGES else ""
    elided = None
    if not why and passes > MAX_DRAWN_PASSES:
        # the steady middle elided: the short schedule still runs every stage's warm-up and cool-down (>= p each)
        if kinds_per * p * min(m, p) * chunks <= MAX_ELIDED_PASSES:
            with contextlib.suppress(CalcError):
                elided = elided_schedule(p, m, schedule, chunks, **units)
        drawn = len(drawn_passes(elided)) if elided is not None else MAX_ELIDED_PASSES + 1
        if drawn > MAX_ELIDED_PASSES:
            why = (
                f"{passes:,} passes is more than {MAX_DRAWN_PASSES:,}, "
                f"and more than {MAX_ELIDED_PASSES:,} even with the steady middle elided"
            )
    if why:
        return (
            f'<p class="lc-kv" data-output="schedule">Not drawn: {why}, too many to read; '
            f"the numbers above are closed forms, exact for any size.</p>"
        )
    sched = elided.schedule if elided is not None else pipeline_schedule(p, m, schedule, chunks, **units)
    tag = f"pp-{p}-{m}-{schedule}-{chunks}-{units['forward_units']}-{units['backward_units']}"
    f, b, w = sched.forward_units, sched.backward_units - sched.weight_units, sched.weight_units
    kinds = f"forward passes {f} unit{'s' if f > 1 else ''}, " + (
        f"input-gradient backward {b}, weight-gradient {w}" if w else f"backward {b}"
    )
    notes = []
    if chunks > 1:
        notes.append("darker boxes are later model chunks")
    if schedule == "dualpipe":
        notes.append("darker boxes entered from the last stage; split boxes are a forward and a backward overlapped")
    shown = len(drawn_passes(elided)) if elided is not None else sum(len(ops) for ops in sched.ops)
    if shown <= MAX_LABELLED_PASSES:
        notes.append("numbers are micro-batches")
    if elided is not None and elided.cuts:
        gone = elided.cuts[0].microbatches
        notes.append(f"⋯ marks {gone:,} steady micro-batches elided; the axis counts every time unit")
    drawing = elided if elided is not None else sched
    lines = "".join(f"<li>{escape(text)}</li>" for text in schedule_text(drawing))
    svg = schedule_svg(drawing, id_prefix=tag)
    if float(svg.split(' width="', 1)[1].split('"', 1)[0]) > _SCROLL_NOTE_PX:  # the <svg>'s own width
        notes.append("scroll the drawing sideways to see all of it")
    return (
        f'<figure class="lc-figure lc-figure--scroll" data-output="schedule">{svg}'
        f"<figcaption>Stages as rows, time left to right; {kinds}"
        f"{'; ' + '; '.join(notes) if notes else ''}; shaded gaps are the bubble.</figcaption></figure>"
        f'<details class="lc-details" data-output="schedule_text"><summary>The schedule as text</summary>'
        f"<ol>{lines}</ol></details>"
    )


def _python(v: dict[str, str]) -> str:
    """[`bubble_fraction`][calc.parallel.pipeline.bubble_fraction] both ways and the in-flight micro-batches."""
    p, m, schedule, chunks, units = _read(v)
    kw = dict(schedule=schedule, v=chunks, **units)
    live = call("schedule_in_flight", schedule, p, m, fn=schedule_in_flight, v=chunks)
    body = [
        "ideal = " + call("bubble_fraction", p, m, fn=bubble_fraction, **kw),
        "total = " + call("bubble_fraction", p, m, fn=bubble_fraction, **kw, convention="total"),
        f"in_flight = {live}" + (f" / {chunks}" if chunks > 1 else ""),
    ]
    prints = [("bubble_ideal", "float(ideal)"), ("bubble_total", "float(total)"), ("slowdown", "float(1 + ideal)")]
    return snippet(body, [*prints, ("in_flight", "in_flight")])


CALCULATOR = Calculator(
    name="pipeline-bubble",
    title="Pipeline bubble",
    description="Idle time and in-flight activations of a pipeline-parallel step, with the schedule drawn.",
    fields=(
        degree("pp", "4", label="Pipeline stages (p)"),
        Field(
            "num_microbatches",
            "Micro-batches per step (m)",
            "8",
            kind="number",
            help="global batch / (micro-batch × data-parallel degree)",
        ),
        select(
            "schedule",
            "Schedule",
            "1f1b",
            (
                ("1f1b", "1F1B (PipeDream-Flush)"),
                ("gpipe", "GPipe"),
                ("interleaved", "Interleaved 1F1B"),
                ("zb-h1", "ZB-H1 zero bubble"),
                ("dualpipe", "DualPipe (both ends)"),
            ),
            help="GPipe: all forwards, then all backwards; interleaved needs m a multiple of p; ZB-H1 fills the "
            "bubble with weight gradients; DualPipe needs p even, m even and ≥ 2p",
        ),
        Field(
            "virtual_stages", "Model chunks per stage (v)", "2", kind="number", enabled_when=("schedule", "interleaved")
        ),
        select(
            "backward_units",
            "Backward pass time",
            "2",
            (("2", "2 × forward"), ("1", "same as forward")),
            help="GPipe, 1F1B, interleaved: changes the drawing, not the bubble fraction",
        ),
    ),
    compute=_compute,
    python=_python,
)
"""The pipeline-bubble calculator."""
