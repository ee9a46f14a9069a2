"""The per-model readers of a ``config.json``: typed keys, and the defaults ``transformers`` applies.

One function per Hugging Face ``model_type`` in [`HF_MODEL_TYPES`][calc.models.hf_config.HF_MODEL_TYPES]
turns a parsed config into the keyword arguments of [`Architecture`][calc.models.architecture.Architecture],
reproducing the defaults of that model's config class in ``transformers`` 5.24 (listed under
[`Architecture.from_hf_config`][calc.models.architecture.Architecture.from_hf_config]); sources for the
newer families are in each reader's docstring. [`read_hf_config`][calc.models.hf_config.read_hf_config]
is the entry point; nothing else should call these readers.

Examples:
    >>> _READERS["llama"](_HFReader({"vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
    ...     "num_hidden_layers": 32, "num_attention_heads": 32}, "llama"))["num_kv_heads"]
    32
"""

from __future__ import annotations

from typing import Any

from calc.errors import CalcError

MAX_CONFIG_INT = 1 << 24
"""The largest value a shape key of a pasted config may take (16,777,216), except the layer count.

Far above every real model (hidden sizes reach 16,384 in Llama 3.1 405B, vocabularies 262,144 in
Gemma 3, context lengths 10,485,760 in Llama 4 Scout), so ``1e300`` in ``hidden_size`` is refused as
a typo instead of being multiplied out."""

_REQUIRED = object()
_MAX_LAYERS = 100_000  # far above any real model; keeps per-layer lists small for pasted configs


class _HFReader:
    """Typed access to a config.json dict, with the model class's defaults and clear errors."""

    def __init__(self, config: dict[str, Any], model_type: str) -> None:
        self.config = config
        self.model_type = model_type

    def _raw(self, keys: tuple[str, ...]) -> tuple[str, Any]:
        for key in keys:
            if key in self.config:
                return key, self.config[key]
        return keys[0], _REQUIRED

    def get_int(self, *keys: str, default: Any = _REQUIRED, minimum: int = 1, maximum: int = MAX_CONFIG_INT) -> Any:
        """The first of ``keys`` present, as an int; ``default`` when absent or null (``_REQUIRED``: error).

        At most [`MAX_CONFIG_INT`][calc.models.hf_config.MAX_CONFIG_INT] unless ``maximum`` says otherwise.
        """
        key, value = self._raw(keys)
        if value is _REQUIRED or value is None:
            if default is _REQUIRED:
                raise CalcError(key, f"is required in a {self.model_type} config.json", code="missing-field")
            return default
        if isinstance(value, float) and value.is_integer() and abs(value) <= maximum:
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < minimum:
            raise CalcError(key, f"must be a whole number from {minimum} to {maximum:,}", value)
        if isinstance(value, float) or value > maximum:
            raise CalcError(key, f"must be a whole number from {minimum} to {maximum:,}", value)
        return value

    def get_bool(self, key: str, default: bool) -> bool:
        """``key`` as a bool; ``default`` when absent or null."""
        value = self.config.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise CalcError(key, "must be true or false", value)
        return value

    def get_str(self, *keys: str, default: str) -> str:
        """The first of ``keys`` present, as a string; ``default`` when absent or null."""
        _, value = self._raw(keys)
        return default if value is _REQUIRED or value is None else str(value)

    def dropout(self, *keys: str, default: float) -> bool:
        """Whether any of the dropout probabilities ``keys`` is above 0 (``default`` for an absent or null key).

        Each must be a number from 0 to 1, as ``torch.nn.Dropout`` requires.
        """
        on = False
        for key in keys:
            value = self.config.get(key)
            if value is None:
                value = default
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
                raise CalcError(key, "must be a dropout probability from 0 to 1", value)
            on = on or value > 0
        return on

    def has(self, key: str) -> bool:
        return key in self.config

    def sliding_window(self, *, gate: str | None = None, default: int = 0) -> int:
        """The attention window: ``default`` when absent, 0 when null or switched off by ``gate``."""
        if gate is not None and not self.get_bool(gate, False):
            return 0
        if "sliding_window" not in self.config:
            return default
        return self.get_int("sliding_window", default=0, minimum=0)


