"""The answer box in a browser (issue 19): letters can be typed, the text is 16 px, and the formats a reader is
invited to use (a bare number in the asked unit, ``12 d``) come back right from the live checker.

Every wait is on the exercise root's signals (``data-state``, ``data-seq``, ``data-answered``), never on time.
"""

from __future__ import annotations

import pytest

from calc.guide.exercises import draw, live
from conftest import READY_TIMEOUT_MS, SETTLED_JS

pytestmark = pytest.mark.browser

ROOT = '[data-exercise="{}"]'


def _verdict(page, exercise: str, text: str) -> tuple[str, str]:
    root = page.locator(ROOT.format(exercise))
    root.locator("input[name=answer]").fill(text)
    root.locator("button[type=submit]").click()
    page.wait_for_function(
        f"sel => {{ const el = document.querySelector(sel); return !!el && ({SETTLED_JS})(el); }}",
        arg=ROOT.format(exercise),
        timeout=READY_TIMEOUT_MS,
    )
    return root.get_attribute("data-verdict"), root.locator("[data-feedback]").text_content()


def test_the_box_takes_letters_at_16_px_and_every_invited_format(session, site_url) -> None:
    page, _ = session
    page.goto(f"{site_url}/exercises/")
    page.wait_for_function(
        "sel => document.querySelector(sel)?.dataset.state === 'ready'",
        arg=ROOT.format("training-days"),
        timeout=READY_TIMEOUT_MS,
    )
    box = page.locator(f"{ROOT.format('training-days')} input[name=answer]")
    assert box.get_attribute("inputmode") is None and box.get_attribute("type") == "text"
    assert float(box.evaluate("el => getComputedStyle(el).fontSize").removesuffix("px")) >= 16
    days = float(draw("training-days").answer) / 86400
    for typed in (f"{days:.4g} d", f"{days * 24:.5g} h", f"{days:.4g}"):
        assert _verdict(page, "training-days", typed)[0] == "right", typed
    assert _verdict(page, "bubble-1f1b", "37.5")[0] == "right"  # a bare number is in %, as the page says
    verdict, message = _verdict(page, "bubble-1f1b", "0.375")
    assert verdict == "wrong" and "0.375 %" in message
    verdict, message = _verdict(page, "zero3-gpus", "12")
    assert verdict == "wrong" and "12 GPUs" in message and "exactly of" not in message
    # issue 19: an answer it cannot read is told in the box's words, "Your answer must be …", and names the units
    verdict, message = _verdict(page, "training-days", "12 weeks")
    assert (verdict, message) == (
        "invalid",
        live({"op": "check", "exercise": "training-days", "answer": "12 weeks"})["error"]["said"],
    )
    assert message.startswith("Your answer must be a time in ns, µs, ms, s, min, h or d"), message
