"""A preset fills will-it-fit's Parameters box with the engine's count (issue 19), in Chromium."""

from __future__ import annotations

import pytest

from calc import format_bytes, format_count, model_state_bytes, preset
from conftest import wait_settled

pytestmark = pytest.mark.browser


def test_a_preset_fills_the_parameters_box(session, site_url) -> None:
    page, _ = session
    page.goto(f"{site_url}/")
    wait_settled(page, "will-it-fit")
    root = page.locator('[data-calc="will-it-fit"]').first
    params, model = root.locator('[name="params"]'), root.locator('[name="preset"]')
    assert params.input_value() == "7B"
    model.evaluate("el => { el.closest('details').open = true; }")  # the model sits under "More options"
    model.select_option("llama3-70b")
    wait_settled(page, root)
    count = preset("llama3-70b").param_count
    shown = root.locator('[data-fill="params"]').inner_text()
    assert shown == format_count(count) == "70.6B"
    assert params.input_value() == shown  # the box shows the count the preset drives, not "7B"
    assert root.get_attribute("data-seq") == "1"  # writing the box is not an edit: nothing more was posted
    assert "will-it-fit.params=70.6B" in page.url  # the address holds what the form shows
    # Back to no model: the count in the box, as it reads, is what the model state is computed from.
    model.select_option("none")
    wait_settled(page, root)
    assert root.locator('[data-output="total"]').inner_text() == format_bytes(model_state_bytes("70.6B").total)
    assert root.locator('[data-fill="params"]').count() == 0 and params.input_value() == "70.6B"
