"""Tests for calc.memory.inference: weight bytes, KV cache (MHA, GQA, MLA, sliding window), tensor parallelism, fit."""

from __future__ import annotations

import dataclasses
from fractions import Fraction

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from _helpers import check_garbage, widget_error, widget_fragment
from calc.errors import CalcError
from calc.hardware import GPUS, gpu
from calc.memory.inference import (
    DEFAULT_RESERVED_FRACTION,
    PRECISION_BITS,
    InferenceMemory,
    cached_tokens,
    inference_memory,
    kv_cache_bytes_per_token,
    kv_heads_per_gpu,
    max_concurrent_sequences,
    mla_kv_cache_bytes_per_token,
    model_kv_bytes_per_token,
    weight_bytes,
    weight_bytes_per_gpu,
)
from calc.units import format_bytes

KiB, GiB = 2**10, 2**30


# The Architecture fields calc.memory.inference reads (the last three default to 0); keeps these tests independent
# of calc.models.architecture.
_Arch = dataclasses.make_dataclass(
    "_Arch",
    [(name, int) for name in ("num_layers", "num_heads", "num_kv_heads", "head_dim", "param_count")]
    + [(name, int, dataclasses.field(default=0)) for name in ("kv_lora_rank", "qk_rope_head_dim", "sliding_window")],
    frozen=True,
)


# Configs from the reference notes, Sec. 4 and 6 (parameter totals from the formula column).
OPT_13B = _Arch(40, 40, 40, 128, 12_853_473_280)
LLAMA2_7B = _Arch(32, 32, 32, 128, 6_738_415_616)
LLAMA2_70B = _Arch(80, 64, 8, 128, 68_976_648_192)
LLAMA3_8B = _Arch(32, 32, 8, 128, 8_030_261_248)
MISTRAL_7B = _Arch(32, 32, 8, 128, 7_241_732_096, sliding_window=4096)
DEEPSEEK_V3 = _Arch(61, 128, 128, 192, 671_026_419_200, kv_lora_rank=512, qk_rope_head_dim=64)


# --- Weights ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "precision", "expected"),
    [
        ("7B", "fp32", 28_000_000_000),
        ("7B", "bf16", 14_000_000_000),
        ("7B", "fp16", 14_000_000_000),
        ("7B", "fp8", 7_000_000_000),
        ("7B", "int8", 7_000_000_000),
        ("7B", "int4", 3_500_000_000),
        ("7B", "fp4", 3_500_000_000),
        (1, "int4", 1),  # half a byte rounds up
        (124_439_807, "int4", 62_219_904),  # odd count: ceil(params / 2)
        (68_976_648_192, "bf16", 137_953_296_384),  # Llama-2-70B
    ],
)
def test_weight_bytes(params, precision, expected):
    assert weight_bytes(params, precision) == expected


@pytest.mark.parametrize(
    ("params", "precision", "group", "scale_bits", "expected"),
    [
        ("7B", "int4", 0, 16, 3_500_000_000),  # scales not counted by default
        ("7B", "int4", 128, 16, 3_500_000_000 + 109_375_000),  # GPTQ/AWQ-style fp16 scale per 128 weights
        ("7B", "int4", 128, 20, 3_500_000_000 + 136_718_750),  # + a packed 4-bit zero point per group
        ("7B", "fp4", 32, 8, 3_500_000_000 + 218_750_000),  # MXFP4: 8-bit scale per 32
        ("7B", "fp4", 16, 8, 3_500_000_000 + 437_500_000),  # NVFP4: 8-bit scale per 16
        (100, "int4", 128, 16, 50 + 2),  # one partial group still has a scale
    ],
)
def test_weight_bytes_with_group_scales(params, precision, group, scale_bits, expected):
    assert weight_bytes(params, precision, group_size=group, scale_bits=scale_bits) == expected


