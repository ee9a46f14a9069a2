"""Named model configurations, kept as Hugging Face ``config.json``-style data.

Each entry of [`PRESETS`][calc.models.presets.PRESETS] is a plain ``dict`` that
[`Architecture.from_hf_config`][calc.models.architecture.Architecture.from_hf_config]
reads, plus a ``_source`` string saying where the numbers come from (keys
starting with ``_`` are ignored by the reader). Published checkpoints carry the
architecture fields of their ``config.json`` verbatim (token ids, dropout and
initializer settings, ``auto_map`` and ``quantization_config`` are left out;
none of them changes a weight's shape). Paper-only models (GPT-3, the
Megatron-LM evaluation models) are written as ``gpt2``-type configs: learned
positions, LayerNorm, biases, a 4h GELU MLP and a tied output head, the
architecture those papers describe.

Examples:
    >>> from calc.models.presets import PRESETS, preset
    >>> PRESETS["llama3-8b"]["num_key_value_heads"]
    8
    >>> preset("gpt2-xl").param_count
    1557611200
"""

from __future__ import annotations

import difflib
from typing import Any

from calc.errors import CalcError
from calc.models.architecture import Architecture

__all__ = ["PRESETS", "PRESET_LABELS", "preset"]


def _gpt2(hidden: int, layers: int, heads: int, *, vocab: int = 50257, ctx: int = 1024, source: str) -> dict[str, Any]:
    """A GPT-2 ``config.json`` with the given shape (openai-community/gpt2's other fields)."""
    return {
        "_source": source,
        "activation_function": "gelu_new",
        "architectures": ["GPT2LMHeadModel"],
        "layer_norm_epsilon": 1e-05,
        "model_type": "gpt2",
        "n_ctx": ctx,
        "n_embd": hidden,
        "n_head": heads,
        "n_layer": layers,
        "n_positions": ctx,
        "vocab_size": vocab,
    }


def _llama(
    hidden: int, inter: int, layers: int, heads: int, kv: int, *, vocab: int, ctx: int, source: str, **extra: Any
) -> dict[str, Any]:
    """A Llama ``config.json`` (meta-llama/* on the Hugging Face Hub)."""
    return {
        "_source": source,
        "architectures": ["LlamaForCausalLM"],
        "hidden_act": "silu",
        "hidden_size": hidden,
        "intermediate_size": inter,
        "max_position_embeddings": ctx,
        "model_type": "llama",
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "num_key_value_heads": kv,
        "rms_norm_eps": 1e-05,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": vocab,
        **extra,
    }


_LLAMA32_ROPE = {
    "factor": 32.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3",
}
"""Llama 3.2's ``rope_scaling`` (meta-llama/Llama-3.2-1B and -3B config.json)."""


def _gpt_oss(layers: int, experts: int, *, source: str) -> dict[str, Any]:
    """A gpt-oss ``config.json`` (openai/gpt-oss-*; ``quantization_config`` left out): the two sizes differ only
    in depth and expert count; layers alternate sliding-window (128 tokens) and full attention."""
    return {
        "_source": source,
        "architectures": ["GptOssForCausalLM"],
        "attention_bias": True,
        "experts_per_token": 4,
        "head_dim": 64,
        "hidden_act": "silu",
        "hidden_size": 2880,
        "initial_context_length": 4096,
        "intermediate_size": 2880,
        "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)],
        "max_position_embeddings": 131072,
        "model_type": "gpt_oss",
        "num_attention_heads": 64,
        "num_experts_per_tok": 4,
        "num_hidden_layers": layers,
        "num_key_value_heads": 8,
        "num_local_experts": experts,
        "rms_norm_eps": 1e-05,
        "rope_scaling": {
            "beta_fast": 32.0,
            "beta_slow": 1.0,
            "factor": 32.0,
            "original_max_position_embeddings": 4096,
            "rope_type": "yarn",
            "truncate": False,
        },
        "rope_theta": 150000,
        "router_aux_loss_coef": 0.9,
        "sliding_window": 128,
        "swiglu_limit": 7.0,
        "tie_word_embeddings": False,
        "vocab_size": 201088,
    }


