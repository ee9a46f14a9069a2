"""Every calculator's "not counted" / "not modelled" sentence links the accuracy page's list of what is not modelled.

The widgets write ``<a data-site-href="accuracy/#not-modelled">``: the build (``hooks/lc_build.py``) gives the
pre-render its page-relative ``href``, the live runtime (``calc.mjs``) sets it from the site root after each
render. Checked three ways: the engine's HTML (no build), the built pages (each link resolved against its page
and its target file and anchor found), and a live render in the browser.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest

from calc.widgets import render_calculator
from conftest import wait_settled

TARGET = "accuracy/#not-modelled"
INSTALL = "reference/cli/#install"
"""The other site link a result may carry: the copy blocks' "runs after pip install of this site's wheel". A "Does
not fit" diagnosis also links the calculator that has each fix (``page/?inputs#calculator``), resolved here too."""
_PHRASE = re.compile(r"not (counted|modelled)", re.IGNORECASE)
_PARAGRAPH = re.compile(r"<p[^>]*>.*?</p>", re.DOTALL)
# A data-output value is a result the CLI and --json read as text; it carries no link (will-it-fit's suggestion
# says activations are "not counted" because none were asked for, not what the engine leaves out).
_OUTPUT = re.compile(r'<span[^>]*data-output="[^"]*"[^>]*>[^<]*</span>')
_LINK = re.compile(r'<a href="(?P<href>[^"]*)" [^>]*data-site-href="(?P<site>[^"]*)"')


def _unlinked(results_html: str) -> list[str]:
    """Paragraphs that say "not counted"/"not modelled" (outside a data-output value) without a site link."""
    bad = []
    for para in _PARAGRAPH.findall(results_html):
        if _PHRASE.search(_OUTPUT.sub("", para)) and "data-site-href=" not in para:
            bad.append(para)
    return bad


@pytest.mark.parametrize(
    ("name", "inputs"),
    [
        ("training-memory", None),  # "Still not modelled: …", always
        # + MoE: "Router and all-to-all buffers are not counted."
        ("training-memory", {"preset": "mixtral-8x7b", "dp": "8", "ep": "8"}),
        ("finetune-memory", None),  # "Not counted: …", always
        ("serving-memory", {"precision": "int4"}),  # quantization scales not counted, below 8 bits
    ],
)
def test_engine_html_links_each_not_counted_line(name: str, inputs: dict | None) -> None:
    html = render_calculator(name, inputs)
    assert f'data-site-href="{TARGET}"' in html
    assert _unlinked(html) == []


def _anchors(page_html: str) -> set[str]:
    return set(re.findall(r'\bid="([^"]+)"', page_html))


def _calculators(page_html: str) -> list[str]:
    """Each calculator's results fragment on a built page."""
    return re.findall(r'data-results aria-live="polite">(.*?)</div></div></div><div class="lc-calc__footer"', page_html)


def test_built_pages_link_each_not_counted_line(built_site: Path, site_pages: dict[str, str]) -> None:
    linked = set()
    for path, page_html in site_pages.items():
        for results in _calculators(page_html):
            assert _unlinked(results) == [], f"{path}: a not-counted line without a link"
            for m in _LINK.finditer(results):  # the not-modelled links, the install link, the diagnosis' hand-offs
                handoff = "?" in m["site"] and "#" in m["site"]  # another calculator's page with the inputs carried
                assert m["site"] in (TARGET, INSTALL) or handoff, m["site"]
                url = urlsplit(urljoin(f"http://site/{path}", m["href"]))
                assert url.netloc == "site", f"{path}: {m['href']} leaves the site"
                target = built_site / url.path.lstrip("/") / "index.html"
                assert target.is_file(), f"{path}: {m['href']} resolves to {url.path}, not a page"
                assert url.fragment in _anchors(target.read_text(encoding="utf-8")), f"{path}: no #{url.fragment}"
                if m["site"] == TARGET:
                    linked.add(path)
    pages_with = {
        p for p, h in site_pages.items() if 'data-calc="training-memory"' in h or 'data-calc="finetune-memory"' in h
    }
    assert pages_with and pages_with <= linked


@pytest.mark.browser
def test_live_render_keeps_the_link(session, site_url: str, site_pages: dict[str, str]) -> None:
    page, _ = session
    path = next(p for p, h in sorted(site_pages.items()) if 'data-calc="training-memory"' in h)
    page.goto(f"{site_url}/{path}")
    root = page.locator('[data-calc="training-memory"]').first
    wait_settled(page, root)
    seq = root.get_attribute("data-seq")
    root.locator('[name="dp"]').fill("16")  # new inputs: the results come from the worker, not the build
    page.wait_for_function(
        "([el, seq]) => el.dataset.seq !== seq && el.dataset.answered === el.dataset.seq"
        " && el.dataset.state === 'ready'",
        arg=[root.element_handle(), seq],
    )
    assert root.locator("[data-results]").get_attribute("data-stale") is None
    hrefs = root.locator(f'[data-results] a[data-site-href="{TARGET}"]').evaluate_all("els => els.map(a => a.href)")
    assert hrefs and all(h == f"{site_url}/{TARGET}" for h in hrefs), hrefs
