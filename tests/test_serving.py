"""Where the site is served: instant navigation at any address, and ``make serve`` on a busy port."""

from __future__ import annotations

import gzip
import http.client
import json
import re
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import urlsplit

import brotli
import pytest

from conftest import READY_TIMEOUT_MS, Watch, serve, wait_settled

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.browser
@pytest.mark.parametrize("prefix", ["/team/llm/", "/"], ids=["under-a-path", "on-another-port"])
def test_instant_navigation_wherever_served(browser, built_site: Path, prefix: str) -> None:
    """The site built by ``make build`` (site_url http://127.0.0.1:8000/) served under a path prefix or on another
    port: clicking a nav link swaps the page in place, so Pyodide boots once across two navigations."""
    with serve(built_site, prefix=prefix) as base:
        assert ":8000/" not in f"{base}/"
        context = browser.new_context()
        watch = Watch(context, f"{base}/")
        page = context.new_page()
        watch.attach(page)
        page.goto(f"{base}/")
        page.wait_for_selector("[data-calc][data-state=ready]", timeout=READY_TIMEOUT_MS)
        page.evaluate("window.__sameDocument = true")  # a full reload would drop it

        page.locator('nav a[href$="reference/api/"]').first.click()
        page.wait_for_function(
            "p => location.pathname === p + 'reference/api/' && document.querySelector('h1#api') !== null", arg=prefix
        )
        page.go_back()
        page.wait_for_function("p => location.pathname === p && document.querySelector('h1#home') !== null", arg=prefix)
        page.wait_for_selector("[data-calc][data-state=ready]", timeout=READY_TIMEOUT_MS)

        assert page.evaluate("window.__sameDocument === true"), "a click reloaded the page instead of swapping it"
        wasm = [u for u in watch.requests if u.endswith("/pyodide.asm.wasm")]
        assert len(wasm) == 1 and wasm[0].startswith(f"{base}/assets/"), wasm  # assets/runtime/<hash>/ once built
        context.close()
        assert watch.foreign() == [], f"requests outside {base}/: {watch.foreign()}"
        assert watch.errors == [], f"console errors: {watch.errors}"


