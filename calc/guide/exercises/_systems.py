"""Exercises on parallelism and compute: the pipeline bubble, collectives, FLOPs, training days and MFU.

Each solver returns ``(question, answer, unit, display_unit, tolerance, hint, steps)`` computed with the engine
(``calc.parallel``: Narayanan et al. 2021, Sec. 2.2, NCCL's bus bandwidth; ``calc.timing.compute``: Kaplan et
al. 2020, Sec. 2.1; PaLM, Chowdhery et al. 2022, Sec. 4.1).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from calc.guide.exercises._answers import _asks, _b, _pct
from calc.hardware import gpu
from calc.memory.inference import weight_bytes
from calc.parallel.collectives import collective_bytes_sent, collective_time_s
from calc.parallel.pipeline import bubble_fraction
from calc.timing.compute import flops_6nd, training_time, utilization_from_throughput


def _bubble(schedule: str) -> Callable[[dict], tuple]:
    rule = "(p − 1)/m" if schedule == "1f1b" else "(p − 1)/(v·m)"

    @_asks("ratio/%", f"Narayanan et al. (2021) Sec. 2.2: bubble = {rule}.", tolerance=Fraction(1, 100))
    def solve(p: dict) -> tuple:
        pp = p["pp"]
        # Megatron's interleaved schedule needs m to be a multiple of p: draw the rounds of p micro-batches.
        m = p["m"] if "m" in p else pp * p["rounds"]
        v = p.get("v", 1)
        f = bubble_fraction(pp, m, schedule=schedule, v=v)
        extra = f", v={v} virtual stages per GPU" if schedule == "interleaved" else ""
        return (
            (
                f"Pipeline of p={pp} stages, m={m} micro-batches, {schedule} schedule{extra}: what is the bubble, as a "
                f"fraction of the ideal compute time?"
            ),
            f,
            (f"{rule} with p={pp}, m={m}{', v=' + str(v) if schedule == 'interleaved' else ''} = {f} = {_pct(f)}.",),
        )

    return solve


@_asks("gpus/micro-batches", "Solve (p − 1)/m ≤ target for m.", tolerance=Fraction(0))
def _microbatches(p: dict) -> tuple:
    pp, target = p["pp"], p["target"]
    m = 1
    while bubble_fraction(pp, m) > target:
        m += 1
    return (
        (
            f"A 1F1B pipeline of p={pp} stages: what is the smallest number of micro-batches that keeps the bubble at "
            f"or below {_pct(target)}?"
        ),
        Fraction(m),
        (f"m ≥ (p − 1)/target = {pp - 1}/{float(target):g} → m = {m} (bubble {_pct(bubble_fraction(pp, m))}).",),
    )


@_asks("B/GB", "A ring all-reduce is a reduce-scatter plus an all-gather: each GPU sends 2(n − 1)/n × the buffer.")
def _allreduce_bytes(p: dict) -> tuple:
    n, billions = p["n"], p["grad_billions"]
    size = weight_bytes(billions * 10**9, "bf16")
    sent = collective_bytes_sent("all-reduce", size, n)
    return (
        (
            f"Ring all-reduce of {_b(size)} of bf16 gradients over {n} GPUs: how many bytes does each GPU send? "
            f"Answer in GB."
        ),
        Fraction(sent),
        (f"2 × ({n} − 1)/{n} × {_b(size)} = {_b(sent)} per GPU.",),
    )


@_asks("s/ms", "NCCL's convention: time = size × 2(n − 1)/n / bus bandwidth.")
def _allreduce_time(p: dict) -> tuple:
    n, billions, bw = p["n"], p["grad_billions"], p["bus_gbps"]
    size = weight_bytes(billions * 10**9, "bf16")
    t = collective_time_s("all-reduce", size, n, bw * 10**9)
    return (
        (
            f"All-reduce of {_b(size)} over {n} GPUs at a bus bandwidth of {bw} GB/s: how long does it take, with no "
            f"overlap and no latency term? Answer in ms."
        ),
        Fraction(t).limit_denominator(10**12),
        (f"{_b(size)} × 2 × ({n} − 1)/{n} / {bw} GB/s = {t * 1000:.4g} ms.",),
    )


@_asks("count/FLOP", "6 FLOPs per parameter per token: 2 forward, 4 backward (Kaplan et al. 2020, Sec. 2.1).")
def _flops(p: dict) -> tuple:
    (billions, name), t = p["model"], p["tokens"]
    f = flops_6nd(billions * 10**9, t * 10**12)
    question = f"Training {name} on {t}T tokens: how many FLOPs, by the 6ND rule?"
    return question, f, (f"6 × {name} × {t}T = {f:.3e} FLOPs.",)


@_asks("s/days", "time = 6ND / (GPUs × peak × MFU).")
def _days(p: dict) -> tuple:
    billions, name = p["model"]
    tokens, gpus, mfu = p["tokens"] * 10**12, p["gpus"], p["mfu"]
    hw = gpu("h100-sxm")
    t = training_time(billions * 10**9, tokens, gpus, mfu * hw.bf16_flops)
    return (
        (
            f"Training {name} on {p['tokens']}T tokens with {gpus} {hw.label} "
            f"at {_pct(Fraction(mfu).limit_denominator())} "
            f"MFU (bf16 dense peak {hw.bf16_flops / 1e12:g} TFLOP/s): how many days? Answer in days."
        ),
        Fraction(t.seconds).limit_denominator(10**6),
        (
            f"6ND = {t.total_flops:.3e} FLOPs.",
            (
                f"/ ({gpus} × {hw.bf16_flops / 1e12:g} TFLOP/s × {mfu:g}) "
                f"= {t.seconds:.4g} s = {t.seconds / 86400:.4g} days."
            ),
        ),
    )


@_asks("ratio/%", "MFU = tokens/s × 6N / (GPUs × peak) (PaLM, Chowdhery et al. 2022, Sec. 4.1).")
def _mfu(p: dict) -> tuple:
    billions, name = p["model"]
    gpus = p["gpus"]
    hw = gpu("h100-sxm")
    # A plausible throughput: the drawn MFU's tokens/s per GPU, rounded to 100 (the answer is computed from it).
    per_gpu = max(100, round(p["mfu"] * hw.bf16_flops / (6 * billions * 10**9), -2))
    tps = int(per_gpu) * gpus
    u = utilization_from_throughput(tps, 6 * billions * 10**9, gpus, hw.bf16_flops)
    return (
        (
            f"A {name} run on {gpus} {hw.label} processes {tps:,} tokens/s in total. "
            f"What is its MFU against the bf16 "
            f"dense peak ({hw.bf16_flops / 1e12:g} TFLOP/s), counting 6N FLOPs per token?"
        ),
        Fraction(u).limit_denominator(10**9),
        (f"{tps:,} × 6 × {name} / ({gpus} × {hw.bf16_flops / 1e12:g} TFLOP/s) = {_pct(Fraction(u))}.",),
    )
