"""What stock Hugging Face ``transformers`` saves for backward: the ``hf-eager`` and ``hf-sdpa`` profiles.

[`calc.memory.activations`][calc.memory.activations] counts what Megatron-LM's fused kernels keep (Korthikanti et
al. 2022, arXiv:2205.05198, Sec. 4.1). An unfused PyTorch model keeps more: every elementwise
operation autograd records saves its own operands. This module names those tensors, operation by
operation, for transformers 5.24 run in 16-bit (bf16/fp16) on CUDA with PyTorch 2.13, and every term
was checked to the byte against ``torch.autograd.graph.saved_tensors_hooks`` (``validation/``, the
"How accurate is this?" page).

Sources, term by term (``T`` tokens of the micro-batch, ``h`` hidden, ``a``/``g`` query/KV heads,
``d``/``d_v`` head sizes, ``f`` MLP width, ``s`` sequence, ``v`` vocabulary, ``E`` experts, ``k`` top-k):

* **RMSNorm** (``LlamaRMSNorm`` and its copies in Mistral, Qwen3, Mixtral): ``x.to(float32)``,
  ``pow(2)``, ``rsqrt``, ``x * rstd``, ``.to(bf16)``, ``weight * y``: ``pow`` and the multiply save the
  fp32 input (``4Th``), ``rsqrt`` its fp32 output (``4T``), the weight multiply the bf16 normalized
  tensor (``2Th``). The bf16 input itself is not saved (``ToCopyBackward`` keeps nothing).
* **LayerNorm** (GPT-2, ``nn.LayerNorm``): ``native_layer_norm`` saves its 16-bit input (``2Th``) and
  the mean and reciprocal standard deviation, fp32 on CUDA (``8T``; PyTorch's CUDA kernel keeps them in
  the accumulation type; its CPU kernel keeps them in the input dtype, ``4T``).
* **Eager attention** (``eager_attention_forward``): ``repeat_kv`` copies K and V to all ``a`` heads
  *before* ``matmul`` saves them (``2Tad`` each). The one exception is multi-query attention at batch 1
  (``g = 1``, ``b = 1``): ``repeat_kv``'s ``expand(...).reshape(...)`` (``modeling_llama.py`` lines 176-177)
  and ``matmul``'s fold of the batch dimensions into ``bmm`` (``[b, a, ...]`` to ``[ba, ...]``) are both
  views then (the merged dimensions have size 1 or stride 0), so the saved K and V stay one head
  (``2Td`` each); the Llama family takes the softmax in fp32
  (``softmax(..., dtype=float32)``: its output, ``4as²b``, is saved) and casts it back (the cast,
  ``2as²b``, is the input of the attention over V); GPT-2 takes it in 16 bits (one ``2as²b``, shared
  by the softmax and the matmul).
* **SDPA** (``sdpa_attention_forward``, causal, no mask): on CUDA the flash kernel with
  ``enable_gqa`` saves Q, K, V unexpanded, its output and one fp32 log-sum-exp per head and query
  (``4Ta``), plus two int64 RNG scalars (16 bytes); its output is laid out as
  ``[b, s, a, d]``, so ``transpose(1, 2).contiguous()`` is a no-op and the output *is* the output
  projection's input (one ``2Tad_v``). PyTorch's CPU flash kernel saves the same tensors but no RNG
  scalars.
* **Unfused MLP activations**: SwiGLU ``down(silu(gate(x)) * up(x))`` saves the gate output (SiLU's
  input), SiLU's output and the up output (the multiply), and the product (``down``'s input): ``8Tf``,
  one ``2Tf`` more than Megatron's fused ``bias_swiglu``. GPT-2's ``gelu_new``,
  ``0.5x(1 + tanh(√(2/π)(x + 0.044715x³)))``, saves ``x`` (``pow``), the ``tanh`` output, ``0.5x`` and
  ``1 + tanh`` (the last multiply): ``8Tf``, plus ``c_proj``'s input, ``10Tf`` in all (Megatron's
  fused GeLU: ``4Tf``).
* **Qwen3's q/k norms**: an RMSNorm over each head's queries and keys: fp32 copies, bf16 normalized
  tensors and fp32 statistics of Q (``a`` heads) and K (``g`` heads).
* **Mixtral's and Qwen3-MoE's sparse MoE blocks** (transformers 5.24): the routed copies of the input
  and the experts' outputs (``2Tkh`` each), the experts' SwiGLU (``8Tkf``) and the router: fp32 softmax
  over the experts (``4TE``), top-k values and indices (``4Tk + 8Tk``), their sum (``4T``), the per-copy
  weights (``4Tk`` in fp32 for Mixtral; Qwen3-MoE casts them to bf16, ``2Tk``), three int64 permutation
  indices (``24Tk``) and the int32 per-expert counts (``4E``).
* **Dropout**: CUDA's fused ``native_dropout`` saves a bool mask, 1 byte an element; the CPU kernel saves
  the scaled mask in the activation dtype (2 bytes). GPT-2 (the ``layernorm`` profile) drops out the
  embedding, the attention probabilities and both residual branches (``modeling_gpt2.py`` lines 110-111,
  ``GPT2Attention.attn_dropout`` / ``resid_dropout``; line 238, ``GPT2MLP.dropout``). The Llama family (the
  ``rmsnorm`` profile: Llama, Mistral, Qwen3, Mixtral, Qwen3-MoE) has one dropout only, on the attention
  probabilities (``modeling_llama.py`` line 198, ``nn.functional.dropout(attn_weights, p=dropout)``, with
  ``dropout=self.attention_dropout`` at line 264): its decoder layer and embedding keep no mask. Under
  SDPA on CUDA the flash kernel draws the dropout itself (its RNG scalars, above); PyTorch's CPU flash
  kernel refuses dropout and SDPA falls back to the math kernel (``CPU_DIFFERENCES["sdpa_dropout_math"]``).
* **Outside the layers**: the int64 token ids the embedding backward needs (``8T``), GPT-2's int64
  position ids (``8s``, one row), RoPE's bf16 ``cos`` and ``sin`` (``2 × 2sd``, computed once for the
  whole model with one row of positions), the final norm, the output projection's input (``2Th``) and
  the loss (``ForCausalLMLoss``: ``logits.float()`` then ``cross_entropy``, which saves its fp32
  log-softmax ``4Tv``, the int64 targets ``8T`` and a 4-byte fp32 total weight). The labels are
  padded by one position and shifted: at ``b = 1`` the shifted view is contiguous and keeps the padded
  storage, ``8(s + 1)``; at ``b > 1`` ``view(-1)`` copies it, ``8T``.

Examples:
    >>> terms = hf_layer_terms(tokens=256, seq_len=128, hidden=256, heads=8, kv_heads=2, head_dim=32,
    ...                        v_head_dim=32, ffn_hidden=688, mlp="swiglu", norm="rmsnorm", attention="eager")
    >>> int(sum(terms.values()))  # measured: 4,556,800 (transformers 5.24, PyTorch 2.13)
    4556800
    >>> # Llama's dropout: a mask on the attention probabilities (1 B each on CUDA), none on the residuals
    >>> t = hf_layer_terms(tokens=4, seq_len=4, hidden=8, heads=2, kv_heads=1, head_dim=4, v_head_dim=4,
    ...                    ffn_hidden=8, mlp="swiglu", norm="rmsnorm", attention="eager", dropout=True)
    >>> t["softmax_dropout_mask"], t["attention_dropout_mask"], t["mlp_dropout_mask"]
    (Fraction(32, 1), Fraction(0, 1), Fraction(0, 1))
    >>> t["value"]  # multi-query at batch 1: V saved at its one head, not expanded (2 B x 4 tokens x 4)
    Fraction(32, 1)
"""

