"""Shared fixtures: the built site (one strict build per session) and a local server for it."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import sys
from pathlib import Path
from urllib.parse import urlparse

import pytest
from hypothesis import HealthCheck, settings

from _helpers import run_captured

ROOT = Path(__file__).resolve().parent.parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="session")
def site_port() -> int:
    """The port the test server uses: an ephemeral one, never the build's default 8000. The build does not
    depend on it (``docs/assets/javascripts/site-base.js`` makes instant navigation work at any address)."""
    return _free_port()


BUILT_SITE_ENV = "LC_BUILT_SITE"
"""Names a site ``make test`` already built (``make test-site``: ``.stamps/test-site``, stamped
``.stamps/test-site.done`` once the strict build succeeded), so every test layer shares one build."""


@pytest.fixture(scope="session")
def built_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the site once with ``mkdocs build --strict``, exactly as ``make build`` does with the default
    ``site_url`` (whatever ``SITE_URL`` the shell has), so browser tests serve it where it was not built for.

    When [`BUILT_SITE_ENV`][] names a folder, that build (made the same way by ``make test-site``) is used
    instead; it must carry its stamp, so a half-written or failed build is never tested."""
    prebuilt = os.environ.get(BUILT_SITE_ENV)
    if prebuilt:
        site = (ROOT / prebuilt).resolve()
        stamp = site.with_name(site.name + ".done")
        assert stamp.is_file() and (site / "index.html").is_file(), f"{BUILT_SITE_ENV}={prebuilt}: no stamped build"
        return site
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return _build_site(tmp_path_factory.mktemp("site"))
    # Under pytest-xdist every worker asks: the first builds into the run's shared temporary folder, the
    # others wait on the lock (a signal, not a time) and use that build.
    import fcntl  # host-only (the Pyodide run never gets here)

    shared = tmp_path_factory.getbasetemp().parent
    with (shared / "site.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        out = shared / "site"
        if not out.with_name("site.done").is_file():
            shutil.rmtree(out, ignore_errors=True)
            _build_site(out)
            out.with_name("site.done").touch()
    return out


def _build_site(out: Path) -> Path:
    env = {k: v for k, v in os.environ.items() if k != "SITE_URL"} | {"NO_MKDOCS_2_WARNING": "1"}
    proc = run_captured(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)], env=env, timeout=900
    )
    assert proc.returncode == 0, f"strict build failed:\n{proc.stdout}\n{proc.stderr}"
    return out


LAYERS = ("pyodide", "browser", "wheel")
"""Markers of the slow layers, in the order ``make test`` starts them: the engine suite under Pyodide (one Node
run per xdist worker, ``tests/test_pyodide.py::SHARDS``), the browser tours (one Chromium per process, one Pyodide
boot per tour), the wheel. A test that asks for the ``browser`` fixture belongs to the browser layer whatever its
marks."""


def _layer(item: pytest.Item) -> int:
    for rank, name in enumerate(LAYERS):
        if item.get_closest_marker(name) or (name == "browser" and "browser" in getattr(item, "fixturenames", ())):
            return rank
    return len(LAYERS)


SHARD_OPTION = "--lc-shard"
"""``--lc-shard K/N`` runs only every N-th selected test from the K-th (0-based): ``tests/test_pyodide.py`` splits
the engine suite under Pyodide into N Node runs this way, one per xdist worker. Whole tests are dealt round-robin
in collected order, so the slow neighbours (the planner's presets in ``tests/test_render_limits.py``) spread evenly; a
module marked ``one_shard`` goes whole to the shard of its first test (its module fixture computed once, not N
times)."""


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(SHARD_OPTION, default=None, metavar="K/N", help="run only every N-th selected test from the K-th")


def _shard(config: pytest.Config, items: list[pytest.Item]) -> None:
    spec = config.getoption(SHARD_OPTION)
    if not spec:
        return
    k, n = (int(x) for x in spec.split("/"))
    assert 0 <= k < n, f"{SHARD_OPTION} {spec}: K must be from 0 to N - 1"
    dealt = []  # the shard of each item
    whole: dict[str, int] = {}  # a one_shard module -> its shard
    for i, item in enumerate(items):
        if item.get_closest_marker("one_shard") is None:
            dealt.append(i % n)
        else:  # the whole module goes to the shard of its first test, so its module fixture is computed once
            dealt.append(whole.setdefault(item.nodeid.split("::", 1)[0], i % n))
    config.hook.pytest_deselected(items=[item for item, s in zip(items, dealt, strict=True) if s != k])
    items[:] = [item for item, s in zip(items, dealt, strict=True) if s == k]


