"""``make bench``'s authors' figures (issue 20): how long a build takes, in a fresh clone of this checkout.

``bench/run.py --only build`` runs just these (one sample each: a clean build is minutes):

* ``build_clean_s``: ``mkdocs build --strict`` in a fresh clone (``git clone`` of the committed ``HEAD``, the
  checkout's ``.venv`` and ``node_modules`` linked in, an empty ``.cache/``): what ``make build`` costs after setup;
* ``build_noop_s``: the same build again, nothing changed (every ``.cache/`` entry warm);
* ``rebuild_edit_s``: under ``tools/serve.py --build --watch`` (``make serve``), from appending one line of prose
  to a page until the served page has it.

Each carries the 1-minute load average at its start and end.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EDIT_PAGE = "docs/glossary.md"
EDIT_URL = "glossary/"
LINKED = (".venv", "node_modules")
"""Installed by ``make setup``, not cloned: the checkout's, reused (``.venv`` linked, ``node_modules`` hard-linked)."""
TIMEOUT_S = 1800


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k != "SITE_URL"} | {"NO_MKDOCS_2_WARNING": "1"}


def _figure(seconds: float, loads: list[float]) -> dict[str, object]:
    load = {
        "median": round(sorted(loads)[len(loads) // 2], 2),
        "min": round(min(loads), 2),
        "max": round(max(loads), 2),
    }
    s = round(seconds, 2)
    return {"median": s, "min": s, "max": s, "n": 1, "unit": "s", "load": load}


def _timed_build(clone: Path, dest: Path) -> dict[str, object]:
    loads, started = [os.getloadavg()[0]], time.monotonic()
    # Never quiet: it hides the warnings --strict counts (tests/test_house.py::test_no_build_is_quiet).
    cmd = [str(clone / ".venv" / "bin" / "python"), "-m", "mkdocs", "build", "--strict"]
    proc = subprocess.run(
        [*cmd, "--site-dir", str(dest)], check=False, cwd=clone, env=_env(), capture_output=True, text=True
    )
    seconds = time.monotonic() - started
    if proc.returncode:
        raise RuntimeError(f"the build in {clone} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}")
    return _figure(seconds, [*loads, os.getloadavg()[0]])


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _page(url: str) -> str:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _rebuild_edit(clone: Path) -> dict[str, object]:
    """Serve the clone with ``--build --watch``, append a line to [`EDIT_PAGE`][], time until it is served."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/{EDIT_URL}"
    cmd = [str(clone / ".venv" / "bin" / "python"), "tools/serve.py", "--build", "--watch", "--port", str(port)]
    log = tempfile.TemporaryFile("w+")  # noqa: SIM115 (closed in the finally below, after the server)
    server = subprocess.Popen(cmd, cwd=clone, env=_env(), stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + TIMEOUT_S
        while "</html>" not in _page(url):
            if server.poll() is not None or time.monotonic() > deadline:
                log.seek(0)
                raise RuntimeError(f"tools/serve.py did not serve {url}:\n{log.read()[-2000:]}")
            time.sleep(0.5)
        token = f"lcbench{time.time_ns()}"
        page = clone / EDIT_PAGE
        loads, started = [os.getloadavg()[0]], time.monotonic()
        page.write_text(page.read_text(encoding="utf-8") + f"\nA line the benchmark added: {token}.\n", "utf-8")
        while not re.search(token, _page(url)):
            if server.poll() is not None or time.monotonic() > started + TIMEOUT_S:
                log.seek(0)
                raise RuntimeError(f"the edit never showed:\n{log.read()[-2000:]}")
            time.sleep(0.1)
        return _figure(time.monotonic() - started, [*loads, os.getloadavg()[0]])
    finally:
        server.terminate()
        server.wait(timeout=60)
        log.close()


def measure_build(site: Path, runs: int) -> dict[str, object]:
    """The build figures, in a fresh clone (``site`` and ``runs`` are not used: one sample each)."""
    with tempfile.TemporaryDirectory(prefix="lc-bench-clone-") as tmp:
        clone = Path(tmp) / "clone"
        subprocess.run(["git", "clone", "--quiet", "--no-hardlinks", str(ROOT), str(clone)], check=True)
        (clone / ".venv").symlink_to(ROOT / ".venv")
        # node_modules as hard links, not a symbolic link: the build mounts the checkout into Pyodide's file
        # system (tools/build_runtime.mjs), where a link to a folder outside it leads nowhere.
        shutil.copytree(ROOT / "node_modules", clone / "node_modules", symlinks=True, copy_function=os.link)
        out = {"build_clean_s": _timed_build(clone, Path(tmp) / "site-clean")}
        out["build_noop_s"] = _timed_build(clone, Path(tmp) / "site-noop")
        out["rebuild_edit_s"] = _rebuild_edit(clone)
    return out


if __name__ == "__main__":
    sys.exit(print(measure_build(ROOT, 1)))
