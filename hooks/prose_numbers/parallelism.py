"""Numbers on the parallelism pages (docs/parallelism/), every one computed by the engine.

Named examples, with the inputs the pages state next to them:

* **DP / ZeRO:** a 7B model on 64 data-parallel GPUs, bf16 gradients and weights on the wire.
* **TP / PP / SP:** the GPT-3 175B shape of Korthikanti et al. 2022, Table 3 (preset ``megatron-175b``:
  h = 12288, a = 96, 96 layers), sequence 2048, micro-batch 1, t = 8, on H100s.
* **Pipeline schedules:** p = 4 stages, m = 8 micro-batches, interleaved with v = 2 (the diagrams).
* **ZeRO Table 1:** 7.5B, 128B and 1T parameters at DP 1 ... 1024 (Rajbhandari et al. 2020, Table 1).
* **CP and 3D:** Llama 3 405B (preset ``llama3.1-405b``) in the layouts of Llama 3 paper Table 4.
* **EP:** Mixtral 8x7B (preset ``mixtral-8x7b``) with 8-way expert parallelism, sequence 4096.
* **DualPipe:** DeepSeek-V3 (preset ``deepseek-v3``) in its report's layout (DeepSeek-AI 2024, arXiv:2412.19437,
  Sec. 3.2: 16-way PP, 64-way EP over 8 nodes, ZeRO-1 data parallelism on 2,048 GPUs), 4,096 tokens, batch 15,360,
  FP8, no recomputation (the report recomputes only RMSNorm and the MLA up-projections), on H100 SXMs with
  InfiniBand NDR (the engine's defaults; the report's H800s have the same compute).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import cache

from calc import format_bytes, format_count, gpu, model_state_bytes
from calc.memory.activations import activation_bytes_per_layer, held_chunks_peak
from calc.memory.layout import Layout, layout_memory
from calc.models.presets import preset
from calc.parallel.comm import bus_factor, collective_bytes_sent, collective_time_s, interconnect, step_communication
from calc.parallel.pipeline import bubble_fraction, pipeline_schedule, schedule_in_flight
from calc.timing.compute import megatron_flops_per_iteration, utilization
from calc.timing.overlap import DUALPIPE_COMM_SMS
from calc.timing.steptime import StepTime, step_time
from calc.units import parse_count
from prose_numbers import model_dropout, trained_layout

BF16 = 2
"""Bytes per element sent on the wire (bf16 activations, gradients and weights)."""


def _pct(value: float | Fraction, digits: int = 1) -> str:
    return f"{float(value) * 100:.{digits}f}%"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms" if seconds < 0.01 else f"{seconds * 1e3:.0f} ms"


def _gb_exact(n: int) -> str:
    """Bytes in GB (10^9) to 6 significant figures, trailing zeros dropped: shows what the paper rounded."""
    number, unit = format_bytes(n, unit="GB", digits=6).split(" ")
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    return f"{number} {unit}"


# --------------------------------------------------------------------------- data parallelism: 7B, dp = 64

_DP_PARAMS = parse_count("7B")
_DP = 64


def _dp_step(zero_stage: int, microbatches: int = 1):
    return step_communication(
        params="7B", layers=32, hidden=4096, seq=4096, dp=_DP, zero_stage=zero_stage, num_microbatches=microbatches
    )


# --------------------------------------------------------------------------- TP / PP / SP: GPT-3 175B shape

_S, _B, _T = 2048, 1, 8
_GPT3 = preset("megatron-175b")
_H = _GPT3.hidden_size
_TP_MSG = _B * _S * _H * BF16  # one all-reduce moves a b x s x h activation


def _tp_layer_time(link: str) -> float:
    return 4 * collective_time_s("all-reduce", _TP_MSG, _T, interconnect(link).bytes_per_s)


def _layer_compute_s() -> float:
    """Forward + backward FLOPs of one GPT-3 layer for one micro-batch, over t GPUs at the H100 dense peak."""
    one = megatron_flops_per_iteration(_B, _S, 1, _H, 51200, recompute="none")
    two = megatron_flops_per_iteration(_B, _S, 2, _H, 51200, recompute="none")
    return (two - one) / (_T * gpu("h100-sxm").bf16_flops)


# --------------------------------------------------------------------------- ZeRO Table 1

_TABLE1_MODELS = {"7.5b": "7.5B", "128b": "128B", "1t": "1T"}
_TABLE1_DP = (1, 4, 16, 64, 256, 1024)


def _table1(params: str, stage: int, dp: int) -> Callable[[], str]:
    return lambda: _gb_exact(model_state_bytes(params, zero_stage=stage, dp=dp).total)


# --------------------------------------------------------------------------- Llama 3 405B (Table 4)

_LLAMA = preset("llama3.1-405b")
_L3_TP, _L3_PP = 8, 16
_L3_GPUS_PER_NODE = 8


def _llama_rank_params(layers: int, *, first: bool = False, last: bool = False) -> int:
    """Parameters one GPU of a pipeline rank holds: matrices split over TP, norms replicated.

    Llama 3 paper Sec. 3.3.2: one transformer layer is taken off the first and the last
    pipeline stage, so 126 layers sit as 7 + 14 x 8 + 7 over 16 ranks.
    """
    split = layers * (_LLAMA.attention_params_per_layer + _LLAMA.dense_mlp_params)
    replicated = layers * _LLAMA.norm_params_per_layer
    if first:
        split += _LLAMA.embedding_params
    if last:
        split += _LLAMA.lm_head_params
        replicated += _LLAMA.final_norm_params
    return -(-split // _L3_TP) + replicated


_L3_SLOTS = {"account_for_embedding_in_pipeline_split": True, "account_for_loss_in_pipeline_split": True}
_L3_V = (_LLAMA.num_layers + 2) // _L3_PP
"""Llama 3's chunks per rank: one layer each, the embedding and the loss in chunks of their own (Sec. 3.3.2)."""


