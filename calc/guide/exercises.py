"""Exercises: interview-style questions whose answers the engine computes, for any drawn set of numbers.

Each [`Exercise`][calc.guide.exercises.Exercise] maps parameters to a [`Case`][calc.guide.exercises.Case]: the
question text, the answer with its unit and tolerance, a hint and a worked solution with the numbers
substituted. Seed 0 is the default case (the first choice of every parameter); any other seed draws each
parameter from its choices with ``random.Random(f"{id}:{seed}")``, so a seed in a link reproduces the
case on any machine. [`check`][calc.guide.exercises.check] reads what the reader typed (``1.1 TB``,
``1120 GB``, ``37.5%``, ``16``) and says whether it is within the tolerance.

Every formula is the engine's own: model state from ``calc.memory.model_state`` (Rajbhandari et al. 2020,
ZeRO, Sec. 3 and Fig. 1), activations from ``calc.memory.activations`` (Korthikanti et al. 2022, Table 2),
the KV cache from ``calc.memory.inference``, the bubble from ``calc.parallel.pipeline`` (Narayanan et al. 2021,
Sec. 2.2), collectives from ``calc.parallel.collectives`` (NCCL's bus-bandwidth convention) and FLOPs from
``calc.timing.compute`` (Kaplan et al. 2020, Eq. 2.1; PaLM Sec. 4.1). What they do not model (allocator
overhead, the CUDA context, fragmentation, overlap) is not in these answers either.

Examples:
    >>> case = draw("zero3-gpus")
    >>> case.answer_text, case.unit
    ('14 GPUs', 'gpus')
    >>> check("zero3-gpus", 0, "14")["correct"]
    True
    >>> check("zero3-gpus", 0, "12 GPUs")["correct"]
    False
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction

from calc.errors import CalcError
from calc.hardware import gpu
from calc.memory.activations import activation_bytes_per_layer, layer_activations
from calc.memory.inference import kv_cache_bytes_per_token, weight_bytes
from calc.memory.model_state import model_state_bytes
from calc.parallel.collectives import collective_bytes_sent, collective_time_s
from calc.parallel.pipeline import bubble_fraction
from calc.timing.compute import flops_6nd, training_time, utilization_from_throughput
from calc.units import BYTE_UNITS, MAX_TEXT_CHARS, format_bytes, format_count, parse_decimal

__all__ = [
    "ANSWER_UNITS",
    "MAX_SEED",
    "Case",
    "Exercise",
    "check",
    "draw",
    "exercises",
    "format_answer",
    "live",
    "parse_answer",
]

MAX_SEED = 10**9
"""The largest seed accepted: a seed is a case number in a link, nothing more."""

ANSWER_UNITS: dict[str, str] = {
    "B": "bytes: type a byte unit (1.1 TB, 1120 GB, 1.04 TiB); a bare number is read in the unit the question names",
    "gpus": "a whole number (16, 16 GPUs)",
    "ratio": "a fraction or a percentage (0.375, 37.5%)",
    "s": "seconds: type a time unit (3.9 ms, 0.2 s, 19 days); a bare number is read in the unit the question names",
    "count": "a count (4.2e22, 42e21, 1.5B)",
}
"""The kinds of answer an exercise asks for, and what the reader may type for each."""

_TIME_UNITS: dict[str, Fraction] = {
    "us": Fraction(1, 10**6),
    "µs": Fraction(1, 10**6),
    "ms": Fraction(1, 1000),
    "s": Fraction(1),
    "min": Fraction(60),
    "h": Fraction(3600),
    "hours": Fraction(3600),
    "day": Fraction(86400),
    "days": Fraction(86400),
}
_COUNT_SUFFIX: dict[str, int] = {"": 1, "k": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}
_ANSWER = re.compile(r"^\s*(?P<num>[-+]?[0-9][0-9_,]*\.?[0-9]*(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9]+)\s*(?P<unit>\S*)\s*$")


@dataclass(frozen=True)
class Case:
    """One drawn case of an exercise: everything a page shows, with the engine's numbers in it.

    Attributes:
        exercise: The exercise's id (also its anchor on the exercises page).
        seed: The case number (0: the default numbers).
        params: The drawn parameters, as readable strings.
        question: The question, with the numbers.
        answer: The exact answer, in ``unit``'s base (bytes, seconds, GPUs, a fraction, a count).
        unit: One of [`ANSWER_UNITS`][calc.guide.exercises.ANSWER_UNITS].
        display_unit: The unit a bare number is read in and the answer is shown in (``GB``, ``ms``, ``%``).
        tolerance: Relative tolerance of the check (0: exact).
        hint: A hint that names the formula, not the number.
        steps: The worked solution, one step a line, with the numbers substituted.
    """

    exercise: str
    seed: int
    params: dict[str, str]
    question: str
    answer: Fraction
    unit: str
    display_unit: str
    tolerance: Fraction
    hint: str
    steps: tuple[str, ...]

    @property
    def answer_text(self) -> str:
        """The answer as the solution prints it."""
        return format_answer(self.answer, self.unit, self.display_unit)

    @property
    def tolerance_text(self) -> str:
        """The tolerance in words."""
        if not self.tolerance:
            return "exactly"
        return f"within {_pct(self.tolerance)}"

    def as_dict(self) -> dict[str, object]:
        """Plain data for the browser (numbers as strings, so nothing is rounded by JavaScript)."""
        return {
            "exercise": self.exercise,
            "seed": self.seed,
            "params": dict(self.params),
            "question": self.question,
            "answer": self.answer_text,
            "answer_value": str(float(self.answer)),
            "unit": self.unit,
            "display_unit": self.display_unit,
            "tolerance": self.tolerance_text,
            "hint": self.hint,
            "steps": list(self.steps),
        }


@dataclass(frozen=True)
class Exercise:
    """An exercise: named parameter choices and a solver from drawn parameters to a [`Case`][calc.guide.exercises.Case].

    Attributes:
        id: Stable id, the anchor on the exercises page.
        title: A short title.
        topic: The topic it practises (memory, ZeRO, activations, parallelism, communication, ...).
        choices: For each parameter, the values it may take; the first is the default.
        solve: Parameters to ``(question, answer, unit, display_unit, tolerance, hint, steps)``.
    """

    id: str
    title: str
    topic: str
    choices: tuple[tuple[str, tuple[object, ...]], ...]
    solve: Callable[[dict[str, object]], tuple]

    def params(self, seed: int) -> dict[str, object]:
        """The parameters of case ``seed``: the defaults for 0, else a reproducible draw."""
        if seed == 0:
            return {name: values[0] for name, values in self.choices}
        rng = random.Random(f"{self.id}:{seed}")
        return {name: rng.choice(values) for name, values in self.choices}


def _pct(x: Fraction) -> str:
    return f"{float(x) * 100:g} %"


def _b(n: int | Fraction) -> str:
    return format_bytes(int(n))


def _n(n: int | float) -> str:
    return format_count(int(n))


def format_answer(value: Fraction, unit: str, display_unit: str) -> str:
    """Format an answer in its display unit.

    Examples:
        >>> format_answer(Fraction(1120 * 10**9), "B", "GB")
        '1120 GB (1.12 TB)'
        >>> format_answer(Fraction(3, 8), "ratio", "%")
        '37.5 %'
        >>> format_answer(Fraction(14), "gpus", "GPUs")
        '14 GPUs'
    """
    if unit == "B":
        shown = f"{float(value / BYTE_UNITS[display_unit]):.4g} {display_unit}"
        other = format_bytes(int(value))
        return shown if other.split()[-1] == display_unit else f"{shown} ({other})"
    if unit == "ratio":
        return f"{float(value) * 100:.4g} %"
    if unit == "s":
        return f"{float(value / _TIME_UNITS[display_unit]):.4g} {display_unit}"
    if unit == "gpus":
        return f"{int(value)} {display_unit}"
    return f"{float(value):.4g}"


def parse_answer(text: object, unit: str, display_unit: str) -> Fraction:
    """Read what the reader typed as an answer of kind ``unit``, exactly.

    Args:
        text: What was typed.
        unit: One of [`ANSWER_UNITS`][calc.guide.exercises.ANSWER_UNITS].
        display_unit: The unit a bare number is in (``GB``, ``ms``, ``%``, ``GPUs``).

    Returns:
        The value in the kind's base unit (bytes, seconds, a fraction, GPUs, a count).

    Raises:
        CalcError: For empty text, a number that cannot be read or a unit of the wrong kind.

    Examples:
        >>> parse_answer("1.1 TB", "B", "GB") == 1_100 * 10**9
        True
        >>> parse_answer("1120", "B", "GB") == 1_120 * 10**9
        True
        >>> parse_answer("37.5%", "ratio", "%"), parse_answer("0.375", "ratio", "%")
        (Fraction(3, 8), Fraction(3, 8))
        >>> parse_answer("3.9 ms", "s", "ms")
        Fraction(39, 10000)
        >>> parse_answer("16 GPUs", "gpus", "GPUs")
        Fraction(16, 1)
        >>> try:
        ...     parse_answer("12 parsecs", "B", "GB")
        ... except CalcError as err:
        ...     print(err.field, err.value)
        answer 12 parsecs
    """
    if unit not in ANSWER_UNITS:
        raise CalcError("unit", f"must be one of {', '.join(ANSWER_UNITS)}", unit, code="unknown-name")
    raw = str(text)
    if len(raw) > MAX_TEXT_CHARS:
        raise CalcError("answer", f"must be at most {MAX_TEXT_CHARS} characters", raw)
    if not raw.strip():
        raise CalcError("answer", f"must be {ANSWER_UNITS[unit]}: type a number", raw)
    match = _ANSWER.match(raw.replace("\u202f", " "))
    wrong = CalcError("answer", f"must be {ANSWER_UNITS[unit]}", raw.strip())
    if not match:
        raise wrong
    number = parse_decimal(match["num"].replace(",", "").replace("_", ""), "answer", "be a number", minimum=0)
    suffix = match["unit"]
    scale: Fraction | int | None
    if unit == "B":
        scale = BYTE_UNITS.get(suffix or display_unit) or BYTE_UNITS.get(suffix.upper().replace("I", "i"))
    elif unit == "s":
        scale = _TIME_UNITS.get(suffix or display_unit)
    elif unit == "ratio":
        scale = Fraction(1, 100) if suffix == "%" else (1 if not suffix else None)
    elif unit == "gpus":
        scale = 1 if suffix.lower() in ("", "gpu", "gpus", display_unit.lower()) else None
    else:
        scale = _COUNT_SUFFIX.get(suffix.removesuffix("FLOPs").removesuffix("FLOP").removesuffix("×").removesuffix("x"))
    if scale is None:
        raise wrong
    return number * scale


# ------------------------------------------------------------------------------------------------
# The exercises. Each solver returns (question, answer, unit, display_unit, tolerance, hint, steps).

_TOL = Fraction(2, 100)
"""The relative tolerance of every non-exact answer: 2 %, room for rounding, not for a wrong formula."""

_MODELS = ((7, "7B"), (13, "13B"), (34, "34B"), (70, "70B"), (175, "175B"), (405, "405B"))
_GPUS = ("h100-sxm", "a100-80", "h200", "b200", "a100-40")


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
        "gpus",
        "GPUs",
        Fraction(0),
        (
            "ZeRO-3 shards all 16 bytes per parameter over the data-parallel ranks: find the smallest dp with "
            "16N/dp ≤ the GPU's memory."
        ),
        (
            f"Model state: 16 B × {name} = {_b(full)}.",
            f"Each {hw.label} holds {_b(hw.memory_bytes)}.",
            f"Smallest dp with {_b(full)} / dp ≤ {_b(hw.memory_bytes)}: dp = {dp} ({_b(per)} per GPU).",
            "Nothing is left for activations, the CUDA context or NCCL buffers: a real run needs more.",
        ),
    )


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
        "B",
        "GB",
        _TOL,
        "Add up bytes per parameter: weights + gradients + master copy + optimizer moments.",
        (
            (
                f"{p['convention']}: weights {st.weights // (billions * 10**9)} + gradients "
                f"{st.gradients // (billions * 10**9)} + master {st.master // (billions * 10**9)} + moments "
                f"{(st.momentum + st.variance) // (billions * 10**9)} = {bpp} B per parameter."
            ),
            f"{bpp} B × {name} = {_b(st.total)}.",
        ),
    )


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
        "count",
        "×",
        _TOL,
        "Weights are 2 bytes per parameter; mixed-precision Adam keeps 16.",
        (
            f"bf16 weights: {_b(weights)}; model state: {_b(total)}.",
            f"{_b(total)} / {_b(weights)} = {total / weights:g}×, whatever the model size.",
        ),
    )


def _zero_per_gpu(stage: int) -> Callable[[dict], tuple]:
    def solve(p: dict) -> tuple:
        billions, name = p["model"]
        dp = p["dp"]
        st = model_state_bytes(billions * 10**9, zero_stage=stage, dp=dp)
        full = model_state_bytes(billions * 10**9)
        sharded = {1: "the optimizer state", 2: "the optimizer state and gradients", 3: "everything"}[stage]
        return (
            (
                f"{name}, mixed-precision Adam, ZeRO-{stage} over dp={dp}: how much model state does each GPU hold? "
                f"Answer in GB."
            ),
            Fraction(st.total),
            "B",
            "GB",
            _TOL,
            f"ZeRO-{stage} shards {sharded} over the dp ranks; the rest stays replicated.",
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
    def solve(p: dict) -> tuple:
        h, a, label = p["shape"]
        s, b = p["seq"], p["micro_batch"]
        value = activation_bytes_per_layer(s, b, h, a, recompute=recompute)
        rule = {
            "none": "sbh(34 + 5as/h) bytes (Korthikanti et al. 2022, Table 2, no parallelism)",
            "selective": "34·sbh bytes: selective recomputation drops the 5as²b attention core",
            "full": "2·sbh bytes: full recomputation keeps only each layer's input",
        }[recompute]
        return (
            (
                f"A {label} GPT layer (h={h}, a={a} heads), sequence {s}, micro-batch {b}, 16-bit activations, "
                f"no tensor parallelism, {'no' if recompute == 'none' else recompute} recomputation, "
                f"no FlashAttention: "
                f"how many bytes of activations does one layer store? Answer in GB."
            ),
            Fraction(value),
            "B",
            "GB",
            _TOL,
            f"Use {rule}.",
            (
                f"s={s}, b={b}, h={h}, a={a}: {rule}.",
                f"= {_b(value)} per layer; multiply by the layers held on a GPU for the total.",
            ),
        )

    return solve


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
        "B",
        "GB",
        _TOL,
        "With sequence parallelism every term is divided by t: sbh·34/t bytes (Korthikanti Table 2).",
        (
            f"TP alone shards the matmul inputs but replicates norms and dropouts: {_b(plain)}.",
            f"Sequence parallelism shards those too: 34·sbh/t = {_b(sp)}.",
        ),
    )


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
        "B",
        "GB",
        _TOL,
        "Activations depend on the micro-batch each GPU runs, which data parallelism does not change.",
        (
            f"At dp={dp}: {_b(one)} per layer.",
            (
                f"At dp={2 * dp}: the same {_b(two)}: each GPU still runs micro-batch 1. More dp means a larger "
                "global batch (or fewer accumulation steps), not smaller activations."
            ),
        ),
    )


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
        "B",
        "GB",
        _TOL,
        "Context parallelism splits the sequence: each GPU stores the activations of s/cp tokens.",
        (
            f"Without CP: {_b(full)} per layer.",
            (
                f"Each of the {cp} ranks keeps s/{cp} = {s // cp} tokens: {_b(split)} per layer (engine, "
                "calc.memory.activations.layer_activations with cp)."
            ),
            "The price: K/V blocks exchanged around the CP ring every layer.",
        ),
    )


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
        "count",
        "×",
        _TOL,
        "Selective keeps 34·sbh bytes per layer, full keeps 2·sbh.",
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
        "B",
        "kB",
        _TOL,
        "2 (K and V) × layers × KV heads × head dim × bytes per element.",
        (f"2 × {layers} × {kv} × {d} × 2 B = {_b(per)} per token.",),
    )


_KV_MODELS = ((80, 8, 128, "Llama-2-70B (GQA)"), (32, 32, 128, "Llama-2-7B (MHA)"), (32, 8, 128, "Llama-3-8B (GQA)"))


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
        "B",
        "GB",
        _TOL,
        "Bytes per token × tokens per sequence × sequences.",
        (
            f"Per token: 2 × {layers} × {kv} × {d} × 2 B = {_b(per)}.",
            f"× {s} tokens × {b} sequences = {_b(total)}.",
        ),
    )


def _inference_weights(p: dict) -> tuple:
    billions, name = p["model"]
    prec = p["precision"]
    w = weight_bytes(billions * 10**9, prec)
    return (
        f"Serving {name} with {prec} weights: how many bytes do the weights take? Answer in GB.",
        Fraction(w),
        "B",
        "GB",
        _TOL,
        "Parameters × bits per weight / 8.",
        (f"{name} × {prec} = {_b(w)} (no KV cache, activations or runtime buffers counted).",),
    )


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
        "B",
        "MB",
        _TOL,
        "Expert parallelism places experts/ep whole experts on each GPU.",
        (
            f"{experts} / {ep} = {local} experts per GPU.",
            f"{local} × {_n(per_expert)} × 2 B = {_b(w)}.",
        ),
    )


def _bubble(schedule: str) -> Callable[[dict], tuple]:
    def solve(p: dict) -> tuple:
        pp = p["pp"]
        # Megatron's interleaved schedule needs m to be a multiple of p: draw the rounds of p micro-batches.
        m = p["m"] if "m" in p else pp * p["rounds"]
        v = p.get("v", 1)
        f = bubble_fraction(pp, m, schedule=schedule, v=v)
        rule = "(p − 1)/m" if schedule == "1f1b" else "(p − 1)/(v·m)"
        extra = f", v={v} virtual stages per GPU" if schedule == "interleaved" else ""
        return (
            (
                f"Pipeline of p={pp} stages, m={m} micro-batches, {schedule} schedule{extra}: what is the bubble, as a "
                f"fraction of the ideal compute time?"
            ),
            Fraction(f),
            "ratio",
            "%",
            Fraction(1, 100),
            f"Narayanan et al. (2021) Sec. 2.2: bubble = {rule}.",
            (f"{rule} with p={pp}, m={m}{', v=' + str(v) if schedule == 'interleaved' else ''} = {f} = {_pct(f)}.",),
        )

    return solve


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
        "gpus",
        "micro-batches",
        Fraction(0),
        "Solve (p − 1)/m ≤ target for m.",
        (f"m ≥ (p − 1)/target = {pp - 1}/{float(target):g} → m = {m} (bubble {_pct(bubble_fraction(pp, m))}).",),
    )


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
        "B",
        "GB",
        _TOL,
        "A ring all-reduce is a reduce-scatter plus an all-gather: each GPU sends 2(n − 1)/n × the buffer.",
        (f"2 × ({n} − 1)/{n} × {_b(size)} = {_b(sent)} per GPU.",),
    )


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
        "s",
        "ms",
        _TOL,
        "NCCL's convention: time = size × 2(n − 1)/n / bus bandwidth.",
        (f"{_b(size)} × 2 × ({n} − 1)/{n} / {bw} GB/s = {t * 1000:.4g} ms.",),
    )


def _flops(p: dict) -> tuple:
    billions, name = p["model"]
    tokens = p["tokens"] * 10**12
    f = flops_6nd(billions * 10**9, tokens)
    return (
        f"Training {name} on {p['tokens']}T tokens: how many FLOPs, by the 6ND rule?",
        Fraction(f),
        "count",
        "FLOP",
        _TOL,
        "6 FLOPs per parameter per token: 2 forward, 4 backward (Kaplan et al. 2020, Eq. 2.1).",
        (f"6 × {name} × {p['tokens']}T = {f:.3e} FLOPs.",),
    )


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
        "s",
        "days",
        _TOL,
        "time = 6ND / (GPUs × peak × MFU).",
        (
            f"6ND = {t.total_flops:.3e} FLOPs.",
            (
                f"/ ({gpus} × {hw.bf16_flops / 1e12:g} TFLOP/s × {mfu:g}) "
                f"= {t.seconds:.4g} s = {t.seconds / 86400:.4g} days."
            ),
        ),
    )


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
        "ratio",
        "%",
        _TOL,
        "MFU = tokens/s × 6N / (GPUs × peak) (PaLM, Chowdhery et al. 2022, Sec. 4.1).",
        (f"{tps:,} × 6 × {name} / ({gpus} × {hw.bf16_flops / 1e12:g} TFLOP/s) = {_pct(Fraction(u))}.",),
    )


_REGISTRY: tuple[Exercise, ...] = (
    Exercise(
        "zero3-gpus",
        "GPUs for model state under ZeRO-3",
        "ZeRO",
        (("model", _MODELS[3:] + _MODELS[:3]), ("gpu", _GPUS)),
        _zero3_gpus,
    ),
    Exercise(
        "model-state-total",
        "Model state of a training run",
        "memory",
        (("model", _MODELS), ("convention", ("mixed-adam-16", "mixed-adam-18", "bf16-adam-12", "mixed-adam8bit-10"))),
        _state_total,
    ),
    Exercise("weights-only-factor", "Counting only the weights", "memory", (("model", _MODELS),), _weights_only),
    Exercise("zero1-per-gpu", "ZeRO-1 per GPU", "ZeRO", (("model", _MODELS), ("dp", (8, 16, 64, 4))), _zero_per_gpu(1)),
    Exercise("zero2-per-gpu", "ZeRO-2 per GPU", "ZeRO", (("model", _MODELS), ("dp", (8, 16, 64, 4))), _zero_per_gpu(2)),
    Exercise(
        "zero3-per-gpu",
        "ZeRO-3 per GPU",
        "ZeRO",
        (("model", _MODELS[3:] + _MODELS[:3]), ("dp", (64, 8, 16, 128))),
        _zero_per_gpu(3),
    ),
    Exercise(
        "activations-none",
        "Activations without recomputation",
        "activations",
        (("shape", _SHAPES), ("seq", _SEQS), ("micro_batch", (1, 2, 4))),
        _act("none"),
    ),
    Exercise(
        "activations-selective",
        "Activations with selective recomputation",
        "activations",
        (("shape", _SHAPES), ("seq", _SEQS), ("micro_batch", (1, 2, 4))),
        _act("selective"),
    ),
    Exercise(
        "activations-full",
        "Activations with full recomputation",
        "activations",
        (("shape", _SHAPES), ("seq", _SEQS), ("micro_batch", (1, 2, 4))),
        _act("full"),
    ),
    Exercise(
        "activations-tp-sp",
        "Activations under TP with sequence parallelism",
        "TP",
        (("shape", _SHAPES), ("seq", _SEQS), ("tp", (4, 2, 8))),
        _act_tp,
    ),
    Exercise(
        "activations-dp",
        "The data-parallel trap",
        "activations",
        (("shape", _SHAPES), ("seq", _SEQS), ("dp", (8, 16, 32, 64))),
        _act_dp,
    ),
    Exercise(
        "activations-cp",
        "Activations under context parallelism",
        "CP",
        (("shape", _SHAPES), ("seq", _SEQS), ("cp", (2, 4, 8))),
        _act_cp,
    ),
    Exercise(
        "oom-13b-8k",
        "The 13B run that OOMs at 8k",
        "activations",
        (("seq", (8192, 16384, 4096)), ("tp", (2, 4, 8))),
        _oom_13b,
    ),
    Exercise("kv-per-token", "KV cache per token", "inference", (("model", _KV_MODELS),), _kv_token),
    Exercise(
        "kv-batch",
        "KV cache of a batch",
        "inference",
        (("model", _KV_MODELS), ("seq", (4096, 8192, 2048, 32768)), ("batch", (32, 8, 16, 64))),
        _kv_batch,
    ),
    Exercise(
        "inference-weights",
        "Weights for serving",
        "inference",
        (("model", _MODELS[3:] + _MODELS[:3]), ("precision", ("bf16", "fp8", "int4"))),
        _inference_weights,
    ),
    Exercise(
        "expert-weights",
        "Expert weights per GPU under EP",
        "EP",
        (("experts", (64, 8, 16, 128, 256)), ("ep", (8, 2, 4)), ("expert_params", (176, 44, 88, 352))),
        _expert_weights,
    ),
    Exercise(
        "bubble-1f1b", "The 1F1B bubble", "PP", (("pp", (4, 2, 8, 16)), ("m", (8, 4, 16, 32, 64))), _bubble("1f1b")
    ),
    Exercise(
        "bubble-interleaved",
        "The interleaved bubble",
        "PP",
        (("pp", (4, 2, 8, 16)), ("rounds", (2, 1, 4, 8)), ("v", (2, 4))),
        _bubble("interleaved"),
    ),
    Exercise(
        "microbatches-for-bubble",
        "Micro-batches for a small bubble",
        "PP",
        (("pp", (8, 4, 16, 32)), ("target", (Fraction(1, 10), Fraction(1, 20), Fraction(1, 4)))),
        _microbatches,
    ),
    Exercise(
        "allreduce-bytes",
        "Bytes a ring all-reduce sends",
        "communication",
        (("n", (8, 16, 64, 4, 256)), ("grad_billions", (7, 1, 13, 70))),
        _allreduce_bytes,
    ),
    Exercise(
        "allreduce-time",
        "Time of an all-reduce",
        "communication",
        (("n", (8, 16, 64, 4)), ("grad_billions", (7, 1, 13)), ("bus_gbps", (400, 50, 100, 200))),
        _allreduce_time,
    ),
    Exercise("flops-6nd", "Training FLOPs", "MFU", (("model", _MODELS), ("tokens", (1, 2, 15))), _flops),
    Exercise(
        "training-days",
        "Training time",
        "MFU",
        (
            ("model", _MODELS[3:] + _MODELS[:3]),
            ("tokens", (2, 1, 15)),
            ("gpus", (2048, 1024, 4096, 16384)),
            ("mfu", (0.4, 0.3, 0.5)),
        ),
        _days,
    ),
    Exercise(
        "mfu-from-throughput",
        "MFU from throughput",
        "MFU",
        (("model", _MODELS), ("gpus", (64, 256, 1024)), ("mfu", (0.4, 0.3, 0.45, 0.55))),
        _mfu,
    ),
)


def exercises() -> dict[str, Exercise]:
    """Every exercise by id, in page order.

    Examples:
        >>> len(exercises()) >= 20
        True
    """
    return {ex.id: ex for ex in _REGISTRY}


def _seed(seed: object) -> int:
    text = str(seed).strip()
    if not text.isdigit() or int(text) > MAX_SEED:
        raise CalcError("seed", f"must be a whole number from 0 to {MAX_SEED}", seed)
    return int(text)


def draw(exercise: str, seed: object = 0) -> Case:
    """Case ``seed`` of ``exercise``, solved by the engine.

    Raises:
        CalcError: For an unknown exercise or a bad seed.

    Examples:
        >>> draw("bubble-1f1b").answer
        Fraction(3, 8)
        >>> draw("bubble-1f1b", 7) == draw("bubble-1f1b", 7)
        True
    """
    ex = exercises().get(str(exercise))
    if ex is None:
        raise CalcError(
            "exercise", "must be one of the ids in calc.guide.exercises.exercises()", exercise, code="unknown-name"
        )
    n = _seed(seed)
    params = ex.params(n)
    question, answer, unit, display, tol, hint, steps = ex.solve(params)
    shown = {k: (v[-1] if isinstance(v, tuple) else str(v)) for k, v in params.items()}
    return Case(ex.id, n, shown, question, Fraction(answer), unit, display, Fraction(tol), hint, tuple(steps))


def check(exercise: str, seed: object, answer: object) -> dict[str, object]:
    """Check a typed answer against case ``seed`` of ``exercise``.

    Returns:
        ``correct`` (bool), ``message`` (what to tell the reader) and the case's data.

    Raises:
        CalcError: For an unreadable answer, an unknown exercise or a bad seed.

    Examples:
        >>> check("model-state-total", 0, "112 GB")["correct"], check("model-state-total", 0, "0.112 TB")["correct"]
        (True, True)
        >>> check("model-state-total", 0, "14 GB")["message"]
        'Not quite: 14 GB is not within 2 % of the answer. Try the hint.'
    """
    case = draw(exercise, seed)
    value = parse_answer(answer, case.unit, case.display_unit)
    err = abs(value - case.answer)
    ok = err == 0 if not case.tolerance else err <= case.tolerance * abs(case.answer)
    typed = str(answer).strip()
    if ok:
        message = f"Right: {case.answer_text} ({case.tolerance_text})."
    else:
        message = f"Not quite: {typed} is not {case.tolerance_text} of the answer. Try the hint."
    return {"correct": ok, "message": message, **case.as_dict()}


def live(request: Mapping[str, object]) -> dict[str, object]:
    """The browser's entry point: ``{op: "case"|"check", exercise, seed, answer}`` to plain data, never raising.

    Examples:
        >>> live({"op": "case", "exercise": "bubble-1f1b", "seed": "0"})["case"]["answer"]
        '37.5 %'
        >>> live({"op": "check", "exercise": "bubble-1f1b", "seed": "0", "answer": "lots"})["error"]["field"]
        'answer'
    """
    try:
        op = request.get("op")
        if op == "case":
            return {"ok": True, "case": draw(request.get("exercise"), request.get("seed", 0)).as_dict()}
        if op == "check":
            return {
                "ok": True,
                "case": check(request.get("exercise"), request.get("seed", 0), request.get("answer", "")),
            }
        raise CalcError("op", "must be case or check", op, code="unknown-name")
    except CalcError as err:
        return {"ok": False, "error": {"field": err.field, "code": err.code, "message": str(err)}}
