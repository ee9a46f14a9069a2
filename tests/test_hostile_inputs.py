"""Hostile input in every field of every calculator comes back as a CalcError on that field, or renders.

``render`` is what the browser worker calls on every keystroke; whatever a reader types or pastes
(or a crafted link carries) must come back as ``{"ok": True, "html": ...}`` or as an error naming the
box at fault, with a message that states a rule and quotes at most a short prefix of the value. It must
never raise, never freeze, and never reflect markup from the input into the HTML.
"""

from __future__ import annotations

import json

import pytest

from calc.errors import MAX_ECHO_CHARS
from calc.widgets import calculators, render

HOSTILE: tuple[str, ...] = (
    "",
    "   ",
    "abc",
    "-1",
    "0",
    "NaN",
    "Infinity",
    "-inf",
    "1e400",
    "1e-400",
    "1e5000",
    "1e100000000",
    "1.5",
    "1e30",
    "1000000000",
    "<script>alert(1)</script>",
    '"><img src=x onerror=alert(1)>',
    "javascript:alert(1)",
    "x" * 10000,
    "\u202e12",
    "1\u200b2",
)
"""Every value tried in every field."""

_BLANK = frozenset({"", "   "})
_PASTED = ("parameter-count", "training-memory", "serving-memory", "communication", "training-compute", "plan")
_PASTED += ("finetune-memory", "serving-time")
"""The calculators with a pasted ``config`` box."""

# The (calculator, field) pairs that take a real number, and those that take a count.
_REAL = [("will-it-fit", "gpu_memory"), ("training-memory", "gpu_memory"), ("serving-memory", "gpu_memory")]
_REAL += [("finetune-memory", "gpu_memory"), ("training-compute", "peak_tflops"), ("training-compute", "mfu")]
_REAL += [("communication", "intra_efficiency"), ("communication", "inter_efficiency")]
_COUNTS = [("will-it-fit", "params"), ("training-compute", "params"), ("training-compute", "tokens")]
_COUNTS += [("communication", "params")]

OK: dict[tuple[str, str], frozenset[str]] = {
    ("training-memory", "global_batch"): _BLANK | {"1000000000"},  # optional; at most 2^30 sequences
    # Optional fields: blank means "not given" (a blank config: the preset is used).
    **dict.fromkeys([(name, "config") for name in _PASTED], _BLANK),
    # The planner searches a degree left blank (as "any").
    **dict.fromkeys([("plan", d) for d in ("dp", "tp", "pp", "cp", "ep", "micro_batch", "interleave")], _BLANK),
    # Blank or 0 routed-expert parameters means a dense model; 1e9 of 70B is a plausible MoE share.
    ("communication", "expert_params"): _BLANK | {"0", "1000000000"},
    # ZeRO stage 0 is plain data parallelism (the planner searches it too: DDP for the torchtitan stack).
    **dict.fromkeys(
        [(name, "zero_stage") for name in ("will-it-fit", "training-memory", "communication", "plan")], frozenset({"0"})
    ),
    # The planner's step-time knobs: 0 hides no TP communication and allows no straggler; a blank attention
    # efficiency is the stack's kernel's measured rate.
    ("plan", "tp_overlap"): frozenset({"0"}),
    ("plan", "straggler_per_doubling"): frozenset({"0"}),
    ("plan", "attention_efficiency"): _BLANK,
    ("plan", "matmul_efficiency"): _BLANK,  # blank: the GPU generation's own
    ("plan", "gpus_per_node"): _BLANK,  # blank: the GPU's standard server
    ("plan", "p2p_overlap"): frozenset({"0"}),  # a choice: the pipeline's sends exposed
    ("plan", "pod_gpus"): _BLANK,  # blank: one non-blocking fabric
    ("plan", "oversubscription"): frozenset({"1.5"}),  # 1:1.5 above the pods
    ("plan", "fp8_memory_passes"): frozenset({"0", "1.5"}),  # FP8's casts: none, or a measured count of passes
    # Real-valued fields take 1.5.
    **dict.fromkeys(_REAL, frozenset({"1.5"})),
    ("serving-memory", "reserved_pct"): frozenset({"0", "1.5"}),
    # A billion parameters or tokens is a count, not a typo.
    **dict.fromkeys(_COUNTS, frozenset({"1000000000"})),
}
"""The (calculator, field) pairs for which some hostile values are legitimately valid; all else must fail.

Checkboxes are not listed: any value is read as on or off (``checked``), so every value renders."""

