"""Exercises in a browser: pre-rendered without JavaScript; live checking, new numbers and links with it.

Every wait is on an explicit signal of the exercise root (``data-state``, ``data-seq``, ``data-answered``,
``data-seed``), never on time.
"""

from __future__ import annotations

import re

import pytest

from calc.guide.exercises import draw, exercises
from conftest import READY_TIMEOUT_MS, SETTLED_JS

pytestmark = pytest.mark.browser

PATH = "exercises/"
ROOT = '[data-exercise="{}"]'


def _settled(page, exercise: str) -> None:
    page.wait_for_function(
        f"sel => {{ const el = document.querySelector(sel); return !!el && ({SETTLED_JS})(el); }}",
        arg=ROOT.format(exercise),
        timeout=READY_TIMEOUT_MS,
    )


def _ready(page, exercise: str) -> None:
    page.wait_for_function(
        "sel => document.querySelector(sel)?.dataset.state === 'ready'",
        arg=ROOT.format(exercise),
        timeout=READY_TIMEOUT_MS,
    )


def _open(session, site_url: str, exercise: str):
    """The session's page on the exercises page, ``exercise`` ready; the page and that exercise's root."""
    page, _ = session
    page.goto(f"{site_url}/{PATH}")
    _ready(page, exercise)
    return page, page.locator(ROOT.format(exercise))


def _answer(page, exercise: str, text: str) -> str:
    root = page.locator(ROOT.format(exercise))
    root.locator("input[name=answer]").fill(text)
    root.locator("button[type=submit]").click()
    _settled(page, exercise)
    return root.get_attribute("data-verdict")


def test_without_javascript_the_question_and_worked_answer_are_there(browser, site_url) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{site_url}/{PATH}")
    roots = page.locator("[data-exercise]")
    assert roots.count() == len(exercises()) >= 20
    for exercise in ("zero3-gpus", "bubble-1f1b", "kv-batch"):
        case = draw(exercise)
        root = page.locator(ROOT.format(exercise))
        assert root.get_attribute("data-state") == "prerendered"
        assert root.locator("[data-question]").text_content() == case.question
        assert root.locator("[data-answer]").text_content() == case.answer_text
        assert root.locator("[data-steps] li").count() == len(case.steps)
        assert root.locator("form").is_hidden()  # nothing to type into without the engine
        root.locator("[data-solution] summary").click()  # a native <details>: opens without JavaScript
        assert root.locator("[data-answer]").is_visible()
    context.close()


def test_a_right_answer_is_accepted_and_a_wrong_one_gets_the_hint(session, site_url) -> None:
    exercise = "zero3-gpus"
    page, root = _open(session, site_url, exercise)
    assert _answer(page, exercise, "14 GPUs") == "right"
    assert "Right" in root.locator("[data-feedback]").text_content()
    assert _answer(page, exercise, "9") == "wrong"
    assert root.locator("[data-hint]").get_attribute("open") is not None
    assert root.locator("input[name=answer]").get_attribute("aria-invalid") == "true"
    # Units the reader types are read: 1120 GB of model state is the same as 1.12 TB.
    assert _answer(page, "model-state-total", "0.112 TB") == "right"
    # Bad input: a clear message, never a traceback.
    assert _answer(page, exercise, "lots") == "invalid"
    message = root.locator("[data-feedback]").text_content()
    assert message.startswith("Your answer must be a whole number") and "Traceback" not in message  # the box's label


def test_new_numbers_change_the_case_and_the_address_and_a_link_restores_it(session, site_url) -> None:
    exercise = "bubble-1f1b"
    page, root = _open(session, site_url, exercise)
    before = root.locator("[data-question]").text_content()
    seeds = set()
    for _ in range(3):  # a draw may repeat the numbers (few choices), never the seed
        root.locator("[data-new-numbers]").click()
        _settled(page, exercise)
        seeds.add(root.get_attribute("data-seed"))
        if root.locator("[data-question]").text_content() != before:
            break
    seed = root.get_attribute("data-seed")
    assert seed != "0" and len(seeds) >= 1
    assert re.search(rf"[?&]ex-{exercise}={seed}\b", page.url), page.url
    case = draw(exercise, int(seed))
    assert root.locator("[data-question]").text_content() == case.question
    assert root.locator("[data-answer]").text_content() == case.answer_text
    assert _answer(page, exercise, case.answer_text.replace(" %", "%")) == "right"

    link = page.url
    other = page.context.new_page()
    other.goto(link)
    _settled(other, exercise)
    restored = other.locator(ROOT.format(exercise))
    assert restored.get_attribute("data-seed") == seed
    assert restored.locator("[data-question]").text_content() == case.question
    other.close()
