"""Numbers on "Plan a training run" (docs/plan.md) and the TP-across-nodes paragraph of docs/parallelism/3d.md.

Every value is a call into ``calc.timing.steptime``, ``calc.timing.planner`` or ``calc.parallel.comm`` with the
inputs the pages
state next to it: Narayanan et al. 2021 Table 1 on A100 80 GB nodes (NVLink 3, 8 x HDR 200 Gb/s), read from the
rows the accuracy page re-predicts (``validation/published/runs.json``), and the communication calculator's
defaults (70B, tp 8, pp 4, dp 8) for the TP-across-nodes comparison.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from functools import cache
from pathlib import Path

from calc.memory.layout import Layout
from calc.models.presets import preset
from calc.parallel.comm import step_communication
from calc.parallel.network import Network, collective_cost, group_placement
from calc.timing.efficiency import (
    EAGER_MEMORY_PASSES,
    FP8_MEMORY_PASSES,
    attention_efficiency,
    matmul_efficiency_for,
)
from calc.timing.plan_space import SHORT_CP_GAIN, cp_limit
from calc.timing.planner import plan
from calc.timing.steptime import MATMUL_EFFICIENCY, MEMORY_PASSES, step_time
from prose_numbers import COMM_CALCULATOR

_A100 = {"gpu": "a100-80", "network": Network("nvlink3", "ib-hdr")}
_RUNS = Path(__file__).resolve().parents[2] / "validation" / "published" / "runs.json"
"""The published runs; Narayanan et al. 2021 Table 1 is the ``narayanan21-*`` rows of its ``Table 1``: each with its
layout (b = 1, the smallest v in (2, 3) that divides the layers) and the published hardware TFLOP/s per GPU."""


@cache
def _table1_errors() -> tuple[float, ...]:
    """Each row of Table 1: the engine's hardware TFLOP/s per GPU over the published, minus 1."""
    rows = json.loads(_RUNS.read_text())["rows"]
    rows = [r for r in rows if r["id"].startswith("narayanan21-") and r["source"]["table"] == "Table 1"]
    out = []
    for row in rows:
        knobs = {k: v for k, v in row["knobs"].items() if k in ("tp_dgrad_overlap", "p2p_overlap")}  # as run in 2021
        got = step_time(preset(row["model"]), Layout(**row["layout"]), **_A100, **knobs).hardware_tflops_per_gpu
        out.append(got / row["measured"]["value"] - 1)
    return tuple(out)


@cache
def _dgx_fp8_gain(model: str) -> float:
    """NVIDIA's DGX Cloud Llama 3.1 ``model`` on H100: the measured BF16 step over the FP8 one (``dgxc25-*`` rows,
    the smallest job of each)."""
    rows = {r["id"]: r for r in json.loads(_RUNS.read_text())["rows"]}
    size = {"8b": 8, "70b": 64, "405b": 576}[model]
    bf16, fp8 = (rows[f"dgxc25-llama3.1-{model}-h100-{k}{size}"]["measured"] for k in ("", "fp8-"))
    assert bf16["metric"] == fp8["metric"] == "step_time_s"
    return bf16["value"] / fp8["value"]


@cache
def _plan_145b() -> dict:
    return plan(
        "narayanan-145.6b", gpus=1536, seq_len=2048, global_batch=2304, gpu="a100-80", intra="nvlink3",
        inter="ib-hdr", top=50,
    )  # fmt: skip


def _published_rank() -> str:
    for i, x in enumerate(_plan_145b()["layouts"], 1):
        if x["tp"] == 8 and x["pp"] == 8:
            return str(i)
    return "below 50"


def _best_145b() -> str:
    b = _plan_145b()["layouts"][0]
    return f"tp = {b['tp']}, pp = {b['pp']}, dp = {b['dp']} with ZeRO-{b['zero_stage']}"


@cache
def _tp_steps() -> tuple[float, float]:
    """145.6B on 64 A100s: t = 8, p = 8 inside a node vs t = 16, p = 4 over two nodes (selective recompute)."""
    arch = preset("narayanan-145.6b")
    kw = {"dp": 1, "global_batch": 64, "seq_len": 2048, "sequence_parallel": True, "recompute": "selective"}
    inside = step_time(arch, Layout(tp=8, pp=8, **kw), **_A100).step_time_s
    across = step_time(arch, Layout(tp=16, pp=4, **kw), **_A100).step_time_s
    return inside, across


def _comm_default(tp: int) -> float:
    """The communication calculator's defaults (calc/widgets/comm.py) with another tp."""
    overrides = {"tp": tp, "intra_efficiency": 0.783, "inter_efficiency": 0.96}
    return step_communication(**{**COMM_CALCULATOR, **overrides}).total_time_s


def _ms(s: float) -> str:
    return f"{s * 1e3:.0f} ms"


def _us(s: float) -> str:
    return f"{s * 1e6:.0f} µs"


def _ar_call(tp: int) -> float:
    """One TP all-reduce of b·s·h = 4096 × 8192 bf16 (docs/communication.md's table), H100 NVLink 4 + NDR."""
    return collective_cost("all-reduce", 4096 * 8192 * 2, group_placement(1, tp, 8), Network()).time_s


NUMBERS: dict[str, Callable[[], str]] = {
    "plan-table1-max-err": lambda: f"{max(abs(e) for e in _table1_errors()):.0%}",
    "plan-matmul-eff": lambda: f"{MATMUL_EFFICIENCY:.0%}",
    "plan-matmul-eff-h100": lambda: f"{matmul_efficiency_for('h100-sxm'):.0%}",
    "plan-attn-cudnn-8k": lambda: f"{attention_efficiency('h100-sxm', 8192, 'megatron'):.0%}",
    "plan-attn-fa2-8k": lambda: f"{attention_efficiency('h100-sxm', 8192, 'torchtitan'):.0%}",
    "plan-memory-passes": lambda: f"{MEMORY_PASSES:g}",
    "plan-fp8-passes": lambda: f"{FP8_MEMORY_PASSES:g}",
    "plan-eager-passes": lambda: f"{EAGER_MEMORY_PASSES:g}",
    **{f"plan-fp8-gain-{m}": (lambda m=m: f"{_dgx_fp8_gain(m):.2f}×") for m in ("8b", "70b", "405b")},
    "plan-cp-8k": lambda: str(cp_limit(8192)),
    "plan-cp-32k": lambda: str(cp_limit(32768)),
    "plan-short-cp-gain": lambda: f"{SHORT_CP_GAIN:.0%}",
    "plan-145b-published-rank": _published_rank,
    "plan-145b-best": _best_145b,
    "plan-145b-searched": lambda: f"{_plan_145b()['searched']:,}",
    "plan-tp16-step-increase": lambda: f"{_tp_steps()[1] / _tp_steps()[0] - 1:.0%}",
    "plan-ar-tp8-call": lambda: _us(_ar_call(8)),
    "plan-ar-tp16-call": lambda: _us(_ar_call(16)),
    "plan-comm-tp8": lambda: _ms(_comm_default(8)),
    "plan-comm-tp16": lambda: _ms(_comm_default(16)),
}
