"""Numbers on "Plan a training run" (docs/plan.md) and the TP-across-nodes paragraph of docs/parallelism/3d.md.

Every value is a call into ``calc.timing.steptime``, ``calc.timing.planner`` or ``calc.parallel.comm`` with the
inputs the pages
state next to it: Narayanan et al. 2021 Table 1 on A100 80 GB nodes (NVLink 3, 8 x HDR 200 Gb/s), and the
communication calculator's defaults (70B, tp 8, pp 4, dp 8) for the TP-across-nodes comparison.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

from calc.memory.layout import Layout
from calc.models.presets import preset
from calc.parallel.comm import step_communication
from calc.parallel.network import Network, collective_cost, group_placement
from calc.timing.planner import plan
from calc.timing.steptime import MATMUL_EFFICIENCY, MEMORY_PASSES, step_time

_A100 = {"gpu": "a100-80", "network": Network("nvlink3", "ib-hdr")}
_TABLE1 = (
    ("narayanan-1.7b", 1, 1, 32, 512, 137),
    ("narayanan-3.6b", 2, 1, 64, 512, 138),
    ("narayanan-7.5b", 4, 1, 128, 512, 142),
    ("narayanan-18.4b", 8, 1, 256, 1024, 135),
    ("narayanan-39.1b", 8, 2, 512, 1536, 138),
    ("narayanan-76.1b", 8, 4, 1024, 1792, 140),
    ("narayanan-145.6b", 8, 8, 1536, 2304, 148),
    ("narayanan-310.1b", 8, 16, 1920, 2160, 155),
    ("narayanan-529.6b", 8, 35, 2520, 2520, 163),
    ("narayanan-1t", 8, 64, 3072, 3072, 163),
)
"""Narayanan et al. 2021 Table 1: preset, t, p, GPUs, batch, published TFLOP/s per GPU (as tests/test_steptime.py)."""


def _row_layout(name: str, t: int, p: int, gpus: int, batch: int) -> Layout:
    arch = preset(name)
    d = gpus // (t * p)
    v = next((c for c in (2, 3) if p > 1 and arch.num_layers % (p * c) == 0 and (batch // d) % p == 0), 1)
    return Layout(tp=t, pp=p, dp=d, global_batch=batch, seq_len=2048, recompute="full", interleave=v)


@cache
def _table1_errors() -> tuple[float, ...]:
    out = []
    for name, t, p, n, b, published in _TABLE1:
        got = step_time(preset(name), _row_layout(name, t, p, n, b), **_A100).hardware_tflops_per_gpu
        out.append(got / published - 1)
    return tuple(out)


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
    return step_communication(
        params="70B", layers=80, hidden=8192, kv_dims=2048, seq=4096, num_microbatches=16, tp=tp, pp=4, dp=8,
        zero_stage=1, sequence_parallel=True, intra_efficiency=0.783, inter_efficiency=0.96,
    ).total_time_s  # fmt: skip


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
    "plan-memory-passes": lambda: f"{MEMORY_PASSES:g}",
    "plan-145b-published-rank": _published_rank,
    "plan-145b-best": _best_145b,
    "plan-145b-searched": lambda: f"{_plan_145b()['searched']:,}",
    "plan-tp16-step-increase": lambda: f"{_tp_steps()[1] / _tp_steps()[0] - 1:.0%}",
    "plan-ar-tp8-call": lambda: _us(_ar_call(8)),
    "plan-ar-tp16-call": lambda: _us(_ar_call(16)),
    "plan-comm-tp8": lambda: _ms(_comm_default(8)),
    "plan-comm-tp16": lambda: _ms(_comm_default(16)),
}
