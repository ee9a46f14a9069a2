"""Prose numbers of the performance pages: the roofline and when communication hides (systems/roofline.md),
inference performance (systems/inference-performance.md), scale-up domains (systems/scale-up.md), optimizer
memory beyond Adam (memory/optimizers.md) and compute-optimal sizing (compute.md).

Each closed form is written once here, as a function, and checked against ``calc.step_time`` in
``tests/test_roofline.py``: C is the achieved matmul rate (the dense bf16 peak times the step-time model's
``MATMUL_EFFICIENCY``), W a bus bandwidth in bytes/s.
"""

from __future__ import annotations

from collections.abc import Callable

from calc import (
    decode_compute_bound_batch,
    decode_step,
    flops_6nd,
    format_bytes,
    format_count,
    gpu,
    inference_memory,
    interconnect,
    kv_transfer_s,
    model_kv_bytes_per_token,
    prefill_time,
    preset,
    speculative_speedup,
    speculative_tokens_per_step,
    step_communication,
    weight_bytes,
)
from calc.timing.steptime import MATMUL_EFFICIENCY

ROOF_GPUS = {"h100": ("h100-sxm", "nvlink4"), "b200": ("b200", "nvlink5")}
"""The two GPUs every threshold is worked for, with their NVLink generation; both have 400 Gb/s NDR NICs."""

NIC = "ib-ndr"
ROOF_MODEL = "llama3-70b"
"""The model the per-layer thresholds (TP, PP, CP) are worked for."""


def achieved_flops(g: str) -> float:
    """C: the dense bf16 peak at the step-time model's matmul efficiency."""
    return gpu(g).bf16_flops * MATMUL_EFFICIENCY


def dp_bus_bandwidth(g: str, intra: str) -> float:
    """W for data parallelism over 64 GPUs in 8 nodes (one NDR NIC per GPU), as the step-time model times it."""
    comm = step_communication(params="7B", layers=32, hidden=4096, seq=4096, dp=64, zero_stage=3, intra=intra)
    return next(t for t in comm.terms if t.name == "dp-param-all-gather").bus_bytes_per_s


def fsdp_min_tokens(g: str, intra: str) -> float:
    """DP / FSDP hide when each GPU's micro-batch holds at least ``C / W`` tokens.

    FSDP gathers a layer's ``2P`` bytes of bf16 weights per micro-batch while that layer computes ``2P`` FLOPs
    per token forward (twice the bytes and twice the FLOPs backward); DP's all-reduce of the last micro-batch's
    ``2P`` bytes of gradients ((2(n−1)/n)·2P on the wire) hides behind its ``4P`` FLOPs per token backward. Both
    give ``tokens ≥ C / W`` (the Ultra-Scale Playbook's overlap condition for DP and ZeRO-3; How to Scale Your
    Model, Part 5, for FSDP).
    """
    return achieved_flops(g) / dp_bus_bandwidth(g, intra)


def _layer():
    arch = preset(ROOF_MODEL)
    per_layer = arch.attention_params_per_layer + arch.mlp_params_per_layer(0)
    return arch, per_layer


def tp_max_degree(g: str, link: str) -> float:
    """TP hides (if overlapped at all) while ``t − 1 ≤ P_l · W / (4 h C)``.

    Per token and layer, forward: ``2 P_l / t`` FLOPs per GPU against two all-reduces (or all-gather +
    reduce-scatter pairs) of ``2h`` bytes, ``8h (t−1)/t`` bytes on the wire (Narayanan et al. 2021, Sec. 3.2).
    Independent of the batch: more tokens add compute and traffic alike.
    """
    arch, p_l = _layer()
    return 1 + p_l * interconnect(link).bytes_per_s / (4 * arch.hidden_size * achieved_flops(g))


def pp_min_layers(g: str) -> float:
    """PP hides while a stage holds at least ``h C / (P_l W)`` layers: ``2 P_l`` FLOPs per token per layer
    against ``2h`` bytes per token sent at the stage boundary (Narayanan et al. 2021, Sec. 4.1)."""
    arch, p_l = _layer()
    return arch.hidden_size * achieved_flops(g) / (p_l * interconnect(NIC).bytes_per_s)


