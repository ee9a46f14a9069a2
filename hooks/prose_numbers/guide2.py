"""Numbers on the "deeper" pages of the guide's second edition: overlap, newer pipeline schedules, hidden memory,
measuring, FP8, MoE in practice, offload, fine-tuning and the activation curve.

Every value is an engine call (``calc.timing.steptime``, ``calc.parallel.comm``, ``calc.memory.overheads``,
``calc.memory.fp8``,
``calc.memory.moe_routing``, ``calc.parallel.pipeline``, ``calc.memory.layout``, ``calc.memory.finetune``); this
module only formats the
results. Names start with ``g2-``. ``tests/test_guide2.py`` checks the subtle ones against direct engine calls.
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction
from functools import cache

from calc import format_bytes, format_count
from calc.hardware import gpu
from calc.memory.finetune import NF4_BLOCK, NF4_SCALE_BLOCK, finetune_memory, lora_params, nf4_bytes
from calc.memory.fp8 import LOW_PRECISION_RECIPES, low_precision_weights
from calc.memory.layout import Layout, layout_memory
from calc.memory.moe_routing import activation_range
from calc.memory.overheads import (
    ALLOCATOR_FRAGMENTATION,
    CUDA_CONTEXT_BYTES,
    NCCL_BUFFSIZE,
    NCCL_LL128_BUFFSIZE,
    NCCL_LL_BUFFSIZE,
    communicators,
    nccl_communicator_bytes,
    peak_memory,
)
from calc.models.presets import preset
from calc.parallel.comm import INTERCONNECTS, step_communication
from calc.parallel.network import Network
from calc.parallel.pipeline import schedule_in_flight
from calc.timing.steptime import DP_BUCKET_PARAMS, step_time
from prose_numbers import ms as _ms
from prose_numbers import pct as _pct
from prose_numbers import seconds as _s
from prose_numbers import times as _times
from prose_numbers import trained_layout

NUMBERS: dict[str, Callable[[], str]] = {}

_H100 = gpu("h100-sxm")
_CAPACITY = _H100.memory_bytes


def _seq(s: int) -> str:
    return f"{s:,}"


# --------------------------------------------------------------------------- overlap (docs/parallelism/overlap.md)

OVERLAP_ARCH = "llama2-7b"
"""The overlap page's example: Llama 2 7B on 64 H100s (8 nodes of 8), 4,096-token sequences, 512 per step."""


def overlap_layout(zero_stage: int) -> Layout:
    """The overlap page's data-parallel layout."""
    return trained_layout(OVERLAP_ARCH, dp=64, zero_stage=zero_stage, seq_len=4096, global_batch=512)


@cache
def _ov(zero_stage: int, whole_bucket: bool = False):
    arch = preset(OVERLAP_ARCH)
    kw = {"dp_bucket_params": arch.param_count} if whole_bucket else {}
    return step_time(arch, overlap_layout(zero_stage), **kw)


def raw_terms(zero_stage: int) -> dict[str, float]:
    """Every collective of the overlap layout at its full time, nothing overlapped ([`step_communication`] with the
    arguments [`step_time`] passes it, on step_time's default network)."""
    arch, lay = preset(OVERLAP_ARCH), overlap_layout(zero_stage)
    net = Network("nvlink4", "ib-ndr", gpus_per_node=8)
    links = ("gpus_per_node", "intra", "inter", "intra_efficiency", "inter_efficiency", "nics_per_node", "latency")
    comm = step_communication(
        params=arch.param_count, layers=arch.num_layers, hidden=arch.hidden_size, seq=lay.seq_len,
        micro_batch=lay.micro_batch, num_microbatches=lay.num_microbatches or 1, dp=lay.dp,
        zero_stage=lay.effective_zero_stage, kv_dims=arch.num_kv_heads * (arch.head_dim + arch.v_head_dim),
        **{name: getattr(net, name) for name in links},
    )  # fmt: skip
    return {t.name: t.time_s for t in comm.terms}


