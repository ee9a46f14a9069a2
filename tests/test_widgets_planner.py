"""The planner calculator's page lists every layout the search set aside, grouped by reason, with counts."""

from __future__ import annotations

import re
import sys
from html import unescape

import pytest

from _helpers import run_captured
from calc.widgets import calculators, render
from calc.widgets.planner import plan_result


def _outputs(fragment: str, prefix: str) -> dict[str, str]:
    found = re.findall(rf'data-output="({prefix}\d+)">([^<]*)<', fragment)
    return {name: unescape(text) for name, text in found}


def test_the_planner_lists_its_rejected_layouts_by_reason_with_counts() -> None:
    fields = {**calculators()["plan"].defaults, "preset": "llama3.1-405b", "gpus": "16384"}
    _, result = plan_result(fields)
    groups = result["rejected_by_reason"]
    assert len(groups) >= 2 and all(g["count"] > 0 for g in groups)
    fragment = str(render("plan", fields)["html"])
    reasons, counts = _outputs(fragment, "rejected-reason-"), _outputs(fragment, "rejected-")
    shown = [(reasons[f"rejected-reason-{i}"], counts[f"rejected-{i}"]) for i in range(1, len(groups) + 1)]
    want = sorted(groups, key=lambda g: -g["count"])  # most first
    assert shown == [(g["reason"], f"{g['count']:,}") for g in want]
    assert f'data-output="rejected-reason-{len(groups) + 1}"' not in fragment
    assert "Layouts set aside, by reason" in fragment


@pytest.mark.parametrize(
    ("inputs", "why"),
    [
        # Issue 19: "GPUs admit no layout for this model: does not fit even at ZeRO-3 ... (10) (got 8)".
        ({"preset": "llama3.1-405b", "gpus": "8"}, "model states alone, sharded over all 8 GPUs (ZeRO-3), take"),
        ({"preset": "llama3.1-405b", "gpus": "96"}, "none fits in memory; the nearest: stage"),
        ({"preset": "llama3-70b", "gpus": "4", "tp": "4"}, "of this model with the pinned settings: its model"),
        ({"preset": "llama3-8b", "gpus": "1"}, "its model states alone, on its one GPU, take"),
    ],
)
def test_too_few_gpus_say_why_in_words_and_the_fewest_that_hold_a_layout(inputs: dict, why: str) -> None:
    fields = {**calculators()["plan"].defaults, **inputs}
    err = render("plan", fields)["error"]
    msg = err["message"]
    assert err["field"] == "gpus" and why in msg, msg
    assert "(got " not in msg and not re.search(r"\(\d[\d,]*\)", msg), msg  # no unexplained count
    fix = re.search(r"; set GPUs to ([\d,]+)( \(\d+ nodes of 8\))?, the fewest", msg)
    assert fix, msg
    fewest = int(fix[1].replace(",", ""))
    assert "error" not in render("plan", {**fields, "gpus": str(fewest)})  # the suggestion really plans
    below = fewest - 8 if fix[2] else fewest - 1  # and it is the fewest: a node (or a GPU) less does not
    if below > int(inputs["gpus"]):
        assert render("plan", {**fields, "gpus": str(below)})["error"]["field"] == "gpus"


@pytest.mark.skipif(sys.platform == "emscripten", reason="runs python -m calc in a subprocess: host only")
def test_the_command_line_says_the_fewest_gpus_too() -> None:
    """The command line says what the page says (it reads the same form): 405B's fewest whole H100 nodes."""
    proc = run_captured([sys.executable, "-m", "calc", "plan", "llama3.1-405b", "gpus=8"], timeout=120)
    page = render("plan", {**calculators()["plan"].defaults, "preset": "llama3.1-405b", "gpus": "8"})["error"]
    fix = re.search(r"set GPUs to [\d,]+ \(\d+ nodes of 8\), the fewest whole nodes", page["message"])
    assert fix and proc.returncode != 0 and fix[0] in proc.stderr, (page["message"], proc.stderr)


def test_the_cp_hint_states_the_searched_cp_limits() -> None:
    """The form says which CP the planner searches (it said "from 32K tokens" after CP 2 at 8K joined the search)."""
    from calc.timing.plan_space import CP_LIMITS
    from calc.widgets import calculators

    hint = next(f.help for f in calculators()["plan"].fields if f.name == "cp")
    assert hint.count("up to ") == len(CP_LIMITS)
    for tokens, cp in CP_LIMITS:
        assert f"up to {cp} from {tokens // 1024}K" in hint, hint


