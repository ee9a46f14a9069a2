"""The ``config.json`` of each model family from its shape: what the presets' entries are built with.

Each builder writes the keys its family's published ``config.json`` carries (the Hub repository named in each
preset's ``_source``), so a preset differs from its family only where its shape does.

Examples:
    >>> _llama2((4096, 11008, 32, 32, 32), "7b")["architectures"]
    ['LlamaForCausalLM']
    >>> list(_qwen3((4096, 12288, 36, 32, 8), "8B"))[:4]
    ['_source', 'architectures', 'attention_bias', 'head_dim']
"""

from __future__ import annotations

from typing import Any

_Shape = tuple[int, int, int, int, int]
"""A Llama-style shape: ``(hidden, intermediate, layers, heads, kv_heads)``."""


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


def _decoder(
    family: str,
    model_type: str,
    shape: _Shape,
    *,
    vocab: int,
    ctx: int,
    source: str,
    eps: float = 1e-05,
    tied: bool = False,
    **keys: Any,
) -> dict[str, Any]:
    """The keys every Llama-style ``config.json`` carries (SiLU, RMSNorm, bf16) with ``keys`` added: after
    ``_source``, in alphabetical order, as the Hub files print them."""
    hidden, inter, layers, heads, kv = shape
    base = {
        "architectures": [f"{family}ForCausalLM"],
        "hidden_act": "silu",
        "hidden_size": hidden,
        "intermediate_size": inter,
        "max_position_embeddings": ctx,
        "model_type": model_type,
        "num_attention_heads": heads,
        "num_hidden_layers": layers,
        "num_key_value_heads": kv,
        "rms_norm_eps": eps,
        "tie_word_embeddings": tied,
        "torch_dtype": "bfloat16",
        "vocab_size": vocab,
    }
    return {"_source": source, **dict(sorted({**base, **keys}.items()))}


def _llama(shape: _Shape, *, vocab: int, ctx: int, source: str, **extra: Any) -> dict[str, Any]:
    """A Llama ``config.json`` (meta-llama/* on the Hugging Face Hub): the common keys, then ``extra`` in order."""
    return {**_decoder("Llama", "llama", shape, vocab=vocab, ctx=ctx, source=source), **extra}


def _llama2(shape: _Shape, size: str) -> dict[str, Any]:
    """A Llama 2 ``config.json`` (meta-llama/Llama-2-{size}-hf): vocabulary 32,000, 4,096 positions."""
    gqa = f", GQA with {shape[4]} KV heads" if shape[4] < shape[3] else ""
    source = f"meta-llama/Llama-2-{size}-hf config.json; Touvron et al. 2023 (arXiv:2307.09288){gqa}"
    return _llama(shape, vocab=32000, ctx=4096, source=source, pretraining_tp=1, rope_scaling=None)


def _llama3(
    shape: _Shape,
    repo: str,
    *,
    ctx: int,
    cite: str = "Llama 3 (arXiv:2407.21783), Table 3",
    rope_scaling: Any = None,
    **extra: Any,
) -> dict[str, Any]:
    """A Llama 3 / 3.1 / 3.2 ``config.json`` (meta-llama/{repo}): vocabulary 128,256, no attention bias, RoPE
    base 500,000; ``extra`` (in order) before the RoPE keys, as the Hub files print them."""
    return _llama(
        shape,
        vocab=128256,
        ctx=ctx,
        source=f"meta-llama/{repo} config.json; {cite}",
        attention_bias=False,
        **extra,
        rope_theta=500000.0,
        rope_scaling=rope_scaling,
    )


_LLAMA32_ROPE = {
    "factor": 32.0,
    "high_freq_factor": 4.0,
    "low_freq_factor": 1.0,
    "original_max_position_embeddings": 8192,
    "rope_type": "llama3",
}
"""Llama 3.2's ``rope_scaling`` (meta-llama/Llama-3.2-1B and -3B config.json)."""


def _llama32(shape: _Shape, size: str, *, head_dim: int, params: str) -> dict[str, Any]:
    """A Llama 3.2 ``config.json`` (meta-llama/Llama-3.2-{size}): 131,072 positions, tied embeddings."""
    return _llama3(
        shape,
        f"Llama-3.2-{size}",
        ctx=131072,
        cite=f"Llama 3.2 model card ({params} parameters)",
        head_dim=head_dim,
        mlp_bias=False,
        rope_scaling=_LLAMA32_ROPE,
        tie_word_embeddings=True,
    )


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
    shape = (hidden, inter, layers, heads, kv)
    window = {"max_window_layers": layers, "sliding_window": ctx, "use_sliding_window": False}
    return _decoder(
        "Qwen2", "qwen2", shape, vocab=vocab, ctx=ctx, source=source, eps=eps, tied=tied, rope_theta=1000000.0, **window
    )


def _qwen3(shape: _Shape, size: str, *, moe_inter: int = 0, table: str = "") -> dict[str, Any]:
    """A Qwen3 ``config.json`` (Qwen/Qwen3-{size}): dense, or with ``moe_inter`` the MoE models' (128 experts,
    8 per token, ``Qwen3MoeForCausalLM``), the ``table`` of the Qwen3 technical report cited when given. The MoE
    files write ``rope_theta`` as a float."""
    report = f"; Qwen3 technical report (arXiv:2505.09388), {table}" if table else ""
    moe = {
        "decoder_sparse_step": 1,
        "mlp_only_layers": [],
        "moe_intermediate_size": moe_inter,
        "norm_topk_prob": True,
        "num_experts": 128,
        "num_experts_per_tok": 8,
        "router_aux_loss_coef": 0.001,
    }
    return _decoder(
        "Qwen3Moe" if moe_inter else "Qwen3",
        "qwen3_moe" if moe_inter else "qwen3",
        shape,
        vocab=151936,
        ctx=40960,
        source=f"Qwen/Qwen3-{size} config.json{report}",
        eps=1e-06,
        attention_bias=False,
        head_dim=128,
        max_window_layers=shape[2],
        rope_scaling=None,
        rope_theta=1000000.0 if moe_inter else 1000000,
        sliding_window=None,
        use_sliding_window=False,
        **(moe if moe_inter else {}),
    )


def _mixtral(shape: _Shape, *, vocab: int, ctx: int, aux_loss: float, source: str) -> dict[str, Any]:
    """A Mixtral ``config.json`` (mistralai/Mixtral-*): Mistral's keys with 8 experts, 2 per token."""
    experts = {"num_experts_per_tok": 2, "num_local_experts": 8, "router_aux_loss_coef": aux_loss}
    return _decoder(
        "Mixtral",
        "mixtral",
        shape,
        vocab=vocab,
        ctx=ctx,
        source=source,
        rope_theta=1000000.0,
        sliding_window=None,
        **experts,
    )
