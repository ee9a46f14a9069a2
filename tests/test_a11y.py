"""Accessibility in the browser: axe-core over every page in both palettes, keyboard-only calculators,
a visible focus ring, and the no-JavaScript notice.

axe-core is the pinned npm devDependency (``node_modules/axe-core``); it is injected with
``page.evaluate`` so the site's Content-Security-Policy has nothing to block.
"""

from __future__ import annotations

import json
import re

import pytest

from browser_helpers import LIVE_OUTPUTS, ROOT, axe_source, outputs_of, wait_calculators
from conftest import Watch, visit

pytestmark = pytest.mark.browser

BLOCKING = ("serious", "critical")
COLOUR_RULES = """() => axe.getRules(['cat.color'])
  .filter((r) => !r.tags.includes('wcag2aaa') && !r.tags.includes('experimental')).map((r) => r.ruleId)"""
"""axe's colour rules that a default run has (the AAA and experimental ones are off by default)."""
RUN_AXE = f"""async (colours) => {{
  const only = ({COLOUR_RULES})();
  const options = {{resultTypes: ['violations'], ...(colours ? {{runOnly: {{type: 'rule', values: only}}}} : {{}})}};
  return (await axe.run(document, options)).violations.map(v => ({{
    id: v.id, impact: v.impact, nodes: v.nodes.map(n => n.target.join(' ') + ' :: ' + n.failureSummary.split('\\n')[1])
  }}));
}}"""
"""axe's violations on the page; with ``colours``, only its ``COLOUR_RULES`` (today color-contrast and
link-in-text-block)."""
ALL_TRANSITIONS_DONE = "async () => { await Promise.all(document.getAnimations().map(a => a.finished)); return true; }"


def _audit(page, path: str, scheme: str, found: dict, colours: bool = False) -> None:
    assert page.evaluate("() => document.body.dataset.mdColorScheme") == scheme, (path, "palette not applied")
    page.evaluate(ALL_TRANSITIONS_DONE)  # a palette switch animates colours; audit the settled ones
    for v in page.evaluate(RUN_AXE, colours):
        counts = found[scheme].setdefault(v["impact"], {"violations": 0, "nodes": 0})
        counts["violations"] += 1
        counts["nodes"] += len(v["nodes"])
        if v["impact"] in BLOCKING:
            found["blocking"].append((scheme, path, v["id"], v["nodes"][:3]))


def test_axe_every_page_both_palettes(browser, site_url, site_pages) -> None:
    """No serious or critical axe violation on any page, in Material's light and dark palettes,
    with every calculator live (so the results the worker wrote are audited too). The dark palette changes colours
    only (Material's CSS custom properties), and the header's toggle, so it is audited with every rule on the home
    page and with the colour rules on the others: a third of the time (the API reference's 47 thousand elements
    took 15 s a pass)."""
    source = axe_source()
    context = browser.new_context(color_scheme="light")
    watch = Watch(context, site_url)
    page = context.new_page()
    watch.attach(page)
    found: dict = {"default": {}, "slate": {}, "blocking": []}
    for path in sorted(site_pages):
        visit(page, site_url, path)
        wait_calculators(page)
        page.evaluate(source)
        if path == "":  # the dark palette's colour rules are axe's contrast rules, not none
            assert {"color-contrast", "link-in-text-block"} <= set(page.evaluate(COLOUR_RULES))
        _audit(page, path, "default", found)
        # Switch palette the way a reader does, with the header toggle, then back for the next page.
        page.locator("[data-md-component=palette] label:visible").first.click()
        page.wait_for_function("() => document.body.dataset.mdColorScheme === 'slate'")
        _audit(page, path, "slate", found, colours=path != "")
        page.locator("[data-md-component=palette] label:visible").first.click()
        page.wait_for_function("() => document.body.dataset.mdColorScheme === 'default'")
    context.close()
    (ROOT / ".stamps").mkdir(exist_ok=True)
    (ROOT / ".stamps" / "axe.json").write_text(json.dumps({k: found[k] for k in ("default", "slate")}, indent=2))
    assert found["blocking"] == [], "\n".join(map(str, found["blocking"]))
    assert watch.errors == [], watch.errors
    assert watch.foreign() == [], watch.foreign()


def _first_of_each_calculator(site_pages: dict[str, str]) -> dict[str, str]:
    first: dict[str, str] = {}
    for path in sorted(site_pages):
        for name in re.findall(r'data-calc="([^"]+)"', site_pages[path]):
            first.setdefault(name, path)
    return first


NAME_OF = """el => el.name || (el.dataset.copyLink !== undefined ? 'copy-link' : '') ||
  (el.matches('[data-results]') ? 'results' : el.tagName)"""
# Tab order inside a calculator: enabled controls, links, the <summary> of each folded group ("More options",
# "Reproduce these numbers"), and the results box when it scrolls sideways (Chromium makes an overflowing
# scroller keyboard-focusable so it can be scrolled without a mouse), as a table or diagram that scrolls
# (a11y.js). A control folded in a closed <details> keeps its boxes (content-visibility: hidden) but is not
# focusable: checkVisibility() tells.
FOCUSABLE_IN = f"""root => [...root.querySelectorAll(
    'input, select, textarea, button, a[href], summary, [data-results], :is(table, figure)[tabindex="0"]')]
  .filter(el => el.matches('[data-results]')
                ? el.scrollWidth > el.clientWidth && !el.querySelector('a[href], [tabindex], summary')
                : !el.disabled && el.tabIndex >= 0 && el.getClientRects().length && el.checkVisibility())
  .map({NAME_OF})"""
