"""Print: the interview and mistakes pages print as a cheat sheet, one A4 page per ``h2`` section.

Each question (interview) carries a short print-only ``.lc-print-summary`` (print.css shows it, theme.css hides it on
screen) and print hides the long answers. A mistake says itself once: its first paragraph, the mistake and why it
is wrong, is what prints and what the screen shows; print hides its links and calculators. Every section fits one
sheet.
"""

from __future__ import annotations

import re

import pytest

from browser_helpers import wait_calculators
from conftest import visit

pytestmark = pytest.mark.browser

CHEAT_SHEETS = ["interview/", "mistakes/"]

SECTIONS_JS = """() => {
  const shown = el => !!el && el.getClientRects().length > 0 && getComputedStyle(el).visibility !== 'hidden';
  const article = document.querySelector('.md-content__inner');
  const h2 = [...article.querySelectorAll(':scope > h2')];
  // An item is a question (a collapsed answer, <details>) on the interview page, a mistake (an h2) on the other.
  const interview = !!article.querySelector(':scope > h1#interview');
  const items = interview ? [...article.querySelectorAll(':scope > details')] : h2;
  const summaryOf = item => item.tagName === 'DETAILS'
    ? item.querySelector(':scope > .lc-print-summary')
    : (() => {  // a mistake's summary: its first paragraph (h2 + p), the mistake and why it is wrong
        const p = item.nextElementSibling;
        return p && p.tagName === 'P' && p.textContent.includes('Why it is wrong') ? p : null;
      })();
  const bodies = interview
    ? [...article.querySelectorAll(':scope > details > :not(summary, .lc-print-summary)')]
    : [...article.querySelectorAll(':scope > :not(h1, h2, h2 + p, .lc-print-summary, h1 + p)')];
  return {
    sections: h2.length,
    items: items.map(item => ({id: item.tagName === 'DETAILS' ? item.previousElementSibling.id : item.id,
                               summary: summaryOf(item) ? summaryOf(item).textContent.trim() : null,
                               shown: shown(summaryOf(item))})),
    bodies: bodies.length,
    shownBodies: bodies.filter(shown).map(el => el.tagName + '.' + el.className),
    summariesShown: [...article.querySelectorAll('.lc-print-summary')].filter(shown).length,
  };
}"""


def _pdf_pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf))


@pytest.fixture
def cheat_sheet(browser, site_url, request):
    context = browser.new_context()
    page = context.new_page()
    visit(page, site_url, request.param)  # in place: every calculator mounted, all math typeset
    wait_calculators(page)  # and the calculators settled, so nothing changes size while printing
    page.wait_for_load_state("load")
    yield page
    context.close()


@pytest.mark.parametrize("cheat_sheet", CHEAT_SHEETS, indirect=True)
def test_each_section_prints_on_one_a4_page(cheat_sheet) -> None:
    page = cheat_sheet
    page.emulate_media(media="print")
    shown = page.evaluate(SECTIONS_JS)
    pdf = page.pdf(format="A4")
    assert shown["sections"] >= 3, shown
    missing = [item["id"] for item in shown["items"] if not item["summary"] or not item["shown"]]
    assert missing == [], missing  # every question / mistake prints its summary
    assert shown["bodies"] > 0 and shown["shownBodies"] == [], shown  # the long answers stay on screen
    # print.css starts every h2 after the first on a new page, so pages >= sections; equal means one page each.
    assert _pdf_pages(pdf) == shown["sections"], (_pdf_pages(pdf), shown["sections"])


@pytest.mark.parametrize("cheat_sheet", CHEAT_SHEETS, indirect=True)
def test_summaries_are_print_only(cheat_sheet) -> None:
    """On screen the page is unchanged: no summary shows, every answer body is there to expand."""
    page = cheat_sheet
    page.emulate_media(media="screen")
    shown = page.evaluate(SECTIONS_JS)
    assert all(item["summary"] for item in shown["items"]), shown
    assert shown["summariesShown"] == 0, shown