from __future__ import annotations

from fractions import Fraction

__all__ = ["CPU_DIFFERENCES", "HF_ATTENTIONS", "hf_layer_terms", "hf_model_terms"]

HF_ATTENTIONS: tuple[str, ...] = ("eager", "sdpa")
"""The ``attn_implementation`` values profiled: ``eager`` and ``sdpa`` (Hugging Face's names)."""

CPU_DIFFERENCES: dict[str, str] = {
    "dropout_mask": "CPU dropout saves the scaled mask in the activation dtype (2 B/element); CUDA a bool (1 B).",
    "layernorm_stats": "CPU LayerNorm keeps mean and rstd in the input dtype (2 B each); CUDA in fp32 (4 B).",
    "sdpa_rng": "CUDA flash SDPA also saves two int64 RNG scalars (philox seed and offset), 16 bytes; CPU none.",
    "sdpa_dropout_math": (
        "CPU SDPA with dropout runs the math kernel (CPU flash takes no dropout): fp32 copies of Q, K and V "
        "(K and V expanded to all heads), 4Ta(2d + d_v), and three fp32 score tensors (softmax output, scaled "
        "mask, dropped probabilities), 12as^2b, in place of flash's Q, K, V and log-sum-exp."
    ),
}
"""Where PyTorch's CPU kernels save other tensors than its CUDA ones (the profiles model CUDA; the
validation harness adds these back to compare with CPU measurements)."""

