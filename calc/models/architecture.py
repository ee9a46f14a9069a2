"""Decoder-only transformer shapes and their exact parameter counts.

One frozen [`Architecture`][calc.models.architecture.Architecture] describes the
shapes every other calculator needs (hidden size, layers, heads, FFN size,
experts, latent-attention ranks) and counts parameters by component, exactly,
the way the reference implementation instantiates them:

* **GPT-2 / GPT-3 style** (Radford et al. 2019; Brown et al. 2020, arXiv:2005.14165,
  Table 2.1): learned position embeddings, LayerNorm with bias, biased QKV /
  output / MLP projections, a 4h GELU MLP, output head tied to the token
  embedding. Per layer ``12h^2 + 13h``; in total
  ``Vh + n_ctx h + L(12h^2 + 13h) + 2h`` (Narayanan et al. 2021,
  arXiv:2104.04473, Eq. 2 is the same without the final LayerNorm's ``2h``).
* **Llama style** (Touvron et al. 2023, arXiv:2307.09288; Llama 3, arXiv:2407.21783):
  RoPE (no position parameters), RMSNorm (weight only), SwiGLU MLP with three
  matrices (Shazeer 2020, arXiv:2002.05202), grouped-query attention
  (Ainslie et al. 2023, arXiv:2305.13245), optional QKV bias (Qwen2),
  optional per-head q/k RMSNorm (Qwen3), tied or untied output head.
* **Mixture of experts** (Mixtral, arXiv:2401.04088; DeepSeek-V3,
  arXiv:2412.19437 Sec. 2.1.2): routed experts of size ``moe_intermediate_size``,
  top-k routing, always-on shared experts, dense first-k layers.
* **Multi-head latent attention** (DeepSeek-V2, arXiv:2405.04434 Sec. 2.1;
  DeepSeek-V3 Sec. 2.1.1): low-rank query and key/value projections with
  RMSNorms on the latents; the KV cache holds the latent plus the shared RoPE key.

[`Architecture.from_hf_config`][calc.models.architecture.Architecture.from_hf_config]
reads a Hugging Face ``config.json`` (as a ``dict``) for the model types in
[`HF_MODEL_TYPES`][calc.models.hf_config.HF_MODEL_TYPES] and reproduces, to the
parameter, ``sum(p.numel() for p in model.parameters())`` of the model that
``transformers`` (5.24) instantiates from it; ``tests/data/hf_param_counts.json``
holds the counts measured that way.

Examples:
    >>> from calc.models.presets import preset
    >>> preset("llama2-7b").param_count
    6738415616
    >>> arch = preset("mixtral-8x7b")
    >>> arch.param_count, arch.active_param_count
    (46702792704, 12879925248)
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from typing import Any

from calc.errors import CalcError
from calc.memo import hash_fields_once, state_without_hash
from calc.models._param_counts import _ParamCounts
from calc.models.hf_config import HF_MODEL_TYPES, read_hf_config  # noqa: F401  (HF_MODEL_TYPES: kept importable here)

__all__ = [
    "PARAM_KINDS",
    "Architecture",
]

PARAM_KINDS: tuple[str, ...] = (
    "embedding",
    "attention",
    "mlp_dense",
    "experts_routed",
    "experts_shared",
    "router",
    "norms",
    "lm_head",
)
"""Keys of [`Architecture.params_by_kind`][calc.models.architecture.Architecture.params_by_kind], in display order.