def _kv_heads(r: _HFReader, heads: int, class_default: int | None) -> int:
    """``num_key_value_heads``: absent -> the config class default (or heads), null -> heads."""
    if not r.has("num_key_value_heads"):
        if class_default is None:
            return heads
        if heads % class_default:
            raise CalcError(
                "num_key_value_heads",
                f"is required here: {r.model_type}'s default ({class_default}) does not divide "
                f"num_attention_heads ({heads})",
                code="missing-field",
            )
        return class_default
    return r.get_int("num_key_value_heads", default=heads)


def _common(
    r: _HFReader,
    *,
    kv_default: int | None,
    head_dim_default: int | None,
    tie_default: bool,
    max_pos_default: int,
    act_default: str = "silu",
) -> dict[str, Any]:
    """Fields shared by the RoPE / RMSNorm / gated-MLP families."""
    hidden = r.get_int("hidden_size")
    heads = r.get_int("num_attention_heads")
    if r.has("head_dim") and r.config["head_dim"] is not None:
        head_dim = r.get_int("head_dim")
    elif head_dim_default is not None and not r.has("head_dim"):
        head_dim = head_dim_default
    else:
        head_dim = hidden // heads
        if head_dim < 1:
            raise CalcError("num_attention_heads", f"must not exceed hidden_size ({hidden})", heads)
    return {
        "vocab_size": r.get_int("vocab_size"),
        "hidden_size": hidden,
        "num_layers": r.get_int("num_hidden_layers", maximum=_MAX_LAYERS),
        "num_heads": heads,
        "num_kv_heads": _kv_heads(r, heads, kv_default),
        "head_dim": head_dim,
        "intermediate_size": r.get_int("intermediate_size"),
        "mlp": "swiglu",
        "norm": "rmsnorm",
        "position": "rope",
        "max_position_embeddings": r.get_int("max_position_embeddings", default=max_pos_default),
        "tied_embeddings": r.get_bool("tie_word_embeddings", tie_default),
        "hidden_act": r.get_str("hidden_act", default=act_default),
        "dropout": r.dropout("attention_dropout", default=0.0),
    }


def _read_gpt2(r: _HFReader) -> dict[str, Any]:
    hidden = r.get_int("n_embd", "hidden_size")
    heads = r.get_int("n_head", "num_attention_heads")
    if hidden % heads:
        raise CalcError("n_head", f"must divide n_embd ({hidden})", heads, code="not-divisible")
    return {
        "vocab_size": r.get_int("vocab_size"),
        "hidden_size": hidden,
        "num_layers": r.get_int("n_layer", "num_hidden_layers", maximum=_MAX_LAYERS),
        "num_heads": heads,
        "num_kv_heads": heads,
        "head_dim": hidden // heads,
        "intermediate_size": r.get_int("n_inner", default=4 * hidden),
        "mlp": "gelu",
        "norm": "layernorm",
        "position": "learned",
        "max_position_embeddings": r.get_int("n_positions", "max_position_embeddings", default=1024),
        "tied_embeddings": r.get_bool("tie_word_embeddings", True),
        "qkv_bias": True,
        "attn_out_bias": True,
        "mlp_bias": True,
        "hidden_act": r.get_str("activation_function", default="gelu_new"),
        "dropout": r.dropout("attn_pdrop", "resid_pdrop", "embd_pdrop", default=0.1),
    }


def _heads_divide_hidden(out: dict[str, Any], model_type: str) -> None:
    """Refuse a config whose heads do not divide its width, as the model types that check it do."""
    if out["hidden_size"] % out["num_heads"]:
        raise CalcError(
            "num_attention_heads",
            f"must divide hidden_size ({out['hidden_size']}) in a {model_type} config",
            out["num_heads"],
            code="not-divisible",
        )


def _attention_bias(r: _HFReader, default: bool) -> dict[str, bool]:
    """``attention_bias``: one switch for the q/k/v projections' bias and the output projection's."""
    bias = r.get_bool("attention_bias", default)
    return {"qkv_bias": bias, "attn_out_bias": bias}


def _read_llama(r: _HFReader) -> dict[str, Any]:
    out = _common(r, kv_default=None, head_dim_default=None, tie_default=False, max_pos_default=2048)
    _heads_divide_hidden(out, "llama")  # LlamaConfig.validate_architecture refuses it too
    out.update(**_attention_bias(r, False), mlp_bias=r.get_bool("mlp_bias", False))
    return out


