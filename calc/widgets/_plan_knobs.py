"""The planner form's step-time knobs (issue 21: every knob visible and overridable, on the page too).

[`STEP_KNOB_FIELDS`][calc.widgets._plan_knobs.STEP_KNOB_FIELDS] are [`plan`][calc.timing.planner.plan]'s
[`step_time`][calc.timing.steptime.step_time] knobs and its fabric's (the pod size and the oversubscription above
it), folded under the hardware group's "More options";
[`step_knobs`][calc.widgets._plan_knobs.step_knobs] reads them, checked, leaving out those at ``plan``'s defaults.
Beside them: the form's precisions and the defaults it shares with ``plan`` (a blank matmul efficiency and GPUs per
node are the GPU's own; the memory kept free is ``plan``'s margin), said in the fields' help.
"""

from __future__ import annotations

from fractions import Fraction

from calc.hardware import GPUS
from calc.units import parse_decimal, parse_positive_int
from calc.widgets import Field
from calc.widgets._fields import one_of
from calc.widgets._html import checked

__all__ = [
    "DTYPES",
    "EFFICIENCY_BY_GENERATION",
    "FP8_PASSES_DEFAULT",
    "MAX_OVERSUBSCRIPTION",
    "P2P_CHOICES",
    "SAFETY_MARGIN_DEFAULT",
    "SHARE_KNOBS",
    "STEP_KNOB_FIELDS",
    "STRAGGLER_DEFAULT",
    "SWITCH_KNOBS",
    "TP_OVERLAP_DEFAULT",
    "efficiency_help",
    "server_help",
    "step_knobs",
]

TP_OVERLAP_DEFAULT = "0"
"""``calc.timing.overlap.TP_OVERLAP`` as the form types it (that module pulls in the communication model, which
the form does not import; ``tests/test_widgets_planner.py`` holds the two equal)."""

STRAGGLER_DEFAULT = "0.015"
"""``calc.timing.efficiency.STRAGGLER_PER_DOUBLING`` as the form types it (held equal by the same test)."""

FP8_PASSES_DEFAULT = "10"
"""``calc.timing.efficiency.FP8_MEMORY_PASSES`` as the form types it (held equal by the same test)."""

MAX_FP8_PASSES = 1000
"""``calc.timing.efficiency.MAX_PASSES``, the most HBM passes the form takes for FP8's casts (held equal by the
same test)."""

_SHARES = {"attention_efficiency": (Fraction(1, 20), ""), "tp_overlap": (Fraction(0), TP_OVERLAP_DEFAULT)}
_SHARES["straggler_per_doubling"] = (Fraction(0), STRAGGLER_DEFAULT)
SHARE_KNOBS = tuple(_SHARES)
"""The knobs that are a share from their floor to 1: ``(floor, the form's default)``; a blank attention efficiency
is the stack's attention kernel's measured rate."""

SWITCH_KNOBS = ("tp_comm_overlap", "overlap_param_gather")
"""The on/off knobs (``plan``'s default: off)."""

P2P_CHOICES = (
    ("schedule", "as the schedule does"),
    ("1", "overlapped"),
    ("0", "exposed"),
)
"""The pipeline sends' overlap: ``plan``'s ``p2p_overlap`` left to the schedule (``None``: Megatron-LM overlaps the
interleaved schedule's sends, ``calc.timing.overlap``), forced on, or forced off."""


SAFETY_MARGIN_DEFAULT = "0.05"
"""``calc.timing.planner.SAFETY_MARGIN`` as the form types it (that module is the planner's, which the form does not
import; ``tests/test_widgets_planner.py`` holds the two equal)."""

DTYPES: tuple[tuple[str, str], ...] = (
    ("bf16", "BF16"),
    ("fp8", "FP8 (linear layers)"),
)
"""The matmul precisions the form offers: ``calc.timing.plan_context.PLAN_DTYPES`` (that module pulls in the
planner, which the form does not import; ``tests/test_widgets_planner.py`` holds the two equal)."""


EFFICIENCY_BY_GENERATION: tuple[tuple[str, str], ...] = (("A100", "0.68"), ("the others", "0.6"))
"""``calc.timing.efficiency.MATMUL_EFFICIENCY_BY_GPU`` as the form's help says it (that module is the step-time
model's, which the form does not import; ``tests/test_widgets_planner.py`` holds the two equal)."""


def server_help() -> str:
    """The GPUs per node's help: what a blank takes, by GPU (``GPU.gpus_per_node``)."""
    by_count: dict[int, list[str]] = {}
    for g in GPUS.values():
        by_count.setdefault(g.gpus_per_node, []).append(g.label.split(" ")[0])
    common = max(by_count, key=lambda k: len(by_count[k]))
    odd = "; ".join(f"{', '.join(dict.fromkeys(names))} {k}" for k, names in by_count.items() if k != common)
    return f"blank: the GPU's standard server ({odd}; the others {common})"


def efficiency_help() -> str:
    """The matmul efficiency's help: what a blank takes, by GPU generation."""
    gpus = "; ".join(f"{generation} {eff}" for generation, eff in EFFICIENCY_BY_GENERATION)
    return f"blank: the GPU's own ({gpus}; A100's fitted to Narayanan et al. 2021 Table 1); put your measured value"