def _no_overlap_step(zero_stage: int) -> float:
    t = _ov(zero_stage)
    return t.compute_s + t.bubble_s + sum(raw_terms(zero_stage).values())


TP_ARCH = "llama3-70b"
"""The tensor- and pipeline-parallel example: Llama 3 70B, tp 8 x pp 4 x dp 8 (256 H100s), 8,192 tokens."""

TP_LAYOUT = trained_layout(TP_ARCH, dp=8, tp=8, pp=4, seq_len=8192, global_batch=512, sequence_parallel=True)


@cache
def _tp(schedule: str = "1f1b"):
    return step_time(preset(TP_ARCH), TP_LAYOUT, schedule=schedule)


def _tp_exposed(schedule: str = "1f1b") -> float:
    return sum(v for k, v in _tp(schedule).exposed_s.items() if k.startswith("tp-"))


@cache
def _tp_ub():
    """The same layout with Transformer Engine's userbuffers overlap (``tp_comm_overlap``)."""
    return step_time(preset(TP_ARCH), TP_LAYOUT, schedule="1f1b", tp_comm_overlap=True)


def _tp_ub_exposed() -> float:
    return sum(v for k, v in _tp_ub().exposed_s.items() if k.startswith("tp-"))


NUMBERS.update(
    {
        "g2-ov-bucket": lambda: format_count(max(DP_BUCKET_PARAMS, 1_000_000 * 64)),
        "g2-ov-bucket-default": lambda: format_count(DP_BUCKET_PARAMS),
        "g2-ov-z1-step": lambda: _s(_ov(1).step_time_s),
        "g2-ov-z1-compute": lambda: _s(_ov(1).compute_s),
        "g2-ov-z1-rs-exposed": lambda: _ms(_ov(1).exposed_s["dp-grad-reduce-scatter"]),
        "g2-ov-z1-rs-raw": lambda: _ms(raw_terms(1)["dp-grad-reduce-scatter"]),
        "g2-ov-z1-ag": lambda: _ms(_ov(1).exposed_s["dp-param-all-gather"]),
        "g2-ov-z1-step-whole": lambda: _s(_ov(1, True).step_time_s),
        "g2-ov-z1-step-ag-hidden": lambda: _s(_ov(1).step_time_s - _ov(1).exposed_s["dp-param-all-gather"]),
        "g2-ov-z3-step": lambda: _s(_ov(3).step_time_s),
        "g2-ov-z3-ag-exposed": lambda: _ms(_ov(3).exposed_s["dp-param-all-gather"]),
        "g2-ov-z3-ag-raw": lambda: _ms(raw_terms(3)["dp-param-all-gather"]),
        "g2-ov-z3-rs-exposed": lambda: _ms(_ov(3).exposed_s["dp-grad-reduce-scatter"]),
        "g2-ov-z3-rs-raw": lambda: _ms(raw_terms(3)["dp-grad-reduce-scatter"]),
        "g2-ov-z3-step-off": lambda: _s(_no_overlap_step(3)),
        "g2-ov-z3-saved": lambda: _pct(1 - _ov(3).step_time_s / _no_overlap_step(3)),
        "g2-ov-tp-step": lambda: _s(_tp().step_time_s),
        "g2-ov-tp-exposed": lambda: _s(_tp_exposed()),
        "g2-ov-tp-share": lambda: _pct(_tp_exposed() / _tp().step_time_s),
        "g2-ov-tp-mfu": lambda: _pct(_tp().mfu),
        "g2-ov-tp-mfu-hidden": lambda: _pct(_tp().mfu * _tp().step_time_s / (_tp().step_time_s - _tp_exposed())),
        "g2-ov-tp-ub-exposed": lambda: _s(_tp_ub_exposed()),
        "g2-ov-tp-ub-mfu": lambda: _pct(_tp_ub().mfu),
    }
)

