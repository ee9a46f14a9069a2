"""Inference memory: weights at a given precision, the KV cache, and how many sequences fit.

Serving a decoder keeps two things in GPU memory that grow differently: the
weights (fixed, set by the parameter count and the precision) and the KV cache
(per token of every sequence in flight). The KV cache of one token is

    2 (K and V) x layers x KV heads x head dim x bytes per element

(Kwon et al. 2023, "Efficient Memory Management for Large Language Model Serving
with PagedAttention", arXiv:2309.06180, Sec. 3: 800 KB per token for OPT-13B).
Grouped-query attention shrinks it by caching fewer KV heads than query heads
(Ainslie et al. 2023, arXiv:2305.13245); multi-head latent attention caches one
compressed latent plus a shared RoPE key per layer instead
(DeepSeek-V2, arXiv:2405.04434, Sec. 2.1; DeepSeek-V3 config: 512 + 64); a
sliding window caps the cached tokens at the window (Mistral 7B, arXiv:2310.06825,
Sec. 2: rolling buffer of W = 4096 tokens).

Modelling choices, all documented where they apply:

* Tensor parallelism splits every weight evenly (layer norms and routers are in
  fact replicated: a few MB) and splits KV heads across GPUs. With more GPUs than
  KV heads the heads are *replicated* (vLLM's rule: tp must be a multiple of the
  KV heads then), so per-GPU KV stops shrinking and the group stores copies.
  An MLA latent is not split by heads: every TP rank keeps the whole latent.
* Quantization scales are not counted unless ``group_size`` is given (one scale of
  ``scale_bits`` per group of weights). KV-cache quantization scales are not modelled.
* Activations, CUDA graphs, the allocator and the runtime take memory too; the
  calculators reserve it explicitly (``reserved_fraction``, ``reserved_bytes``).

In [`inference_memory`][calc.memory.inference.inference_memory], KV heads split by ``tp`` (see
[`kv_heads_per_gpu`][calc.memory.inference.kv_heads_per_gpu]: replicated once ``tp`` exceeds them); an MLA
latent is kept whole on every GPU (vLLM's MLA backends store the full latent per rank). Weights are the
architecture's ``param_count`` (every expert of a MoE model is resident).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from fractions import Fraction

from calc.errors import CalcError
from calc.hardware import GPU
from calc.hardware import gpu as _gpu
from calc.memory.kv_cache import (
    PRECISION_BITS,
    _bits,
    _ceil_div,
    _dims_per_kv_head,
    _non_negative_int,
    _uses_mla,
    cached_tokens,
    kv_cache_bytes_per_token,
    kv_heads_per_gpu,
    mla_kv_cache_bytes_per_token,
    model_kv_bytes_per_token,
)
from calc.models.architecture import Architecture
from calc.units import parse_count, parse_positive_int

__all__ = [
    "DEFAULT_RESERVED_FRACTION",
    "PRECISION_BITS",
    "InferenceMemory",
    "cached_tokens",
    "inference_memory",
    "kv_cache_bytes_per_token",
    "kv_heads_per_gpu",
    "max_concurrent_sequences",
    "mla_kv_cache_bytes_per_token",
    "model_kv_bytes_per_token",
    "weight_bytes",
    "weight_bytes_per_gpu",
]

DEFAULT_RESERVED_FRACTION: Fraction = Fraction(1, 10)
"""Share of GPU memory held back by default: vLLM's default ``gpu_memory_utilization=0.9`` leaves 10%."""


def _fraction(value: object, field: str) -> Fraction:
    """A fraction in [0, 1) from ``0.1``, ``"0.1"`` or a ``Fraction`` (decimal text read exactly)."""
    rule = "must be a number from 0 to below 1"
    if isinstance(value, bool):
        raise CalcError(field, rule, value)
    try:
        if isinstance(value, Fraction):
            frac = value
        elif isinstance(value, (int, float)):
            if not math.isfinite(value):
                raise CalcError(field, rule, value)
            frac = Fraction(str(value))
        elif isinstance(value, str):
            frac = Fraction(value.strip())
        else:
            raise CalcError(field, rule, value)
    except (ValueError, ZeroDivisionError):
        raise CalcError(field, rule, value) from None
    if not 0 <= frac < 1:
        raise CalcError(field, rule, value)
    return frac


