"""Issue 19's diagnosis in the fine-tuning and serving-memory calculators: a "Does not fit" names its biggest part
with the engine's bytes and offers up to ``SHOWN`` changes, each a link that opens the same calculator with the
reader's inputs and the change; every offered link's inputs, rendered, fit. A fitting answer has no diagnosis, the
search asks the engine at most ``CALLS`` times, and its module loads only when an answer does not fit."""

from __future__ import annotations

import html
import json
import re
import shlex
import sys

import pytest

from _helpers import ROOT, run_captured
from calc.models.presets import preset
from calc.widgets import calculators, render
from calc.widgets._diagnosis import Target
from calc.widgets._fit_fixes import CALLS, FINETUNE_MEMORY, SERVING_MEMORY, SHOWN, finetune_fixes, serving_fixes
from calc.widgets._html import byte_formatter, gpu_memory
from calc.widgets._model import read_model
from calc.widgets.finetune import _engine as finetune_engine
from calc.widgets.inference import _engine as serving_engine
from calc.widgets.inference import _read, _splits

_TARGETS = {"finetune-memory": FINETUNE_MEMORY, "serving-memory": SERVING_MEMORY}

_CHANGED = {
    "finetune-memory": {"method", "recompute", "micro_batch", "seq_len"},
    "serving-memory": {"precision", "kv_dtype", "tp", "batch", "seq_len"},
}
"""The fields a change may set; a link carries every other input as the reader had it."""


def _diagnosis(name: str, inputs: dict[str, str]) -> tuple[str, list[str], list[str]]:
    """The diagnosis's text, its links' addresses and their texts."""
    fragment = str(render(name, inputs)["html"])
    said = re.search(r'data-output="diagnosis">([^<]*)<', fragment)[1]
    paragraph = re.search(r'<p class="lc-diagnosis">.*?</p>', fragment)[0]
    links = re.findall(r'data-site-href="([^"]*)">([^<]*)<', paragraph)
    return html.unescape(said), [html.unescape(h) for h, _ in links], [html.unescape(t) for _, t in links]


def _opened(name: str, href: str) -> dict[str, str]:
    """The values the calculator a link opens shows: the page's, with the link's inputs over them."""
    target = _TARGETS[name]
    page, _, rest = href.partition("#")[0].partition("?")
    assert page == target.page and href.endswith(f"#{target.anchor}"), href
    pairs = dict(q.split("=", 1) for q in rest.split("&")) if rest else {}
    assert all(k.startswith(f"{target.calc}.") for k in pairs), href
    shown = {**calculators()[name].defaults, **target.marker}
    return {**shown, **{k.removeprefix(f"{target.calc}."): v for k, v in pairs.items()}}


def _check_links(name: str, inputs: dict[str, str], hrefs: list[str]) -> None:
    """Each link opens the reader's inputs with only a change's fields changed, and the engine says it fits."""
    reader = {**calculators()[name].defaults, **inputs}
    for href in hrefs:
        opened = _opened(name, href)
        assert set(opened) == set(reader), href
        assert {k for k in opened if opened[k] != reader[k]} <= _CHANGED[name], href
        assert 'data-ok="yes"' in str(render(name, opened)["html"]), href


def _finetune_part(inputs: dict[str, str], key: str) -> tuple[int, int]:
    v = {**calculators()["finetune-memory"].defaults, **inputs}
    sizes = {k: n for k, _, n, _ in finetune_engine(read_model(v), v)[2]}
    return sizes[key], sum(sizes.values())


@pytest.mark.parametrize(
    ("inputs", "key", "words"),
    [
        # 70B fully fine-tuned: 16 B a trained parameter is most of it; only QLoRA with recomputation fits
        ({"preset": "llama3-70b", "method": "full"}, "trained", "the trained parameters'"),
        # the page's own example: QLoRA on 70B fits once recomputation is full
        ({"preset": "llama3-70b", "method": "qlora"}, "activations", "activations (selective recomputation"),
        ({"micro_batch": "16"}, "activations", "activations (selective recomputation, micro-batch 16 × 4,096"),
        ({"method": "full"}, "trained", "the trained parameters'"),
    ],
)
def test_finetune_names_its_biggest_part_and_the_changes_that_fit(inputs: dict[str, str], key: str, words: str):
    said, hrefs, _ = _diagnosis("finetune-memory", inputs)
    part, whole = _finetune_part(inputs, key)
    fmt = byte_formatter("GB")
    assert said.startswith(f"The biggest part is {words}"), said
    assert said.endswith(f": {fmt(part)} of the {fmt(whole)} on this GPU."), said
    assert 1 <= len(hrefs) <= SHOWN, said
    _check_links("finetune-memory", inputs, hrefs)


