"""Other tools' memory estimators, reproduced exactly, so their published outputs can be checked and compared.

DeepSpeed ships two closed-form estimators of model-state memory (``deepspeed/runtime/zero/stage_1_and_2.py``
and ``stage3.py``, documented in ``docs/code-docs/source/memory.rst``). They count differently from the ZeRO
paper: 18 bytes per parameter of sharded state (fp16 and fp32 gradients, fp32 master weights, Adam's two
moments) plus an unsharded 16-bit copy, a 1.5x buffer factor on CPU, and for ZeRO-3 four bytes per parameter of
the largest layer. They print "GB" that are GiB (``bytes / 2**30``).

llm-analysis (cli99/llm-analysis, the release on PyPI, 0.2.2, ``llm_analysis/analysis.py``) estimates
training memory from Korthikanti et al. 2022 (arXiv:2205.05198, Sec. 4): per layer ``sbh(34 + 5as/h)``-style
terms with its own choices (fp32 layer-norm inputs, a 1-byte attention dropout mask always, flash attention
by default), and model states at 2 B/param of weights plus 4 of fp32 gradients and 12 of Adam (fp32 master
weights and two moments). It computes in floats; these reproductions compute exactly and round down.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from calc.errors import CalcError
from calc.units import parse_count, parse_positive_int

__all__ = [
    "LLM_ANALYSIS_RECOMPUTE",
    "Estimate",
    "LlmAnalysisStates",
    "deepspeed_zero2_estimate",
    "deepspeed_zero3_estimate",
    "llm_analysis_activation_bytes",
    "llm_analysis_layer_activation_bytes",
    "llm_analysis_model_state_bytes",
]


@dataclass(frozen=True)
class Estimate:
    """Bytes per CPU (host) and per GPU, as an estimator reports them.

    Attributes:
        cpu_bytes: Host memory per node.
        gpu_bytes: Device memory per GPU.
    """

    cpu_bytes: int
    gpu_bytes: int


def deepspeed_zero2_estimate(
    total_params: int | float | str,
    *,
    gpus_per_node: int = 1,
    nodes: int = 1,
    cpu_offload: bool = True,
    buffer_factor: float = 1.5,
    before_2024: bool = False,
) -> Estimate:
    """DeepSpeed's ``estimate_zero2_model_states_mem_needs``, term for term.

    Source: deepspeedai/DeepSpeed ``deepspeed/runtime/zero/stage_1_and_2.py`` (commit edaa7221). Without
    offload the GPU holds ``2Ψ + int(18Ψ / N)`` (16-bit weights, plus 2 + 4 bytes of gradients, 4 of fp32
    weights and 8 of Adam states, sharded over the N GPUs). Before PR #5099 (2024-06) the line was
    ``4Ψ + int(16Ψ / N)``, which is what ``memory.rst``'s example output still shows.

    Args:
        total_params: Parameter count Ψ.
        gpus_per_node: GPUs per node.
        nodes: Nodes.
        cpu_offload: Optimizer states offloaded to the CPU (``offload_optimizer=cpu``).
        buffer_factor: DeepSpeed's ``additional_buffer_factor`` on CPU memory.
        before_2024: Use the pre-#5099 no-offload GPU formula.

    Returns:
        The [`Estimate`][calc.peers.estimators.Estimate].

    Examples:
        >>> from calc.units import format_bytes
        >>> e = deepspeed_zero2_estimate(2851e6, gpus_per_node=8, cpu_offload=False)
        >>> format_bytes(e.gpu_bytes, unit="GiB"), format_bytes(e.cpu_bytes, unit="GiB", digits=5)
        ('11.3 GiB', '127.45 GiB')
    """
    n = parse_count(total_params, "total_params")
    per_node = parse_positive_int(gpus_per_node, "gpus_per_node")
    total_gpus = per_node * parse_positive_int(nodes, "nodes")
    if cpu_offload:
        gpu = 2 * n
        cpu = n * max(4 * total_gpus, 16) * buffer_factor
    else:
        gpu = 4 * n + int(16 * n / total_gpus) if before_2024 else 2 * n + int(18 * n / total_gpus)
        cpu = n * 4 * per_node * buffer_factor
    return Estimate(cpu_bytes=int(cpu), gpu_bytes=int(gpu))


def deepspeed_zero3_estimate(
    total_params: int | float | str,
    largest_layer_params: int | float | str,
    *,
    gpus_per_node: int = 1,
    nodes: int = 1,
    cpu_offload: bool = True,
    cpu_offload_params: bool = True,
    zero_init: bool = True,
    buffer_factor: float = 1.5,
) -> Estimate:
    """DeepSpeed's ``estimate_zero3_model_states_mem_needs``, term for term.

    Source: deepspeedai/DeepSpeed ``deepspeed/runtime/zero/stage3.py`` (commit edaa7221). Every case keeps
    ``4 x largest_layer_params`` bytes on the GPU (the gathered fp16 layer and its gradient); without offload
    the GPU also holds ``int(18Ψ / N)``, with optimizer offload only ``int(2Ψ / N)``.

    Args:
        total_params: Parameter count Ψ.
        largest_layer_params: Parameters of the largest single module.
        gpus_per_node: GPUs per node.
        nodes: Nodes.
        cpu_offload: Optimizer states on the CPU (``offload_optimizer=cpu``).
        cpu_offload_params: Parameters on the CPU too (``offload_param=cpu``; needs ``cpu_offload``).
        zero_init: Model built under ``deepspeed.zero.Init`` (sharded at construction).
        buffer_factor: DeepSpeed's ``additional_buffer_factor`` on CPU memory.

    Returns:
        The [`Estimate`][calc.peers.estimators.Estimate].

    Examples:
        >>> from calc.units import format_bytes
        >>> e = deepspeed_zero3_estimate(2851e6, 32e6, gpus_per_node=8, cpu_offload=False, cpu_offload_params=False)
        >>> format_bytes(e.gpu_bytes, unit="GiB"), format_bytes(e.cpu_bytes, unit="GiB")
        ('6.09 GiB', '1.43 GiB')
    """
    n = parse_count(total_params, "total_params")
    largest = parse_count(largest_layer_params, "largest_layer_params")
    per_node = parse_positive_int(gpus_per_node, "gpus_per_node")
    node_count = parse_positive_int(nodes, "nodes")
    total_gpus = per_node * node_count
    gpus_factor = 1 / node_count
    largest_layer_memory = 4 * largest
    if cpu_offload and cpu_offload_params:
        gpu = largest_layer_memory
        per_param = 18 * gpus_factor if zero_init else max(4 * per_node, 18 * gpus_factor)
        cpu = n * per_param * buffer_factor
    elif cpu_offload:
        gpu = largest_layer_memory + int(2 * n / total_gpus)
        per_param = 16 * gpus_factor if zero_init else max(4 * per_node, 16 * gpus_factor)
        cpu = n * per_param * buffer_factor
    else:
        gpu = largest_layer_memory + int(18 * n / total_gpus)
        cpu = largest * 4 * per_node * buffer_factor if zero_init else n * 4 * per_node * buffer_factor
    return Estimate(cpu_bytes=int(cpu), gpu_bytes=int(gpu))


LLM_ANALYSIS_RECOMPUTE = ("none", "selective", "full")
"""llm-analysis 0.2.2's ``ActivationRecomputation``: NONE, SELECTIVE (attention core only), FULL."""