# --------------------------------------------------------------------------- pipeline (docs/parallelism/pipeline.md)

NUMBERS.update(
    {
        "g2-pp-70b-1f1b-step": lambda: _s(_tp("1f1b").step_time_s),
        "g2-pp-70b-1f1b-bubble": lambda: _s(_tp("1f1b").bubble_s),
        "g2-pp-70b-zb-step": lambda: _s(_tp("zb-h1").step_time_s),
        "g2-pp-70b-zb-bubble": lambda: _s(_tp("zb-h1").bubble_s),
        "g2-pp-70b-dual-step": lambda: _s(_tp("dualpipe").step_time_s),
        "g2-pp-70b-dual-bubble": lambda: _s(_tp("dualpipe").bubble_s),
        "g2-pp-70b-m": lambda: str(TP_LAYOUT.num_microbatches),
        **{
            f"g2-pp-p8m32-inflight-{name}": (lambda name=name: str(schedule_in_flight(name, 8, 32)))
            for name in ("gpipe", "1f1b", "zb-h1", "dualpipe")
        },
    }
)

# --------------------------------------------------------------------------- hidden memory (docs/memory/hidden.md)

HIDDEN_ARCH = "llama3-8b"
"""The hidden-memory example: Llama 3 8B, 8 GPUs of data parallelism with ZeRO-1, 7,168 tokens, selective recompute.

The sequence is the one at which the tensors fit an H100 SXM as it is exposed (81,559 MiB) and ``nvidia-smi`` does not.
"""

HIDDEN_LAYOUT = trained_layout(HIDDEN_ARCH, dp=8, zero_stage=1, seq_len=7168)


@cache
def _peak(expandable: bool = False, low_precision: str | None = None):
    return peak_memory(preset(HIDDEN_ARCH), HIDDEN_LAYOUT, expandable_segments=expandable, low_precision=low_precision)


def _item(name: str, expandable: bool = False) -> int:
    return next(o.bytes for o in _peak(expandable).overheads if o.name == name)


@cache
def _peak_3d():
    return peak_memory(preset(TP_ARCH), TP_LAYOUT)


def _nccl_total(p) -> int:
    return sum(o.bytes for o in p.overheads if o.name.startswith("nccl"))


NUMBERS.update(
    {
        "g2-hid-tensors": lambda: format_bytes(_peak().memory.total),
        "g2-hid-allocated": lambda: format_bytes(_peak().allocated_bytes),
        "g2-hid-reserved": lambda: format_bytes(_peak().reserved_bytes),
        "g2-hid-smi": lambda: format_bytes(_peak().nvidia_smi_bytes),
        "g2-hid-context": lambda: format_bytes(CUDA_CONTEXT_BYTES),
        "g2-hid-context-mib": lambda: f"{CUDA_CONTEXT_BYTES >> 20} MiB",
        "g2-hid-nccl-simple-mib": lambda: f"{NCCL_BUFFSIZE / 2**20:.3g} MiB",
        "g2-hid-nccl-ll-kib": lambda: f"{NCCL_LL_BUFFSIZE / 2**10:.3g} KiB",
        "g2-hid-nccl-ll128-mib": lambda: f"{NCCL_LL128_BUFFSIZE / 2**20:.3g} MiB",
        "g2-hid-nccl-dp": lambda: format_bytes(_item("nccl_dp")),
        "g2-hid-nccl-ring": lambda: format_bytes(nccl_communicator_bytes(8)),
        "g2-hid-reserve": lambda: format_bytes(_item("allocator_reserve")),
        "g2-hid-reserve-exp": lambda: format_bytes(_item("allocator_reserve", True)),
        "g2-hid-reserved-exp": lambda: format_bytes(_peak(True).reserved_bytes),
        "g2-hid-frag": lambda: _pct(Fraction(*ALLOCATOR_FRAGMENTATION[False]), 0),
        "g2-hid-frag-exp": lambda: _pct(Fraction(*ALLOCATOR_FRAGMENTATION[True]), 0),
        "g2-hid-optstep": lambda: format_bytes(_item("optimizer_step")),
        "g2-hid-loss": lambda: format_bytes(_item("loss_logits")),
        "g2-hid-capacity": lambda: format_bytes(_CAPACITY),
        "g2-hid-capacity-mib": lambda: f"{_CAPACITY >> 20:,} MiB",
        "g2-hid-gap": lambda: format_bytes(_peak().nvidia_smi_bytes - _peak().memory.total),
        "g2-hid-3d-comms": lambda: str(len(communicators(TP_LAYOUT))),
        "g2-hid-3d-nccl": lambda: format_bytes(_nccl_total(_peak_3d())),
        "g2-hid-3d-smi": lambda: format_bytes(_peak_3d().nvidia_smi_bytes),
    }
)

