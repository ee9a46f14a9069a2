"""Helpers shared by the accessibility, phone and CSP browser tests.

Every wait is on an explicit signal in the page; predicates are written as functions, never as bare
expressions, because Playwright evaluates a bare expression with ``eval``, which the site's
Content-Security-Policy (rightly) refuses.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path

from conftest import READY_TIMEOUT_MS

ROOT = Path(__file__).resolve().parent.parent
AXE = ROOT / "node_modules" / "axe-core" / "axe.min.js"

CALCULATORS_SETTLED = """() => !document.documentElement.dataset.lcScrollers
  && [...document.querySelectorAll('[data-calc]')].every(el =>
  el.dataset.state === 'ready' && el.dataset.answered === el.dataset.seq && el.dataset.address === el.dataset.seq
  && !el.querySelector('[data-results]').dataset.stale)"""


REVEAL_CHARTS = """async () => {
  const done = f => f.dataset.chartNear !== undefined || f.dataset.chartState === 'live' || !f.isConnected;
  for (const f of document.querySelectorAll('[data-chart]')) {
    if (done(f) || !f.getClientRects().length) continue;
    f.scrollIntoView({block: 'center'});
    await new Promise(resolve => { const seen = () => done(f) ? resolve() : requestAnimationFrame(seen); seen(); });
  }
  window.scrollTo(0, 0);
}"""
"""Scroll each visible chart not yet drawn into view in turn, waiting for its ``data-chart-near`` signal (charts.mjs
draws a chart live only once it has come near the viewport; a chart patched in place may carry its live drawing
over without it), then back to the top."""


def reveal_charts(page) -> None:
    """Bring every visible chart near the viewport once, so each is drawn live (``REVEAL_CHARTS``)."""
    page.evaluate(REVEAL_CHARTS)


def wait_calculators(page) -> int:
    """Wait until every calculator on the page is live and showing numbers for its inputs; return how many."""
    page.wait_for_function(CALCULATORS_SETTLED, timeout=READY_TIMEOUT_MS)
    return page.locator("[data-calc]").count()


def axe_source() -> str:
    assert AXE.exists(), "node_modules/axe-core is missing: run `npm ci` (package.json pins it as a devDependency)"
    return AXE.read_text(encoding="utf-8")


def outputs_of(fragment: str) -> dict[str, str]:
    """The whitespace-normalised text of each ``[data-output]`` element of a result fragment."""

    class Collect(HTMLParser):
        def __init__(self) -> None:
            super().__init__()
            self.stack: list[str | None] = []
            self.text: dict[str, list[str]] = {}

        def handle_starttag(self, tag, attrs):
            if tag in ("br", "img", "input", "meta", "link", "hr", "wbr"):
                return
            self.stack.append(dict(attrs).get("data-output"))

        def handle_endtag(self, tag):
            if self.stack and tag not in ("br", "img", "input", "meta", "link", "hr", "wbr"):
                self.stack.pop()

        def handle_data(self, data):
            for name in self.stack:
                if name:
                    self.text.setdefault(name, []).append(data)

    c = Collect()
    c.feed(fragment)
    return {k: " ".join("".join(v).split()) for k, v in c.text.items()}


LIVE_OUTPUTS = """root => Object.fromEntries([...root.querySelectorAll('[data-results] [data-output]')]
  .map(el => [el.dataset.output, el.textContent.split(/\\s+/).filter(Boolean).join(' ')]))"""