@pytest.mark.browser
@pytest.mark.parametrize("prefix", ["/team/llm/", "/"], ids=["under-a-path", "on-another-port"])
def test_the_wheel_is_installed_from_where_the_site_is_served(browser, built_site: Path, prefix: str) -> None:
    """Issue 19: the CLI page's ``pip install`` line and its link to the wheel carried the build's site_url
    (http://127.0.0.1:8000/), wrong wherever else the site is served; site-base.js rebases both to the page's
    address, on the first page and after an instant navigation to it."""
    page_html = (built_site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    name = re.search(r"assets/([^\s/\"'<>]+\.whl)", page_html)[1]
    with serve(built_site, prefix=prefix) as base:
        assert ":8000/" not in f"{base}/"
        context = browser.new_context()
        watch = Watch(context, f"{base}/")
        page = context.new_page()
        watch.attach(page)
        installs = "() => [...document.querySelectorAll('.md-typeset code')].map(c => c.textContent)"
        installs += ".flatMap(t => t.match(/pip install (\\S+)/g) || []).filter(t => t.includes('.whl'))"
        links = "() => [...document.querySelectorAll('.md-typeset a[href$=\".whl\"]')].map(a => a.href)"
        want = f"{base}/assets/{name}"
        page.goto(f"{base}/reference/cli/")  # the load event: DOMContentLoaded's rebasing has run
        assert page.evaluate(installs) == [f"pip install {want}"]
        assert page.evaluate(links) == [want]
        page.goto(f"{base}/")
        page.evaluate("window.__sameDocument = true")
        page.locator('nav a[href$="reference/cli/"]').first.click()
        page.wait_for_function("() => document.querySelector('h1#cli') !== null")
        assert page.evaluate("window.__sameDocument === true")  # swapped in place: document$ rebased it
        assert page.evaluate(installs) == [f"pip install {want}"]
        assert page.evaluate(links) == [want]
        context.close()
        assert watch.errors == [], f"console errors: {watch.errors}"


FIRST_LINES = """() => [...document.querySelectorAll('[data-code-block] [data-code] code')]
  .map(code => code.textContent.split('\\n')[0])"""
"""The first line of every copy block on the page (what the copy buttons put on the clipboard first)."""


@pytest.mark.browser
@pytest.mark.parametrize("prefix", ["/team/llm/", "/"], ids=["under-a-path", "on-another-port"])
def test_what_you_copy_says_where_to_install_the_wheel(browser, built_site: Path, prefix: str) -> None:
    """Issue 19 "Copy and run": "Copy as command" and "Copy as Python" put on the clipboard a first line that
    installs the engine, ``pip install`` with the wheel's absolute address where the site is served (not the
    build's site_url), in the build's pre-rendered blocks and after a live render."""
    (wheel,) = (p.name for p in (built_site / "assets").glob("*.whl"))
    with serve(built_site, prefix=prefix) as base:
        want = f"# Install the engine once: pip install {base}/assets/{wheel}"
        context = browser.new_context(permissions=["clipboard-read", "clipboard-write"])
        watch = Watch(context, f"{base}/")
        page = context.new_page()
        watch.attach(page)
        page.goto(f"{base}/")  # the load event: DOMContentLoaded's rebasing has run
        first_lines = page.evaluate(FIRST_LINES)
        assert first_lines and set(first_lines) == {want}, first_lines  # every pre-rendered block, both kinds

        page.wait_for_selector("[data-calc=will-it-fit][data-state=ready]", timeout=READY_TIMEOUT_MS)
        root = page.locator("[data-calc=will-it-fit]").first
        root.locator('[name="params"]').fill("70B")
        wait_settled(page, root)
        root.locator("[data-code-block] > summary").click()
        for kind, note, then in (
            ("command", "Command", "trainmem will-it-fit params=70B"),
            ("python", "Python", "import calc"),
        ):
            page.evaluate("() => navigator.clipboard.writeText('')")
            root.locator(f'[data-copy-code="{kind}"]').click()
            page.wait_for_function(
                "([root, note]) => root.querySelector('[data-copy-code-note]').textContent.startsWith(note)",
                arg=[root.element_handle(), note],
            )
            copied = page.evaluate("() => navigator.clipboard.readText()").split("\n")
            assert copied[:2] == [want, then], (kind, copied[:3])
        context.close()
        assert watch.errors == [], f"console errors: {watch.errors}"


def test_make_serve_on_a_busy_port_says_what_to_do() -> None:
    """``make serve PORT=<busy>`` fails at once with one line naming a free alternative, before any setup."""
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        proc = subprocess.run(
            ["make", "--no-print-directory", "serve", f"PORT={port}"],
            check=False,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
    lines = (proc.stdout + proc.stderr).strip().splitlines()
    assert proc.returncode != 0
    assert len(lines) == 1 and len(lines[0]) < 120, lines
    assert f"port {port} is busy: run make serve PORT=" in lines[0], lines


# --- tools/serve.py: what `make serve` and the test server send (plain HTTP, no browser) -----------------------

sys.path.insert(0, str(ROOT / "tools"))
sys.path.insert(0, str(ROOT / "hooks"))

from serve import IMMUTABLE, REVALIDATE, serving

import lc_compress

_TEXT = ("<!doctype html><title>x</title>" + "memory and parallelism " * 200).encode()


@pytest.fixture
def tiny_site(tmp_path: Path) -> Path:
    """A few files shaped like the built site's, compressed by the real hook (no cache)."""
    files = {
        "index.html": _TEXT,
        "404.html": b"<!doctype html><title>not found</title>" + b" " * 2000,
        "reference/api/index.html": _TEXT,
        "assets/javascripts/bundle.79ae519e.min.js": b"console.log('bundle');" * 200,
        "assets/pyodide/pyodide.mjs": b"export const x = 1;" * 200,
        "assets/pyodide/pyodide.asm.wasm": b"\0asm" + bytes(4000),
        "assets/calc/calc.zip": b"PK" + bytes(4000),
        "assets/images/logo.png": bytes(5000),
        "small.js": b"1",
    }
    for rel, data in files.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(data)
    lc_compress.compress_site(tmp_path, cache=None)
    return tmp_path


def _get(url: str, **headers: str) -> tuple[int, dict[str, str], bytes]:
    req = urllib.request.Request(url, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def test_compressed_variants_are_written_deterministically(tiny_site: Path, tmp_path_factory) -> None:
    again = tmp_path_factory.mktemp("again")
    for p in tiny_site.rglob("*"):
        if p.is_file() and p.suffix not in (".br", ".gz"):
            (again / p.relative_to(tiny_site)).parent.mkdir(parents=True, exist_ok=True)
            (again / p.relative_to(tiny_site)).write_bytes(p.read_bytes())
    lc_compress.compress_site(again, cache=None)
    variants = sorted(
        p.relative_to(tiny_site).as_posix() for p in tiny_site.rglob("*.*[rz]") if p.suffix in (".br", ".gz")
    )
    assert "index.html.br" in variants and "assets/pyodide/pyodide.asm.wasm.gz" in variants
    assert not any(v.startswith(("small.js", "assets/images/logo.png")) for v in variants), variants
    for v in variants:
        assert (again / v).read_bytes() == (tiny_site / v).read_bytes(), v
    assert gzip.decompress((tiny_site / "index.html.gz").read_bytes()) == _TEXT
    assert brotli.decompress((tiny_site / "index.html.br").read_bytes()) == _TEXT


@pytest.mark.parametrize(
    ("accept", "coding"),
    [
        ("gzip, deflate, br, zstd", "br"),  # Chromium's header: brotli preferred
        ("gzip", "gzip"),
        ("br;q=0, gzip;q=0.8", "gzip"),  # q=0 refuses a coding
        ("identity", None),
        ("", None),
    ],
)
def test_negotiates_the_precompressed_file(tiny_site: Path, accept: str, coding: str | None) -> None:
    with serving(tiny_site) as base:
        status, headers, body = _get(f"{base}/", **{"Accept-Encoding": accept})
    assert status == 200
    assert headers.get("content-encoding") == coding
    assert headers["vary"] == "Accept-Encoding"
    assert headers["content-type"] == "text/html; charset=utf-8"
    decoded = {"br": brotli.decompress, "gzip": gzip.decompress, None: bytes}[coding](body)
    assert decoded == _TEXT and int(headers["content-length"]) == len(body)


@pytest.mark.parametrize(
    ("path", "ctype", "cache"),
    [
        ("assets/pyodide/pyodide.mjs", "text/javascript; charset=utf-8", REVALIDATE),
        ("assets/pyodide/pyodide.asm.wasm", "application/wasm", REVALIDATE),
        ("assets/calc/calc.zip", "application/zip", REVALIDATE),
        ("assets/javascripts/bundle.79ae519e.min.js", "text/javascript; charset=utf-8", IMMUTABLE),  # hashed name
        ("assets/images/logo.png", "image/png", REVALIDATE),
        ("reference/api/", "text/html; charset=utf-8", REVALIDATE),
    ],
)
def test_types_and_cache_control(tiny_site: Path, path: str, ctype: str, cache: str) -> None:
    with serving(tiny_site) as base:
        status, headers, _ = _get(f"{base}/{path}", **{"Accept-Encoding": "br"})
    assert (status, headers["content-type"], headers["cache-control"]) == (200, ctype, cache)
    assert headers["etag"].startswith('"') and headers["last-modified"].endswith("GMT")


def test_validators_answer_304_per_representation(tiny_site: Path) -> None:
    with serving(tiny_site) as base:
        _, br, _ = _get(f"{base}/", **{"Accept-Encoding": "br"})
        _, plain, _ = _get(f"{base}/")
        assert br["etag"] != plain["etag"], "each encoding is its own representation"
        status, headers, body = _get(f"{base}/", **{"Accept-Encoding": "br", "If-None-Match": br["etag"]})
        assert (status, body) == (304, b"")
        assert headers["etag"] == br["etag"] and headers["cache-control"] == REVALIDATE
        assert _get(f"{base}/", **{"If-None-Match": br["etag"]})[0] == 200  # the identity bytes differ
        assert _get(f"{base}/", **{"If-Modified-Since": plain["last-modified"]})[0] == 304
        assert _get(f"{base}/", **{"If-Modified-Since": "Thu, 01 Jan 1970 00:00:00 GMT"})[0] == 200


def test_prefix_redirects_and_not_found(tiny_site: Path) -> None:
    with serving(tiny_site, prefix="/team/llm/") as base:
        assert base.endswith("/team/llm")
        assert _get(f"{base}/reference/api/")[0] == 200
        status, _, body = _get(f"{base}/nope/")
        assert status == 404 and b"not found" in body  # the site's own 404 page
        assert _get(base.removesuffix("/team/llm") + "/index.html")[0] == 404  # outside the prefix
        assert _get(f"{base}/../../etc/passwd")[0] == 404
        conn = http.client.HTTPConnection(urlsplit(base).netloc, timeout=30)
        conn.request("GET", "/team/llm/reference/api")
        reply = conn.getresponse()
        assert (reply.status, reply.getheader("Location")) == (301, "/team/llm/reference/api/")
        conn.close()


def test_built_site_is_precompressed(built_site: Path) -> None:
    """The real build: the runtime, the engine's pages and the search index have brotli and gzip variants."""
    wasm = [p.relative_to(built_site).as_posix() for p in built_site.glob("assets/**/pyodide.asm.wasm")]
    assert len(wasm) == 1, wasm
    for rel in ("index.html", "search/search_index.json", *wasm):
        raw = (built_site / rel).read_bytes()
        assert brotli.decompress((built_site / f"{rel}.br").read_bytes()) == raw, rel
        assert gzip.decompress((built_site / f"{rel}.gz").read_bytes()) == raw, rel


def test_search_index_is_small_and_its_previews_plain(built_site: Path) -> None:
    """Every page downloads the search index: API entries keep a title and one sentence; no raw LaTeX anywhere."""
    import lc_search

    docs = json.loads((built_site / "search" / "search_index.json").read_text(encoding="utf-8"))["docs"]
    api = [d for d in docs if d["location"].startswith(lc_search.API_PAGE)]
    assert api and len(api) < len(docs)
    assert all(len(d["text"]) <= lc_search.SUMMARY_CHARS + 12 and d.get("boost") == 0.5 for d in api)
    raw = [(d["location"], m[0]) for d in docs for m in re.finditer(r"\\[(\[]|\\[A-Za-z]+\b|\$\$", d["text"])]
    assert raw == [], raw[:5]