def _qwen2(
    hidden: int,
    inter: int,
    layers: int,
    heads: int,
    kv: int,
    *,
    vocab: int,
    ctx: int,
    tied: bool,
    eps: float,
    source: str,
) -> dict[str, Any]:
    """A Qwen2.5 ``config.json`` (Qwen/Qwen2.5-* on the Hugging Face Hub)."""
    return {
        "_source": source,
        "architectures": ["Qwen2ForCausalLM"],
        "hidden_act": "silu",
        "hidden_size": hidden,
        "intermediate_size": inter,
        "max_position_embeddings": ctx,
        "max_window_layers": layers,
        "model_type": "qwen2",
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "num_key_value_heads": kv,
        "rms_norm_eps": eps,
        "rope_theta": 1000000.0,
        "sliding_window": ctx,
        "tie_word_embeddings": tied,
        "torch_dtype": "bfloat16",
        "use_sliding_window": False,
        "vocab_size": vocab,
    }


_KORTHIKANTI = (
    "Korthikanti et al. 2022 (arXiv:2205.05198), Table 3: {heads} heads, hidden {hidden}, {layers} layers; "
    "GPT architecture, vocab 51200, sequence 2048 (Sec. 6)"
)
_NARAYANAN = (
    "Narayanan et al. 2021 (arXiv:2104.04473), Table 1 ({params}B row): {heads} heads, hidden {hidden}, "
    "{layers} layers; GPT architecture, vocab 51200, sequence 2048"
)

