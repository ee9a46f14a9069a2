"""Parameter counts by component, for [`Architecture`][calc.models.architecture.Architecture].

The counting half of an architecture: each property here reads the shape fields that
[`Architecture`][calc.models.architecture.Architecture] declares and validates, and counts the
parameters of one component exactly as the reference implementation instantiates it (the formulas
and their sources are in each docstring and in [`calc.models.architecture`][calc.models.architecture]).
``Architecture`` inherits these members; use them from there (``preset("gpt2").param_count``).

Examples:
    >>> from calc.models.presets import preset
    >>> preset("gpt2").layer_param_counts()[0]  # 12h^2 + 13h with h = 768
    7087872
"""

from __future__ import annotations

import functools


class _ParamCounts:
    """Parameter counts by component: the base of [`Architecture`][calc.models.architecture.Architecture].

    Reads ``hidden_size``, ``vocab_size``, ``num_layers``, the attention, MLP and expert shapes and the
    predicates ``is_moe_layer`` / ``num_moe_layers`` of the dataclass that inherits it.
    """

    # ----------------------------------------------------------------- per-component counts

    def _norm(self, dim: int) -> int:
        """Parameters of one norm over ``dim`` features: weight (+ bias for LayerNorm)."""
        return 2 * dim if self.norm == "layernorm" else dim

    def _mlp(self, width: int, bias: bool) -> int:
        """Parameters of one MLP of FFN width ``width``: 2 matrices (GELU) or 3 (gated)."""
        h = self.hidden_size
        if self.mlp == "gelu":
            return 2 * h * width + ((width + h) if bias else 0)
        return 3 * h * width + ((2 * width + h) if bias else 0)

    @functools.cached_property
    def embedding_params(self) -> int:
        """Input embedding parameters: the token table plus learned position embeddings.

        The output head is not included (see ``lm_head_params``); when the head is tied it
        shares this matrix and adds nothing.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("gpt2").embedding_params  # 50257 x 768 tokens + 1024 x 768 positions
            39383808
        """
        positions = self.max_position_embeddings * self.hidden_size if self.position == "learned" else 0
        return self.vocab_size * self.hidden_size + positions

    @functools.cached_property
    def lm_head_params(self) -> int:
        """Output projection parameters: ``vocab_size x hidden_size`` when untied, 0 when tied.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("llama3-8b").lm_head_params, preset("gpt2").lm_head_params
            (525336576, 0)
        """
        return 0 if self.tied_embeddings else self.vocab_size * self.hidden_size

    @functools.cached_property
    def attention_params_per_layer(self) -> int:
        """Attention projection parameters of one layer, biases (and GPT-OSS's per-head sinks) included, norms excluded.

        Standard / grouped-query attention: ``h(n_h d) + 2h(n_kv d) + (n_h d)h`` plus biases
        (Ainslie et al. 2023, arXiv:2305.13245). Latent attention (DeepSeek-V2, arXiv:2405.04434,
        Sec. 2.1, Eqs. 9-20): ``h r_q + r_q n_h(d_nope + d_rope)`` for queries (or ``h n_h (d_nope + d_rope)``
        without a query latent), ``h (r_kv + d_rope) + r_kv n_h (d_nope + d_v)`` for keys/values,
        ``n_h d_v h`` for the output.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("llama2-7b").attention_params_per_layer  # 4 x 4096^2
            67108864
            >>> preset("deepseek-v3").attention_params_per_layer  # 187,107,328 less the two latent norms
            187105280
        """
        h, nh = self.hidden_size, self.num_heads
        if self.uses_mla:
            qk = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                q = h * self.q_lora_rank + (self.q_lora_rank if self.qkv_bias else 0) + self.q_lora_rank * nh * qk
            else:
                q = h * nh * qk
            kv_a = self.kv_lora_rank + self.qk_rope_head_dim
            kv = h * kv_a + (kv_a if self.qkv_bias else 0)
            kv += self.kv_lora_rank * nh * (self.qk_nope_head_dim + self.v_head_dim)
            out = nh * self.v_head_dim * h + (h if self.attn_out_bias else 0)
            return q + kv + out
        q_width = nh * self.head_dim
        kv_width = self.num_kv_heads * (self.head_dim + self.v_head_dim)
        weights = h * q_width + h * kv_width + nh * self.v_head_dim * h
        biases = (q_width + kv_width if self.qkv_bias else 0) + (h if self.attn_out_bias else 0)
        return weights + biases + (nh if self.attention_sinks else 0)

    @functools.cached_property
    def norm_params_per_layer(self) -> int:
        """Norm parameters inside one layer: the two pre-norms (four under Gemma's sandwich norm), q/k norms and
        latent norms.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("gpt2").norm_params_per_layer  # two LayerNorms of 768, weight and bias
            3072
            >>> preset("qwen3-8b").norm_params_per_layer  # 2 x 4096 + q_norm and k_norm of 128
            8448
        """
        total = (4 if self.sandwich_norm else 2) * self._norm(self.hidden_size)
        if self.qk_norm:
            total += 2 * self._norm(self.head_dim)
        if self.uses_mla:
            total += self._norm(self.kv_lora_rank) + (self._norm(self.q_lora_rank) if self.q_lora_rank else 0)
        return total

    @functools.cached_property
    def dense_mlp_params(self) -> int:
        """Parameters of one dense MLP (``intermediate_size`` wide), biases included.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("llama2-7b").dense_mlp_params  # 3 x 4096 x 11008
            135266304
        """
        return self._mlp(self.intermediate_size, self.mlp_bias)

    @functools.cached_property
    def params_per_expert(self) -> int:
        """Parameters of one routed (or shared) expert MLP, ``moe_intermediate_size`` wide; 0 when dense.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("mixtral-8x7b").params_per_expert  # 3 x 4096 x 14336
            176160768
        """
        return self._mlp(self.moe_intermediate_size, self.expert_bias) if self.num_experts else 0

    @functools.cached_property
    def expert_params_per_layer(self) -> int:
        """Parameters of all routed experts of one MoE layer (0 when dense).

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("mixtral-8x7b").expert_params_per_layer  # 8 experts
            1409286144
        """
        return self.num_experts * self.params_per_expert

    @functools.cached_property
    def shared_expert_params_per_layer(self) -> int:
        """Parameters of the shared experts of one MoE layer.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("deepseek-v3").shared_expert_params_per_layer  # one expert: 3 x 7168 x 2048
            44040192
        """
        return self.num_shared_experts * self.params_per_expert

    @functools.cached_property
    def router_params_per_layer(self) -> int:
        """Router (gate) parameters of one MoE layer: ``h x E``, plus ``E`` with a router bias.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("mixtral-8x7b").router_params_per_layer  # 4096 x 8
            32768
        """
        return self.hidden_size * self.num_experts + (self.num_experts if self.router_bias else 0)

    def mlp_params_per_layer(self, i: int) -> int:
        """Parameters of layer ``i``'s feed-forward block: a dense MLP, or router + routed + shared experts.

        Examples:
            >>> from calc.models.presets import preset
            >>> v3 = preset("deepseek-v3")
            >>> v3.mlp_params_per_layer(0) == v3.dense_mlp_params
            True
            >>> v3.mlp_params_per_layer(3)  # 256 routed + 1 shared expert + a 256 x 7168 gate
            11320164352
        """
        if self.is_moe_layer(i):
            return self.router_params_per_layer + self.expert_params_per_layer + self.shared_expert_params_per_layer
        return self.dense_mlp_params

    def layer_param_counts(self) -> list[int]:
        """Total parameters of each transformer block, in order (attention + norms + feed-forward).

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("gpt2").layer_param_counts()[0]  # 12h^2 + 13h with h = 768
            7087872
        """
        fixed = self.attention_params_per_layer + self.norm_params_per_layer
        return [fixed + self.mlp_params_per_layer(i) for i in range(self.num_layers)]

    @functools.cached_property
    def final_norm_params(self) -> int:
        """Parameters of the norm after the last block.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("gpt2").final_norm_params, preset("llama3-8b").final_norm_params
            (1536, 4096)
        """
        return self._norm(self.hidden_size)

    # ----------------------------------------------------------------- totals

    @functools.cached_property
    def param_count(self) -> int:
        """Total parameters, counting a tied embedding/head matrix once (as ``model.parameters()`` does).

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("gpt2").param_count, preset("llama3-8b").param_count
            (124439808, 8030261248)
        """
        return sum(self.params_by_kind().values())

    @functools.cached_property
    def active_param_count(self) -> int:
        """Parameters used for one token: everything except the routed experts a token skips.

        Counts the embedding and the output head (as DeepSeek-V3's "37B activated" and Mixtral's
        "12.9B active" do), all attention, norms, routers, shared experts and the top-k routed
        experts of every MoE layer. Equals ``param_count`` for a dense model.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("mixtral-8x7b").active_param_count  # 46.7B less 32 x 6 idle experts
            12879925248
            >>> preset("llama3-8b").active_param_count == preset("llama3-8b").param_count
            True
        """
        idle = (self.num_experts - self.experts_per_token) * self.params_per_expert
        return self.param_count - self.num_moe_layers * idle

    @functools.cached_property
    def non_embedding_param_count(self) -> int:
        """Parameters outside the embedding tables and the output head (Kaplan et al. 2020's N).

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("gpt2").non_embedding_param_count  # 12 x (12h^2 + 13h) + 2h
            85056000
        """
        return self.param_count - self.embedding_params - self.lm_head_params

    def params_by_kind(self) -> dict[str, int]:
        """Total parameters split by kind (keys: [`PARAM_KINDS`][calc.models.architecture.PARAM_KINDS]).

        The values sum to ``param_count``.

        Examples:
            >>> from calc.models.presets import preset
            >>> kinds = preset("deepseek-v3").params_by_kind()
            >>> kinds["router"]  # 58 MoE layers x 256 x 7168 (HF keeps the router bias as a buffer)
            106430464
            >>> sum(kinds.values()) == preset("deepseek-v3").param_count
            True
        """
        moe = self.num_moe_layers
        dense = self.num_layers - moe
        return {
            "embedding": self.embedding_params,
            "attention": self.num_layers * self.attention_params_per_layer,
            "mlp_dense": dense * self.dense_mlp_params,
            "experts_routed": moe * self.expert_params_per_layer,
            "experts_shared": moe * self.shared_expert_params_per_layer,
            "router": moe * self.router_params_per_layer,
            "norms": self.num_layers * self.norm_params_per_layer + self.final_norm_params,
            "lm_head": self.lm_head_params,
        }

    def active_params_by_kind(self) -> dict[str, int]:
        """Like [`params_by_kind`][calc.models.architecture.Architecture.params_by_kind], counting only the
        top-k routed experts per token; sums to ``active_param_count``.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("mixtral-8x7b").active_params_by_kind()["experts_routed"]  # 32 layers x 2 experts
            11274289152
        """
        kinds = self.params_by_kind()
        kinds["experts_routed"] = self.num_moe_layers * self.experts_per_token * self.params_per_expert
        return kinds

    def kv_cache_dims_per_token(self) -> int:
        """Elements cached per token per layer: ``n_kv (d_k + d_v)``, i.e. ``2 n_kv d`` (keys and values).

        Under latent attention the cache holds the compressed latent and the shared RoPE key,
        ``kv_lora_rank + qk_rope_head_dim`` (DeepSeek-V2, arXiv:2405.04434, Sec. 2.1.2 and Table 1).
        The sliding window, if any, caps the number of tokens, not this width.

        Examples:
            >>> from calc.models.presets import preset
            >>> preset("llama2-7b").kv_cache_dims_per_token()  # 2 x 32 x 128
            8192
            >>> preset("llama3-8b").kv_cache_dims_per_token()  # 2 x 8 x 128
            2048
            >>> preset("deepseek-v3").kv_cache_dims_per_token()  # 512 + 64
            576
        """
        if self.uses_mla:
            return self.kv_lora_rank + self.qk_rope_head_dim
        return self.num_kv_heads * (self.head_dim + self.v_head_dim)
