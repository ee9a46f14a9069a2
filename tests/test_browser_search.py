"""The search index waits for the reader (issue 20, ``docs/assets/javascripts/search-lazy.js``).

Material requests ``search/search_index.json`` (the whole guide's text) on every page load; the site holds that
request until the reader reaches for search, and search then works as before.
"""

from __future__ import annotations

import pytest

INDEX = "/search/search_index.json"
PAGE = "glossary/"
"""A page without a calculator: no Pyodide boot to wait for."""


def _index_requests(watch) -> list[str]:
    return [u for u in watch.requests if u.split("?")[0].endswith(INDEX)]


@pytest.mark.browser
def test_the_index_is_fetched_only_when_the_reader_searches(session, site_url: str) -> None:
    page, watch = session
    page.goto(f"{site_url}/{PAGE}")
    # Material asked for the index and the script holds it: the explicit signal, set in the send() it intercepted.
    page.wait_for_function("() => document.documentElement.dataset.searchIndex === 'held'")
    page.wait_for_load_state("networkidle")
    assert _index_requests(watch) == []

    with page.expect_request(lambda r: r.url.endswith(INDEX)):
        page.locator('[data-md-component="search-query"]').click()  # the header's search box
    page.wait_for_function("() => document.documentElement.dataset.searchIndex === 'sent'")
    # Typed as a reader types: Material reads the box on keyup (or when its search worker turns ready), not on the
    # input event fill() sends, so a fill() after the worker was ready waited forever under load.
    page.keyboard.type("pipeline bubble")
    page.wait_for_selector(".md-search-result__item a[href*='pipeline']")
    assert len(_index_requests(watch)) == 1


@pytest.mark.browser
def test_a_page_opened_with_a_query_fetches_the_index_at_once(session, site_url: str) -> None:
    page, watch = session
    with page.expect_request(lambda r: r.url.endswith(INDEX)):
        page.goto(f"{site_url}/{PAGE}?q=bubble")
    page.wait_for_selector(".md-search-result__item")
    assert len(_index_requests(watch)) == 1
