"""The site's static server: ``make serve`` and the test server (``tests/conftest.py::serve``) both use it.

What it does that ``python -m http.server`` and ``mkdocs serve`` do not:

* **Pre-compressed files.** ``hooks/lc_compress.py`` writes ``NAME.br`` and ``NAME.gz`` beside each text asset;
  a request whose ``Accept-Encoding`` admits one gets it (brotli first), with ``Content-Encoding`` and
  ``Vary: Accept-Encoding``. Nothing is compressed on the fly.
* **Validators.** A strong ``ETag`` (a hash of the bytes sent, so a rebuild with the same bytes keeps it) and
  ``Last-Modified``; ``If-None-Match`` (or, without it, ``If-Modified-Since``) answers ``304 Not Modified``.
* **Cache-Control.** ``public, max-age=31536000, immutable`` for content-hashed paths ([`is_content_hashed`][]:
  Material's ``bundle.<hash>.min.js``, the self-hosted icons named by their sha256, the runtime and engine
  under versioned paths); ``no-cache`` (keep, but revalidate every time) for everything else.
* **Types.** ``.mjs`` as JavaScript, ``.wasm`` as ``application/wasm`` (which streaming compilation needs),
  ``.zip`` as ``application/zip``, text with ``charset=utf-8``.
* **A path prefix.** The site can be served under ``/team/llm/`` as a real host would; outside it is a 404.
  A missing file gets the site's ``404.html`` with status 404.

As a command (``make serve``): build with ``mkdocs build --strict`` into a fresh folder, serve it, and with
``--watch`` rebuild when a source changes and switch to the new build only once it succeeded. An edit to
Markdown pages only is shown within seconds by a quick build ([`quick_build`][]: ``mkdocs build --dirty`` over a
copy of the served build, re-rendering the edited pages), then a full strict build replaces it, so broken links
and anchors still fail; a change to ``mkdocs.yml``, ``hooks/``, ``calc/``, ``overrides/``, a snippet or a file
added or removed gets the full build only::

    python tools/serve.py --build --watch --port 8000
    python tools/serve.py site --port 8001 --prefix /team/llm/
"""

from __future__ import annotations

import argparse
import contextlib
import email.utils
import hashlib
import http.server
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import unquote, urlsplit

ROOT = Path(__file__).resolve().parent.parent
IMMUTABLE = "public, max-age=31536000, immutable"
REVALIDATE = "no-cache"
ENCODINGS = (("br", ".br"), ("gzip", ".gz"))
"""``Content-Encoding`` token and the suffix of the file holding it, in order of preference."""
TYPES = {
    ".css": "text/css; charset=utf-8",
    ".html": "text/html; charset=utf-8",
    ".ico": "image/x-icon",
    ".inv": "application/octet-stream",
    ".js": "text/javascript; charset=utf-8",
    ".json": "application/json",
    ".map": "application/json",
    ".mjs": "text/javascript; charset=utf-8",
    ".png": "image/png",
    ".svg": "image/svg+xml",
    ".ttf": "font/ttf",
    ".txt": "text/plain; charset=utf-8",
    ".wasm": "application/wasm",
    ".woff": "font/woff",
    ".woff2": "font/woff2",
    ".xml": "application/xml",
    ".zip": "application/zip",
}
_HASHED = re.compile(r"(?:^|[./_-])(?=[0-9a-f]*[0-9])[0-9a-f]{8,64}(?:[./_-]|$)")
WATCHED = ("docs", "calc", "hooks", "overrides", "mkdocs.yml")


def is_content_hashed(path: str) -> bool:
    """Whether a site path names its content: a segment or name part of 8-64 hex digits (at least one a digit).

    Examples:
        >>> is_content_hashed("assets/javascripts/bundle.79ae519e.min.js")
        True
        >>> is_content_hashed("assets/images/inline/3f5c0a9e2b7d41c8.svg"), is_content_hashed("pyodide-1a2b3c4d/x")
        (True, True)
        >>> is_content_hashed("assets/calc/calc.zip"), is_content_hashed("search/search_index.json")
        (False, False)
        >>> is_content_hashed("assets/javascripts/lunr/min/lunr.de.min.js"), is_content_hashed("decade/feedface.html")
        (False, False)
    """
    return bool(_HASHED.search(path))


