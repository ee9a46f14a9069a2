"""Issue 19's layout in the browser: at a laptop's and a phone's width every calculator's key outputs are on
screen, every live chart label is at least 11 px, every tap target at least 24 px; a shared link never shows a
verdict for other inputs, even with a slow worker; a pasted config.json is the Model select's choice.

Every wait is on an explicit signal (``data-state``, ``data-seq``/``data-answered``, ``data-chart-state``, a
held worker reply), never on time.
"""

from __future__ import annotations

import re

import pytest

from browser_helpers import reveal_charts, wait_calculators
from conftest import READY_TIMEOUT_MS, Watch, visit, wait_settled
from test_browser_runtime import INSTRUMENT

pytestmark = pytest.mark.browser

VIEWPORTS = {"laptop": {"width": 1366, "height": 900}, "phone": {"width": 390, "height": 844}}
MIN_LABEL_PX = 11
MIN_TARGET_PX = 24

# Outputs a reader must see without scrolling sideways: everything outside a breakdown table (the verdict, the
# key figures), and the planner's ranking (laid out to fit). A breakdown table may scroll inside its own box.
OFF_SCREEN = """root => {
  const width = document.documentElement.clientWidth;
  const seen = el => el.getClientRects().length && !el.closest('details:not([open])');
  const ranking = el => !!el.closest('table')?.querySelector('td > [data-output^="mfu-"]');
  return [...root.querySelectorAll('[data-results] [data-output]')].filter(seen)
    .filter(el => !el.closest('table') || ranking(el))
    .map(el => { const r = el.getBoundingClientRect();
      return [el.dataset.output, Math.round(r.left), Math.round(r.right)]; })
    .filter(([, left, right]) => left < 0 || right > width + 0.5);
}"""
# The drawn size of each live chart's text: its font size times the SVG's scale on screen.
LABEL_SIZES = """() => [...document.querySelectorAll('[data-chart] .lc-chart__live svg')]
  .filter(s => s.getClientRects().length)
  .flatMap(svg => { const natural = Number(svg.getAttribute('width')) || svg.viewBox.baseVal.width;
    const scale = svg.getBoundingClientRect().width / natural;
    return [...svg.querySelectorAll('text')].filter(t => t.textContent.trim())
      .map(t => [svg.closest('[data-chart]').dataset.chart, t.textContent.slice(0, 30),
                 Math.round(parseFloat(getComputedStyle(t).fontSize) * scale * 10) / 10]); })"""
# Result tables wider than their box (they scroll sideways). On a laptop none may: the communication table's Time
# column and its Total were scrolled out of a 1366 px window, its label column one word a line (rows 201 px tall).
WIDE_TABLES = """root => [...root.querySelectorAll('[data-results] table.lc-table')]
  .filter(t => t.getClientRects().length && !t.closest('details:not([open])') && t.scrollWidth > t.clientWidth + 0.5)
  .map(t => [t.clientWidth, t.scrollWidth, t.querySelector('th')?.textContent])"""
ALL_CHARTS_LIVE = """() => [...document.querySelectorAll('[data-chart]')].filter(f => f.getClientRects().length)
  .every(f => f.dataset.chartState === 'live' || f.dataset.chartState === 'error')"""
# Buttons, links and controls of the calculators (not links inside running text, which WCAG 2.5.8 exempts).
SMALL_TARGETS = """min => [...document.querySelectorAll('.lc-calc :is(button, select, summary, .md-button, '
    + '.lc-calc__accuracy, input:not([type=checkbox]):not([type=file]))')]
  .filter(el => el.getClientRects().length && getComputedStyle(el).visibility !== 'hidden')
  .map(el => { const r = el.getBoundingClientRect();
    return [el.closest('[data-calc]').dataset.calc, el.tagName, (el.textContent || el.name || '').trim().slice(0, 30),
            Math.round(r.height * 10) / 10]; })
  .filter(x => x[3] < min)"""


def _pages_with_every_calculator(site_pages: dict[str, str]) -> list[str]:
    from calc.widgets import calculators

    wanted, plan = set(calculators()), []
    by_page = {p: set(re.findall(r'data-calc="([^"]+)"', h)) for p, h in site_pages.items()}
    while wanted:
        path = max(sorted(by_page), key=lambda p: len(by_page[p] & wanted))
        assert by_page[path] & wanted, f"calculators on no page: {wanted}"
        plan.append(path)
        wanted -= by_page[path]
    return plan