def _la_check(recompute: str, tp: int, sp: int | None) -> int:
    if recompute not in LLM_ANALYSIS_RECOMPUTE:
        raise CalcError("recompute", f"must be one of {', '.join(LLM_ANALYSIS_RECOMPUTE)}", recompute)
    sp = tp if sp is None else parse_positive_int(sp, "sp")
    if sp > 1 and sp != tp:  # analysis.py LLMAnalysis.__init__ asserts it (Megatron-LM sequence parallelism)
        raise CalcError("sp", f"must be 1 or equal tp (tp={tp}), as llm-analysis requires", sp)
    return sp


def llm_analysis_layer_activation_bytes(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    ffn_hidden: int,
    *,
    tp: int = 1,
    sp: int | None = None,
    flash_attention: bool = True,
    softmax_dropout: bool = False,
    recompute: str = "none",
    recompute_gelu: bool = False,
    gated: bool = False,
    experts: int = 1,
    top_k: int = 1,
    ep: int = 1,
    activation_bytes: int = 2,
    layernorm_bytes: int = 4,
) -> int:
    """llm-analysis's ``get_activation_memory_per_layer`` (training), term for term.

    Source: cli99/llm-analysis 0.2.2 (PyPI), ``llm_analysis/analysis.py``, ``LLMAnalysis``'s
    ``get_activation_memory_per_layer``, ``..._per_layer_attn``, ``..._per_layer_mlp`` and
    ``..._per_layernorm``, after Korthikanti et al. 2022 (arXiv:2205.05198) Sec. 4.1. With a = ``activation_bytes``,
    t = tp, s_p = sp (llm-analysis's default: sp = tp):

    - full recompute: the layer input ``sbh·a/t`` only;
    - attention: ``(sbh/s_p + 4sbh/t)·a`` plus the core, ``(2sbh + 4·heads·sb)·a/t`` with flash attention or
      ``2·heads·s²b·a/t`` without (none under selective recompute), plus a 1-byte softmax dropout mask
      ``heads·s²b/t`` when asked, plus a 1-byte attention dropout mask ``sbh/s_p`` always;
    - MLP: ``a·sbh·(E/ep)·k/s_p`` plus ``2a·sb·ffn·(E/ep)·k/t`` (``a·…`` with ``recompute_gelu``, ``a/3·…``
      with it and gated units); llm-analysis counts no third gated matrix otherwise;
    - two layer norms, ``2·sbh/s_p·layernorm_bytes``.

    Args:
        seq_len: Sequence length s.
        micro_batch: Micro-batch size b.
        hidden: Hidden size h.
        heads: Attention heads.
        ffn_hidden: MLP width (llm-analysis's ``ffn_embed_dim`` = ``expansion_ratio`` × h).
        tp: Tensor-parallel size.
        sp: Sequence-parallel size (1, or tp; default tp as llm-analysis's ``ParallelismConfig``).
        flash_attention: llm-analysis's ``flash_attn`` (its default: True).
        softmax_dropout: Dropout after the softmax (a 1-byte mask per score).
        recompute: One of [`LLM_ANALYSIS_RECOMPUTE`][calc.peers.estimators.LLM_ANALYSIS_RECOMPUTE].
        recompute_gelu: llm-analysis's ``mlp_recompute_gelu``.
        gated: Gated linear units (counts only with ``recompute_gelu``).
        experts: ``moe_num_experts``.
        top_k: ``moe_top_k``.
        ep: Expert-parallel size.
        activation_bytes: ``activation_bits / 8``.
        layernorm_bytes: ``layernorm_dtype_bytes`` (its default: 4).

    Returns:
        Bytes per layer per GPU, rounded down.

    Examples:
        >>> llm_analysis_layer_activation_bytes(2048, 1, 4096, 32, 16384)  # GPT-like, flash, fp32 norms
        344457216
        >>> llm_analysis_layer_activation_bytes(2048, 1, 4096, 32, 16384, recompute="full")
        16777216
    """
    s, b = parse_positive_int(seq_len, "seq_len"), parse_positive_int(micro_batch, "micro_batch")
    h, n = parse_positive_int(hidden, "hidden"), parse_positive_int(heads, "heads")
    f, t = parse_positive_int(ffn_hidden, "ffn_hidden"), parse_positive_int(tp, "tp")
    sp_ = _la_check(recompute, t, sp)
    a = Fraction(parse_positive_int(activation_bytes, "activation_bytes"))
    if recompute == "full":
        return int(s * b * h * a / t)
    attn = _la_attention(s, b, h, n, t, sp_, a, flash_attention and "flash", softmax_dropout, recompute)
    routed = Fraction(parse_positive_int(experts, "experts"), parse_positive_int(ep, "ep"))
    routed *= parse_positive_int(top_k, "top_k")
    per_gelu = a / 3 if recompute_gelu and gated else a if recompute_gelu else 2 * a
    mlp = a * s * b * h * routed / sp_ + per_gelu * s * b * f * routed / t
    norms = 2 * Fraction(s * b * h, sp_) * parse_positive_int(layernorm_bytes, "layernorm_bytes")
    return int(attn + mlp + norms)