def accepted(header: str) -> set[str]:
    """The content codings an ``Accept-Encoding`` header admits (q > 0), lower-cased; ``*`` admits every one.

    Examples:
        >>> sorted(accepted("gzip, deflate, br, zstd"))
        ['br', 'deflate', 'gzip', 'zstd']
        >>> sorted(accepted("br;q=0, gzip;q=0.5")), sorted(accepted("*")), sorted(accepted(""))
        (['gzip'], ['br', 'gzip'], [])
    """
    codings = set()
    for part in header.split(","):
        name, _, params = part.strip().partition(";")
        q = params.strip().removeprefix("q=") if params.strip().startswith("q=") else "1"
        try:
            ok = float(q) > 0
        except ValueError:
            ok = False
        if name.strip() and ok:
            codings.add(name.strip().lower())
    return {c for c, _ in ENCODINGS} if "*" in codings else codings


_etags: dict[tuple[str, int, int], str] = {}


def _etag(path: Path, st: os.stat_result) -> str:
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _etags:
        _etags[key] = '"' + hashlib.sha256(path.read_bytes()).hexdigest()[:20] + '"'
    return _etags[key]


class SiteHandler(http.server.BaseHTTPRequestHandler):
    """Serves the folder ``root`` (a callable, so a rebuild can switch it) under the URL path ``prefix``."""

    protocol_version = "HTTP/1.1"
    prefix = "/"
    quiet = True
    record = None
    """Called as ``record(site_path, status, content_coding, body_bytes)`` after each file response
    (``bench/run.py`` counts a visit's bytes with it)."""

    @staticmethod
    def root() -> Path:
        raise NotImplementedError

    def handle(self) -> None:
        """One connection; a browser that drops it (a closed tab, a cancelled fetch) is not an error."""
        try:
            super().handle()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def do_GET(self) -> None:
        self._respond(body=True)

    def do_HEAD(self) -> None:
        self._respond(body=False)

    def log_message(self, format: str, *args: object) -> None:
        if not self.quiet:
            super().log_message(format, *args)

    def _resolve(self, url_path: str) -> tuple[Path | None, str | None]:
        """The file for ``url_path`` and the site path it was found at, or a redirect target (``None``, url)."""
        if url_path + "/" == self.prefix:
            return None, self.prefix
        if not url_path.startswith(self.prefix):
            return None, None
        rel = unquote(url_path[len(self.prefix) :])
        root = Path(os.path.abspath(self.root()))
        target = Path(os.path.normpath(root / rel))  # no symlink resolution: a folder of links serves too
        if target != root and root not in target.parents:
            return None, None
        if target.is_dir():
            if url_path and not url_path.endswith("/"):
                return None, url_path + "/"
            target = target / "index.html"
        return (target, target.relative_to(root).as_posix()) if target.is_file() else (None, None)

    def _respond(self, body: bool) -> None:
        url = urlsplit(self.path)
        path, where = self._resolve(url.path)
        status = 200
        if path is None and where is not None:  # a folder without its trailing slash
            self.send_response(301)
            self.send_header("Location", where + (f"?{url.query}" if url.query else ""))
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if path is None:
            status, path, where = 404, self.root() / "404.html", "404.html"
            if not path.is_file() or not url.path.startswith(self.prefix):
                self.send_error(404)
                return
        self._send_file(path, where, status, body)

    def _send_file(self, path: Path, where: str, status: int, body: bool) -> None:
        sent, coding, varies = path, None, False
        codings = accepted(self.headers.get("Accept-Encoding", ""))
        for token, suffix in ENCODINGS:
            variant = path.with_name(path.name + suffix)
            if variant.is_file():
                varies = True
                if coding is None and token in codings:
                    sent, coding = variant, token
        st = sent.stat()
        etag = _etag(sent, st)
        last_modified = email.utils.formatdate(path.stat().st_mtime, usegmt=True)
        cache = IMMUTABLE if is_content_hashed(where) else REVALIDATE
        if status == 200 and self._not_modified(etag, path.stat().st_mtime):
            status, body = 304, False
        length = st.st_size
        self.send_response(status)
        if status != 304:  # RFC 9110 15.4.5: a 304 carries the validators and caching fields, not the metadata
            self.send_header("Content-Type", TYPES.get(path.suffix.lower(), "application/octet-stream"))
            self.send_header("Content-Length", str(length))
            if coding:
                self.send_header("Content-Encoding", coding)
        if varies:
            self.send_header("Vary", "Accept-Encoding")
        if status != 404:
            self.send_header("ETag", etag)
            self.send_header("Last-Modified", last_modified)
            self.send_header("Cache-Control", cache)
        else:
            self.send_header("Cache-Control", "no-store")
        self.end_headers()
        if body:
            with sent.open("rb") as f:
                shutil.copyfileobj(f, self.wfile)
        if self.record is not None:
            self.record(where, status, coding, st.st_size if body else 0)

    def _not_modified(self, etag: str, mtime: float) -> bool:
        """RFC 9110 13.1: ``If-None-Match`` decides when present; else ``If-Modified-Since``."""
        inm = self.headers.get("If-None-Match")
        if inm is not None:
            tags = {t.strip().removeprefix("W/") for t in inm.split(",")}
            return "*" in tags or etag in tags
        ims = self.headers.get("If-Modified-Since")
        if ims:
            try:
                since = email.utils.parsedate_to_datetime(ims).timestamp()
            except (TypeError, ValueError):
                return False
            return int(mtime) <= since
        return False


