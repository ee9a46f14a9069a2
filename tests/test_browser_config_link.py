"""A pasted config.json restores from a link (issue 10): packed in the URL, restored in a fresh browser.

calc.mjs packs a textarea's text into the link (``~`` + base64url of its deflate-raw bytes); a link
longer than calc.mjs's ``LINK_LIMIT`` (8,000 characters) is not copied and the copy control says why.
Every wait is on the page's own signals (``data-state``, ``data-seq``/``data-answered``, the copy
note's text), never on time.
"""

from __future__ import annotations

import json
import random
import string
from urllib.parse import parse_qs, urlparse

import pytest

from calc.cli._fragment import read_fragment
from calc.models.presets import PRESETS
from calc.widgets import render
from conftest import wait_settled

LINK_LIMIT = 8000
"""calc.mjs's ``LINK_LIMIT``: the longest link the copy button offers."""

PAGE = "architectures/"
"""The page of the parameter counter."""


def _config(extra: dict | None = None) -> str:
    config = {**PRESETS["mixtral-8x7b"], "_name_or_path": "my-org/my-moe"}
    config.pop("_source", None)
    return json.dumps({**config, **(extra or {})}, indent=2)


def _expected(name: str, inputs: dict[str, str], output: str) -> str:
    result = render(name, inputs)
    assert result["ok"], result
    return next(o.text for o in read_fragment(result["html"]).outputs if o.name == output)


def _fill(page, root, text: str) -> None:
    """Paste ``text`` into the config box and leave it, as a reader does before reaching for the copy button."""
    box = root.locator('[name="config"]')
    box.fill(text)
    box.blur()  # its change event, fired now rather than by the click (which would move the footer under it)
    wait_settled(page, root)


def _copied_link(page, root) -> str:
    page.evaluate("() => navigator.clipboard.writeText('')")
    root.locator("[data-copy-link]").click()
    root.locator("[data-copy-note]").filter(has_text="Link copied.").wait_for()
    return page.evaluate("() => navigator.clipboard.readText()")


@pytest.fixture
def clip_context(browser):
    context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
    yield context
    context.close()


def test_pasted_config_restores_from_a_link(browser, clip_context, site_url) -> None:
    page = clip_context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(f"{site_url}/{PAGE}")
    root = page.locator('[data-calc="parameter-count"]').first
    wait_settled(page, root)
    text = _config()
    _fill(page, root, text)
    want = _expected("parameter-count", {"config": text}, "total_params_exact")
    assert root.locator('[data-output="total_params_exact"]').inner_text() == want
    assert root.locator('[data-output="model"]').inner_text() == "my-org/my-moe (mixtral)"

    link = _copied_link(page, root)
    cid = root.get_attribute("data-calc-id")
    packed = parse_qs(urlparse(link).query)[f"{cid}.config"][0]
    assert packed.startswith("~") and len(link) < min(LINK_LIMIT, len(text))  # compact: shorter than the text

    fresh = browser.new_context()  # nothing shared with the page that made the link
    try:
        other = fresh.new_page()
        other.on("pageerror", lambda e: errors.append(str(e)))
        other.goto(link)
        again = other.locator('[data-calc="parameter-count"]').first
        wait_settled(other, again)
        assert again.locator('[name="config"]').input_value() == text
        assert again.locator('[data-output="total_params_exact"]').inner_text() == want
        assert again.locator("[data-results]").get_attribute("data-stale") is None
        assert again.locator("[data-link-notice]").is_hidden()
    finally:
        fresh.close()
    assert errors == []


def test_a_link_over_the_limit_is_not_copied_and_says_why(clip_context, site_url) -> None:
    page = clip_context.new_page()
    page.goto(f"{site_url}/{PAGE}")
    root = page.locator('[data-calc="parameter-count"]').first
    wait_settled(page, root)
    noise = "".join(random.Random(10).choices(string.ascii_letters + string.digits, k=12_000))  # incompressible
    _fill(page, root, _config({"_comment": noise}))
    assert root.locator("[role=alert]").inner_text() == ""  # a valid config: only the link is too long
    page.evaluate("() => navigator.clipboard.writeText('untouched')")
    root.locator("[data-copy-link]").click()
    note = root.locator("[data-copy-note]")
    note.filter(has_text="Not copied").wait_for()
    assert f"more than the {LINK_LIMIT:,}" in note.inner_text()
    assert int(root.get_attribute("data-link-too-long")) > LINK_LIMIT
    assert page.evaluate("() => navigator.clipboard.readText()") == "untouched"
    # The address bar is never cut short: it still holds the whole packed config.
    cid = root.get_attribute("data-calc-id")
    page.wait_for_function("key => new URL(location.href).searchParams.get(key)?.startsWith('~')", arg=f"{cid}.config")
    # Back under the limit, the link is copied again.
    _fill(page, root, _config())
    assert _copied_link(page, root)
    assert root.get_attribute("data-link-too-long") is None


def test_a_damaged_packed_config_is_said_and_the_default_stands(session, site_url) -> None:
    page, _ = session
    page.goto(f"{site_url}/{PAGE}?parameter-count.config=~AAAA")
    root = page.locator('[data-calc="parameter-count"]').first
    wait_settled(page, root)
    notice = root.locator("[data-link-notice]")
    assert "not a packed config" in notice.inner_text()
    assert root.locator('[name="config"]').input_value() == ""
    assert root.locator('[data-output="model"]').inner_text() == _expected("parameter-count", {}, "model")


def test_upload_fills_the_textarea(session, site_url, tmp_path) -> None:
    page, _ = session
    page.goto(f"{site_url}/{PAGE}")
    root = page.locator('[data-calc="parameter-count"]').first
    wait_settled(page, root)
    text = _config()
    path = tmp_path / "config.json"
    path.write_text(text, encoding="utf-8")
    seq = int(root.get_attribute("data-seq"))
    root.locator('[data-upload="config"]').set_input_files(str(path))
    page.wait_for_function("([el, seq]) => Number(el.dataset.seq) > seq", arg=[root.element_handle(), seq])
    wait_settled(page, root)
    assert root.locator('[name="config"]').input_value() == text
    want = _expected("parameter-count", {"config": text}, "total_params_exact")
    assert root.locator('[data-output="total_params_exact"]').inner_text() == want
    assert "Read" in root.locator("[data-upload-note]").inner_text()


def test_legacy_model_link_sets_the_preset(session, site_url) -> None:
    """``serving-memory.model=…`` links from before the preset/config pair still choose the model."""
    page, _ = session
    page.goto(f"{site_url}/memory/inference/")
    cid = page.locator('[data-calc="serving-memory"]').first.get_attribute("data-calc-id")
    page.goto(f"{site_url}/memory/inference/?{cid}.model=mixtral-8x7b")
    root = page.locator('[data-calc="serving-memory"]').first
    wait_settled(page, root)
    assert root.locator('[name="preset"]').input_value() == "mixtral-8x7b"
    assert root.locator("[data-link-notice]").is_hidden()
    assert "Mixtral 8x7B" in root.locator('[data-output="verdict"]').inner_text()