@pytest.mark.parametrize("device", sorted(VIEWPORTS))
def test_key_outputs_charts_and_targets_fit(browser, site_url, site_pages, device: str) -> None:
    viewport = VIEWPORTS[device]
    context = browser.new_context(viewport=viewport)
    watch = Watch(context, site_url)
    page = context.new_page()
    watch.attach(page)
    off_screen, small_labels, small_targets, wide_tables = {}, {}, {}, {}
    for path in _pages_with_every_calculator(site_pages):
        visit(page, site_url, path)
        wait_calculators(page)
        reveal_charts(page)  # charts are drawn live once near the viewport
        page.wait_for_function(ALL_CHARTS_LIVE, timeout=READY_TIMEOUT_MS)
        for root in page.locator("[data-calc]").all():
            if found := root.evaluate(OFF_SCREEN):
                off_screen[(path, root.get_attribute("data-calc"))] = found[:5]
            if device == "laptop" and (found := root.evaluate(WIDE_TABLES)):
                wide_tables[(path, root.get_attribute("data-calc"))] = found
        if small := [x for x in page.evaluate(LABEL_SIZES) if x[2] < MIN_LABEL_PX]:
            small_labels[path] = small[:5]
        if small := page.evaluate(SMALL_TARGETS, MIN_TARGET_PX):
            small_targets[path] = small[:5]
    context.close()
    assert off_screen == {}, off_screen
    assert wide_tables == {}, wide_tables
    assert small_labels == {}, small_labels
    assert small_targets == {}, small_targets
    assert watch.errors == [], watch.errors


# What the reader sees of the answer, recorded on every change until the live answer for the link has come: the
# verdict's text if one is visible, and the pending line's.
SEEN_LOG = """root => {
  window.__seen = [];
  const results = root.querySelector('[data-results]');
  const record = () => {
    const verdict = results.querySelector('[data-output="verdict"]');
    const pending = root.querySelector('[data-pending]');
    window.__seen.push({
      verdict: verdict && verdict.getClientRects().length ? verdict.textContent : null,
      pending: pending && !pending.hidden ? pending.textContent : null,
      answered: root.dataset.answered ?? null, seq: root.dataset.seq,
    });
  };
  record();
  new MutationObserver(record).observe(root, {subtree: true, childList: true, characterData: true, attributes: true});
}"""


CALC_MJS = "**/assets/javascripts/calc.mjs*"
COVER = "a => getComputedStyle(a, '::before').content"
"""The cover's notice at the top of a calculator's answer before calc.mjs mounts ("none" where there is none)."""


def _open_before_mount(page, url: str):
    """Open ``url`` with calc.mjs's request held (nothing mounts) and wait until the page is parsed and styled;
    returns the function that lets calc.mjs load."""
    held = []

    def hold(route) -> None:
        held.append(route)  # the module is not answered: nothing mounts

    page.route(CALC_MJS, hold)
    with page.expect_request(CALC_MJS):
        page.goto(url, wait_until="commit")
    page.wait_for_function("() => document.readyState !== 'loading'")  # parsed, its stylesheets applied

    def release() -> None:
        for route in held:
            route.continue_()
        page.unroute(CALC_MJS)

    return release