@pytest.mark.parametrize(
    ("params", "precision", "tp", "expected"),
    [
        ("70B", "bf16", 1, 140_000_000_000),
        ("70B", "bf16", 8, 17_500_000_000),
        ("70B", "int4", 8, 4_375_000_000),
        (7, "bf16", 4, 4),  # 14 bytes over 4 GPUs: ceil
    ],
)
def test_weight_bytes_per_gpu(params, precision, tp, expected):
    assert weight_bytes_per_gpu(params, precision, tp) == expected


# --- KV cache: golden values (reference notes, Sec. 6) ---------------------------------------------


@pytest.mark.parametrize(
    ("layers", "kv_heads", "head_dim", "bpe", "expected"),
    [
        (40, 40, 128, 2, 819_200),  # OPT-13B: vLLM paper Sec. 3 "800 KB" = 800 KiB
        (80, 8, 128, 2, 327_680),  # Llama-2-70B, GQA 8 KV heads: 320 KiB
        (32, 32, 128, 2, 524_288),  # Llama-2-7B, MHA: 512 KiB
        (32, 8, 128, 2, 131_072),  # Llama-3-8B and Mistral-7B: 128 KiB
        (32, 8, 128, "bf16", 131_072),  # dtype by name
        (32, 8, 128, "fp8", 65_536),
        (32, 8, 128, "int8", 65_536),
        (32, 8, 128, "int4", 32_768),
        (32, 8, 128, "fp32", 262_144),
        (32, 8, 128, 4, 262_144),
        (1, 1, 1, "int4", 1),  # 2 values x 4 bits = 1 byte
        (1, 1, 3, "int4", 3),  # 6 values x 4 bits = 3 bytes
    ],
)
def test_kv_cache_bytes_per_token(layers, kv_heads, head_dim, bpe, expected):
    assert kv_cache_bytes_per_token(layers, kv_heads, head_dim, bpe) == expected


def test_opt13b_vllm_paper_units():
    # Kwon et al. 2023 Sec. 3: "800 KB" per token and "as much as 1.6 GB" for 2048 tokens. Both are binary units:
    # 819,200 B = 800 KiB and 1,677,721,600 B = 1.5625 GiB (1.68 GB in SI units).
    per_token = kv_cache_bytes_per_token(40, 40, 128, 2)
    assert per_token == 800 * KiB
    assert per_token * 2048 == 1_677_721_600
    assert format_bytes(per_token, binary=True) == "800 KiB"
    assert format_bytes(per_token * 2048, binary=True, digits=2) == "1.6 GiB"
    assert format_bytes(per_token * 2048, digits=3) == "1.68 GB"


def test_deepseek_v3_mla():
    # DeepSeek-V3 config_671B.json: 61 layers, kv_lora_rank 512, qk_rope_head_dim 64: 576 x 61 x 2 = 70,272 B/token.
    assert mla_kv_cache_bytes_per_token(61, 512, 64, 2) == 70_272
    assert model_kv_bytes_per_token(DEEPSEEK_V3) == 70_272
    assert model_kv_bytes_per_token(DEEPSEEK_V3, "fp8") == 35_136
    # For scale: the same model with plain MHA over its 128 heads (K 192 + V 128 dims) would cache 61x more.
    assert 61 * 128 * (192 + 128) * 2 // 70_272 == 71


