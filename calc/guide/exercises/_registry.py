"""The registry of exercises, in page order, and the three entry points: draw a case, check an answer, and
``live`` for the browser.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction

from calc.errors import CalcError
from calc.guide.exercises._answers import _GPUS, _MODELS, MAX_SEED, Case, Exercise, _in_unit, _pct, parse_answer
from calc.guide.exercises._memory import (
    _KV_MODELS,
    _SEQS,
    _SHAPES,
    _act,
    _act_cp,
    _act_dp,
    _act_tp,
    _expert_weights,
    _inference_weights,
    _kv_batch,
    _kv_token,
    _oom_13b,
    _state_total,
    _weights_only,
    _zero3_gpus,
    _zero_per_gpu,
)
from calc.guide.exercises._performance import PERFORMANCE_CHOICES as _PC
from calc.guide.exercises._performance import (
    chinchilla_params,
    chinchilla_tokens,
    cp_tokens,
    decode_batch,
    decode_latency,
    ep_ffn,
    fsdp_tokens,
    kv_transfer,
    optimizer_state,
    prefill_ttft,
    ridge_point,
    speculative,
    tp_degree,
)
from calc.guide.exercises._systems import (
    _allreduce_bytes,
    _allreduce_time,
    _bubble,
    _days,
    _flops,
    _mfu,
    _microbatches,
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
    # ---- performance: the roofline, hiding communication, inference, optimizers, compute-optimal sizing
    Exercise("ridge-point", "The ridge point", "roofline", (("gpu", _PC["gpu"]),), ridge_point),
    Exercise(
        "fsdp-hide-tokens", "Tokens that hide FSDP", "roofline", (("gpu", _PC["gpu"]), ("bw", _PC["bw"])), fsdp_tokens
    ),
    Exercise(
        "tp-hide-degree", "TP degree that still hides", "roofline", (("gpu", _PC["gpu"]), ("bw", _PC["bw"])), tp_degree
    ),
    Exercise("ep-hide-ffn", "Expert width that hides EP", "roofline", (("gpu", _PC["gpu"]), ("bw", _PC["bw"])), ep_ffn),
    Exercise(
        "cp-hide-tokens",
        "Tokens per rank that hide ring attention",
        "roofline",
        (
            ("gpu", _PC["gpu"]),
            ("bw", _PC["bw"]),
            ("model", (("llama3-70b", "Llama 3 70B"), ("llama2-7b", "Llama 2 7B (MHA)"), ("llama3-8b", "Llama 3 8B"))),
        ),
        cp_tokens,
    ),
    Exercise(
        "decode-latency",
        "Decode latency at batch 1",
        "inference",
        (("model", _MODELS[:4]), ("gpu", _PC["gpu"])),
        decode_latency,
    ),
    Exercise(
        "decode-compute-batch",
        "Batch where decode turns compute-bound",
        "inference",
        (("gpu", _PC["gpu"]),),
        decode_batch,
    ),
    Exercise(
        "prefill-ttft",
        "Time to first token",
        "inference",
        (("gpu", _PC["gpu"]), ("prompt", _PC["prompt"])),
        prefill_ttft,
    ),
    Exercise(
        "speculative-tokens",
        "Tokens per speculative step",
        "inference",
        (("alpha", (0.8, 0.6, 0.7, 0.9)), ("gamma", (4, 3, 5, 8))),
        speculative,
    ),
    Exercise(
        "kv-transfer",
        "KV transfer of disaggregated serving",
        "inference",
        (("bw", _PC["bw"]), ("prompt", _PC["prompt"])),
        kv_transfer,
    ),
    Exercise(
        "optimizer-state",
        "Model state beyond Adam",
        "optimizers",
        (
            ("model", _MODELS),
            (
                "optimizer",
                (("mixed-sgdm-12", "Lion"), ("mixed-sgdm-12", "Muon"), ("mixed-adam-16", "AdamW")),
            ),
        ),
        optimizer_state,
    ),
    Exercise("chinchilla-tokens", "Compute-optimal tokens", "compute", (("model", _MODELS),), chinchilla_tokens),
    Exercise(
        "chinchilla-params",
        "Compute-optimal size for a budget",
        "compute",
        (("budget", (1e24, 1e23, 5e24, 1e25)),),
        chinchilla_params,
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
        ``correct`` (bool), ``message`` (what to tell the reader, with the typed value in the question's unit)
        and the case's data.

    Raises:
        CalcError: For an unreadable answer, an unknown exercise or a bad seed.

    Examples:
        >>> check("model-state-total", 0, "112 GB")["correct"], check("model-state-total", 0, "0.112 TB")["correct"]
        (True, True)
        >>> check("model-state-total", 0, "0.014 TB")["message"]
        'Not quite: 0.014 TB is 14 GB, not within 2 % of the answer. Try the hint.'
        >>> check("zero3-gpus", 0, "12")["message"]
        'Not quite: 12 is 12 GPUs, not the answer. Try the hint.'
    """
    case = draw(exercise, seed)
    value = parse_answer(answer, case.unit, case.display_unit)
    err = abs(value - case.answer)
    ok = err == 0 if not case.tolerance else err <= case.tolerance * abs(case.answer)
    typed, shown = str(answer).strip(), _in_unit(value, case.unit, case.display_unit)
    reads = f"{shown} is" if typed.replace(" ", "") == shown.replace(" ", "") else f"{typed} is {shown},"
    if ok:
        message = f"Right: {case.answer_text} ({case.tolerance_text})."
    elif case.tolerance:
        message = f"Not quite: {reads} not within {_pct(case.tolerance)} of the answer. Try the hint."
    else:
        message = f"Not quite: {reads} not the answer. Try the hint."
    return {"correct": ok, "message": message, **case.as_dict()}


def live(request: Mapping[str, object]) -> dict[str, object]:
    """The browser's entry point: ``{op: "case"|"check", exercise, seed, answer}`` to plain data, never raising.

    A refusal comes back as ``{"ok": False, "error": {field, code, message, said}}``: ``message`` names the field as
    the engine does (``answer must be …``), ``said`` is the same in the reader's words for the page (``said``).

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
        return {"ok": False, "error": {"field": err.field, "code": err.code, "message": str(err), "said": said(err)}}


def said(err: CalcError) -> str:
    """An error as the page says it: led by the answer box's label, "Your answer", rather than the field's name
    (issue 19: "answer must be …" opened the reader's message in lower case); any other field with a capital.

    Examples:
        >>> said(CalcError("answer", "must not be negative", "-3 d"))
        "Your answer must not be negative (got '-3 d')"
        >>> said(CalcError("seed", "must be a whole number", "x"))
        "Seed must be a whole number (got 'x')"
    """
    message = str(err)
    if err.field == "answer" and message.startswith("answer "):
        return "Your answer" + message.removeprefix("answer")
    return message[:1].upper() + message[1:]
