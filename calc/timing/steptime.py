"""Step time of a training layout: compute, exposed communication and the pipeline bubble.

For an [`Architecture`][calc.models.architecture.Architecture], a [`Layout`][calc.memory.layout.Layout], a GPU
([`calc.hardware`][calc.hardware]) and a [`Network`][calc.parallel.comm.Network],
[`step_time`][calc.timing.steptime.step_time] predicts one optimizer step of the slowest pipeline stage:

* **Compute.** Forward FLOPs per layer are ``2 × (matmul weights a token uses) × tokens`` plus the
  attention core ``4·b·s²·(n_h·d)`` (``QKᵀ`` and attention-times-``V``, Narayanan et al. 2021,
  arXiv:2104.04473, Appendix: ``24Bsh² + 4Bs²h`` per layer for GPT); MoE layers count the
  shared experts and ``top_k`` routed experts per token; the logit layer ``2·b·s·h·V``. Backward
  is twice the forward; full recomputation adds one more forward of every layer (Eq. 3: four
  forward passes), selective recomputation the attention core (Korthikanti et al. 2022,
  arXiv:2205.05198, Eq. 8), torchtitan's per-op policy (``recompute="op"``) the forward of each matmul whose
  output it does not save (``_op_recomputed_weights``). Matmuls run at ``matmul_efficiency`` of the GPU's dense
  peak; the element-wise work (norms, softmax, dropout, GeLU) is memory-bound: ``memory_passes`` reads and
  writes of the layer's stored activations (Korthikanti Table 2: ``sbh(10 + 24/t + 5as/(ht))``, or
  ``sbh(34/t + 5as/(ht))`` with sequence parallelism) at HBM bandwidth. FP8 linear layers add passes for
  their casts, and torchtitan without ``torch.compile`` runs more passes (both in
  [`calc.timing.efficiency`][calc.timing.efficiency]).
* **Exposed communication** ([`calc.parallel.comm`][calc.parallel.comm], α–β per link level): TP, CP and EP
  collectives sit on the critical path, except that under the Megatron stack each layer's two backward TP
  input-gradient collectives run under their weight gradients (Megatron-LM's asynchronous ``dgrad`` all-reduce or
  reduce-scatter, [`calc.timing.overlap`][calc.timing.overlap]); the data-parallel gradient reduce-scatter (or
  all-reduce) overlaps the last micro-batch's backward except its last bucket (``dp_bucket_params``
  parameters, Megatron-LM's ``DistributedDataParallel`` default of ``max(40M, 1M × dp)``);
  ZeRO-1/2's parameter all-gather after the optimizer step is exposed; ZeRO-3's per-layer
  all-gathers are prefetched one layer ahead, so only what a layer's gather takes beyond the
  previous layer's compute shows, plus the first layer's; pipeline sends are exposed (overlapped with
  interleaving). [`calc.timing.overlap`][calc.timing.overlap] has each rule and its knob.
* **Bubble.** ``(p-1)/(v·m)`` of the busy time for 1F1B and interleaved 1F1B (Narayanan Sec.
  2.2), taken from [`calc.parallel.pipeline`][calc.parallel.pipeline] (the schedule API when it has one).

Outputs: step time, tokens/s, model TFLOP/s per GPU (no recomputation counted, Korthikanti
Eq. 7's convention), hardware TFLOP/s (with it; Narayanan Table 1's convention), MFU and HFU.
Not modelled: the optimizer step itself, data loading and kernel-launch gaps; stragglers and congestion are
one fitted allowance (``straggler_per_doubling``), TP overlap beyond Megatron's backward ``dgrad`` a share
(``tp_overlap``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from fractions import Fraction

from calc.errors import CalcError
from calc.hardware import GPU
from calc.hardware import gpu as gpu_preset
from calc.memo import memoized
from calc.memory.layout import Layout, check_layout
from calc.models.architecture import Architecture
from calc.parallel.comm import StepComm, step_communication
from calc.parallel.interconnects import SCALE_UP_FOR_GPU
from calc.parallel.network import Network
from calc.parallel.pipeline import schedule_bubble
from calc.timing._breakdown import _rows, _straggler_rows
from calc.timing._stage import _column_weights, _elementwise_bytes, _op_recomputed_weights, _row_weights
from calc.timing.efficiency import (
    FP8_MEMORY_PASSES,
    MAX_PASSES,
    STRAGGLER_PER_DOUBLING,
    elementwise_passes,
    matmul_efficiency_for,
    straggler_allowance,
)
from calc.timing.efficiency import attention_efficiency as attention_efficiency_for
from calc.timing.overlap import PREFETCH_INTERFERENCE, TP_OVERLAP, dgrad_overlap_default, exposed_communication

__all__ = [
    "DP_BUCKET_PARAMS",
    "MATMUL_EFFICIENCY",
    "MEMORY_PASSES",
    "StepTime",
    "layer_flops",
    "step_time",
]

MATMUL_EFFICIENCY: float = 0.68
"""Default achieved share of the dense bf16 peak for the transformer's matmuls.

