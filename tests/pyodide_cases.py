"""A table of engine calls whose results must be identical in CPython and in Pyodide.

``run_cases()`` is executed by both interpreters (see ``test_pyodide.py``); each case is
plain data in, plain data out, so the comparison is exact.
"""

from __future__ import annotations

from calc import format_bytes, model_state_bytes, parse_count
from calc.widgets import calculators, render

STATE_CASES = [
    ("7.5e9", 1, 64, "mixed-adam-16"),
    ("7B", 0, 1, "mixed-adam-16"),
    ("70B", 3, 1024, "mixed-adam-18"),
    ("1.5T", 2, 4096, "mixed-adam-20"),
    ("405B", 3, 8192, "fp32-adam-16"),
    ("124439808", 2, 7, "mixed-adam-16"),  # dp does not divide Ψ: ceil shards
]
RENDER_CASES = [
    ("will-it-fit", {"params": "70B", "zero_stage": "3", "dp": "64"}),
    ("will-it-fit", {"params": "7B", "gpu": "custom", "gpu_memory": "24", "unit": "GiB"}),
    ("will-it-fit", {"params": "garbage"}),
    ("will-it-fit", {"dp": "0"}),
    ("parameter-count", {"config": "[" * 5000}),  # would overflow Pyodide's C stack inside json.loads
    ("parameter-count", {"config": '{"a": ' * 5000 + "1" + "}" * 5000}),
    ("parameter-count", {"config": "[" * 32 + "]" * 32}),  # at the depth bound: parsed, then refused as a list
    ("will-it-fit", {"params": "1e100000000"}),  # refused before 10**100000000 is computed
    ("will-it-fit", {"gpu": "custom", "gpu_memory": "1e5000"}),
    ("pipeline-bubble", {"pp": "1024", "num_microbatches": "9"}),
    ("pipeline-bubble", {"pp": "4", "num_microbatches": "8", "schedule": "zb-h1"}),
    ("pipeline-bubble", {"pp": "8", "num_microbatches": "16", "schedule": "dualpipe"}),
]


def run_cases() -> dict[str, object]:
    """Evaluate every case; return JSON-ready results."""
    return {
        "state": [model_state_bytes(p, zero_stage=s, dp=d, convention=c).as_dict() for p, s, d, c in STATE_CASES],
        "format": [format_bytes(parse_count(p) * 16) for p, *_ in STATE_CASES],
        "render": [render(name, inputs) for name, inputs in RENDER_CASES],
        "defaults": {name: render(name, {}) for name in sorted(calculators())},
    }
