"""The KV cache: bytes per token (multi-head, grouped-query, latent attention), per GPU under tensor
parallelism, and the tokens a sequence caches (sliding windows, paged blocks); the data types' widths.

The formulas and their sources are in [`calc.memory.inference`][calc.memory.inference], which re-exports
every public name here.
"""

from __future__ import annotations

from calc.errors import CalcError
from calc.models.architecture import Architecture
from calc.units import parse_positive_int

__all__ = [
    "PRECISION_BITS",
    "cached_tokens",
    "kv_cache_bytes_per_token",
    "kv_heads_per_gpu",
    "mla_kv_cache_bytes_per_token",
    "model_kv_bytes_per_token",
]

PRECISION_BITS: dict[str, int] = {
    "fp32": 32,
    "bf16": 16,
    "fp16": 16,
    "fp8": 8,
    "int8": 8,
    "fp4": 4,
    "int4": 4,
}
"""Bits per element of each weight or KV-cache data type. 4-bit types pack two values per byte."""


def _bits(dtype: str, field: str) -> int:
    try:
        return PRECISION_BITS[dtype]
    except (KeyError, TypeError):
        raise CalcError(field, f"must be one of {', '.join(PRECISION_BITS)}", dtype, code="unknown-name") from None


def _element_bits(bytes_per_element: int | str, field: str = "bytes_per_element") -> int:
    """Bits per element from a byte count (``2``) or a data-type name (``"fp8"``)."""
    if isinstance(bytes_per_element, str) and bytes_per_element in PRECISION_BITS:
        return PRECISION_BITS[bytes_per_element]
    if isinstance(bytes_per_element, int) and not isinstance(bytes_per_element, bool) and bytes_per_element >= 1:
        return 8 * bytes_per_element
    raise CalcError(
        field,
        f"must be a whole number of bytes of at least 1 or one of {', '.join(PRECISION_BITS)}",
        bytes_per_element,
    )


def _non_negative_int(value: object, field: str) -> int:
    return parse_positive_int(value, field, minimum=0)


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def kv_cache_bytes_per_token(
    layers: int | str,
    kv_heads: int | str,
    head_dim: int | str,
    bytes_per_element: int | str = 2,
) -> int:
    """KV-cache bytes per token of a multi-head or grouped-query attention model.

    ``2 x layers x kv_heads x head_dim x bytes_per_element`` (one K and one V vector per KV
    head per layer): Kwon et al. 2023 (arXiv:2309.06180), Sec. 3, "2 (key and value vectors)
    x 5120 (hidden state size) x 40 (number of layers) x 2 (bytes per FP16)" = 800 KB (KiB,
    819,200 B) for OPT-13B. For multi-head attention ``kv_heads`` equals the attention heads.

    Args:
        layers: Attention layers.
        kv_heads: Key/value heads per layer (after grouping).
        head_dim: Dimension of each head.
        bytes_per_element: Bytes per cached value (``2`` for bf16/fp16), or a data-type name
            (``"fp8"``, ``"int4"``...; 4-bit values are rounded up to whole bytes per token).

    Returns:
        Bytes per token, exact.

    Raises:
        CalcError: For a non-positive size or an unknown data type.

    Examples:
        >>> kv_cache_bytes_per_token(40, 40, 128, 2)  # OPT-13B, vLLM's "800 KB"
        819200
        >>> kv_cache_bytes_per_token(80, 8, 128, "bf16")  # Llama-2-70B: GQA with 8 KV heads
        327680
    """
    n = (
        2
        * parse_positive_int(layers, "layers")
        * parse_positive_int(kv_heads, "kv_heads")
        * parse_positive_int(head_dim, "head_dim")
    )
    return _ceil_div(n * _element_bits(bytes_per_element), 8)


def mla_kv_cache_bytes_per_token(
    layers: int | str,
    kv_lora_rank: int | str,
    qk_rope_head_dim: int | str,
    bytes_per_element: int | str = 2,
) -> int:
    """KV-cache bytes per token of a multi-head latent attention (MLA) model.

    ``layers x (kv_lora_rank + qk_rope_head_dim) x bytes_per_element``: MLA caches the
    compressed KV latent c_KV (dimension d_c = ``kv_lora_rank``) and the decoupled RoPE key
    (``qk_rope_head_dim``, shared by all heads) per layer: DeepSeek-V2 (arXiv:2405.04434),
    Sec. 2.1.3 and Table 1, "(d_c + d_h^R) l" elements per token.

    Args:
        layers: Layers with MLA.
        kv_lora_rank: Latent dimension d_c.
        qk_rope_head_dim: Decoupled RoPE key dimension d_h^R.
        bytes_per_element: Bytes per cached value, or a data-type name.

    Returns:
        Bytes per token, exact.

    Raises:
        CalcError: For a non-positive size or an unknown data type.

    Examples:
        >>> mla_kv_cache_bytes_per_token(61, 512, 64, 2)  # DeepSeek-V3
        70272
    """
    n = parse_positive_int(layers, "layers") * (
        parse_positive_int(kv_lora_rank, "kv_lora_rank") + parse_positive_int(qk_rope_head_dim, "qk_rope_head_dim")
    )
    return _ceil_div(n * _element_bits(bytes_per_element), 8)