@pytest.hookimpl(trylast=True)  # after -m / -k deselection: order what will run
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``make test``: ``--dist loadscope --no-loadscope-reorder``), hand out whole files,
    slowest first: files holding a slow layer's tests in [`LAYERS`][] order, then the others by test count, so
    the long runs start at once and the engine and doctest files fill the workers around them. Inside a file
    the order is the collected one; a plain run (no worker) keeps pytest's order. ``--lc-shard`` keeps its share
    ([`SHARD_OPTION`][]); under Pyodide, Hypothesis tries fewer examples ([`PYODIDE_EXAMPLES`][])."""
    _shard(config, items)
    if sys.platform == "emscripten":
        _fewer_examples(items)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    rank: dict[str, int] = {}
    count: dict[str, int] = {}
    for item in items:
        path = item.nodeid.split("::", 1)[0]
        rank[path] = min(rank.get(path, len(LAYERS)), _layer(item))
        count[path] = count.get(path, 0) + 1
    first = {path: i for i, path in reversed(list(enumerate(item.nodeid.split("::", 1)[0] for item in items)))}
    items.sort(key=lambda item: (rank[p := item.nodeid.split("::", 1)[0]], -count[p], first[p]))


@pytest.fixture(scope="session")
def site_pages(built_site: Path) -> dict[str, str]:
    """Each page's HTML by the path it is served at (``docs/x/y.md`` -> ``x/y/``, home -> ``""``)."""
    pages = {}
    for index in built_site.rglob("index.html"):
        rel = index.parent.relative_to(built_site).as_posix()
        if not rel.startswith("assets"):
            pages["" if rel == "." else f"{rel}/"] = index.read_text(encoding="utf-8")
    return pages


@contextlib.contextmanager
def serve(directory: Path, port: int = 0, prefix: str = "/"):
    """Serve ``directory`` on 127.0.0.1 under the path ``prefix`` (which starts and ends with ``/``) with the
    site's own server, ``tools/serve.py`` (the one ``make serve`` runs: pre-compressed files, validators,
    Cache-Control); yields the base URL without its trailing slash, e.g. ``http://127.0.0.1:PORT/team/llm``."""
    sys.path.insert(0, str(ROOT / "tools"))
    from serve import serving  # host-only: imported here so the Pyodide run never loads it

    with serving(directory, port, prefix) as url:
        yield url


@pytest.fixture(scope="session")
def site_url(built_site: Path, site_port: int):
    """Serve the built site on 127.0.0.1 (an ephemeral port, not the build's 8000) for the browser tests."""
    with serve(built_site, site_port) as url:
        yield url


CHROMIUM = "/usr/bin/chromium"
READY_TIMEOUT_MS = 90_000
"""Upper bound for Pyodide to boot on a loaded 2-core machine; tests wait on signals, this only ends a hang."""


JS_FLAGS = () if os.environ.get("LC_TURBOFAN") else ("--js-flags=--liftoff-only",)
"""V8 compiles the tests' WebAssembly with its baseline compiler only (Liftoff), not also with TurboFan in the
background: measured on 2 cores, a Pyodide boot took 3.65 CPU-seconds instead of 5.3 (the worker's own thread
the same), and ``make test`` boots Pyodide about a hundred times on two busy cores. It changes how fast the code
runs, never what it computes; ``make bench`` launches its own Chromium without it, as readers have it.
``LC_TURBOFAN=1`` runs the tests with both tiers."""


@pytest.fixture(scope="session")
def browser():
    """One headless Debian Chromium for the whole run (Playwright cannot download its own browser here)."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    assert Path(CHROMIUM).exists(), "Debian's chromium is missing: `make test` installs it"
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(
            executable_path=CHROMIUM,
            args=[
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                *JS_FLAGS,
            ],
        )
        yield b
        b.close()


class Watch:
    """Everything a page asked for, and every console error it printed."""

    def __init__(self, context, origin: str) -> None:
        self.origin = origin
        self.requests: list[str] = []
        self.errors: list[str] = []
        context.on("request", lambda r: self.requests.append(r.url))

    def attach(self, page) -> None:
        page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        page.on("pageerror", lambda e: self.errors.append(str(e)))

    def foreign(self) -> list[str]:
        local = ("data", "blob")
        return [u for u in self.requests if urlparse(u).scheme not in local and not u.startswith(self.origin)]


@pytest.fixture
def session(browser, site_url):
    """A fresh browser context and page; at the end, no foreign request and no console error may have happened.

    Its waits end a hang after ``READY_TIMEOUT_MS``, not Playwright's 30 s: they wait on signals, and on a loaded
    2-core machine Material's search worker once took longer than 30 s to answer a query."""
    context = browser.new_context()
    context.set_default_timeout(READY_TIMEOUT_MS)
    watch = Watch(context, site_url)
    page = context.new_page()
    watch.attach(page)
    yield page, watch
    context.close()
    assert watch.foreign() == [], f"requests to other hosts: {watch.foreign()}"
    assert watch.errors == [], f"console errors: {watch.errors}"