Fitted, once, jointly with [`MEMORY_PASSES`][calc.timing.steptime.MEMORY_PASSES], to Narayanan et al. 2021
Table 1 (ten GPT models on up to 3,072 A100s, Megatron-LM): with 0.68 and 10 every row is predicted
within ±6% (``tests/test_steptime.py`` holds ±15%). It is the whole-layer matmul share, so it sits
below a single large GEMM's; the same paper's best run reaches 52% of peak end to end. A reader's
measured efficiency replaces it (``matmul_efficiency=``)."""

MEMORY_PASSES: float = 10.0
"""Default HBM passes over a layer's stored activations per micro-batch for element-wise work.

Forward writes them and backward reads and writes them (about three passes), and full
recomputation writes them again; the default of 10 also covers the softmax's, dropout's and GeLU's
intermediate reads and writes. It is the second of the two defaults fitted jointly to Narayanan
Table 1; it is what makes a small hidden size slower per FLOP (element-wise bytes grow as ``h``,
matmul FLOPs as ``h²``)."""

DP_BUCKET_PARAMS: int = 40_000_000
"""Gradient bucket for the overlapped data-parallel reduction, in parameters: Megatron-LM's
``DistributedDataParallel`` uses ``bucket_size = max(40000000, 1000000 * dp_size)``. The last
bucket's reduction is exposed."""


def layer_flops(arch: Architecture, seq_len: int, micro_batch: int, *, moe: bool = False) -> tuple[int, int]:
    """Forward FLOPs of one transformer layer on one micro-batch: ``(matmul, attention core)``.

    Matmuls: ``2 × weights × tokens`` for the attention projections and the (dense, or shared
    plus ``top_k`` routed) MLP; attention core ``4·b·s²·n_h·d`` (Narayanan et al. 2021, Appendix:
    ``24Bsh² + 4Bs²h`` for a GPT layer with ``h = n_h·d``; causal masking is not discounted, as
    there).

    Examples:
        >>> from calc.models.presets import preset
        >>> mm, attn = layer_flops(preset("megatron-175b"), 2048, 1)
        >>> mm / (24 * 2048 * 12288**2), attn == 4 * 2048**2 * 12288
        (1.00006103515625, True)
    """
    tokens = seq_len * micro_batch
    if moe:
        mlp = arch.shared_expert_params_per_layer + arch.experts_per_token * arch.params_per_expert
    else:
        mlp = arch.dense_mlp_params
    matmul = 2 * (arch.attention_params_per_layer + mlp) * tokens
    attention = 4 * micro_batch * seq_len * seq_len * arch.num_heads * arch.head_dim
    return matmul, attention


def _passes_of(layout: Layout, dtype: str, given: float | None, fp8: float) -> tuple[float, float]:
    """The element-wise HBM passes of ``layout`` in ``dtype`` (`calc.timing.efficiency.elementwise_passes`)."""
    given = None if given is None else _passes(given, "memory_passes")
    return elementwise_passes(MEMORY_PASSES, stack=layout.stack, compile=layout.compile, dtype=dtype,
                              fp8=_passes(fp8, "fp8_memory_passes"), given=given)  # fmt: skip


