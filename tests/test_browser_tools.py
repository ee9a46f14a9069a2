"""Calculators that read like tools, in the browser: the site-wide unit switch carrying across pages,
folded options unfolding for a link or an error, copy as code reproducing the live numbers, the form beside
the answer on a wide screen and one column on a phone, numbers that never wrap."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import READY_TIMEOUT_MS, visit, wait_settled

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent

SWITCH = "[data-unit-switch]"
PROSE = """() => [...document.querySelectorAll('.lc-num[data-bytes]')].map(s => [s.textContent, s.dataset.si,
  s.dataset.binary, s.dataset.native ?? s.textContent])"""
LIVE_NUMBERS = """root => Object.fromEntries([...root.querySelectorAll('[data-results] [data-value][data-output]')]
  .map(el => [el.dataset.output, [el.dataset.unit, el.dataset.value, el.textContent.trim()]]))"""


def _root(page, name: str):
    return page.locator(f'[data-calc="{name}"]').first


def _byte_texts(page, name: str) -> list[str]:
    return [text for unit, _, text in _root(page, name).evaluate(LIVE_NUMBERS).values() if unit == "B"]


def _prose_follows(page, unit: str) -> None:
    spans = page.evaluate(PROSE)
    assert spans, "no byte-valued prose numbers on this page"
    for shown, si, binary, native in spans:
        native_binary = native.endswith("iB")
        want = native if (unit == "GiB") == native_binary else (binary if unit == "GiB" else si)
        assert shown == want, (unit, shown, si, binary, native)


def test_unit_switch_carries_across_pages(browser, site_url) -> None:
    context = browser.new_context()
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    visit(page, site_url, "")
    wait_settled(page, "will-it-fit")
    switch = page.locator(SWITCH)
    assert switch.count() == 1 and switch.input_value() == "GB"  # nothing chosen yet: the calculators' default
    assert _root(page, "will-it-fit").locator('[data-output="total"]').inner_text() == "112 GB"
    _prose_follows(page, "GB")

    switch.select_option("GiB")
    wait_settled(page, "will-it-fit")
    root = _root(page, "will-it-fit")
    assert root.locator('[name="unit"]').input_value() == "GiB"
    assert root.locator('[data-output="total"]').inner_text() == "104 GiB"
    assert "unit=" not in page.url  # the site's switch is not a calculator input: the address does not carry it
    _prose_follows(page, "GiB")

    # Another page, by instant navigation: its calculator and prose are in GiB before anything is touched.
    visit(page, site_url, "memory/inference/")
    wait_settled(page, "serving-memory")
    assert page.locator(SWITCH).count() == 1 and page.locator(SWITCH).input_value() == "GiB"
    serving = _root(page, "serving-memory")
    assert serving.locator('[name="unit"]').input_value() == "GiB"
    texts = _byte_texts(page, "serving-memory")
    assert texts and all(t.endswith(("iB", " B")) for t in texts), texts
    _prose_follows(page, "GiB")

    # A full load of a third page: remembered (localStorage), not only carried by the open page.
    page.goto(f"{site_url}/communication/")
    page.wait_for_function("() => !!document.querySelector('[data-calc][data-mounted]')", timeout=READY_TIMEOUT_MS)
    wait_settled(page, "communication")
    assert page.locator(SWITCH).input_value() == "GiB"
    assert _root(page, "communication").locator('[name="unit"]').input_value() == "GiB"

    # A link that names its unit wins for the page it opens (the shared numbers are reproduced as sent): the
    # header switch and the calculator agree, and the reader's own choice stays stored.
    page.goto(f"{site_url}/?will-it-fit.unit=GB")
    wait_settled(page, "will-it-fit")
    assert _root(page, "will-it-fit").locator('[data-output="total"]').inner_text() == "112 GB"
    assert page.locator(SWITCH).input_value() == "GB"
    assert page.evaluate("() => localStorage.getItem('lc-unit')") == "GiB"

    # A calculator's own unit field is the same switch: it moves the header and the prose.
    page.goto(f"{site_url}/memory/inference/")
    wait_settled(page, "serving-memory")
    _root(page, "serving-memory").locator('[name="unit"]').select_option("GB")
    wait_settled(page, "serving-memory")
    assert page.locator(SWITCH).input_value() == "GB"
    assert page.evaluate("() => localStorage.getItem('lc-unit')") == "GB"
    _prose_follows(page, "GB")
    context.close()
    assert errors == []


def test_the_serving_prose_and_its_calculator_agree(browser, site_url) -> None:
    """The KV cache sizes of the serving page's prose are in the calculator's units (kB/MB/GB by default)."""
    context = browser.new_context()
    page = context.new_page()
    visit(page, site_url, "memory/inference/")
    wait_settled(page, "serving-memory")
    calc_binary = any(t.endswith("iB") for t in _byte_texts(page, "serving-memory"))
    kv = page.evaluate(
        "() => [...document.querySelectorAll('.lc-num[data-bytes][data-num^=\"mem-kv-\"]')].map(s => s.textContent)"
    )
    assert kv and not calc_binary
    assert not [t for t in kv if t.endswith("iB")], kv
    context.close()


@pytest.mark.parametrize(
    ("query", "field"),
    [
        ("training-memory.dropout=1", "dropout"),  # a folded checkbox set by a link
        ("training-memory.moe_routing=dropless", "moe_routing"),  # a folded select
    ],
)
def test_a_link_unfolds_the_options_it_sets(browser, site_url, query, field) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{site_url}/memory/activations/?{query}")
    wait_settled(page, "training-memory")
    control = _root(page, "training-memory").locator(f'[name="{field}"]')
    assert control.evaluate("el => el.closest('details').open")
    assert control.is_visible()
    context.close()


def test_an_invalid_folded_field_unfolds(browser, site_url) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{site_url}/memory/inference/")
    wait_settled(page, "serving-memory")
    root = _root(page, "serving-memory")
    control = root.locator('[name="reserved_pct"]')
    assert not control.is_visible()  # folded by default
    control.evaluate("el => { el.value = '250'; el.dispatchEvent(new Event('input', {bubbles: true})); }")
    wait_settled(page, root)
    assert control.get_attribute("aria-invalid") == "true"
    assert control.is_visible()  # the reader sees the field the message names
    assert "reserved_pct" in root.locator("[role=alert]").inner_text() or root.locator("[role=alert]").inner_text()
    context.close()


def test_copy_as_command_reproduces_the_live_numbers(browser, site_url) -> None:
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    page = context.new_page()
    visit(page, site_url, "")
    wait_settled(page, "will-it-fit")
    root = _root(page, "will-it-fit")
    root.locator('[name="params"]').fill("70B")
    root.locator('[name="zero_stage"]').select_option("3")
    root.locator('[name="dp"]').fill("64")
    wait_settled(page, root)
    root.locator("[data-code-block] > summary").click()
    root.locator('[data-copy-code="command"]').click()
    page.wait_for_function(
        "root => root.querySelector('[data-copy-code-note]').textContent !== ''", arg=root.element_handle()
    )
    install, copied = page.evaluate("() => navigator.clipboard.readText()").split("\n")
    assert install.startswith(f"# Install the engine once: pip install {site_url}/assets/"), install
    assert copied == "trainmem will-it-fit params=70B zero_stage=3 dp=64"
    argv = shlex.split(copied)
    proc = subprocess.run(
        [sys.executable, "-m", "calc", *argv[1:], "--json"], check=True, cwd=ROOT, capture_output=True, text=True
    )
    outputs = json.loads(proc.stdout)["outputs"]
    live = root.evaluate(LIVE_NUMBERS)
    assert outputs["total_bytes"] == int(live["total"][1])
    byte_outputs = {k: int(v) for k, (unit, v, _) in live.items() if unit == "B"}
    for name, value in byte_outputs.items():
        key = name if name.endswith("_bytes") else f"{name}_bytes"
        assert outputs[key] == value, name
    root.locator('[data-copy-code="python"]').click()
    page.wait_for_function(
        "root => root.querySelector('[data-copy-code-note]').textContent.startsWith('Python')",
        arg=root.element_handle(),
    )
    code = page.evaluate("() => navigator.clipboard.readText()")
    assert code.startswith(f"{install}\nimport calc"), code  # the public engine, not the site's plumbing
    printed: dict[str, object] = {}

    def collect(*args: object) -> None:  # the snippet prints one "name = value" line per shown number
        if len(args) == 2 and isinstance(args[0], str) and args[0].endswith(" ="):
            printed[args[0].removesuffix(" =")] = args[1]

    exec(compile(code, "<copied>", "exec"), {"print": collect})  # noqa: S102
    shown = {name: value for name, (_, value, _) in live.items() if name in printed}
    assert "total" in shown, (printed, live)
    for name, value in shown.items():
        assert float(printed[name]) == float(value), name
    context.close()


def test_the_answer_takes_the_full_width_under_the_form(browser, site_url) -> None:
    """Issue 19: beside the form the answer was a 371 px column; it now takes the card's width under the form,
    whose groups sit side by side when the card is wide."""
    boxes = """root => { const r = el => el.getBoundingClientRect();
      const f = r(root.querySelector('form')), a = r(root.querySelector('.lc-calc__answer'));
      const groups = [...root.querySelectorAll('form > fieldset')].map(g => Math.round(r(g).left));
      return {formBottom: f.bottom, answerTop: a.top, answerWidth: a.width, formWidth: f.width,
              columns: new Set(groups).size}; }"""
    for viewport, columns in (({"width": 1366, "height": 900}, 2), ({"width": 390, "height": 844}, 1)):
        context = browser.new_context(viewport=viewport)
        page = context.new_page()
        page.goto(f"{site_url}/memory/activations/")
        box = _root(page, "training-memory").evaluate(boxes)
        assert box["answerTop"] >= box["formBottom"], box  # stacked: the answer under the form
        assert box["answerWidth"] >= box["formWidth"] - 1, box  # as wide as the card's content
        assert box["columns"] >= columns, box
        assert page.evaluate("() => document.documentElement.scrollWidth") <= viewport["width"]
        context.close()


def test_numbers_in_tables_do_not_wrap(browser, site_url) -> None:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.goto(f"{site_url}/communication/")
    wait_settled(page, "communication")
    cells = _root(page, "communication").evaluate(
        """root => [...root.querySelectorAll('table.lc-table td [data-value], table.lc-table td[data-value]')]
          .map(el => { const td = el.closest('td'); const lh = parseFloat(getComputedStyle(td).lineHeight) || 20;
            return [el.textContent, getComputedStyle(td).whiteSpace, el.getClientRects().length, lh]; })"""
    )
    assert cells
    for text, white_space, lines, _ in cells:
        assert white_space == "nowrap" and lines == 1, text
    context.close()
