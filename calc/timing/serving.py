"""Serving time: prefill and decode, the batch where decode turns compute-bound, TP for latency, speculative
decoding and the KV transfer of disaggregated prefill/decode.

A roofline model of a forward pass (Williams, Waterman and Patterson, "Roofline", CACM 52(4), 2009): a step takes
the longer of its FLOPs at the achieved matmul rate and its bytes at HBM bandwidth, plus, under tensor
parallelism, its all-reduces. Prefill runs the whole prompt in one pass and is compute-bound; decode makes one
token per sequence per pass and, at small batches, reads every weight and the whole KV cache for it: it is
bandwidth-bound (Pope et al. 2022, "Efficiently Scaling Transformer Inference", Sec. 2; Kwon et al. 2023, vLLM,
Sec. 2.2). FLOPs per token are ``2 N`` for the ``N`` active parameters (Kaplan et al. 2020, Sec. 2.1) plus the
attention over the context, ``4 L c d`` for ``c`` cached tokens and ``d = n_heads · head_dim``.

Not modelled: kernel launch and scheduling overhead, quantized kernels' dequantization work, paged-attention
block waste (see ``calc.memory.inference``), prefix caching, and queueing. Times are for one replica.

Imports only ``calc.errors``, ``calc.hardware``, ``calc.models``, ``calc.memory`` and ``calc.parallel``.
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.errors import CalcError
from calc.hardware import GPU, gpu
from calc.memory.inference import weight_bytes
from calc.memory.kv_cache import model_kv_bytes_per_token
from calc.models.architecture import Architecture
from calc.parallel.interconnects import SCALE_UP_FOR_GPU, interconnect

__all__ = [
    "SERVING_MATMUL_EFFICIENCY",
    "TP_ALLREDUCE_LATENCY_S",
    "DecodeStep",
    "PrefillTime",
    "decode_compute_bound_batch",
    "decode_step",
    "kv_transfer_s",
    "prefill_time",
    "serving_flops_per_token",
    "speculative_speedup",
    "speculative_tokens_per_step",
]

SERVING_MATMUL_EFFICIENCY = 0.7
"""Achieved share of the dense peak in prefill's large matmuls (ESTIMATED; training's fitted value is of the same
order, see ``calc.timing.steptime.MATMUL_EFFICIENCY``)."""

TP_ALLREDUCE_LATENCY_S = 8e-6
"""Time of one small NVLink all-reduce, the floor of decode's two per layer under tensor parallelism (ESTIMATED:
NCCL's base latency for LL/LL128 on NVLink is a few microseconds, ``src/graph/tuning.cc``)."""


def _gpu(g: GPU | str) -> GPU:
    return g if isinstance(g, GPU) else gpu(g)


