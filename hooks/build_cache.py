"""The build's disk cache for what the engine computes: a text kept in ``.cache/memo/`` by the hash of its inputs.

The slow parts of a strict build were the engine's own answers, the same on every build of the same sources:
the accuracy page's planner ranking of every published run (most of a build), the calculators' pre-renders,
the prose numbers and the diagrams. [`memo`][] keeps each one under the SHA-256 of

* [`stamp`][]: every byte of ``calc/``, ``validation/`` and ``hooks/`` (``.py`` and ``.json``), of
  ``pyproject.toml`` (the version) and the Python version, so any change to the engine, its data or a hook
  computes everything again;
* the kind of result and its key (a calculator's name, inputs and id; a number's name; a block's name).

A hit returns the very text the computation returned, so the built site is byte-identical with or without the
cache (``make clean`` removes it). Errors are not cached: a failing computation raises again on the next build.
Several builds may share the folder: every entry is written atomically.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "memo"
INPUTS = ("calc", "validation", "hooks", "pyproject.toml")
"""Folders whose ``.py`` and ``.json`` files (and files) every cached result depends on."""
SUFFIXES = (".py", ".json")
VERSION = "1"
"""Part of every key: change it when a cached kind changes meaning."""

_stamps: dict[tuple, str] = {}


def _inputs(root: Path) -> list[Path]:
    found = [root / name for name in INPUTS if (root / name).is_file()]
    for name in INPUTS:
        found += [p for p in (root / name).rglob("*") if p.suffix in SUFFIXES and "__pycache__" not in p.parts]
    return sorted(p for p in found if p.is_file())


def stamp(root: Path = ROOT) -> str:
    """The SHA-256 of every input file's path and bytes (re-hashed only when a file's size or mtime moved).

    Examples:
        >>> import tempfile
        >>> root = Path(tempfile.mkdtemp())
        >>> (root / "calc").mkdir()
        >>> _ = (root / "calc" / "a.py").write_text("x = 1")
        >>> one = stamp(root)
        >>> one == stamp(root), len(one)
        (True, 64)
        >>> _ = (root / "calc" / "a.py").write_text("x = 22")
        >>> one == stamp(root)
        False
    """
    files = _inputs(root)
    signature = (str(root), *((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files))
    if signature not in _stamps:
        digest = hashlib.sha256(f"{VERSION}\0{sys.version}\0".encode())
        for path in files:
            digest.update(path.relative_to(root).as_posix().encode() + b"\0")
            digest.update(hashlib.sha256(path.read_bytes()).digest())
        _stamps.clear()
        _stamps[signature] = digest.hexdigest()
    return _stamps[signature]


def memo(kind: str, key: object, compute: Callable[[], str], cache: Path | None = CACHE) -> str:
    """``compute()``'s text, from ``cache`` when the inputs ([`stamp`][]), ``kind`` and ``key`` are unchanged.

    Examples:
        >>> import tempfile
        >>> cache = Path(tempfile.mkdtemp())
        >>> calls = []
        >>> memo("demo", {"n": 1}, lambda: calls.append(1) or "one", cache)
        'one'
        >>> memo("demo", {"n": 1}, lambda: calls.append(1) or "other", cache), len(calls)  # a hit: not computed
        ('one', 1)
        >>> memo("demo", {"n": 2}, lambda: "two", cache), memo("demo", {"n": 1}, lambda: "x", None)
        ('two', 'x')
    """
    if cache is None:
        return compute()
    path = entry(kind, key, cache)
    if path.is_file():
        return path.read_bytes().decode("utf-8")
    text = compute()
    if not isinstance(text, str):
        raise TypeError(f"memo({kind!r}) caches text; {key!r} gave {type(text).__name__}")
    store(path, text)
    return text


def entry(kind: str, key: object, cache: Path = CACHE) -> Path:
    """The file [`memo`][] keeps ``kind``/``key``'s text in, for the current [`stamp`][]."""
    name = json.dumps([stamp(), kind, key], sort_keys=True, ensure_ascii=True)
    return cache / kind / f"{hashlib.sha256(name.encode()).hexdigest()}.txt"


def store(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: several builds may share the cache, none sees half an entry."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(text.encode("utf-8"))
    os.replace(tmp, path)
