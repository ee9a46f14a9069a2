"""Issue #17's leftovers: every preset on every calculator's defaults, old convention names, state labels."""

from __future__ import annotations

import re

import pytest

from calc.models.presets import PRESETS
from calc.widgets import render

FAST = ("will-it-fit", "parameter-count", "training-compute", "serving-memory", "communication", "training-memory")
"""The calculators with a model menu that render in milliseconds (the planner searches: a handful below)."""


@pytest.mark.parametrize("name", FAST)
def test_every_preset_renders_on_the_defaults(name: str) -> None:
    failed = {p: r["error"]["message"] for p in PRESETS if not (r := render(name, {"preset": p}))["ok"]}
    assert not failed


@pytest.mark.parametrize("preset", ["gpt2-xl", "qwen2.5-0.5b", "deepseek-v3"])
def test_the_planner_renders_a_few_presets_on_its_defaults(preset: str) -> None:
    r = render("plan", {"preset": preset})
    assert r["ok"], r


@pytest.mark.parametrize(
    ("preset", "shown"),
    [
        ("gpt2-xl", 1),  # 25 heads: 4, 3, 2 do not divide them
        ("qwen2.5-0.5b", 2),  # 14 heads, 2 KV heads
    ],
)
def test_a_default_tp_the_heads_refuse_is_lowered_and_said(preset: str, shown: int) -> None:
    fragment = render("serving-memory", {"preset": preset})["html"]
    assert f"shown at tp {shown}." in fragment
    call = re.search(r"inference_memory\([^)]*\)", fragment)[0]  # the copied code computes what the page shows
    assert (f"tp={shown}" in call) if shown > 1 else ("tp=" not in call)
    typed = render("serving-memory", {"preset": preset, "tp": "3"})
    assert typed["error"]["code"] == "not-divisible"


def test_a_default_tp_that_divides_the_heads_says_nothing() -> None:
    fragment = render("serving-memory", {"preset": "llama3-70b"})["html"]
    assert "(the default)" not in fragment
    assert re.search(r"tp=4\b", fragment)