@pytest.mark.parametrize(
    ("arch", "seq_len", "per_token", "per_sequence"),
    [
        (LLAMA2_70B, 4096, 327_680, 5 * GiB // 4),  # 1.25 GiB
        (LLAMA2_7B, 4096, 524_288, 2 * GiB),
        (LLAMA3_8B, 8192, 131_072, 1 * GiB),
        (OPT_13B, 2048, 819_200, 1_677_721_600),
        (MISTRAL_7B, 8192, 131_072, 512 * 2**20),  # window 4096 caps the cache at 4096 tokens
        (DEEPSEEK_V3, 4096, 70_272, 70_272 * 4096),
    ],
)
def test_model_kv_per_sequence(arch, seq_len, per_token, per_sequence):
    m = inference_memory(arch, seq_len=seq_len, gpu="b200", tp=8 if arch is DEEPSEEK_V3 else 1)
    assert m.kv_bytes_per_token == per_token
    assert m.kv_per_sequence_bytes == per_sequence


def test_mistral_rolling_buffer_8x_at_32k():
    # Mistral 7B (arXiv:2310.06825) Sec. 2: at 32k tokens the rolling buffer cuts the cache 8x.
    full = inference_memory(MISTRAL_7B, seq_len=32768, sliding_window=0)
    windowed = inference_memory(MISTRAL_7B, seq_len=32768)
    assert windowed.cached_tokens == 4096
    assert full.kv_per_sequence_bytes == 8 * windowed.kv_per_sequence_bytes


@pytest.mark.parametrize(
    ("seq_len", "window", "block", "expected"),
    [
        (2048, 0, 1, 2048),
        (2048, 4096, 1, 2048),  # shorter than the window
        (32768, 4096, 1, 4096),
        (1000, 0, 16, 1008),  # vLLM-style 16-token blocks round up
        (1, 0, 16, 16),
        (5000, 4096, 16, 4096),
        ("2048", "0", "1", 2048),  # typed text
    ],
)
def test_cached_tokens(seq_len, window, block, expected):
    assert cached_tokens(seq_len, sliding_window=window, block_size=block) == expected


# --- Tensor parallelism -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kv_heads", "tp", "per_gpu"),
    [
        (8, 1, 8),
        (8, 2, 4),
        (8, 8, 1),
        (8, 16, 1),  # more GPUs than KV heads: each head replicated on 2 GPUs
        (1, 8, 1),  # multi-query attention: the one head on every GPU
        (40, 8, 5),
    ],
)
def test_kv_heads_per_gpu(kv_heads, tp, per_gpu):
    assert kv_heads_per_gpu(kv_heads, tp) == per_gpu


@pytest.mark.parametrize(
    ("arch", "tp", "per_token_gpu", "replicas"),
    [
        (LLAMA3_8B, 1, 131_072, 1),
        (LLAMA3_8B, 2, 65_536, 1),
        (LLAMA3_8B, 8, 16_384, 1),
        (LLAMA3_8B, 16, 16_384, 2),  # 8 KV heads on 16 GPUs: per-GPU cache stops shrinking
        (LLAMA3_8B, 32, 16_384, 4),
        (LLAMA2_7B, 8, 65_536, 1),  # MHA: 32 heads split 8 ways
        (DEEPSEEK_V3, 8, 70_272, 8),  # MLA latent is whole on every rank
    ],
)
def test_kv_per_gpu_under_tp(arch, tp, per_token_gpu, replicas):
    m = inference_memory(arch, seq_len=1024, tp=tp, gpu="h200")
    assert m.kv_per_token_per_gpu_bytes == per_token_gpu
    assert m.kv_replicas == replicas
    assert m.kv_per_token_per_gpu_bytes * tp == m.kv_bytes_per_token * replicas