# --------------------------------------------------------------------------- FP8 (docs/memory/fp8.md)


def _lp_weights(recipe: str):
    return low_precision_weights(preset(HIDDEN_ARCH).param_count, recipe)


@cache
def _fp8_time(dtype: str) -> float:
    lay = trained_layout(HIDDEN_ARCH, dp=8, zero_stage=1, seq_len=8192, global_batch=64)
    return step_time(preset(HIDDEN_ARCH), lay, dtype=dtype).step_time_s


NUMBERS.update(
    {
        **{
            f"g2-fp8-{name}-copies": (lambda name=name: format_bytes(_lp_weights(name).total))
            for name in LOW_PRECISION_RECIPES
        },
        **{
            f"g2-fp8-{name}-allocated": (lambda name=name: format_bytes(_peak(low_precision=name).allocated_bytes))
            for name in LOW_PRECISION_RECIPES
        },
        **{
            f"g2-fp8-{name}-bpp": (lambda name=name: f"{float(LOW_PRECISION_RECIPES[name].bytes_per_param):.4g} B")
            for name in LOW_PRECISION_RECIPES
        },
        "g2-fp8-mx-scales": lambda: format_bytes(_lp_weights("mxfp8-blackwell").scale_bytes),
        "g2-fp8-bf16-step": lambda: _s(_fp8_time("bf16")),
        "g2-fp8-fp8-step": lambda: _s(_fp8_time("fp8")),
        "g2-fp8-speedup": lambda: _times(_fp8_time("bf16") / _fp8_time("fp8"), 3),
        "g2-fp8-peak-ratio": lambda: _times(_H100.peak_flops("fp8") / _H100.peak_flops("bf16"), 2),
    }
)

# --------------------------------------------------------------------------- MoE (docs/parallelism/moe-practice.md)

MOE_ARCH = "mixtral-8x7b"
"""The MoE example: Mixtral 8x7B on 64 GPUs, expert parallelism 8, ZeRO-1, 4,096-token micro-batches."""

MOE_LAYOUT = trained_layout(MOE_ARCH, dp=64, ep=8, zero_stage=1, seq_len=4096)


@cache
def _moe_range(capacity: float | None):
    return activation_range(preset(MOE_ARCH), MOE_LAYOUT, capacity_factor=capacity)


@cache
def _moe_peak(routing: str):
    return peak_memory(preset(MOE_ARCH), MOE_LAYOUT, moe_routing=routing)


def moe_fit_verdict() -> str:
    """Whether the MoE example fits an H100 as exposed at the worst case of a 1.25 capacity factor, in words
    (the page states the balanced and capacity-factor-2 cases, which tests/test_guide2.py holds)."""
    fits = _moe_peak("capacity-1.25").nvidia_smi_bytes <= gpu("h100-sxm").memory_bytes
    return "fits" if fits else "does not fit"


_MOE_ROUTINGS = ("balanced", "capacity-1.25", "capacity-2")