_ACT = 2  # 16-bit activations
_FP32 = 4
_INT64 = 8


def hf_layer_terms(
    *,
    tokens: Fraction | int,
    seq_len: int,
    hidden: int,
    heads: int,
    kv_heads: int,
    head_dim: int,
    v_head_dim: int,
    ffn_hidden: int,
    mlp: str,
    norm: str,
    attention: str,
    dropout: bool = False,
    qk_norm: bool = False,
    experts_per_token: int = 0,
    num_experts: int = 0,
    shared_experts: int = 0,
    router_weight_bytes: int = 4,
) -> dict[str, Fraction]:
    """Bytes one Hugging Face decoder layer saves for backward on CUDA, by term (exact fractions).

    The names are those of [`LayerActivations`][calc.memory.activations.LayerActivations], the sources in the
    module docstring; the arguments are checked by [`layer_activations`][calc.memory.activations.layer_activations].

    Args:
        tokens: Tokens of the micro-batch ``T = s × b``.
        seq_len: Sequence length ``s``.
        hidden: Hidden size ``h``.
        heads: Query heads ``a``.
        kv_heads: KV heads ``g``.
        head_dim: Query/key head size ``d``.
        v_head_dim: Value head size ``d_v``.
        ffn_hidden: MLP width ``f`` (one expert's for MoE).
        mlp: ``"gelu"`` (GPT-2's ``gelu_new``) or ``"swiglu"``.
        norm: ``"layernorm"`` (GPT-2) or ``"rmsnorm"`` (the Llama family).
        attention: ``"eager"`` or ``"sdpa"``.
        dropout: Dropout on the attention probabilities, and for GPT-2 (``norm="layernorm"``) on both
            residual branches too (the Llama family has none there).
        qk_norm: Qwen3's per-head RMSNorm on queries and keys.
        experts_per_token: Routed experts per token ``k`` (0: dense MLP).
        num_experts: Routed experts ``E``.
        shared_experts: Shared experts (each an MLP of width ``f``).
        router_weight_bytes: Bytes per element of the routing weights the weighted combine saves: 4
            (fp32, Mixtral) or 2 (Qwen3-MoE casts them to the activation dtype).

    Returns:
        Bytes per term.

    Examples:
        >>> t = hf_layer_terms(tokens=1, seq_len=1, hidden=8, heads=1, kv_heads=1, head_dim=8, v_head_dim=8,
        ...                    ffn_hidden=8, mlp="swiglu", norm="rmsnorm", attention="sdpa")
        >>> t["norm_fp32_inputs"], t["rng_state"]
        (Fraction(64, 1), Fraction(16, 1))
    """
    T = Fraction(tokens)
    k = experts_per_token
    mlps = (k + shared_experts) if k else 1
    mask = 1 if dropout and norm == "layernorm" else 0  # residual dropout: GPT-2's only
    unfused = (1 if mlp == "swiglu" else 3) * _ACT * T * ffn_hidden * mlps  # SiLU(gate); gelu_new's three
    router = 0
    if k:
        router = _FP32 * T * num_experts + (_FP32 + _INT64 + router_weight_bytes + 3 * _INT64) * T * k + _FP32 * T
        router += _FP32 * num_experts
    attention_terms = _hf_attention_terms(
        T, seq_len, hidden, heads, kv_heads, head_dim, v_head_dim, norm == "rmsnorm", attention == "eager", dropout
    )
    if qk_norm:
        attention_terms["qk_norm"] = Fraction(
            (_FP32 + _ACT) * T * (heads + kv_heads) * head_dim + _FP32 * T * (heads + kv_heads)
        )
    return {
        **attention_terms,
        "mlp_input": _ACT * T * hidden * (1 + 2 * k),
        "mlp_hidden": (2 if mlp == "swiglu" else 1) * _ACT * T * ffn_hidden * mlps,
        "mlp_intermediates": Fraction(unfused),
        "mlp_activation_output": _ACT * T * ffn_hidden * mlps,
        "mlp_dropout_mask": mask * T * hidden,
        "router": Fraction(router),
    }