def test_llama2_70b_on_h100s():
    # Llama-2-70B bf16 does not fit one 80 GB H100 (138 GB of weights) but fits a TP-4 group. An H100 exposes
    # 81,559 MiB = 85,520,809,984 B (calc.hardware).
    one = inference_memory(LLAMA2_70B, seq_len=4096, gpu="h100-sxm")
    assert not one.fits and one.max_concurrent_sequences == 0
    four = inference_memory(LLAMA2_70B, seq_len=4096, gpu="h100-sxm", tp=4, batch=8)
    assert four.fits
    assert four.weights_per_gpu_bytes == 34_488_324_096
    assert four.kv_per_sequence_per_gpu_bytes == 5 * GiB // 16
    # (85.52e9 - 8.55e9 reserved - 34.49e9) // 335.5 MB = 126 sequences of 4096 tokens
    assert four.max_concurrent_sequences == 126
    assert four.total_per_gpu_bytes == 34_488_324_096 + 8 * (5 * GiB // 16) + 8_552_080_999


def test_deepseek_v3_fp8_on_h200_node():
    # 671B parameters in fp8 over 8 H200s: 83.9 GB of weights per GPU; each GPU keeps the whole latent cache.
    m = inference_memory(DEEPSEEK_V3, seq_len=32768, precision="fp8", tp=8, gpu="h200")
    assert m.weights_per_gpu_bytes == 83_878_302_400
    h200 = 143_771 * 2**20  # as nvidia-smi shows it
    free = h200 - 15_075_482_010 - 83_878_302_400  # the reserve is ceil(10%)
    assert m.max_concurrent_sequences == free // (70_272 * 32768)


@pytest.mark.parametrize(
    ("kwargs", "reserved"),
    [
        ({}, 8_552_080_999),  # default 10% of the 81,559 MiB an H100 exposes, ceil
        ({"reserved_fraction": 0}, 0),
        ({"reserved_fraction": "0.05"}, 4_276_040_500),
        ({"reserved_fraction": 0.1}, 8_552_080_999),  # float read through its decimal text
        ({"reserved_fraction": Fraction(1, 3)}, 28_506_936_662),  # ceil
        ({"reserved_fraction": 0, "reserved_bytes": 2 * GiB}, 2 * GiB),
        ({"reserved_bytes": 10**9}, 9_552_080_999),
        ({"memory_bytes": 24 * GiB, "reserved_fraction": "0.1"}, 2_576_980_378),  # custom memory, ceil(0.1 x 24 GiB)
    ],
)
def test_reserve(kwargs, reserved):
    m = inference_memory(LLAMA3_8B, seq_len=8192, gpu="h100-sxm", **kwargs)
    assert m.reserved_per_gpu_bytes == reserved
    assert DEFAULT_RESERVED_FRACTION == Fraction(1, 10)


def test_gpu_object_and_as_dict():
    m = inference_memory(LLAMA3_8B, seq_len=8192, gpu=gpu("a100-40"))
    assert m.gpu_memory_bytes == 40_960 * 2**20
    d = m.as_dict()
    assert d["fits"] is True and d["kv_per_sequence_bytes"] == GiB
    assert isinstance(m, InferenceMemory)
    assert m.free_per_gpu_bytes == 40_960 * 2**20 - m.total_per_gpu_bytes


@pytest.mark.parametrize(
    ("memory", "weights", "kv", "reserved", "expected"),
    [
        (80 * 10**9, 14 * 10**9, GiB, 0, 61),
        (80 * 10**9, 14 * 10**9, GiB, 8 * 10**9, 54),
        (80 * 10**9, 90 * 10**9, GiB, 0, 0),  # weights alone overflow
        (100, 50, 10, 0, 5),  # exact fit counts
        (100, 50, 10, 1, 4),
    ],
)
def test_max_concurrent_sequences(memory, weights, kv, reserved, expected):
    assert max_concurrent_sequences(memory, weights, kv, reserved_bytes=reserved) == expected


# --- Errors -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("call", "field", "code"),
    [
        (lambda: weight_bytes("7B", "fp6"), "precision", "unknown-name"),
        (lambda: weight_bytes("7B", "int4", group_size=-1), "group_size", "invalid-value"),
        (lambda: weight_bytes_per_gpu("7B", "bf16", 0), "tp", "invalid-value"),
        (lambda: kv_cache_bytes_per_token(32, 8, 128, 0), "bytes_per_element", "invalid-value"),
        (lambda: kv_cache_bytes_per_token(32, 8, 128, "fp6"), "bytes_per_element", "invalid-value"),
        (lambda: kv_cache_bytes_per_token(32, 8, 128, True), "bytes_per_element", "invalid-value"),
        (lambda: kv_cache_bytes_per_token(0, 8, 128, 2), "layers", "invalid-value"),
        (lambda: kv_heads_per_gpu(8, 6), "tp", "not-divisible"),
        (lambda: kv_heads_per_gpu(8, 12), "tp", "not-divisible"),  # 12 > 8 but not a multiple
        (lambda: cached_tokens(0), "seq_len", "invalid-value"),
        (lambda: cached_tokens(10, sliding_window=-1), "sliding_window", "invalid-value"),
        (lambda: max_concurrent_sequences(10, 1, 0), "kv_bytes_per_sequence", "invalid-value"),
        (lambda: inference_memory(LLAMA3_8B, seq_len=1, tp=3), "tp", "not-divisible"),  # 32 heads
        (lambda: inference_memory(_Arch(32, 48, 8, 128, 10**9), seq_len=1, tp=6), "tp", "not-divisible"),  # KV
        (lambda: inference_memory(LLAMA3_8B, seq_len=1, kv_dtype="q4"), "kv_dtype", "unknown-name"),
        (lambda: inference_memory(LLAMA3_8B, seq_len=1, gpu="tpu"), "gpu", "unknown-name"),
        (lambda: inference_memory(LLAMA3_8B, seq_len=1, reserved_fraction=1), "reserved_fraction", "invalid-value"),
        (
            lambda: inference_memory(LLAMA3_8B, seq_len=1, reserved_fraction="lots"),
            "reserved_fraction",
            "invalid-value",
        ),
        (
            lambda: inference_memory(LLAMA3_8B, seq_len=1, reserved_fraction=float("nan")),
            "reserved_fraction",
            "invalid-value",
        ),
        (lambda: inference_memory(LLAMA3_8B, seq_len=1, batch=0), "batch", "invalid-value"),
    ],
)
def test_errors(call, field, code):
    with pytest.raises(CalcError) as info:
        call()
    assert info.value.field == field
    assert info.value.code == code