INTERNAL_NAMES = (
    "memory_bytes",
    "reserved_fraction",
    "num_heads",
    "num_kv_heads",
    "size_bytes",
    "bytes_per_element",
    "stage_params",
    "layer_bytes",
    "Traceback",
    "Error:",
)
"""Names of engine arguments and Python noise that a reader never sees and a message must not show."""

CASES = [(name, f.name, f.kind, f.enabled_when) for name, calc in sorted(calculators().items()) for f in calc.fields]


def _context(enabled_when: tuple[str, str] | None) -> dict[str, str]:
    """Switch on a field that another one enables (``gpu_memory`` needs ``gpu=custom``)."""
    return {} if enabled_when is None else {enabled_when[0]: enabled_when[1]}


def _assert_error_names_field(result: dict, field: str, value: str) -> None:
    err = result["error"]
    message = err["message"]
    assert err["field"] == field, (field, value, err)
    assert message.startswith(f"{field} ") and len(message) > len(field) + 8, message  # the field, then a rule
    assert len(message) < 600, message
    assert value[: MAX_ECHO_CHARS + 1] not in message or len(value) <= MAX_ECHO_CHARS, message
    for name in INTERNAL_NAMES:
        assert name not in message, message


@pytest.mark.parametrize("value", HOSTILE, ids=lambda v: ascii(v[:20]))
@pytest.mark.parametrize(("name", "field", "kind", "enabled_when"), CASES, ids=[f"{c[0]}:{c[1]}" for c in CASES])
def test_hostile_value(name: str, field: str, kind: str, enabled_when: tuple[str, str] | None, value: str) -> None:
    result = render(name, {**_context(enabled_when), field: value})
    expected_ok = kind == "checkbox" or value in OK.get((name, field), frozenset())
    assert result["ok"] is expected_ok, (name, field, value, result.get("error"))
    if result["ok"]:
        page = result["html"].lower()
        assert "<script" not in page and "onerror=" not in page and "javascript:" not in page
    else:
        _assert_error_names_field(result, field, value)


SELECTS = [(name, f.name) for name, calc in sorted(calculators().items()) for f in calc.fields if f.kind == "select"]


@pytest.mark.parametrize(("name", "field"), SELECTS, ids=[f"{n}:{f}" for n, f in SELECTS])
def test_unknown_select_option_names_the_field(name: str, field: str) -> None:
    result = render(name, {field: "not-an-option"})
    assert result["ok"] is False
    _assert_error_names_field(result, field, "not-an-option")


def test_every_field_is_tried() -> None:
    assert len(CASES) * len(HOSTILE) == sum(len(c.fields) for c in calculators().values()) * len(HOSTILE)
    assert len(CASES) >= 89


@pytest.mark.parametrize(
    "raw", ["NaN", "Infinity", "1e400", "-0.1", "2", '"0.1"', "true", "[0.1]", "[" + "0," * 5000 + "0]"]
)
def test_hostile_dropout_in_a_pasted_config_names_the_key(raw: str) -> None:
    """A dropout probability outside 0..1, or not a number, refuses the config and names its key (issue 18)."""
    from calc.models.presets import PRESETS

    body = json.dumps({k: v for k, v in PRESETS["llama3-8b"].items() if k != "_source"})
    result = render("parameter-count", {"config": body[:-1] + f', "attention_dropout": {raw}}}'})
    assert result["ok"] is False
    _assert_error_names_field(result, "config", raw)
    assert "attention_dropout must be a dropout probability from 0 to 1" in result["error"]["message"]