def make_server(
    directory: Path | None,
    host: str = "127.0.0.1",
    port: int = 0,
    prefix: str = "/",
    *,
    quiet: bool = True,
    record: Callable[[str, int, str | None, int], None] | None = None,
) -> http.server.ThreadingHTTPServer:
    """A threading server for ``directory`` under ``prefix`` (which starts and ends with ``/``). Its
    ``site_root`` attribute is the folder served and may be changed while it runs (``--watch`` does);
    ``record`` is [`SiteHandler.record`][]."""
    if not (prefix.startswith("/") and prefix.endswith("/")):
        raise ValueError(f"prefix must start and end with '/' (prefix={prefix!r})")
    server: http.server.ThreadingHTTPServer
    handler = type(
        "Handler",
        (SiteHandler,),
        {
            "prefix": prefix,
            "quiet": quiet,
            "root": staticmethod(lambda: server.site_root),
            "record": staticmethod(record) if record else None,
        },
    )
    server = http.server.ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    server.site_root = directory
    return server


@contextlib.contextmanager
def running(server: http.server.ThreadingHTTPServer, path: str = "") -> Iterator[str]:
    """Run ``server`` (bound to 127.0.0.1) in a background thread; yields ``http://127.0.0.1:PORT`` + ``path``,
    then shuts the server down and closes its socket (``bench/boot.py`` serves its bare pages with it)."""
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}{path}"
    finally:
        server.shutdown()
        server.server_close()


@contextlib.contextmanager
def serving(
    directory: Path, port: int = 0, prefix: str = "/", record: Callable[[str, int, str | None, int], None] | None = None
) -> Iterator[str]:
    """Serve ``directory`` on 127.0.0.1 in a background thread; yields the base URL without its trailing
    slash, e.g. ``http://127.0.0.1:PORT/team/llm``."""
    with running(make_server(directory, port=port, prefix=prefix, record=record), prefix.rstrip("/")) as base:
        yield base