def weight_bytes(
    params: int | float | str,
    precision: str = "bf16",
    *,
    group_size: int = 0,
    scale_bits: int = 16,
) -> int:
    """Bytes of the weights of ``params`` parameters stored at ``precision``.

    ``ceil(params x bits / 8)``: 4 bytes per parameter at fp32, 2 at bf16/fp16, 1 at fp8/int8,
    half a byte at int4/fp4 (two values per byte, so ``ceil(params / 2)``).

    Block-quantized formats also store a scale per group of weights (GPTQ/AWQ int4: one fp16
    scale per 128 weights, plus a packed zero point; MXFP4: one 8-bit scale per 32; NVFP4: one
    8-bit scale per 16). Give ``group_size`` and ``scale_bits`` to count them; by default they
    are not counted. Which tensors a real checkpoint leaves unquantized (embeddings, the output
    layer, norms) is not modelled: every parameter gets the same precision.

    Args:
        params: Parameter count.
        precision: A key of [`PRECISION_BITS`][calc.memory.inference.PRECISION_BITS].
        group_size: Weights per quantization scale; 0 = scales not counted.
        scale_bits: Bits of each group's scale (and zero point, if any).

    Returns:
        Bytes, exact.

    Raises:
        CalcError: For an unknown precision or a non-positive count.

    Examples:
        >>> weight_bytes("7B", "bf16"), weight_bytes("7B", "int4")
        (14000000000, 3500000000)
        >>> weight_bytes(3, "int4")  # 1.5 bytes round up
        2
        >>> weight_bytes("7B", "int4", group_size=128)  # + one fp16 scale per 128 weights
        3609375000
    """
    n = parse_count(params, "params")
    bits = _bits(precision, "precision")
    data = _ceil_div(n * bits, 8)
    group = _non_negative_int(group_size, "group_size")
    if not group:
        return data
    scale = parse_positive_int(scale_bits, "scale_bits")
    return data + _ceil_div(_ceil_div(n, group) * scale, 8)


def weight_bytes_per_gpu(
    params: int | float | str,
    precision: str = "bf16",
    tp: int | str = 1,
    *,
    group_size: int = 0,
    scale_bits: int = 16,
) -> int:
    """Weight bytes on each GPU of a tensor-parallel group: ``ceil(weight_bytes / tp)``.

    Megatron-style tensor parallelism (Shoeybi et al. 2019, arXiv:1909.08053, Sec. 3) splits
    every matmul weight over the ``tp`` GPUs; layer norms (and MoE routers) are replicated, which
    this even split ignores (a few MB for the presets).

    Args:
        params: Parameter count.
        precision: A key of [`PRECISION_BITS`][calc.memory.inference.PRECISION_BITS].
        tp: Tensor-parallel degree.
        group_size: Weights per quantization scale; 0 = scales not counted.
        scale_bits: Bits of each scale.

    Returns:
        Bytes per GPU, exact (rounded up).

    Raises:
        CalcError: For bad input.

    Examples:
        >>> weight_bytes_per_gpu("70B", "bf16", 8)
        17500000000
    """
    t = parse_positive_int(tp, "tp")
    return _ceil_div(weight_bytes(params, precision, group_size=group_size, scale_bits=scale_bits), t)


def max_concurrent_sequences(
    memory_bytes: int,
    weights_bytes: int,
    kv_bytes_per_sequence: int,
    *,
    reserved_bytes: int = 0,
) -> int:
    """How many sequences' KV caches fit beside the weights: ``(memory - weights - reserved) // kv``.

    All arguments are per GPU (for a tensor-parallel group, each GPU holds ``1/tp`` of the
    weights and its share of every sequence's cache, so the per-GPU count is the group's).

    Args:
        memory_bytes: GPU memory.
        weights_bytes: Weights on that GPU.
        kv_bytes_per_sequence: KV cache of one sequence on that GPU.
        reserved_bytes: Memory held back for activations, CUDA graphs and the runtime.

    Returns:
        Whole sequences (0 when the weights alone do not fit).

    Raises:
        CalcError: For a negative size or a zero-byte sequence.

    Examples:
        >>> max_concurrent_sequences(80 * 10**9, 14 * 10**9, 2 * 2**30, reserved_bytes=8 * 10**9)
        27
    """
    memory = _non_negative_int(memory_bytes, "memory_bytes")
    weights = _non_negative_int(weights_bytes, "weights_bytes")
    kv = parse_positive_int(kv_bytes_per_sequence, "kv_bytes_per_sequence")
    reserved = _non_negative_int(reserved_bytes, "reserved_bytes")
    return max(memory - weights - reserved, 0) // kv