def cp_min_tokens(g: str, link: str) -> float:
    """Ring attention hides while each CP rank holds at least ``(C / W) · d_kv / h`` tokens.

    Each ring step sends a block's K and V (``4 c d_kv`` bytes in bf16) while the block's scores and weighted
    values take ``4 c² h`` FLOPs (Liu et al. 2023, Ring Attention, Sec. 3: block size ≥ FLOPs / bandwidth).
    Causal masking halves the average block's work, doubling the threshold.
    """
    arch = preset(ROOF_MODEL)
    return achieved_flops(g) / interconnect(link).bytes_per_s * arch.num_kv_heads * arch.head_dim / arch.hidden_size


def ep_min_ffn(g: str, link: str) -> float:
    """EP's all-to-alls hide while the expert FFN width ``f ≥ (2/3) (C / W) (ep−1)/ep`` (here ``ep → ∞``).

    Each routed copy of a token sends ``2h`` bytes to its expert and ``2h`` back (``4kh``) against the experts'
    ``6 k h f`` FLOPs forward (three matrices of a SwiGLU expert).
    """
    return 2 / 3 * achieved_flops(g) / interconnect(link).bytes_per_s


def _tflops(x: float) -> str:
    return f"{x / 1e12:,.0f} TFLOP/s"


def _bw(x: float) -> str:
    return f"{x / 1e9:,.0f} GB/s"


def _whole(x: float) -> str:
    return f"{x:,.0f}"


def _ms(s: float) -> str:
    return f"{s * 1e3:.3g} ms"


NUMBERS: dict[str, Callable[[], str]] = {
    "rf-model": lambda: "Llama 3 70B",
    "rf-matmul-eff": lambda: f"{MATMUL_EFFICIENCY:.0%}",
    "rf-nic-bw": lambda: _bw(interconnect(NIC).bytes_per_s),
}
for _key, (_g, _link) in ROOF_GPUS.items():
    NUMBERS.update(
        {
            f"rf-{_key}-peak": lambda g=_g: _tflops(gpu(g).bf16_flops),
            f"rf-{_key}-hbm": lambda g=_g: f"{gpu(g).hbm_bytes_per_s / 1e12:.3g} TB/s",
            f"rf-{_key}-ridge": lambda g=_g: _whole(gpu(g).bf16_flops / gpu(g).hbm_bytes_per_s),
            f"rf-{_key}-c": lambda g=_g: _tflops(achieved_flops(g)),
            f"rf-{_key}-nvlink": lambda link=_link: _bw(interconnect(link).bytes_per_s),
            f"rf-{_key}-dp-w": lambda g=_g, link=_link: _bw(dp_bus_bandwidth(g, link)),
            f"rf-{_key}-fsdp-tokens": lambda g=_g, link=_link: _whole(fsdp_min_tokens(g, link)),
            f"rf-{_key}-tp-nvlink": lambda g=_g, link=_link: f"{tp_max_degree(g, link):.0f}",
            f"rf-{_key}-tp-nic": lambda g=_g: f"{tp_max_degree(g, NIC):.1f}",
            f"rf-{_key}-pp-layers": lambda g=_g: f"{pp_min_layers(g):.2f}",
            f"rf-{_key}-cp-nvlink": lambda g=_g, link=_link: _whole(cp_min_tokens(g, link)),
            f"rf-{_key}-cp-nic": lambda g=_g: _whole(cp_min_tokens(g, NIC)),
            f"rf-{_key}-ep-nvlink": lambda g=_g, link=_link: _whole(ep_min_ffn(g, link)),
            f"rf-{_key}-ep-nic": lambda g=_g: _whole(ep_min_ffn(g, NIC)),
        }
    )

# ---------------------------------------------------------------------- inference performance

_8B, _70B = "llama3-8b", "llama3-70b"


def _decode_ms(batch: int) -> float:
    return decode_step(preset(_8B), batch=batch, context=4096).time_s * 1e3


