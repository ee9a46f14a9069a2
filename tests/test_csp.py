"""Content-Security-Policy: every page carries a strict policy that the build computed, and under it the
calculators still go live with a clean console and no violation."""

from __future__ import annotations

import functools
import http.server
import re
import sys
import threading
from html.parser import HTMLParser
from pathlib import Path

import pytest

from browser_helpers import ROOT, wait_calculators
from conftest import Watch

sys.path.insert(0, str(ROOT / "hooks"))
import lc_csp

META = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">')
COLLECT = """window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', e =>
  window.__cspViolations.push([e.violatedDirective, e.blockedURI, e.sourceFile, e.lineNumber, e.sample].join(' ')));"""


class _Inline(HTMLParser):
    """Inline scripts and styles, found by the standard-library parser (independently of the build's regexes)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.first_in_head: str | None = None
        self.in_head = False
        self.open: tuple[str, dict] | None = None
        self.scripts: list[tuple[dict, str]] = []
        self.styles: list[str] = []
        self.buffer: list[str] = []

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if self.in_head and self.first_in_head is None:
            self.first_in_head = f"{tag} {attrs.get('http-equiv', '')}".strip()
        if tag == "head":
            self.in_head = True
        if tag in ("script", "style"):
            self.open, self.buffer = (tag, attrs), []

    def handle_data(self, data):
        if self.open:
            self.buffer.append(data)

    def handle_endtag(self, tag):
        if self.open and tag == self.open[0]:
            body = "".join(self.buffer)
            if tag == "script" and "src" not in self.open[1]:
                self.scripts.append((self.open[1], body))
            elif tag == "style":
                self.styles.append(body)
            self.open = None


def _policy(html: str) -> dict[str, list[str]]:
    found = META.findall(html)
    assert len(found) == 1, f"{len(found)} policies"
    return {d.split()[0]: d.split()[1:] for d in found[0].split("; ")}


def test_every_page_has_the_policy_and_every_inline_script_is_hashed(built_site: Path) -> None:
    pages = sorted(built_site.rglob("*.html"))
    assert len(pages) > 20
    inline_seen = 0
    for page in pages:
        html = page.read_text(encoding="utf-8")
        rel = page.relative_to(built_site).as_posix()
        parser = _Inline()
        parser.feed(html)
        assert parser.first_in_head == "meta Content-Security-Policy", (rel, parser.first_in_head)
        policy = _policy(html)
        assert policy["default-src"] == ["'self'"], rel
        assert "'unsafe-inline'" not in policy["script-src"] and "'unsafe-eval'" not in policy["script-src"], rel
        assert not any("'unsafe-inline'" in d for d in policy.values()), (rel, policy)
        # With no 'unsafe-inline' for styles, a style="" attribute would be blocked: the build emits none.
        assert not re.search(r"<[^>]+\sstyle=", html), rel
        assert not any(s in ("data:", "blob:", "*") or "//" in s for d in policy.values() for s in d), (rel, policy)
        for attrs, body in parser.scripts:
            if (attrs.get("type") or "").lower() in ("", "text/javascript", "module"):
                inline_seen += 1
                assert lc_csp.sha256_source(body) in policy["script-src"], (rel, body[:80])
        for body in parser.styles:
            assert lc_csp.sha256_source(body) in policy["style-src"], (rel, body[:80])
    assert inline_seen > len(pages)  # Material's inline scripts are on every page: the check saw them


def test_no_data_uris_left_in_the_css(built_site: Path) -> None:
    sheets = list(built_site.rglob("*.css"))
    assert any("main." in s.name for s in sheets)
    for css in sheets:
        assert not re.search(r"url\(\s*[\"']?data:", css.read_text(encoding="utf-8")), css
    icons = list((built_site / lc_csp.INLINE_DIR).glob("*.svg"))
    assert len(icons) > 10 and all(i.read_bytes().startswith(b"<svg") for i in icons)


def test_build_fails_loudly_without_a_policy(tmp_path: Path) -> None:
    from mkdocs.exceptions import PluginError

    with pytest.raises(PluginError, match="no HTML"):
        lc_csp.write_policy(tmp_path)
    (tmp_path / "x.html").write_text("<p>no head</p><script>alert(1)</script>")
    with pytest.raises(PluginError, match="no <head>"):
        lc_csp.write_policy(tmp_path)
    (tmp_path / "a.css").write_text("a{background:url(data:image/png;base64,AAAA)}")
    with pytest.raises(PluginError, match="image/png"):
        lc_csp.extract_data_uris(tmp_path)


PAGES = ("", "memory/activations/", "parallelism/pipeline/", "parallelism/zero/")
"""Home (one calculator), two calculators and much math, an inline-styled SVG figure, math in tabs and tables."""


def _violations_under_policy(browser, origin: str, paths=PAGES) -> tuple[list[str], list[str], list[str]]:
    """Violations and console errors over the pages, then the violations of a deliberately injected script."""
    context = browser.new_context()
    context.add_init_script(COLLECT)  # init scripts run before the page's policy applies to page scripts
    watch = Watch(context, origin)
    page = context.new_page()
    watch.attach(page)
    violations = []
    for path in paths:
        page.goto(f"{origin}/{path}")
        assert wait_calculators(page) >= (1 if path in ("", "memory/activations/") else 0)
        assert page.locator(".katex").count() > 0 or path == "", path
        page.locator(".md-search__input").focus()  # the search worker and its icons run under the policy too
        page.keyboard.type("zero")
        page.locator(".md-search-result__item").first.wait_for()
        page.keyboard.press("Escape")
        violations += page.evaluate("() => window.__cspViolations")
    errors = list(watch.errors)
    # The collector and the policy are live: a script injected at run time is refused and reported.
    page.evaluate("() => document.head.append(Object.assign(document.createElement('script'), {textContent: '1'}))")
    page.wait_for_function("() => window.__cspViolations.length > 0")
    control = page.evaluate("() => window.__cspViolations")
    context.close()
    assert watch.foreign() == [], watch.foreign()
    return violations, errors, control


@pytest.mark.browser
def test_calculators_live_under_the_policy(browser, site_url) -> None:
    violations, errors, control = _violations_under_policy(browser, site_url)
    assert violations == []
    assert errors == []
    assert len(control) == 1 and control[0].startswith("script-src-elem inline"), control


@pytest.mark.browser
def test_policy_as_a_header_also_governs_the_worker(browser, built_site) -> None:
    """Served as an HTTP header on every response (as a production server would), the policy reaches the
    Pyodide worker too: it then needs 'wasm-unsafe-eval' and nothing more (no blob:, no 'unsafe-eval')."""
    policy = META.search((built_site / "index.html").read_text(encoding="utf-8"))[1]

    class Handler(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def end_headers(self):
            self.send_header("Content-Security-Policy", policy)
            super().end_headers()

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(built_site)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        origin = f"http://127.0.0.1:{server.server_address[1]}"
        violations, errors, control = _violations_under_policy(browser, origin, paths=("", "memory/activations/"))
    finally:
        server.shutdown()
        server.server_close()
    assert violations == []
    assert errors == []
    # both policies, the header's and the page's meta, refuse the injected script
    assert control and all(c.startswith("script-src-elem inline") for c in control), control
