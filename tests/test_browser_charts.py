"""Charts in the browser: pre-rendered SVG with JavaScript off, live vega-embed renderings after boot that follow
the reader's inputs and the palette switch, all under the site's Content-Security-Policy (no eval)."""

from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from browser_helpers import reveal_charts, wait_calculators
from calc import format_bytes, model_state_bytes
from calc.guide.charts import THEMES
from conftest import READY_TIMEOUT_MS, visit, wait_settled

pytestmark = pytest.mark.browser

PAGES = {
    # page: the charts its calculators and its prose ([[chart NAME]]) show, in order
    "": ["memory-breakdown", "zero-scaling"],
    "memory/activations/": ["activations-by-sequence", "memory-breakdown", "activations-curve"],
    "memory/inference/": ["memory-breakdown"],
    "communication/": ["exposed-time"],
    "plan/": ["layout-comparison", "exposed-time"],
}
COLLECT = """window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e =>
  window.__cspViolations.push([e.violatedDirective, e.blockedURI, e.sourceFile, e.lineNumber].join(' ')));"""
ALL_LIVE = """scheme => { const figs = [...document.querySelectorAll('[data-chart]')];
  return figs.length > 0 && figs.every(f => f.dataset.chartState === 'live' && f.dataset.chartScheme === scheme
    && f.querySelector('.lc-chart__live svg')); }"""
CHART_STATES = """() => [...document.querySelectorAll('[data-chart]')].map(f => [f.dataset.chart, f.dataset.chartState,
  f.dataset.chartScheme || null, f.dataset.chartError || null])"""
BLANK_COUNTER = """root => { window.__blankCharts = 0; new MutationObserver(() => {
  for (const f of root.querySelectorAll('[data-chart]'))
    if (!f.querySelector('.lc-chart__view svg')) window.__blankCharts++;
}).observe(root, {subtree: true, childList: true, attributes: true}); }"""
ZERO_SCALING_SAYS = """([root, text]) => { const f = root.querySelector('[data-chart="zero-scaling"]');
  return f && f.dataset.chartState === 'live' && f.textContent.includes(text); }"""
TEXT_FILLS = (
    """() => [...document.querySelectorAll('[data-chart] .lc-chart__live svg text')].map(t => t.getAttribute('fill'))"""
)


def _wait_all_live(page, scheme: str = "default") -> None:
    reveal_charts(page)  # a chart is drawn live once it has come near the viewport
    try:
        page.wait_for_function(ALL_LIVE, arg=scheme, timeout=READY_TIMEOUT_MS)
    except PlaywrightTimeout:
        raise AssertionError(f"charts not live in {scheme}: {page.evaluate(CHART_STATES)}") from None


def _wait_zero_scaling_says(page, root, text: str) -> None:
    """Wait until the ZeRO-scaling chart in ``root`` is live and shows ``text``."""
    page.wait_for_function(ZERO_SCALING_SAYS, arg=[root.element_handle(), text], timeout=READY_TIMEOUT_MS)


def test_charts_are_there_without_javascript(browser, site_url) -> None:
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    for path, names in PAGES.items():
        page.goto(f"{site_url}/{path}")
        figures = page.locator("[data-chart]")
        assert [figures.nth(i).get_attribute("data-chart") for i in range(figures.count())] == names, path
        for i in range(figures.count()):
            figure = figures.nth(i)
            assert figure.get_attribute("data-chart-state") == "prerendered"
            light, dark = figure.locator('svg[data-scheme="default"]'), figure.locator('svg[data-scheme="slate"]')
            assert light.is_visible() and not dark.is_visible(), (path, i)
            box = light.bounding_box()
            assert box and box["width"] > 200 and box["height"] > 40, (path, i, box)
            view = figure.locator(".lc-chart__view")
            assert view.get_attribute("role") == "img" and view.get_attribute("aria-label"), (path, i)
    context.close()


def test_every_chart_goes_live_after_boot(session, site_url) -> None:
    page, _ = session
    page.add_init_script(COLLECT)
    for path, names in PAGES.items():
        visit(page, site_url, path)
        wait_calculators(page)
        _wait_all_live(page)
        assert [f[0] for f in page.evaluate(CHART_STATES)] == names, path
        assert page.evaluate("() => window.__cspViolations") == [], path


def test_chart_rerenders_when_an_input_changes(session, site_url) -> None:
    page, _ = session
    page.add_init_script(COLLECT)
    page.goto(f"{site_url}/")
    wait_settled(page, "will-it-fit")
    _wait_all_live(page)
    root = page.locator('[data-calc="will-it-fit"]').first
    assert "you: ZeRO-0, dp 1" in root.locator('[data-chart="zero-scaling"] .lc-chart__live svg').text_content()
    # Results patched in place keep the previous chart standing until the new one is drawn: never a blank view
    # (the counter's observer is created after charts.mjs's, so it sees each mutation once charts.mjs handled it).
    page.evaluate(BLANK_COUNTER, root.element_handle())
    root.locator('[name="dp"]').fill("2")
    wait_settled(page, root)
    _wait_zero_scaling_says(page, root, "you: ZeRO-0, dp 2")
    assert page.evaluate("() => window.__blankCharts") == 0
    root.locator('[name="zero_stage"]').select_option("3")
    root.locator('[name="dp"]').fill("64")
    wait_settled(page, root)
    _wait_zero_scaling_says(page, root, "you: ZeRO-3, dp 64")
    memory = root.locator('[data-chart="memory-breakdown"]')
    assert memory.get_attribute("data-chart-state") == "live"
    expected = format_bytes(model_state_bytes("7B", zero_stage=3, dp=64).total)
    assert f"Memory per GPU: {expected} of the H100" in memory.locator(".lc-chart__view").get_attribute("aria-label")
    assert page.evaluate("() => window.__cspViolations") == []


def test_charts_follow_the_palette_switch(session, site_url) -> None:
    page, _ = session
    page.add_init_script(COLLECT)
    page.goto(f"{site_url}/memory/activations/")
    wait_calculators(page)
    _wait_all_live(page, "default")
    assert THEMES["default"]["axis"]["labelColor"] in page.evaluate(TEXT_FILLS)
    toggle = page.locator("[data-md-component=palette] label:visible").first
    toggle.click()
    page.wait_for_function("() => document.body.dataset.mdColorScheme === 'slate'")
    _wait_all_live(page, "slate")
    fills = page.evaluate(TEXT_FILLS)
    assert THEMES["slate"]["axis"]["labelColor"] in fills and THEMES["default"]["axis"]["labelColor"] not in fills
    page.locator("[data-md-component=palette] label:visible").first.click()
    _wait_all_live(page, "default")
    assert page.evaluate("() => window.__cspViolations") == []
