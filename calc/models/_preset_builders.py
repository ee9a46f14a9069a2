"""The ``config.json`` of each model family from its shape: what the presets' entries are built with.

Each builder writes the keys its family's published ``config.json`` carries (the Hub repository named in each
preset's ``_source``), so a preset differs from its family only where its shape does.

Examples:
    >>> _llama(4096, 11008, 32, 32, 32, vocab=32000, ctx=4096, source="x")["architectures"]
    ['LlamaForCausalLM']
"""

from __future__ import annotations

from typing import Any


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
