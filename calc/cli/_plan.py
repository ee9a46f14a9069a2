"""``trainmem plan``: the planner's own JSON shape, ``{"layouts": [...], "rejected": [...]}``, best first.

The plan calculator's page and this command share one computation,
[`plan_result`][calc.widgets.planner.plan_result]; only the JSON differs from the other subcommands, because
the issue that defined the planner's command line fixed its keys (integer degrees, ``memory_bytes``,
``step_time_s``, ``tflops_per_gpu``, ``mfu`` and the breakdowns per layout).
"""

from __future__ import annotations

from typing import Any

from calc.cli._command import calculator_command
from calc.widgets import calculators

__all__ = ["plan_command", "plan_data"]

_SEARCHED = ("dp", "tp", "pp", "cp", "ep", "zero_stage", "recompute", "micro_batch", "interleave")
"""Fields that a blank value on the command line searches, as ``any`` does on the page."""


def _with_blanks_searched(values: dict[str, str]) -> dict[str, str]:
    return {k: ("any" if k in _SEARCHED and not v.strip() else v) for k, v in values.items()}


def plan_data(values: dict[str, str]) -> dict[str, Any]:
    """The plan for the calculator's fields (defaults filled in) as plain data.

    Examples:
        >>> from calc.widgets import calculators
        >>> v = {**calculators()["plan"].defaults, "preset": "llama3-8b", "gpus": "16", "global_batch": "64", "tp": ""}
        >>> d = plan_data(v)
        >>> sorted(d)
        ['assumptions', 'command', 'inputs', 'layouts', 'rejected', 'rejected_by_reason', 'searched']
        >>> best = d["layouts"][0]
        >>> all(isinstance(best[k], int) for k in ("dp", "tp", "pp", "cp", "ep", "zero_stage", "memory_bytes"))
        True
    """
    from calc.widgets.planner import plan_result

    values = _with_blanks_searched(values)
    _, r = plan_result(values)
    return {
        "command": "plan",
        "inputs": values,
        "layouts": r["layouts"],
        "rejected": r["rejected"],
        "rejected_by_reason": r["rejected_by_reason"],
        "searched": r["searched"],
        "assumptions": r.get("assumptions", []),
    }


def plan_command() -> Any:
    """The ``plan`` subcommand: the plan calculator's fields and text, the planner's JSON."""
    calc = calculators().get("plan")
    if calc is None:
        return None
    base = calculator_command(calc)
    return type(base)(
        base.name,
        base.title,
        base.fields,
        lambda values: base.text(_with_blanks_searched(values)),
        plan_data,
        base.description,
    )