def _la_attention(s: int, b: int, h: int, n: int, t: int, sp: int, a: Fraction, flash, dropout, recompute) -> Fraction:
    """llm-analysis's ``get_activation_memory_per_layer_attn``: the projections' inputs, the core (none under
    selective recompute; ``2sbh + 4·heads·sb`` with flash attention, the ``s²`` scores without, plus a softmax
    dropout mask when asked) and the 1-byte attention dropout mask ``sbh/s_p`` llm-analysis always counts."""
    sbh = s * b * h
    core = Fraction(0)
    if recompute != "selective":
        core = (2 * sbh + 4 * n * s * b) * a / t if flash else 2 * n * s * s * b * a / t
        if dropout:
            core += Fraction(n * s * s * b, t)
    return (Fraction(sbh, sp) + Fraction(4 * sbh, t)) * a + core + Fraction(sbh, sp)


def llm_analysis_activation_bytes(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    ffn_hidden: int,
    num_layers: int,
    vocab_size: int,
    **layer: object,
) -> int:
    """llm-analysis's ``activation_memory_per_gpu`` in ``LLMAnalysis.training``.

    Source: cli99/llm-analysis 0.2.2, ``llm_analysis/analysis.py``, ``LLMAnalysis.training``: every layer of the
    model (``num_layers``, not the stage's share: Korthikanti et al.'s first-stage argument) times
    [`llm_analysis_layer_activation_bytes`][calc.peers.estimators.llm_analysis_layer_activation_bytes], plus the
    logits ``V·sb·a/t`` (``get_activation_memory_output_embedding``) and one final layer norm ``sbh/s_p`` at
    ``layernorm_bytes`` (none under full recompute). The input embedding and the loss are not counted.

    Args:
        seq_len: Sequence length s.
        micro_batch: Micro-batch size b.
        hidden: Hidden size h.
        heads: Attention heads.
        ffn_hidden: MLP width.
        num_layers: Transformer layers L.
        vocab_size: Vocabulary V.
        **layer: The keyword arguments of ``llm_analysis_layer_activation_bytes``.

    Returns:
        Bytes per GPU, rounded down.

    Examples:
        >>> llm_analysis_activation_bytes(2048, 1, 4096, 32, 16384, 32, 50257)
        11262038016
    """
    per_layer = llm_analysis_layer_activation_bytes(seq_len, micro_batch, hidden, heads, ffn_hidden, **layer)
    L, v = parse_positive_int(num_layers, "num_layers"), parse_positive_int(vocab_size, "vocab_size")
    t = parse_positive_int(layer.get("tp", 1), "tp")
    sp_ = _la_check(str(layer.get("recompute", "none")), t, layer.get("sp"))  # type: ignore[arg-type]
    sb = seq_len * micro_batch
    a = parse_positive_int(layer.get("activation_bytes", 2), "activation_bytes")
    logits = Fraction(v * sb * a, t)
    norm = Fraction(0)
    if layer.get("recompute", "none") != "full":
        norm = Fraction(sb * hidden, sp_) * parse_positive_int(layer.get("layernorm_bytes", 4), "layernorm_bytes")
    return int(L * per_layer + logits + norm)