# --- Invariants ---------------------------------------------------------------------------------

_PRECISIONS_BY_BITS = sorted(PRECISION_BITS, key=PRECISION_BITS.__getitem__)


@settings(max_examples=200, deadline=None)
@given(
    params=st.integers(1, 10**13),
    tp=st.integers(1, 1024),
    extra=st.integers(0, 1024),
    precision=st.sampled_from(sorted(PRECISION_BITS)),
    group=st.sampled_from([0, 16, 32, 128]),
)
def test_more_tp_never_raises_weights_per_gpu(params, tp, extra, precision, group):
    assert weight_bytes_per_gpu(params, precision, tp + extra, group_size=group) <= weight_bytes_per_gpu(
        params, precision, tp, group_size=group
    )


@settings(max_examples=200, deadline=None)
@given(
    params=st.integers(1, 10**13),
    i=st.integers(0, len(_PRECISIONS_BY_BITS) - 1),
    j=st.integers(0, len(_PRECISIONS_BY_BITS) - 1),
    group=st.sampled_from([0, 32, 128]),
)
def test_lower_precision_never_raises_weight_bytes(params, i, j, group):
    lo, hi = sorted((i, j))
    assert weight_bytes(params, _PRECISIONS_BY_BITS[lo], group_size=group) <= weight_bytes(
        params, _PRECISIONS_BY_BITS[hi], group_size=group
    )


_archs = st.builds(
    _Arch,
    num_layers=st.integers(1, 128),
    num_heads=st.sampled_from([8, 16, 32, 64, 128]),
    num_kv_heads=st.sampled_from([1, 2, 4, 8]),
    head_dim=st.sampled_from([64, 128, 256]),
    param_count=st.integers(10**8, 10**12),
    sliding_window=st.sampled_from([0, 0, 4096]),
)


_tps = st.sampled_from([1, 2, 4, 8])
_devices = st.sampled_from(sorted(GPUS))
_lengths = st.integers(1, 262_144)
_kv_dtypes = st.sampled_from(["bf16", "fp8", "int4"])


@settings(max_examples=200, deadline=None)
@given(arch=_archs, s1=_lengths, s2=_lengths, tp=_tps, kv=_kv_dtypes, block=st.sampled_from([1, 16]), device=_devices)
def test_concurrent_sequences_non_increasing_in_length(arch, s1, s2, tp, kv, block, device):
    short, long_ = sorted((s1, s2))
    a = inference_memory(arch, seq_len=short, tp=tp, kv_dtype=kv, block_size=block, gpu=device, precision="int4")
    b = inference_memory(arch, seq_len=long_, tp=tp, kv_dtype=kv, block_size=block, gpu=device, precision="int4")
    assert b.max_concurrent_sequences <= a.max_concurrent_sequences
    assert b.kv_per_sequence_per_gpu_bytes >= a.kv_per_sequence_per_gpu_bytes


