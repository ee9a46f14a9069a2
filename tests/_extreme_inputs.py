"""Inputs at several extremes at once, and those that once broke a page: ``tests/test_render_limits.py`` renders
each (within its CPU, element and byte ceilings) and ``tests/test_extremes.py`` any its walk would not."""

from __future__ import annotations

import json

from _helpers import LLAMA_7B_CONFIG
from calc.models.hf_config import MAX_CONFIG_CHARS, MAX_CONFIG_DEPTH

CUSTOM_GPU = {"gpu": "custom"}
INTERLEAVED = {"schedule": "interleaved"}

_BIG = 1 << 24
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
