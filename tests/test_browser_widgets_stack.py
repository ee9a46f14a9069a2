"""The training-memory calculator's stack select sets the stack's defaults in Chromium (issue 17, Build 7)."""

from __future__ import annotations

import re

import pytest

from calc.widgets import render
from conftest import visit, wait_settled

pytestmark = pytest.mark.browser

PAGE = "memory/hidden/"
MARKER = {"preset": "llama3-8b", "dp": "8", "zero_stage": "1", "seq_len": "7168", "recompute": "selective"}
"""The page's training-memory marker (docs/memory/hidden.md), the inputs it starts from."""


def _smi(fragment: str) -> str:
    return re.search(r'data-value="(\d+)" data-unit="B" data-output="nvidia_smi_bytes"', fragment)[1]


def test_choosing_torchtitan_sets_its_recompute_and_zero_unless_the_reader_set_them(session, site_url) -> None:
    page, _ = session
    visit(page, site_url, PAGE)
    root = page.locator('[data-calc="training-memory"]').first
    wait_settled(page, root)
    value = {name: root.locator(f'[name="{name}"]') for name in ("stack", "recompute", "zero_stage", "shard")}
    value["stack"].select_option("torchtitan")
    wait_settled(page, root)
    assert [value[k].input_value() for k in ("recompute", "zero_stage", "shard")] == ["op", "3", "fsdp2"]
    titan = {**MARKER, "stack": "torchtitan", "recompute": "op", "zero_stage": "3", "shard": "fsdp2"}
    shown = root.locator('[data-output="nvidia_smi_bytes"]').get_attribute("data-value")
    assert shown == _smi(str(render("training-memory", titan)["html"]))  # one request carried the stack's knobs
    assert root.get_attribute("data-seq") == "1"
    # The reader sets recompute: the stack no longer moves it, and Megatron-LM gives back the page's own values.
    value["recompute"].select_option("full")
    value["stack"].select_option("megatron")
    wait_settled(page, root)
    assert [value[k].input_value() for k in ("recompute", "zero_stage", "shard")] == ["full", "1", "even"]
    value["stack"].select_option("torchtitan")
    wait_settled(page, root)
    assert [value[k].input_value() for k in ("recompute", "zero_stage", "shard")] == ["full", "3", "fsdp2"]
