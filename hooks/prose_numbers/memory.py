"""Numbers on the memory pages (docs/memory/*.md) and on docs/architectures.md.

Every value is an engine call; the pages only say which one. Names start with ``mem-``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from fractions import Fraction

from calc import (
    BYTE_UNITS,
    CONVENTIONS,
    GPU,
    GPUS,
    format_bytes,
    format_count,
    model_state_bytes,
    smallest_fitting_layout,
)
from calc.memory.activations import activation_bytes_per_layer, stage_activations
from calc.memory.inference import (
    cached_tokens,
    inference_memory,
    kv_cache_bytes_per_token,
    model_kv_bytes_per_token,
    weight_bytes,
)
from calc.memory.layout import Layout, layout_memory
from calc.models.architecture import Architecture
from calc.models.presets import preset

NUMBERS: dict[str, Callable[[], str]] = {}

_GPU_80GB = GPUS["h100-sxm"].memory_bytes
_MIB = BYTE_UNITS["MiB"]


def _pct(x: Fraction | float, digits: int = 0) -> str:
    return f"{float(x) * 100:.{digits}f}%"


def _times(x: Fraction | float, digits: int = 1) -> str:
    text = f"{float(x):.{digits}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return f"{text}×"


def _mib(n: int) -> str:
    """Bytes as MiB, exact to one decimal where the value has one (Korthikanti's per-layer sizes)."""
    whole = len(str(n // _MIB))
    return format_bytes(n, binary=True, unit="MiB", digits=whole if n % _MIB == 0 else whole + 1)


def _exact(n: int) -> str:
    return f"{n:,}"


def _largest_gpu() -> GPU:
    return max(GPUS.values(), key=lambda g: g.memory_bytes)


# --------------------------------------------------------------------------- memory/index.md

NUMBERS.update(
    {
        "mem-state-7b": lambda: format_bytes(model_state_bytes("7B").total),
        "mem-state-7b-gib": lambda: format_bytes(model_state_bytes("7B").total, binary=True),
        "mem-state-70b": lambda: format_bytes(model_state_bytes("70B").total, digits=2),
        "mem-state-70b-3sig": lambda: format_bytes(model_state_bytes("70B").total),
        "mem-state-70b-tib": lambda: format_bytes(model_state_bytes("70B").total, binary=True),
        "mem-weights-7b": lambda: format_bytes(model_state_bytes("7B").weights, digits=2),
        "mem-weights-70b": lambda: format_bytes(model_state_bytes("70B").weights),
        "mem-state-over-weights": lambda: _times(
            Fraction(model_state_bytes("7B").total, model_state_bytes("7B").weights)
        ),
        "mem-7b-over-80gb": lambda: format_bytes(model_state_bytes("7B").total - _GPU_80GB, digits=2),
        "mem-1.5b-state": lambda: format_bytes(model_state_bytes("1.5B").total, digits=2),
        "mem-1.5b-weights": lambda: format_bytes(model_state_bytes("1.5B").weights, digits=1),
        # ZeRO paper, Sec. 5 / Table 1: 7.5B parameters, N_d = 64
        "mem-zero-7.5b-s0": lambda: format_bytes(model_state_bytes(7.5e9, zero_stage=0, dp=64).total),
        "mem-zero-7.5b-s1": lambda: format_bytes(model_state_bytes(7.5e9, zero_stage=1, dp=64).total),
        "mem-zero-7.5b-s2": lambda: format_bytes(model_state_bytes(7.5e9, zero_stage=2, dp=64).total),
        "mem-zero-7.5b-s3": lambda: format_bytes(model_state_bytes(7.5e9, zero_stage=3, dp=64).total),
        "mem-70b-zero3-dp64": lambda: format_bytes(model_state_bytes("70B", zero_stage=3, dp=64).total),
        "mem-70b-min-dp": lambda: _exact(smallest_fitting_layout("70B", _GPU_80GB)[1]),
        "mem-largest-gpu": lambda: _largest_gpu().label,
        "mem-largest-gpu-params": lambda: format_count(
            _largest_gpu().memory_bytes // CONVENTIONS["mixed-adam-16"].bytes_per_param
        ),
    }
)

for _component in ("weights", "gradients", "master", "momentum", "variance"):
    NUMBERS[f"mem-7b-{_component}"] = lambda c=_component: format_bytes(getattr(model_state_bytes("7B"), c))


def _layout_text(params: str) -> str:
    found = smallest_fitting_layout(params, _GPU_80GB)
    if found is None:  # pragma: no cover - every size on the page fits somewhere
        return "none"
    stage, dp = found
    if stage == 0:
        return "one GPU, no sharding"
    return f"stage {stage}, dp ≥ {dp:,}"


for _size in ("1.5B", "7B", "13B", "70B", "405B"):
    _key = _size.lower()
    NUMBERS[f"mem-tbl-{_key}-weights"] = lambda p=_size: format_bytes(model_state_bytes(p).weights)
    NUMBERS[f"mem-tbl-{_key}-state"] = lambda p=_size: format_bytes(model_state_bytes(p).total)
    NUMBERS[f"mem-tbl-{_key}-state-gib"] = lambda p=_size: format_bytes(model_state_bytes(p).total, binary=True)
    NUMBERS[f"mem-tbl-{_key}-layout"] = lambda p=_size: _layout_text(p)

# --------------------------------------------------------------------------- memory/conventions.md

for _conv in CONVENTIONS:
    NUMBERS[f"mem-conv-{_conv}-7b"] = lambda c=_conv: format_bytes(model_state_bytes("7B", convention=c).total)
    NUMBERS[f"mem-conv-{_conv}-70b"] = lambda c=_conv: format_bytes(
        model_state_bytes("70B", convention=c).total, digits=3
    )
    NUMBERS[f"mem-conv-{_conv}-7b-z3-dp8"] = lambda c=_conv: format_bytes(
        model_state_bytes("7B", zero_stage=3, dp=8, convention=c).total
    )

NUMBERS.update(
    {
        "mem-conv-spread-7b": lambda: format_bytes(
            model_state_bytes("7B", convention="mixed-adam-20").total
            - model_state_bytes("7B", convention="mixed-adam-16").total
        ),
        "mem-gib-over-gb": lambda: _pct(Fraction(BYTE_UNITS["GiB"] - BYTE_UNITS["GB"], BYTE_UNITS["GB"]), 1),
        "mem-80gb-in-gib": lambda: format_bytes(_GPU_80GB, binary=True),
        # DeepSpeed memory.rst example: t5-3b (2851M parameters), 8 GPUs, ZeRO-2 without offload
        "mem-ds-t5-3b-z2": lambda: format_bytes(
            model_state_bytes(2851e6, zero_stage=2, dp=8, convention="mixed-adam-20").total, binary=True, digits=4
        ),
        "mem-ds-t5-3b-z2-zero16": lambda: format_bytes(
            model_state_bytes(2851e6, zero_stage=2, dp=8, convention="mixed-adam-16").total, binary=True
        ),
        # Megatron-LM distributed optimizer (= ZeRO-1 with 18 B/param): 6 + 12/d
        "mem-megatron-7b-do-d8": lambda: format_bytes(
            model_state_bytes("7B", zero_stage=1, dp=8, convention="mixed-adam-18").total
        ),
    }
)

# --------------------------------------------------------------------------- memory/activations.md

_KORTHIKANTI = {  # Korthikanti et al. 2022, Table 3: heads, hidden, layers, micro-batch (s = 2048, t = 8)
    "22b": (64, 6144, 48, 4),
    "175b": (96, 12288, 96, 1),
    "530b": (128, 20480, 105, 1),
    "1t": (160, 25600, 128, 1),
}
_TABLE2_ROWS = {  # row key -> keyword arguments of activation_bytes_per_layer
    "none": {},
    "tp": {"tp": 8},
    "tpsp": {"tp": 8, "sequence_parallel": True},
    "tpsel": {"tp": 8, "recompute": "selective"},
    "tpspsel": {"tp": 8, "sequence_parallel": True, "recompute": "selective"},
    "full": {"recompute": "full"},
}

for _model, (_a, _h, _L, _b) in _KORTHIKANTI.items():
    for _row, _kwargs in _TABLE2_ROWS.items():
        NUMBERS[f"mem-act-{_model}-{_row}"] = lambda a=_a, h=_h, b=_b, kw=_kwargs: _mib(
            activation_bytes_per_layer(2048, b, h, a, **kw)
        )


def _attention_term(model: str) -> Fraction:
    """Korthikanti's 5as/h, read off the engine: (no-recompute - selective) / sbh at t = 1."""
    a, h, _, b = _KORTHIKANTI[model]
    full = activation_bytes_per_layer(2048, b, h, a)
    linear = activation_bytes_per_layer(2048, b, h, a, recompute="selective")
    return Fraction(full - linear, 2048 * b * h)


def _selective_saving(model: str) -> Fraction:
    a, h, _, b = _KORTHIKANTI[model]
    full = activation_bytes_per_layer(2048, b, h, a, tp=8, sequence_parallel=True)
    sel = activation_bytes_per_layer(2048, b, h, a, tp=8, sequence_parallel=True, recompute="selective")
    return Fraction(full - sel, full)


def _korthikanti_22b(recompute: str):
    """The 22B config's stage activations (p = 1, v = 51200, t = 8 with SP): Korthikanti et al. 2022, Eq. 5 / 6."""
    a, h, L, b = _KORTHIKANTI["22b"]
    per_layer = activation_bytes_per_layer(2048, b, h, a, tp=8, sequence_parallel=True, recompute=recompute)
    return stage_activations(
        per_layer, num_layers=L, seq_len=2048, micro_batch=b, hidden=h, vocab_size=51200, tp=8, sequence_parallel=True
    )


def _korthikanti_22b_extras(recompute: str) -> Fraction:
    """Embedding and output-layer terms over the layers' total, 22B config (p = 1, v = 51200), with SP."""
    st = _korthikanti_22b(recompute)
    return Fraction(st.extras, st.layers)


def _gpt2xl_acts(**kwargs: object) -> int:
    """GPT-2 1.5B as in ZeRO Sec. 3.2: sequence 1K, batch 32, 48 layers, hidden 1600, 25 heads."""
    return 48 * activation_bytes_per_layer(1024, 32, 1600, 25, **kwargs)


def _llama8b(seq_len: int = 8192, **kwargs: object):
    return layout_memory(preset("llama3-8b"), Layout(seq_len=seq_len, dropout=False, **kwargs))


def _llama8b_acts(seq_len: int = 8192, **kwargs: object) -> int:
    m = _llama8b(seq_len, **kwargs)
    return m.activations + m.logits


NUMBERS.update(
    {
        "mem-act-175b-5ash": lambda: str(_attention_term("175b")),
        "mem-act-530b-5ash": lambda: str(_attention_term("530b")),
        "mem-act-175b-selective-saving": lambda: _pct(_selective_saving("175b")),
        "mem-act-530b-selective-saving": lambda: _pct(_selective_saving("530b")),
        "mem-act-22b-eq6": lambda: format_bytes(_korthikanti_22b("selective").layers, binary=True),
        "mem-act-22b-extras-eq5": lambda: _pct(_korthikanti_22b_extras("none"), 2),
        "mem-act-22b-extras-eq6": lambda: _pct(_korthikanti_22b_extras("selective"), 1),
        "mem-act-gpt2xl": lambda: format_bytes(_gpt2xl_acts()),
        "mem-act-gpt2xl-flash": lambda: format_bytes(_gpt2xl_acts(flash_attention=True)),
        "mem-act-gpt2xl-full": lambda: format_bytes(_gpt2xl_acts(recompute="full")),
        "mem-act-llama8b-plain": lambda: format_bytes(_llama8b_acts()),
        "mem-act-llama8b-flash": lambda: format_bytes(_llama8b_acts(flash_attention=True)),
        "mem-act-llama8b-full": lambda: format_bytes(_llama8b_acts(flash_attention=True, recompute="full")),
        "mem-act-llama8b-logits": lambda: format_bytes(_llama8b(flash_attention=True).logits),
        "mem-act-llama8b-2k": lambda: format_bytes(_llama8b_acts(2048, flash_attention=True)),
        "mem-act-llama8b-32k": lambda: format_bytes(_llama8b_acts(32768, flash_attention=True)),
        "mem-act-llama8b-32k-cp4": lambda: format_bytes(_llama8b_acts(32768, flash_attention=True, cp=4)),
        "mem-act-llama8b-weights": lambda: format_bytes(_llama8b().weights),
        "mem-act-llama8b-state": lambda: format_bytes(_llama8b().model_state),
        "mem-act-llama8b-flash-over-weights": lambda: _times(
            Fraction(_llama8b_acts(flash_attention=True), _llama8b().weights)
        ),
    }
)

# --------------------------------------------------------------------------- memory/inference.md


def _mha_equivalent(arch: Architecture) -> Architecture:
    """The same model with one KV head per query head and no latent: what the cache would be without GQA/MLA."""
    return dataclasses.replace(arch, num_kv_heads=arch.num_heads, kv_lora_rank=0, q_lora_rank=0)


def _mha_over_own(slug: str) -> Fraction:
    """How many times larger the KV cache would be with MHA (``_mha_equivalent``) than with the model's GQA / MLA."""
    arch = preset(slug)
    return Fraction(model_kv_bytes_per_token(_mha_equivalent(arch)), model_kv_bytes_per_token(arch))


_KV_PRESETS = (
    "llama2-7b",
    "llama2-70b",
    "llama3-8b",
    "llama3-70b",
    "llama3.1-405b",
    "mistral-7b",
    "mixtral-8x7b",
    "qwen2.5-7b",
    "deepseek-v3",
)
"""The KV-cache table of docs/memory/inference.md."""

for _slug in _KV_PRESETS:
    NUMBERS[f"mem-kv-{_slug}-token"] = lambda s=_slug: format_bytes(model_kv_bytes_per_token(preset(s)))
    NUMBERS[f"mem-kv-{_slug}-8k"] = lambda s=_slug: format_bytes(model_kv_bytes_per_token(preset(s)) * 8192)
    NUMBERS[f"mem-kv-{_slug}-128k"] = lambda s=_slug: format_bytes(model_kv_bytes_per_token(preset(s)) * 131072)
    NUMBERS[f"mem-kv-{_slug}-weights"] = lambda s=_slug: format_bytes(weight_bytes(preset(s).param_count))

NUMBERS.update(
    {
        "mem-inf-70b-bf16": lambda: format_bytes(weight_bytes("70B", "bf16")),
        "mem-inf-70b-fp8": lambda: format_bytes(weight_bytes("70B", "fp8"), digits=2),
        "mem-inf-70b-int4": lambda: format_bytes(weight_bytes("70B", "int4"), digits=2),
        "mem-inf-70b-int4-g128": lambda: format_bytes(weight_bytes("70B", "int4", group_size=128)),
        "mem-inf-70b-state": lambda: format_bytes(model_state_bytes("70B").total, digits=2),
        "mem-kv-opt13b-token": lambda: format_bytes(kv_cache_bytes_per_token(40, 40, 128, 2), binary=True),
        "mem-kv-opt13b-token-bytes": lambda: _exact(kv_cache_bytes_per_token(40, 40, 128, 2)),
        "mem-kv-deepseek-v3-token-bytes": lambda: _exact(model_kv_bytes_per_token(preset("deepseek-v3"))),
        "mem-kv-deepseek-v3-mha-token": lambda: format_bytes(
            model_kv_bytes_per_token(_mha_equivalent(preset("deepseek-v3")))
        ),
        "mem-kv-deepseek-v3-mla-ratio": lambda: _times(_mha_over_own("deepseek-v3"), 0),
        "mem-kv-llama2-70b-mha-token": lambda: format_bytes(
            model_kv_bytes_per_token(_mha_equivalent(preset("llama2-70b")))
        ),
        "mem-kv-llama2-70b-gqa-ratio": lambda: _times(_mha_over_own("llama2-70b"), 0),
        "mem-kv-llama3-8b-128k-gb": lambda: format_bytes(model_kv_bytes_per_token(preset("llama3-8b")) * 131072),
        "mem-kv-llama2-7b-4k": lambda: format_bytes(model_kv_bytes_per_token(preset("llama2-7b")) * 4096),
        "mem-kv-l2-7b-over-l3-8b": lambda: _times(
            Fraction(model_kv_bytes_per_token(preset("llama2-7b")), model_kv_bytes_per_token(preset("llama3-8b"))), 0
        ),
        "mem-kv-llama2-70b-4k": lambda: format_bytes(model_kv_bytes_per_token(preset("llama2-70b")) * 4096),
        "mem-kv-llama3-8b-fp8-token": lambda: format_bytes(model_kv_bytes_per_token(preset("llama3-8b"), "fp8")),
        "mem-kv-mistral-32k-cached": lambda: _exact(cached_tokens(32768, sliding_window=4096)),
        "mem-kv-mistral-32k-ratio": lambda: _times(Fraction(32768, cached_tokens(32768, sliding_window=4096)), 0),
        "mem-kv-llama2-70b-batch": lambda: format_bytes(
            inference_memory(preset("llama2-70b"), seq_len=4096, batch=8, tp=4).kv_batch_bytes
        ),
        "mem-serve-70b-tp4-weights": lambda: format_bytes(
            inference_memory(preset("llama2-70b"), seq_len=4096, tp=4).weights_per_gpu_bytes
        ),
        "mem-serve-70b-tp4-kv-seq": lambda: format_bytes(
            inference_memory(preset("llama2-70b"), seq_len=4096, tp=4).kv_per_sequence_per_gpu_bytes
        ),
        "mem-serve-70b-tp4-reserve": lambda: format_bytes(
            inference_memory(preset("llama2-70b"), seq_len=4096, tp=4).reserved_per_gpu_bytes
        ),
        "mem-serve-70b-tp4-max": lambda: _exact(
            inference_memory(preset("llama2-70b"), seq_len=4096, tp=4).max_concurrent_sequences
        ),
        "mem-serve-8b-max": lambda: _exact(
            inference_memory(preset("llama3-8b"), seq_len=8192).max_concurrent_sequences
        ),
        "mem-serve-8b-max-fp8kv": lambda: _exact(
            inference_memory(preset("llama3-8b"), seq_len=8192, kv_dtype="fp8").max_concurrent_sequences
        ),
        "mem-serve-l2-7b-max": lambda: _exact(
            inference_memory(preset("llama2-7b"), seq_len=4096).max_concurrent_sequences
        ),
    }
)

# --------------------------------------------------------------------------- architectures.md

_ARCH_PRESETS = ("gpt2", "gpt2-xl", "gpt3-175b", *_KV_PRESETS, "qwen3-30b-a3b", "gemma-7b")
"""The table of docs/architectures.md: the models of the KV-cache table (``_KV_PRESETS``) and GPT-2, GPT-2 XL,
GPT-3, Qwen3-30B-A3B and Gemma 7B."""

for _slug in _ARCH_PRESETS:
    NUMBERS[f"mem-arch-{_slug}-total"] = lambda s=_slug: _exact(preset(s).param_count)
    NUMBERS[f"mem-arch-{_slug}-short"] = lambda s=_slug: format_count(preset(s).param_count)
    NUMBERS[f"mem-arch-{_slug}-active"] = lambda s=_slug: format_count(preset(s).active_param_count)
    NUMBERS[f"mem-arch-{_slug}-state"] = lambda s=_slug: format_bytes(model_state_bytes(preset(s).param_count).total)

for _kind in ("embedding", "attention", "mlp_dense", "norms", "lm_head"):
    NUMBERS[f"mem-arch-llama3-8b-{_kind.replace('_', '-')}"] = lambda k=_kind: _exact(
        preset("llama3-8b").params_by_kind()[k]
    )


def _embedding_share(slug: str) -> Fraction:
    arch = preset(slug)
    return Fraction(arch.embedding_params + arch.lm_head_params, arch.param_count)


NUMBERS.update(
    {
        "mem-arch-gpt2-layer": lambda: _exact(preset("gpt2").layer_param_counts()[0]),
        "mem-arch-gpt2-embedding": lambda: _exact(preset("gpt2").embedding_params),
        "mem-arch-llama3-8b-embed-share": lambda: _pct(_embedding_share("llama3-8b")),
        "mem-arch-llama3-70b-embed-share": lambda: _pct(_embedding_share("llama3-70b"), 1),
        "mem-arch-llama2-70b-attn": lambda: _exact(preset("llama2-70b").attention_params_per_layer),
        "mem-arch-llama2-70b-attn-mha": lambda: _exact(
            _mha_equivalent(preset("llama2-70b")).attention_params_per_layer
        ),
        "mem-arch-mixtral-expert": lambda: _exact(preset("mixtral-8x7b").params_per_expert),
        "mem-arch-mixtral-active-exact": lambda: _exact(preset("mixtral-8x7b").active_param_count),
        "mem-arch-deepseek-v3-active-exact": lambda: _exact(preset("deepseek-v3").active_param_count),
        "mem-arch-deepseek-v3-attn": lambda: _exact(preset("deepseek-v3").attention_params_per_layer),
        "mem-arch-deepseek-v3-attn-mha": lambda: _exact(
            _mha_equivalent(preset("deepseek-v3")).attention_params_per_layer
        ),
        "mem-arch-deepseek-v3-moe-layer": lambda: _exact(preset("deepseek-v3").mlp_params_per_layer(3)),
        "mem-arch-mixtral-state": lambda: format_bytes(model_state_bytes(preset("mixtral-8x7b").param_count).total),
        "mem-arch-mixtral-active-state": lambda: format_bytes(
            model_state_bytes(preset("mixtral-8x7b").active_param_count).total
        ),
    }
)