@dataclass(frozen=True)
class LlmAnalysisStates:
    """llm-analysis's per-GPU model states, in bytes.

    Attributes:
        weights: ``weight_memory_per_gpu``.
        gradients: ``gradient_memory_per_gpu``.
        optimizer_states: ``optimizer_state_memory_per_gpu`` (master weights and moments).
        total: Their sum (``weight_grad_op_state_memory_per_gpu``).
    """

    weights: int
    gradients: int
    optimizer_states: int

    @property
    def total(self) -> int:
        """Weights + gradients + optimizer states."""
        return self.weights + self.gradients + self.optimizer_states


def _la_shapes(hidden, heads, ffn_hidden, num_layers, vocab_size, kv_heads, experts, tp, pp, dp, ep, zero_stage):
    """The shape and degree arguments of ``llm_analysis_model_state_bytes``, checked:
    ``(h, heads, ffn, L, V, kv, E, tp, pp, dp, ep)``."""
    h, n = parse_positive_int(hidden, "hidden"), parse_positive_int(heads, "heads")
    f, L = parse_positive_int(ffn_hidden, "ffn_hidden"), parse_positive_int(num_layers, "num_layers")
    v = parse_positive_int(vocab_size, "vocab_size")
    kv = n if kv_heads is None else parse_positive_int(kv_heads, "kv_heads")
    if n % kv:
        raise CalcError("kv_heads", f"must divide heads (heads={n})", kv, code="not-divisible")
    E, t, p = parse_positive_int(experts, "experts"), parse_positive_int(tp, "tp"), parse_positive_int(pp, "pp")
    d, e = parse_positive_int(dp, "dp"), parse_positive_int(ep, "ep")
    if zero_stage not in (0, 1, 2, 3):
        raise CalcError("zero_stage", "must be 0, 1, 2 or 3", zero_stage)
    return h, n, f, L, v, kv, E, t, p, d, e