def _llama_held(stage: int, m: int) -> str:
    """Layers' worth of one micro-batch's activations that rank ``stage`` holds at its peak, Llama 3's placement."""
    virtual = Layout(pp=_L3_PP, interleave=_L3_V, **_L3_SLOTS).virtual_stage_layer_counts(_LLAMA.num_layers)
    return str(held_chunks_peak(_L3_PP, _L3_V, m, stage, virtual[stage::_L3_PP]))


def _llama_8192_peak() -> str:
    """The engine's nvidia-smi peak of Table 4's 8,192-GPU row (DP 64, m = 32) without recomputation."""
    from calc.memory.overheads import peak_memory

    lay = Layout(tp=_L3_TP, pp=_L3_PP, dp=64, zero_stage=2, interleave=_L3_V, global_batch=2048, seq_len=8192,
                 sequence_parallel=True, flash_attention=True, dropout=False, recompute="none",
                 **_L3_SLOTS)  # fmt: skip
    return format_bytes(peak_memory(_LLAMA, lay, gpu="h100-sxm").nvidia_smi_bytes, digits=3)


def _llama_heaviest() -> int:
    return max(_llama_rank_params(7, first=True), _llama_rank_params(8), _llama_rank_params(7, last=True))


def _mfu(tflops: int) -> str:
    return _pct(utilization(tflops * 10**12, 1, 1, gpu("h100-sxm").bf16_flops))


# --------------------------------------------------------------------------- Mixtral 8x7B, ep = 8

_MIX = preset("mixtral-8x7b")
_EP = 8
_EP_SEQ = 4096
_EP_MSG = _B * _EP_SEQ * _MIX.experts_per_token * _MIX.hidden_size * BF16


def _seconds(s: float) -> str:
    return f"{s:.1f} s"


def _dsv3_part(schedule: str, part: str) -> str:
    """One figure of [`_dsv3`][]: the step, its exposed all-to-all, or its bubble, in seconds."""
    st = _dsv3(schedule)
    return _seconds({"step": st.step_time_s, "a2a": st.exposed_s["ep-all-to-all"], "bubble": st.bubble_s}[part])


