"""Keystroke to number (issue 20, Build 2): the request leaves before the page updates its form, address and status;
a result is marked stale only when its new answer is late; the worker's warm-up posts nothing and counts no render.

Every wait is on an explicit signal (``data-answered``, ``data-stale``, the instrumented worker's counters)."""

from __future__ import annotations

import pytest

from conftest import READY_TIMEOUT_MS, wait_settled
from test_browser_runtime import instrumented, shows_engine_result  # noqa: F401 (the fixture)

pytestmark = pytest.mark.browser

STALE_SETS = """
root => {
  window.__staleSets = 0;
  new MutationObserver((records) => {
    for (const r of records) if (r.oldValue === null && r.target.hasAttribute('data-stale')) window.__staleSets += 1;
  }).observe(root.querySelector('[data-results]'), {attributes: true, attributeFilter: ['data-stale'],
                                                    attributeOldValue: true});
}
"""

ORDER = """
() => {
  window.__order = [];
  const replace = history.replaceState.bind(history);
  history.replaceState = (...args) => { window.__order.push('address'); return replace(...args); };
  const post = Worker.prototype.postMessage;
  Worker.prototype.postMessage = function (msg, ...rest) {
    if (msg && msg.type === 'render') window.__order.push('request');
    return post.call(this, msg, ...rest);
  };
}
"""


def _edit(page, name: str, field: str, value: str) -> list[str] | None:
    """Type ``value`` into ``field``; what ``ORDER`` recorded by the end of the edit's task, if it was installed."""
    return page.evaluate(
        """([name, field, value]) => {
          const control = document.querySelector(`[data-calc="${name}"] [name="${field}"]`);
          control.value = value;
          control.dispatchEvent(new Event('input', {bubbles: true}));
          return window.__order ? [...window.__order] : null;
        }""",
        [name, field, value],
    )


def test_the_request_leaves_before_the_address_changes(instrumented, site_url) -> None:  # noqa: F811
    _, page, watch = instrumented()
    page.goto(f"{site_url}/parallelism/pipeline/")
    root = page.locator('[data-calc="pipeline-bubble"]').first
    wait_settled(page, root)
    page.evaluate(ORDER)
    # In the edit's own task (no answer can have come yet): the request left, the address waits for the answer.
    assert _edit(page, "pipeline-bubble", "num_microbatches", "12") == ["request"]
    wait_settled(page, root)
    assert page.evaluate("window.__order") == ["request", "address"]
    assert "pipeline-bubble.num_microbatches=12" in page.url
    shows_engine_result(root, "pipeline-bubble")
    assert watch.errors == []


def test_an_answer_in_time_is_never_marked_stale(instrumented, site_url) -> None:  # noqa: F811
    # A grace longer than any answer: the edits' results replace the old ones with no stale mark between.
    _, page, watch = instrumented("{staleAfterMs: 600000}")
    page.goto(f"{site_url}/parallelism/pipeline/")
    root = page.locator('[data-calc="pipeline-bubble"]').first
    wait_settled(page, root)
    root.evaluate(STALE_SETS)
    for value in ("12", "16", "24"):
        _edit(page, "pipeline-bubble", "num_microbatches", value)
        wait_settled(page, root)
    assert page.evaluate("window.__staleSets") == 0
    shows_engine_result(root, "pipeline-bubble")
    assert watch.errors == []


def test_a_late_answer_is_marked_stale_until_it_comes(instrumented, site_url) -> None:  # noqa: F811
    _, page, watch = instrumented()  # the page's own grace (staleAfterMs 100)
    page.goto(f"{site_url}/parallelism/pipeline/")
    root = page.locator('[data-calc="pipeline-bubble"]').first
    wait_settled(page, root)
    page.evaluate("window.__lc.hold = true")
    _edit(page, "pipeline-bubble", "num_microbatches", "12")
    results = root.locator("[data-results]")
    page.wait_for_selector('[data-calc="pipeline-bubble"] [data-results][data-stale]', timeout=READY_TIMEOUT_MS)
    assert "Updating" in root.locator("[data-status]").inner_text()
    assert root.get_attribute("data-answered") != root.get_attribute("data-seq")
    page.evaluate("window.__lc.hold = false; window.__lc.release()")
    wait_settled(page, root)
    assert results.get_attribute("data-stale") is None
    shows_engine_result(root, "pipeline-bubble")
    assert watch.errors == []


WARMED = """(() => {
  window.__warmed = [];
  const Native = window.Worker;
  window.Worker = class extends Native {
    constructor(...args) {
      super(...args);
      // EventTarget's own method: the instrumented Worker's would count this listener's replies as the page's.
      EventTarget.prototype.addEventListener.call(this, 'message', (e) => {
        if (e.data && e.data.type === 'warmed') window.__warmed.push(e.data);
      });
    }
  };
})();"""


def test_the_warm_up_runs_once_posts_no_answer_and_counts_no_render(instrumented, site_url) -> None:  # noqa: F811
    context, page, watch = instrumented()
    context.add_init_script(WARMED)
    page.goto(f"{site_url}/parallelism/pipeline/")
    root = page.locator('[data-calc="pipeline-bubble"]').first
    wait_settled(page, root)
    page.wait_for_function("() => window.__warmed.length > 0", timeout=READY_TIMEOUT_MS)  # after the first answer
    before = page.evaluate("({replies: window.__lc.replies, renders: Number(document.querySelector("
                           "'[data-calc=\"pipeline-bubble\"]').dataset.workerRenders)})")  # fmt: skip
    _edit(page, "pipeline-bubble", "num_microbatches", "12")
    wait_settled(page, root)
    after = page.evaluate("({replies: window.__lc.replies, renders: Number(document.querySelector("
                          "'[data-calc=\"pipeline-bubble\"]').dataset.workerRenders)})")  # fmt: skip
    assert after["replies"] - before["replies"] == 1  # the edit's answer, and nothing from the warm renders
    assert after["renders"] - before["renders"] == 1
    warmed = page.evaluate("window.__warmed")
    assert len(warmed) == 1 and warmed[0]["renders"] >= 1, warmed  # one warm-up per calculator, not per edit
    assert root.get_attribute("data-warmed") == str(warmed[0]["renders"])  # the signal bench/boot.py waits on
    shows_engine_result(root, "pipeline-bubble")
    assert watch.errors == []


def test_a_calculator_whose_first_answer_is_an_error_is_marked_warmed_with_no_render(instrumented, site_url) -> None:  # noqa: F811
    """Nothing is repeated for an error, and the page says so (data-warmed "0"): a bench or test that waits on the
    signal is never left waiting."""
    context, page, watch = instrumented()
    context.add_init_script(WARMED)
    page.goto(f"{site_url}/parallelism/pipeline/?pipeline-bubble.pp=0")
    root = page.locator('[data-calc="pipeline-bubble"]').first
    wait_settled(page, root)
    assert root.locator("[role=alert]").inner_text().strip()  # the error is what the page shows
    page.wait_for_selector('[data-calc="pipeline-bubble"][data-warmed]', timeout=READY_TIMEOUT_MS)
    assert root.get_attribute("data-warmed") == "0"
    assert page.evaluate("window.__warmed") == [{"type": "warmed", "key": root.get_attribute("data-calc-id") + "#1",
                                                 "renders": 0, "ok": True}]  # fmt: skip
    assert watch.errors == []
