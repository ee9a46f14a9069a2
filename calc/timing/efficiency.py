"""Achieved rates: the matmul efficiency per GPU generation, FlashAttention's own rate by sequence length, and
the straggler / congestion allowance that grows with the job.

Each default is a named constant with its source; every function takes an override, so a reader who measured
0.55 on their cluster types 0.55 (``step_time(..., matmul_efficiency=0.55)``).
"""

from __future__ import annotations

import math

from calc.hardware import GPU

__all__ = [
    "ATTENTION_EFFICIENCY",
    "MATMUL_EFFICIENCY_BY_GPU",
    "STRAGGLER_FROM_GPUS",
    "STRAGGLER_PER_DOUBLING",
    "attention_efficiency",
    "matmul_efficiency_for",
    "straggler_allowance",
]

MATMUL_EFFICIENCY_BY_GPU: dict[str, float] = {
    "a100": 0.68,
    "h100": 0.60,
    "h200": 0.60,
    "gh200": 0.60,
    "b200": 0.60,
    "gb200": 0.60,
    "mi300x": 0.60,
}
"""Achieved share of the dense bf16 peak for the transformer's matmuls, by GPU generation (name prefix).

* A100: 0.68, fitted with [`MEMORY_PASSES`][calc.timing.steptime.MEMORY_PASSES] to Narayanan et al. 2021
  (arXiv:2104.04473) Table 1 (ten GPT models up to 3,072 A100s: every row within ±6%).
* H100 / H200: 0.60. A Hopper GEMM reaches a smaller share of its 3.2× larger peak at the same shapes: the
  torchtitan H100 benchmarks (``benchmarks/llama3_h100_202412_torchtitan.md``: Llama 3.1 8B FSDP at 8K, about 38%
  MFU end to end, on 500 W-limited H100s) reach less than Narayanan's A100 runs (52% of peak end to end at 3,072
  GPUs); 0.60 is the value with which Llama 3 405B's Table 4 runs (Dubey et al. 2024, arXiv:2407.21783: 430 and
  400 TFLOP/s per GPU on full-power H100s) are reproduced within 5% (``tests/test_planner.py``).
* B200, GB200, MI300X: no published whole-layer figure found; Hopper's value is assumed.
"""

ATTENTION_EFFICIENCY: dict[str, tuple[float, int]] = {
    "a100": (0.66, 512),
    "h100": (0.36, 512),
    "h200": (0.36, 512),
    "gh200": (0.36, 512),
    "b200": (0.36, 512),
    "gb200": (0.36, 512),
    "mi300x": (0.36, 512),
}
"""FlashAttention's achieved share of the dense peak, forward and backward together: ``(a, s½)`` in
``a · s / (s + s½)`` for sequence length ``s`` (head size 128, causal), used in place of the matmul efficiency for
the attention core (``QKᵀ`` and attention-times-``V``) when ``flash_attention`` is on.

* A100: FlashAttention-2 reaches "50-73% of the theoretical maximum FLOPs/s" (Dao 2023, arXiv:2307.08691,
  abstract; forward highest, backward lower, short sequences lowest: Fig. 4); ``a = 0.66``.
* H100: "FlashAttention-2 achieves only 35% utilization on H100" (Shah et al. 2024, FlashAttention-3,
  arXiv:2407.08608, abstract); ``a = 0.36``, so about 34% at 8K. (FlashAttention-3 reaches 75% in forward: pass
  ``attention_efficiency=`` to model it.)
* The half-rate length ``s½ = 512``: the kernels parallelize over the sequence, so short sequences leave SMs idle
  (Dao 2023, Sec. 3.2). Blackwell and MI300X are assumed Hopper's share.
"""

STRAGGLER_FROM_GPUS: int = 256
"""Job size from which the straggler / congestion allowance starts (no allowance at or below it)."""

STRAGGLER_PER_DOUBLING: float = 0.015
"""Step-time allowance for stragglers and network congestion per doubling of the job above
[`STRAGGLER_FROM_GPUS`][calc.timing.efficiency.STRAGGLER_FROM_GPUS] GPUs.

Fitted: on TP8 PP8 Megatron runs, the prediction with no such term drifts from −4% at 256 GPUs to −19% at 12,288
(issue 21's comparison; a drift of about 2.7% per doubling), of which the fabric's oversubscription above a pod and
NCCL's ring latency explain part; 1.5% per doubling (+8% at 12,288, +9% at 16,384) is the rest. Llama 3 reports
the same effect (Dubey et al. 2024, Sec. 3.3.4: stragglers and "network congestion" slow every rank of a
synchronous job)."""


def _generation(gpu: GPU | str, table: dict[str, object]) -> str | None:
    name = gpu if isinstance(gpu, str) else gpu.name
    for prefix in sorted(table, key=len, reverse=True):
        if name.startswith(prefix):
            return prefix
    return None


def matmul_efficiency_for(gpu: GPU | str) -> float:
    """The default matmul efficiency of ``gpu``.

    From [`MATMUL_EFFICIENCY_BY_GPU`][calc.timing.efficiency.MATMUL_EFFICIENCY_BY_GPU]; unknown GPUs get Hopper's.

    Examples:
        >>> matmul_efficiency_for("a100-80"), matmul_efficiency_for("h100-sxm")
        (0.68, 0.6)
    """
    key = _generation(gpu, MATMUL_EFFICIENCY_BY_GPU)  # type: ignore[arg-type]
    return MATMUL_EFFICIENCY_BY_GPU[key] if key else MATMUL_EFFICIENCY_BY_GPU["h100"]


def attention_efficiency(gpu: GPU | str, seq_len: int) -> float:
    """FlashAttention's achieved share of the peak at ``seq_len``.

    From [`ATTENTION_EFFICIENCY`][calc.timing.efficiency.ATTENTION_EFFICIENCY].

    Examples:
        >>> round(attention_efficiency("a100-80", 2048), 2), round(attention_efficiency("h100-sxm", 8192), 2)
        (0.53, 0.34)
    """
    key = _generation(gpu, ATTENTION_EFFICIENCY)  # type: ignore[arg-type]
    share, half = ATTENTION_EFFICIENCY[key or "h100"]
    return share * seq_len / (seq_len + half)


def straggler_allowance(gpus: int, per_doubling: float = STRAGGLER_PER_DOUBLING) -> float:
    """Share of the step added for stragglers and congestion on a job of ``gpus`` GPUs.

    ``per_doubling × log2(gpus / 256)`` above 256 GPUs, 0 below
    ([`STRAGGLER_PER_DOUBLING`][calc.timing.efficiency.STRAGGLER_PER_DOUBLING]).

    Examples:
        >>> straggler_allowance(256), round(straggler_allowance(16384), 3)
        (0.0, 0.09)
    """
    if gpus <= STRAGGLER_FROM_GPUS:
        return 0.0
    return per_doubling * math.log2(gpus / STRAGGLER_FROM_GPUS)
