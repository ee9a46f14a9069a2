"""Exercises on performance: the roofline, when each parallelism's communication hides, inference performance,
optimizer memory beyond Adam and compute-optimal sizing.

Each solver returns ``(question, answer, unit, display_unit, tolerance, hint, steps)``. The roofline follows
Williams, Waterman and Patterson 2009 ("Roofline", CACM 52(4)); the hiding conditions are those of the guide's
roofline page (per strategy, compute time ≥ communication time); serving uses ``calc.timing.serving`` (Pope et
al. 2022; Leviathan et al. 2023); compute-optimal sizing follows Hoffmann et al. 2022 (Chinchilla, Sec. 3).
"""

from __future__ import annotations

from fractions import Fraction

from calc.guide.exercises._answers import _asks, _b, _n
from calc.hardware import gpu
from calc.memory.inference import weight_bytes
from calc.memory.model_state import model_state_bytes
from calc.models.presets import preset
from calc.timing.compute import flops_6nd
from calc.timing.serving import (
    decode_compute_bound_batch,
    kv_transfer_s,
    serving_flops_per_token,
    speculative_tokens_per_step,
)

__all__: list[str] = []

_EFF = Fraction(7, 10)
"""The matmul efficiency every performance exercise states (70 % of the dense peak)."""

_BW = ((450, "NVLink 4"), (900, "NVLink 5"), (50, "one 400 Gb/s NIC"), (100, "one 800 Gb/s NIC"))
"""Per-direction bandwidths in GB/s the exercises draw, with the link they stand for."""

CHINCHILLA = 20
"""Tokens per parameter of compute-optimal training (Hoffmann et al. 2022, Sec. 3, Table 3)."""


def _c(g: str) -> Fraction:
    return gpu(g).bf16_flops * _EFF


def _tf(x: Fraction | int) -> str:
    return f"{float(x) / 1e12:,.0f} TFLOP/s"


@_asks("count/FLOP/B", "The ridge point is peak FLOP/s over memory bandwidth (Williams et al. 2009).")
def ridge_point(p: dict) -> tuple:
    hw = gpu(p["gpu"])
    ridge = Fraction(hw.bf16_flops, hw.hbm_bytes_per_s)
    return (
        (
            f"{hw.label}: {_tf(hw.bf16_flops)} dense bf16, {hw.hbm_bytes_per_s / 1e12:g} TB/s of HBM. Above how many "
            "FLOPs per byte read is a kernel compute-bound (the ridge point of its roofline)?"
        ),
        ridge,
        (f"{_tf(hw.bf16_flops)} / {hw.hbm_bytes_per_s / 1e12:g} TB/s = {float(ridge):,.0f} FLOPs per byte.",),
    )


@_asks("count/tokens", "Per layer: 2P bytes gathered against 2P FLOPs per token, so tokens ≥ C / W.")
def fsdp_tokens(p: dict) -> tuple:
    hw, (w, link) = gpu(p["gpu"]), p["bw"]
    c = _c(p["gpu"])
    t = c / (w * 10**9)
    return (
        (
            f"FSDP on {hw.label}s: matmuls at 70 % of {_tf(hw.bf16_flops)}, the weight all-gathers at {w} GB/s of "
            f"bus bandwidth ({link}). How many tokens must each GPU's micro-batch hold for a layer's compute to "
            "cover the gather of its bf16 weights?"
        ),
        t,
        (f"C = 0.7 × {_tf(hw.bf16_flops)} = {_tf(c)}.", f"C / W = {_tf(c)} / {w} GB/s = {float(t):,.0f} tokens."),
    )


@_asks(
    "gpus/GPUs",
    "Per token: 2P_l / t FLOPs against 8h(t−1)/t bytes, so t − 1 ≤ P_l · W / (4 h C).",
    tolerance=Fraction(0),
)
def tp_degree(p: dict) -> tuple:
    hw, (w, link) = gpu(p["gpu"]), p["bw"]
    arch = preset("llama3-70b")
    p_l = arch.attention_params_per_layer + arch.mlp_params_per_layer(0)
    c = _c(p["gpu"])
    limit = 1 + Fraction(p_l * w * 10**9) / (4 * arch.hidden_size * c)
    t = max(1, int(limit))
    return (
        (
            f"Tensor parallelism of a Llama 3 70B layer ({_n(p_l)} parameters, h = {arch.hidden_size}) on "
            f"{hw.label}s at 70 % of {_tf(hw.bf16_flops)}, over {link} ({w} GB/s). Up to which degree t can its "
            "all-reduces hide behind the layer's matmuls, if overlapped?"
        ),
        Fraction(t),
        (f"1 + P_l · W / (4 h C) = {float(limit):.3g}, so t ≤ {t}.",),
    )