def _folded(name: str, label: str, default: str, **kw: object) -> Field:
    return Field(name, label, default, group="Hardware", advanced=True, **kw)


STEP_KNOB_FIELDS = (
    _folded(
        "attention_efficiency",
        "Attention efficiency (share of peak)",
        "",
        help="blank: the measured rate of the stack's attention kernel; put your measured value",
    ),
    _folded(
        "fp8_memory_passes",
        "FP8 casts: HBM passes over the stored activations",
        FP8_PASSES_DEFAULT,
        help="FP8 only; fitted to published BF16/FP8 pairs (NVIDIA's and torchtitan's); 0 for none",
    ),
    _folded(
        "tp_overlap",
        "TP communication hidden (share)",
        TP_OVERLAP_DEFAULT,
        help="besides Transformer Engine's overlap below; 0 exposes it all",
    ),
    _folded("tp_comm_overlap", "Transformer Engine TP comm overlap (--tp-comm-overlap)", "0", kind="checkbox"),
    _folded("overlap_param_gather", "Overlap the parameter all-gather (--overlap-param-gather)", "0", kind="checkbox"),
    _folded(
        "p2p_overlap",
        "Pipeline sends hidden behind compute",
        "schedule",
        kind="select",
        options=P2P_CHOICES,
        help="Megatron-LM overlaps the interleaved schedule's (--overlap-p2p-communication); each send's latency shows",
    ),
    _folded(
        "pod_gpus",
        "GPUs per non-blocking pod",
        "",
        kind="number",
        help="blank: one non-blocking fabric; Llama 3's pods hold 3,072",
    ),
    _folded(
        "oversubscription",
        "Oversubscription above a pod (N for 1:N)",
        "1",
        help="a group spanning pods gets 1/N of its NIC bandwidth; Llama 3's fabric: 7",
    ),
    _folded(
        "straggler_per_doubling",
        "Straggler allowance per doubling of the GPUs (share)",
        STRAGGLER_DEFAULT,
        help="fitted to published runs; 0 for none",
    ),
)
"""The knobs' fields, in the order the form shows them."""


def step_knobs(v: dict[str, str]) -> dict[str, str]:
    """The knobs set away from ``plan``'s defaults, as ``plan_from_fields`` strings, checked.

    Examples:
        >>> step_knobs({"attention_efficiency": "", "tp_overlap": "0.5", "straggler_per_doubling": "0.015",
        ...             "tp_comm_overlap": "1", "overlap_param_gather": "0", "p2p_overlap": "0"})
        {'tp_overlap': '0.5', 'tp_comm_overlap': '1', 'p2p_overlap': '0'}
        >>> step_knobs({"attention_efficiency": "", "tp_overlap": "0", "straggler_per_doubling": "0.015",
        ...             "tp_comm_overlap": "0", "overlap_param_gather": "0", "p2p_overlap": "schedule",
        ...             "pod_gpus": "3,072", "oversubscription": "7"})
        {'pod_gpus': '3072', 'oversubscription': '7.0'}
        >>> step_knobs({"attention_efficiency": "2", "tp_overlap": "0", "straggler_per_doubling": "0",
        ...             "tp_comm_overlap": "0", "overlap_param_gather": "0", "p2p_overlap": "schedule"})
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: attention_efficiency must be a number from 0.05 to 1 (got '2')
    """
    knobs = {}
    for name, (floor, default) in _SHARES.items():
        text = v[name].strip()
        if text == default or (text == "" and name == "attention_efficiency"):
            continue
        rule = f"must be a number from {float(floor):g} to 1"
        value = parse_decimal(text, name, rule, minimum=floor, maximum=1)
        if value != parse_decimal(default or "0", name, rule):
            knobs[name] = repr(float(value))
    for name in SWITCH_KNOBS:
        if checked(v[name]):
            knobs[name] = "1"
    text = v.get("fp8_memory_passes", FP8_PASSES_DEFAULT).strip()
    rule = f"must be a number from 0 to {MAX_FP8_PASSES}"
    passes = parse_decimal(text, "fp8_memory_passes", rule, minimum=0, maximum=MAX_FP8_PASSES)
    if passes != int(FP8_PASSES_DEFAULT):
        knobs["fp8_memory_passes"] = repr(float(passes))
    knobs.update(_fabric(v))
    if one_of(v, "p2p_overlap", (value for value, _ in P2P_CHOICES)) != "schedule":
        knobs["p2p_overlap"] = v["p2p_overlap"]
    return knobs


MAX_OVERSUBSCRIPTION = 64
"""The most oversubscription the form takes (1:64; Llama 3's fabric is 1:7 above its pods)."""


def _fabric(v: dict[str, str]) -> dict[str, str]:
    """The pod size and the oversubscription above it (``calc.parallel.network.Network``), when set."""
    knobs = {}
    if v.get("pod_gpus", "").strip():
        knobs["pod_gpus"] = str(parse_positive_int(v["pod_gpus"], "pod_gpus", maximum=1 << 20))
    text = v.get("oversubscription", "1").strip()
    rule = f"must be a number from 1 (non-blocking) to {MAX_OVERSUBSCRIPTION}"
    ratio = parse_decimal(text, "oversubscription", rule, minimum=1, maximum=MAX_OVERSUBSCRIPTION)
    if ratio != 1:
        knobs["oversubscription"] = repr(float(ratio))
    return knobs