def _passes(value: object, field_name: str) -> float:
    """``value`` as a count of HBM passes, from 0 to [`MAX_PASSES`][calc.timing.efficiency.MAX_PASSES]."""
    rule = f"must be a number from 0 to {MAX_PASSES}"
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)) or not 0 <= float(value) <= MAX_PASSES:
        raise CalcError(field_name, rule, value)
    return float(value)


def _fraction(value: object, field_name: str, zero: float | None = None) -> float:
    """``value`` as a share in ``(0, 1]``; ``0`` itself gives ``zero`` when that is given."""
    rule = "must be a number greater than 0 and at most 1"
    if zero is not None and value == 0:
        return zero
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise CalcError(field_name, rule, value)
    number = float(value)
    if not 0 < number <= 1:
        raise CalcError(field_name, rule, value)
    return number


@dataclass(frozen=True)
class StepTime:
    """One optimizer step, predicted.

    Attributes:
        step_time_s: Seconds per step.
        compute_s: Seconds of compute on the slowest stage (all micro-batches).
        bubble_s: Seconds the slowest stage idles in the pipeline bubble.
        exposed_s: Exposed communication, seconds, per collective (names as in
            [`calc.parallel.comm`][calc.parallel.comm]).
        tokens_per_s: Tokens per second for the whole job.
        model_flops: FLOPs per step without recomputation (the MFU numerator).
        hardware_flops: FLOPs per step actually run (recomputation included).
        tflops_per_gpu: Model TFLOP/s per GPU.
        hardware_tflops_per_gpu: Hardware TFLOP/s per GPU (Narayanan Table 1 counts these).
        mfu: Model FLOPs utilization.
        hfu: Hardware FLOPs utilization.
        breakdown: ``(part, seconds, explanation)`` rows summing to ``step_time_s``.
    """

    step_time_s: float
    compute_s: float
    bubble_s: float
    exposed_s: dict[str, float]
    tokens_per_s: float
    model_flops: int
    hardware_flops: int
    tflops_per_gpu: float
    hardware_tflops_per_gpu: float
    mfu: float
    hfu: float
    breakdown: tuple[tuple[str, float, str], ...] = field(default=())

    def as_dict(self) -> dict[str, object]:
        """Plain data for JSON and the calculators."""
        out: dict[str, object] = {f.name: getattr(self, f.name) for f in fields(self)}
        out["exposed_s"] = dict(self.exposed_s)
        out["breakdown"] = [{"part": p, "seconds": s, "why": w} for p, s, w in self.breakdown]
        return out


def _bubble(pp: int, m: int, v: int, schedule: str | None) -> float:
    """Bubble / busy time of the schedule in use (default: interleaved 1F1B when ``v > 1``, else 1F1B)."""
    if pp == 1:
        return 0.0
    name = schedule or ("interleaved" if v > 1 else "1f1b")
    if name == "interleaved" and m % pp:
        name, v = "1f1b", 1  # the interleaved schedule needs m a multiple of p; Megatron falls back likewise
    return float(schedule_bubble(name, pp, m, v if name == "interleaved" else 1, convention="ideal"))