# Hypothesis's per-example deadline is a wall-clock timeout: on CI's loaded 2-core machine it fails a correct
# test at random (an example that takes 1 ms idle took 289 ms there), as does the too_slow health check on data
# generation. Tests wait on results, never on time.
settings.register_profile("lc", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("lc")

if sys.platform == "emscripten":  # the engine suite under Pyodide: no example database on the mounted tree
    # These modules build the site, start servers or processes, or drive a browser: host-only.
    collect_ignore_glob = [
        "test_site.py",
        "test_guide_claims.py",
        "test_guide2.py",
        "test_print.py",
        "test_not_counted_links.py",
        "test_browser*.py",
        "test_csp.py",
        "test_serving.py",
        "test_bench.py",
        "test_a11y.py",
        "test_phone.py",
        "test_pyodide.py",
        "test_wheel_site.py",
        "test_import_alone.py",  # a fresh interpreter per calculator: subprocesses
    ]
    settings.register_profile("pyodide", parent=settings.get_profile("lc"), database=None, max_examples=10)
    settings.load_profile("pyodide")

PYODIDE_EXAMPLES = (0.1, 10)
"""Under Pyodide each Hypothesis test tries this share of the examples it asks for, and at least this many (a test
without its own ``max_examples`` takes the ``pyodide`` profile's 10). The host run tries them all, so the input
space is searched there; the Pyodide run shows the same engine behaves the same under Pyodide's Python."""


def _fewer_examples(items: list[pytest.Item]) -> None:
    share, least = PYODIDE_EXAMPLES
    for item in items:
        test = getattr(item, "obj", None)
        own = getattr(test, "_hypothesis_internal_use_settings", None)  # what @given and @settings set (6.155)
        if own is not None and own.max_examples > least:
            test._hypothesis_internal_use_settings = settings(
                own, max_examples=max(least, int(own.max_examples * share))
            )


SETTLED_JS = (
    "el => el.dataset.state === 'ready' && el.dataset.answered !== undefined && el.dataset.answered === el.dataset.seq"
    " && (!el.matches('[data-calc]') || el.dataset.address === el.dataset.seq)"
    " && !document.documentElement.dataset.lcScrollers"
)
"""A calculator is settled when the engine is ready, the shown result (or input error) answers the current inputs
(``data-answered`` equals ``data-seq``), a calculator's address bar holds them (``data-address``, written once the
answer is painted; all three set by calc.mjs; an exercise has no address to wait for) and a11y.js has checked which
result boxes scroll (``<html data-lc-scrollers>`` gone)."""


def wait_settled(page, root_or_name="will-it-fit", timeout: float = READY_TIMEOUT_MS) -> None:
    """Wait for a calculator's explicit settled signal; ``root_or_name`` is a calculator name
    (the first ``[data-calc=NAME]`` on the page), a Locator or an ElementHandle."""
    if isinstance(root_or_name, str):
        page.wait_for_function(
            'name => { const el = document.querySelector(`[data-calc="${name}"]:not([data-old])`);'
            f" return !!el && ({SETTLED_JS})(el); }}",
            arg=root_or_name,
            timeout=timeout,
        )
        return
    handle = root_or_name.element_handle() if hasattr(root_or_name, "element_handle") else root_or_name
    page.wait_for_function(SETTLED_JS, arg=handle, timeout=timeout)


PAGE_IN_PLACE = """href => location.href.split('#')[0] === href && !document.querySelector('.md-content[data-left]')
  && !document.querySelector('[data-calc]:not([data-mounted]), .arithmatex:not([data-typeset])')"""
"""The page at ``href`` is on screen: the old content is gone, every calculator mounted, all math typeset.
The fragment is ignored: Material's ``navigation.tracking`` writes the section in view into it as the page scrolls."""


def visit(page, site_url: str, path: str) -> None:
    """Open ``site_url/path``: the first page of a context by a full load, every later one by Material's
    instant navigation (a click on a link, as a reader arrives), so one Pyodide serves the whole tour.

    Waits until the new page is in place ([`PAGE_IN_PLACE`][]), not on time; the calculators may still
    be booting or computing (wait for that with ``wait_settled``).
    """
    href = f"{site_url}/{path}"
    if not page.url.startswith(f"{site_url}/"):
        page.goto(href)
    else:
        page.evaluate(
            # A reader's click moves focus off the field first (its change event fires on this page), so
            # blur it the same way before following the link.
            """href => { document.activeElement?.blur();
              const content = document.querySelector('.md-content'); content.dataset.left = '';
              const a = document.createElement('a'); a.href = href; a.textContent = 'next page';
              content.append(a); a.click(); }""",
            href,
        )
    try:
        page.wait_for_function(PAGE_IN_PLACE, arg=href, timeout=READY_TIMEOUT_MS)
    except Exception as err:  # say which part of "in place" never happened
        state = page.evaluate(
            """() => ({href: location.href, oldContent: !!document.querySelector('.md-content[data-left]'),
              unmounted: document.querySelectorAll('[data-calc]:not([data-mounted])').length,
              untypeset: document.querySelectorAll('.arithmatex:not([data-typeset])').length})"""
        )
        raise AssertionError(f"{href} never came into place: {state}") from err
