"""Phones: at 390 px no page scrolls sideways; wide tables, display math and figures stay in their boxes."""

from __future__ import annotations

import re

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
    """Every figure and diagram is drawn no wider than the content column, or, a diagram kept at its natural size
    so its text stays legible (issue 19), inside a box no wider than the column that scrolls sideways."""
    path = next(p for p in sorted(site_pages) if "lc-diagram" in site_pages[p])
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    page.goto(f"{site_url}/{path}")
    boxes = page.evaluate(
        """() => [...document.querySelectorAll('.md-typeset figure svg, .md-typeset img')]
             .filter(el => el.getClientRects().length)
             .map(el => { const box = el.closest('.lc-diagram');
               return {w: (box || el).getBoundingClientRect().width, col: el.closest('.md-typeset').clientWidth,
                       scrolls: !box || ['auto', 'scroll'].includes(getComputedStyle(box).overflowX)}; })"""
    )
    context.close()
    assert boxes, path
    assert all(b["w"] <= b["col"] + 0.5 and b["scrolls"] for b in boxes), boxes


def test_pipeline_schedules_stay_legible_on_a_phone(browser, site_url) -> None:
    """Each pipeline schedule figure either scales into the column or scrolls inside its own box, and when it
    scales its text is not shrunk below a legible size (the SVG is drawn at least half its natural width)."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT})
    page = context.new_page()
    page.goto(f"{site_url}/parallelism/pipeline/")
    figures = page.evaluate(
        """() => [...document.querySelectorAll('.md-typeset figure[id^="figure-pp-"]')].map(fig => {
             const svg = fig.querySelector('svg');
             const natural = svg.viewBox && svg.viewBox.baseVal ? svg.viewBox.baseVal.width : 0;
             return {id: fig.id, box: fig.getBoundingClientRect().width, col: fig.closest('.md-typeset').clientWidth,
                     drawn: svg.getBoundingClientRect().width, natural, scrolls: fig.scrollWidth > fig.clientWidth,
                     overflow: getComputedStyle(fig).overflowX};
           })"""
    )
    page_width = page.evaluate("() => document.documentElement.scrollWidth")
    context.close()
    assert len(figures) >= 3, figures
    assert page_width <= WIDTH
    for f in figures:
        assert f["box"] <= f["col"] + 0.5, f  # the figure's box never leaves the column
        if f["scrolls"]:
            assert f["overflow"] in ("auto", "scroll"), f  # too wide: it scrolls inside its box
        else:
            assert f["drawn"] <= f["col"] + 0.5, f  # scaled into the column
            assert not f["natural"] or f["drawn"] >= min(f["natural"], f["col"]) / 2, f  # not shrunk to illegible


def _pdf_pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?![s\w])", pdf))


@pytest.mark.parametrize("path", ["interview/", "mistakes/"])
def test_study_pages_print_as_a_cheat_sheet(browser, site_url, path: str) -> None:
    """Print media (print.css): no chrome, collapsed answers open, each section on its own page(s)."""
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{site_url}/{path}")
    page.emulate_media(media="print")
    shown = page.evaluate(
        """() => {
             const visible = el => !!el && el.getClientRects().length > 0
               && getComputedStyle(el).visibility !== 'hidden';
             const chrome = ['.md-header', '.md-sidebar--primary', '.md-sidebar--secondary', '.md-footer', '.md-search',
                             '.md-tabs'].filter(sel => visible(document.querySelector(sel)));
             // a calculator's form is not printed at all; a cheat sheet's answer prints as its summary (test_print)
             const answers = [...document.querySelectorAll('.md-typeset details > :not(summary)')]
               .filter(el => !el.closest('.lc-calc form') && visible(el.parentElement))  // in a printed block
               .filter(el => !el.closest('.md-content__inner:has(> h1#interview)') || el.matches('.lc-print-summary'));
             const forms = [...document.querySelectorAll('.lc-calc form')].filter(visible).length;
             const results = [...document.querySelectorAll('.lc-calc [data-results]')]
               .filter(el => visible(el.closest('.lc-calc')));  // a printed calculator prints its results
             const h2 = [...document.querySelectorAll('.md-typeset h2')];
             return {chrome, answers: answers.length, openAnswers: answers.filter(visible).length,
                     sections: h2.length, forms, results: results.length,
                     shownResults: results.filter(visible).length,
                     breaks: h2.slice(1).filter(h => getComputedStyle(h).breakBefore === 'page').length};
           }"""
    )
    pdf = page.pdf(format="A4")
    context.close()
    assert shown["chrome"] == [], shown
    assert shown["openAnswers"] == shown["answers"], shown  # a cheat sheet prints its answers
    assert shown["forms"] == 0 and shown["shownResults"] == shown["results"], shown  # calculators: results only
    assert shown["breaks"] == shown["sections"] - 1, shown  # every section after the first starts a page
    pages = _pdf_pages(pdf)
    assert shown["sections"] <= pages, (pages, shown)