def test_a_shared_link_never_shows_a_verdict_for_other_inputs(browser, site_url) -> None:
    """Issue 19: a link's inputs (70B, ZeRO-3, dp 64) stood beside the build's verdict for the defaults ("7B …
    dp=1") for seconds. With the worker's replies held, the answer reads "Computing 70B · ZeRO-3 · dp 64…" at its
    top and no verdict is visible until the live one, which is for the link's inputs. Before calc.mjs mounts (held
    here by holding its request), the build's answer for the defaults is hidden from the first paint and the answer
    says "Computing the numbers from the link…" at its top (site-base.js marks the document, calc.css hides it)."""
    context = browser.new_context()
    context.add_init_script(INSTRUMENT + "\nwindow.__lc.hold = true;")
    watch = Watch(context, site_url)
    page = context.new_page()
    watch.attach(page)
    release = _open_before_mount(page, f"{site_url}/?will-it-fit.params=70B&will-it-fit.zero_stage=3&will-it-fit.dp=64")
    root = page.locator('[data-calc="will-it-fit"]').first
    assert root.get_attribute("data-mounted") is None
    assert root.locator('[data-output="verdict"]').is_hidden()  # the build's "Does not fit: 7B … dp=1"
    assert root.locator("[data-chart]").first.is_hidden()
    assert root.locator(".lc-calc__answer").evaluate(COVER) == '"Computing the numbers from the link…"'
    release()
    page.wait_for_function("() => !!document.querySelector('[data-calc=\"will-it-fit\"][data-mounted]')")
    root.evaluate(SEEN_LOG)
    pending = root.locator("[data-pending]")
    assert pending.is_visible()
    assert pending.inner_text() == "Computing 70B · ZeRO-3 · dp 64…"
    assert root.locator('[data-output="verdict"]').is_hidden()
    assert root.locator("[data-chart]").first.is_hidden()  # the build's chart for the defaults too
    # The engine boots; its reply for the link is held until the checks above are done, then delivered.
    page.wait_for_function("() => window.__lc.held.length > 0", timeout=READY_TIMEOUT_MS)
    assert root.locator('[data-output="verdict"]').is_hidden()
    page.evaluate("() => { window.__lc.hold = false; window.__lc.release(); }")
    wait_settled(page, root)
    seen = page.evaluate("() => window.__seen")
    context.close()
    shown = [s["verdict"] for s in seen if s["verdict"] is not None]
    assert shown, seen
    assert all("70B" in v and "ZeRO-3" in v for v in shown), shown  # only ever the link's verdict
    assert seen[-1]["pending"] is None
    assert watch.errors == [], watch.errors


@pytest.mark.parametrize(
    ("path", "linked", "other"),
    [("memory/", "will-it-fit-2", "will-it-fit"), ("memory/activations/", "training-memory", "activations")],
)
def test_a_shared_link_covers_only_the_calculator_it_sets(browser, site_url, path, linked, other) -> None:
    """Issue 19: on a page with several calculators, a link carrying one calculator's inputs hid every
    calculator's answer until calc.mjs mounted. Only the linked one is covered; the others, whose pre-rendered
    answers are for the inputs they show, stay visible."""
    context = browser.new_context()
    page = context.new_page()
    release = _open_before_mount(page, f"{site_url}/{path}?{linked}.seq_len=2048")
    covered, shown = (page.locator(f'[data-calc-id="{calc_id}"]') for calc_id in (linked, other))
    got = {
        name: (
            root.get_attribute("data-mounted"),
            root.locator("[data-results]").is_visible(),
            root.locator(".lc-calc__answer").evaluate(COVER),
        )
        for name, root in (("linked", covered), ("other", shown))
    }
    release()
    context.close()
    assert got == {
        "linked": (None, False, '"Computing the numbers from the link…"'),
        "other": (None, True, "none"),
    }, got


def test_a_pasted_config_is_the_model_selects_choice(browser, site_url) -> None:
    """Issue 19: after a config.json was pasted the Model select still read "Llama 3 8B". It reads "From
    config.json", with a chip summing the config up (the engine's type · parameters · layers · attention ·
    vocabulary) and a button that clears it back to the preset."""
    config = (
        '{"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,'
        ' "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}'
    )
    context = browser.new_context()
    page = context.new_page()
    visit(page, site_url, "memory/activations/")
    root = page.locator('[data-calc="training-memory"]').first
    wait_settled(page, root)
    select = root.locator('[name="preset"]')
    before = select.input_value()
    root.locator('[name="config"]').fill(config)
    wait_settled(page, root)
    assert select.evaluate("el => el.selectedOptions[0].textContent") == "From config.json"
    chip = root.locator("[data-config-chip]")
    assert chip.is_visible()
    # the engine's line once it answered (item 8a): the parameter count as the Parameters box writes it
    assert "llama · 1.5B parameters · 16 layers · GQA, 32 heads / 8 KV · vocabulary 128,256" in chip.inner_text()
    assert "preset=" not in page.url or f"preset={before}" in page.url  # the link keeps the preset it replaced
    chip.get_by_role("button").click()
    wait_settled(page, root)
    assert root.locator('[name="config"]').input_value() == ""
    assert select.input_value() == before and chip.is_hidden()
    context.close()


