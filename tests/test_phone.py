"""Phones: at 390 px no page scrolls sideways; wide tables, display math and figures stay in their boxes."""

from __future__ import annotations

import pytest

from browser_helpers import wait_calculators
from conftest import Watch, visit

pytestmark = pytest.mark.browser

WIDTH, HEIGHT = 390, 844


def test_no_page_wider_than_a_phone(browser, site_url, site_pages) -> None:
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    watch = Watch(context, site_url)
    page = context.new_page()
    watch.attach(page)
    too_wide = {}
    for path in sorted(site_pages):
        visit(page, site_url, path)
        wait_calculators(page)  # live results are in the DOM, so their tables are measured too
        assert page.evaluate("() => document.documentElement.clientWidth") == WIDTH
        width = page.evaluate("() => document.documentElement.scrollWidth")
        if width > WIDTH:
            too_wide[path] = width
    context.close()
    assert too_wide == {}, too_wide
    assert watch.errors == [], watch.errors


def test_figures_scale_to_the_screen(browser, site_url, site_pages) -> None:
    """Every figure and diagram is drawn no wider than the content column, keeping its aspect ratio."""
    path = next(p for p in sorted(site_pages) if "lc-diagram" in site_pages[p])
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    page.goto(f"{site_url}/{path}")
    boxes = page.evaluate(
        """() => [...document.querySelectorAll('.md-typeset figure svg, .md-typeset img')]
             .filter(el => el.getClientRects().length)
             .map(el => ({w: el.getBoundingClientRect().width, col: el.closest('.md-typeset').clientWidth}))"""
    )
    context.close()
    assert boxes, path
    assert all(b["w"] <= b["col"] + 0.5 for b in boxes), boxes
