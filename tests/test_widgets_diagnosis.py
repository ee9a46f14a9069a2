"""Issue 19's diagnosis in the training-memory calculator: a "Does not fit" names its biggest part with the engine's
bytes and offers the cheapest changes that fit, each a link that carries the reader's inputs; every offered link
fits, by the engine, in the calculator it opens. The search predicts each change's peak from the parts of the
reader's peak and asks the engine only to confirm (at most ``CALLS`` calls), and its module loads only when a
layout does not fit."""

from __future__ import annotations

import html
import json
import re
import shlex
import sys

import pytest

from _helpers import ROOT, run_captured
from calc.memory.layout import Layout
from calc.memory.overheads import PeakMemory, peak_memory
from calc.models.presets import preset
from calc.widgets import calculators, render
from calc.widgets._diagnosis import TRAINING_MEMORY
from calc.widgets._html import byte_formatter
from calc.widgets._memory_fixes import CALLS, WORK, _cost, memory_fixes
from calc.widgets._memory_parts import peak_parts, zero_parts
from calc.widgets.training import _layout, _peak

_DEFAULTS = calculators()["training-memory"].defaults
_SHOWN_BY_PAGE = {**_DEFAULTS, **TRAINING_MEMORY.marker}
"""What the page a link opens shows for the fields the link leaves out."""

_CHANGED = {"zero_stage", "dp", "micro_batch", "recompute", "tp", "sequence_parallel", "cp", "pp"}
"""The fields a change may set; a link carries every other input as the reader had it."""


def _diagnosis(inputs: dict[str, str]) -> tuple[str, list[str], list[str]]:
    """The diagnosis's text, its links' addresses and their texts."""
    fragment = str(render("training-memory", inputs)["html"])
    said = re.search(r'data-output="diagnosis">([^<]*)<', fragment)[1]
    paragraph = re.search(r'<p class="lc-diagnosis">.*?</p>', fragment)[0]
    links = re.findall(r'data-site-href="([^"]*)">([^<]*)<', paragraph)
    return html.unescape(said), [html.unescape(h) for h, _ in links], [html.unescape(t) for _, t in links]


def _opened(href: str) -> dict[str, str]:
    """The values the calculator a link opens shows: the page's, with the link's inputs over them."""
    page, _, rest = href.partition("?")
    query, _, anchor = rest.partition("#")
    assert (page, anchor) == (TRAINING_MEMORY.page, TRAINING_MEMORY.anchor), href
    pairs = dict(q.split("=", 1) for q in query.split("&"))
    assert all(k.startswith(f"{TRAINING_MEMORY.calc}.") for k in pairs), href
    return {**_SHOWN_BY_PAGE, **{k.removeprefix(f"{TRAINING_MEMORY.calc}."): v for k, v in pairs.items()}}


def _peak_of(inputs: dict[str, str]) -> PeakMemory:
    v = {**_DEFAULTS, **inputs}
    return _peak(preset(v["preset"]), _layout(v), v)[0]


def _check_links(inputs: dict[str, str], hrefs: list[str]) -> None:
    """Each link opens the reader's inputs with only a change's fields changed, and the engine says it fits."""
    reader = calculators()["training-memory"].implied({**_DEFAULTS, **inputs}, set(inputs))  # a stack's fields too
    for href in hrefs:
        opened = _opened(href)
        assert set(opened) == set(_DEFAULTS), href
        assert {k for k in opened if opened[k] != reader[k]} <= _CHANGED, href
        assert 'data-ok="yes"' in str(render("training-memory", opened)["html"]), href


@pytest.mark.parametrize(
    ("inputs", "part"),
    [
        # 70B on one GPU: 16 B a parameter of model states is most of it
        ({"preset": "llama3-70b", "dp": "1", "zero_stage": "0"}, "model states"),
        # 8B at 128k tokens without recomputation: the activations are
        ({"dp": "1", "zero_stage": "0", "seq_len": "131072", "recompute": "none"}, "activations"),
        # 405B at 128k tokens on 8 GPUs: only several changes together fit (context parallelism among them)
        ({"preset": "llama3.1-405b", "seq_len": "131072"}, "activations"),
        # 405B on 8 GPUs, the calculator's other defaults
        ({"preset": "llama3.1-405b"}, "model states"),
    ],
)
def test_does_not_fit_names_its_biggest_part_and_the_changes_that_fit(inputs: dict[str, str], part: str) -> None:
    said, hrefs, _ = _diagnosis(inputs)
    p = _peak_of(inputs)
    m, fmt = p.memory, byte_formatter(_DEFAULTS["unit"])
    bytes_of = {"model states": m.model_state, "activations": m.activations}
    assert said.startswith(f"The biggest part is {part} (")
    assert f"): {fmt(bytes_of[part])} of the {fmt(p.nvidia_smi_bytes)} on this GPU." in said
    assert hrefs, said
    _check_links(inputs, hrefs)


