"""Achieved rates: the matmul efficiency per GPU generation, FlashAttention's own rate by sequence length, and
the straggler / congestion allowance that grows with the job.

Each default is a named constant with its source; every function takes an override, so a reader who measured
0.55 on their cluster types 0.55 (``step_time(..., matmul_efficiency=0.55)``).
"""

from __future__ import annotations

import math

from calc.hardware import GPU
from calc.hardware import gpu as gpu_preset

_HOPPER = ("h100", "h200", "gh200")

__all__ = [
    "ATTENTION_EFFICIENCY",
    "ATTENTION_KERNEL_BY_STACK",
    "ATTENTION_KERNEL_RATES",
    "EAGER_MEMORY_PASSES",
    "FP8_MEMORY_PASSES",
    "MATMUL_EFFICIENCY_BY_GPU",
    "MAX_PASSES",
    "STRAGGLER_FROM_GPUS",
    "STRAGGLER_PER_DOUBLING",
    "attention_efficiency",
    "attention_kernel",
    "elementwise_passes",
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

ATTENTION_KERNEL_RATES: dict[str, dict[int, tuple[int, int]]] = {
    "cudnn": {
        512: (315, 305),
        1024: (410, 408),
        2048: (484, 465),
        4096: (518, 499),
        8192: (529, 518),
        16384: (539, 516),
    },
    "fa2": {512: (191, 214), 1024: (260, 260), 2048: (298, 291), 4096: (319, 310), 8192: (333, 318), 16384: (335, 322)},
}
"""Measured attention kernels on an H100 SXM5 (head size 128, bf16), TFLOP/s ``(forward, backward)`` by sequence
length: Shah et al. 2024, FlashAttention-3 (arXiv:2407.08608), Fig. 5 (forward, causal) and Fig. 6 (backward).

``cudnn`` is cuDNN's fused attention, ``fa2`` FlashAttention-2. The figures count a causal forward as half the
dense ``4·s²·h`` and the backward as 2.5 forwards (it recomputes the scores): see
[`attention_efficiency`][calc.timing.efficiency.attention_efficiency] for how they become the engine's share."""

ATTENTION_KERNEL_BY_STACK: dict[str, str] = {"megatron": "cudnn", "torchtitan": "fa2", "deepspeed": "fa2"}
"""The attention kernel each training stack runs on Hopper.

* Megatron-LM: Transformer Engine's ``get_attention_backend``
  (``transformer_engine/pytorch/attention/dot_product_attention/utils.py``) turns FlashAttention off "to give
  FusedAttention preference on Hopper+ for performance reasons": cuDNN's kernel.
* torchtitan and DeepSpeed: PyTorch's ``scaled_dot_product_attention``, whose flash backend is FlashAttention-2.

Other GPUs keep [`ATTENTION_EFFICIENCY`][calc.timing.efficiency.ATTENTION_EFFICIENCY]: the paper measured Hopper
only."""


FP8_MEMORY_PASSES: float = 10.0
"""HBM passes over a layer's stored activations added when its linear layers run in FP8.

An FP8 GEMM needs its operands scaled and cast: the ``amax`` of each linear's input and output gradient, the cast
to FP8 and the transposed FP8 copy the weight gradient's GEMM reads (Transformer Engine's recipes and torchao's
``Float8Linear`` alike). That work is memory-bound and grows as ``h`` per token while the GEMMs grow as ``h²``, so
FP8 pays more on a large model: NVIDIA's DGX Cloud Llama 3.1 benchmarks (Megatron-LM / NeMo on H100, the
``dgxc25-*`` rows of ``validation/published/runs.json``) measured BF16-to-FP8 step-time gains of 1.35× at 8B,
1.40× at 70B and 1.59× at 405B, where FP8 GEMMs at the FP8 peak alone would give 1.5-1.7×.

Fitted, once: 10 passes minimize the squared difference between each FP8 row's error and its BF16 twin's over the
nine published pairs (six DGX Cloud pairs; torchtitan's 8B FSDP with ``torch.compile`` on 8 and 128 H100s,
``benchmarks/llama3_h100_202412_torchtitan.md`` Tables 1 and 3; torchtitan's 8B MXFP8 on GB200); every pair then
agrees within 8 points. ``step_time(..., fp8_memory_passes=0)`` drops it."""

EAGER_MEMORY_PASSES: float = 22.0
"""HBM passes over a layer's stored activations for element-wise work under torchtitan without ``torch.compile``.

In eager mode each RMSNorm, rotary embedding, SwiGLU and residual add is its own kernels (RMSNorm and RoPE through
float32 intermediates), where ``torch.compile`` fuses them; the compiled run keeps the engine's default
[`MEMORY_PASSES`][calc.timing.steptime.MEMORY_PASSES]. Fitted, once, to torchtitan's two eager-versus-compiled
pairs (``benchmarks/llama3_h100_202412_torchtitan.md`` Tables 1 and 3: Llama 3.1 8B FSDP on 8 and 128 H100s,
5,762 against 6,667 and 5,605 against 6,514 tokens/s per GPU): with 22 passes each eager row's error equals its
compiled twin's within half a point. Megatron-LM's fused Transformer Engine kernels need no compiler."""

MAX_PASSES: int = 1000
"""The most element-wise HBM passes ``step_time`` and ``plan`` take (``memory_passes``, ``fp8_memory_passes``): a
bound on typing, far above any stack's (the defaults are 10 to 22)."""

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


def attention_kernel(gpu: GPU | str, stack: str | None) -> str | None:
    """The measured kernel ``stack`` runs on ``gpu`` (a key of `ATTENTION_KERNEL_RATES`), or ``None``.

    Examples:
        >>> attention_kernel("h100-sxm", "megatron"), attention_kernel("h100-sxm", "torchtitan")
        ('cudnn', 'fa2')
        >>> attention_kernel("a100-80", "megatron") is None, attention_kernel("h100-sxm", None) is None
        (True, True)
    """
    name = gpu if isinstance(gpu, str) else gpu.name
    if stack is None or not name.startswith(_HOPPER):
        return None
    return ATTENTION_KERNEL_BY_STACK.get(stack)


def _kernel_rate(kernel: str, seq_len: int) -> tuple[float, float]:
    """Forward and backward TFLOP/s of ``kernel`` at ``seq_len``: interpolated in log2 of the length between the
    measured ones, held at the ends."""
    table = ATTENTION_KERNEL_RATES[kernel]
    lengths = sorted(table)
    s = min(max(seq_len, lengths[0]), lengths[-1])
    lo = max(k for k in lengths if k <= s)
    hi = min(k for k in lengths if k >= s)
    if lo == hi:
        return table[lo]
    f = (math.log2(s) - math.log2(lo)) / (math.log2(hi) - math.log2(lo))
    return tuple(a + f * (b - a) for a, b in zip(table[lo], table[hi], strict=True))  # type: ignore[return-value]


def attention_efficiency(gpu: GPU | str, seq_len: int, stack: str | None = None) -> float:
    """The attention core's achieved share of the dense bf16 peak at ``seq_len``, under training ``stack``.

    On Hopper, with a stack whose kernel is measured (`attention_kernel`), from
    [`ATTENTION_KERNEL_RATES`][calc.timing.efficiency.ATTENTION_KERNEL_RATES]: the engine counts the core's
    backward as two forwards (``calc.timing.steptime``) where the kernel runs 2.5 at its backward rate, so the share
    is ``3 / (peak × (1/forward + 2.5/backward))``, with the H100 SXM's 989.4 TFLOP/s peak the paper measured on.
    Otherwise from [`ATTENTION_EFFICIENCY`][calc.timing.efficiency.ATTENTION_EFFICIENCY].

    Examples:
        >>> round(attention_efficiency("a100-80", 2048), 2), round(attention_efficiency("h100-sxm", 8192), 2)
        (0.53, 0.34)
        >>> round(attention_efficiency("h100-sxm", 8192, "megatron"), 3)
        0.451
        >>> round(attention_efficiency("h100-sxm", 8192, "torchtitan"), 3)
        0.279
    """
    kernel = attention_kernel(gpu, stack)
    if kernel is not None:
        forward, backward = _kernel_rate(kernel, seq_len)
        peak = gpu_preset("h100-sxm").peak_flops("bf16") / 1e12  # the GPU the paper measured on
        return 3 / (peak * (1 / forward + 2.5 / backward))
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


def elementwise_passes(
    base: float,
    *,
    stack: str | None = None,
    compile: bool = False,
    dtype: str = "bf16",
    fp8: float = FP8_MEMORY_PASSES,
    given: float | None = None,
) -> tuple[float, float]:
    """HBM passes for a layer's element-wise work: over its stored activations, and over those without the
    attention scores for FP8's casts.

    The first is ``given`` where the caller measured it, else ``base`` (fused kernels:
    [`MEMORY_PASSES`][calc.timing.steptime.MEMORY_PASSES]) or, under torchtitan without ``torch.compile``,
    [`EAGER_MEMORY_PASSES`][calc.timing.efficiency.EAGER_MEMORY_PASSES]. The second is ``fp8``
    ([`FP8_MEMORY_PASSES`][calc.timing.efficiency.FP8_MEMORY_PASSES]) under FP8, else 0: the casts read the linear
    layers' inputs and output gradients, never a materialized score matrix.

    Examples:
        >>> elementwise_passes(10.0), elementwise_passes(10.0, stack="torchtitan")
        ((10.0, 0.0), (22.0, 0.0))
        >>> elementwise_passes(10.0, stack="torchtitan", compile=True, dtype="fp8")
        (10.0, 10.0)
        >>> elementwise_passes(10.0, stack="torchtitan", dtype="fp8", given=12.0, fp8=0.0)
        (12.0, 0.0)
    """
    if given is None:
        given = EAGER_MEMORY_PASSES if stack == "torchtitan" and not compile else base
    return float(given), float(fp8) if dtype == "fp8" else 0.0