def _a2a_bytes(tokens: int) -> int:
    """One dispatch (or combine) buffer of one MoE layer: a bf16 hidden vector per token-expert assignment."""
    return 2 * tokens * preset(MOE_ARCH).hidden_size


def _expert_weights_per_gpu(ep: int, etp: int) -> int:
    arch = preset(MOE_ARCH)
    return 2 * arch.num_moe_layers * arch.expert_params_per_layer // (ep * etp)


NUMBERS.update(
    {
        "g2-moe-fit-verdict": moe_fit_verdict,
        "g2-moe-tokens-balanced": lambda: f"{_moe_range(None).tokens.balanced:,}",
        "g2-moe-tokens-dropless": lambda: f"{_moe_range(None).tokens.worst:,}",
        "g2-moe-tokens-c125": lambda: f"{_moe_range(1.25).tokens.worst:,}",
        "g2-moe-tokens-c2": lambda: f"{_moe_range(2).tokens.worst:,}",
        "g2-moe-act-balanced": lambda: format_bytes(_moe_range(None).balanced),
        "g2-moe-act-dropless": lambda: format_bytes(_moe_range(None).worst),
        "g2-moe-act-c125": lambda: format_bytes(_moe_range(1.25).worst),
        "g2-moe-act-c2": lambda: format_bytes(_moe_range(2).worst),
        "g2-moe-act-ratio": lambda: _times(Fraction(_moe_range(None).worst, _moe_range(None).balanced), 2),
        **{
            f"g2-moe-peak-{key}": (lambda routing=routing: format_bytes(_moe_peak(routing).nvidia_smi_bytes))
            for key, routing in (
                ("balanced", "balanced"),
                ("dropless", "dropless"),
                ("c125", "capacity-1.25"),
                ("c2", "capacity-2"),
            )
        },
        "g2-moe-a2a-balanced": lambda: format_bytes(_a2a_bytes(_moe_range(None).tokens.balanced)),
        "g2-moe-a2a-dropless": lambda: format_bytes(_a2a_bytes(_moe_range(None).tokens.worst)),
        "g2-moe-experts-ep8": lambda: format_bytes(_expert_weights_per_gpu(8, 1)),
        "g2-moe-experts-ep1": lambda: format_bytes(_expert_weights_per_gpu(1, 1)),
        "g2-moe-experts-ep4-etp2": lambda: format_bytes(_expert_weights_per_gpu(4, 2)),
    }
)

# --------------------------------------------------------------------------- offload (docs/memory/offload.md)

OFFLOAD_ARCH = "llama2-7b"
"""The offload example: Llama 2 7B, 8 GPUs with ZeRO-2, 4,096 tokens, 64 sequences per step."""


def offload_layout(offload: bool, recompute: str = "selective") -> Layout:
    """The offload page's layout, with or without ZeRO-Offload."""
    return trained_layout(
        OFFLOAD_ARCH, dp=8, zero_stage=2, seq_len=4096, global_batch=64, recompute=recompute, offload_optimizer=offload
    )


_PCIE = INTERCONNECTS["pcie5-x16"].bytes_per_s


@cache
def _off(offload: bool):
    return layout_memory(preset(OFFLOAD_ARCH), offload_layout(offload))


