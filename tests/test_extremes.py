"""Every calculator over the whole range its fields allow: the HTML stays small and render never raises.

Each numeric field is tried at its smallest and largest allowed value (the bounds its error rule
states), the others at their defaults, then every option of every select, then a few combined
extremes. ``render`` must answer ``ok`` or a CalcError on one of the calculator's fields, and the
HTML must stay under ``HTML_BUDGET``. Times are not asserted (CI machines are loaded); the largest
is measured and reported by hand. An input ``tests/test_render_limits.py`` renders already is held to the same
there and not rendered again here.
"""

from __future__ import annotations

import pytest

from _extreme_inputs import COMBINED, CUSTOM_GPU, INTERLEAVED
from calc.widgets import calculators, render

HTML_BUDGET = 200_000
"""Most bytes of HTML one render may return: a page must survive every allowed input."""

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


def _key(name: str, inputs: dict[str, str]) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A render's calculator and every input it reads (the defaults filled in, as ``render`` fills them)."""
    return name, tuple(sorted({**calculators()[name].defaults, **inputs}.items()))


def _cases() -> list[tuple[str, dict[str, str]]]:
    """The cases above that ``tests/test_render_limits.py``'s walk does not render already: it takes this module's
    ``COMBINED``, and every option of every select, and holds each render to what this test holds and more (its
    HTML within the same budget, a refusal naming a field in brief, and its CPU time). A planner render is a search
    (up to 2 s in CPython); the same inputs here again took a quarter of the Pyodide suite's time."""
    from test_render_limits import CASES as WALKED

    cases = []
    for name, field, low, high, context in RANGES:
        cases += [(name, {**context, field: low}), (name, {**context, field: high})]
    for name, calc in sorted(calculators().items()):
        for f in calc.fields:
            cases += [(name, {f.name: value}) for value, _ in f.options]
    walked = {_key(name, inputs) for name, inputs in WALKED}
    return [(name, inputs) for name, inputs in [*cases, *COMBINED] if _key(name, inputs) not in walked]


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