@settings(max_examples=200, deadline=None)
@given(arch=_archs, seq=st.integers(1, 131_072), tp=st.sampled_from([1, 2, 4, 8, 16, 32]))
def test_more_tp_never_raises_kv_per_gpu(arch, seq, tp):
    assume(arch.num_heads % (2 * tp) == 0)
    one = inference_memory(arch, seq_len=seq, tp=tp)
    two = inference_memory(arch, seq_len=seq, tp=2 * tp)
    assert two.kv_per_sequence_per_gpu_bytes <= one.kv_per_sequence_per_gpu_bytes
    assert two.weights_per_gpu_bytes <= one.weights_per_gpu_bytes
    assert two.max_concurrent_sequences >= one.max_concurrent_sequences


@settings(max_examples=200, deadline=None)
@given(arch=_archs, seq=st.integers(1, 131_072), batch=st.integers(1, 4096), tp=_tps, device=_devices)
def test_fits_exactly_when_batch_within_capacity(arch, seq, batch, tp, device):
    m = inference_memory(arch, seq_len=seq, batch=batch, tp=tp, gpu=device)
    assert m.fits == (batch <= m.max_concurrent_sequences)
    assert m.kv_batch_per_gpu_bytes == batch * m.kv_per_sequence_per_gpu_bytes


@settings(max_examples=200, deadline=None)
@given(
    memory=st.integers(0, 10**12),
    weights=st.integers(0, 10**12),
    kv=st.integers(1, 10**10),
    reserved=st.integers(0, 10**11),
)
def test_max_concurrent_sequences_is_the_largest_that_fits(memory, weights, kv, reserved):
    n = max_concurrent_sequences(memory, weights, kv, reserved_bytes=reserved)
    free = memory - weights - reserved
    assert n >= 0
    if free >= 0:
        assert n * kv <= free < (n + 1) * kv
    else:
        assert n == 0


# --- Real presets (calc.models.presets) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "per_token"),
    [
        ("llama2-7b", 524_288),
        ("llama2-70b", 327_680),
        ("llama3-8b", 131_072),
        ("mistral-7b", 131_072),
        ("deepseek-v3", 70_272),
    ],
)
def test_preset_kv_per_token(name, per_token):
    from calc.models.presets import preset

    arch = preset(name)
    assert model_kv_bytes_per_token(arch) == per_token
    assert arch.num_layers * arch.kv_cache_dims_per_token() * 2 == per_token  # agrees with the Architecture


def test_preset_sliding_window_applies_by_default():
    from calc.models.presets import preset

    mistral = preset("mistral-7b")
    assert inference_memory(mistral, seq_len=32768).cached_tokens == 4096
    assert inference_memory(mistral, seq_len=32768, sliding_window=0).cached_tokens == 32768


# --- The serving-memory calculator --------------------------------------------------------------


def _outputs(fragment: str) -> dict[str, str]:
    import html
    import re

    return {k: html.unescape(v) for k, v in re.findall(r'data-output="([^"]+)"[^>]*>(.*?)</', fragment)}


def test_widget_defaults():
    from calc.models.presets import preset
    from calc.widgets.inference import CALCULATOR

    fragment = CALCULATOR.compute(dict(CALCULATOR.defaults))
    out = _outputs(fragment)
    m = inference_memory(preset("llama3-70b"), seq_len=8192, batch=16, tp=4, gpu="h100-sxm")
    assert out["weights_per_gpu"] == format_bytes(m.weights_per_gpu_bytes)
    assert out["max_sequences"] == f"{m.max_concurrent_sequences:,}"
    assert out["total_per_gpu"] == format_bytes(m.total_per_gpu_bytes)
    assert 'data-ok="yes"' in fragment


