"""Numbers on the systems and study pages: communication, compute, takeaways, interview, mistakes.

Every value is an engine call (``calc.parallel.comm``, ``calc.timing.compute``, ``calc.memory.activations``,
``calc.memory.layout``,
``calc.memory.inference``, ``calc.parallel.pipeline``, ``calc.memory.model_state``); this module only formats the
results.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from calc import (
    INTERCONNECTS,
    Layout,
    algorithm_bandwidth,
    bubble_fraction,
    bus_factor,
    collective_bytes_sent,
    collective_time_s,
    flops_6nd,
    format_bytes,
    format_count,
    gpu,
    group_bus_bandwidth,
    layout_memory,
    megatron_flops_per_iteration,
    megatron_utilization,
    model_state_bytes,
    palm_flops_per_token,
    preset,
    step_communication,
    training_time,
    utilization,
    utilization_from_throughput,
)
from calc.memory.activations import activation_bytes_per_layer, layer_activations
from calc.memory.inference import kv_cache_bytes_per_token, weight_bytes
from prose_numbers import COMM_CALCULATOR, model_dropout
from prose_numbers import ms as _ms
from prose_numbers import pct as _pct
from prose_numbers import seconds as _s
from prose_numbers import times as _times

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _sci(value: float, digits: int = 3) -> str:
    """``3.1428e23`` as ``3.14 × 10²³`` (plain text: the build compares the printed span with this)."""
    mantissa, _, exponent = f"{value:.{digits - 1}e}".partition("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def _bw(bytes_per_s: float, digits: int = 3) -> str:
    return format_bytes(int(bytes_per_s), digits=digits) + "/s"


# --------------------------------------------------------------------------- communication

_7B_GRADS = model_state_bytes("7B").gradients
"""bf16 gradients of a 7B model: the message of DP's all-reduce."""

_NVLINK4 = INTERCONNECTS["nvlink4"].bytes_per_s
_NDR = INTERCONNECTS["ib-ndr"].bytes_per_s
_PCIE5 = INTERCONNECTS["pcie5-x16"].bytes_per_s


def _dp64_peak(**kw: object) -> float:
    """The peak view of that all-reduce's bus bandwidth: ``min(scale-up, 8 x NIC)`` (S. Jeaugey, NVIDIA/nccl#687)."""
    return float(group_bus_bandwidth("all-reduce", 64, intra_node=False, members_per_node=8, **kw))


def _dp64(**kw: object):
    """The 7B gradient all-reduce over 64 GPUs (8 nodes of 8), as calc.parallel.comm places it."""
    return step_communication(params="7B", layers=32, hidden=4096, seq=4096, dp=64, **kw).terms[0]


# TP inside a node vs across nodes: one micro-batch of 4096 tokens of a 70B model with h = 8192, 80 layers.
_TP_H, _TP_S, _TP_L = 8192, 4096, 80
_TP_MSG = _TP_S * _TP_H * 2
"""One TP all-reduce message: b·s·h bf16 elements (Narayanan et al. 2021, Sec. 3.2), b = 1."""
_TP_CALLS = 4 * _TP_L
"""Two all-reduces forward, two backward, per layer."""
_RATE = 400 * 10**12
"""Achieved FLOP/s per GPU used for compute times: Llama 3 405B, Table 4 (400 TFLOP/s on 16K H100s)."""


def _tp_bytes(t: int) -> int:
    return _TP_CALLS * collective_bytes_sent("all-reduce", _TP_MSG, t)


def _tp_busbw(t: int, *, intra_node: bool, per_node: int) -> Fraction:
    return group_bus_bandwidth("all-reduce", t, intra_node=intra_node, members_per_node=per_node)


_TP_CASES = {
    "8-node": (8, True, 8),
    "16-2nodes": (16, False, 8),
    "8-spread": (8, False, 1),
}


def _tp_comm_s(case: str) -> float:
    t, intra, k = _TP_CASES[case]
    return float(Fraction(_tp_bytes(t)) / _tp_busbw(t, intra_node=intra, per_node=k))


