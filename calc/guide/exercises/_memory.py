"""Exercises on memory: model state, ZeRO, activations, the KV cache and inference weights.

Each solver returns ``(question, answer, unit, display_unit, tolerance, hint, steps)`` computed with the engine
(``calc.memory``: Rajbhandari et al. 2020, ZeRO, Sec. 3 and Fig. 1; Korthikanti et al. 2022, Table 2).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from calc.guide.exercises._answers import _asks, _b, _n
from calc.hardware import gpu
from calc.memory.activations import activation_bytes_per_layer, layer_activations
from calc.memory.inference import kv_cache_bytes_per_token, weight_bytes
from calc.memory.model_state import model_state_bytes


@_asks(
    "gpus/GPUs",
    "ZeRO-3 shards all 16 bytes per parameter over the data-parallel ranks: find the smallest dp with "
    "16N/dp ≤ the GPU's memory.",
    tolerance=Fraction(0),
)
def _zero3_gpus(p: dict) -> tuple:
    billions, name = p["model"]
    hw = gpu(p["gpu"])
    params = billions * 10**9
    full = model_state_bytes(params).total
    dp = 1
    while model_state_bytes(params, zero_stage=3, dp=dp).total > hw.memory_bytes:
        dp += 1
    per = model_state_bytes(params, zero_stage=3, dp=dp).total
    return (
        (
            f"How many {hw.label} GPUs does a {name} model need just for its model state (mixed-precision Adam, "
            f"16 bytes per parameter) under ZeRO-3? Ignore activations and every other buffer."
        ),
        Fraction(dp),
        (
            f"Model state: 16 B × {name} = {_b(full)}.",
            f"Each {hw.label} holds {_b(hw.memory_bytes)}.",
            f"Smallest dp with {_b(full)} / dp ≤ {_b(hw.memory_bytes)}: dp = {dp} ({_b(per)} per GPU).",
            "Nothing is left for activations, the CUDA context or NCCL buffers: a real run needs more.",
        ),
    )


@_asks("B/GB", "Add up bytes per parameter: weights + gradients + master copy + optimizer moments.")
def _state_total(p: dict) -> tuple:
    billions, name = p["model"]
    st = model_state_bytes(billions * 10**9, convention=p["convention"])
    bpp = st.total // (billions * 10**9)
    return (
        (
            f"Training a {name} model with the {p['convention']} convention on one GPU (no sharding): how many bytes "
            f"of model state (weights, gradients, optimizer state)? Answer in GB."
        ),
        Fraction(st.total),
        (
            (
                f"{p['convention']}: weights {st.weights // (billions * 10**9)} + gradients "
                f"{st.gradients // (billions * 10**9)} + master {st.master // (billions * 10**9)} + moments "
                f"{(st.momentum + st.variance) // (billions * 10**9)} = {bpp} B per parameter."
            ),
            f"{bpp} B × {name} = {_b(st.total)}.",
        ),
    )


@_asks("count/×", "Weights are 2 bytes per parameter; mixed-precision Adam keeps 16.")
def _weights_only(p: dict) -> tuple:
    billions, name = p["model"]
    params = billions * 10**9
    total = model_state_bytes(params).total
    weights = weight_bytes(params, "bf16")
    return (
        (
            f"Someone sizes training of {name} by its bf16 weights alone. By what factor do they underestimate the "
            f"model state of mixed-precision Adam training?"
        ),
        Fraction(total, weights),
        (
            f"bf16 weights: {_b(weights)}; model state: {_b(total)}.",
            f"{_b(total)} / {_b(weights)} = {total / weights:g}×, whatever the model size.",
        ),
    )


def _zero_per_gpu(stage: int) -> Callable[[dict], tuple]:
    sharded = {1: "the optimizer state", 2: "the optimizer state and gradients", 3: "everything"}[stage]
    rest = "nothing of the model state stays replicated" if stage == 3 else "the rest stays replicated"

    @_asks("B/GB", f"ZeRO-{stage} shards {sharded} over the dp ranks; {rest}.")
    def solve(p: dict) -> tuple:
        billions, name = p["model"]
        dp = p["dp"]
        st = model_state_bytes(billions * 10**9, zero_stage=stage, dp=dp)
        full = model_state_bytes(billions * 10**9)
        return (
            (
                f"{name}, mixed-precision Adam, ZeRO-{stage} over dp={dp}: how much model state does each GPU hold? "
                f"Answer in GB."
            ),
            st.total,
            (
                (
                    f"Unsharded: weights {_b(full.weights)}, gradients {_b(full.gradients)}, master + moments "
                    f"{_b(full.master + full.momentum + full.variance)}."
                ),
                (
                    f"ZeRO-{stage} divides {sharded} by {dp}: weights {_b(st.weights)}, gradients "
                    f"{_b(st.gradients)}, master + moments {_b(st.master + st.momentum + st.variance)}."
                ),
                f"Per GPU: {_b(st.total)}.",
            ),
        )

    return solve


_SEQS = (4096, 2048, 8192, 16384)
_SHAPES = ((4096, 32, "7B-like"), (5120, 40, "13B-like"), (8192, 64, "70B-like"))


def _act(recompute: str) -> Callable[[dict], tuple]:
    rule = {
        "none": "sbh(34 + 5as/h) bytes (Korthikanti et al. 2022, Table 2, no parallelism)",
        "selective": "34·sbh bytes: selective recomputation drops the 5as²b attention core",
        "full": "2·sbh bytes: full recomputation keeps only each layer's input",
    }[recompute]

    @_asks("B/GB", f"Use {rule}.")
    def solve(p: dict) -> tuple:
        h, a, label = p["shape"]
        s, b = p["seq"], p["micro_batch"]
        value = activation_bytes_per_layer(s, b, h, a, recompute=recompute)
        return (
            (
                f"A {label} GPT layer (h={h}, a={a} heads), sequence {s}, micro-batch {b}, 16-bit activations, "
                f"no tensor parallelism, {'no' if recompute == 'none' else recompute} recomputation, "
                f"no FlashAttention: "
                f"how many bytes of activations does one layer store? Answer in GB."
            ),
            value,
            (
                f"s={s}, b={b}, h={h}, a={a}: {rule}.",
                f"= {_b(value)} per layer; multiply by the layers held on a GPU for the total.",
            ),
        )

    return solve


@_asks("B/GB", "With sequence parallelism every term is divided by t: sbh·34/t bytes (Korthikanti Table 2).")
def _act_tp(p: dict) -> tuple:
    h, a, label = p["shape"]
    s, t = p["seq"], p["tp"]
    plain = activation_bytes_per_layer(s, 1, h, a, tp=t, recompute="selective")
    sp = activation_bytes_per_layer(s, 1, h, a, tp=t, sequence_parallel=True, recompute="selective")
    return (
        (
            f"A {label} layer (h={h}, a={a}), sequence {s}, micro-batch 1, selective recomputation, tensor parallel "
            f"tp={t} with sequence parallelism: activation bytes per layer per GPU? Answer in GB."
        ),
        Fraction(sp),
        (
            f"TP alone shards the matmul inputs but replicates norms and dropouts: {_b(plain)}.",
            f"Sequence parallelism shards those too: 34·sbh/t = {_b(sp)}.",
        ),
    )


@_asks("B/GB", "Activations depend on the micro-batch each GPU runs, which data parallelism does not change.")
def _act_dp(p: dict) -> tuple:
    h, a, label = p["shape"]
    s, dp = p["seq"], p["dp"]
    one = activation_bytes_per_layer(s, 1, h, a, recompute="selective")
    two = activation_bytes_per_layer(s, 1, h, a, recompute="selective")  # dp is not an input: that is the point
    return (
        (
            f"A {label} layer, sequence {s}, micro-batch 1, selective recomputation. You double data parallelism from "
            f"dp={dp} to dp={2 * dp} at the same micro-batch. "
            f"What are the activations per layer per GPU now? Answer in GB."
        ),
        Fraction(two),
        (
            f"At dp={dp}: {_b(one)} per layer.",
            (
                f"At dp={2 * dp}: the same {_b(two)}: each GPU still runs micro-batch 1. More dp means a larger "
                "global batch (or fewer accumulation steps), not smaller activations."
            ),
        ),
    )


@_asks("B/GB", "Context parallelism splits the sequence: each GPU stores the activations of s/cp tokens.")
def _act_cp(p: dict) -> tuple:
    h, a, label = p["shape"]
    s, cp = p["seq"] * 4, p["cp"]
    full = layer_activations(s, 1, h, a, recompute="selective").total
    split = layer_activations(s, 1, h, a, cp=cp, recompute="selective").total
    return (
        (
            f"A {label} layer, sequence {s}, micro-batch 1, selective recomputation, context parallel cp={cp}: "
            f"activation "
            f"bytes per layer per GPU? Answer in GB."
        ),
        Fraction(split),
        (
            f"Without CP: {_b(full)} per layer.",
            (
                f"Each of the {cp} ranks keeps s/{cp} = {s // cp} tokens: {_b(split)} per layer (engine, "
                "calc.memory.activations.layer_activations with cp)."
            ),
            "The price: K/V blocks exchanged around the CP ring every layer.",
        ),
    )


@_asks("count/×", "Selective keeps 34·sbh bytes per layer, full keeps 2·sbh.")
def _oom_13b(p: dict) -> tuple:
    s = p["seq"]
    h, a = 5120, 40
    sel = activation_bytes_per_layer(s, 1, h, a, recompute="selective")
    full = activation_bytes_per_layer(s, 1, h, a, recompute="full")
    tp = activation_bytes_per_layer(s, 1, h, a, tp=p["tp"], sequence_parallel=True, recompute="selective")
    return (
        (
            f"Your 13B run (h={h}, a={a}, 40 layers) OOMs at sequence {s} with selective recomputation "
            f"and micro-batch 1. "
            f"Three fixes: full recomputation, tp={p['tp']} with sequence parallelism, or context parallelism. By what "
            f"factor does full recomputation cut activations per layer?"
        ),
        Fraction(sel, full),
        (
            (
                f"Selective: {_b(sel)} per layer; full: {_b(full)}: {sel / full:g}× less, paid with one extra "
                "forward pass (about a third more FLOPs)."
            ),
            (
                f"tp={p['tp']} with sequence parallelism: {_b(tp)} per layer, paid with TP collectives on the critical "
                "path (keep TP inside a node)."
            ),
            "Context parallelism divides by cp, paid with a K/V ring exchange per layer.",
        ),
    )


@_asks("B/kB", "2 (K and V) × layers × KV heads × head dim × bytes per element.")
def _kv_token(p: dict) -> tuple:
    layers, kv, d, label = p["model"]
    per = kv_cache_bytes_per_token(layers, kv, d, 2)
    return (
        (
            f"{label}: {layers} layers, {kv} KV heads of dimension {d}, bf16 cache. "
            f"How many bytes of KV cache per token? "
            f"Answer in kB."
        ),
        Fraction(per),
        (f"2 × {layers} × {kv} × {d} × 2 B = {_b(per)} per token.",),
    )


_KV_MODELS = ((80, 8, 128, "Llama-2-70B (GQA)"), (32, 32, 128, "Llama-2-7B (MHA)"), (32, 8, 128, "Llama-3-8B (GQA)"))


@_asks("B/GB", "Bytes per token × tokens per sequence × sequences.")
def _kv_batch(p: dict) -> tuple:
    layers, kv, d, label = p["model"]
    s, b = p["seq"], p["batch"]
    per = kv_cache_bytes_per_token(layers, kv, d, 2)
    total = per * s * b
    return (
        (
            f"Serving {label} ({layers} layers, {kv} KV heads × {d}, bf16 cache): {b} sequences of {s} tokens each. "
            f"How much KV cache? Answer in GB."
        ),
        Fraction(total),
        (
            f"Per token: 2 × {layers} × {kv} × {d} × 2 B = {_b(per)}.",
            f"× {s} tokens × {b} sequences = {_b(total)}.",
        ),
    )


@_asks("B/GB", "Parameters × bits per weight / 8.")
def _inference_weights(p: dict) -> tuple:
    (billions, name), prec = p["model"], p["precision"]
    w = weight_bytes(billions * 10**9, prec)
    steps = (f"{name} × {prec} = {_b(w)} (no KV cache, activations or runtime buffers counted).",)
    return f"Serving {name} with {prec} weights: how many bytes do the weights take? Answer in GB.", w, steps


@_asks("B/MB", "Expert parallelism places experts/ep whole experts on each GPU.")
def _expert_weights(p: dict) -> tuple:
    experts, ep = p["experts"], p["ep"]
    per_expert = p["expert_params"] * 10**6
    local = experts // ep
    w = weight_bytes(local * per_expert, "bf16")
    return (
        (
            f"An MoE layer has {experts} experts of {_n(per_expert)} parameters each, expert parallel over ep={ep}. "
            f"How many bytes of bf16 expert weights does each GPU hold for this layer? Answer in MB."
        ),
        Fraction(w),
        (
            f"{experts} / {ep} = {local} experts per GPU.",
            f"{local} × {_n(per_expert)} × 2 B = {_b(w)}.",
        ),
    )