def _build_command(dest: Path, dirty: bool = False) -> list[str]:
    # Never quiet: it hides the warnings --strict counts (tests/test_house.py::test_no_build_is_quiet).
    cmd = [sys.executable, "-m", "mkdocs", "build", "--site-dir", str(dest)]
    # --dirty warns that it is dirty, which --strict would turn into a failure: a quick build is never strict.
    return cmd + (["--dirty", "--no-strict"] if dirty else ["--strict"])


def build(dest: Path) -> bool:
    """``mkdocs build --strict`` into ``dest``; prints the log and returns False when it fails."""
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
    proc = subprocess.run(_build_command(dest), cwd=ROOT, env=env, check=False, capture_output=True, text=True)
    if proc.returncode:
        print(proc.stdout + proc.stderr, file=sys.stderr)
    return proc.returncode == 0


def quick_build(current: Path, dest: Path) -> bool:
    """The build ``current`` with the changed pages re-rendered: ``mkdocs build --dirty`` into a copy of it.

    MkDocs re-renders a page whose source is newer than its output (the copy keeps the outputs' times), plus
    [`ALWAYS_RENDERED`][]; the hooks' whole-site steps (policy, compression) run over the copy as they do over
    a full build. What only a full build gets right ([`SITE_WIDE`][]) is taken back from ``current``.
    """
    shutil.copytree(current, dest, copy_function=shutil.copy2, symlinks=True)
    for rel in ALWAYS_RENDERED:
        (dest / rel).unlink(missing_ok=True)
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
    cmd = _build_command(dest, dirty=True)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, check=False, capture_output=True, text=True)
    if proc.returncode:
        print(proc.stdout + proc.stderr, file=sys.stderr)
        return False
    for rel in SITE_WIDE:
        if (current / rel).is_dir():
            shutil.copytree(current / rel, dest / rel, copy_function=shutil.copy2, dirs_exist_ok=True)
    return True


ALWAYS_RENDERED = ("reference/api/index.html", "assets/javascripts/calc-worker.mjs")
"""Removed from the copy, so every quick build writes them afresh: the API page registers the anchors other pages'
``[name][]`` links resolve to (autorefs) and fills ``objects.inv`` (its renders come from ``.cache/``,
``hooks/api_cache.py``); the worker is a static file the build fills in (``tools/build_runtime.py``), which
``--dirty`` would otherwise leave filled and the hook refuse."""
SITE_WIDE = ("search",)
"""Outputs a quick build writes from the re-rendered pages alone (the search index holds only them): kept from
the last full build until the next one replaces them."""


def snapshot(root: Path = ROOT) -> dict[str, int]:
    """Every watched source file ([`WATCHED`][]), relative to ``root``, with its mtime in nanoseconds."""
    out = {}
    for name in WATCHED:
        top = root / name
        for path in [top] if top.is_file() else top.rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                out[path.relative_to(root).as_posix()] = path.stat().st_mtime_ns
    return out


def pages_only(before: dict[str, int], after: dict[str, int]) -> bool:
    """Whether ``before`` -> ``after`` only edited existing Markdown pages (a quick build shows them): no file
    added or removed, nothing but ``docs/**/*.md`` changed, and no ``_`` file (snippets, abbreviations).

    Examples:
        >>> pages_only({"docs/a.md": 1, "calc/x.py": 1}, {"docs/a.md": 2, "calc/x.py": 1})
        True
        >>> pages_only({"docs/a.md": 1, "calc/x.py": 1}, {"docs/a.md": 2, "calc/x.py": 2})
        False
        >>> pages_only({"docs/_abbreviations.md": 1}, {"docs/_abbreviations.md": 2})
        False
        >>> pages_only({"docs/a.md": 1}, {"docs/a.md": 1, "docs/b.md": 1})  # a page added: the nav changes
        False
        >>> pages_only({"docs/a.md": 1}, {"docs/a.md": 1})
        False
    """
    if before.keys() != after.keys():
        return False
    changed = [p for p in after if after[p] != before[p]]
    return bool(changed) and all(
        p.startswith("docs/") and p.endswith(".md") and not Path(p).name.startswith("_") for p in changed
    )