def test_one_unit_switch_on_a_fresh_visit(browser, site_url) -> None:
    """Issue 19, item 8b: on a fresh visit the header's switch read GB while the activations calculator showed
    "552 MiB" (its unit defaulted to GiB) beside training memory in GB. Every calculator reads the switch's unit."""
    context = browser.new_context()
    page = context.new_page()
    visit(page, site_url, "memory/activations/")
    wait_calculators(page)
    switch = page.locator("[data-unit-switch]").input_value()
    units = {
        root.get_attribute("data-calc"): root.locator('[name="unit"]').input_value()
        for root in page.locator("[data-calc]").all()
        if root.locator('[name="unit"]').count()
    }
    total = page.locator('[data-calc="activations"] [data-results] [data-output="total"]').first.inner_text()
    context.close()
    assert "activations" in units and units == dict.fromkeys(units, switch), (switch, units)
    assert re.fullmatch(r"[\d.,]+ [kMGT]?B", total), total  # decimal units, as the switch says


# The planner ranking's header cells that overflow their box, and each row's state sub-line: its text and the
# number of lines it is drawn on.
RANKING = """root => {
  const table = [...root.querySelectorAll('table')].find(t => t.querySelector('td > [data-output^="mfu-"]'));
  const card = root.getBoundingClientRect();
  const lines = el => { const r = document.createRange(); r.selectNodeContents(el);
    return new Set([...r.getClientRects()].filter(x => x.width).map(x => Math.round(x.top))).size; };
  return {
    overflow: [...table.querySelectorAll('thead th')].filter(th => th.getClientRects().length)
      .map(th => [th.textContent, th.scrollWidth, th.clientWidth, Math.round(th.getBoundingClientRect().right)])
      .filter(([, scroll, client, right]) => scroll > client + 1 || right > card.right + 0.5),
    peak: table.querySelector('thead th:nth-child(4) abbr')?.title ?? null,
    states: [...table.querySelectorAll('tbody td:nth-child(3)')].map(td => [td.textContent, lines(td)]),
  };
}"""


@pytest.mark.parametrize("device", sorted(VIEWPORTS))
def test_the_planners_ranking_row_fits_and_reads_in_words(browser, site_url, device: str) -> None:
    """Issue 19, item 1: "Peak memory" overflowed its 72 px cell past the card's edge at 1366 px, and on a phone
    the sub-line "ZeRO-2, none, mb 1, v 40" wrapped to four lines with "none" unlabelled. The header fits its
    cell (Peak, the whole name in its title) and the sub-line names each part in words on at most two lines."""
    context = browser.new_context(viewport=VIEWPORTS[device])
    page = context.new_page()
    visit(page, site_url, "plan/")
    root = page.locator('[data-calc="plan"]').first
    wait_settled(page, root)
    got = root.evaluate(RANKING)
    context.close()
    assert got["overflow"] == [], got["overflow"]
    assert got["peak"] == "Peak memory per GPU"
    assert got["states"], got
    words = r"ZeRO-\d · (no|selective|per-op selective|full) recompute · micro-batch \d+ · interleave \d+"
    assert [s for s, _ in got["states"] if not re.fullmatch(words, s)] == [], got["states"]
    assert [s for s in got["states"] if s[1] > 2] == [], got["states"]


# The pipeline diagram's text as drawn: each <text>'s font size times the SVG's scale on screen, and whether the
# figure (its scrolling box) stays inside the page.
PIPELINE_TEXT = """root => { const svg = root.querySelector('[data-output="schedule"] svg');
  const natural = Number(svg.getAttribute('width')) || svg.viewBox.baseVal.width;
  const scale = svg.getBoundingClientRect().width / natural;
  const box = svg.closest('figure').getBoundingClientRect();
  return {texts: [...svg.querySelectorAll('text')].filter(t => t.textContent.trim())
      .map(t => [t.textContent.slice(0, 20), Math.round(parseFloat(getComputedStyle(t).fontSize) * scale * 10) / 10]),
    inside: box.left >= 0 && box.right <= document.documentElement.clientWidth + 0.5}; }"""