def step_time(
    arch: Architecture,
    layout: Layout,
    *,
    gpu: GPU | str = "h100-sxm",
    network: Network | None = None,
    matmul_efficiency: float | None = None,
    attention_efficiency: float | None = None,
    memory_passes: float | None = None,
    dp_bucket_params: int = DP_BUCKET_PARAMS,
    dtype: str = "bf16",
    schedule: str | None = None,
    check: bool = True,
    tp_overlap: float = TP_OVERLAP,
    overlap_param_gather: bool = False,
    p2p_overlap: bool | None = None,
    prefetch_interference: float = PREFETCH_INTERFERENCE,
    reshard_after_forward: bool | None = None,
    straggler_per_doubling: float = STRAGGLER_PER_DOUBLING,
    tp_dgrad_overlap: bool | None = None,
    tp_comm_overlap: bool = False,
    fp8_memory_passes: float = FP8_MEMORY_PASSES,
) -> StepTime:
    """Predict one optimizer step of ``layout`` training ``arch`` (see the module docstring for the model).

    Args:
        arch: The model.
        layout: The layout; ``global_batch`` must be set (it fixes the micro-batches per step).
        gpu: A [`GPU`][calc.hardware.GPU] or preset name.
        network: The cluster's links (default: the GPU's scale-up link and InfiniBand NDR, 8 per node).
        matmul_efficiency: Achieved share of the ``dtype`` peak in matmuls (default: the GPU generation's,
            [`matmul_efficiency_for`][calc.timing.efficiency.matmul_efficiency_for]).
        attention_efficiency: Achieved share of the bf16 peak (FP8 recipes cast the linear layers only) in the
            FlashAttention core (default: [`attention_efficiency`][calc.timing.efficiency.attention_efficiency]).
        memory_passes: HBM passes for element-wise work (``None``: the stack's), and ``fp8_memory_passes`` for FP8's
            casts: [`elementwise_passes`][calc.timing.efficiency.elementwise_passes].
        dp_bucket_params: Parameters per gradient bucket (the last one is exposed).
        schedule: A pipeline schedule of [`calc.parallel.pipeline`][calc.parallel.pipeline] (``gpipe``, ``1f1b``,
            ``interleaved``, ``zb-h1``, ``dualpipe``); default interleaved when ``interleave > 1``, else 1F1B.
        check: Run [`check_layout`][calc.memory.layout.check_layout] first (the planner has already).
        tp_overlap: With ``overlap_param_gather``, ``p2p_overlap``, ``prefetch_interference``, ``tp_dgrad_overlap``
            (``None``: the stack's) and ``tp_comm_overlap``: the knobs of [`calc.timing.overlap`][calc.timing.overlap].
        reshard_after_forward: ZeRO-3: ``False`` gathers once per micro-batch; ``None``: the layout's (its stack's).
        straggler_per_doubling: [`straggler_allowance`][calc.timing.efficiency.straggler_allowance]'s rate.

    Returns:
        A [`StepTime`][calc.timing.steptime.StepTime]; raises `CalcError` on a layout that cannot run the model.

    Examples:
        >>> from calc.models.presets import preset
        >>> lay = Layout(tp=8, pp=8, dp=24, global_batch=2304, seq_len=2048, recompute="full", interleave=2)
        >>> t = step_time(preset("narayanan-145.6b"), lay, gpu="a100-80", network=Network("nvlink3", "ib-hdr"))
        >>> 130 < t.hardware_tflops_per_gpu < 170   # Narayanan Table 1: 148
        True
    """
    _need_batch(layout, arch if check else None)
    g = gpu if isinstance(gpu, GPU) else gpu_preset(gpu)
    net = network or Network(SCALE_UP_FOR_GPU.get(g.name, "nvlink4"), "ib-ndr", gpus_per_node=g.gpus_per_node)
    (eff, attn_eff), (peak, attn_peak) = _rates(g, layout, matmul_efficiency, attention_efficiency), _peaks(g, dtype)
    passes = _passes_of(layout, dtype, memory_passes, fp8_memory_passes)
    c = _stage_compute(arch, layout, (peak * eff, attn_peak * attn_eff), g.hbm_bytes_per_s, passes)
    m = layout.num_microbatches or 1
    compute = m * c.t_mb
    step = _communication(arch, layout, net, m, reshard_after_forward)
    exposed = exposed_communication(step, layout, c.t_mb, c.layers, bucket_params=dp_bucket_params,
        prefetch_interference=prefetch_interference, tp_overlap=tp_overlap, overlap_param_gather=overlap_param_gather,
        p2p_overlap=p2p_overlap, wgrad_s=c.wgrad if _dgrad(tp_dgrad_overlap, layout) else None,
        userbuffers=(c.wgrad, c.rgemm) if _bool_arg(tp_comm_overlap, "tp_comm_overlap") else None,
        dualpipe=schedule == "dualpipe")  # fmt: skip
    # fsum: exact in any order (a set's follows the hash seed) and on 3.11 too, so Pyodide prints CPython's digits
    critical = math.fsum(exposed[n][0] for n in {t.name for t in step.terms if t.group in ("tp", "cp", "ep")})
    bubble = _bubble(layout.pp, m, layout.interleave, schedule) * (compute + critical)
    busy = compute + bubble + math.fsum(s for s, _ in exposed.values())
    per_doubling = _fraction(straggler_per_doubling, "straggler_per_doubling", 0.0)
    allowance = straggler_allowance(layout.gpus or 1, per_doubling)
    total = busy * (1 + allowance)
    rows = _rows(c, (m, layout.pp, layout.interleave, schedule), (eff, attn_eff, peak, attn_peak, passes), compute,
                 bubble, step, exposed) + _straggler_rows(layout.gpus or 1, allowance, per_doubling, busy)  # fmt: skip
    return _result(layout, c.model_mb * m * layout.dp, c.hw_mb * m * layout.dp, total, compute, bubble, exposed, peak,
                   rows)  # fmt: skip