``embedding`` is the token embedding plus learned position embeddings; ``attention`` every
attention projection and its biases (latent projections included); ``mlp_dense`` the MLPs of
dense layers; ``experts_routed`` / ``experts_shared`` the expert MLPs of MoE layers;
``router`` the gating matrices (and their biases); ``norms`` every LayerNorm / RMSNorm
(per layer, per head, on the latents, and the final one); ``lm_head`` the output projection
when it is not tied to the embedding (0 when tied).
"""

_MLPS = ("gelu", "swiglu")
_NORMS = ("layernorm", "rmsnorm")
_POSITIONS = ("learned", "rope")

# Int fields -> smallest allowed value.
_INT_MINIMUM: dict[str, int] = {
    "vocab_size": 1,
    "hidden_size": 1,
    "num_layers": 1,
    "num_heads": 1,
    "num_kv_heads": 1,
    "head_dim": 1,
    "intermediate_size": 1,
    "max_position_embeddings": 1,
    "num_experts": 0,
    "experts_per_token": 0,
    "num_shared_experts": 0,
    "moe_intermediate_size": 0,
    "first_k_dense": 0,
    "moe_layer_freq": 1,
    "q_lora_rank": 0,
    "kv_lora_rank": 0,
    "qk_rope_head_dim": 0,
    "qk_nope_head_dim": 0,
    "v_head_dim": 0,
    "sliding_window": 0,
    "global_attention_layers": 0,
}


@dataclass(frozen=True)
class Architecture(_ParamCounts):
    """A decoder-only transformer's shapes; every parameter count derives from these.

    Build one from a Hugging Face ``config.json`` with
    [`from_hf_config`][calc.models.architecture.Architecture.from_hf_config], from a named preset with
    [`calc.models.presets.preset`][calc.models.presets.preset], or directly (fields after ``intermediate_size``
    have Llama-style defaults). Fields are validated on construction; ``dataclasses.replace``
    re-validates.

    Attributes:
        name: Display name or preset slug.
        model_type: Hugging Face ``model_type`` it was read from (``"custom"`` when built by hand).
        vocab_size: Rows of the token embedding (and of the output head).
        hidden_size: Model width h.
        num_layers: Transformer blocks L.
        num_heads: Query heads.
        num_kv_heads: Key/value heads (grouped-query attention when fewer than ``num_heads``;
            equal to ``num_heads`` for latent attention, where it does not shape any weight).
        head_dim: Query/key width per head (``qk_nope_head_dim + qk_rope_head_dim`` under latent attention).
        intermediate_size: FFN width of the dense MLP layers.
        mlp: ``"gelu"`` (two matrices, GPT-2) or ``"swiglu"`` (three matrices: gate, up, down;
            any gated-linear-unit MLP, including Gemma's GeGLU, has this shape).
        norm: ``"layernorm"`` (weight and bias) or ``"rmsnorm"`` (weight only).
        position: ``"learned"`` (a ``max_position_embeddings x h`` table) or ``"rope"`` (no parameters).
        max_position_embeddings: Context length the model was configured for.
        tied_embeddings: Whether the output head reuses the token embedding matrix.
        qkv_bias: Bias on the query, key and value projections (under latent attention: on the
            down-projections ``q_a_proj`` and ``kv_a_proj_with_mqa``).
        attn_out_bias: Bias on the attention output projection.
        mlp_bias: Biases on the dense MLP's matrices (see ``expert_bias`` for the experts).
        num_experts: Routed experts per MoE layer (0 = dense model).
        experts_per_token: Routed experts each token uses (top-k).
        num_shared_experts: Always-active experts per MoE layer, each of ``moe_intermediate_size``.
        moe_intermediate_size: FFN width of one expert.
        first_k_dense: Leading layers that keep a dense MLP.
        moe_layer_freq: After the first ``first_k_dense``, layer i is MoE when ``i % moe_layer_freq == 0``
            (DeepSeek / Megatron convention).
        q_lora_rank: Rank of the query down-projection under latent attention (0 = a full-rank ``q_proj``).
        kv_lora_rank: Rank of the key/value latent (0 = no latent attention).
        qk_rope_head_dim: Per-head width of the RoPE part of queries/keys (latent attention).
        qk_nope_head_dim: Per-head width of the non-RoPE part of queries/keys (latent attention).
        v_head_dim: Value width per head. 0 (the default) means "equal to ``head_dim``" and is replaced by
            ``head_dim`` on construction, so the field always holds the real width; when changing ``head_dim``
            of such an architecture with ``dataclasses.replace``, pass ``v_head_dim=0`` too.
        qk_norm: Per-head RMSNorm on queries and keys (Qwen3): ``2 x head_dim`` weights per layer.
        router_bias: A learned bias per expert on the router (counted as a parameter).
        expert_bias: Biases on each expert's matrices (GPT-OSS: ``gate_up_proj_bias`` of ``2 x moe_intermediate_size``
            and ``down_proj_bias`` of ``h`` per expert).
        attention_sinks: A learned sink logit per query head in every layer (GPT-OSS ``sinks``: ``num_heads``
            parameters per layer).
        sandwich_norm: Norms after as well as before attention and the MLP (Gemma 2 and 3: ``input_layernorm``,
            ``post_attention_layernorm``, ``pre_feedforward_layernorm``, ``post_feedforward_layernorm``), four
            per layer instead of two.
        mlp_only_layers: Layer indices forced dense (Qwen3-MoE ``mlp_only_layers``).
        sliding_window: Attention window in tokens (0 = full attention); it caps the KV cache, not the weights.
        global_attention_layers: Of the ``num_layers``, how many attend to the whole context although
            ``sliding_window`` is set (Gemma 3: every sixth layer; gpt-oss: every other); 0 = every layer uses
            the window (Mistral 7B).
        hidden_act: The activation function's name as configured (informative only).
        dropout: Whether the model trains with dropout: any dropout probability of its ``config.json`` above 0
            (``attn_pdrop`` / ``resid_pdrop`` / ``embd_pdrop`` for gpt2 and phi3, ``attention_dropout`` for the
            others; see [`from_hf_config`][calc.models.architecture.Architecture.from_hf_config]). GPT-2 and the
            GPT-3 / Megatron-LM shapes do (0.1: Radford et al. 2019; Korthikanti et al. 2022, arXiv:2205.05198,
            Sec. 4.1 counts the masks); Llama, Mistral, Qwen, Gemma, Phi-3, gpt-oss and DeepSeek configure 0.0
            (Touvron et al. 2023, arXiv:2307.09288, use none), so their activations hold no dropout mask. Built
            by hand the default is ``False``. It describes the model; a memory layout decides what it counts.
    """

    name: str
    model_type: str
    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    mlp: str = "swiglu"
    norm: str = "rmsnorm"
    position: str = "rope"
    max_position_embeddings: int = 4096
    tied_embeddings: bool = False
    qkv_bias: bool = False
    attn_out_bias: bool = False
    mlp_bias: bool = False
    num_experts: int = 0
    experts_per_token: int = 0
    num_shared_experts: int = 0
    moe_intermediate_size: int = 0
    first_k_dense: int = 0
    moe_layer_freq: int = 1
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    qk_norm: bool = False
    router_bias: bool = False
    mlp_only_layers: tuple[int, ...] = ()
    sliding_window: int = 0
    hidden_act: str = ""
    expert_bias: bool = False
    attention_sinks: bool = False
    sandwich_norm: bool = False
    global_attention_layers: int = 0
    dropout: bool = False

    def __post_init__(self) -> None:
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name in _INT_MINIMUM:
                low = _INT_MINIMUM[f.name]
                if isinstance(value, bool) or not isinstance(value, int) or value < low:
                    raise CalcError(f.name, f"must be a whole number of at least {low}", value)
            elif f.type in ("bool", bool) and not isinstance(value, bool):
                raise CalcError(f.name, "must be true or false", value)
        for field_name, allowed in (("mlp", _MLPS), ("norm", _NORMS), ("position", _POSITIONS)):
            if getattr(self, field_name) not in allowed:
                raise CalcError(field_name, f"must be one of {', '.join(allowed)}", getattr(self, field_name))
        if not isinstance(self.mlp_only_layers, tuple) or any(
            isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in self.mlp_only_layers
        ):
            raise CalcError(
                "mlp_only_layers", "must be a tuple of layer indices (whole numbers from 0)", self.mlp_only_layers
            )
        if self.uses_mla:
            if self.head_dim != self.qk_nope_head_dim + self.qk_rope_head_dim:
                raise CalcError(
                    "head_dim",
                    f"must equal qk_nope_head_dim + qk_rope_head_dim under latent attention "
                    f"({self.qk_nope_head_dim} + {self.qk_rope_head_dim})",
                    self.head_dim,
                )
            if self.v_head_dim < 1:
                raise CalcError("v_head_dim", "must be at least 1 under latent attention", self.v_head_dim)
        else:
            if self.q_lora_rank:
                raise CalcError("q_lora_rank", "needs kv_lora_rank > 0 (latent attention)", self.q_lora_rank)
            if self.num_heads % self.num_kv_heads:
                raise CalcError(
                    "num_kv_heads",
                    f"must divide the number of attention heads (num_heads={self.num_heads})",
                    self.num_kv_heads,
                    code="not-divisible",
                )
            if self.v_head_dim == 0:
                object.__setattr__(self, "v_head_dim", self.head_dim)
        if self.global_attention_layers > self.num_layers:
            raise CalcError(
                "global_attention_layers",
                f"must be at most the number of layers ({self.num_layers})",
                self.global_attention_layers,
            )
        if self.num_experts:
            if not 1 <= self.experts_per_token <= self.num_experts:
                raise CalcError(
                    "experts_per_token",
                    f"must be from 1 to the number of experts ({self.num_experts})",
                    self.experts_per_token,
                )
            if self.moe_intermediate_size < 1:
                raise CalcError(
                    "moe_intermediate_size",
                    "must be at least 1 in a mixture-of-experts model",
                    self.moe_intermediate_size,
                )
        elif self.experts_per_token or self.num_shared_experts:
            raise CalcError(
                "num_experts",
                "must be at least 1 when experts_per_token or num_shared_experts is set",
                self.num_experts,
            )

    # ----------------------------------------------------------------- shape predicates

    __hash__ = hash_fields_once  # computed once: the engine's memos key on the model thousands of times a plan
    __getstate__ = state_without_hash

    @functools.cached_property
    def is_moe(self) -> bool:
        """Whether any layer is a mixture-of-experts layer.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("mixtral-8x7b").is_moe, preset("llama3-8b").is_moe
            (True, False)
        """
        return self.num_moe_layers > 0

    @functools.cached_property
    def uses_mla(self) -> bool:
        """Whether attention is DeepSeek's multi-head latent attention (``kv_lora_rank > 0``).

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("deepseek-v3").uses_mla, preset("llama3-8b").uses_mla
            (True, False)
        """
        return self.kv_lora_rank > 0

    def is_moe_layer(self, i: int) -> bool:
        """Whether layer ``i`` (0-based) has routed experts instead of a dense MLP.

        A layer is MoE when the model has experts, ``i >= first_k_dense``,
        ``i % moe_layer_freq == 0`` and ``i`` is not in ``mlp_only_layers``.

        Examples:
            >>> from calc.models.presets import preset
            >>> v3 = preset("deepseek-v3")
            >>> [v3.is_moe_layer(i) for i in range(5)]
            [False, False, False, True, True]
        """
        return (
            self.num_experts > 0
            and i >= self.first_k_dense
            and i % self.moe_layer_freq == 0
            and i not in self.mlp_only_layers
        )

    @functools.cached_property
    def num_moe_layers(self) -> int:
        """Number of mixture-of-experts layers.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("deepseek-v3").num_moe_layers
            58
        """
        if not self.num_experts or self.first_k_dense >= self.num_layers:
            return 0
        f = self.moe_layer_freq
        candidates = (self.num_layers - 1) // f - (self.first_k_dense - 1) // f  # multiples of f in [first_k, L)
        forced_dense = sum(
            1 for i in set(self.mlp_only_layers) if self.first_k_dense <= i < self.num_layers and i % f == 0
        )
        return candidates - forced_dense

    def as_dict(self) -> dict[str, Any]:
        """The fields and the derived totals as plain data (for JSON and the CLI).

        Examples:
            >>> from calc.models.presets import preset
            >>> d = preset("llama3-8b").as_dict()
            >>> d["num_kv_heads"], d["param_count"]
            (8, 8030261248)
        """
        out: dict[str, Any] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["mlp_only_layers"] = list(self.mlp_only_layers)
        out["param_count"] = self.param_count
        out["active_param_count"] = self.active_param_count
        out["params_by_kind"] = self.params_by_kind()
        return out

    # ----------------------------------------------------------------- Hugging Face configs

    @classmethod
    def from_hf_config(cls, config: dict[str, Any], *, name: str | None = None) -> Architecture:
        """Read a Hugging Face ``config.json`` (parsed into a ``dict``).

        The count matches what ``transformers`` instantiates (``AutoModelForCausalLM.from_config``,
        version 5.24), including its defaults for fields a ``config.json`` leaves out, per model class:

        * ``num_key_value_heads`` absent: llama, phi3 use the number of heads; the others use their
          config class's default (mistral/mixtral 8, qwen2/qwen3 32, qwen3_moe 4, gemma 16);
          ``null`` always means the number of heads.
        * ``head_dim`` absent or ``null``: ``hidden_size // num_attention_heads``, except gemma (256) and
          qwen3 (128); gpt2 ignores ``head_dim``.
        * ``tie_word_embeddings`` absent: tied for gpt2 and gemma, untied for the others (Qwen2.5's
          small models set it ``true`` in their config.json).
        * qwen2 always has a QKV bias (no output bias); llama, qwen3, qwen3_moe, gemma and
          deepseek_v3 have ``attention_bias`` (default ``false``) on every attention projection;
          llama has ``mlp_bias``; gpt2 has all biases, its MLP is ``n_inner`` wide (default 4h).
        * gemma3_text (Gemma 3's language model): 4 KV heads, ``head_dim`` 256 and a tied head by default, per-head
          ``q_norm``/``k_norm`` and four norms per layer; ``hidden_size`` must be a multiple of the heads.
        * gpt_oss: every layer is MoE (128 experts, top-4 by default) with a biased router, biased experts and
          ``attention_bias`` defaulting to ``true``; one learned sink logit per head and layer.
        * ``dropout``: gpt2's ``attn_pdrop``, ``resid_pdrop`` and ``embd_pdrop`` default to 0.1 (``GPT2Config``), so
          a GPT-2 config trains with dropout unless it sets all three to 0; phi3's three (``attention_dropout``,
          ``resid_pdrop``, ``embd_pdrop``) and every other type's ``attention_dropout`` default to 0.0.
        * qwen3 and qwen3_moe have per-head ``q_norm``/``k_norm``; phi3's fused ``qkv_proj`` and
          ``gate_up_proj`` count the same as separate matrices.
        * qwen3_moe: layer i is sparse unless listed in ``mlp_only_layers`` or ``(i + 1) % decoder_sparse_step != 0``.
        * deepseek_v3: layers from ``first_k_dense_replace`` on are MoE; ``transformers`` ignores
          ``moe_layer_freq`` and keeps ``e_score_correction_bias`` as a buffer, not a parameter, so
          neither changes the count; the multi-token-prediction layer (``num_nextn_predict_layers``)
          is not instantiated and not counted.

        Keys starting with ``_`` (``_source``, ``_name_or_path``) and unknown keys are ignored.

        Args:
            config: The parsed ``config.json``.
            name: Display name; defaults to ``_name_or_path`` or the ``model_type``.

        Returns:
            The architecture.

        Raises:
            CalcError: ``unsupported`` for a ``model_type`` outside
                [`HF_MODEL_TYPES`][calc.models.hf_config.HF_MODEL_TYPES]; ``missing-field`` when a shape
                field (vocab, hidden size, layers, heads, FFN size, expert count...) is absent;
                ``invalid-value`` for a value of the wrong type or range.

        Examples:
            >>> cfg = {"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096,
            ...        "intermediate_size": 11008, "num_hidden_layers": 32, "num_attention_heads": 32}
            >>> Architecture.from_hf_config(cfg).param_count
            6738415616
            >>> Architecture.from_hf_config({"model_type": "bert"})  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            calc.errors.CalcError: model_type must be one of deepseek_v3, gemma, ..., qwen3_moe (got 'bert')
        """
        model_type, kwargs = read_hf_config(config)
        label = name or config.get("_name_or_path") or model_type
        return cls(name=str(label), model_type=model_type, **kwargs)
