"""The browser runtime the site ships: pinned Pyodide, a precompiled stdlib, the precompiled engine.

Called by ``hooks/lc_build.py`` after the build. It writes

* ``assets/runtime/<hash>/``: ``pyodide.mjs``, ``pyodide.asm.mjs``, ``pyodide.asm.wasm``, the stock
  ``python_stdlib.zip`` (the fallback) and ``python_stdlib.pyc.zip`` (only the used modules, as ``.pyc``, and
  ``tools/lc_stdlib_fallback.py``, which fetches the stock archive when an import misses them);
  ``<hash>`` is [`RUNTIME_HASH_CHARS`][] hex digits of the SHA-256 of those files, so a server may send them
  as ``Cache-Control: immutable`` (the URL changes whenever a byte does);
* ``assets/calc/calc.zip``: the engine as ``.pyc`` without docstrings (fetched with ``cache: "no-cache"``);
* the worker ``assets/javascripts/calc-worker.mjs`` with the runtime folder and the lock file's ``info``
  filled in (the worker loads no packages, so the 119 kB ``pyodide-lock.json`` is not shipped at all).

The ``.pyc`` come from ``tools/build_runtime.mjs``, which runs the pinned Pyodide under Node (same magic
number as the browser's). Its output is cached in ``.cache/runtime/<key>/``, keyed by every input byte, so a
rebuild with the same engine costs nothing; the engine is compiled from a snapshot of the very bytes hashed.
Every failure raises ``RuntimeError`` (the hook turns it into a failed build).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUNTIME_FILES = ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip")
"""Copied unchanged from ``node_modules/pyodide``."""
COMPILED_STDLIB = "python_stdlib.pyc.zip"
RUNTIME_HASH_CHARS = 16
WORKER = "assets/javascripts/calc-worker.mjs"
PLACEHOLDERS = ("__LC_RUNTIME__", '"__LC_LOCK_INFO__"')
"""Tokens in ``calc-worker.mjs`` that [`write_runtime`][] replaces; each must occur exactly once."""
_TOOLS = ("build_runtime.mjs", "pyc_compile.py", "pyc_used.py", "lc_stdlib_fallback.py")


def _engine_sources(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted((root / "calc").rglob("*.py"))}


def _key(pyodide: Path, sources: dict[str, bytes]) -> str:
    digest = hashlib.sha256()
    for name in ("package.json", "python_stdlib.zip"):
        digest.update(name.encode() + b"\0" + (pyodide / name).read_bytes())
    for name in _TOOLS:
        digest.update(name.encode() + b"\0" + (ROOT / "tools" / name).read_bytes())
    for name, data in sources.items():
        digest.update(name.encode() + b"\0" + hashlib.sha256(data).digest())
    return digest.hexdigest()[:24]


def compiled(pyodide: Path, cache: Path | None = None) -> Path:
    """The folder holding ``python_stdlib.pyc.zip`` and ``calc.zip`` for this checkout, built if missing."""
    cache = cache or ROOT / ".cache" / "runtime"
    sources = _engine_sources(ROOT)
    done = cache / _key(pyodide, sources)
    if (done / "summary.json").exists():
        return done
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache, prefix="tmp-") as tmp:
        snapshot, out = Path(tmp, "engine"), Path(tmp, "out")
        for name, data in sources.items():
            (snapshot / name).parent.mkdir(parents=True, exist_ok=True)
            (snapshot / name).write_bytes(data)
        proc = subprocess.run(
            ["node", str(ROOT / "tools" / "build_runtime.mjs"), str(out), str(snapshot)],
            check=False,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=600,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"compiling the runtime failed (node tools/build_runtime.mjs):\n{proc.stderr[-3000:]}")
        summary = json.loads(proc.stdout.strip().splitlines()[-1])
        (out / "summary.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
        try:
            out.rename(done)
        except OSError:  # another build finished the same key first: its bytes are the same
            if not (done / "summary.json").exists():
                raise
    return done


def runtime_hash(files: dict[str, bytes]) -> str:
    """The folder name for a set of runtime files: a prefix of the SHA-256 over names and contents.

    Examples:
        >>> one, other = runtime_hash({"a": b"1"}), runtime_hash({"a": b"2"})
        >>> len(one), one == runtime_hash({"a": b"1"}), one == other
        (16, True, False)
    """
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode() + b"\0" + hashlib.sha256(files[name]).digest())
    return digest.hexdigest()[:RUNTIME_HASH_CHARS]


def fill_worker(text: str, runtime: str, lock_info: dict[str, object]) -> str:
    """The worker source with the runtime folder and the lock file's ``info`` filled in.

    Examples:
        >>> fill_worker('const R = "__LC_RUNTIME__"; const I = "__LC_LOCK_INFO__";', "runtime/ab/", {"x": 1})
        'const R = "runtime/ab/"; const I = {"x": 1};'
    """
    for token in PLACEHOLDERS:
        if text.count(token) != 1:
            raise RuntimeError(f"{WORKER}: expected the placeholder {token} exactly once, found {text.count(token)}")
    return text.replace(PLACEHOLDERS[0], runtime).replace(PLACEHOLDERS[1], json.dumps(lock_info, sort_keys=True))


def write_runtime(site: Path, pyodide: Path) -> dict[str, object]:
    """Write the runtime, the engine and the filled-in worker into the built ``site``; return a summary."""
    built = compiled(pyodide)
    files = {name: (pyodide / name).read_bytes() for name in RUNTIME_FILES}
    files[COMPILED_STDLIB] = (built / COMPILED_STDLIB).read_bytes()
    folder = f"runtime/{runtime_hash(files)}/"
    target = site / "assets" / folder
    if (site / "assets" / "runtime").exists():  # a dirty rebuild: one runtime folder, not one per build
        shutil.rmtree(site / "assets" / "runtime")
    target.mkdir(parents=True)
    for name, data in files.items():
        (target / name).write_bytes(data)
    (site / "assets" / "calc").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(built / "calc.zip", site / "assets" / "calc" / "calc.zip")
    worker = site / WORKER
    lock_info = json.loads((pyodide / "pyodide-lock.json").read_text())["info"]
    tmp = worker.with_suffix(".tmp")
    tmp.write_text(fill_worker(worker.read_text(encoding="utf-8"), folder, lock_info), encoding="utf-8")
    os.replace(tmp, worker)
    return {"runtime": folder, **json.loads((built / "summary.json").read_text())}