def _positive_int(value: object, field: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise CalcError(field, "must be a whole number of at least 1", value)
    return value


def serving_flops_per_token(arch: Architecture, context: int) -> int:
    """Forward FLOPs of one token that attends to ``context`` cached tokens.

    ``2 N`` for the active parameters (Kaplan et al. 2020, Sec. 2.1: a multiply-add per parameter) plus
    ``4 · L · context · n_heads · head_dim`` for the scores and the weighted values (Pope et al. 2022, Sec. 2).

    Examples:
        >>> from calc.models.presets import preset
        >>> a = preset("llama3-8b")
        >>> serving_flops_per_token(a, 0) == 2 * a.active_param_count
        True
        >>> serving_flops_per_token(a, 8192) - serving_flops_per_token(a, 0)
        4294967296
    """
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise CalcError("context", "must be a whole number of at least 0", context)
    return 2 * arch.active_param_count + 4 * arch.num_layers * context * arch.num_heads * arch.head_dim


@dataclass(frozen=True)
class PrefillTime:
    """One prefill pass of a batch of prompts.

    Attributes:
        flops: Forward FLOPs of all prompt tokens.
        compute_s: FLOPs at the achieved matmul rate of the ``tp`` GPUs.
        memory_s: The weights read once from HBM (per GPU: its ``1/tp`` share).
        time_s: The longer of the two: the time to first token, queueing aside.
    """

    flops: int
    compute_s: float
    memory_s: float
    time_s: float


def prefill_time(
    arch: Architecture,
    prompt_tokens: int,
    *,
    batch: int = 1,
    gpu: GPU | str = "h100-sxm",
    tp: int = 1,
    dtype: str = "bf16",
    efficiency: float = SERVING_MATMUL_EFFICIENCY,
) -> PrefillTime:
    """Prefill of ``batch`` prompts of ``prompt_tokens`` each: compute-bound once the prompt is long.

    The prompt's tokens attend causally, so the attention term averages half the prompt (Pope et al. 2022,
    Sec. 2); each GPU runs ``1/tp`` of the FLOPs and reads ``1/tp`` of the weights.

    Examples:
        >>> from calc.models.presets import preset
        >>> p = prefill_time(preset("llama3-8b"), 2048)
        >>> p.compute_s > p.memory_s, round(p.time_s * 1e3)
        (True, 49)
    """
    n, b, t = (_positive_int(prompt_tokens, "prompt_tokens"), _positive_int(batch, "batch"), _positive_int(tp, "tp"))
    g = _gpu(gpu)
    flops = b * n * serving_flops_per_token(arch, n // 2)
    compute = flops / (t * g.peak_flops(dtype) * efficiency)
    memory = weight_bytes(arch.param_count, dtype) / t / g.hbm_bytes_per_s
    return PrefillTime(flops, compute, memory, max(compute, memory))


@dataclass(frozen=True)
class DecodeStep:
    """One decode step: every sequence of the batch makes one token.

    Attributes:
        weight_bytes: Weights each GPU reads (its ``1/tp`` share).
        kv_bytes: KV cache each GPU reads for the whole batch.
        memory_s: Those bytes at HBM bandwidth.
        compute_s: The batch's FLOPs at the achieved matmul rate.
        tp_s: Tensor parallelism's two all-reduces per layer (0 at ``tp = 1``).
        time_s: ``max(memory, compute) + tp``: the inter-token latency.
        tokens_per_s: ``batch / time_s`` for the replica.
        bound: ``"memory"`` or ``"compute"``, whichever is longer.
    """

    weight_bytes: int
    kv_bytes: int
    memory_s: float
    compute_s: float
    tp_s: float
    time_s: float
    tokens_per_s: float
    bound: str


def decode_step(
    arch: Architecture,
    *,
    batch: int = 1,
    context: int = 4096,
    gpu: GPU | str = "h100-sxm",
    tp: int = 1,
    dtype: str = "bf16",
    kv_dtype: str = "bf16",
    efficiency: float = SERVING_MATMUL_EFFICIENCY,
) -> DecodeStep:
    """One decode step of ``batch`` sequences with ``context`` tokens cached each.

    Bytes: the weights once per step, shared by the batch, and each sequence's KV cache (Pope et al. 2022,
    Sec. 3.1; Kwon et al. 2023, Sec. 2.2). FLOPs: ``batch`` tokens of
    [`serving_flops_per_token`][calc.timing.serving.serving_flops_per_token]. Under tensor parallelism each GPU
    reads ``1/tp`` of both and pays two all-reduces per layer (Shoeybi et al. 2019, Sec. 3) of ``batch · h``
    activations, each at least [`TP_ALLREDUCE_LATENCY_S`][calc.timing.serving.TP_ALLREDUCE_LATENCY_S] or its
    bytes at NVLink bandwidth.

    Examples:
        >>> from calc.models.presets import preset
        >>> d = decode_step(preset("llama3-8b"), batch=1, context=4096)
        >>> d.bound, round(d.time_s * 1e3, 2), round(d.tokens_per_s)
        ('memory', 4.95, 202)
        >>> decode_step(preset("llama3-8b"), batch=512, context=128).bound  # short contexts: weights dominate
        'compute'
    """
    b, t = _positive_int(batch, "batch"), _positive_int(tp, "tp")
    if isinstance(context, bool) or not isinstance(context, int) or context < 0:
        raise CalcError("context", "must be a whole number of at least 0", context)
    g = _gpu(gpu)
    weights = weight_bytes(arch.param_count, dtype) // t
    kv = b * context * model_kv_bytes_per_token(arch, kv_dtype) // t
    memory = (weights + kv) / g.hbm_bytes_per_s
    compute = b * serving_flops_per_token(arch, context) / (t * g.peak_flops(dtype) * efficiency)
    tp_s = 0.0
    if t > 1:
        link = interconnect(SCALE_UP_FOR_GPU.get(g.name, "nvlink4")).bytes_per_s
        size = b * arch.hidden_size * 2  # bf16 activations of the batch's one token each
        one = max(TP_ALLREDUCE_LATENCY_S, 2 * (t - 1) / t * size / link)
        tp_s = 2 * arch.num_layers * one
    time = max(memory, compute) + tp_s
    return DecodeStep(weights, kv, memory, compute, tp_s, time, b / time, "memory" if memory >= compute else "compute")


def decode_compute_bound_batch(
    arch: Architecture,
    *,
    gpu: GPU | str = "h100-sxm",
    dtype: str = "bf16",
    efficiency: float = SERVING_MATMUL_EFFICIENCY,
) -> int:
    """The smallest batch at which decode's FLOPs outlast reading its weights (the KV cache left aside).

    ``B · 2N / (peak · eff) ≥ bytes(N) / HBM`` gives ``B* = peak · eff · bytes_per_param / (2 · HBM)``: the GPU's
    ridge point (FLOPs per byte, Williams et al. 2009) times half the bytes per parameter (Pope et al. 2022,
    Sec. 3.1). It does not depend on the model; a long context needs a larger batch still, since each sequence
    adds its KV bytes but few FLOPs.

    Examples:
        >>> from calc.models.presets import preset
        >>> decode_compute_bound_batch(preset("llama3-8b")), decode_compute_bound_batch(preset("llama3-8b"), gpu="b200")
        (207, 197)
    """
    g = _gpu(gpu)
    n = arch.param_count
    per_token = 2 * arch.active_param_count
    rate = g.peak_flops(dtype) * efficiency
    read_s = weight_bytes(n, dtype) / g.hbm_bytes_per_s
    batch = 1
    while batch * per_token / rate < read_s:
        batch *= 2
    lo, hi = batch // 2, batch
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if mid * per_token / rate < read_s else (lo, mid)
    return hi


def speculative_tokens_per_step(acceptance: float, draft_tokens: int) -> float:
    """Expected tokens a target-model pass yields with ``draft_tokens`` drafted per pass.

    ``(1 − α^{γ+1}) / (1 − α)`` for acceptance rate ``α`` and ``γ`` drafted tokens (Leviathan, Kalman and
    Matias 2023, "Fast Inference from Transformers via Speculative Decoding", Eq. 1); ``γ + 1`` at ``α = 1``.

    Examples:
        >>> round(speculative_tokens_per_step(0.8, 4), 3)
        3.362
        >>> speculative_tokens_per_step(1.0, 4)
        5.0
    """
    a = float(acceptance)
    if not 0 <= a <= 1:
        raise CalcError("acceptance", "must be between 0 and 1", acceptance)
    g = _positive_int(draft_tokens, "draft_tokens")
    return float(g + 1) if a == 1 else (1 - a ** (g + 1)) / (1 - a)


def speculative_speedup(acceptance: float, draft_tokens: int, draft_cost: float) -> float:
    """Wall-clock speed-up of speculative decoding over plain decoding, both bandwidth-bound.

    ``(1 − α^{γ+1}) / ((1 − α)(γc + 1))`` with ``c`` the draft model's step time over the target's (Leviathan et
    al. 2023, Theorem 3.8). The target verifies the ``γ`` drafts in one pass, which costs about one decode step
    while decode is bandwidth-bound.

    Examples:
        >>> round(speculative_speedup(0.8, 4, 0.05), 2)
        2.8
    """
    c = float(draft_cost)
    if c < 0:
        raise CalcError("draft_cost", "must be at least 0", draft_cost)
    return speculative_tokens_per_step(acceptance, draft_tokens) / (_positive_int(draft_tokens, "draft_tokens") * c + 1)


def kv_transfer_s(arch: Architecture, prompt_tokens: int, link_bytes_per_s: float, *, kv_dtype: str = "bf16") -> float:
    """Time to move one prompt's KV cache from a prefill GPU to a decode GPU (disaggregated serving).

    DistServe (Zhong et al. 2024, Sec. 3) and Splitwise (Patel et al. 2024, Sec. 4) run prefill and decode on
    separate GPUs, so neither phase's batch slows the other; the price is this transfer per request, which
    is small next to prefill over NVLink or a fast NIC.

    Examples:
        >>> from calc.models.presets import preset
        >>> round(kv_transfer_s(preset("llama3-8b"), 4096, 50e9) * 1e3, 2)   # 4,096 tokens over one NDR NIC
        10.74
    """
    n = _positive_int(prompt_tokens, "prompt_tokens")
    bw = float(link_bytes_per_s)
    if bw <= 0:
        raise CalcError("link_bytes_per_s", "must be positive", link_bytes_per_s)
    return n * model_kv_bytes_per_token(arch, kv_dtype) / bw