def _need_batch(layout: Layout, arch: Architecture | None = None) -> None:
    """Refuse a layout without a global batch; with ``arch``, check the layout against it first."""
    if arch is not None:
        check_layout(arch, layout)
    if layout.global_batch is None:
        raise CalcError("global_batch", "must be given to time a step (it fixes the micro-batches)", None)


def _dgrad(value: bool | None, layout: Layout) -> bool:
    """``tp_dgrad_overlap`` as given, or the layout's stack's default."""
    if value is None:
        return dgrad_overlap_default(layout.stack)
    if not isinstance(value, bool):
        raise CalcError("tp_dgrad_overlap", "must be true or false", value)
    return value


def _bool_arg(value: object, name: str) -> bool:
    if not isinstance(value, bool):
        raise CalcError(name, "must be true or false", value)
    return value


def _rates(g: GPU, layout: Layout, matmul: float | None, attention: float | None) -> tuple[float, float]:
    """The matmul and attention-core efficiencies: given, or the defaults of `calc.timing.efficiency`."""
    eff = matmul_efficiency_for(g) if matmul is None else _fraction(matmul, "matmul_efficiency")
    if attention is not None:
        return eff, _fraction(attention, "attention_efficiency")
    if not layout.flash_attention:
        return eff, eff
    # Under context parallelism each rank's kernel runs on s / cp queries against s / cp keys per ring step
    return eff, attention_efficiency_for(g, layout.seq_len // layout.cp, layout.stack)


def _peaks(g: GPU, dtype: str) -> tuple[float, float]:
    """The matmuls' peak in ``dtype`` and the attention core's: FP8 recipes (Transformer Engine's, torchao's
    ``Float8Linear``) cast the linear layers only, so the core stays a bf16 FlashAttention kernel at the 16-bit peak."""
    peak = g.peak_flops(dtype)
    return peak, g.peak_flops("bf16") if dtype == "fp8" else peak


@dataclass(frozen=True)
class _Compute:
    """One micro-batch on the busiest stage: FLOPs per micro-batch (model and hardware, whole model), the
    busiest stage's layers, and its seconds of matmuls, attention core and element-wise work on one GPU;
    ``wgrad``: one layer's seconds of its two column-parallel weight gradients (the fewer of dense and MoE), which
    are also their forward GEMMs; ``rgemm``: the same for its two row-parallel linears."""

    model_mb: int
    hw_mb: int
    layers: int
    t_flops: float
    t_attn: float
    t_mem: float
    wgrad: tuple[float, float] = (0.0, 0.0)
    rgemm: tuple[float, float] = (0.0, 0.0)

    @property
    def t_mb(self) -> float:
        """Seconds per micro-batch on the busiest stage."""
        return self.t_flops + self.t_attn + self.t_mem


def _stage_layers(arch: Architecture, layout: Layout) -> tuple[int, ...]:
    """Layers per pipeline stage: the layout's split, or, for an interleaved layout whose ``pp × interleave`` does
    not divide the layers, the layers as evenly as they go with the remainder on the middle stages (Llama 3's
    126 layers on 16 stages: one fewer on the first and last, Dubey et al. 2024 Sec. 3.3.2).

    Examples:
        >>> from calc.models.presets import preset
        >>> max(_stage_layers(preset("llama3.1-405b"), Layout(pp=16, interleave=4)))
        8
    """
    n, p = arch.num_layers, layout.pp
    try:
        counts = layout.stage_layer_counts(n)
    except CalcError:  # a split the layout's rules refuse (more chunks than layers): time it as even as it goes
        counts = ()
    return counts if len(counts) == p and sum(counts) == n else _even_split(n, p)


def _even_split(layers: int, p: int) -> tuple[int, ...]:
    """Layers per stage for ``p`` stages as even as they go, the first and last stages short first (Llama 3's 126
    layers on 16 stages: 7, 8 × 14, 7; Dubey et al. 2024, arXiv:2407.21783, Sec. 3.3.2)."""
    base, extra = divmod(layers, p)
    order = sorted(range(p), key=lambda i: (min(i, p - 1 - i), i))
    fewer = set(order[: p - extra]) if extra else set(range(p))
    return tuple(base if i in fewer else base + 1 for i in range(p))


def _stage_compute(
    arch: Architecture,
    layout: Layout,
    rates: tuple[float, float],
    hbm: float,
    memory_passes: tuple[float, float],
    counts: tuple[int, ...] | None = None,
) -> _Compute:
    """FLOPs per micro-batch and the busiest stage's seconds per micro-batch (module docstring: Narayanan et al.
    2021 Appendix for the FLOPs, Korthikanti et al. 2022 Table 2 for the element-wise bytes)."""
    counts = counts or _stage_layers(arch, layout)
    shape = (layout.tp, layout.cp, layout.micro_batch, layout.seq_len, layout.recompute, layout.flash_attention,
             layout.sequence_parallel)  # fmt: skip
    return _compute_of(arch, shape, rates, hbm, memory_passes, tuple(counts))


@memoized()  # the planner times many layouts that share a stage's shape, at every ZeRO stage and dp
def _compute_of(
    arch: Architecture,
    shape: tuple[int, int, int, int, str, bool, bool],
    rates: tuple[float, float],
    hbm: float,
    memory_passes: tuple[float, float],
    counts: tuple[int, ...],
) -> _Compute:
    """[`_stage_compute`][] of the layout's ``shape``: ``(tp, cp, micro_batch, seq_len, recompute,
    flash_attention, sequence_parallel)``, the fields it reads."""
    t, c, b, s, recompute, flash, sp = shape
    moe_layers = arch.num_moe_layers
    kinds = [(False, arch.num_layers - moe_layers)] + ([(True, moe_layers)] if moe_layers else [])
    model_fwd = hw_mm = hw_attn = mem_bytes = cast_bytes = 0
    passes, casts = memory_passes  # over the stored activations, and over them without scores for FP8's casts
    col = [min(w) for w in zip(*(_column_weights(arch, moe=moe) for moe, count in kinds if count), strict=True)]
    row = [min(w) for w in zip(*(_row_weights(arch, moe=moe) for moe, count in kinds if count), strict=True)]
    for moe, count in kinds:
        if not count:
            continue
        mm, attn = layer_flops(arch, s, b, moe=moe)
        if flash:
            attn //= 2  # FlashAttention skips the masked half of a causal score matrix
        model_fwd += count * (mm + attn)
        # Full recomputation re-runs every forward; selective, the attention core's; op, the matmuls it does not save
        hw_mm += count * mm * (4 if recompute == "full" else 3)
        hw_mm += count * 2 * _op_recomputed_weights(arch, moe=moe) * s * b if recompute == "op" else 0
        hw_attn += count * attn * (4 if recompute in ("full", "selective") else 3)
        mem_bytes += count * _elementwise_bytes(s, b, arch.hidden_size, arch.num_heads, t, c, sp, flash)
        cast_bytes += count * _elementwise_bytes(s, b, arch.hidden_size, arch.num_heads, t, c, sp, True) if casts else 0
    logits = 2 * b * s * arch.hidden_size * arch.vocab_size
    n = arch.num_layers
    # Busiest stage: the most layers, or the last stage's layers plus the logit layer, whichever is slower.
    busiest = max(
        range(len(counts)),
        key=lambda i: counts[i] * (hw_mm + hw_attn) / n + (3 * logits if i == len(counts) - 1 else 0),
    )
    share = Fraction(counts[busiest], n)
    head = 3 * logits if busiest == len(counts) - 1 else 0
    mm_rate, attn_rate = rates
    return _Compute(
        model_mb=3 * (model_fwd + logits),  # forward + backward (twice the forward)
        hw_mb=hw_mm + hw_attn + 3 * logits,
        layers=counts[busiest],
        t_flops=float((hw_mm * share + head) / (t * c)) / mm_rate,
        t_attn=float(hw_attn * share / (t * c)) / attn_rate,
        t_mem=(float(mem_bytes * share) * passes + float(cast_bytes * share) * casts) / hbm,
        wgrad=(2 * s * b * col[0] / (t * c) / mm_rate, 2 * s * b * col[1] / (t * c) / mm_rate),
        rgemm=(2 * s * b * row[0] / (t * c) / mm_rate, 2 * s * b * row[1] / (t * c) / mm_rate),
    )


def _communication(arch: Architecture, layout: Layout, net: Network, m: int, reshard: bool | None) -> StepComm:
    """Every collective of the step ([`step_communication`][calc.parallel.comm.step_communication]); ``reshard``
    ``None`` is the layout's [`reshards_after_forward`][calc.memory.layout.Layout.reshards_after_forward]."""
    return step_communication(
        params=arch.param_count, layers=arch.num_layers, hidden=arch.hidden_size, seq=layout.seq_len,
        micro_batch=layout.micro_batch, num_microbatches=m,
        **_same_names(layout, "dp", "tp", "pp", "cp", "ep", "sequence_parallel"),
        zero_stage=layout.effective_zero_stage, virtual_stages=layout.interleave, recompute=layout.recompute == "full",
        expert_params=arch.num_moe_layers * arch.expert_params_per_layer, moe_layers=arch.num_moe_layers or None,
        top_k=max(1, arch.experts_per_token), kv_dims=arch.num_kv_heads * (arch.head_dim + arch.v_head_dim),
        **_same_names(net, *_NETWORK_ARGS),
        reshard_after_forward=layout.reshards_after_forward if reshard is None else reshard,
    )  # fmt: skip


_NETWORK_ARGS = ("gpus_per_node", "intra", "inter", "intra_efficiency", "inter_efficiency", "nics_per_node",
                 "latency", "pod_gpus", "oversubscription")  # fmt: skip
"""The [`Network`][calc.parallel.comm.Network] fields ``step_communication`` takes under the same names."""


def _same_names(obj: object, *names: str) -> dict:
    """``{name: obj.name}`` for each of ``names``: attributes passed on as keyword arguments of the same name."""
    return {name: getattr(obj, name) for name in names}


def _result(
    layout: Layout,
    model_flops: int,
    hardware_flops: int,
    total: float,
    compute: float,
    bubble: float,
    exposed: dict[str, tuple[float, str]],
    peak: float,
    rows: list[tuple[str, float, str]],
) -> StepTime:
    """The [`StepTime`][calc.timing.steptime.StepTime] of a step of ``total`` seconds (``exposed``: each
    collective's exposed seconds and why): throughput and utilizations."""
    gpus = layout.gpus or 1
    per_gpu = model_flops / total / gpus
    hw_per_gpu = hardware_flops / total / gpus
    return StepTime(
        step_time_s=total,
        compute_s=compute,
        bubble_s=bubble,
        exposed_s={k: s for k, (s, _) in exposed.items()},
        tokens_per_s=(layout.global_batch or 0) * layout.seq_len / total,
        model_flops=model_flops,
        hardware_flops=hardware_flops,
        tflops_per_gpu=per_gpu / 1e12,
        hardware_tflops_per_gpu=hw_per_gpu / 1e12,
        mfu=per_gpu / peak,
        hfu=hw_per_gpu / peak,
        breakdown=tuple(rows),
    )