def _mix_params_per_gpu() -> int:
    experts = _MIX.expert_params_per_layer * _MIX.num_moe_layers
    return _MIX.param_count - experts + -(-experts // _EP)


def _dp_activations(dp: int) -> int:
    """Per-GPU activations of Llama-2-7B at one 4,096-token micro-batch: what data parallelism leaves alone.

    Each data-parallel rank runs its own micro-batch, so the activations one GPU stores depend on the
    micro-batch and the sequence, not on dp (Korthikanti et al. 2022, Sec. 4: activations per layer are a
    function of s, b, h, a and t only).
    """
    arch = preset("llama2-7b")
    return layout_memory(arch, Layout(dp=dp, seq_len=4096, micro_batch=1, dropout=model_dropout(arch))).activations


@cache
def _dsv3(schedule: str) -> StepTime:
    """DeepSeek-V3's pre-training layout (module docstring) under ``schedule``."""
    lay = trained_layout("deepseek-v3", dp=128, pp=16, ep=64, zero_stage=1, global_batch=15360, seq_len=4096,
                         micro_batch=1, recompute="none")  # fmt: skip
    return step_time(preset("deepseek-v3"), lay, gpu="h100-sxm", dtype="fp8", schedule=schedule)


NUMBERS: dict[str, Callable[[], str]] = {
    # ---- data.md
    "par-dp-act-7b": lambda: format_bytes(_dp_activations(_DP)),
    "par-dp-act-7b-2x": lambda: format_bytes(_dp_activations(2 * _DP)),
    "par-dp-2x": lambda: str(2 * _DP),
    "par-dp-64x80gb": lambda: format_bytes(64 * gpu("h100-sxm").memory_bytes, digits=2),
    "par-dp-7b-state": lambda: format_bytes(model_state_bytes(_DP_PARAMS, dp=_DP).total),
    "par-dp-7b-z3": lambda: format_bytes(model_state_bytes(_DP_PARAMS, zero_stage=3, dp=_DP).total),
    "par-dp-7b-grads": lambda: format_bytes(model_state_bytes(_DP_PARAMS).gradients),
    "par-dp-ring-factor": lambda: f"{float(bus_factor('all-reduce', _DP)):.3g}",
    "par-dp-7b-allreduce": lambda: format_bytes(collective_bytes_sent("all-reduce", _DP_PARAMS * BF16, _DP)),
    "par-dp-7b-allreduce-time": lambda: _ms(_dp_step(0).terms[0].time_s),
    "par-dp-7b-allreduce-bw": lambda: f"{_dp_step(0).terms[0].bus_bytes_per_s / 1e9:.0f} GB/s",
    # ---- tensor.md
    "par-tp-msg": lambda: format_bytes(_TP_MSG),
    "par-tp-layer-bytes": lambda: format_bytes(4 * collective_bytes_sent("all-reduce", _TP_MSG, _T)),
    "par-tp-stage-layers": lambda: str(_GPT3.num_layers // 8),
    "par-tp-stage-bytes": lambda: format_bytes(
        _GPT3.num_layers // 8 * 4 * collective_bytes_sent("all-reduce", _TP_MSG, _T)
    ),
    "par-tp-nvlink-ms": lambda: _ms(_tp_layer_time("nvlink4")),
    "par-tp-nic-ms": lambda: _ms(_tp_layer_time("ib-ndr")),
    "par-tp-compute-ms": lambda: _ms(_layer_compute_s()),
    "par-tp-nvlink-share": lambda: _pct(_tp_layer_time("nvlink4") / _layer_compute_s(), 0),
    "par-tp-nic-share": lambda: f"{_tp_layer_time('ib-ndr') / _layer_compute_s():.1f}×",
    "par-tp-bw-ratio": lambda: f"{interconnect('nvlink4').bytes_per_s // interconnect('ib-ndr').bytes_per_s}×",
    "par-tp-175b-params": lambda: format_count(_GPT3.param_count, digits=4),
    "par-tp-175b-state-tp8": lambda: format_bytes(layout_memory(_GPT3, Layout(tp=8)).model_state),
    "par-tp-175b-state-tp8pp8": lambda: format_bytes(layout_memory(_GPT3, Layout(tp=8, pp=8)).model_state),
    # ---- pipeline.md
    "par-pp-boundary": lambda: format_bytes(_B * _S * _H * BF16),
    "par-pp-boundary-sg": lambda: format_bytes(_B * _S * _H * BF16 // _T),
    "par-pp-p4m8": lambda: _pct(bubble_fraction(4, 8)),
    "par-pp-p4m8-total": lambda: _pct(bubble_fraction(4, 8, convention="total")),
    "par-pp-p4m16": lambda: _pct(bubble_fraction(4, 16)),
    "par-pp-p4m8v2": lambda: _pct(bubble_fraction(4, 8, schedule="interleaved", v=2)),
    "par-pp-p4m8v2-total": lambda: _pct(bubble_fraction(4, 8, schedule="interleaved", v=2, convention="total")),
    "par-pp-p4m16-gpipe-total": lambda: _pct(bubble_fraction(4, 16, schedule="gpipe", convention="total")),
    "par-pp-gpipe-inflight": lambda: str(pipeline_schedule(4, 8, "gpipe").peak_in_flight()),
    "par-pp-1f1b-inflight": lambda: str(pipeline_schedule(4, 8, "1f1b").peak_in_flight()),
    "par-pp-int-inflight": lambda: str(pipeline_schedule(4, 8, "interleaved", 2).peak_in_flight()),
    "par-pp-int-inflight-stages": lambda: (
        f"{float(Fraction(pipeline_schedule(4, 8, 'interleaved', 2).peak_in_flight(), 2)):g}"
    ),
    "par-pp-gpipe-makespan": lambda: str(pipeline_schedule(4, 8, "gpipe").makespan),
    "par-pp-int-makespan": lambda: str(pipeline_schedule(4, 8, "interleaved", 2).makespan),
    "par-pp-int-makespan-full": lambda: f"{pipeline_schedule(4, 8, 'interleaved', 2).makespan / 2:g}",
    "par-pp-busy": lambda: str(pipeline_schedule(4, 8, "1f1b").busy_units),
    "par-pp-zb-p4m8": lambda: _pct(bubble_fraction(4, 8, schedule="zb-h1")),
    "par-pp-zb-inflight": lambda: str(schedule_in_flight("zb-h1", 4, 8)),
    "par-pp-zb-makespan": lambda: str(pipeline_schedule(4, 8, "zb-h1").makespan),
    "par-pp-dual-p4m8": lambda: _pct(bubble_fraction(4, 8, schedule="dualpipe")),
    "par-pp-dual-inflight": lambda: str(schedule_in_flight("dualpipe", 4, 8)),
    "par-pp-p8m32": lambda: _pct(bubble_fraction(8, 32)),
    "par-pp-zb-p8m32": lambda: _pct(bubble_fraction(8, 32, schedule="zb-h1")),
    "par-pp-dual-p8m32": lambda: _pct(bubble_fraction(8, 32, schedule="dualpipe")),
    # ---- zero.md
    **{
        f"par-zt1-{key}-s{stage}-dp{dp}": _table1(params, stage, dp)
        for key, params in _TABLE1_MODELS.items()
        for stage in (1, 2, 3)
        for dp in _TABLE1_DP
    },
    **{
        f"par-zero-70b-s{stage}": (
            lambda stage=stage: format_bytes(model_state_bytes("70B", zero_stage=stage, dp=_DP).total)
        )
        for stage in (0, 1, 2, 3)
    },
    "par-zero-7b-s0-comm": lambda: format_bytes(_dp_step(0).total_bytes),
    "par-zero-7b-s1-comm": lambda: format_bytes(_dp_step(1).total_bytes),
    "par-zero-7b-s2-comm": lambda: format_bytes(_dp_step(2).total_bytes),
    "par-zero-7b-s3-comm": lambda: format_bytes(_dp_step(3).total_bytes),
    "par-zero-7b-s3-ratio": lambda: f"{_dp_step(3).total_bytes / _dp_step(0).total_bytes:g}×",
    "par-zero-7b-s0-comm-m8": lambda: format_bytes(_dp_step(0, 8).total_bytes),
    "par-zero-7b-s3-comm-m8": lambda: format_bytes(_dp_step(3, 8).total_bytes),
    # ---- sequence-context.md
    "par-sp-none-act": lambda: format_bytes(activation_bytes_per_layer(_S, _B, _H, _GPT3.num_heads), binary=True),
    "par-sp-tp-act": lambda: format_bytes(activation_bytes_per_layer(_S, _B, _H, _GPT3.num_heads, tp=_T), binary=True),
    "par-sp-tpsp-act": lambda: format_bytes(
        activation_bytes_per_layer(_S, _B, _H, _GPT3.num_heads, tp=_T, sequence_parallel=True), binary=True
    ),
    "par-sp-saving": lambda: _pct(
        1
        - Fraction(
            activation_bytes_per_layer(_S, _B, _H, _GPT3.num_heads, tp=_T, sequence_parallel=True),
            activation_bytes_per_layer(_S, _B, _H, _GPT3.num_heads, tp=_T),
        ),
        0,
    ),
    "par-cp-tokens-per-gpu": lambda: f"{131_072 // 16:,}",
    "par-cp-kv-dims": lambda: f"{_LLAMA.kv_cache_dims_per_token():,}",
    "par-cp-kv-ratio": lambda: str(Fraction(_LLAMA.kv_cache_dims_per_token(), _LLAMA.hidden_size)),
    "par-cp-kv-msg": lambda: format_bytes(131_072 * (_LLAMA.kv_cache_dims_per_token() // _L3_TP) * BF16),
    "par-cp-kv-sent": lambda: format_bytes(
        collective_bytes_sent("all-gather", 131_072 * (_LLAMA.kv_cache_dims_per_token() // _L3_TP) * BF16, 16)
    ),
    # ---- expert.md
    "par-ep-msg": lambda: format_bytes(_EP_MSG),
    **{
        f"par-dsv3-{name}-{part}": (lambda name=name, part=part: _dsv3_part(name, part))
        for name in ("1f1b", "dualpipe")
        for part in ("step", "a2a", "bubble")
    },
    "par-dsv3-compute": lambda: _seconds(_dsv3("dualpipe").compute_s),
    "par-dsv3-sms": lambda: _pct(DUALPIPE_COMM_SMS),
    "par-ep-a2a-sent": lambda: format_bytes(collective_bytes_sent("all-to-all", _EP_MSG, _EP)),
    "par-ep-layer-sent": lambda: format_bytes(4 * collective_bytes_sent("all-to-all", _EP_MSG, _EP)),
    "par-ep-mix-params": lambda: format_count(_MIX.param_count),
    "par-ep-mix-gpu-params": lambda: format_count(_mix_params_per_gpu()),
    "par-ep-mix-state": lambda: format_bytes(model_state_bytes(_MIX.param_count).total),
    "par-ep-mix-gpu-state": lambda: format_bytes(model_state_bytes(_mix_params_per_gpu()).total),
    # ---- 3d.md (Llama 3 405B, Table 4)
    "par-3d-l3-params": lambda: format_count(_LLAMA.param_count, digits=4),
    "par-3d-l3-naive": lambda: format_count(-(-_LLAMA.param_count // (_L3_TP * _L3_PP)), digits=4),
    "par-3d-l3-first": lambda: format_count(_llama_rank_params(7, first=True), digits=4),
    "par-3d-l3-middle": lambda: format_count(_llama_rank_params(8), digits=4),
    "par-3d-l3-last": lambda: format_count(_llama_rank_params(7, last=True), digits=4),
    "par-3d-l3-uneven-first": lambda: format_count(_llama_rank_params(8, first=True), digits=4),
    "par-3d-l3-v": lambda: str(_L3_V),
    "par-3d-l3-held-0-m32": lambda: _llama_held(0, 32),
    "par-3d-l3-held-1-m32": lambda: _llama_held(1, 32),
    "par-3d-l3-held-1-m16": lambda: _llama_held(1, 16),
    "par-3d-l3-8192-peak": _llama_8192_peak,
    "par-3d-l3-capacity": lambda: format_bytes(gpu("h100-sxm").memory_bytes, digits=3),
    "par-3d-l3-full-state": lambda: format_bytes(model_state_bytes(_LLAMA.param_count).total),
    **{
        f"par-3d-l3-state-s{stage}": (
            lambda stage=stage: format_bytes(model_state_bytes(_llama_heaviest(), zero_stage=stage, dp=128).total)
        )
        for stage in (0, 1, 2, 3)
    },
    "par-3d-l3-gpus": lambda: f"{_L3_TP * _L3_PP * 128:,}",
    "par-3d-l3-gpus-cp": lambda: f"{_L3_TP * 16 * _L3_PP * 8:,}",
    "par-3d-l3-nodes-per-replica": lambda: str(_L3_TP * _L3_PP // _L3_GPUS_PER_NODE),
    "par-3d-l3-tokens": lambda: format_count(128 * 16 * 8192),
    "par-3d-l3-tokens-cp": lambda: format_count(8 * 16 * 131_072),
    "par-3d-l3-mfu-430": lambda: _mfu(430),
    "par-3d-l3-mfu-400": lambda: _mfu(400),
    "par-3d-l3-mfu-380": lambda: _mfu(380),
    **{
        f"par-3d-l3-bubble-m{m}-v{v}": (
            lambda m=m, v=v: _pct(bubble_fraction(16, m, schedule="interleaved" if v > 1 else "1f1b", v=v))
        )
        for m in (16, 32)
        for v in (1, 2, 4)
    },
}