@dataclass(frozen=True)
class InferenceMemory:
    """Memory of one model served on one GPU or one tensor-parallel group. Bytes are exact ints.

    Attributes:
        tp: Tensor-parallel degree.
        gpu_memory_bytes: Memory of one GPU.
        weights_bytes: Weights of the whole model at the chosen precision.
        weights_per_gpu_bytes: Weights on each GPU.
        kv_bytes_per_token: KV cache per token of the whole model (one copy of each head).
        kv_per_token_per_gpu_bytes: KV cache per token on each GPU.
        kv_replicas: Copies of each KV head (or of the MLA latent) across the group: 1 when the
            heads split evenly, ``tp / kv_heads`` when heads are replicated, ``tp`` for MLA.
        cached_tokens: Tokens cached per sequence (after the sliding window and block rounding).
        kv_per_sequence_bytes: KV cache of one sequence, whole model.
        kv_per_sequence_per_gpu_bytes: KV cache of one sequence on each GPU.
        batch: Sequences in flight.
        kv_batch_bytes: KV cache of the batch, whole model (one copy of each head).
        kv_batch_per_gpu_bytes: KV cache of the batch on each GPU.
        reserved_per_gpu_bytes: Memory held back on each GPU for activations and the runtime.
        total_per_gpu_bytes: Weights + batch KV cache + reserve, per GPU.
        max_concurrent_sequences: Sequences of this length whose caches fit beside the weights and reserve.
    """

    tp: int
    gpu_memory_bytes: int
    weights_bytes: int
    weights_per_gpu_bytes: int
    kv_bytes_per_token: int
    kv_per_token_per_gpu_bytes: int
    kv_replicas: int
    cached_tokens: int
    kv_per_sequence_bytes: int
    kv_per_sequence_per_gpu_bytes: int
    batch: int
    kv_batch_bytes: int
    kv_batch_per_gpu_bytes: int
    reserved_per_gpu_bytes: int
    total_per_gpu_bytes: int
    max_concurrent_sequences: int

    @property
    def fits(self) -> bool:
        """Whether weights, the batch's KV cache and the reserve fit in one GPU's memory."""
        return self.total_per_gpu_bytes <= self.gpu_memory_bytes

    @property
    def free_per_gpu_bytes(self) -> int:
        """Memory left on each GPU (negative when it does not fit)."""
        return self.gpu_memory_bytes - self.total_per_gpu_bytes

    def as_dict(self) -> dict[str, int | bool]:
        """The fields plus ``fits`` as a plain ``dict``.

        Examples:
            >>> from calc.models.presets import preset
            >>> inference_memory(preset("llama3-8b"), seq_len=8192).as_dict()["fits"]
            True
        """
        out: dict[str, int | bool] = asdict(self)
        out["fits"] = self.fits
        return out