NUMBERS.update(
    {
        "ip-8b-weights": lambda: format_bytes(weight_bytes(preset(_8B).param_count)),
        "ip-8b-b1-ms": lambda: _ms(decode_step(preset(_8B), batch=1, context=4096).time_s),
        "ip-8b-b1-tps": lambda: _whole(decode_step(preset(_8B), batch=1, context=4096).tokens_per_s),
        "ip-8b-b64-ms": lambda: _ms(decode_step(preset(_8B), batch=64, context=4096).time_s),
        "ip-8b-b64-tps": lambda: _whole(decode_step(preset(_8B), batch=64, context=4096).tokens_per_s),
        "ip-8b-b64-kv": lambda: format_bytes(decode_step(preset(_8B), batch=64, context=4096).kv_bytes),
        "ip-8b-b1-kv": lambda: format_bytes(decode_step(preset(_8B), batch=1, context=4096).kv_bytes),
        "ip-8b-b64-ratio": lambda: f"{_decode_ms(64) / _decode_ms(1):.1f}×",
        "ip-h100-bstar": lambda: str(decode_compute_bound_batch(preset(_8B))),
        "ip-b200-bstar": lambda: str(decode_compute_bound_batch(preset(_8B), gpu="b200")),
        "ip-h100-bstar-fp8": lambda: str(decode_compute_bound_batch(preset(_8B), dtype="fp8")),
        "ip-8b-kv-token": lambda: format_bytes(model_kv_bytes_per_token(preset(_8B))),
        "ip-8b-max-8k": lambda: str(inference_memory(preset(_8B), seq_len=8192).max_concurrent_sequences),
        "ip-8b-max-32k": lambda: str(inference_memory(preset(_8B), seq_len=32768).max_concurrent_sequences),
        "ip-8b-prefill-2k": lambda: _ms(prefill_time(preset(_8B), 2048).time_s),
        "ip-8b-prefill-8k": lambda: _ms(prefill_time(preset(_8B), 8192).time_s),
        "ip-8b-prefill-8k-tps": lambda: _whole(8192 / prefill_time(preset(_8B), 8192).time_s),
        **{
            f"ip-70b-tp{t}-ms": (lambda t=t: _ms(decode_step(preset(_70B), batch=1, context=4096, tp=t).time_s))
            for t in (2, 4, 8)
        },
        "ip-70b-tp8-allreduce": lambda: _ms(decode_step(preset(_70B), batch=1, context=4096, tp=8).tp_s),
        "ip-spec-tokens": lambda: f"{speculative_tokens_per_step(0.8, 4):.2f}",
        "ip-spec-speedup": lambda: f"{speculative_speedup(0.8, 4, 0.05):.1f}×",
        "ip-spec-speedup-low": lambda: f"{speculative_speedup(0.5, 4, 0.05):.1f}×",
        "ip-70b-kv-4k": lambda: format_bytes(4096 * model_kv_bytes_per_token(preset(_70B))),
        "ip-70b-kv-nic": lambda: _ms(kv_transfer_s(preset(_70B), 4096, interconnect(NIC).bytes_per_s)),
        "ip-70b-kv-nvlink": lambda: _ms(kv_transfer_s(preset(_70B), 4096, interconnect("nvlink4").bytes_per_s)),
        "ip-70b-prefill-4k-tp8": lambda: _ms(prefill_time(preset(_70B), 4096, tp=8).time_s),
    }
)

# ---------------------------------------------------------------------- scale-up domains


def ring_over_nvls(n: int) -> float:
    """How much longer a ring all-reduce takes than NVLink SHARP's in-switch one: ``2(n−1)/n``.

    A ring moves ``2(n−1)/n · S`` per GPU each way (nccl-tests ``doc/PERFORMANCE.md``); with NVLS each GPU sends
    its ``S`` once to the NVSwitch, which reduces it and multicasts the sum back (NCCL 2.17's NVLS algorithm).
    """
    return 2 * (n - 1) / n


