"""The "Pipeline bubble" calculator: bubble fraction in both conventions and the schedule drawn as SVG."""

from __future__ import annotations

from html import escape

from calc.activations import in_flight_chunks
from calc.errors import CalcError
from calc.layout import check_parallelism
from calc.pipeline import SCHEDULES, bubble_fraction, pipeline_schedule, schedule_svg
from calc.units import parse_positive_int
from calc.widgets import Calculator, Field
from calc.widgets._html import out, verdict

__all__ = ["CALCULATOR"]

_FIELD_NAMES = {"p": "pp", "m": "num_microbatches", "v": "virtual_stages"}
"""Engine argument names -> this calculator's field names, so an error points at the right box."""

_NAMES = {"gpipe": "GPipe", "1f1b": "1F1B", "interleaved": "interleaved 1F1B"}

MAX_DRAWN_PASSES = 512
"""Most forward+backward passes ``2·p·m·v`` the calculator draws.

Each pass is about 230 bytes of SVG (a box, its tooltip and its label), so 512 passes keep the
figure near 130 KB and the page light; a timeline of more boxes than that is no longer readable
at page width anyway (Narayanan et al. 2021 draw 4 stages and 8 micro-batches, 64 to 128 passes)."""

MAX_DRAWN_STAGES = 32
"""Most stages drawn: building the schedule costs more than linear time in ``p``, and 32 rows fill a page."""


def _pct(value) -> str:
    return f"{float(value) * 100:.3g}%"


def _compute(v: dict[str, str]) -> str:
    p = parse_positive_int(v["pp"], "pp", maximum=1024)
    m = parse_positive_int(v["num_microbatches"], "num_microbatches", maximum=10**6)
    schedule = v["schedule"]
    if schedule not in SCHEDULES:
        raise CalcError("schedule", f"must be one of {', '.join(SCHEDULES)}", schedule, code="unknown-name")
    chunks = parse_positive_int(v["virtual_stages"], "virtual_stages", maximum=64) if schedule == "interleaved" else 1
    if v["backward_units"] not in ("1", "2"):
        raise CalcError("backward_units", "must be 1 or 2", v["backward_units"])
    backward = int(v["backward_units"])
    check_parallelism(pp=p, virtual_stages=chunks, num_microbatches=m if schedule == "interleaved" else None)
    try:
        ideal = bubble_fraction(p, m, schedule=schedule, v=chunks)
        total = bubble_fraction(p, m, schedule=schedule, v=chunks, convention="total")
    except CalcError as err:
        raise CalcError(_FIELD_NAMES.get(err.field, err.field), err.rule, err.value, code=err.code) from None

    name = _NAMES[schedule] + (f" (v = {chunks})" if schedule == "interleaved" else "")
    line = (
        f"{name}, p = {p}, m = {m}: each GPU idles {_pct(total)} of the step; "
        f"the bubble is {_pct(ideal)} of the ideal (bubble-free) time."
    )
    formula = "(p−1)/m" if chunks == 1 else "(1/v)·(p−1)/m"
    total_formula = "(p−1)/(m+p−1)" if chunks == 1 else "(p−1)/(v·m+p−1)"
    rows = [
        (
            "Bubble / ideal time",
            out("bubble_ideal", f"{_pct(ideal)} ({ideal})", value=ideal),
            f"{formula}, Narayanan et al. 2021 Sec. 2.2",
        ),
        (
            "Bubble / total step time",
            out("bubble_total", f"{_pct(total)} ({total})", value=total),
            f"{total_formula}: the share of each GPU's step spent idle",
        ),
        ("Step time vs. no bubble", out("slowdown", f"{float(1 + ideal):.3g}×", value=1 + ideal), "1 + bubble/ideal"),
    ]
    passes = 2 * p * m * chunks
    if passes <= MAX_DRAWN_PASSES and p <= MAX_DRAWN_STAGES:
        sched = pipeline_schedule(p, m, schedule, chunks, backward_units=backward)
        in_flight = sched.peak_in_flight(0) / chunks
        tag = f"pp-{p}-{m}-{schedule}-{chunks}-{backward}"
        figure = (
            f'<figure class="lc-figure" data-output="schedule">{schedule_svg(sched, id_prefix=tag)}'
            f"<figcaption>Stages as rows, time left to right; forward passes 1 unit, backward "
            f"{backward}; numbers are micro-batches"
            f"{', darker boxes are later model chunks' if chunks > 1 else ''}; shaded gaps are the bubble."
            f"</figcaption></figure>"
        )
    else:
        # Narayanan et al. 2021 Sec. 2.2: GPipe keeps every micro-batch; 1F1B and interleaving follow
        # Megatron-LM's warm-up (calc.activations.in_flight_chunks), which the drawn schedules match.
        live = m if schedule == "gpipe" else in_flight_chunks(p, interleave=chunks, num_microbatches=m)
        in_flight = live / chunks
        why = (
            f"{passes:,} passes is more than {MAX_DRAWN_PASSES:,}"
            if passes > MAX_DRAWN_PASSES
            else f"{p:,} stages is more than {MAX_DRAWN_STAGES}"
        )
        figure = (
            f'<p class="lc-kv" data-output="schedule">Not drawn: {why}, too many to read; '
            f"the fractions above are exact.</p>"
        )
    rows.append(
        (
            "Micro-batches in flight on stage 1",
            out("in_flight", f"{in_flight:.3g}", value=in_flight),
            "activations stage 1 holds at its peak, in whole-stage micro-batches",
        )
    )
    body = "".join(
        f'<p class="lc-kv"><span>{escape(k)}</span> {value} <small>{escape(note)}</small></p>'
        for k, value, note in rows
    )
    return verdict(True, line) + body + figure


CALCULATOR = Calculator(
    name="pipeline-bubble",
    title="Pipeline bubble",
    description="Idle time of a pipeline-parallel step, in both conventions, with the schedule drawn.",
    fields=(
        Field("pp", "Pipeline stages (p)", "4", kind="number"),
        Field(
            "num_microbatches",
            "Micro-batches per step (m)",
            "8",
            kind="number",
            help="global batch / (micro-batch × data-parallel degree)",
        ),
        Field(
            "schedule",
            "Schedule",
            "1f1b",
            kind="select",
            options=(
                ("1f1b", "1F1B (PipeDream-Flush)"),
                ("gpipe", "GPipe (all forwards, then all backwards)"),
                ("interleaved", "Interleaved 1F1B (needs m a multiple of p)"),
            ),
        ),
        Field(
            "virtual_stages", "Model chunks per stage (v)", "2", kind="number", enabled_when=("schedule", "interleaved")
        ),
        Field(
            "backward_units",
            "Backward pass time",
            "2",
            kind="select",
            options=(("2", "2 × forward"), ("1", "same as forward")),
            help="changes the drawing, not the bubble fraction",
        ),
    ),
    compute=_compute,
)
"""The pipeline-bubble calculator."""