@pytest.mark.parametrize(
    ("field", "value", "kwarg"),
    [
        ("tp_overlap", "0.5", "tp_overlap=0.5"),
        ("tp_comm_overlap", "1", "tp_comm_overlap=True"),
        ("overlap_param_gather", "1", "overlap_param_gather=True"),
        ("attention_efficiency", "0.3", "attention_efficiency=0.3"),
        ("straggler_per_doubling", "0", "straggler_per_doubling=0.0"),
        ("p2p_overlap", "0", "p2p_overlap=False"),
    ],
)
def test_the_step_time_knobs_are_on_the_form(field: str, value: str, kwarg: str) -> None:
    """Issue 21: every knob visible and overridable on the page too (folded under the hardware group's "More
    options"): each moves the best layout's step time, and the copied Python passes it to plan()."""
    calc = calculators()["plan"]
    assert next(f for f in calc.fields if f.name == field).folded
    defaults = dict(calc.defaults)
    step = re.compile(r'data-output="step_time"[^>]*>([^<]*)<')
    base, got = render("plan", defaults), render("plan", {**defaults, field: value})
    assert got["ok"], got
    assert step.search(got["html"])[1] != step.search(base["html"])[1]
    assert kwarg in calc.python({**defaults, field: value})
    assert field not in calc.python(defaults)  # a default is left out of the copied call


def test_the_fp8_cast_passes_are_on_the_form() -> None:
    """The FP8 casts' passes (``FP8_MEMORY_PASSES``) are a folded knob: they move an FP8 plan, the copied Python
    passes them, and a bad value names the field."""
    calc = calculators()["plan"]
    assert next(f for f in calc.fields if f.name == "fp8_memory_passes").folded
    fp8 = {**calc.defaults, "dtype": "fp8"}
    step = re.compile(r'data-output="step_time"[^>]*>([^<]*)<')
    base, got = render("plan", fp8), render("plan", {**fp8, "fp8_memory_passes": "0"})
    assert got["ok"], got
    assert step.search(got["html"])[1] != step.search(base["html"])[1]
    assert "fp8_memory_passes=0.0" in calc.python({**fp8, "fp8_memory_passes": "0"})
    assert "fp8_memory_passes" not in calc.python(fp8)
    err = render("plan", {**fp8, "fp8_memory_passes": "-3"})["error"]
    assert err["field"] == "fp8_memory_passes" and "from 0 to 1000" in err["message"], err


def test_a_pod_size_with_oversubscription_slows_a_plan_that_spans_pods() -> None:
    """Llama 3's fabric (Dubey et al. 2024 Sec. 3.3.1: 3,072-GPU pods, 1:7 above them) on the form: the pod size
    alone changes nothing (a non-blocking spine); with 1:7 above it the best layout's step is longer, as
    ``plan`` says for the same inputs, and the copied Python carries both."""
    from calc.timing.planner import plan

    calc = calculators()["plan"]
    wide = {**dict(calc.defaults), "gpus": "8192"}
    fabric = {"pod_gpus": "3072", "oversubscription": "7"}
    base = render("plan", wide)
    pods = render("plan", {**wide, "pod_gpus": "3072"})
    blocked = render("plan", {**wide, **fabric})
    assert base["ok"] and pods["ok"] and blocked["ok"], blocked
    answer = {k: r["html"].split('class="lc-code')[0] for k, r in (("base", base), ("pods", pods), ("7", blocked))}
    assert answer["pods"] == answer["base"] != answer["7"]  # the copied code aside
    assert "1:7 above pods of 3,072 GPUs" in answer["7"]  # said in the assumptions
    run = {"gpus": 8192, "seq_len": 8192, "global_batch": 1024, "safety_margin": 0.1, "matmul_efficiency": 0.68}
    slow = plan("llama3-70b", **run, pod_gpus=3072, oversubscription=7)["best_step_time_s"]
    assert slow > plan("llama3-70b", **run)["best_step_time_s"]
    assert re.search(r"pod_gpus=3072,\s+oversubscription=7\.0", calc.python({**wide, **fabric}))


