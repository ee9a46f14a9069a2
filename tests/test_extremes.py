"""Every calculator over the whole range its fields allow: the HTML stays small and render never raises.

Each numeric field is tried at its smallest and largest allowed value (the bounds its error rule
states), the others at their defaults, then every option of every select, then a few combined
extremes. ``render`` must answer ``ok`` or a CalcError on one of the calculator's fields, and the
HTML must stay under ``HTML_BUDGET``. Times are not asserted (CI machines are loaded); the largest
is measured and reported by hand.
"""

from __future__ import annotations

import json

import pytest

from _helpers import LLAMA_7B_CONFIG
from calc.models.hf_config import MAX_CONFIG_CHARS, MAX_CONFIG_DEPTH
from calc.widgets import calculators, render

HTML_BUDGET = 200_000
"""Most bytes of HTML one render may return: a page must survive every allowed input."""

CUSTOM_GPU = {"gpu": "custom"}
INTERLEAVED = {"schedule": "interleaved"}

# Each calculator's (field, smallest allowed, largest allowed[, other inputs the field needs])
_RANGES_BY_CALCULATOR = {
    "will-it-fit": [
        ("params", "1", "1e18"), ("dp", "1", "1048576"), ("gpu_memory", "0.001", "100000", CUSTOM_GPU),
        ("gpu_memory", "0.001", "90949", {**CUSTOM_GPU, "unit": "GiB"}),
    ],
    "training-compute": [
        ("params", "1", "1e18"), ("tokens", "1", "1e18"), ("num_gpus", "1", "10000000"),
        ("peak_tflops", "0.001", "1e6", CUSTOM_GPU), ("mfu", "0.01", "100"),
    ],
    "serving-memory": [
        ("seq_len", "1", "16777216"), ("batch", "1", "1048576"), ("tp", "1", "1024"),
        ("gpu_memory", "0.001", "100000", CUSTOM_GPU), ("reserved_pct", "0", "99.999"),
    ],
    "pipeline-bubble": [
        ("pp", "1", "1024"), ("num_microbatches", "1", "1000000"), ("virtual_stages", "1", "64", INTERLEAVED),
    ],
    "communication": [
        ("params", "1", "1e18"), ("layers", "1", "10000"), ("hidden", "1", "1000000"), ("kv_dims", "1", "10000000"),
        ("seq", "1", "16777216"), ("micro_batch", "1", "65536"), ("num_microbatches", "1", "1048576"),
        ("tp", "1", "1024"), ("pp", "1", "1024"), ("dp", "1", "16384"), ("cp", "1", "1024"),
        ("ep", "1", "1024", {"dp": "1024"}), ("virtual_stages", "1", "64"), ("expert_params", "0", "70B"),
        ("top_k", "1", "1024"), ("gpus_per_node", "1", "1024"), ("intra_efficiency", "1", "100"),
        ("inter_efficiency", "1", "100"),
    ],
    "activations": [
        ("seq_len", "1", "16777216"), ("micro_batch", "1", "65536"), ("hidden", "1", "1048576"),
        ("heads", "1", "16384"), ("tp", "1", "1024"),
    ],
    "training-memory": [
        ("dp", "1", "1048576"), ("tp", "1", "1024"), ("pp", "1", "1024"), ("cp", "1", "1024"), ("ep", "1", "1024"),
        ("micro_batch", "1", "65536"), ("global_batch", "8", "1073741824"), ("seq_len", "1", "16777216"),
        ("interleave", "1", "64", {"pp": "2"}), ("gpu_memory", "0.001", "100000", CUSTOM_GPU),
    ],
}  # fmt: skip
RANGES = [(name, *row, {})[:5] for name, rows in _RANGES_BY_CALCULATOR.items() for row in rows]
"""(calculator, field, smallest allowed, largest allowed, other inputs the field needs)"""

_BIG = 1 << 24
_NESTED = {"model_type": "llama", **{k: v for k, v in LLAMA_7B_CONFIG.items() if k != "model_type"}}
_deep: object = 1
for _ in range(MAX_CONFIG_DEPTH - 1):
    _deep = [_deep]
_padded = json.dumps({**LLAMA_7B_CONFIG, "deep": _deep})
_padded = _padded[:-1] + ', "pad": "' + "x" * (MAX_CONFIG_CHARS - len(_padded) - 12) + '"}'