class _Watcher:
    """Polls the sources; a page edit gets a quick build at once, then a full strict build (in a process of its
    own, abandoned when the sources move again) replaces it; any other change gets the full build only."""

    def __init__(self, server: http.server.ThreadingHTTPServer, builds: Path) -> None:
        self.server, self.builds, self.n = server, builds, 0
        self.full: tuple[subprocess.Popen, Path, float] | None = None

    def _dest(self, kind: str) -> Path:
        self.n += 1
        return self.builds / f"build-{self.n}-{kind}"

    def _switch(self, dest: Path, what: str) -> None:
        old, self.server.site_root = self.server.site_root, dest
        shutil.rmtree(old, ignore_errors=True)
        print(f"{what}: reload the page", file=sys.stderr)

    def _start_full(self) -> None:
        dest = self._dest("full")
        env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
        proc = subprocess.Popen(
            _build_command(dest), cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        self.full = (proc, dest, time.monotonic())

    def _cancel_full(self) -> None:
        if self.full is not None:
            proc, dest, _ = self.full
            proc.kill()
            proc.communicate()
            shutil.rmtree(dest, ignore_errors=True)
            self.full = None

    def _poll_full(self) -> None:
        if self.full is None or self.full[0].poll() is None:
            return
        (proc, dest, started), self.full = self.full, None
        log = proc.communicate()[0]
        if proc.returncode == 0:
            self._switch(dest, f"full strict build done in {time.monotonic() - started:.1f} s")
        else:
            print(log, file=sys.stderr)
            shutil.rmtree(dest, ignore_errors=True)
            print("strict build failed: still serving the last good build", file=sys.stderr)

    def changed(self, before: dict[str, int], after: dict[str, int]) -> None:
        self._cancel_full()
        if pages_only(before, after):
            started, dest = time.monotonic(), self._dest("quick")
            if quick_build(Path(self.server.site_root), dest):
                self._switch(dest, f"page rebuilt in {time.monotonic() - started:.1f} s (a full build follows)")
            else:
                shutil.rmtree(dest, ignore_errors=True)
        print("change seen: a full strict build starts", file=sys.stderr)
        self._start_full()

    def run(self, interval: float = 0.25) -> None:
        state = snapshot()
        while True:
            time.sleep(interval)  # polling the sources' mtimes: no dependency, and a tick is cheap
            now = snapshot()
            if now != state:
                self.changed(state, now)
                state = now
            self._poll_full()


def _watch(server: http.server.ThreadingHTTPServer, builds: Path) -> None:
    """Rebuild on any change under [`WATCHED`][]; serve a new build only once it succeeded."""
    _Watcher(server, builds).run()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("directory", nargs="?", type=Path, help="a built site (default with --build: a fresh build)")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--prefix", default="/")
    parser.add_argument("--build", action="store_true", help="build the site first (mkdocs build --strict)")
    parser.add_argument("--watch", action="store_true", help="with --build: rebuild when a source changes")
    parser.add_argument("--verbose", action="store_true", help="log every request")
    args = parser.parse_args(argv)
    if args.directory is None and not args.build:
        parser.error("give a built site's folder, or --build")
    builds = Path(tempfile.mkdtemp(prefix="lc-serve-"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))  # a kill, like Ctrl-C, removes the builds
    try:
        directory = args.directory
        if args.build:
            directory = builds / "build-0"
            print(f"building the site into {directory} …", file=sys.stderr)
            if not build(directory):
                return 1
        server = make_server(directory, port=args.port, prefix=args.prefix, quiet=not args.verbose)
        if args.watch:
            threading.Thread(target=_watch, args=(server, builds), daemon=True).start()
        print(f"serving {directory} on http://127.0.0.1:{args.port}{args.prefix}", file=sys.stderr)
        with contextlib.suppress(KeyboardInterrupt):
            server.serve_forever()
        return 0
    finally:
        shutil.rmtree(builds, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