PRESETS: dict[str, dict[str, Any]] = {
    "gpt2": _gpt2(
        768, 12, 12, source="openai-community/gpt2 config.json; Radford et al. 2019, Table 2 (117M as printed)"
    ),
    "gpt2-medium": _gpt2(1024, 24, 16, source="openai-community/gpt2-medium config.json; Radford et al. 2019, Table 2"),
    "gpt2-large": _gpt2(1280, 36, 20, source="openai-community/gpt2-large config.json; Radford et al. 2019, Table 2"),
    "gpt2-xl": _gpt2(1600, 48, 25, source="openai-community/gpt2-xl config.json; Radford et al. 2019, Table 2"),
    "gpt3-175b": _gpt2(
        12288,
        96,
        96,
        ctx=2048,
        source="Brown et al. 2020 (arXiv:2005.14165), Table 2.1: 96 layers, d_model 12288, 96 heads of 128, "
        "n_ctx 2048, GPT-2 vocabulary (50257); alternating sparse attention has no extra weights",
    ),
    "llama2-7b": _llama(
        4096,
        11008,
        32,
        32,
        32,
        vocab=32000,
        ctx=4096,
        pretraining_tp=1,
        rope_scaling=None,
        source="meta-llama/Llama-2-7b-hf config.json; Touvron et al. 2023 (arXiv:2307.09288)",
    ),
    "llama2-13b": _llama(
        5120,
        13824,
        40,
        40,
        40,
        vocab=32000,
        ctx=4096,
        pretraining_tp=1,
        rope_scaling=None,
        source="meta-llama/Llama-2-13b-hf config.json; Touvron et al. 2023 (arXiv:2307.09288)",
    ),
    "llama2-70b": _llama(
        8192,
        28672,
        80,
        64,
        8,
        vocab=32000,
        ctx=4096,
        pretraining_tp=1,
        rope_scaling=None,
        source="meta-llama/Llama-2-70b-hf config.json; Touvron et al. 2023 (arXiv:2307.09288), GQA with 8 KV heads",
    ),
    "llama3-8b": _llama(
        4096,
        14336,
        32,
        32,
        8,
        vocab=128256,
        ctx=8192,
        attention_bias=False,
        rope_theta=500000.0,
        rope_scaling=None,
        source="meta-llama/Meta-Llama-3-8B config.json; Llama 3 (arXiv:2407.21783), Table 3",
    ),
    "llama3-70b": _llama(
        8192,
        28672,
        80,
        64,
        8,
        vocab=128256,
        ctx=8192,
        attention_bias=False,
        rope_theta=500000.0,
        rope_scaling=None,
        source="meta-llama/Meta-Llama-3-70B config.json; Llama 3 (arXiv:2407.21783), Table 3",
    ),
    "llama3.1-405b": _llama(
        16384,
        53248,
        126,
        128,
        8,
        vocab=128256,
        ctx=131072,
        attention_bias=False,
        mlp_bias=False,
        rope_theta=500000.0,
        rope_scaling={
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
        source="meta-llama/Llama-3.1-405B config.json; Llama 3 (arXiv:2407.21783), Table 3",
    ),
    "llama3.2-1b": _llama(
        2048,
        8192,
        16,
        32,
        8,
        vocab=128256,
        ctx=131072,
        attention_bias=False,
        head_dim=64,
        mlp_bias=False,
        rope_theta=500000.0,
        rope_scaling=_LLAMA32_ROPE,
        tie_word_embeddings=True,
        source="meta-llama/Llama-3.2-1B config.json; Llama 3.2 model card (1.23B parameters)",
    ),
    "llama3.2-3b": _llama(
        3072,
        8192,
        28,
        24,
        8,
        vocab=128256,
        ctx=131072,
        attention_bias=False,
        head_dim=128,
        mlp_bias=False,
        rope_theta=500000.0,
        rope_scaling=_LLAMA32_ROPE,
        tie_word_embeddings=True,
        source="meta-llama/Llama-3.2-3B config.json; Llama 3.2 model card (3.21B parameters)",
    ),
    "mistral-7b": {
        "_source": "mistralai/Mistral-7B-v0.1 config.json; Jiang et al. 2023 (arXiv:2310.06825), Table 1",
        "architectures": ["MistralForCausalLM"],
        "hidden_act": "silu",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "max_position_embeddings": 32768,
        "model_type": "mistral",
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "rms_norm_eps": 1e-05,
        "rope_theta": 10000.0,
        "sliding_window": 4096,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": 32000,
    },
    "mixtral-8x7b": {
        "_source": "mistralai/Mixtral-8x7B-v0.1 config.json; Jiang et al. 2024 (arXiv:2401.04088), Table 1",
        "architectures": ["MixtralForCausalLM"],
        "hidden_act": "silu",
        "hidden_size": 4096,
        "intermediate_size": 14336,
        "max_position_embeddings": 32768,
        "model_type": "mixtral",
        "num_attention_heads": 32,
        "num_experts_per_tok": 2,
        "num_hidden_layers": 32,
        "num_key_value_heads": 8,
        "num_local_experts": 8,
        "rms_norm_eps": 1e-05,
        "rope_theta": 1000000.0,
        "router_aux_loss_coef": 0.02,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": 32000,
    },
    "mixtral-8x22b": {
        "_source": "mistralai/Mixtral-8x22B-v0.1 config.json; Mistral AI, Mixtral 8x22B announcement "
        "(141B total, 39B active)",
        "architectures": ["MixtralForCausalLM"],
        "hidden_act": "silu",
        "hidden_size": 6144,
        "intermediate_size": 16384,
        "max_position_embeddings": 65536,
        "model_type": "mixtral",
        "num_attention_heads": 48,
        "num_experts_per_tok": 2,
        "num_hidden_layers": 56,
        "num_key_value_heads": 8,
        "num_local_experts": 8,
        "rms_norm_eps": 1e-05,
        "rope_theta": 1000000.0,
        "router_aux_loss_coef": 0.001,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": 32768,
    },
    "qwen2.5-0.5b": _qwen2(
        896,
        4864,
        24,
        14,
        2,
        vocab=151936,
        ctx=32768,
        tied=True,
        eps=1e-06,
        source="Qwen/Qwen2.5-0.5B config.json (tied embeddings)",
    ),
    "qwen2.5-7b": _qwen2(
        3584, 18944, 28, 28, 4, vocab=152064, ctx=131072, tied=False, eps=1e-06, source="Qwen/Qwen2.5-7B config.json"
    ),
    "qwen2.5-72b": _qwen2(
        8192, 29568, 80, 64, 8, vocab=152064, ctx=131072, tied=False, eps=1e-05, source="Qwen/Qwen2.5-72B config.json"
    ),
    "qwen3-8b": {
        "_source": "Qwen/Qwen3-8B config.json",
        "architectures": ["Qwen3ForCausalLM"],
        "attention_bias": False,
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "max_position_embeddings": 40960,
        "max_window_layers": 36,
        "model_type": "qwen3",
        "num_attention_heads": 32,
        "num_hidden_layers": 36,
        "num_key_value_heads": 8,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 1000000,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "use_sliding_window": False,
        "vocab_size": 151936,
    },
    "qwen3-30b-a3b": {
        "_source": "Qwen/Qwen3-30B-A3B config.json",
        "architectures": ["Qwen3MoeForCausalLM"],
        "attention_bias": False,
        "decoder_sparse_step": 1,
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 2048,
        "intermediate_size": 6144,
        "max_position_embeddings": 40960,
        "max_window_layers": 48,
        "mlp_only_layers": [],
        "model_type": "qwen3_moe",
        "moe_intermediate_size": 768,
        "norm_topk_prob": True,
        "num_attention_heads": 32,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "num_hidden_layers": 48,
        "num_key_value_heads": 4,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 1000000.0,
        "router_aux_loss_coef": 0.001,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "use_sliding_window": False,
        "vocab_size": 151936,
    },
    "qwen3-32b": {
        "_source": "Qwen/Qwen3-32B config.json; Qwen3 technical report (arXiv:2505.09388), Table 1",
        "architectures": ["Qwen3ForCausalLM"],
        "attention_bias": False,
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 5120,
        "intermediate_size": 25600,
        "max_position_embeddings": 40960,
        "max_window_layers": 64,
        "model_type": "qwen3",
        "num_attention_heads": 64,
        "num_hidden_layers": 64,
        "num_key_value_heads": 8,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 1000000,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "use_sliding_window": False,
        "vocab_size": 151936,
    },
    "qwen3-235b-a22b": {
        "_source": "Qwen/Qwen3-235B-A22B config.json; Qwen3 technical report (arXiv:2505.09388), Table 2 "
        "(235B total, 22B activated)",
        "architectures": ["Qwen3MoeForCausalLM"],
        "attention_bias": False,
        "decoder_sparse_step": 1,
        "head_dim": 128,
        "hidden_act": "silu",
        "hidden_size": 4096,
        "intermediate_size": 12288,
        "max_position_embeddings": 40960,
        "max_window_layers": 94,
        "mlp_only_layers": [],
        "model_type": "qwen3_moe",
        "moe_intermediate_size": 1536,
        "norm_topk_prob": True,
        "num_attention_heads": 64,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "num_hidden_layers": 94,
        "num_key_value_heads": 4,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 1000000.0,
        "router_aux_loss_coef": 0.001,
        "sliding_window": None,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "use_sliding_window": False,
        "vocab_size": 151936,
    },
    "gemma-7b": {
        "_source": "google/gemma-7b config.json (no tie_word_embeddings key: Gemma ties by default)",
        "architectures": ["GemmaForCausalLM"],
        "attention_bias": False,
        "head_dim": 256,
        "hidden_act": "gelu",
        "hidden_size": 3072,
        "intermediate_size": 24576,
        "max_position_embeddings": 8192,
        "model_type": "gemma",
        "num_attention_heads": 16,
        "num_hidden_layers": 28,
        "num_key_value_heads": 16,
        "rms_norm_eps": 1e-06,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "torch_dtype": "bfloat16",
        "vocab_size": 256000,
    },
    "gemma3-1b": {
        "_source": "google/gemma-3-1b-pt config.json; Gemma 3 technical report (arXiv:2503.19786), Table 1 "
        "(302M embedding + 698M non-embedding parameters)",
        "architectures": ["Gemma3ForCausalLM"],
        "attention_bias": False,
        "attn_logit_softcapping": None,
        "final_logit_softcapping": None,
        "head_dim": 256,
        "hidden_activation": "gelu_pytorch_tanh",
        "hidden_size": 1152,
        "intermediate_size": 6912,
        "max_position_embeddings": 32768,
        "model_type": "gemma3_text",
        "num_attention_heads": 4,
        "num_hidden_layers": 26,
        "num_key_value_heads": 1,
        "query_pre_attn_scalar": 256,
        "rms_norm_eps": 1e-06,
        "rope_local_base_freq": 10000,
        "rope_scaling": None,
        "rope_theta": 1000000,
        "sliding_window": 512,
        "sliding_window_pattern": 6,
        "torch_dtype": "bfloat16",
        "vocab_size": 262144,
    },
    "gemma3-27b": {
        "_source": "google/gemma-3-27b-pt config.json, its text_config (the language model; the 417M-parameter "
        "SigLIP vision encoder is not included); Gemma 3 technical report (arXiv:2503.19786), Table 1 "
        "(25,600M non-embedding parameters)",
        "architectures": ["Gemma3ForCausalLM"],
        "head_dim": 128,
        "hidden_size": 5376,
        "intermediate_size": 21504,
        "model_type": "gemma3_text",
        "num_attention_heads": 32,
        "num_hidden_layers": 62,
        "num_key_value_heads": 16,
        "query_pre_attn_scalar": 168,
        "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
        "sliding_window": 1024,
        "vocab_size": 262208,
    },
    "gpt-oss-20b": _gpt_oss(
        24,
        32,
        source="openai/gpt-oss-20b config.json; OpenAI, gpt-oss model card (2025), "
        "Table 1 (20.91B total, 3.61B active)",
    ),
    "gpt-oss-120b": _gpt_oss(
        36,
        128,
        source="openai/gpt-oss-120b config.json; OpenAI, gpt-oss model card (2025), "
        "Table 1 (116.83B total, 5.13B active)",
    ),
    "phi3-mini": {
        "_source": "microsoft/Phi-3-mini-4k-instruct config.json",
        "architectures": ["Phi3ForCausalLM"],
        "attention_bias": False,
        "hidden_act": "silu",
        "hidden_size": 3072,
        "intermediate_size": 8192,
        "max_position_embeddings": 4096,
        "model_type": "phi3",
        "num_attention_heads": 32,
        "num_hidden_layers": 32,
        "num_key_value_heads": 32,
        "original_max_position_embeddings": 4096,
        "rms_norm_eps": 1e-05,
        "rope_scaling": None,
        "rope_theta": 10000.0,
        "sliding_window": 2047,
        "tie_word_embeddings": False,
        "torch_dtype": "bfloat16",
        "vocab_size": 32064,
    },
    "deepseek-v3": {
        "_source": "deepseek-ai/DeepSeek-V3 config.json (quantization_config and auto_map left out); "
        "DeepSeek-V3 technical report (arXiv:2412.19437), Sec. 4.2",
        "architectures": ["DeepseekV3ForCausalLM"],
        "attention_bias": False,
        "first_k_dense_replace": 3,
        "hidden_act": "silu",
        "hidden_size": 7168,
        "intermediate_size": 18432,
        "kv_lora_rank": 512,
        "max_position_embeddings": 163840,
        "model_type": "deepseek_v3",
        "moe_intermediate_size": 2048,
        "moe_layer_freq": 1,
        "n_group": 8,
        "n_routed_experts": 256,
        "n_shared_experts": 1,
        "norm_topk_prob": True,
        "num_attention_heads": 128,
        "num_experts_per_tok": 8,
        "num_hidden_layers": 61,
        "num_key_value_heads": 128,
        "num_nextn_predict_layers": 1,
        "q_lora_rank": 1536,
        "qk_nope_head_dim": 128,
        "qk_rope_head_dim": 64,
        "rms_norm_eps": 1e-06,
        "rope_scaling": {
            "beta_fast": 32,
            "beta_slow": 1,
            "factor": 40,
            "mscale": 1.0,
            "mscale_all_dim": 1.0,
            "original_max_position_embeddings": 4096,
            "type": "yarn",
        },
        "rope_theta": 10000,
        "routed_scaling_factor": 2.5,
        "scoring_func": "sigmoid",
        "tie_word_embeddings": False,
        "topk_group": 4,
        "topk_method": "noaux_tc",
        "torch_dtype": "bfloat16",
        "v_head_dim": 128,
        "vocab_size": 129280,
    },
    "megatron-22b": _gpt2(
        6144, 48, 64, vocab=51200, ctx=2048, source=_KORTHIKANTI.format(heads=64, hidden=6144, layers=48)
    ),
    "megatron-175b": _gpt2(
        12288, 96, 96, vocab=51200, ctx=2048, source=_KORTHIKANTI.format(heads=96, hidden=12288, layers=96)
    ),
    "megatron-530b": _gpt2(
        20480, 105, 128, vocab=51200, ctx=2048, source=_KORTHIKANTI.format(heads=128, hidden=20480, layers=105)
    ),
    "megatron-1t": _gpt2(
        25600, 128, 160, vocab=51200, ctx=2048, source=_KORTHIKANTI.format(heads=160, hidden=25600, layers=128)
    ),
}
"""Model configurations by stable slug, as Hugging Face ``config.json`` dicts with a ``_source`` key."""

_NARAYANAN_ROWS: tuple[tuple[str, int, int, int], ...] = (
    ("1.7", 24, 2304, 24),
    ("3.6", 32, 3072, 30),
    ("7.5", 32, 4096, 36),
    ("18.4", 48, 6144, 40),
    ("39.1", 64, 8192, 48),
    ("76.1", 80, 10240, 60),
    ("145.6", 96, 12288, 80),
    ("310.1", 128, 16384, 96),
    ("529.6", 128, 20480, 105),
    ("1t", 160, 25600, 128),
)
for _params, _heads, _hidden, _layers in _NARAYANAN_ROWS:
    PRESETS[f"narayanan-{_params if _params == '1t' else _params + 'b'}"] = _gpt2(
        _hidden,
        _layers,
        _heads,
        vocab=51200,
        ctx=2048,
        source=_NARAYANAN.format(
            params="1008.0" if _params == "1t" else _params, heads=_heads, hidden=_hidden, layers=_layers
        ),
    )

PRESET_LABELS: dict[str, str] = {
    "gpt2": "GPT-2 (124M)",
    "gpt2-medium": "GPT-2 Medium (355M)",
    "gpt2-large": "GPT-2 Large (774M)",
    "gpt2-xl": "GPT-2 XL (1.5B)",
    "gpt3-175b": "GPT-3 175B",
    "llama2-7b": "Llama 2 7B",
    "llama2-13b": "Llama 2 13B",
    "llama2-70b": "Llama 2 70B",
    "llama3-8b": "Llama 3 8B",
    "llama3-70b": "Llama 3 70B",
    "llama3.1-405b": "Llama 3.1 405B",
    "llama3.2-1b": "Llama 3.2 1B",
    "llama3.2-3b": "Llama 3.2 3B",
    "mistral-7b": "Mistral 7B (v0.1)",
    "mixtral-8x7b": "Mixtral 8x7B",
    "mixtral-8x22b": "Mixtral 8x22B",
    "qwen2.5-0.5b": "Qwen2.5 0.5B",
    "qwen2.5-7b": "Qwen2.5 7B",
    "qwen2.5-72b": "Qwen2.5 72B",
    "qwen3-8b": "Qwen3 8B",
    "qwen3-30b-a3b": "Qwen3 30B-A3B",
    "qwen3-32b": "Qwen3 32B",
    "qwen3-235b-a22b": "Qwen3 235B-A22B",
    "gemma-7b": "Gemma 7B",
    "gemma3-1b": "Gemma 3 1B",
    "gemma3-27b": "Gemma 3 27B (language model)",
    "gpt-oss-20b": "gpt-oss-20b",
    "gpt-oss-120b": "gpt-oss-120b",
    "phi3-mini": "Phi-3 mini (3.8B)",
    "deepseek-v3": "DeepSeek-V3 (671B)",
    "megatron-22b": "Megatron 22B (Korthikanti et al.)",
    "megatron-175b": "Megatron 175B / GPT-3 shape (Korthikanti et al.)",
    "megatron-530b": "Megatron 530B / MT-NLG shape (Korthikanti et al.)",
    "megatron-1t": "Megatron 1T (Korthikanti et al.)",
    **{
        f"narayanan-{p if p == '1t' else p + 'b'}": (
            f"Megatron {'1T' if p == '1t' else p + 'B'} (Narayanan et al. Table 1)"
        )
        for p, *_ in _NARAYANAN_ROWS
    },
}
"""Display labels by preset slug (every key of [`PRESETS`][calc.models.presets.PRESETS] has one)."""


def preset(name: str) -> Architecture:
    """The [`Architecture`][calc.models.architecture.Architecture] of a named preset.

    Args:
        name: A key of [`PRESETS`][calc.models.presets.PRESETS] (``"llama3-8b"``, ``"deepseek-v3"``...).

    Returns:
        The architecture, named by its slug.

    Raises:
        CalcError: For an unknown name (code ``unknown-name``), listing the known ones.

    Examples:
        >>> preset("llama3.1-405b").param_count
        405853388800
        >>> preset("llama3-7b")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: preset must be one of the ... presets; the closest are llama3-70b, ... (got 'llama3-7b')
        >>> preset("bert")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: preset must be one of the ... presets (deepseek-v3, gemma-7b, ..., qwen3-8b) (got 'bert')
    """
    try:
        config = PRESETS[name]
    except (KeyError, TypeError):
        raise CalcError("preset", _unknown_rule(name), name, code="unknown-name") from None
    return Architecture.from_hf_config(config, name=name)


def _unknown_rule(name: object) -> str:
    """The rule an unknown preset name broke: the closest names when there are some, else the first and last."""
    known = sorted(PRESETS)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6) if isinstance(name, str) else []
    if close:
        return f"must be one of the {len(known)} presets; the closest are {', '.join(close)}"
    return f"must be one of the {len(known)} presets ({known[0]}, {known[1]}, ..., {known[-1]})"