@_asks("count/", "Per routed token: 4h bytes out and back against 6hf FLOPs, so f ≥ (2/3) · C / W.")
def ep_ffn(p: dict) -> tuple:
    hw, (w, link) = gpu(p["gpu"]), p["bw"]
    c = _c(p["gpu"])
    f = Fraction(2, 3) * c / (w * 10**9)
    return (
        (
            f"Expert parallelism on {hw.label}s (70 % of {_tf(hw.bf16_flops)}), all-to-alls over {link} ({w} GB/s), "
            "many experts per group. How wide must a SwiGLU expert's FFN (its intermediate size f) be for the "
            "expert matmuls to cover dispatch and combine?"
        ),
        f,
        (f"(2/3) × {_tf(c)} / {w} GB/s = {float(f):,.0f}.",),
    )


@_asks("count/tokens", "A block of c tokens: 4c·d_kv bytes of K and V against 4c²h FLOPs, so c ≥ (C / W) · d_kv / h.")
def cp_tokens(p: dict) -> tuple:
    hw, (w, link) = gpu(p["gpu"]), p["bw"]
    arch = preset(p["model"][0])
    d_kv = arch.num_kv_heads * arch.head_dim
    c = _c(p["gpu"])
    tokens = c / (w * 10**9) * Fraction(d_kv, arch.hidden_size)
    return (
        (
            f"Ring attention (context parallelism) for {p['model'][1]} (h = {arch.hidden_size}, K and V of "
            f"{d_kv} dimensions) on {hw.label}s at 70 % of {_tf(hw.bf16_flops)}, over {link} ({w} GB/s), no causal "
            "mask. How many tokens must each rank hold for a block's attention to cover passing its K and V on?"
        ),
        tokens,
        (f"{_tf(c)} / {w} GB/s × {d_kv} / {arch.hidden_size} = {float(tokens):,.0f} tokens.",),
    )


@_asks("s/ms", "At batch 1 decode is bandwidth-bound: every weight is read once per token.")
def decode_latency(p: dict) -> tuple:
    billions, name = p["model"]
    hw = gpu(p["gpu"])
    w = weight_bytes(billions * 10**9, "bf16")
    t = Fraction(w, hw.hbm_bytes_per_s)
    return (
        (
            f"Decoding with a dense {name} model in bf16 on one {hw.label} ({hw.hbm_bytes_per_s / 1e12:g} TB/s), "
            "batch 1, short context: about how long does each token take, at best? Answer in ms."
        ),
        t,
        (f"{_b(w)} / {hw.hbm_bytes_per_s / 1e12:g} TB/s = {float(t) * 1e3:.3g} ms per token.",),
    )


@_asks("count/sequences", "B · 2N FLOPs against 2N bytes of weights: B ≥ C / (HBM bandwidth).")
def decode_batch(p: dict) -> tuple:
    hw = gpu(p["gpu"])
    b = decode_compute_bound_batch(preset("llama3-8b"), gpu=p["gpu"], efficiency=float(_EFF))
    return (
        (
            f"Decoding a dense bf16 model on {hw.label}s ({_tf(hw.bf16_flops)} dense, 70 % achieved, "
            f"{hw.hbm_bytes_per_s / 1e12:g} TB/s of HBM), KV cache aside: from which batch on is a decode step "
            "compute-bound?"
        ),
        Fraction(b),
        (f"0.7 × {_tf(hw.bf16_flops)} / {hw.hbm_bytes_per_s / 1e12:g} TB/s ≈ {b}.",),
    )


