"""calc.guide.exercises: every answer equals a direct engine call, every draw is solvable, typed units are read."""

from __future__ import annotations

import itertools
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.guide.exercises import ANSWER_UNITS, check, draw, exercises, live, parse_answer
from calc.hardware import gpu
from calc.memory.activations import activation_bytes_per_layer
from calc.memory.inference import kv_cache_bytes_per_token, weight_bytes
from calc.memory.model_state import model_state_bytes
from calc.models.presets import preset
from calc.parallel.collectives import collective_bytes_sent
from calc.parallel.pipeline import bubble_fraction
from calc.timing.serving import decode_compute_bound_batch, speculative_tokens_per_step

# The default case of each exercise against the engine called directly, so the page cannot drift from it.
DIRECT = [
    ("zero3-gpus", 14),  # 70B x 16 B = 1.12 TB over 80 GB H100s: the smallest dp is 14
    ("model-state-total", model_state_bytes("7B").total),
    ("weights-only-factor", Fraction(16, 2)),  # the brief's "roughly 8x"
    ("zero1-per-gpu", model_state_bytes("7B", zero_stage=1, dp=8).total),
    ("zero2-per-gpu", model_state_bytes("7B", zero_stage=2, dp=8).total),
    ("zero3-per-gpu", model_state_bytes("70B", zero_stage=3, dp=64).total),
    ("activations-none", activation_bytes_per_layer(4096, 1, 4096, 32)),
    ("activations-selective", activation_bytes_per_layer(4096, 1, 4096, 32, recompute="selective")),
    ("activations-full", activation_bytes_per_layer(4096, 1, 4096, 32, recompute="full")),
    (
        "activations-tp-sp",
        activation_bytes_per_layer(4096, 1, 4096, 32, tp=4, sequence_parallel=True, recompute="selective"),
    ),
    ("activations-dp", activation_bytes_per_layer(4096, 1, 4096, 32, recompute="selective")),  # dp changes nothing
    ("kv-per-token", kv_cache_bytes_per_token(80, 8, 128, 2)),
    ("kv-batch", kv_cache_bytes_per_token(80, 8, 128, 2) * 4096 * 32),
    ("bubble-1f1b", bubble_fraction(4, 8)),
    ("bubble-interleaved", bubble_fraction(4, 8, schedule="interleaved", v=2)),
    ("allreduce-bytes", collective_bytes_sent("all-reduce", 14 * 10**9, 8)),
    ("oom-13b-8k", Fraction(34, 2)),  # selective keeps 34sbh, full 2sbh
    # the performance pages (roofline, inference performance, optimizers, compute-optimal sizing)
    ("ridge-point", Fraction(gpu("h100-sxm").bf16_flops, gpu("h100-sxm").hbm_bytes_per_s)),
    ("fsdp-hide-tokens", Fraction(gpu("h100-sxm").bf16_flops * 7, 10 * 450 * 10**9)),  # C / W on NVLink 4
    ("decode-latency", Fraction(weight_bytes(7 * 10**9), gpu("h100-sxm").hbm_bytes_per_s)),
    ("decode-compute-batch", decode_compute_bound_batch(preset("llama3-8b"), efficiency=0.7)),
    ("speculative-tokens", Fraction(speculative_tokens_per_step(0.8, 4)).limit_denominator(10**6)),
    ("optimizer-state", model_state_bytes("7B", convention="mixed-sgdm-12").total),  # Lion: one fp32 moment
    ("chinchilla-tokens", 20 * 7 * 10**9),
    ("chinchilla-params", int((1e24 / 120) ** 0.5)),
]

# The performance exercises added for issue 18 (at least ten across the new pages).
NEW_PERFORMANCE = {
    "ridge-point", "fsdp-hide-tokens", "tp-hide-degree", "ep-hide-ffn", "cp-hide-tokens", "decode-latency",
    "decode-compute-batch", "prefill-ttft", "speculative-tokens", "kv-transfer", "optimizer-state",
    "chinchilla-tokens", "chinchilla-params",
}  # fmt: skip


def test_at_least_ten_new_performance_exercises() -> None:
    assert len(NEW_PERFORMANCE) >= 10 and NEW_PERFORMANCE <= set(exercises())


@pytest.mark.parametrize(("exercise", "expected"), DIRECT)
def test_default_answer_is_the_engine(exercise: str, expected) -> None:
    assert draw(exercise).answer == expected


def test_at_least_twenty_exercises_covering_every_topic() -> None:
    found = exercises()
    assert len(found) >= 20
    topics = {ex.topic for ex in found.values()}
    assert {"memory", "ZeRO", "activations", "TP", "PP", "CP", "EP", "communication", "inference", "MFU"} <= topics


@pytest.mark.parametrize("exercise", list(exercises()))
def test_every_parameter_draw_is_solvable(exercise: str) -> None:
    ex = exercises()[exercise]
    names = [name for name, _ in ex.choices]
    for values in itertools.product(*(vals for _, vals in ex.choices)):
        q, answer, unit, _display, tol, hint, steps = ex.solve(dict(zip(names, values, strict=True)))
        assert unit in ANSWER_UNITS and q and hint and steps
        assert Fraction(answer) > 0
        assert 0 <= Fraction(tol) <= Fraction(1, 20)