_SWEEP_MODELS = (
    "llama3.2-3b",
    "llama3-8b",
    "gemma3-27b",
    "llama3-70b",
    "llama3.1-405b",
    "mixtral-8x7b",
    "qwen3-30b-a3b",
    "gpt-oss-120b",
    "deepseek-v3",
)
_SWEEP_LAYOUTS = (
    {},
    {"dp": "1", "zero_stage": "0"},
    {"seq_len": "32768", "recompute": "none"},
    {"micro_batch": "8"},
    {"pp": "4", "global_batch": "64"},
    {"tp": "2", "sequence_parallel": "1", "zero_stage": "3"},
    {"recompute": "none", "flash_attention": "0", "dropout": "1"},
    {"stack": "torchtitan", "recompute": "op", "zero_stage": "3"},
    {"implementation": "hf-sdpa", "recompute": "none"},
    {"convention": "mixed-adam-18", "optimizer": "fused", "dp": "2"},
    {"gpu": "custom", "gpu_memory": "24", "dp": "1"},
    {"seq_len": "131072", "dp": "64"},
)


@pytest.mark.parametrize("model", _SWEEP_MODELS)
def test_every_offered_change_fits_in_the_calculator_it_opens(model: str) -> None:
    """Across models and layouts: every layout that does not fit is diagnosed, and each link's inputs fit."""
    diagnosed = 0
    for layout in _SWEEP_LAYOUTS:
        inputs = {"preset": model, **layout}
        result = render("training-memory", inputs)
        fragment = str(result["html"])
        if not result["ok"] or 'data-ok="yes"' in fragment:
            assert 'data-output="diagnosis"' not in fragment, inputs
            continue
        said, hrefs, texts = _diagnosis(inputs)
        assert said.startswith("The biggest part is "), inputs
        assert len(hrefs) <= 4, inputs
        gpus = [int(re.search(r"\(([\d,]+) GPUs?, ", t)[1].replace(",", "")) for t in texts]
        assert gpus == sorted(gpus), texts  # fewest GPUs first
        _check_links(inputs, hrefs)
        diagnosed += bool(hrefs)
    assert diagnosed, f"{model}: no layout of the sweep was diagnosed with a change"


def test_the_cheapest_change_comes_first_and_names_itself() -> None:
    """8B on 8 GPUs, nothing sharded: ZeRO-1 over the same 8 GPUs fits, before any change that needs more of them."""
    _, hrefs, texts = _diagnosis({"zero_stage": "0"})
    first = _opened(hrefs[0])
    assert (first["zero_stage"], first["dp"]) == ("1", "8")
    assert texts[0].startswith("ZeRO-1 (8 GPUs, ")  # the same dp: not said
    # tp 2 is 86.9 GB on the calculator's H100 (its NCCL rings, NVLS and tree buffers): tp 4 is the smallest that fits
    assert any(t.startswith("tp 4 with sequence parallelism (32 GPUs, ") for t in texts), texts


def test_a_smaller_micro_batch_is_offered_on_the_same_gpus() -> None:
    _, hrefs, texts = _diagnosis({"micro_batch": "16"})
    assert texts[0].startswith("micro-batch ") and "(8 GPUs, " in texts[0], texts
    assert int(_opened(hrefs[0])["micro_batch"]) < 16


def test_a_fitting_layout_has_no_diagnosis() -> None:
    assert 'data-output="diagnosis"' not in str(render("training-memory", {})["html"])


def test_nothing_that_fits_is_said_in_words() -> None:
    """An 8B model at 16M tokens a sequence: no change tried fits, and the diagnosis says so (no link)."""
    said, hrefs, _ = _diagnosis({"seq_len": "16777216", "gpu": "custom", "gpu_memory": "1"})
    assert not hrefs and " makes it fit, alone or with ZeRO-3 and full recomputation." in said


def test_a_search_past_its_work_says_so() -> None:
    """DeepSeek-V3 under FSDP2: each engine call places some 47 thousand tensors, past ``WORK``: nothing is checked,
    nothing offered, and the diagnosis says why rather than that nothing fits."""
    inputs = {"preset": "deepseek-v3", "stack": "torchtitan", "recompute": "op", "zero_stage": "3"}
    said, hrefs, _ = _diagnosis(inputs)
    assert not hrefs and said.endswith("takes too long for a live answer, so none is offered.")


def test_the_target_is_the_pages_calculator() -> None:
    """The link's page embeds the training-memory calculator once, under the anchor, with the marker's inputs: a
    link leaves out what the page already shows, so the marker must be the page's."""
    page = (ROOT / "docs" / (TRAINING_MEMORY.page.rstrip("/") + ".md")).read_text(encoding="utf-8")
    markers = re.findall(r"^\[\[calc training-memory( [^\]]*)?\]\]$", page, flags=re.MULTILINE)
    assert len(markers) == 1 and TRAINING_MEMORY.calc == "training-memory"
    assert dict(pair.split("=", 1) for pair in shlex.split(markers[0])) == TRAINING_MEMORY.marker
    assert "{ #" + TRAINING_MEMORY.anchor + " }" in page


