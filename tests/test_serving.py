"""Where the site is served: instant navigation at any address, and ``make serve`` on a busy port."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path

import pytest

from conftest import READY_TIMEOUT_MS, Watch, serve

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
        assert wasm == [f"{base}/assets/pyodide/pyodide.asm.wasm"], wasm
        context.close()
        assert watch.foreign() == [], f"requests outside {base}/: {watch.foreign()}"
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