def kv_heads_per_gpu(kv_heads: int | str, tp: int | str) -> int:
    """KV heads each GPU of a tensor-parallel group caches.

    ``kv_heads / tp`` when ``tp`` divides them; with more GPUs than KV heads each GPU keeps one
    head, each head *replicated* on ``tp / kv_heads`` GPUs (vLLM, e.g. ``LlamaAttention`` in
    ``vllm/model_executor/models/llama.py``: "Number of KV heads is less than TP size, so we
    replicate the KV heads", requiring ``tp % kv_heads == 0``).

    Args:
        kv_heads: Key/value heads of the model.
        tp: Tensor-parallel degree.

    Returns:
        KV heads per GPU.

    Raises:
        CalcError: ``not-divisible`` when neither divides the other.

    Examples:
        >>> kv_heads_per_gpu(8, 4), kv_heads_per_gpu(8, 8), kv_heads_per_gpu(8, 16)
        (2, 1, 1)
        >>> kv_heads_per_gpu(8, 6)
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: tp must divide the KV heads (kv_heads=8) or be a multiple of them (got 6)
    """
    k = parse_positive_int(kv_heads, "kv_heads")
    t = parse_positive_int(tp, "tp")
    if (t <= k and k % t) or (t > k and t % k):
        raise CalcError(
            "tp", f"must divide the KV heads (kv_heads={k}) or be a multiple of them", t, code="not-divisible"
        )
    return max(1, k // t)


def cached_tokens(seq_len: int | str, *, sliding_window: int | str = 0, block_size: int | str = 1) -> int:
    """Tokens of one sequence held in the KV cache.

    ``min(seq_len, sliding_window)`` (Mistral 7B, arXiv:2310.06825, Sec. 2, "Rolling Buffer
    Cache": with window W, position i is stored at i mod W, so at most W tokens are cached),
    rounded up to a whole number of ``block_size``-token blocks (PagedAttention, Kwon et al.
    2023, Sec. 4.1; vLLM's default block is 16 tokens). A paged cache that frees blocks as they
    leave the window can straddle one more block than this; that is not modelled.

    Args:
        seq_len: Tokens in the sequence (prompt plus generated).
        sliding_window: Attention window; 0 = full attention.
        block_size: Tokens per cache block; 1 = no paging granularity.

    Returns:
        Cached tokens.

    Raises:
        CalcError: For a non-positive length or block size, or a negative window.

    Examples:
        >>> cached_tokens(32768, sliding_window=4096)  # Mistral 7B: 8x smaller cache at 32k
        4096
        >>> cached_tokens(1000, block_size=16)
        1008
    """
    s = parse_positive_int(seq_len, "seq_len")
    w = _non_negative_int(sliding_window, "sliding_window")
    b = parse_positive_int(block_size, "block_size")
    tokens = min(s, w) if w else s
    return _ceil_div(tokens, b) * b


def _uses_mla(arch: Architecture) -> bool:
    return int(getattr(arch, "kv_lora_rank", 0) or 0) > 0


def _dims_per_kv_head(arch: Architecture) -> int:
    """Cached elements per KV head per layer: key width + value width (``2 x head_dim`` when equal)."""
    return arch.head_dim + (getattr(arch, "v_head_dim", 0) or arch.head_dim)


def model_kv_bytes_per_token(arch: Architecture, kv_dtype: str = "bf16") -> int:
    """KV-cache bytes per token of a whole model (one copy of every KV head, all layers).

    ``layers x kv_heads x (d_k + d_v) x bytes`` (the
    [`kv_cache_bytes_per_token`][calc.memory.inference.kv_cache_bytes_per_token] formula, with key and
    value widths taken separately), or, when the architecture has a
    KV latent (``kv_lora_rank > 0``), ``layers x (kv_lora_rank + qk_rope_head_dim) x bytes``
    ([`mla_kv_cache_bytes_per_token`][calc.memory.inference.mla_kv_cache_bytes_per_token]).

    Args:
        arch: An [`Architecture`][calc.models.architecture.Architecture].
        kv_dtype: Cache data type, a key of [`PRECISION_BITS`][calc.memory.inference.PRECISION_BITS].

    Returns:
        Bytes per token, exact.

    Raises:
        CalcError: For an unknown data type.

    Examples:
        >>> from calc.models.presets import preset
        >>> model_kv_bytes_per_token(preset("llama3-8b")), model_kv_bytes_per_token(preset("llama3-8b"), "fp8")
        (131072, 65536)
        >>> model_kv_bytes_per_token(preset("deepseek-v3"))
        70272
    """
    bits = _bits(kv_dtype, "kv_dtype")
    if _uses_mla(arch):
        dims = arch.kv_lora_rank + arch.qk_rope_head_dim
    else:
        dims = arch.num_kv_heads * _dims_per_kv_head(arch)
    return _ceil_div(arch.num_layers * dims * bits, 8)