def _hf_attention_terms(
    T: Fraction, s: int, h: int, a: int, g: int, d: int, dv: int, rms: bool, eager: bool, dropout: bool
) -> dict[str, Fraction]:
    """The norms' and the attention block's terms of
    [`hf_layer_terms`][calc.memory.activation_profiles.hf_layer_terms]."""
    mask = 1 if dropout else 0
    scores = T * s * a
    expanded = a if not (g == 1 and T == s) else g  # eager MQA at b = 1: repeat_kv and matmul's fold are views
    softmax_bytes = _FP32 if rms else _ACT  # the Llama family upcasts the eager softmax
    cast_or_dropout = _ACT * scores if eager and (dropout or rms) else 0
    return {
        "norm_inputs": 2 * _ACT * T * h if not rms else Fraction(0),
        "norm_fp32_inputs": 2 * _FP32 * T * h if rms else Fraction(0),
        "norm_weight_inputs": 2 * _ACT * T * h if rms else Fraction(0),
        "norm_stats": 2 * _FP32 * T * (1 if rms else 2),
        "qk_norm": Fraction(0),
        "qkv_input": _ACT * T * h,
        "query_key": _ACT * T * (a + (expanded if eager else g)) * d,
        "value": _ACT * T * (expanded if eager else g) * dv,
        "softmax_output": softmax_bytes * scores if eager else Fraction(0),
        "softmax_dropout_mask": mask * scores if eager else Fraction(0),
        "softmax_dropout_output": Fraction(cast_or_dropout),
        "flash_stats": _FP32 * T * a if not eager else Fraction(0),
        "rng_state": Fraction(2 * _INT64) if not eager else Fraction(0),
        "out_proj_input": _ACT * T * a * dv,
        "attention_dropout_mask": mask * T * h if not rms else Fraction(0),  # GPT-2's resid_dropout
    }


def hf_model_terms(
    *,
    tokens: Fraction | int,
    seq_len: int,
    hidden: int,
    head_dim: int,
    vocab_size: int,
    norm: str,
    position: str,
    dropout: bool = False,
) -> dict[str, Fraction]:
    """Bytes a Hugging Face causal LM saves for backward outside its decoder layers, on CUDA, by term.

    Sources in the module docstring: token (and GPT-2 position) ids, RoPE's ``cos``/``sin``, the
    embedding dropout mask, the final norm, the output projection's input and ``ForCausalLMLoss``.

    Args:
        tokens: Tokens of the micro-batch ``T``.
        seq_len: Sequence length ``s``.
        hidden: Hidden size ``h``.
        head_dim: Head size ``d`` (RoPE's tables are ``s × d``).
        vocab_size: Vocabulary ``v``.
        norm: ``"layernorm"`` or ``"rmsnorm"``.
        position: ``"learned"`` or ``"rope"``.
        dropout: The model trains with dropout: a mask after GPT-2's embedding (``rmsnorm`` models: none).

    Returns:
        Bytes per term: ``embedding`` (ids, positions, dropout mask), ``final_norm``, ``output_input``,
        ``loss``.

    Examples:
        >>> m = hf_model_terms(tokens=256, seq_len=128, hidden=256, head_dim=32, vocab_size=1024,
        ...                    norm="rmsnorm", position="rope")
        >>> int(sum(m.values()))  # measured: 1,594,372 (Llama, transformers 5.24)
        1594372
    """
    T = Fraction(tokens)
    h = hidden
    rms = norm == "rmsnorm"
    embedding = _INT64 * T + (1 if dropout and not rms else 0) * T * h  # GPT-2's embd_pdrop; Llama: none
    embedding += _INT64 * seq_len if position == "learned" else 2 * _ACT * seq_len * head_dim
    final = (_FP32 + _ACT) * T * h + _FP32 * T if rms else _ACT * T * h + 2 * _FP32 * T
    return {
        "embedding": embedding,
        "final_norm": final,
        "output_input": _ACT * T * h,
        "loss": _FP32 * T * vocab_size + _INT64 * (T + (1 if T == seq_len else 0)) + _FP32,
    }
