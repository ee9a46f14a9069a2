"""One transformer layer's saved activations, tensor by tensor:
[`layer_activations`][calc.memory.activations.layer_activations] and its
[`LayerActivations`][calc.memory.activations.LayerActivations].

The layer's terms per profile: Megatron-LM's fused kernels (Korthikanti et al. 2022, arXiv:2205.05198,
Sec. 4.1), or what stock Hugging Face transformers saves (``calc.memory.activation_profiles``). The
public names are re-exported by [`calc.memory.activations`][calc.memory.activations].

Examples:
    >>> # Llama-3-8B layer: GQA 32/8, SwiGLU 14336, RMSNorm, no dropout, FlashAttention, bf16
    >>> llama = layer_activations(8192, 1, 4096, 32, kv_heads=8, ffn_hidden=14336, mlp="swiglu",
    ...                           dropout=False, norm="rmsnorm", flash_attention=True)
    >>> llama.total / 2**20
    1089.0
    >>> # GQA without flash: K and V are saved after expansion to all heads (measured 2,629,632)
    >>> layer_activations(128, 2, 256, 8, kv_heads=2, ffn_hidden=688, mlp="swiglu", dropout=False,
    ...                   norm="rmsnorm").total
    2629632
    >>> layer_activations(128, 2, 256, 8, kv_heads=2, ffn_hidden=688, mlp="swiglu", dropout=False,
    ...                   norm="rmsnorm", implementation="hf-eager").total  # measured 4,556,800
    4556800
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, fields
from fractions import Fraction

from calc.errors import CalcError
from calc.memo import memoized
from calc.memory._activation_args import (
    ACTIVATION_BYTES,
    FP32_BYTES,
    LAYOUT_RECOMPUTE_MODES,
    MASK_BYTES,
    _ceil,
    _choice,
    _count,
    _flag,
    _recompute,
)
from calc.memory.activation_profiles import hf_layer_terms

__all__ = ["IMPLEMENTATIONS", "LayerActivations", "MLP_KINDS", "NORM_KINDS", "layer_activations"]

MLP_KINDS: tuple[str, ...] = ("gelu", "swiglu")
"""MLP kinds: ``gelu`` (GPT: one up-projection and GeLU) or ``swiglu`` (Llama: gate and up projections)."""

NORM_KINDS: tuple[str, ...] = ("layernorm", "rmsnorm")
"""Normalization kinds. Both store their input; LayerNorm also keeps a mean and a reciprocal
standard deviation per token, RMSNorm only the reciprocal RMS."""

IMPLEMENTATIONS: tuple[str, ...] = ("megatron", "hf-eager", "hf-sdpa")
"""Whose kernels save the activations: ``megatron`` (Megatron-LM's fused kernels, the accounting of
Korthikanti et al. 2022, the default), ``hf-eager`` and ``hf-sdpa`` (stock Hugging Face transformers with
that ``attn_implementation``; ``calc.memory.activation_profiles`` names their terms)."""

HF_RECOMPUTE_MODES: tuple[str, ...] = ("none", "full")
"""The recomputation the ``hf-*`` profiles take: stock transformers has no selective or per-op checkpointing."""

_NORM_STATS = {"layernorm": 2, "rmsnorm": 1}
"""fp32 statistics per token per norm."""


@dataclass(frozen=True)
class LayerActivations:
    """Bytes one transformer layer stores on one GPU for one micro-batch, tensor by tensor.

    The names follow Korthikanti et al. 2022 (arXiv:2205.05198), Sec. 4.1. With
    ``a`` query heads, ``g`` KV heads, ``d`` the query/key head size, ``d_v`` the
    value head size and ``f`` the MLP width, before any division by the
    tensor-parallel degree:

    How [`layer_activations`][calc.memory.activations.layer_activations] counts each term: Korthikanti
    et al. 2022 (arXiv:2205.05198), Sec. 4.1 and Table 2 generalized term by term (``s`` sequence,
    ``b`` micro-batch, ``h`` hidden, ``a`` query heads, ``g`` KV heads,
    ``d`` query/key head size, ``d_v`` value head size, ``f`` MLP width):

    * **Attention**: QKV input ``2sbh``; Q and K ``2sbad + 2sbgd`` (grouped-query
      attention stores K for ``g`` heads, Ainslie et al. 2023, arXiv:2305.13245);
      softmax ``2as²b``, its dropout mask ``as²b`` and dropout output ``2as²b``;
      V ``2sbgd_v``; output-projection input ``2sbad_v``; dropout mask ``sbh``.
      Without FlashAttention the attention core reads K and V *after* they are
      expanded to all ``a`` heads (Megatron-LM's unfused ``DotProductAttention``
      ``repeat_interleave``s them before ``baddbmm``, which saves them), so K and V
      are ``2sbad`` and ``2sbad_v``; only a fused kernel (or selective
      recomputation, which recomputes the core from the unexpanded inputs) keeps
      them at ``g`` heads.
      Without dropout neither mask nor dropout output exists and the attention over V
      reads the softmax output itself: the ``s²`` terms are ``2as²b``.
    * **MLP**: input ``2sbh``; GeLU keeps its input (the first projection's output)
      ``2sbf`` and output ``2sbf``; SwiGLU keeps the gate and up projections' outputs
      ``2 × 2sbf`` and their product ``2sbf``, which is what a fused SwiGLU
      (Megatron-LM's ``bias_swiglu``) saves; an unfused one also keeps ``SiLU(gate)``,
      another ``2sbf``, not counted here. Dropout mask ``sbh``.
    * **Norms**: each of the two stores its input, ``4sbh`` in all; with
      ``norm_stats`` also their fp32 statistics (LayerNorm mean and reciprocal
      standard deviation, ``8sb`` per norm; RMSNorm one value, ``4sb``).

    With ``a = g``, ``d = d_v = h/a``, ``f = 4h``, GeLU and dropout this is ``34sbh + 5as²b``,
    the paper's total, and every parallel row of Table 2 follows.

    Parallelism and recomputation:

    * Tensor parallelism ``t`` divides the head- and ``f``-sized terms (the paper's
      ``24sbh/t``); the ``h``-sized ones (norm inputs, QKV and MLP inputs, the two
      dropout masks: the paper's ``10sbh``) are replicated unless ``sequence_parallel``
      also divides them by ``t``.
    * Context parallelism ``cp`` (ring attention: Liu et al. 2023, arXiv:2310.01889)
      gives each rank ``s/cp`` tokens; its queries still attend to all ``s`` keys, so
      the ``s²`` terms become ``a(s/cp)s b``.
    * ``flash_attention`` replaces the ``s²`` terms by FlashAttention's fp32 log-sum-exp,
      ``4asb/t`` (Dao et al. 2022, arXiv:2205.14135, Sec. 3.1); its dropout keeps a seed, not a mask.
    * ``recompute="selective"`` drops the attention core (Korthikanti Sec. 5);
      ``"full"`` keeps only the layer input ``2sbh`` (Korthikanti Table 2), divided by
      ``cp``, which shards the sequence, and by ``t`` under sequence parallelism, whose
      layer input is already the sequence shard (Megatron-LM refuses
      ``distribute_saved_activations`` with ``sequence_parallel`` for that reason:
      ``TransformerConfig.__post_init__``).
    * ``implementation`` ``"hf-eager"`` / ``"hf-sdpa"`` counts what stock Hugging Face
      transformers saves instead (fp32 norm inputs and statistics, unfused activations,
      eager attention's fp32 softmax and ``repeat_kv`` copies; see
      ``calc.memory.activation_profiles``); ``flash_attention`` is then
      implied by the implementation, and tensor, sequence and context parallelism and
      selective recomputation are refused (not what stock transformers runs).
    * An MoE layer (``experts_per_token = k > 0``, ``ffn_hidden`` = one expert's width)
      is counted as ``k`` routed experts plus ``shared_experts`` shared ones, each an MLP
      of width ``f``, with balanced routing; it also keeps the ``k`` dispatched copies of
      its input and the ``k`` expert outputs for the weighted combine (``4sbhk``). Router
      probabilities, permutation indices and all-to-all buffers are not counted.

    Attributes:
        norm_inputs: Inputs of the two norms, ``2 × 2sbh`` (the paper's "4sbh").
        norm_stats: fp32 statistics of the two norms (0 unless asked for; the paper ignores them).
        qkv_input: Input of the QKV projection, ``2sbh``.
        query_key: Q and K, the inputs of ``QKᵀ``: ``2sbad + 2sbgd`` (the paper's ``4sbh``).
        value: V, an input of the attention over values: ``2sbgd_v`` (the paper's ``2sbh``).
        softmax_output: The softmax output, ``2as²b``.
        softmax_dropout_mask: Dropout mask on the attention probabilities, ``as²b``.
        softmax_dropout_output: The dropped-out probabilities, input of the attention over V, ``2as²b``.
        flash_stats: FlashAttention's fp32 log-sum-exp, ``4asb``, in place of the three terms above.
        out_proj_input: Input of the attention output projection, ``2sbad_v``.
        attention_dropout_mask: Dropout mask after the attention block, ``sbh``.
        mlp_input: Input of the first MLP projection, ``2sbh`` (an MoE layer also keeps the
            copies dispatched to its experts and the experts' outputs for the weighted combine).
        mlp_hidden: The first projection's output(s), inputs of the activation function:
            ``2sbf`` for GeLU, ``4sbf`` for SwiGLU (gate and up).
        mlp_activation_output: The activation function's output, input of the second projection, ``2sbf``.
        mlp_dropout_mask: Dropout mask after the MLP, ``sbh``.
        layer_input: The layer's input, ``2sbh``: the only tensor kept under full recomputation
            (``2sbh/t`` with sequence parallelism).
        norm_fp32_inputs: The fp32 copies of the norms' inputs an unfused RMSNorm saves, ``2 × 4sbh``
            (Hugging Face profiles only, as are the fields below).
        norm_weight_inputs: The normalized 16-bit tensors the RMSNorm weight multiply saves, ``2 × 2sbh``.
        qk_norm: Qwen3's per-head query and key norms (fp32 copies, normalized tensors, statistics).
        rng_state: Flash SDPA's two int64 RNG scalars on CUDA, 16 bytes.
        mlp_intermediates: Unfused activation intermediates: SiLU(gate), ``2sbf``; ``gelu_new``'s three, ``6sbf``.
        router: An MoE router's fp32 probabilities, top-k values and indices, permutation indices.
        mlp_output: The second MLP projection's output, saved under ``recompute="op"`` (``2sbh``, a partial sum
            of the full hidden size under tensor parallelism).
        reduce_scatter_outputs: The outputs of the two reduce-scatters under tensor and sequence parallelism,
            saved under ``recompute="op"`` (``2 × 2sbh/t``).
    """

    norm_inputs: int
    norm_stats: int
    qkv_input: int
    query_key: int
    value: int
    softmax_output: int
    softmax_dropout_mask: int
    softmax_dropout_output: int
    flash_stats: int
    out_proj_input: int
    attention_dropout_mask: int
    mlp_input: int
    mlp_hidden: int
    mlp_activation_output: int
    mlp_dropout_mask: int
    layer_input: int
    norm_fp32_inputs: int = 0
    norm_weight_inputs: int = 0
    qk_norm: int = 0
    rng_state: int = 0
    mlp_intermediates: int = 0
    router: int = 0
    mlp_output: int = 0
    reduce_scatter_outputs: int = 0

    @functools.cached_property
    def total(self) -> int:
        """All stored bytes of the layer (computed once: the planner reads it for every stage it sizes).

        Examples:
            >>> layer_activations(2048, 1, 12288, 96, tp=8).total / 2**20
            552.0
        """
        return sum(getattr(self, name) for name in _LAYER_PARTS)

    @property
    def attention_core(self) -> int:
        """The bytes selective recomputation drops (Korthikanti Sec. 5): softmax, its dropout, and the
        FlashAttention statistics.

        Examples:
            >>> layer_activations(2048, 1, 12288, 96).attention_core / 2**20
            1920.0
        """
        return (
            self.softmax_output
            + self.softmax_dropout_mask
            + self.softmax_dropout_output
            + self.flash_stats
            + self.rng_state
        )

    def as_dict(self) -> dict[str, int]:
        """The terms and the total as a plain ``dict``.

        Examples:
            >>> layer_activations(1, 1, 8, 1, recompute="full").as_dict()["layer_input"]
            16
        """
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["total"] = self.total
        return out


_LAYER_PARTS: tuple[str, ...] = tuple(f.name for f in fields(LayerActivations))
"""The stored-tensor fields of [`LayerActivations`][calc.memory.activation_layer.LayerActivations], in order."""


@memoized()  # the planner sizes the same layer for every layout that shares its micro-batch and degrees
def layer_activations(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    *,
    kv_heads: int | None = None,
    head_dim: int | None = None,
    v_head_dim: int | None = None,
    ffn_hidden: int | None = None,
    mlp: str = "gelu",
    dropout: bool = True,
    norm: str = "layernorm",
    norm_stats: bool = False,
    experts_per_token: int = 0,
    shared_experts: int = 0,
    tp: int = 1,
    sequence_parallel: bool = False,
    cp: int = 1,
    recompute: str = "none",
    flash_attention: bool = False,
    implementation: str = "megatron",
    qk_norm: bool = False,
    num_experts: int = 0,
    router_weight_bytes: int = 4,
) -> LayerActivations:
    """Activation bytes of one transformer layer with explicit dimensions, tensor by tensor.

    Korthikanti et al. 2022 (arXiv:2205.05198), Sec. 4.1 and Table 2, generalized term by term; each term,
    its formula and its source are under [`LayerActivations`][calc.memory.activations.LayerActivations].
    With GPT's dimensions it is the paper's ``34sbh + 5as²b``. Each term is rounded up to a whole byte.

    Args:
        seq_len: Sequence length ``s`` (the whole sequence, before context parallelism).
        micro_batch: Micro-batch size ``b``.
        hidden: Hidden size ``h``.
        heads: Query heads ``a``.
        kv_heads: KV heads ``g`` (default: ``heads``, multi-head attention).
        head_dim: Query/key head size ``d`` (default: ``hidden // heads``).
        v_head_dim: Value head size ``d_v`` (default: ``head_dim``; differs under MLA).
        ffn_hidden: MLP width ``f`` (default ``4 × hidden``); for MoE, one expert's width.
        mlp: ``"gelu"`` or ``"swiglu"``.
        dropout: Dropout on (attention probabilities and both residual branches).
        norm: ``"layernorm"`` or ``"rmsnorm"`` (matters only with ``norm_stats``).
        norm_stats: Count the norms' fp32 statistics.
        experts_per_token: Routed experts per token ``k`` (0 for a dense MLP).
        shared_experts: Shared experts of an MoE layer (each of width ``ffn_hidden``).
        tp: Tensor-parallel degree ``t``.
        sequence_parallel: Sequence parallelism over the tensor-parallel ranks.
        cp: Context-parallel degree.
        recompute: ``"none"``, ``"selective"``, ``"op"`` (torchtitan's per-op policy) or ``"full"``.
        flash_attention: Fused FlashAttention kernel.
        implementation: A key of [`IMPLEMENTATIONS`][calc.memory.activations.IMPLEMENTATIONS].
        qk_norm: Per-head query/key RMSNorm (Qwen3; Hugging Face profiles only).
        num_experts: Routed experts of an MoE layer (its router's softmax; Hugging Face profiles only).
        router_weight_bytes: Bytes per routing weight the combine saves (HF only): 4 (Mixtral), 2 (Qwen3-MoE).

    Returns:
        The per-GPU [`LayerActivations`][calc.memory.activations.LayerActivations] for one micro-batch.

    Raises:
        CalcError: For a non-positive size, an unknown ``mlp``, ``norm`` or ``recompute``, or no ``head_dim``.

    Examples:
        >>> # GPT-3 175B, t=8 with sequence parallelism: Table 2's sbh(34/t + 5as/(ht)) = 342 MiB
        >>> layer_activations(2048, 1, 12288, 96, tp=8, sequence_parallel=True).total / 2**20
        342.0
    """
    x = _Layer.parse(locals())
    zero = dict.fromkeys((fl.name for fl in fields(LayerActivations)), 0)
    if x.impl != "megatron":
        _check_hf(x.impl, t=x.t, sp=x.sp, cp=x.c, mode=x.mode)
    if x.mode == "full":
        split = x.t if x.sp else 1  # the sequence-parallel layer input is already split over t
        return LayerActivations(**{**zero, "layer_input": _ceil(ACTIVATION_BYTES * x.tokens * x.h / split)})
    if x.impl != "megatron":
        return LayerActivations(**{**zero, **{name: _ceil(value) for name, value in _hf_terms(x).items()}})
    if x.mode == "op":
        return LayerActivations(**{**zero, **{name: _ceil(value) for name, value in _op_terms(x).items()}})
    return LayerActivations(**{name: _ceil(value) for name, value in _megatron_terms(x).items()})


def _op_terms(x: _Layer) -> dict[str, Fraction | int]:
    """torchtitan's per-op selective checkpointing of one layer (``recompute="op"``).

    ``torchtitan/distributed/activation_checkpoint.py``: the policy saves the outputs of the ops in
    ``_op_sac_save_list`` (``aten.mm``, the SDPA kernels, ``reduce_scatter_tensor``, ``max``) except every second
    ``mm`` of the layer's forward, and recomputes the rest from the layer's input. The layer's matmuls in order are
    ``wq, wk, wv, wo, w1, w3, w2``: the odd ones (``wq``, ``wv``, ``w1``, ``w2``) are saved. The attention kernel
    saves its output and fp32 log-sum-exp; under tensor parallelism (with sequence parallelism, as torchtitan runs
    it) the reduce-scatters after ``wo`` and ``w2`` save their sequence-sharded outputs, and ``w2``'s output is the
    full partial sum before it. MoE layers are counted as their ``k + shared`` expert MLPs.
    """
    tokens, h, a, t = x.tokens, x.h, x.a, x.t
    act = ACTIVATION_BYTES
    rep = t if x.sp else 1
    mlps = (x.k + x.shared) if x.k else 1
    return {
        "layer_input": act * tokens * h / rep,  # the checkpointed region's input
        "query_key": act * tokens * a * x.d / t,  # wq's output (wk's is recomputed)
        "value": act * tokens * x.g * x.dv / t,  # wv's output
        "out_proj_input": act * tokens * a * x.dv / t,  # the attention kernel's output
        "flash_stats": FP32_BYTES * tokens * a / t,  # its log-sum-exp
        "mlp_hidden": act * tokens * x.f * mlps / t,  # w1's output (w3's is recomputed)
        "mlp_output": act * tokens * h * mlps,  # w2's output, the partial sum before the reduce-scatter
        "reduce_scatter_outputs": 2 * act * tokens * h / t if t > 1 else 0,
    }


@dataclass(frozen=True)
class _Layer:
    """[`layer_activations`][calc.memory.activations.layer_activations]'s arguments, checked once, in the
    paper's letters."""

    s: int
    b: int
    h: int
    a: int
    g: int
    d: int
    dv: int
    f: int
    kind: str
    drop: bool
    norm_kind: str
    stats: bool
    k: int
    shared: int
    t: int
    sp: bool
    c: int
    mode: str
    flash: bool
    impl: str
    qkn: bool
    experts: int
    router_bytes: int

    @property
    def tokens(self) -> Fraction:
        """Tokens of the micro-batch on this context-parallel rank."""
        return Fraction(self.s * self.b, self.c)

    @classmethod
    def parse(cls, v: dict) -> _Layer:
        """Check each argument (named as the caller named it) and default the head and MLP sizes."""
        h, a = _count(v["hidden"], "hidden"), _count(v["heads"], "heads")
        if v["head_dim"] is None:
            if h % a:
                raise CalcError(
                    "head_dim",
                    f"must be given when heads do not divide hidden (hidden={h}, heads={a})",
                    code="missing-field",
                )
            d = h // a
        else:
            d = _count(v["head_dim"], "head_dim")
        if v["router_weight_bytes"] not in (2, 4):
            raise CalcError("router_weight_bytes", "must be 2 or 4", v["router_weight_bytes"])
        return cls(
            s=_count(v["seq_len"], "seq_len"),
            b=_count(v["micro_batch"], "micro_batch"),
            h=h,
            a=a,
            g=a if v["kv_heads"] is None else _count(v["kv_heads"], "kv_heads"),
            d=d,
            dv=d if v["v_head_dim"] is None else _count(v["v_head_dim"], "v_head_dim"),
            f=4 * h if v["ffn_hidden"] is None else _count(v["ffn_hidden"], "ffn_hidden"),
            kind=_choice(v["mlp"], "mlp", MLP_KINDS),
            drop=_flag(v["dropout"], "dropout"),
            norm_kind=_choice(v["norm"], "norm", NORM_KINDS),
            stats=_flag(v["norm_stats"], "norm_stats"),
            k=_count(v["experts_per_token"], "experts_per_token", minimum=0),
            shared=_count(v["shared_experts"], "shared_experts", minimum=0),
            t=_count(v["tp"], "tp"),
            sp=_flag(v["sequence_parallel"], "sequence_parallel"),
            c=_count(v["cp"], "cp"),
            mode=_recompute(v["recompute"], LAYOUT_RECOMPUTE_MODES),
            flash=_flag(v["flash_attention"], "flash_attention"),
            impl=_choice(v["implementation"], "implementation", IMPLEMENTATIONS),
            qkn=_flag(v["qk_norm"], "qk_norm"),
            experts=_count(v["num_experts"], "num_experts", minimum=0),
            router_bytes=v["router_weight_bytes"],
        )


def _hf_terms(x: _Layer) -> dict[str, Fraction | int]:
    """The stock Hugging Face profile's terms (``calc.memory.activation_profiles``)."""
    return hf_layer_terms(
        tokens=x.tokens,
        seq_len=x.s,
        hidden=x.h,
        heads=x.a,
        kv_heads=x.g,
        head_dim=x.d,
        v_head_dim=x.dv,
        ffn_hidden=x.f,
        mlp=x.kind,
        norm=x.norm_kind,
        attention=x.impl.removeprefix("hf-"),
        dropout=x.drop,
        qk_norm=x.qkn,
        experts_per_token=x.k,
        num_experts=x.experts,
        router_weight_bytes=x.router_bytes,
        shared_experts=x.shared,
    )


def _megatron_terms(x: _Layer) -> dict[str, Fraction | int]:
    """Korthikanti et al. 2022 Sec. 4.1's terms with explicit dimensions (see
    [`LayerActivations`][calc.memory.activations.LayerActivations])."""
    tokens, h, a, d, dv, f, t, k = x.tokens, x.h, x.a, x.d, x.dv, x.f, x.t, x.k
    rep = t if x.sp else 1  # what divides the h-sized terms: nothing under plain TP, t with SP
    act = ACTIVATION_BYTES
    mask = MASK_BYTES if x.drop else 0
    scores = tokens * x.s * a / t  # attention-score elements per GPU: a (s/cp) s b / t
    mlps = (k + x.shared) if k else 1
    up = 2 if x.kind == "swiglu" else 1  # projections feeding the activation function
    core = x.mode == "none"
    unfused = core and not x.flash
    kv = a if unfused else x.g  # the unfused core saves K and V expanded to all heads
    return {
        "norm_inputs": 2 * act * tokens * h / rep,
        "norm_stats": 2 * FP32_BYTES * _NORM_STATS[x.norm_kind] * tokens / rep if x.stats else 0,
        "qkv_input": act * tokens * h / rep,
        "query_key": act * tokens * (a + kv) * d / t,
        "value": act * tokens * kv * dv / t,
        "softmax_output": act * scores if unfused else 0,
        "softmax_dropout_mask": mask * scores if unfused else 0,
        "softmax_dropout_output": act * scores if unfused and x.drop else 0,
        "flash_stats": FP32_BYTES * tokens * a / t if core and x.flash else 0,
        "out_proj_input": act * tokens * a * dv / t,
        "attention_dropout_mask": mask * tokens * h / rep,
        "mlp_input": act * tokens * h * (1 + 2 * k) / rep,
        "mlp_hidden": up * act * tokens * f * mlps / t,
        "mlp_activation_output": act * tokens * f * mlps / t,
        "mlp_dropout_mask": mask * tokens * h / rep,
        "layer_input": 0,
    }


def _check_hf(impl: str, *, t: int, sp: bool, cp: int, mode: str) -> None:
    """Refuse what stock transformers does not run (or the profiles were not measured for)."""
    for field, value, ok, want in (
        ("tp", t, t == 1, "1"),
        ("sequence_parallel", sp, not sp, "off"),
        ("cp", cp, cp == 1, "1"),
    ):
        if not ok:
            raise CalcError(
                field,
                f"must be {want} with implementation {impl} (the profiles are stock transformers on one GPU)",
                value,
                code="unsupported",
            )
    if mode not in HF_RECOMPUTE_MODES:
        raise CalcError(
            "recompute",
            f"must be none or full with implementation {impl} (selective and per-op recomputation are "
            "Megatron-LM's and torchtitan's)",
            mode,
            code="unsupported",
        )