def test_finetune_offers_qlora_with_recomputation_for_a_full_70b() -> None:
    _, hrefs, texts = _diagnosis("finetune-memory", {"preset": "llama3-70b", "method": "full"})
    assert texts[0].startswith("QLoRA, full recomputation (")
    opened = _opened("finetune-memory", hrefs[0])
    assert (opened["method"], opened["recompute"], opened["preset"]) == ("qlora", "full", "llama3-70b")


def _serving(inputs: dict[str, str]):
    v = {**calculators()["serving-memory"].defaults, **inputs}
    arch = read_model(v).arch
    seq_len, batch, tp, _ = _read(v, arch)
    return serving_engine(arch, v, seq_len, batch, tp, gpu_memory(v)[0])


@pytest.mark.parametrize(
    ("inputs", "key", "words"),
    [
        ({"batch": "64"}, "kv_batch_per_gpu_bytes", "the KV cache (bf16, 64 sequences of 8,192 tokens)"),
        ({"preset": "llama3.1-405b", "tp": "1"}, "weights_per_gpu_bytes", "the weights (bf16)"),
        ({"preset": "llama3.1-405b"}, "weights_per_gpu_bytes", "the weights (bf16, split over tp 4)"),
        ({"tp": "1"}, "weights_per_gpu_bytes", "the weights (bf16)"),
        ({"preset": "llama3-8b", "tp": "1", "seq_len": "131072", "batch": "64"}, "kv_batch_per_gpu_bytes", "the KV"),
    ],
)
def test_serving_names_its_biggest_part_and_the_changes_that_fit(inputs: dict[str, str], key: str, words: str):
    said, hrefs, _ = _diagnosis("serving-memory", inputs)
    m, fmt = _serving(inputs), byte_formatter("GB")
    assert said.startswith(f"The biggest part is {words}"), said
    assert f": {fmt(getattr(m, key))} of the {fmt(m.total_per_gpu_bytes)} on " in said, said
    assert 1 <= len(hrefs) <= SHOWN, said
    _check_links("serving-memory", inputs, hrefs)


def test_serving_offers_tp_with_its_gpus() -> None:
    """70B in bf16 on one GPU: tp 4 (the page's tp, so the link leaves it out) splits the weights enough."""
    _, hrefs, texts = _diagnosis("serving-memory", {"tp": "1"})
    assert any(t.startswith("tp 4 (4 GPUs, ") for t in texts), texts
    assert any(_opened("serving-memory", h)["tp"] == "4" for h in hrefs)


_SWEEP = {
    "finetune-memory": [
        {"preset": p, **extra}
        for p in ("llama3.2-3b", "llama2-7b", "llama3-70b", "mixtral-8x7b", "qwen3-30b-a3b", "gemma3-27b")
        for extra in (
            {"method": "full"},
            {"seq_len": "32768"},
            {"method": "qlora", "micro_batch": "8"},
            {"recompute": "none", "seq_len": "16384"},
            {"gpu": "custom", "gpu_memory": "24", "method": "full"},
        )
    ],
    "serving-memory": [
        {"preset": p, **extra}
        for p in ("llama3-8b", "llama3-70b", "llama3.1-405b", "mixtral-8x7b", "deepseek-v3", "gemma3-27b")
        for extra in (
            {},
            {"tp": "1"},
            {"batch": "256"},
            {"seq_len": "131072", "batch": "32"},
            {"precision": "fp32", "tp": "2"},
            {"gpu": "custom", "gpu_memory": "24", "tp": "1"},
        )
    ],
}


@pytest.mark.parametrize("name", sorted(_SWEEP))
def test_every_offered_change_fits_in_the_calculator_it_opens(name: str) -> None:
    """Across models and inputs: every answer that does not fit is diagnosed, and each link's inputs fit."""
    diagnosed = 0
    for inputs in _SWEEP[name]:
        result = render(name, inputs)
        fragment = str(result["html"])
        if not result["ok"] or 'data-ok="yes"' in fragment:
            assert 'data-output="diagnosis"' not in fragment, inputs
            continue
        said, hrefs, _ = _diagnosis(name, inputs)
        assert said.startswith("The biggest part is "), inputs
        assert len(hrefs) <= SHOWN, inputs
        _check_links(name, inputs, hrefs)
        diagnosed += bool(hrefs)
    assert diagnosed >= 5, f"{name}: too few answers of the sweep were diagnosed with a change ({diagnosed})"


@pytest.mark.parametrize("name", sorted(_TARGETS))
def test_a_fitting_answer_has_no_diagnosis(name: str) -> None:
    fragment = str(render(name, {})["html"])
    assert 'data-ok="yes"' in fragment and 'data-output="diagnosis"' not in fragment