def test_the_forms_knob_defaults_are_the_engines() -> None:
    """The form types plan's defaults (their modules pull in the step-time model, which the form does not import)."""
    from calc.timing.efficiency import FP8_MEMORY_PASSES, MAX_PASSES, STRAGGLER_PER_DOUBLING
    from calc.timing.overlap import TP_OVERLAP
    from calc.widgets._plan_knobs import FP8_PASSES_DEFAULT, MAX_FP8_PASSES, STRAGGLER_DEFAULT, TP_OVERLAP_DEFAULT

    assert (float(TP_OVERLAP_DEFAULT), float(STRAGGLER_DEFAULT)) == (TP_OVERLAP, STRAGGLER_PER_DOUBLING)
    assert float(FP8_PASSES_DEFAULT) == FP8_MEMORY_PASSES
    assert MAX_FP8_PASSES == MAX_PASSES


def test_the_forms_precisions_and_efficiencies_are_the_planners() -> None:
    """The form's matmul precisions are the planner's, and its help names each GPU generation's default efficiency
    (``calc.timing.efficiency``), as the engine has them."""
    from calc.timing.efficiency import MATMUL_EFFICIENCY_BY_GPU
    from calc.timing.plan_context import PLAN_DTYPES
    from calc.widgets._plan_knobs import DTYPES, EFFICIENCY_BY_GENERATION

    assert tuple(k for k, _ in DTYPES) == PLAN_DTYPES
    said = dict(EFFICIENCY_BY_GENERATION)
    assert float(said.pop("A100")) == MATMUL_EFFICIENCY_BY_GPU["a100"]
    later = {v for k, v in MATMUL_EFFICIENCY_BY_GPU.items() if k != "a100"}
    assert {float(v) for v in said.values()} == later


def test_a_blank_matmul_efficiency_is_the_gpus_own_and_fp8_reaches_the_planner() -> None:
    """Blank, the page plans at the GPU generation's efficiency, as ``plan`` does (A100 0.68, H100 0.6); FP8 times
    the linear layers at the FP8 peak and adds the cached weight copies; the copied Python carries it."""
    from calc.timing.planner import plan

    calc = calculators()["plan"]
    run = {"gpus": 1024, "seq_len": 8192, "global_batch": 1024}
    for gpu in ("a100-80", "h100-sxm"):
        _, shown = plan_result({**calc.defaults, "gpu": gpu})
        assert shown["layouts"] == plan("llama3-70b", gpu=gpu, **run)["layouts"]
    _, fp8 = plan_result({**calc.defaults, "dtype": "fp8"})
    _, bf16 = plan_result(dict(calc.defaults))
    assert fp8["best_step_time_s"] < bf16["best_step_time_s"]
    assert fp8["layouts"] == plan("llama3-70b", dtype="fp8", **run)["layouts"]
    assert "FP8 in the linear layers" in render("plan", {**calc.defaults, "dtype": "fp8"})["html"]
    assert 'dtype="fp8"' in calc.python({**calc.defaults, "dtype": "fp8"})
    refused = render("plan", {**calc.defaults, "dtype": "fp8", "gpu": "a100-80"})["error"]
    assert refused["field"] == "dtype" and "no FP8 tensor cores" in refused["said"]


def test_the_forms_blanks_and_margin_are_plans_defaults() -> None:
    """Blank GPUs per node is the GPU's standard server and the memory kept free is plan()'s margin, so the page,
    the CLI (which reads the form) and plan() answer the same inputs alike (GB200: 4 per node)."""
    from calc.timing.planner import SAFETY_MARGIN, plan
    from calc.widgets._plan_knobs import SAFETY_MARGIN_DEFAULT

    assert float(SAFETY_MARGIN_DEFAULT) == SAFETY_MARGIN
    calc = calculators()["plan"]
    assert calc.defaults["gpus_per_node"] == "" and calc.defaults["safety_margin"] == SAFETY_MARGIN_DEFAULT
    for gpu in ("h100-sxm", "gb200"):
        _, shown = plan_result({**calc.defaults, "gpu": gpu, "gpus": "512", "global_batch": "512"})
        assert shown["layouts"] == plan("llama3-70b", gpu=gpu, gpus=512, seq_len=8192, global_batch=512)["layouts"]