COMBINED = [
    ("pipeline-bubble", {"pp": "1024", "num_microbatches": "9"}),  # was a 4.8 MB SVG
    ("pipeline-bubble", {"pp": "1024", "num_microbatches": "1000000"}),
    ("pipeline-bubble", {"pp": "1024", "num_microbatches": "1024", **INTERLEAVED, "virtual_stages": "64"}),
    ("pipeline-bubble", {"pp": "32", "num_microbatches": "8", "backward_units": "1"}),  # the largest drawn
    ("pipeline-bubble", {"pp": "4", "num_microbatches": "64", "schedule": "gpipe"}),
    ("pipeline-bubble", {"pp": "4", "num_microbatches": "16", **INTERLEAVED, "virtual_stages": "4"}),
    ("will-it-fit", {"params": "1e18", "dp": "1048576", "zero_stage": "3", **CUSTOM_GPU, "gpu_memory": "0.001"}),
    ("will-it-fit", {"params": "1", "dp": "1", **CUSTOM_GPU, "gpu_memory": "100000"}),
    (
        "training-compute",
        {"params": "1e18", "tokens": "1e18", "num_gpus": "1", "mfu": "0.01", **CUSTOM_GPU, "peak_tflops": "0.001"},
    ),
    (
        "training-compute",
        {"params": "1", "tokens": "1", "num_gpus": "10000000", "mfu": "100", **CUSTOM_GPU, "peak_tflops": "1e6"},
    ),
    ("serving-memory", {"seq_len": "16777216", "batch": "1048576", "tp": "8", **CUSTOM_GPU, "gpu_memory": "100000"}),
    ("serving-memory", {"model": "deepseek-v3", "seq_len": "16777216", "batch": "1048576", "tp": "128"}),
    (
        "communication",
        {
            "params": "1e18",
            "dp": "16",
            "tp": "64",
            "pp": "80",
            "cp": "1024",
            "hidden": "1000000",
            "seq": "16777216",
            "micro_batch": "65536",
            "num_microbatches": "1048576",
            "zero_stage": "3",
            "virtual_stages": "1",
            "intra_efficiency": "1",
            "inter_efficiency": "1",
        },
    ),
    ("communication", {"dp": "16384", "cp": "2", "tp": "1024", "pp": "1024", "hidden": "1000000"}),  # dp × cp
    (
        "communication",
        {
            "layers": "10000",
            "pp": "1000",
            "virtual_stages": "10",
            "num_microbatches": "1000000",
            "expert_params": "60B",
            "ep": "8",
            "top_k": "1024",
            "gpus_per_node": "1",
        },
    ),
    (
        "activations",
        {
            "seq_len": "16777216",
            "micro_batch": "65536",
            "hidden": "1048576",
            "heads": "16384",
            "tp": "1024",
            "sequence_parallel": "1",
        },
    ),
    ("activations", {"seq_len": "16777216", "micro_batch": "65536", "hidden": "1048576", "heads": "16384", "tp": "1"}),
    (
        "training-memory",
        {
            "preset": "llama3.1-405b",
            "dp": "1048576",
            "pp": "126",
            "tp": "8",
            "cp": "1024",
            "seq_len": "16777216",
            "micro_batch": "65536",
            "zero_stage": "3",
            "recompute": "none",
            "flash_attention": "0",
            "dropout": "1",
        },
    ),
    ("training-memory", {"preset": "deepseek-v3", "dp": "1024", "ep": "256", "pp": "61", "seq_len": "16777216"}),
    (
        "training-memory",
        {"preset": "llama3-70b", "pp": "2", "interleave": "40", "global_batch": "1073741824", "dp": "8"},
    ),
    ("parameter-count", {"config": _padded}),
    (
        "parameter-count",
        {
            "config": json.dumps(
                {
                    **LLAMA_7B_CONFIG,
                    "hidden_size": _BIG,
                    "vocab_size": _BIG,
                    "intermediate_size": _BIG,
                    "num_hidden_layers": 100_000,
                    "num_attention_heads": 1,
                }
            )
        },
    ),
    (
        "parameter-count",
        {
            "config": json.dumps(
                {
                    **LLAMA_7B_CONFIG,
                    "model_type": "qwen3_moe",
                    "num_experts": _BIG,
                    "moe_intermediate_size": _BIG,
                    "num_hidden_layers": 100_000,
                    "head_dim": 128,
                }
            )
        },
    ),
    ("parameter-count", {"config": "[" * MAX_CONFIG_DEPTH + "]" * MAX_CONFIG_DEPTH}),
]
"""Several fields at their extremes at once, and the inputs that once broke a page."""


def _cases() -> list[tuple[str, dict[str, str]]]:
    cases = []
    for name, field, low, high, context in RANGES:
        cases += [(name, {**context, field: low}), (name, {**context, field: high})]
    for name, calc in sorted(calculators().items()):
        for f in calc.fields:
            cases += [(name, {f.name: value}) for value, _ in f.options]
    return cases + COMBINED


CASES = _cases()


def _id(case: tuple[str, dict[str, str]]) -> str:
    name, inputs = case
    return name + ":" + ",".join(f"{k}={v[:12]}" for k, v in inputs.items())


@pytest.mark.parametrize(("name", "inputs"), CASES, ids=[_id(c) for c in CASES])
def test_whole_range_renders_small(name: str, inputs: dict[str, str]) -> None:
    result = render(name, inputs)
    if result["ok"]:
        assert len(result["html"].encode()) < HTML_BUDGET
    else:
        assert result["error"]["field"] in calculators()[name].defaults, result["error"]
        assert len(result["error"]["message"]) < 600


@pytest.mark.parametrize(
    ("name", "field", "low", "high", "context"), RANGES, ids=[f"{r[0]}:{r[1]}:{r[3]}" for r in RANGES]
)
def test_range_bounds_are_the_stated_ones(name: str, field: str, low: str, high: str, context: dict) -> None:
    """Each bound in RANGES is allowed on its own, so the table really spans each field's range."""
    for value in (low, high):
        result = render(name, {**context, field: value})
        if not result["ok"]:  # only another rule (a layout that cannot run) may refuse it, never the bound
            assert result["error"]["field"] != field or result["error"]["code"] != "invalid-value", result["error"]