@pytest.mark.parametrize("device", sorted(VIEWPORTS))
def test_the_pipeline_diagram_text_is_readable_at_any_size(browser, site_url, device: str) -> None:
    """Issue 19 item 7c: the p = 8, m = 32 schedule (over 1,200 px wide) was scaled into the column, its text
    3.8-4.4 px on a laptop and 2 px on a phone. It keeps its natural 11 px and scrolls sideways in its box."""
    context = browser.new_context(viewport=VIEWPORTS[device])
    page = context.new_page()
    page.goto(f"{site_url}/parallelism/pipeline/?pipeline-bubble.pp=8&pipeline-bubble.num_microbatches=32")
    root = page.locator('[data-calc="pipeline-bubble"]').first
    wait_settled(page, root)
    drawn = root.evaluate(PIPELINE_TEXT)
    context.close()
    texts = drawn["texts"]
    assert "Stage 8" in [t for t, _ in texts]  # the link's schedule is drawn
    assert [x for x in texts if x[1] < MIN_LABEL_PX] == []
    assert drawn["inside"]  # the page does not scroll sideways: the box does


# Every prose figure's text as drawn (the build's [[figure]] diagrams): the smallest drawn size per figure, whether
# each figure's box stays inside the page and its drawing starts inside the box, and whether the page scrolls sideways.
PROSE_FIGURES = """() => ({
  figures: [...document.querySelectorAll('.md-typeset figure.lc-diagram')].map(figure => {
    const svg = figure.querySelector('svg');
    const natural = Number(svg.getAttribute('width')) || svg.viewBox.baseVal.width;
    const scale = svg.getBoundingClientRect().width / natural;
    const sizes = [...svg.querySelectorAll('text')].filter(t => t.textContent.trim())
      .map(t => parseFloat(getComputedStyle(t).fontSize) * scale);
    const box = figure.getBoundingClientRect();
    return [figure.id, Math.round(Math.min(...sizes) * 10) / 10,
            box.left >= 0 && box.right <= document.documentElement.clientWidth + 0.5,
            svg.getBoundingClientRect().left >= box.left - 0.5,  // what overflows can be scrolled to
            figure.scrollWidth > figure.clientWidth,  // it scrolls
            figure.getAttribute('tabindex')];  // "0" when it scrolls: a keyboard reader scrolls it with the arrows
  }),
  page_scrolls: document.documentElement.scrollWidth > document.documentElement.clientWidth,
})"""


@pytest.mark.parametrize("device", sorted(VIEWPORTS))
@pytest.mark.parametrize("path", ["parallelism/pipeline/", "memory/conventions/"])
def test_the_prose_figures_are_readable_on_a_phone(browser, site_url, path: str, device: str) -> None:
    """Issue 19: the guide's pre-rendered pipeline schedules were scaled into a phone's column, their 11 px text
    drawn at 5-8 px (the conventions' bars at 4.8 px). At 390 px every prose figure's text is at least 11 px: the
    figure keeps its natural size in a box that scrolls sideways, as the calculator's diagram does, and the page
    does not scroll sideways; a box that scrolls is in the tab order (a11y.js). On a laptop all but the widest
    schedule fit the column whole."""
    context = browser.new_context(viewport=VIEWPORTS[device])
    page = context.new_page()
    page.goto(f"{site_url}/{path}")
    drawn = page.evaluate(PROSE_FIGURES)
    context.close()
    figures = drawn["figures"]
    assert figures, "no prose figure on the page"
    assert [f for f in figures if f[1] < MIN_LABEL_PX or not (f[2] and f[3])] == [], figures
    assert not drawn["page_scrolls"]
    assert [f for f in figures if f[4] and f[5] != "0"] == [], figures  # axe: scrollable-region-focusable
    if device == "laptop":  # only the widest schedule (interleaved, 57 time units) is wider than a laptop's column
        assert [f[0] for f in figures if f[4]] in ([], ["figure-pp-interleaved"]), figures