NUMBERS.update(
    {
        "su-nvl72-gpus": lambda: str(gpu("gb200").scaleup_gpus),
        "su-nvl72-nvlink": lambda: _bw(interconnect("nvlink5").bytes_per_s),
        "su-nvl72-memory": lambda: format_bytes(gpu("gb200").scaleup_gpus * gpu("gb200").memory_bytes, digits=3),
        "su-hgx-gpus": lambda: str(gpu("b200").scaleup_gpus),
        "su-nvl72-vs-nic": lambda: f"{interconnect('nvlink5').bytes_per_s / interconnect(NIC).bytes_per_s:.0f}×",
        "su-nvls-8": lambda: f"{ring_over_nvls(8):.2f}×",
        "su-nvls-72": lambda: f"{ring_over_nvls(72):.2f}×",
        "su-tp-max-nvl72": lambda: f"{tp_max_degree('gb200', 'nvlink5'):.0f}",
    }
)

# ---------------------------------------------------------------------- optimizers beyond Adam and Chinchilla


CHINCHILLA_TOKENS_PER_PARAM = 20
"""Hoffmann et al. 2022 (Chinchilla), Sec. 3 and Table 3: compute-optimal training uses about 20 tokens per
parameter (their 70B model saw 1.4T tokens)."""

CC_BUDGET = 1e24
"""The compute budget of the worked example, FLOPs."""

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _sci(value: float, digits: int = 3) -> str:
    mantissa, _, exponent = f"{value:.{digits - 1}e}".partition("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def compute_optimal(budget: float) -> tuple[int, int]:
    """Parameters and tokens that spend ``budget`` FLOPs at 6ND with D = 20 N: ``N = sqrt(C / 120)``."""
    n = int((budget / (6 * CHINCHILLA_TOKENS_PER_PARAM)) ** 0.5)
    return n, CHINCHILLA_TOKENS_PER_PARAM * n


def state_bytes(params: int, per_param: int) -> str:
    return format_bytes(params * per_param)


_OPTIMIZERS = {  # bytes per parameter beyond bf16 weights + bf16 gradients + fp32 master (2 + 2 + 4)
    "adamw": 8,  # m and v in fp32 (Loshchilov and Hutter 2019)
    "lion": 4,  # one momentum in fp32 (Chen et al. 2023, Alg. 1)
    "muon": 4,  # one momentum per matrix in fp32 (Jordan et al. 2024; Liu et al. 2025, Sec. 2)
    "sgdm": 4,
    "adafactor": 0,  # factored second moment, beta1 = 0: O(n + m) per n x m matrix (Shazeer and Stern 2018)
}

NUMBERS.update(
    {
        **{f"opt-{name}-bpp": (lambda b=b: str(8 + b)) for name, b in _OPTIMIZERS.items()},
        **{f"opt-{name}-70b": (lambda b=b: state_bytes(70 * 10**9, 8 + b)) for name, b in _OPTIMIZERS.items()},
        "opt-muon-vs-adam-70b": lambda: state_bytes(70 * 10**9, _OPTIMIZERS["adamw"] - _OPTIMIZERS["muon"]),
        "opt-shampoo-8192": lambda: format_bytes(2 * 8192 * 8192 * 4),
        "opt-shampoo-8192-w": lambda: format_bytes(8192 * 8192 * 2),
        "cc-tokens-per-param": lambda: str(CHINCHILLA_TOKENS_PER_PARAM),
        "cc-70b-tokens": lambda: format_count(CHINCHILLA_TOKENS_PER_PARAM * 70 * 10**9),
        "cc-70b-flops": lambda: _sci(flops_6nd("70B", CHINCHILLA_TOKENS_PER_PARAM * 70 * 10**9)),
        "cc-budget": lambda: _sci(CC_BUDGET),
        "cc-budget-params": lambda: format_count(compute_optimal(CC_BUDGET)[0]),
        "cc-budget-tokens": lambda: format_count(compute_optimal(CC_BUDGET)[1]),
        "cc-llama3-8b-ratio": lambda: (
            f"{15 * 10**12 / preset('llama3-8b').param_count:,.0f}"
        ),  # 15T tokens, Dubey et al. 2024
    }
)