def inference_memory(
    arch: Architecture,
    *,
    seq_len: int | str,
    batch: int | str = 1,
    precision: str = "bf16",
    kv_dtype: str = "bf16",
    tp: int | str = 1,
    gpu: GPU | str | None = "h100-sxm",
    memory_bytes: int | None = None,
    reserved_fraction: float | str | Fraction = DEFAULT_RESERVED_FRACTION,
    reserved_bytes: int = 0,
    sliding_window: int | None = None,
    block_size: int | str = 1,
    group_size: int = 0,
    scale_bits: int = 16,
) -> InferenceMemory:
    """Weights, KV cache and concurrent sequences for a model served with tensor parallelism.

    [`weight_bytes_per_gpu`][calc.memory.inference.weight_bytes_per_gpu], the KV cache per token and per
    sequence, and [`max_concurrent_sequences`][calc.memory.inference.max_concurrent_sequences] (see the module).

    Args:
        arch: An [`Architecture`][calc.models.architecture.Architecture] (or any object with its layer, head,
            latent, ``param_count`` and ``sliding_window`` attributes).
        seq_len: Tokens per sequence (prompt plus generated).
        batch: Sequences in flight.
        precision: Weight data type.
        kv_dtype: KV-cache data type.
        tp: Tensor-parallel degree; must divide the attention heads.
        gpu: A [`GPU`][calc.hardware.GPU] or a preset name (ignored when ``memory_bytes`` is given).
        memory_bytes: Memory per GPU, overriding the preset's (for a GPU not in the presets).
        reserved_fraction: Share of each GPU's memory held back (default 0.1, vLLM's 0.9 utilization), exact.
        reserved_bytes: Further bytes per GPU held back (activation workspace, CUDA graphs).
        sliding_window: Attention window; ``None``: the architecture's, with its ``global_attention_layers``
            caching every token (Gemma Team 2025, arXiv:2503.19786, Sec. 2.1); 0: none; a number: every layer.
        block_size: Tokens per KV-cache block (16 in vLLM); 1 = exact.
        group_size: Weights per quantization scale; 0 = scales not counted.
        scale_bits: Bits per quantization scale.

    Returns:
        An [`InferenceMemory`][calc.memory.inference.InferenceMemory].

    Raises:
        CalcError: For bad input, a ``tp`` that does not divide the attention heads or fit the KV heads.

    Examples:
        >>> from calc.models.presets import preset
        >>> m = inference_memory(preset("llama2-70b"), seq_len=4096, batch=8, tp=4)
        >>> m.weights_per_gpu_bytes, m.kv_per_sequence_bytes, m.max_concurrent_sequences
        (34488324096, 1342177280, 126)
    """
    t = parse_positive_int(tp, "tp")
    b = parse_positive_int(batch, "batch")
    if (heads := parse_positive_int(arch.num_heads, "num_heads")) % t:
        raise CalcError("tp", f"must divide the attention heads (heads={heads})", t, code="not-divisible")
    given = memory_bytes is not None
    memory = parse_positive_int(memory_bytes, "memory_bytes") if given else _gpu_object(gpu).memory_bytes
    weights = weight_bytes(arch.param_count, precision, group_size=group_size, scale_bits=scale_bits)
    weights_gpu = weight_bytes_per_gpu(arch.param_count, precision, t, group_size=group_size, scale_bits=scale_bits)
    kv = _kv(arch, kv_dtype, t, seq_len, sliding_window, block_size)
    per_seq, per_seq_gpu = kv["kv_per_sequence_bytes"], kv["kv_per_sequence_per_gpu_bytes"]
    reserved = math.ceil(memory * _fraction(reserved_fraction, "reserved_fraction")) + _non_negative_int(
        reserved_bytes, "reserved_bytes"
    )
    total = weights_gpu + b * per_seq_gpu + reserved
    fit = max_concurrent_sequences(memory, weights_gpu, per_seq_gpu, reserved_bytes=reserved)
    return InferenceMemory(
        tp=t,
        gpu_memory_bytes=memory,
        weights_bytes=weights,
        weights_per_gpu_bytes=weights_gpu,
        **kv,
        batch=b,
        kv_batch_bytes=b * per_seq,
        kv_batch_per_gpu_bytes=b * per_seq_gpu,
        reserved_per_gpu_bytes=reserved,
        total_per_gpu_bytes=total,
        max_concurrent_sequences=fit,
    )


def _gpu_object(gpu: GPU | str | None) -> GPU:
    return gpu if isinstance(gpu, GPU) else _gpu(gpu)


def _kv(
    arch: Architecture, kv_dtype: str, t: int, seq_len: int | str, sliding_window: int | None, block_size: int | str
) -> dict[str, int]:
    """[`inference_memory`][calc.memory.inference.inference_memory]'s KV-cache fields of
    [`InferenceMemory`][calc.memory.inference.InferenceMemory]."""
    window = (getattr(arch, "sliding_window", 0) or 0) if sliding_window is None else sliding_window
    tokens = cached_tokens(seq_len, sliding_window=window, block_size=block_size)
    full_tokens = cached_tokens(seq_len, block_size=block_size)
    layers = parse_positive_int(arch.num_layers, "num_layers")
    global_layers = getattr(arch, "global_attention_layers", 0) if sliding_window is None and window else 0
    # Layer-tokens cached per sequence: windowed layers keep `tokens`, global layers every token.
    layer_tokens = (layers - global_layers) * tokens + global_layers * full_tokens
    per_token = model_kv_bytes_per_token(arch, kv_dtype)
    if _uses_mla(arch):
        per_token_gpu = per_token
        replicas = t
    else:
        kv_heads = parse_positive_int(arch.num_kv_heads, "num_kv_heads")
        per_gpu_heads = kv_heads_per_gpu(kv_heads, t)
        dims_gpu = per_gpu_heads * _dims_per_kv_head(arch)
        per_token_gpu = _ceil_div(arch.num_layers * dims_gpu * _bits(kv_dtype, "kv_dtype"), 8)
        replicas = per_gpu_heads * t // kv_heads
    per_seq = _ceil_div(per_token * layer_tokens, layers)
    per_seq_gpu = _ceil_div(per_token_gpu * layer_tokens, layers)
    return {
        "kv_bytes_per_token": per_token,
        "kv_per_token_per_gpu_bytes": per_token_gpu,
        "kv_replicas": replicas,
        "cached_tokens": tokens,
        "kv_per_sequence_bytes": per_seq,
        "kv_per_sequence_per_gpu_bytes": per_seq_gpu,
    }
