"""Issue 19, item 6: on a phone the sticky one-line verdict under the form jumps to the answer, and the answer's
verdict lands in view below the site header, not under it.

Every wait is on an explicit signal (``data-state``, ``data-seq``/``data-answered``, the ``scrollend`` event).
"""

from __future__ import annotations

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
    assert jump.inner_text() == " ".join(verdict.inner_text().split()) + " ↓"
    root.evaluate(JUMP)
    place = root.evaluate(PLACE)
    context.close()
    assert place["verdict"] >= place["header"], place  # the verdict's first line is not under the header
    assert place["verdict"] < PHONE["height"] / 2, place  # and it is at the top of the screen
    assert watch.errors == [], watch.errors
