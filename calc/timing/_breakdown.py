"""The words of [`step_time`][calc.timing.steptime.step_time]'s breakdown: one row per part of the step (compute,
the pipeline bubble, each collective, the straggler allowance), each with its seconds and why."""

from __future__ import annotations

from typing import TYPE_CHECKING

from calc.timing.efficiency import STRAGGLER_FROM_GPUS, STRAGGLER_PER_DOUBLING
from calc.units import format_seconds

if TYPE_CHECKING:  # only for the annotations: steptime imports this module
    from calc.parallel.comm import StepComm
    from calc.timing.steptime import _Compute

__all__: list[str] = []


def _rows(
    c: _Compute,
    sched: tuple[int, int, int, str | None],
    rates: tuple[float, float, float, float, tuple[float, float]],
    compute: float,
    bubble: float,
    step: StepComm,
    exposed: dict[str, tuple[float, str]],
) -> list[tuple[str, float, str]]:
    """The breakdown: compute, bubble and one row per collective, each with its seconds and why."""
    m, p, v, schedule = sched
    eff, attn_eff, peak, attn_peak, (passes, casts) = rates
    cast_words = f", {casts:g} more for FP8's casts" if casts else ""
    attn_of = "" if attn_peak == peak else f" of the bf16 {attn_peak / 1e12:.0f} TFLOP/s"
    why = (
        f"{m:,} micro-batch{'' if m == 1 else 'es'} × {format_seconds(c.t_mb)} on the busiest stage "
        f"({c.layers:,} layer{'' if c.layers == 1 else 's'}): matmuls at {eff:.0%} of {peak / 1e12:.0f} TFLOP/s "
        f"({format_seconds(c.t_flops)}), attention core at {attn_eff:.0%}{attn_of} ({format_seconds(c.t_attn)}), "
        f"element-wise work at HBM speed, {passes:g} passes over the stored activations{cast_words} "
        f"({format_seconds(c.t_mem)})"
    )
    rows: list[tuple[str, float, str]] = [("compute", compute, why)]
    if bubble:
        rows.append(("pipeline bubble", bubble, _bubble_why(p, m, v, schedule)))
    for term in step.terms:
        where = "inside the node" if term.intra_node else "across nodes"
        rows.append((term.name, exposed[term.name][0], f"{term.label}; {where}; {exposed[term.name][1]}"))
    return rows


def _bubble_why(p: int, m: int, v: int, schedule: str | None) -> str:
    name = schedule or ("interleaved" if v > 1 and m % p == 0 else "1f1b")
    shown = v if name == "interleaved" else 1
    return f"{name}: (p-1)/(v·m) = {p - 1}/({shown}·{m}) of the busy time of the busiest stage, idle on every stage"


def _straggler_rows(gpus: int, allowance: float, per_doubling: float, busy: float) -> list[tuple[str, float, str]]:
    """The breakdown's straggler row (none without an allowance), its rate as the caller set it."""
    if not allowance:
        return []
    fitted = " (calc.timing.efficiency, fitted)" if per_doubling == STRAGGLER_PER_DOUBLING else " (as given)"
    why = f"{allowance:.1%} of the step for {gpus:,} GPUs: {per_doubling:.1%} per doubling above {STRAGGLER_FROM_GPUS}"
    return [("straggler and congestion", busy * allowance, why + " GPUs" + fitted)]
