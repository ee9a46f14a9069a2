"""Issue 19's smaller items in the browser: no select's option is cut in the form ("0: plain data parallel
(noth" in a 250 px column), and the training-memory overhead table is compact, its formulas and sources behind a
closed disclosure (it was about 1,500 px tall with a citation inline in every row).

Every wait is on an explicit signal (``data-state``, ``data-seq``/``data-answered``, ``document.fonts.ready``),
never on time.
"""

from __future__ import annotations

import pytest

from browser_helpers import wait_calculators
from conftest import visit, wait_settled
from test_browser_layout import VIEWPORTS, _pages_with_every_calculator

pytestmark = pytest.mark.browser

ARROW_PX = 20
"""What a select keeps beside its text for the drop-down arrow (Chromium draws it inside the padding box)."""
MAX_OVERHEAD_TABLE_PX = 700

OPEN_MORE = """() => document.querySelectorAll('[data-calc] details').forEach(d => { d.open = true; })"""
# Every option whose text is wider than its select's content box less the arrow: the text is measured with a
# canvas 2D context in the select's computed font, once the page's fonts are loaded.
CUT_OPTIONS = """async arrow => {
  await document.fonts.ready;
  const ctx = document.createElement('canvas').getContext('2d');
  return [...document.querySelectorAll('[data-calc] select')].filter(s => s.getClientRects().length)
    .flatMap(s => {
      const cs = getComputedStyle(s);
      ctx.font = `${cs.fontStyle} ${cs.fontWeight} ${cs.fontSize} ${cs.fontFamily}`;
      const room = s.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight) - arrow;
      return [...s.options].map(o => [s.closest('[data-calc]').dataset.calc, s.name, o.value, o.text.trim(),
                                      Math.round(ctx.measureText(o.text.trim()).width), Math.floor(room)])
        .filter(x => x[4] > x[5]);
    });
}"""


@pytest.mark.parametrize("device", sorted(VIEWPORTS))
def test_every_option_fits_its_select(browser, site_url, site_pages, device: str) -> None:
    """At a laptop's and a phone's width, with every "More options" open, every option of every calculator's
    selects fits the select's content box: the long explanation is the field's help text, not the option."""
    context = browser.new_context(viewport=VIEWPORTS[device])
    page = context.new_page()
    cut = {}
    for path in _pages_with_every_calculator(site_pages):
        visit(page, site_url, path)
        wait_calculators(page)
        page.evaluate(OPEN_MORE)
        if found := page.evaluate(CUT_OPTIONS, ARROW_PX):
            cut[path] = found
    context.close()
    assert cut == {}, cut


OVERHEAD_TABLE = """root => {
  const table = root.querySelector('[data-results] table:has([data-output^="overhead_"])');
  const why = table && table.nextElementSibling?.matches('details.lc-why') ? table.nextElementSibling : null;
  const results = root.querySelector('[data-results]');
  return table && {
    height: Math.round(table.getBoundingClientRect().height),
    rows: table.tBodies[0].rows.length,
    inline: [...table.querySelectorAll('td')].filter(td => /Source:/.test(td.textContent)).length,
    why: why && {open: why.open, sources: (why.textContent.match(/Source:/g) || []).length,
                 summary: why.querySelector('summary')?.textContent,
                 focusable: why.querySelector('summary')?.tabIndex},
    scroller: getComputedStyle(table).overflowX,
    block_scrolls: results.scrollWidth > results.clientWidth + 0.5,
  };
}"""


def test_overhead_table_is_compact_with_sources_folded(browser, site_url) -> None:
    """At 1366 px on the defaults the training-memory overhead table is under 700 px tall, no cell cites a
    source, and every row's formula and source is in a closed "Why and sources" disclosure after it."""
    context = browser.new_context(viewport=VIEWPORTS["laptop"])
    page = context.new_page()
    visit(page, site_url, "memory/hidden/")
    root = page.locator('[data-calc="training-memory"]').first
    wait_settled(page, root)
    found = root.evaluate(OVERHEAD_TABLE)
    context.close()
    assert found, "no overhead table"
    assert found["height"] < MAX_OVERHEAD_TABLE_PX, found
    assert found["inline"] == 0, found
    assert found["scroller"] == "auto" and not found["block_scrolls"], found  # the table scrolls, not the answer
    assert found["why"] == {
        "open": False,
        "sources": found["rows"],
        "summary": "Why and sources",
        "focusable": 0,
    }, found


# A disclosure styled as Material's callout: a border or tinted background on the <details>, or an icon (a mask
# image, the pencil of "note") on its summary.
CALLOUTS = """selector => [...document.querySelectorAll(selector)].filter(d => d.getClientRects().length).map(d => {
  const box = getComputedStyle(d), icon = getComputedStyle(d.querySelector(':scope > summary'), '::before');
  const mask = icon.maskImage || icon.webkitMaskImage || 'none';
  return [d.querySelector(':scope > summary').textContent.trim().slice(0, 40), parseFloat(box.borderLeftWidth),
          box.backgroundColor, mask];
}).filter(([, border, background, mask]) => border > 0 || mask !== 'none'
          || !/^(transparent|rgba\\(0, 0, 0, 0\\))$/.test(background))"""


def test_calculator_disclosures_are_not_callouts(browser, site_url) -> None:
    """Issue 19: "More options" disclosures were styled as note callouts with a pencil icon. Every disclosure in a
    calculator is plain; the check does see a callout, as the prose's own collapsible notes are."""
    context = browser.new_context(viewport=VIEWPORTS["laptop"])
    page = context.new_page()
    visit(page, site_url, "parallelism/zero/")
    wait_calculators(page)
    page.evaluate(OPEN_MORE)
    in_calculators = page.evaluate(CALLOUTS, "[data-calc] details")
    in_prose = page.evaluate(CALLOUTS, ".md-content details:not([data-calc] details)")
    context.close()
    assert in_calculators == [], in_calculators
    assert in_prose, "the check no longer recognises a callout"
