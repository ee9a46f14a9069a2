"""The rest of the standard library, fetched the first time an import needs it (issue 20, Build 1).

The site ships only the stdlib modules the worker uses (``tools/pyc_used.py``), precompiled, in place of
Pyodide's whole ``python_stdlib.zip``. This module is shipped inside that cut archive; ``calc-worker.mjs``
calls [`install`][] once Pyodide has booted. Its finder sits last on ``sys.meta_path``, so it only sees an
import that the cut missed. For a module of the stock stdlib (``STOCK``, written in by
``tools/pyc_compile.py``) it fetches the stock archive once, synchronously (the import statement waits for
it), writes it into the file system beside the cut one, appends it to ``sys.path``, extends the ``__path__``
of the package being searched (``json`` is in the cut, ``json.tool`` is not) and finds the module there. A
name outside the stock stdlib is an ordinary ``ImportError`` and fetches nothing, so a probing
``try: import x`` costs nothing. Nothing the engine can import fails: it is slower the first time.

Examples:
    >>> _module_names(["json/__init__.py", "json/tool.py", "abc.py", "README.txt", "x/y/"])
    ['abc', 'json', 'json.tool']
"""

from __future__ import annotations

import importlib.machinery
import os
import sys
from collections.abc import Callable, Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

__all__ = ["FULL", "STOCK", "install", "misses"]

FULL = "/lib/python_stdlib_full.zip"
"""Where the stock archive is written once fetched (beside the cut one, ``/lib/python3NN.zip``)."""

STOCK: frozenset[str] = frozenset()
"""Every module of the stock stdlib archive (dotted names); ``tools/pyc_compile.py`` appends the real set."""

misses: list[str] = []
"""The modules this finder found in the stock archive, in order (for the tests and for a curious reader)."""


def _module_names(members: Sequence[str]) -> list[str]:
    """Dotted module names of a zip's ``.py`` members, sorted."""
    names = set()
    for member in members:
        if member.endswith(".py"):
            parts = member[:-3].split("/")
            names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return sorted(names)


class _Finder:
    """Last on ``sys.meta_path``: a stock-stdlib module the cut archive lacks, from the stock archive."""

    def __init__(self, url: str, fetch: Callable[[str], object], cut: str) -> None:
        self._url, self._fetch, self._cut = url, fetch, cut
        self._mounted = False

    def _mount(self) -> None:
        if self._mounted:
            return
        data = self._fetch(self._url)
        data = data.to_bytes() if hasattr(data, "to_bytes") else bytes(data)  # a JS Uint8Array, or bytes
        with open(FULL, "wb") as out:
            out.write(data)
        sys.path.append(FULL)  # a new entry: no finder has cached it, so nothing to invalidate (and
        # importlib.invalidate_caches() would import importlib.metadata, which the cut may itself lack)
        self._mounted = True

    def find_spec(
        self, fullname: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if fullname not in STOCK:
            return None
        search = None
        if path is not None:
            cut = self._cut + "/"
            more = [FULL + p[len(self._cut) :] for p in path if p.startswith(cut)]
            if not more:
                return None  # a package outside the stdlib
        self._mount()
        if path is not None:
            search = [*path, *(p for p in more if p not in path)]
            parent = sys.modules.get(fullname.rpartition(".")[0])
            if parent is not None and isinstance(getattr(parent, "__path__", None), list):
                parent.__path__[:] = search  # later submodules are found without this finder
        spec = importlib.machinery.PathFinder.find_spec(fullname, search)
        if spec is not None:
            misses.append(fullname)
        return spec


def install(url: str, fetch: Callable[[str], object]) -> None:
    """Put the finder last on ``sys.meta_path`` (once).

    Args:
        url: The stock ``python_stdlib.zip`` (same origin).
        fetch: Fetches ``url`` synchronously and returns its bytes (in the worker, a synchronous
            ``XMLHttpRequest``; a ``Uint8Array`` or ``bytes``).
    """
    if not any(isinstance(f, _Finder) for f in sys.meta_path):
        sys.meta_path.append(_Finder(url, fetch, os.path.dirname(__file__)))
