"""The preset configurations themselves: pure data, read by [`calc.models.presets`][calc.models.presets].

The published checkpoints' ``config.json`` keys (built with ``_preset_builders`` where a family shares its
keys), then the paper-only GPT shapes of ``_preset_papers``, in menu order. Kept apart from the lookup so the
data can be read (and diffed) on its own; every entry is described under
[`PRESETS`][calc.models.presets.PRESETS], which is the name to import.

Examples:
    >>> PRESETS["mistral-7b"]["sliding_window"], list(PRESETS)[-1]
    (4096, 'narayanan-1t')
"""

from __future__ import annotations

from typing import Any

from calc.models._preset_builders import _decoder, _gpt2, _gpt_oss, _llama2, _llama3, _llama32, _mixtral, _qwen2, _qwen3
from calc.models._preset_papers import PAPER_PRESETS

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
    "llama2-7b": _llama2((4096, 11008, 32, 32, 32), "7b"),
    "llama2-13b": _llama2((5120, 13824, 40, 40, 40), "13b"),
    "llama2-70b": _llama2((8192, 28672, 80, 64, 8), "70b"),
    "llama3-8b": _llama3((4096, 14336, 32, 32, 8), "Meta-Llama-3-8B", ctx=8192),
    "llama3-70b": _llama3((8192, 28672, 80, 64, 8), "Meta-Llama-3-70B", ctx=8192),
    "llama3.1-405b": _llama3(
        (16384, 53248, 126, 128, 8),
        "Llama-3.1-405B",
        ctx=131072,
        mlp_bias=False,
        rope_scaling={
            "factor": 8.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
            "rope_type": "llama3",
        },
    ),
    "llama3.2-1b": _llama32((2048, 8192, 16, 32, 8), "1B", head_dim=64, params="1.23B"),
    "llama3.2-3b": _llama32((3072, 8192, 28, 24, 8), "3B", head_dim=128, params="3.21B"),
    "mistral-7b": _decoder(
        "Mistral",
        "mistral",
        (4096, 14336, 32, 32, 8),
        vocab=32000,
        ctx=32768,
        source="mistralai/Mistral-7B-v0.1 config.json; Jiang et al. 2023 (arXiv:2310.06825), Table 1",
        rope_theta=10000.0,
        sliding_window=4096,
    ),
    "mixtral-8x7b": _mixtral(
        (4096, 14336, 32, 32, 8),
        vocab=32000,
        ctx=32768,
        aux_loss=0.02,
        source="mistralai/Mixtral-8x7B-v0.1 config.json; Jiang et al. 2024 (arXiv:2401.04088), Table 1",
    ),
    "mixtral-8x22b": _mixtral(
        (6144, 16384, 56, 48, 8),
        vocab=32768,
        ctx=65536,
        aux_loss=0.001,
        source="mistralai/Mixtral-8x22B-v0.1 config.json; Mistral AI, Mixtral 8x22B announcement "
        "(141B total, 39B active)",
    ),
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
    "qwen3-8b": _qwen3((4096, 12288, 36, 32, 8), "8B"),
    "qwen3-30b-a3b": _qwen3((2048, 6144, 48, 32, 4), "30B-A3B", moe_inter=768),
    "qwen3-32b": _qwen3((5120, 25600, 64, 64, 8), "32B", table="Table 1"),
    "qwen3-235b-a22b": _qwen3(
        (4096, 12288, 94, 64, 4), "235B-A22B", moe_inter=1536, table="Table 2 (235B total, 22B activated)"
    ),
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
    **PAPER_PRESETS,
}
"""Model configurations by stable slug, as Hugging Face ``config.json`` dicts with a ``_source`` key."""