def _read_mistral(r: _HFReader) -> dict[str, Any]:
    out = _common(r, kv_default=8, head_dim_default=None, tie_default=False, max_pos_default=131072)
    out["sliding_window"] = r.sliding_window(default=4096)
    return out


def _read_mixtral(r: _HFReader) -> dict[str, Any]:
    out = _common(r, kv_default=8, head_dim_default=None, tie_default=False, max_pos_default=131072)
    experts = r.get_int("num_local_experts", "num_experts")
    out.update(
        num_experts=experts,
        experts_per_token=r.get_int("num_experts_per_tok", default=2),
        moe_intermediate_size=out["intermediate_size"],
        sliding_window=r.sliding_window(),
    )
    return out


def _read_qwen2(r: _HFReader) -> dict[str, Any]:
    out = _common(r, kv_default=32, head_dim_default=None, tie_default=False, max_pos_default=32768)
    out.update(qkv_bias=True, sliding_window=r.sliding_window(gate="use_sliding_window", default=4096))
    return out


def _read_qwen3(r: _HFReader) -> dict[str, Any]:
    out = _common(r, kv_default=32, head_dim_default=128, tie_default=False, max_pos_default=32768)
    out.update(
        **_attention_bias(r, False),
        qk_norm=True,
        sliding_window=r.sliding_window(gate="use_sliding_window", default=4096),
    )
    return out


def _read_qwen3_moe(r: _HFReader) -> dict[str, Any]:
    out = _common(r, kv_default=4, head_dim_default=None, tie_default=False, max_pos_default=32768)
    bias = _attention_bias(r, False)
    experts = r.get_int("num_experts", "num_local_experts", minimum=0)
    layers = out["num_layers"]
    step = r.get_int("decoder_sparse_step", default=1)
    listed = r.config.get("mlp_only_layers") or []
    if not isinstance(listed, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in listed):
        raise CalcError("mlp_only_layers", "must be a list of layer indices", listed)
    dense = sorted({i for i in listed if 0 <= i < layers} | {i for i in range(layers) if (i + 1) % step})
    # (num_hidden_layers is capped, so this list stays small.)
    out.update(
        **bias,
        qk_norm=True,
        sliding_window=r.sliding_window(gate="use_sliding_window", default=4096),
    )
    if experts:
        out.update(
            num_experts=experts,
            experts_per_token=r.get_int("num_experts_per_tok", default=8),
            moe_intermediate_size=r.get_int("moe_intermediate_size"),
            mlp_only_layers=tuple(dense),
        )
    return out


def _read_gemma(r: _HFReader) -> dict[str, Any]:
    out = _common(
        r, kv_default=16, head_dim_default=256, tie_default=True, max_pos_default=8192, act_default="gelu_pytorch_tanh"
    )
    out.update(_attention_bias(r, False))
    return out


def _global_layers(r: _HFReader, layers: int, pattern: int) -> int:
    """Layers of full attention among sliding-window ones: ``layer_types`` when given, else every
    ``pattern``-th layer (layer i is global when ``(i + 1) % pattern == 0``, as the config classes default)."""
    types = r.config.get("layer_types")
    if types is None:
        return layers // pattern
    if not isinstance(types, list) or len(types) != layers or any(not isinstance(t, str) for t in types):
        raise CalcError("layer_types", f"must list one attention type per layer ({layers})", types)
    return sum(1 for t in types if t == "full_attention")


def _read_gemma3_text(r: _HFReader) -> dict[str, Any]:
    """Gemma 3's language model (``Gemma3TextConfig``; Gemma Team 2025, arXiv:2503.19786, Sec. 2).

    GQA with per-head q/k RMSNorm, four RMSNorms per layer (pre- and post-norm around attention and the
    MLP), a GeGLU MLP and a tied embedding; local sliding-window layers cap the KV cache, not the weights.
    """
    out = _common(
        r,
        kv_default=4,
        head_dim_default=256,
        tie_default=True,
        max_pos_default=131072,
        act_default="gelu_pytorch_tanh",
    )
    _heads_divide_hidden(out, "gemma3_text")  # Gemma3TextConfig.validate_architecture refuses it too
    out["hidden_act"] = r.get_str("hidden_activation", "hidden_act", default="gelu_pytorch_tanh")
    out.update(
        **_attention_bias(r, False),
        qk_norm=True,
        sandwich_norm=True,
        sliding_window=r.sliding_window(default=4096),
    )
    if out["sliding_window"]:
        pattern = r.get_int("sliding_window_pattern", default=6)
        out["global_attention_layers"] = _global_layers(r, out["num_layers"], pattern)
    return out


