"""Issue #17's leftovers in Chromium: a link's old convention name, and the copy block's install link."""

from __future__ import annotations

import re

import pytest

from calc.memory.model_state import CONVENTION_ALIASES
from calc.widgets import render
from conftest import wait_settled

pytestmark = pytest.mark.browser

PAGE = "memory/hidden/"
MARKER = {"preset": "llama3-8b", "dp": "8", "zero_stage": "1", "seq_len": "7168", "recompute": "selective"}
"""The page's training-memory marker (docs/memory/hidden.md), the inputs it starts from."""

OLD, NEW = next(iter(CONVENTION_ALIASES.items()))


def test_a_link_with_an_old_convention_name_restores_the_current_option(session, site_url) -> None:
    page, _ = session
    page.goto(f"{site_url}/{PAGE}?training-memory.convention={OLD}")
    root = page.locator('[data-calc="training-memory"]').first
    wait_settled(page, root)
    assert root.locator('[name="convention"]').input_value() == NEW
    assert root.locator("[data-link-notice]").is_hidden()  # taken quietly, not "ignored"
    want = re.search(r'data-value="(\d+)" data-unit="B" data-output="nvidia_smi_bytes"',
                     str(render("training-memory", {**MARKER, "convention": NEW})["html"]))[1]  # fmt: skip
    assert root.locator('[data-output="nvidia_smi_bytes"]').get_attribute("data-value") == want
    install = root.locator('.lc-code a[data-site-href="reference/cli/#install"]')
    assert install.get_attribute("href").endswith("/reference/cli/#install")  # calc.mjs addressed the live answer