@pytest.mark.parametrize(
    ("preset_name", "layout"),
    [
        ("llama3-8b", {"dp": 8, "zero_stage": 0, "seq_len": 4096}),
        ("llama3-70b", {"dp": 16, "zero_stage": 3, "seq_len": 8192, "recompute": "full"}),
        ("mixtral-8x7b", {"dp": 8, "ep": 8, "zero_stage": 1, "seq_len": 4096}),
        ("llama3.1-405b", {"dp": 4, "tp": 8, "pp": 8, "zero_stage": 1, "seq_len": 8192, "sequence_parallel": True}),
    ],
)
def test_the_parts_add_up_to_the_engines_peak(preset_name: str, layout: dict[str, object]) -> None:
    p = peak_memory(preset(preset_name), Layout(**layout))
    assert peak_parts(p).nvidia_smi_bytes == p.nvidia_smi_bytes


@pytest.mark.parametrize(("stage", "times"), [(1, 1), (2, 4), (3, 8), (3, 64)])
def test_zero_shards_each_component_as_the_engine_does(stage: int, times: int) -> None:
    """From ZeRO-0 on 8 GPUs: each model-state component under ZeRO ``stage`` over ``times`` the ranks is the
    engine's, to the byte (Rajbhandari et al. 2020, Sec. 5)."""
    arch = preset("llama3-8b")
    base = Layout(dp=8, zero_stage=0, seq_len=4096)
    predicted = zero_parts(peak_parts(peak_memory(arch, base)), base, stage, times, 0).state
    m = peak_memory(arch, Layout(dp=8 * times, zero_stage=stage, seq_len=4096)).memory
    assert predicted == {k: getattr(m, k) for k in predicted}


@pytest.mark.parametrize(
    "inputs",
    [
        {"preset": "llama3.1-405b", "seq_len": "131072"},
        {"preset": "llama3.1-405b", "pp": "126", "recompute": "none", "micro_batch": "64"},
        {"preset": "deepseek-v3", "dp": "1024", "pp": "61", "ep": "256", "seq_len": "16777216"},
        {"pp": "8", "seq_len": "16777216"},
        {"preset": "qwen3-30b-a3b", "stack": "torchtitan", "recompute": "op", "shard": "fsdp2", "zero_stage": "3"},
    ],
)
def test_the_search_asks_the_engine_little(inputs: dict[str, str]) -> None:
    """At most ``CALLS`` engine calls and ``WORK`` a diagnosis, counted as it calls (the render's CPU time is
    ``tests/test_render_limits.py``'s)."""
    v = {**_DEFAULTS, **inputs}
    arch, asked = preset(v["preset"]), []

    def peak(w: dict[str, str]) -> tuple[Layout, PeakMemory]:
        asked.append(_cost(arch, w))
        there = _layout(w)
        return there, _peak(arch, there, w)[0]

    layout, p = peak(v)
    asked.clear()
    memory_fixes(arch, v, _DEFAULTS, layout, p, 80 * 10**9, byte_formatter("GB"), peak)
    assert len(asked) <= CALLS and sum(asked) <= WORK, asked


def test_a_change_predicted_to_fit_is_still_asked_of_the_engine() -> None:
    """The links come from the engine's answers: a peak function that says nothing fits leaves no link."""
    v = {**_DEFAULTS, "zero_stage": "0"}
    arch = preset(v["preset"])
    layout, p = _layout(v), _peak(arch, _layout(v), v)[0]
    over = PeakMemory(p.stage, p.memory, p.overheads, p.allocated_bytes, p.reserved_bytes, 10**15, p.not_modelled)
    said = memory_fixes(arch, v, _DEFAULTS, layout, p, 80 * 10**9, byte_formatter("GB"), lambda w: (layout, over))
    assert "lc-calc__handoff" not in said and "data-output" in said


_LOADS = """
import json, sys
from calc.widgets import render
render("training-memory", {})
fitting = "calc.widgets._memory_fixes" in sys.modules
render("training-memory", {"preset": "llama3-70b", "dp": "1"})
print(json.dumps([fitting, "calc.widgets._memory_fixes" in sys.modules]))
"""


@pytest.mark.skipif(sys.platform == "emscripten", reason="a fresh interpreter in a subprocess: host only")
def test_the_diagnosis_loads_only_when_a_layout_does_not_fit() -> None:
    proc = run_captured([sys.executable, "-c", _LOADS], timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [False, True]


def test_the_config_chip_reads_the_engines_parameter_count() -> None:
    """Issue 19 item 8a (its test went with the revert of 4f26f66): once the engine answers, the Model select's chip
    reads the engine's line, the parameter count formatted like the Parameters box among them."""
    config = (
        '{"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,'
        ' "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}'
    )
    fragment = str(render("training-memory", {"config": config})["html"])
    chip = re.search(r'data-output="model_chip">([^<]*)<', fragment)[1]
    assert chip == "From config.json: llama · 1.5B parameters · 16 layers · GQA, 32 heads / 8 KV · vocabulary 128,256"
    script = (ROOT / "docs/assets/javascripts/calc.mjs").read_text(encoding="utf-8")
    assert 'querySelector("[data-output=model_chip]")' in script  # calc.mjs copies it into the select's chip
