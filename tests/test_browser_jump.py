"""Issue 19, item 6: on a phone the sticky one-line verdict under the form jumps to the answer, and the answer's
verdict lands in view below the site header, not under it.

Every wait is on an explicit signal (``data-state``, ``data-seq``/``data-answered``, the ``scrollend`` event).
"""

from __future__ import annotations

import re

import pytest

from conftest import Watch, visit, wait_settled

pytestmark = pytest.mark.browser

PHONE = {"width": 390, "height": 844}

# Click the jump and resolve once the scroll it started has ended.
JUMP = """root => new Promise(done => {
  addEventListener('scrollend', () => done(), {once: true});
  root.querySelector('[data-jump]').click();
})"""
PLACE = """root => ({verdict: root.querySelector('[data-results] [data-output="verdict"]').getBoundingClientRect().top,
  header: document.querySelector('.md-header').getBoundingClientRect().bottom})"""


def test_the_sticky_verdict_jumps_to_the_answer_below_the_header(browser, site_url) -> None:
    context = browser.new_context(viewport=PHONE)
    watch = Watch(context, site_url)
    page = context.new_page()
    watch.attach(page)
    visit(page, site_url, "")
    root = page.locator('[data-calc="will-it-fit"]').first
    wait_settled(page, root)
    field = root.locator('[name="dp"]')
    field.fill("64")
    field.press("Tab")
    wait_settled(page, root)
    field.focus()
    jump = root.locator("[data-jump]")
    verdict = root.locator('[data-results] [data-output="verdict"]')
    assert jump.is_visible()
    assert jump.inner_text() == verdict.get_attribute("data-short") + " ↓"  # its numbers first (see below)
    root.evaluate(JUMP)
    place = root.evaluate(PLACE)
    context.close()
    assert place["verdict"] >= place["header"], place  # the verdict's first line is not under the header
    assert place["verdict"] < PHONE["height"] / 2, place  # and it is at the top of the screen
    assert watch.errors == [], watch.errors


# The sticky verdict's text, and whether the phone draws all of it (a cut line ends in "…" where it overflows).
BYTES = r"[\d.]+ [kMGT]?B"
STICKY = """root => { const jump = root.querySelector('[data-jump]');
  return {text: jump.textContent, cut: jump.scrollWidth > jump.clientWidth, shown: !!jump.getClientRects().length}; }"""


@pytest.mark.parametrize(
    ("path", "name", "inputs", "says"),
    [
        ("plan/", "plan", {}, r"Best: (?P<step>[\d.]+ s), MFU (?P<mfu>[\d.]+%) ↓"),
        ("", "will-it-fit", {"zero_stage": "3", "dp": "64"}, rf"Fits: (?P<used>{BYTES}) of (?P<memory>{BYTES}) ↓"),
        ("", "will-it-fit", {}, rf"Does not fit: (?P<used>{BYTES}) of (?P<memory>{BYTES}) ↓"),
        ("memory/activations/", "training-memory", {}, rf"(Does not fit|Fits): {BYTES} of {BYTES} ↓"),
    ],
)
def test_the_sticky_verdict_leads_with_its_numbers(browser, site_url, path, name, inputs, says) -> None:
    """Issue 19, item 6: on a phone the sticky line was the whole verdict, cut before its numbers ("Llama 3 70B:
    best of 14,040 layouts s…"). It leads with them, drawn whole: "Best: 6.86 s, MFU 54.0%", "Fits: 17.5 GB of
    85.5 GB", each the engine's number the answer below shows."""
    context = browser.new_context(viewport=PHONE)
    page = context.new_page()
    visit(page, site_url, path)
    root = page.locator(f'[data-calc="{name}"]').first
    wait_settled(page, root)
    for field, value in inputs.items():
        control = root.locator(f'[name="{field}"]')
        if control.evaluate("el => el.tagName") == "SELECT":
            control.select_option(value)
        else:
            control.fill(value)
            control.press("Tab")
        wait_settled(page, root)
    root.locator("select, input").first.scroll_into_view_if_needed()
    got = root.evaluate(STICKY)
    results = root.locator("[data-results]")
    verdict = results.locator('[data-output="verdict"]').inner_text()
    step = results.locator('[data-output="step_time"]').inner_text() if name == "plan" else ""
    mfu = results.locator('[data-output="mfu-1"]').inner_text() if name == "plan" else ""
    context.close()
    assert got["shown"] and not got["cut"], got
    match = re.fullmatch(says, got["text"])
    assert match, got["text"]
    if name == "plan":
        assert (match["step"], match["mfu"]) == (step, mfu)
    elif "used" in match.groupdict():
        assert match["used"] in verdict and match["memory"] in verdict, (got["text"], verdict)