ACTIVE = f"""() => {{ const el = document.activeElement; const cs = getComputedStyle(el);
  return {{name: ({NAME_OF})(el), style: cs.outlineStyle, width: parseFloat(cs.outlineWidth),
          color: cs.outlineColor}}; }}"""


def test_every_calculator_by_keyboard_alone(browser, site_url, site_pages) -> None:
    """Tab through each calculator's controls (each shows a 2px+ focus ring), type a new value with the
    keyboard, and see the live result become what the CPython engine computes for it."""
    from calc.widgets import calculators, render

    context = browser.new_context()
    watch = Watch(context, site_url)
    page = context.new_page()
    watch.attach(page)
    checked = set()
    for name, path in sorted(_first_of_each_calculator(site_pages).items()):
        visit(page, site_url, path)
        wait_calculators(page)
        root = page.locator(f'[data-calc="{name}"]').first
        order = root.evaluate(FOCUSABLE_IN)
        assert order[-1] == "copy-link", (name, order)
        # Start just before the calculator, as a reader tabbing down the page would arrive.
        root.evaluate("el => { el.tabIndex = -1; el.focus(); }")
        seen = []
        for _ in order:
            page.keyboard.press("Tab")
            active = page.evaluate(ACTIVE)
            seen.append(active["name"])
            assert active["style"] != "none" and active["width"] >= 2, (name, active)
        assert seen == order, (name, seen, order)
        # Shift+Tab back to the first text field whose doubled value the engine accepts, and type it.
        values = root.evaluate(
            "el => Object.fromEntries([...el.querySelectorAll('form [name]')].map(c => "
            "[c.name, c.type === 'checkbox' ? (c.checked ? '1' : '0') : c.value]))"
        )
        before = outputs_of(render(name, values)["html"])
        candidates = []  # (field, new value, keys that type it): a doubled number first, else the next option
        for f in calculators()[name].fields:
            if f.name in order and f.kind == "number" and values[f.name].isdigit():
                candidates.append((f.name, str(int(values[f.name]) * 2), None))
        for f in calculators()[name].fields:
            options = [v for v, _ in f.options]
            if f.name in order and f.kind == "select" and values[f.name] in options[:-1]:
                candidates.append((f.name, options[options.index(values[f.name]) + 1], "ArrowDown"))
        target = None
        for field, new, key in candidates:
            expected = render(name, {**values, field: new})
            if expected["ok"] and outputs_of(expected["html"]) != before:
                target = (field, new, key, outputs_of(expected["html"]))
                break
        assert target is not None, f"{name}: no field to edit by keyboard"
        field, new, key, want = target
        for _ in range(len(order) - 1 - order.index(field)):
            page.keyboard.press("Shift+Tab")
        assert page.evaluate(ACTIVE)["name"] == field
        if key:
            page.keyboard.press(key)
        else:
            page.keyboard.press("Control+A")
            page.keyboard.type(new)
        assert root.locator(f'[name="{field}"]').input_value() == new
        page.wait_for_function(
            f"([root, want]) => {{ const got = ({LIVE_OUTPUTS})(root); "
            "return !root.querySelector('[data-results]').dataset.stale && "
            "Object.keys(want).every(k => got[k] === want[k]); }",
            arg=[root.element_handle(), want],
        )
        checked.add(name)
    context.close()
    assert checked == set(calculators())
    assert watch.errors == [], watch.errors


def test_focus_ring_contrast(browser, site_url) -> None:
    """The focus ring colour has at least 3:1 against the calculator panel in both palettes."""

    def luminance(rgb: str) -> float:
        r, g, b = (int(x) / 255 for x in re.findall(r"\d+", rgb)[:3])
        lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in (r, g, b)]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    for scheme in ("light", "dark"):
        context = browser.new_context(color_scheme=scheme)
        page = context.new_page()
        page.goto(f"{site_url}/")
        control = page.locator('[data-calc="will-it-fit"] [name="params"]')
        control.focus()
        ring, panel = control.evaluate(
            "el => [getComputedStyle(el).outlineColor, getComputedStyle(el.closest('.lc-calc')).backgroundColor]"
        )
        hi, lo = sorted((luminance(ring), luminance(panel)), reverse=True)
        assert (hi + 0.05) / (lo + 0.05) >= 3, (scheme, ring, panel)
        context.close()


def test_noscript_notice(browser, site_url, site_pages) -> None:
    """With JavaScript off every calculator says its numbers are the build-time defaults; with it on, it does not."""
    path = next(p for p in sorted(site_pages) if site_pages[p].count("data-calc=") >= 2)
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{site_url}/{path}?will-it-fit.params=405B")
    roots = page.locator("[data-calc]").all()
    assert len(roots) >= 2
    for root in roots:
        assert root.get_attribute("data-state") == "prerendered"
        notice = root.locator("[data-noscript]")
        assert notice.is_visible(), root.get_attribute("data-calc-id")
        assert "build-time defaults" in notice.inner_text() and "needs JavaScript" in notice.inner_text()
    context.close()
    context = browser.new_context()
    page = context.new_page()
    page.goto(f"{site_url}/{path}")
    assert page.locator("[data-calc]").count() == len(roots)
    assert page.locator("[data-noscript]").count() == 0  # a <noscript> is plain text when scripts run
    context.close()