@pytest.mark.parametrize(
    ("inputs", "ok", "phrase"),
    [
        ({"model": "llama2-70b", "tp": "1"}, "no", "short by"),
        ({"model": "mistral-7b", "seq_len": "32768", "batch": "200", "tp": "1"}, "no", "sliding window"),
        ({"model": "deepseek-v3", "precision": "fp8", "tp": "8", "gpu": "h200"}, "yes", "latent"),
        ({"model": "llama3-8b", "tp": "16"}, "yes", "replicated on 2 GPUs"),
        (
            {"model": "llama3-8b", "tp": "1", "gpu": "custom", "gpu_memory": "24", "unit": "GiB", "batch": "4"},
            "yes",
            "24.0 GiB",
        ),
        ({"model": "llama3-8b", "precision": "int4", "tp": "1"}, "yes", "not counted"),
    ],
)
def test_widget_cases(inputs, ok, phrase):
    from calc.widgets.inference import CALCULATOR

    fragment = widget_fragment(CALCULATOR, inputs)
    assert f'data-ok="{ok}"' in fragment and phrase in fragment


_NEEDS = {"gpu_memory": {"gpu": "custom"}}
"""The inputs a field needs to be read at all."""


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("model", "gpt-9"),
        ("precision", "fp6"),
        ("kv_dtype", "q4"),
        ("seq_len", "0"),
        ("batch", "-1"),
        ("tp", "3"),
        ("gpu", "tpu"),
        ("reserved_pct", "100"),
        ("reserved_pct", "x"),
        ("unit", "KB"),
        ("gpu_memory", "0"),
    ],
)
def test_widget_bad_input(field, value):
    from calc.widgets.inference import CALCULATOR

    assert widget_error(CALCULATOR, {field: value, **_NEEDS.get(field, {})}).field in (field, "preset")


@pytest.mark.parametrize("garbage", ["", "abc", "-1", "1e999", "NaN", "<script>", "0", "1.5"])
def test_widget_garbage_is_a_calc_error_or_a_result(garbage):
    from calc.widgets.inference import CALCULATOR

    check_garbage(CALCULATOR, garbage, _NEEDS)


# Local and global layers (Gemma 3 report, arXiv:2503.19786, Sec. 2.1: five local layers per global one;
# gpt-oss model card: alternating banded-window and dense layers). Global layers cache every token.
@pytest.mark.parametrize(
    ("slug", "window", "global_layers"),
    [
        ("gemma3-1b", 512, 4),  # 26 layers, every sixth global: layers 5, 11, 17, 23
        ("gemma3-27b", 1024, 10),  # 62 layers
        ("gpt-oss-20b", 128, 12),  # 24 layers, every other global
        ("gpt-oss-120b", 128, 18),
    ],
)
@pytest.mark.parametrize("seq_len", [100, 4096, 131072])
def test_global_layers_cache_every_token(slug: str, window: int, global_layers: int, seq_len: int) -> None:
    from calc.models.presets import preset

    arch = preset(slug)
    assert (arch.sliding_window, arch.global_attention_layers) == (window, global_layers)
    per_layer_token = arch.num_kv_heads * (arch.head_dim + arch.v_head_dim) * 2  # bf16
    local = arch.num_layers - global_layers
    expected = per_layer_token * (local * min(seq_len, window) + global_layers * seq_len)
    m = inference_memory(arch, seq_len=seq_len, batch=1, gpu="h200")
    assert m.kv_per_sequence_bytes == expected
    assert m.cached_tokens == min(seq_len, window)
    # Forcing the window onto every layer, or switching it off, recovers the uniform cases.
    assert inference_memory(arch, seq_len=seq_len, sliding_window=0, gpu="h200").kv_per_sequence_bytes == (
        per_layer_token * arch.num_layers * seq_len
    )
    assert inference_memory(arch, seq_len=seq_len, sliding_window=window, gpu="h200").kv_per_sequence_bytes == (
        per_layer_token * arch.num_layers * min(seq_len, window)
    )