@pytest.mark.parametrize("exercise", list(exercises()))
def test_the_shown_answer_is_accepted(exercise: str) -> None:
    """What the worked solution prints, typed back, is right; a tenth of it is wrong."""
    case = draw(exercise)
    shown = case.answer_text.split(" (")[0].replace(" %", "%").replace("×", "").strip()
    assert check(exercise, 0, shown)["correct"], shown
    tenth = float(case.answer) / 10
    suffix = {"B": " B", "s": " s"}.get(case.unit, "")
    wrong = f"{tenth:g}{suffix}"
    assert not check(exercise, 0, wrong)["correct"], wrong


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(list(exercises())), st.integers(min_value=0, max_value=10**9))
def test_any_seed_draws_the_same_case_twice(exercise: str, seed: int) -> None:
    assert draw(exercise, seed) == draw(exercise, seed)
    assert draw(exercise, str(seed)).answer == draw(exercise, seed).answer


@pytest.mark.parametrize(
    ("text", "unit", "display", "expected"),
    [
        ("1.1 TB", "B", "GB", 1_100 * 10**9),
        ("1120 GB", "B", "GB", 1_120 * 10**9),
        ("1120", "B", "GB", 1_120 * 10**9),  # a bare number is in the question's unit
        ("1 GiB", "B", "GB", 2**30),
        ("1,120 GB", "B", "GB", 1_120 * 10**9),  # thousands separators
        ("16", "gpus", "GPUs", 16),
        ("16 GPUs", "gpus", "GPUs", 16),
        ("37.5%", "ratio", "%", Fraction(3, 8)),
        ("0.375", "ratio", "%", Fraction(3, 800)),  # a bare number is in the displayed unit: 0.375 %
        ("3.9 ms", "s", "ms", Fraction(39, 10000)),
        ("12 days", "s", "days", 12 * 86400),
        ("4.2e22", "count", "FLOP", 42 * 10**21),
    ],
)
def test_parse_answer(text: str, unit: str, display: str, expected) -> None:
    assert parse_answer(text, unit, display) == expected


@pytest.mark.parametrize(
    ("text", "unit"),
    [
        ("", "B"),
        ("   ", "gpus"),
        ("lots", "B"),
        ("12 parsecs", "B"),
        ("5 GB", "gpus"),  # bytes where GPUs are asked
        ("3 ms", "B"),
        ("-1", "B"),
        ("1e999", "count"),
        ("9" * 100, "count"),
    ],
)
def test_bad_answers_are_a_clear_calc_error(text: str, unit: str) -> None:
    with pytest.raises(CalcError) as err:
        parse_answer(text, unit, {"B": "GB", "gpus": "GPUs", "count": "FLOP"}[unit])
    assert err.value.field == "answer"


@pytest.mark.parametrize(
    "request_",
    [
        {"op": "check", "exercise": "zero3-gpus", "seed": "0", "answer": "many"},
        {"op": "check", "exercise": "nope", "seed": "0", "answer": "1"},
        {"op": "case", "exercise": "zero3-gpus", "seed": "-3"},
        {"op": "case", "exercise": "zero3-gpus", "seed": "1e9999"},
        {"op": "explode"},
    ],
)
def test_live_never_raises(request_: dict) -> None:
    reply = live(request_)
    assert reply["ok"] is False and reply["error"]["message"]


def test_live_case_and_check() -> None:
    case = live({"op": "case", "exercise": "bubble-1f1b", "seed": "12"})["case"]
    assert case["seed"] == 12 and case["question"] and case["steps"]
    reply = live({"op": "check", "exercise": "bubble-1f1b", "seed": "12", "answer": case["answer"].replace(" %", "%")})
    assert reply["ok"] and reply["case"]["correct"]


def test_the_hook_prerenders_every_exercise_and_refuses_unknown_ones() -> None:
    import sys
    from pathlib import Path
    from types import SimpleNamespace

    PluginError = pytest.importorskip("mkdocs.exceptions", reason="the build hook runs on the host only").PluginError

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hooks"))
    import lc_exercises

    page = SimpleNamespace(file=SimpleNamespace(src_uri="elsewhere.md"))
    out = lc_exercises.on_page_markdown("# T { #t }\n\n[[exercise zero3-gpus]]\n", page, None, None)
    html_ = lc_exercises.on_page_content(f"<p>{out.split()[-1]}</p>", page, None, None)
    assert 'data-exercise="zero3-gpus"' in html_ and 'data-state="prerendered"' in html_
    assert draw("zero3-gpus").answer_text in html_ and "<script" not in html_ and "style=" not in html_
    with pytest.raises(PluginError, match="exercise"):
        lc_exercises.on_page_markdown("[[exercise nope]]\n", page, None, None)
    with pytest.raises(PluginError, match="missing"):
        lc_exercises.on_page_markdown(
            "[[exercise zero3-gpus]]\n", SimpleNamespace(file=SimpleNamespace(src_uri="exercises.md")), None, None
        )