def test_nothing_that_fits_is_said_in_words() -> None:
    said, hrefs, _ = _diagnosis("finetune-memory", {"preset": "llama3.1-405b", "method": "full"})
    assert not hrefs and said.endswith(" makes it fit.")
    said, hrefs, _ = _diagnosis("serving-memory", {"preset": "deepseek-v3", "gpu": "custom", "gpu_memory": "8"})
    assert not hrefs and said.endswith(" makes it fit.")


@pytest.mark.parametrize(("name", "target"), sorted(_TARGETS.items()))
def test_the_target_is_the_pages_calculator(name: str, target: Target) -> None:
    """The link's page embeds the calculator once, under the anchor, with the marker's inputs: a link leaves out
    what the page already shows, so the marker must be the page's."""
    page = (ROOT / "docs" / (target.page.rstrip("/") + ".md")).read_text(encoding="utf-8")
    markers = re.findall(rf"^\[\[calc {name}( [^\]]*)?\]\]$", page, flags=re.MULTILINE)
    assert len(markers) == 1 and target.calc == name
    assert dict(pair.split("=", 1) for pair in shlex.split(markers[0])) == target.marker
    assert "{ #" + target.anchor + " }" in page


@pytest.mark.parametrize(
    "inputs",
    [
        {"preset": "llama3-70b", "method": "full"},
        {"preset": "llama3.1-405b", "method": "full", "micro_batch": "64"},
        {"micro_batch": "16", "seq_len": "65536", "recompute": "none"},
    ],
)
def test_the_finetune_search_asks_the_engine_little(inputs: dict[str, str]) -> None:
    v, asked = {**calculators()["finetune-memory"].defaults, **inputs}, []

    def total(w: dict[str, str]) -> int:
        asked.append(w)
        return sum(n for _, _, n, _ in finetune_engine(read_model(w), w)[2])

    parts = finetune_engine(read_model(v), v)[2]
    finetune_fixes(v, calculators()["finetune-memory"].defaults, parts, 80 * 10**9, byte_formatter("GB"), total)
    assert len(asked) <= CALLS


@pytest.mark.parametrize(
    "inputs",
    [{"preset": "llama3.1-405b", "tp": "1"}, {"batch": "1048576"}, {"preset": "deepseek-v3", "seq_len": "16777216"}],
)
def test_the_serving_search_asks_the_engine_little(inputs: dict[str, str]) -> None:
    v, asked = {**calculators()["serving-memory"].defaults, **inputs}, []
    arch = preset(v["preset"])

    def engine(w: dict[str, str]):
        asked.append(w)
        seq_len, batch, tp, _ = _read(w, arch)
        return serving_engine(arch, w, seq_len, batch, tp, 80 * 10**9)

    m = _serving(inputs)
    serving_fixes(arch, v, calculators()["serving-memory"].defaults, m, byte_formatter("GB"), engine, _splits)
    assert asked and len(asked) <= CALLS


def test_a_change_predicted_to_fit_is_still_asked_of_the_engine() -> None:
    """The links come from the engine's answers: an engine that says nothing fits leaves no link."""
    v = {**calculators()["finetune-memory"].defaults, "micro_batch": "16"}
    parts = finetune_engine(read_model(v), v)[2]
    said = finetune_fixes(v, v, parts, 80 * 10**9, byte_formatter("GB"), lambda w: 10**15)
    assert "lc-calc__handoff" not in said and "data-output" in said


_LOADS = """
import json, sys
from calc.widgets import render
render("finetune-memory", {})
render("serving-memory", {})
fitting = "calc.widgets._fit_fixes" in sys.modules
render("serving-memory", {"tp": "1"})
print(json.dumps([fitting, "calc.widgets._fit_fixes" in sys.modules]))
"""


@pytest.mark.skipif(sys.platform == "emscripten", reason="a fresh interpreter in a subprocess: host only")
def test_the_diagnosis_loads_only_when_an_answer_does_not_fit() -> None:
    proc = run_captured([sys.executable, "-c", _LOADS], timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == [False, True]


def test_qlora_is_not_asked_where_half_a_byte_a_parameter_cannot_fit() -> None:
    """QLoRA's NF4 state of a large MoE takes the engine tens of ms: DeepSeek-V3 at half a byte a parameter is
    over any 80 GB GPU, so the engine is never asked about it (the render stays cheap)."""
    v = {**calculators()["finetune-memory"].defaults, "preset": "deepseek-v3", "method": "full"}
    asked: list[str] = []

    def total(w: dict[str, str]) -> int:
        asked.append(w["method"])
        return sum(n for _, _, n, _ in finetune_engine(read_model(w), w)[2])

    parts = finetune_engine(read_model(v), v)[2]
    said = finetune_fixes(v, v, parts, 80 * 10**9, byte_formatter("GB"), total)
    assert "qlora" not in asked and said.endswith(" makes it fit.</span></p>")
