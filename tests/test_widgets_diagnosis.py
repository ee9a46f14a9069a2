"""Issue 19's diagnosis in the training-memory calculator: a "Does not fit" names its biggest part with the engine's
bytes and offers the changes that fit, each a link that carries the inputs; and the config chip's parameters."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

from calc.memory.overheads import PeakMemory
from calc.models.presets import preset
from calc.widgets import calculators, render
from calc.widgets._html import byte_formatter
from calc.widgets.training import _layout, _peak

_DEFAULTS = calculators()["training-memory"].defaults


def _diagnosis(inputs: dict[str, str]) -> tuple[str, list[str]]:
    fragment = str(render("training-memory", inputs)["html"])
    said = re.search(r'data-output="diagnosis">([^<]*)<', fragment)[1]
    paragraph = re.search(r'<p class="lc-diagnosis">.*?</p>', fragment)[0]
    return html.unescape(said), [html.unescape(h) for h in re.findall(r'data-site-href="([^"]*)"', paragraph)]


def _peak_of(inputs: dict[str, str]) -> PeakMemory:
    v = {**_DEFAULTS, **inputs}
    return _peak(preset(v["preset"]), _layout(v), v)[0]


@pytest.mark.parametrize(
    ("inputs", "part"),
    [
        # 70B on one GPU, nothing sharded: 16 B a parameter of model states is most of it
        ({"preset": "llama3-70b", "dp": "1", "zero_stage": "0"}, "model states"),
        # 8B at 128k tokens without recomputation: the activations are
        ({"dp": "1", "zero_stage": "0", "seq_len": "131072", "recompute": "none"}, "activations"),
        # 405B at 128k tokens on 8 GPUs: only several changes together fit
        ({"preset": "llama3.1-405b", "seq_len": "131072"}, "activations"),
    ],
)
def test_does_not_fit_names_its_biggest_part_and_the_changes_that_fit(inputs: dict[str, str], part: str) -> None:
    said, hrefs = _diagnosis(inputs)
    p = _peak_of(inputs)
    m, fmt = p.memory, byte_formatter(_DEFAULTS["unit"])
    bytes_of = {"model states": m.total - m.activations - m.logits, "activations": m.activations}
    assert said.startswith(f"The biggest part is {part}") and f": {fmt(bytes_of[part])} of the " in said
    assert f"of the {fmt(p.nvidia_smi_bytes)} on this GPU" in said
    assert hrefs, said
    for href in hrefs:
        page, _, rest = href.partition("?")
        query, _, anchor = rest.partition("#")
        pairs = {k.removeprefix("training-memory."): v for k, v in (q.split("=", 1) for q in query.split("&"))}
        assert page == "memory/activations/" and anchor == "rival-model-state"
        assert set(pairs) <= set(_DEFAULTS)
        for k in ("preset", "seq_len", "micro_batch"):  # the reader's inputs that no change touches are carried
            assert pairs.get(k, _DEFAULTS[k]) == {**_DEFAULTS, **inputs}[k]
        # the change the link offers fits, by the engine, in the calculator it opens
        assert 'data-ok="yes"' in str(render("training-memory", pairs)["html"]), href


def test_the_cheapest_change_comes_first_and_names_itself() -> None:
    """8B on 8 GPUs, nothing sharded: ZeRO-1 over the same 8 GPUs fits, before any change that needs more of them."""
    inputs = {"zero_stage": "0"}
    _, hrefs = _diagnosis(inputs)
    first = dict(q.split("=", 1) for q in hrefs[0].partition("?")[2].partition("#")[0].split("&"))
    assert first["training-memory.zero_stage"] == "1" and first["training-memory.dp"] == "8"
    fragment = str(render("training-memory", inputs)["html"])
    assert re.search(r'data-site-href="[^"]*">ZeRO-1 \(', fragment), fragment


def test_a_fitting_layout_has_no_diagnosis() -> None:
    assert 'data-output="diagnosis"' not in str(render("training-memory", {})["html"])


def test_the_config_chip_reads_the_engines_parameter_count() -> None:
    """Issue 19 item 8a: the Model select's chip said type · layers · GQA · vocabulary; once the engine answers, it
    reads the engine's line, the parameter count formatted like the Parameters box among them."""
    config = (
        '{"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,'
        ' "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}'
    )
    fragment = str(render("training-memory", {"config": config})["html"])
    chip = re.search(r'data-output="model_chip">([^<]*)<', fragment)[1]
    assert chip == "From config.json: llama · 1.5B parameters · 16 layers · GQA, 32 heads / 8 KV · vocabulary 128,256"
    script = (Path(__file__).parents[1] / "docs/assets/javascripts/calc.mjs").read_text(encoding="utf-8")
    assert 'querySelector("[data-output=model_chip]")' in script  # calc.mjs copies it into the select's chip