def _read_gpt_oss(r: _HFReader) -> dict[str, Any]:
    """OpenAI's gpt-oss (``GptOssConfig``; OpenAI 2025, "gpt-oss-120b & gpt-oss-20b Model Card", Sec. 2).

    Every layer is MoE: a biased router over ``num_local_experts`` experts of width ``intermediate_size``,
    each with biased gate/up and down projections; attention has biases and one learned sink per head.
    """
    out = _common(r, kv_default=8, head_dim_default=64, tie_default=False, max_pos_default=131072)
    out.update(
        **_attention_bias(r, True),
        attention_sinks=True,
        num_experts=r.get_int("num_local_experts", "num_experts", default=128),
        experts_per_token=r.get_int("num_experts_per_tok", "experts_per_token", default=4),
        moe_intermediate_size=out["intermediate_size"],
        router_bias=True,
        expert_bias=True,
        sliding_window=r.sliding_window(default=128),
    )
    if out["sliding_window"]:
        out["global_attention_layers"] = _global_layers(r, out["num_layers"], 2)
    return out


def _read_phi3(r: _HFReader) -> dict[str, Any]:
    out = _common(r, kv_default=None, head_dim_default=None, tie_default=False, max_pos_default=4096)
    out["sliding_window"] = r.sliding_window()
    out["dropout"] = r.dropout("attention_dropout", "resid_pdrop", "embd_pdrop", default=0.0)
    return out


def _read_deepseek_v3(r: _HFReader) -> dict[str, Any]:
    hidden = r.get_int("hidden_size")
    heads = r.get_int("num_attention_heads")
    nope = r.get_int("qk_nope_head_dim", minimum=0)
    rope = r.get_int("qk_rope_head_dim", minimum=0)
    if nope + rope < 1:
        raise CalcError("qk_rope_head_dim", "plus qk_nope_head_dim must be at least 1", rope)
    bias = _attention_bias(r, False)
    experts = r.get_int("n_routed_experts", "num_local_experts")
    out: dict[str, Any] = {
        "vocab_size": r.get_int("vocab_size"),
        "hidden_size": hidden,
        "num_layers": r.get_int("num_hidden_layers", maximum=_MAX_LAYERS),
        "num_heads": heads,
        "num_kv_heads": heads,
        "head_dim": nope + rope,
        "intermediate_size": r.get_int("intermediate_size"),
        "max_position_embeddings": r.get_int("max_position_embeddings", default=4096),
        "tied_embeddings": r.get_bool("tie_word_embeddings", False),
        **bias,
        "q_lora_rank": r.get_int("q_lora_rank", default=0) if r.has("q_lora_rank") else 1536,
        "kv_lora_rank": r.get_int("kv_lora_rank"),
        "qk_rope_head_dim": rope,
        "qk_nope_head_dim": nope,
        "v_head_dim": r.get_int("v_head_dim"),
        "hidden_act": r.get_str("hidden_act", default="silu"),
        "dropout": r.dropout("attention_dropout", default=0.0),
    }
    out.update(
        num_experts=experts,
        experts_per_token=r.get_int("num_experts_per_tok", default=8),
        num_shared_experts=r.get_int("n_shared_experts", default=1, minimum=0),
        moe_intermediate_size=r.get_int("moe_intermediate_size"),
        first_k_dense=r.get_int("first_k_dense_replace", default=3, minimum=0),
    )
    return out


_READERS = {
    "deepseek_v3": _read_deepseek_v3,
    "gemma": _read_gemma,
    "gemma3_text": _read_gemma3_text,
    "gpt2": _read_gpt2,
    "gpt_oss": _read_gpt_oss,
    "llama": _read_llama,
    "mistral": _read_mistral,
    "mixtral": _read_mixtral,
    "phi3": _read_phi3,
    "qwen2": _read_qwen2,
    "qwen3": _read_qwen3,
    "qwen3_moe": _read_qwen3_moe,
}