def offload_pcie_bytes() -> int:
    """Bytes one GPU moves over PCIe per step under ZeRO-Offload: its bf16 gradient shard down and its bf16
    parameter shard back (Ren et al. 2021, Sec. 4.1: "fp16 gradients" to the CPU, "fp16 parameters" back)."""
    n = preset(OFFLOAD_ARCH).param_count
    return 2 * (2 * -(-n // 8))


@cache
def _off_compute() -> float:
    return step_time(preset(OFFLOAD_ARCH), offload_layout(False)).compute_s


def _act_offload_bytes() -> int:
    """Activations of all micro-batches of a step moved out and back (full recompute keeps only layer inputs)."""
    lay = offload_layout(False)
    per_mb = layout_memory(preset(OFFLOAD_ARCH), lay).activations
    return 2 * per_mb * (lay.num_microbatches or 1)


NUMBERS.update(
    {
        "g2-off-gpu": lambda: format_bytes(_off(False).total),
        "g2-off-gpu-offload": lambda: format_bytes(_off(True).total),
        "g2-off-host-rank": lambda: format_bytes(_off(True).cpu_offload),
        "g2-off-host-node": lambda: format_bytes(8 * _off(True).cpu_offload),
        "g2-off-pcie-bytes": lambda: format_bytes(offload_pcie_bytes()),
        "g2-off-pcie-bw": lambda: format_bytes(int(_PCIE)) + "/s",
        "g2-off-pcie-time": lambda: _ms(offload_pcie_bytes() / _PCIE),
        "g2-off-compute": lambda: _s(_off_compute()),
        "g2-off-m": lambda: str(offload_layout(False).num_microbatches),
        "g2-off-act-bytes": lambda: format_bytes(_act_offload_bytes()),
        "g2-off-act-time": lambda: _s(_act_offload_bytes() / _PCIE),
        "g2-off-act-share": lambda: _pct(_act_offload_bytes() / _PCIE / _off_compute(), 0),
    }
)

# --------------------------------------------------------------------------- fine-tuning (docs/memory/finetuning.md)

FT_ARCH = "llama2-7b"


def _ft(method: str, slug: str = FT_ARCH, **kw: object):
    return finetune_memory(preset(slug), method, **kw)


def _dq_bits() -> float:
    b = nf4_bytes([NF4_BLOCK * NF4_SCALE_BLOCK * 64])
    return 8 * (b.absmax_bytes + b.second_level_bytes) / b.params


NUMBERS.update(
    {
        "g2-ft-full": lambda: format_bytes(_ft("full").total),
        "g2-ft-lora": lambda: format_bytes(_ft("lora").total),
        "g2-ft-lora-frozen": lambda: format_bytes(_ft("lora").frozen_bytes),
        "g2-ft-lora-adapters": lambda: format_count(_ft("lora").trainable_params),
        "g2-ft-lora-adapter-share": lambda: _pct(Fraction(_ft("lora").trainable_params, _ft("lora").base_params), 2),
        "g2-ft-lora-adapter-bytes": lambda: format_bytes(_ft("lora").trainable_bytes),
        "g2-ft-qlora": lambda: format_bytes(_ft("qlora").total),
        "g2-ft-qlora-values": lambda: format_bytes(_ft("qlora").frozen_nf4.values_bytes),
        "g2-ft-qlora-consts": lambda: format_bytes(
            _ft("qlora").frozen_nf4.absmax_bytes + _ft("qlora").frozen_nf4.second_level_bytes
        ),
        "g2-ft-qlora-consts-nodq": lambda: format_bytes(_ft("qlora", double_quant=False).frozen_nf4.absmax_bytes),
        "g2-ft-qlora-bf16": lambda: format_bytes(_ft("qlora").frozen_bf16_bytes),
        "g2-ft-qlora-quantized": lambda: format_count(_ft("qlora").frozen_nf4.params),
        "g2-ft-dq-bits": lambda: f"{_dq_bits():.3f} bits",
        "g2-ft-ratio-full-lora": lambda: _times(Fraction(_ft("full").total, _ft("lora").total), 2),
        "g2-ft-ratio-full-qlora": lambda: _times(Fraction(_ft("full").total, _ft("qlora").total), 2),
        "g2-ft-qv8": lambda: format_count(lora_params(preset(FT_ARCH), 8, "qv")),
        "g2-ft-70b-full": lambda: format_bytes(_ft("full", "llama3-70b").total),
        "g2-ft-70b-lora": lambda: format_bytes(_ft("lora", "llama3-70b").total),
        "g2-ft-70b-qlora": lambda: format_bytes(_ft("qlora", "llama3-70b").total),
    }
)

# --------------------------------------------------------------------------- the curve (docs/memory/activations.md)

CURVE_ARCH = "llama3-8b"
"""The activation curve's model: Llama 3 8B on 8 H100s with ZeRO-1, dp × cp = 8."""

CURVE_SEQS: tuple[int, ...] = tuple(1 << e for e in range(11, 21))
"""Sequence lengths of the curve: 2,048 to 1,048,576 tokens, doubling."""

CURVE_CASES: dict[str, dict[str, object]] = {
    "none": {"recompute": "none", "flash_attention": False},
    "selective": {"recompute": "selective", "flash_attention": False},
    "full": {"recompute": "full", "flash_attention": False},
    "flash": {"recompute": "none", "flash_attention": True},
    "cp2": {"recompute": "none", "flash_attention": True, "cp": 2},
    "cp4": {"recompute": "none", "flash_attention": True, "cp": 4},
    "cp8": {"recompute": "none", "flash_attention": True, "cp": 8},
    "full-cp8": {"recompute": "full", "flash_attention": True, "cp": 8},
}
"""Each line of the curve: a recomputation mode, FlashAttention, and context parallelism with dp = 8 / cp."""


def curve_layout(case: str, seq: int) -> Layout:
    """The layout of one point of the curve."""
    kw = dict(CURVE_CASES[case])
    cp = int(kw.get("cp", 1))
    return Layout(dp=8 // cp, zero_stage=1, seq_len=seq, dropout=False, **kw)


@cache
def curve_point(case: str, seq: int) -> tuple[int, bool]:
    """Per-GPU activations of one point and whether the whole peak (nvidia-smi) fits an 80 GB H100."""
    arch, lay = preset(CURVE_ARCH), curve_layout(case, seq)
    return layout_memory(arch, lay).activations, peak_memory(arch, lay).nvidia_smi_bytes <= _CAPACITY


def longest_fitting(case: str) -> int:
    """The longest sequence of the curve that still fits (0 if none does)."""
    fits = [s for s in CURVE_SEQS if curve_point(case, s)[1]]
    return max(fits, default=0)


NUMBERS.update(
    {
        **{
            f"g2-curve-{case}-{seq // 1024}k": (lambda case=case, seq=seq: format_bytes(curve_point(case, seq)[0]))
            for case in CURVE_CASES
            for seq in (4096, 16384, 65536)
        },
        **{f"g2-curve-{case}-max": (lambda case=case: _seq(longest_fitting(case))) for case in CURVE_CASES},
        "g2-curve-full-16k-peak": lambda: format_bytes(
            peak_memory(preset(CURVE_ARCH), curve_layout("full", 16384)).nvidia_smi_bytes
        ),
        "g2-curve-full-16k-logits": lambda: format_bytes(
            layout_memory(preset(CURVE_ARCH), curve_layout("full", 16384)).logits
        ),
    }
)

# --------------------------------------------------------------------------- measuring (docs/memory/measuring.md)

MEASURE_ARCH = "llama3-8b"
"""The measuring page's example: Llama 3 8B, one 2,048-token sequence, no dropout, under each implementation."""


def measure_layout(implementation: str) -> Layout:
    """One sequence under ``implementation`` (FlashAttention for Megatron-LM's kernels and SDPA, not for eager)."""
    return Layout(
        seq_len=2048, implementation=implementation, flash_attention=implementation != "hf-eager", dropout=False
    )


NUMBERS.update(
    {
        f"g2-meas-{impl}": (
            lambda impl=impl: format_bytes(layout_memory(preset(MEASURE_ARCH), measure_layout(impl)).activations)
        )
        for impl in ("megatron", "hf-eager", "hf-sdpa")
    }
)