@_asks("s/ms", "Prefill is compute-bound: 2N FLOPs per prompt token at the achieved rate.")
def prefill_ttft(p: dict) -> tuple:
    hw, n = gpu(p["gpu"]), p["prompt"]
    arch = preset("llama3-8b")
    flops = n * serving_flops_per_token(arch, 0)
    t = Fraction(flops) / _c(p["gpu"])
    return (
        (
            f"Prefill of one {n:,}-token prompt for Llama 3 8B ({_n(arch.param_count)} parameters) on one "
            f"{hw.label} at 70 % of {_tf(hw.bf16_flops)}, attention FLOPs aside: how long until the first token? "
            "Answer in ms."
        ),
        t,
        (f"2 × {_n(arch.param_count)} × {n:,} = {flops:.3e} FLOPs; / {_tf(_c(p['gpu']))} = {float(t) * 1e3:.3g} ms.",),
    )


@_asks("count/tokens", "(1 − α^(γ+1)) / (1 − α) (Leviathan et al. 2023, Eq. 1).")
def speculative(p: dict) -> tuple:
    a, g = p["alpha"], p["gamma"]
    tokens = speculative_tokens_per_step(a, g)
    return (
        (
            f"Speculative decoding drafts γ = {g} tokens per step; each is accepted with probability α = {a:g}. "
            "How many tokens does one pass of the target model yield on average?"
        ),
        Fraction(tokens).limit_denominator(10**6),
        (f"(1 − {a:g}^{g + 1}) / (1 − {a:g}) = {tokens:.3f} tokens.",),
    )


@_asks("s/ms", "KV bytes per token = 2 · L · n_kv · d_head · 2 bytes; times the prompt, over the link.")
def kv_transfer(p: dict) -> tuple:
    (w, link), n = p["bw"], p["prompt"]
    arch = preset("llama3-70b")
    t = Fraction(kv_transfer_s(arch, n, w * 10**9)).limit_denominator(10**9)
    per_token = 2 * arch.num_layers * arch.num_kv_heads * arch.head_dim * 2
    return (
        (
            f"Disaggregated serving: Llama 3 70B (80 layers, 8 KV heads of 128, bf16 cache) prefills a {n:,}-token "
            f"prompt on one GPU and decodes on another. How long does moving its KV cache over {link} ({w} GB/s) "
            "take? Answer in ms."
        ),
        t,
        (f"{_b(per_token)} × {n:,} = {_b(per_token * n)}; / {w} GB/s = {float(t) * 1e3:.3g} ms.",),
    )


@_asks("B/GB", "2 + 2 + 4 bytes per parameter, plus the optimizer's fp32 states: two for AdamW, one for Lion or Muon.")
def optimizer_state(p: dict) -> tuple:
    (billions, name), (convention, opt) = p["model"], p["optimizer"]
    st = model_state_bytes(billions * 10**9, convention=convention)
    return (
        (
            f"{name} with {opt}, bf16 weights and gradients and an fp32 master copy, no sharding: how much model "
            "state? Answer in GB."
        ),
        Fraction(st.total),
        (f"{st.total // (billions * 10**9)} B/param × {name} = {_b(st.total)}.",),
    )


@_asks("count/tokens", "About 20 tokens per parameter (Hoffmann et al. 2022, Sec. 3).")
def chinchilla_tokens(p: dict) -> tuple:
    billions, name = p["model"]
    d = CHINCHILLA * billions * 10**9
    question = f"How many training tokens are compute-optimal for {name} parameters (Chinchilla)?"
    return question, d, (f"20 × {name} = {_n(d)} tokens.",)


@_asks("count/parameters", "C = 6 · N · 20N = 120 N², so N = sqrt(C / 120).")
def chinchilla_params(p: dict) -> tuple:
    budget = p["budget"]
    n = Fraction(int((budget / (6 * CHINCHILLA)) ** 0.5))
    return (
        (
            f"A budget of {budget:.0e} FLOPs, spent compute-optimally at 6ND with D = 20N: how many parameters? "
            "Answer as a count (70B, 7e10)."
        ),
        n,
        (
            (
                f"sqrt({budget:.0e} / 120) = {_n(int(n))} parameters, trained on {_n(int(20 * n))} tokens "
                f"({float(flops_6nd(int(n), int(20 * n))):.3g} FLOPs)."
            ),
        ),
    )


PERFORMANCE_CHOICES = {
    "gpu": ("h100-sxm", "b200", "a100-80", "h200"),
    "bw": _BW,
    "prompt": (2048, 4096, 8192, 32768),
}
"""Shared choices of the performance exercises (the first is the default)."""