def llm_analysis_model_state_bytes(
    hidden: int,
    heads: int,
    ffn_hidden: int,
    num_layers: int,
    vocab_size: int,
    *,
    kv_heads: int | None = None,
    experts: int = 1,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    ep: int = 1,
    zero_stage: int = 0,
    weight_bytes: int = 2,
    embedding_bytes: int = 2,
    master_bytes: int = 4,
    optimizer_bytes: int | None = None,
) -> LlmAnalysisStates:
    """llm-analysis's weights, gradients and optimizer states per GPU, term for term.

    Source: cli99/llm-analysis 0.2.2, ``llm_analysis/analysis.py``: ``get_num_params_per_layer_attn``
    (``2h² + 2h·h·kv/heads``, at least one KV head per tp rank, no biases), ``..._mlp`` (``2·h·ffn·E``: no
    third gated matrix), ``..._layernorm`` (2h a layer, h at the end), ``get_num_params_embedding`` (V·h, one
    shared matrix); then ``get_weight_memory_per_layer``, ``get_memory_embedding``,
    ``get_memory_optimizer_state_and_gradient_*`` and ``LLMAnalysis.training``: ``int(L/pp)`` layers; weights
    at ``weight_bytes`` over tp (over dp too at ZeRO-3), gradients at ``master_bytes`` (over dp from ZeRO-2),
    optimizer states at 12 B/param for Adam (``optimizer_bytes`` + ``master_bytes`` otherwise; over dp from
    ZeRO-1). Experts are divided over ep and the MLP's dp share over dp/ep. The last layer norm's optimizer
    state and gradient are divided by tp, as in the source.

    Args:
        hidden: Hidden size h.
        heads: Attention heads.
        ffn_hidden: MLP width.
        num_layers: Layers L.
        vocab_size: Vocabulary V.
        kv_heads: Key/value heads (default: heads).
        experts: Experts per MoE layer.
        tp: Tensor-parallel size.
        pp: Pipeline stages.
        dp: Sharded data-parallel size.
        ep: Expert-parallel size.
        zero_stage: DeepSpeed ZeRO stage, 0 to 3.
        weight_bytes: ``weight_bits / 8``.
        embedding_bytes: ``embedding_bits / 8``.
        master_bytes: ``master_weights_dtype_bytes``.
        optimizer_bytes: ``other_op_bytes`` (None: Adam).

    Returns:
        The [`LlmAnalysisStates`][calc.peers.estimators.LlmAnalysisStates].

    Examples:
        >>> st = llm_analysis_model_state_bytes(4096, 32, 11008, 32, 32000)  # Llama-2-7B-like shapes
        >>> st.weights, st.total
        (10329006080, 92961054720)
    """
    h, n, f, L, v, kv, E, t, p, d, e = _la_shapes(
        hidden, heads, ffn_hidden, num_layers, vocab_size, kv_heads, experts, tp, pp, dp, ep, zero_stage
    )
    wb, mb = Fraction(weight_bytes), Fraction(master_bytes)
    op = Fraction(12) if optimizer_bytes is None else Fraction(optimizer_bytes) + mb
    attn = 2 * h * h + 2 * h * (h * max(Fraction(kv, t), Fraction(1)) * t / n)
    mlp, router, ln, emb = 2 * h * f * E, h * E if E > 1 else 0, 2 * h, v * h
    layers = L // p

    def over(stage: int) -> tuple[Fraction, Fraction]:  # (dp, mlp's dp) divisors from this stage on
        return (Fraction(d), Fraction(d, e)) if zero_stage >= stage else (Fraction(1), Fraction(1))

    d3, m3 = over(3)
    weights = layers * ((attn + ln) * wb / t / d3 + (Fraction(mlp, e) + router) * wb / t / m3)
    weights += Fraction(emb, t) * embedding_bytes / d3 + Fraction(h, t) * wb / d3
    d1, m1 = over(1)
    opt = layers * (op * mlp / e / t / m1 + op * (attn + router + ln) / t / d1) + op * (emb + h) / t / d1
    d2, m2 = over(2)
    grad = layers * (mlp * mb / e / t / m2 + (attn + router + ln) * mb / t / d2) + mb * (emb + h) / t / d2
    return LlmAnalysisStates(weights=int(weights), gradients=int(grad), optimizer_states=int(opt))