def _tp_compute_s(case: str) -> float:
    t = _TP_CASES[case][0]
    return flops_6nd("70B", _TP_S) / t / _RATE


def _pp_bytes() -> int:
    """Stage-boundary send of one micro-batch with scatter/gather over t = 8 (Narayanan Sec. 4.1), fwd + bwd."""
    return 2 * collective_bytes_sent("p2p", _TP_MSG // 8, 2)


def _calc_layout(tp: int, pp: int):
    """The communication calculator's defaults (calc/widgets/comm.py) with another tp and pp."""
    return step_communication(**{**COMM_CALCULATOR, "tp": tp, "pp": pp})


_COMM: dict[str, Callable[[], str]] = {
    "sys-grad-7b": lambda: format_bytes(_7B_GRADS),
    "sys-grad-7b-x2": lambda: format_bytes(2 * _7B_GRADS),
    "sys-ar-7b-n2": lambda: format_bytes(collective_bytes_sent("all-reduce", _7B_GRADS, 2)),
    "sys-ar-7b-n8": lambda: format_bytes(collective_bytes_sent("all-reduce", _7B_GRADS, 8)),
    "sys-ar-7b-n64": lambda: format_bytes(collective_bytes_sent("all-reduce", _7B_GRADS, 64)),
    "sys-ar-7b-n1024": lambda: format_bytes(collective_bytes_sent("all-reduce", _7B_GRADS, 1024)),
    "sys-ag-7b-n8": lambda: format_bytes(collective_bytes_sent("all-gather", _7B_GRADS, 8)),
    "sys-rs-7b-n8": lambda: format_bytes(collective_bytes_sent("reduce-scatter", _7B_GRADS, 8)),
    "sys-ar-7b-n8-nvlink4": lambda: _ms(collective_time_s("all-reduce", _7B_GRADS, 8, _NVLINK4)),
    "sys-ar-7b-n8-pcie5": lambda: _ms(collective_time_s("all-reduce", _7B_GRADS, 8, _PCIE5)),
    "sys-factor-ar-8": lambda: f"{float(bus_factor('all-reduce', 8)):g}",
    "sys-factor-ag-8": lambda: f"{float(bus_factor('all-gather', 8)):g}",
    "sys-factor-ar-1024": lambda: f"{float(bus_factor('all-reduce', 1024)):.3f}",
    "sys-algbw-175-8": lambda: _bw(algorithm_bandwidth("all-reduce", 8, 175 * 10**9)),
    "sys-algbw-175-64": lambda: _bw(algorithm_bandwidth("all-reduce", 64, 175 * 10**9)),
    "sys-bw-nvlink3": lambda: _bw(INTERCONNECTS["nvlink3"].bytes_per_s),
    "sys-bw-nvlink4": lambda: _bw(_NVLINK4),
    "sys-bw-nvlink5": lambda: _bw(INTERCONNECTS["nvlink5"].bytes_per_s),
    "sys-bw-mi300x": lambda: _bw(INTERCONNECTS["infinity-fabric-mi300x"].bytes_per_s),
    "sys-bw-mi300x-peer": lambda: _bw(INTERCONNECTS["infinity-fabric-mi300x"].peer_bytes_per_s),
    "sys-bw-pcie4": lambda: _bw(INTERCONNECTS["pcie4-x16"].bytes_per_s),
    "sys-bw-pcie5": lambda: _bw(_PCIE5),
    "sys-bw-ib-hdr": lambda: _bw(INTERCONNECTS["ib-hdr"].bytes_per_s),
    "sys-bw-ib-ndr": lambda: _bw(_NDR),
    "sys-bw-ib-xdr": lambda: _bw(INTERCONNECTS["ib-xdr"].bytes_per_s),
    "sys-bw-roce": lambda: _bw(INTERCONNECTS["roce-400g"].bytes_per_s),
    "sys-ratio-nvlink4-ndr": lambda: _times(Fraction(_NVLINK4, _NDR)),
    "sys-ratio-nvlink4-pcie5": lambda: _times(Fraction(_NVLINK4, _PCIE5)),
    # The slowest link: a 7B gradient all-reduce over 64 GPUs in 8 nodes.
    "sys-dp64-busbw": lambda: _bw(_dp64().bus_bytes_per_s),
    # The peak view (min(scale-up, k x NIC), no latency, no phases) beside the step-time model's figure.
    "sys-dp64-peak-busbw": lambda: _bw(_dp64_peak()),
    "sys-dp64-hdr-peak-busbw": lambda: _bw(_dp64_peak(intra="nvlink3", inter="ib-hdr")),
    "sys-dp64-pcie-peak-busbw": lambda: _bw(_dp64_peak(intra="pcie5-x16")),
    "sys-dp64-time": lambda: _ms(_dp64().time_s),
    "sys-dp64-pcie-busbw": lambda: _bw(_dp64(intra="pcie5-x16").bus_bytes_per_s),
    "sys-dp64-pcie-time": lambda: _ms(_dp64(intra="pcie5-x16").time_s),
    "sys-dp64-hdr-busbw": lambda: _bw(_dp64(intra="nvlink3", inter="ib-hdr").bus_bytes_per_s),
    "sys-dp64-hdr-time": lambda: _ms(_dp64(intra="nvlink3", inter="ib-hdr").time_s),
    "sys-dp8-tp8-busbw": lambda: _bw(
        step_communication(params="7B", layers=32, hidden=4096, seq=4096, dp=8, tp=8).terms[0].bus_bytes_per_s
    ),
    "sys-dp8-tp8-bytes": lambda: format_bytes(
        step_communication(params="7B", layers=32, hidden=4096, seq=4096, dp=8, tp=8).terms[0].bytes_sent
    ),
    "sys-dp8-tp8-time": lambda: _ms(
        step_communication(params="7B", layers=32, hidden=4096, seq=4096, dp=8, tp=8).terms[0].time_s
    ),
    # TP inside the node vs across nodes (70B, h = 8192, 80 layers, one 4096-token micro-batch).
    "sys-tp-msg": lambda: format_bytes(_TP_MSG),
    "sys-tp8-bytes": lambda: format_bytes(_tp_bytes(8)),
    "sys-tp16-bytes": lambda: format_bytes(_tp_bytes(16)),
    "sys-tp8-node-busbw": lambda: _bw(_tp_busbw(8, intra_node=True, per_node=8)),
    "sys-tp16-2nodes-busbw": lambda: _bw(_tp_busbw(16, intra_node=False, per_node=8)),
    "sys-tp8-spread-busbw": lambda: _bw(_tp_busbw(8, intra_node=False, per_node=1)),
    "sys-tp8-node-comm": lambda: _ms(_tp_comm_s("8-node")),
    "sys-tp16-2nodes-comm": lambda: _ms(_tp_comm_s("16-2nodes")),
    "sys-tp8-spread-comm": lambda: _ms(_tp_comm_s("8-spread")),
    "sys-tp8-compute": lambda: _ms(_tp_compute_s("8-node")),
    "sys-tp16-compute": lambda: _ms(_tp_compute_s("16-2nodes")),
    "sys-tp8-node-ratio": lambda: _pct(_tp_comm_s("8-node") / _tp_compute_s("8-node"), 0),
    "sys-tp16-2nodes-ratio": lambda: _pct(_tp_comm_s("16-2nodes") / _tp_compute_s("16-2nodes"), 0),
    "sys-tp8-spread-ratio": lambda: _pct(_tp_comm_s("8-spread") / _tp_compute_s("8-spread"), 0),
    # The communication calculator's default layout (70B, 256 GPUs, m = 16, SP, ZeRO-1) vs tp = 16, pp = 2.
    "sys-calc-tp8-pp4-time": lambda: _ms(_calc_layout(8, 4).total_time_s),
    "sys-calc-tp16-pp2-time": lambda: _ms(_calc_layout(16, 2).total_time_s),
    "sys-pp-bytes": lambda: format_bytes(_pp_bytes()),
    "sys-pp-time": lambda: _ms(_pp_bytes() / _NDR),
    "sys-tp-over-pp": lambda: f"{_tp_bytes(8) // _pp_bytes():,}×",
}


# --------------------------------------------------------------------------- compute

_GPT3_FLOPS = flops_6nd("174.6B", "300B")
_L3_405 = preset("llama3.1-405b").param_count
_L2_70 = preset("llama2-70b").param_count
_M175 = dict(batch=64, seq_len=2048, layers=96, hidden=12288, vocab=51200)
"""Korthikanti et al. 2022, Table 3: the 175B (GPT-3) run, global batch 64, s = 2048, V = 51,200."""
_PALM = ("540.35B", 118, 48, 256, 2048)
"""PaLM 540B: N, L, H, Q, T (Chowdhery et al. 2022, Appendix B)."""


def _attn_extra(seq: int, hidden: int) -> Fraction:
    """Share of one GPT layer's FLOPs that 6ND leaves out.

    Megatron's per-layer count over 6 x 12h^2 x tokens, minus 1.
    """
    per_layer = megatron_flops_per_iteration(1, seq, 2, hidden, 1, recompute="none") - megatron_flops_per_iteration(
        1, seq, 1, hidden, 1, recompute="none"
    )
    return Fraction(per_layer, flops_6nd(12 * hidden * hidden, seq)) - 1


def _m175(recompute: str) -> int:
    return megatron_flops_per_iteration(**_M175, recompute=recompute)


def _u175():
    return megatron_utilization(**_M175, step_time_s=13.75, num_gpus=64, peak_flops=312e12)


def _l2_70_implied_mfu() -> float:
    """Llama 2 70B: 6ND over the model card's 1,720,320 A100-80GB GPU-hours at 312 TFLOP/s."""
    return utilization(flops_6nd(_L2_70, "2T"), 1_720_320 * 3600, 1, gpu("a100-80").bf16_flops)


_COMPUTE: dict[str, Callable[[], str]] = {
    "sys-gpt3-flops": lambda: _sci(_GPT3_FLOPS),
    "sys-gpt3-pfdays": lambda: f"{_GPT3_FLOPS / (10**15 * 86_400):,.0f}",
    "sys-llama3-405b-params": lambda: format_count(_L3_405, digits=4),
    "sys-llama3-flops": lambda: _sci(flops_6nd(_L3_405, "15.6T")),
    "sys-chinchilla-6nd": lambda: _sci(flops_6nd("70B", "1.4T")),
    "sys-gopher-6nd": lambda: _sci(flops_6nd("280B", "300B")),
    "sys-m175-none": lambda: _sci(_m175("none")),
    "sys-m175-selective": lambda: _sci(_m175("selective")),
    "sys-m175-full": lambda: _sci(_m175("full")),
    "sys-m175-6nd": lambda: _sci(flops_6nd(preset("megatron-175b").param_count, 64 * 2048)),
    "sys-m175-full-over-none": lambda: f"{_m175('full') / _m175('none'):.2f}",
    "sys-m175-selective-over-none": lambda: f"{_m175('selective') / _m175('none'):.3f}",
    "sys-attn-2048-12288": lambda: _pct(_attn_extra(2048, 12288)),
    "sys-attn-8192-4096": lambda: _pct(_attn_extra(8192, 4096), 0),
    "sys-attn-131072-16384": lambda: _pct(_attn_extra(131072, 16384), 0),
    "sys-mfu-175b": lambda: _pct(_u175().mfu),
    "sys-hfu-175b": lambda: _pct(_u175().hfu),
    "sys-tflops-175b": lambda: f"{_u175().model_flops_per_gpu_s / 1e12:.0f}",
    "sys-palm-flops-token": lambda: _sci(palm_flops_per_token(*_PALM)),
    "sys-palm-mfu": lambda: _pct(utilization_from_throughput(238.3e3, palm_flops_per_token(*_PALM), 6144, 275e12)),
    "sys-palm-mfu-noattn": lambda: _pct(
        utilization_from_throughput(238.3e3, palm_flops_per_token(*_PALM, attention=False), 6144, 275e12)
    ),
    "sys-llama3-mfu-430": lambda: _pct(utilization(430e12, 1, 1, gpu("h100-sxm").bf16_flops)),
    "sys-llama3-mfu-400": lambda: _pct(utilization(400e12, 1, 1, gpu("h100-sxm").bf16_flops)),
    "sys-llama3-mfu-380": lambda: _pct(utilization(380e12, 1, 1, gpu("h100-sxm").bf16_flops)),
    "sys-gpt3-days": lambda: f"{training_time('175B', '300B', 1024, 140e12, flops_per_param_token=8).days:.0f}",
    "sys-gpt3-days-6": lambda: f"{training_time('175B', '300B', 1024, 140e12).days:.0f}",
    "sys-gpt3-gpu-hours": lambda: format_count(
        round(training_time("175B", "300B", 1024, 140e12, flops_per_param_token=8).gpu_hours)
    ),
    "sys-1t-days": lambda: f"{training_time('1008B', '450B', 3072, 163e12, flops_per_param_token=8).days:.0f}",
    "sys-llama3-days": lambda: f"{training_time(_L3_405, '15.6T', 16384, _RATE).days:.0f}",
    "sys-llama3-gpu-hours": lambda: format_count(round(training_time(_L3_405, "15.6T", 16384, _RATE).gpu_hours)),
    "sys-llama2-70b-flops": lambda: _sci(flops_6nd(_L2_70, "2T")),
    "sys-llama2-70b-mfu": lambda: _pct(_l2_70_implied_mfu()),
    "sys-70b-2t-days": lambda: f"{training_time('70B', '2T', 2048, 0.4 * gpu('h100-sxm').bf16_flops).days:.0f}",
    "sys-70b-2t-gpu-hours": lambda: format_count(
        round(training_time("70B", "2T", 2048, 0.4 * gpu("h100-sxm").bf16_flops).gpu_hours)
    ),
    "sys-70b-2t-flops": lambda: _sci(flops_6nd("70B", "2T")),
    "sys-70b-2t-mfu": lambda: _pct(0.4, 0),  # the MFU assumed by sys-70b-2t-days / -gpu-hours
}


# ---------------------------------------------------------- memory examples (takeaways, interview, mistakes)

_L2_7B = preset("llama2-7b")


def _7b_layout(**kw: object):
    """Llama-2-7B, 4096-token sequences, micro-batch 1, ZeRO-3 over 64 GPUs unless overridden."""
    base: dict[str, object] = dict(dp=64, zero_stage=3, seq_len=4096, micro_batch=1, dropout=model_dropout(_L2_7B))
    base.update(kw)
    return layout_memory(_L2_7B, Layout(**base))  # type: ignore[arg-type]


_OFFLOAD_LAYOUT = Layout(zero_stage=1, offload_optimizer=True, seq_len=4096, dropout=model_dropout(_L2_7B))
"""ZeRO-Offload's example: Llama-2-7B on one GPU, optimizer and gradients in CPU memory, no dropout."""


def _mixtral():
    return preset("mixtral-8x7b")


def _dsv3():
    return preset("deepseek-v3")


_LONG = dict(
    kv_heads=8,
    head_dim=128,
    ffn_hidden=53248,
    mlp="swiglu",
    dropout=False,
    norm="rmsnorm",
    tp=8,
    sequence_parallel=True,
    flash_attention=True,
)
"""One Llama 3.1 405B layer (h = 16384, 128 heads, 8 KV heads) at 131,072 tokens, TP 8 with SP and FlashAttention."""


def _zero3_70b():
    return step_communication(params="70B", layers=80, hidden=8192, seq=4096, dp=64, zero_stage=3)


_MEMORY: dict[str, Callable[[], str]] = {
    # Model state, from the ZeRO accounting.
    "sys-state-7b": lambda: format_bytes(model_state_bytes("7B").total),
    "sys-state-7b-gib": lambda: format_bytes(model_state_bytes("7B").total, binary=True),
    "sys-weights-7b": lambda: format_bytes(model_state_bytes("7B").weights),
    "sys-master-7b": lambda: format_bytes(model_state_bytes("7B").master),
    "sys-adam-7b": lambda: format_bytes(
        model_state_bytes("7B").master + model_state_bytes("7B").momentum + model_state_bytes("7B").variance
    ),
    "sys-state-7b-dp64-z0": lambda: format_bytes(model_state_bytes("7B", zero_stage=0, dp=64).total),
    "sys-state-7b-dp64-z1": lambda: format_bytes(model_state_bytes("7B", zero_stage=1, dp=64).total),
    "sys-state-7b-dp64-z2": lambda: format_bytes(model_state_bytes("7B", zero_stage=2, dp=64).total),
    "sys-state-7b-dp64-z3": lambda: format_bytes(model_state_bytes("7B", zero_stage=3, dp=64).total),
    "sys-state-70b": lambda: format_bytes(model_state_bytes("70B").total, digits=2),
    "sys-state-70b-dp64-z3": lambda: format_bytes(model_state_bytes("70B", zero_stage=3, dp=64).total),
    "sys-state-70b-tp8": lambda: format_bytes(model_state_bytes(70 * 10**9 // 8).total),
    "sys-state-405b": lambda: format_bytes(model_state_bytes(_L3_405).total, digits=2),
    # Activations of Llama-2-7B (s = 4096, b = 1), ZeRO-3 over 64 GPUs.
    "sys-7b-act-none": lambda: format_bytes(_7b_layout().activations),
    "sys-7b-act-flash": lambda: format_bytes(_7b_layout(flash_attention=True).activations),
    "sys-7b-act-selective": lambda: format_bytes(_7b_layout(recompute="selective").activations),
    "sys-7b-act-full": lambda: format_bytes(_7b_layout(recompute="full").activations),
    "sys-7b-act-none-b8": lambda: format_bytes(_7b_layout(micro_batch=8).activations, digits=2),
    "sys-7b-act-flash-b8": lambda: format_bytes(_7b_layout(micro_batch=8, flash_attention=True).activations),
    "sys-7b-state-z3": lambda: format_bytes(_7b_layout().model_state),
    "sys-7b-total-none": lambda: format_bytes(_7b_layout().total),
    "sys-7b-total-full": lambda: format_bytes(_7b_layout(recompute="full").total),
    "sys-7b-params": lambda: format_count(_L2_7B.param_count, digits=3),
    # GPT-3 175B layer (Korthikanti Table 3 config): the attention scores dominate without recompute.
    "sys-175b-layer-tp": lambda: format_bytes(activation_bytes_per_layer(2048, 1, 12288, 96, tp=8), binary=True),
    "sys-175b-layer-tp-sp-sel": lambda: format_bytes(
        activation_bytes_per_layer(2048, 1, 12288, 96, tp=8, sequence_parallel=True, recompute="selective"),
        binary=True,
    ),
    # Context parallelism at 128K tokens.
    "sys-405b-layer-128k-cp1": lambda: format_bytes(
        layer_activations(131072, 1, 16384, 128, **_LONG).total, binary=True
    ),
    "sys-405b-layer-128k-cp16": lambda: format_bytes(
        layer_activations(131072, 1, 16384, 128, cp=16, **_LONG).total, binary=True
    ),
    "sys-405b-act-128k-cp1": lambda: format_bytes(
        126 * layer_activations(131072, 1, 16384, 128, **_LONG).total, binary=True, digits=3
    ),
    "sys-405b-act-128k-cp16": lambda: format_bytes(
        126 * layer_activations(131072, 1, 16384, 128, cp=16, **_LONG).total, binary=True
    ),
    # Offload (ZeRO-Offload): Llama-2-7B on one GPU, optimizer and gradients in CPU memory.
    "sys-offload-gpu-state": lambda: format_bytes(layout_memory(_L2_7B, _OFFLOAD_LAYOUT).model_state),
    "sys-offload-cpu": lambda: format_bytes(layout_memory(_L2_7B, _OFFLOAD_LAYOUT).cpu_offload),
    "sys-offload-pcie-bytes": lambda: format_bytes(2 * model_state_bytes(_L2_7B.param_count).weights),
    "sys-offload-pcie-time": lambda: _s(
        2 * model_state_bytes(_L2_7B.param_count).weights / INTERCONNECTS["pcie4-x16"].bytes_per_s
    ),
    # ZeRO-3 vs TP for 70B.
    "sys-70b-z3-bytes": lambda: format_bytes(_zero3_70b().total_bytes),
    "sys-70b-z3-time": lambda: _s(_zero3_70b().total_time_s),
    "sys-70b-z3-compute": lambda: _s(flops_6nd("70B", 4096) / _RATE),
    "sys-70b-z3-act": lambda: format_bytes(
        layout_memory(
            preset("llama2-70b"), Layout(dp=64, zero_stage=3, seq_len=4096, flash_attention=True, dropout=False)
        ).activations
    ),
    # Inference.
    "sys-70b-bf16": lambda: format_bytes(weight_bytes("70B", "bf16")),
    "sys-70b-fp8": lambda: format_bytes(weight_bytes("70B", "fp8")),
    "sys-70b-int4": lambda: format_bytes(weight_bytes("70B", "int4")),
    "sys-kv-70b-gqa-token": lambda: format_bytes(kv_cache_bytes_per_token(80, 8, 128)),
    "sys-kv-70b-mha-token": lambda: format_bytes(kv_cache_bytes_per_token(80, 64, 128)),
    "sys-kv-70b-gqa-4k": lambda: format_bytes(4096 * kv_cache_bytes_per_token(80, 8, 128)),
    "sys-kv-70b-mha-4k": lambda: format_bytes(4096 * kv_cache_bytes_per_token(80, 64, 128)),
    "sys-kv-70b-gqa-4k-b32": lambda: format_bytes(32 * 4096 * kv_cache_bytes_per_token(80, 8, 128)),
    "sys-kv-gqa-ratio": lambda: _times(
        Fraction(kv_cache_bytes_per_token(80, 64, 128), kv_cache_bytes_per_token(80, 8, 128))
    ),
    # MoE.
    "sys-mixtral-total": lambda: format_count(_mixtral().param_count),
    "sys-mixtral-active": lambda: format_count(_mixtral().active_param_count),
    "sys-mixtral-state": lambda: format_bytes(model_state_bytes(_mixtral().param_count).total),
    "sys-mixtral-flops-token": lambda: _sci(flops_6nd(_mixtral().active_param_count, 1)),
    "sys-mixtral-dense-flops-token": lambda: _sci(flops_6nd(_mixtral().param_count, 1)),
    "sys-dsv3-total": lambda: format_count(_dsv3().param_count),
    "sys-dsv3-active": lambda: format_count(_dsv3().active_param_count),
    "sys-dsv3-state": lambda: format_bytes(model_state_bytes(_dsv3().param_count).total, digits=3),
    # Pipeline bubble (Narayanan Sec. 2.2).
    "sys-bubble-8-8": lambda: _pct(bubble_fraction(8, 8), 1),
    "sys-bubble-8-32": lambda: _pct(bubble_fraction(8, 32), 1),
    "sys-bubble-8-32-total": lambda: _pct(bubble_fraction(8, 32, convention="total"), 1),
    "sys-bubble-8-32-v2": lambda: _pct(bubble_fraction(8, 32, schedule="interleaved", v=2), 1),
    # Data parallelism at scale (Llama 3 405B, Table 4).
    "sys-llama3-tokens-8192": lambda: format_count(64 * 32 * 8192),
    "sys-llama3-tokens-16384": lambda: format_count(128 * 16 * 8192),
}

NUMBERS: dict[str, Callable[[], str]] = {**_COMM, **_COMPUTE, **_MEMORY}
