"""Every number the prose prints, each computed by the engine at build time.

Pages write ``[[num NAME]]``; the build hook replaces it with
``<span class="lc-num" data-num="NAME">VALUE</span>``. Names are defined in the modules of
``hooks/prose_numbers/`` (one per part of the guide), each exporting ``NUMBERS: dict[str, Callable[[], str]]``.
An unknown name, a name defined twice or an engine error fails the build; ``tests/test_site.py``
compares every printed span with the registry and key values with direct engine calls.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["NUMBERS"]

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))


def _collect() -> dict[str, Callable[[], str]]:
    merged: dict[str, Callable[[], str]] = {}
    origin: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules([str(_HERE / "prose_numbers")]), key=lambda m: m.name):
        module = importlib.import_module(f"prose_numbers.{info.name}")
        for name, fn in module.NUMBERS.items():
            if name in merged:
                raise RuntimeError(f"prose number {name!r} defined in both {origin[name]} and {info.name}")
            merged[name], origin[name] = fn, info.name
    return merged


NUMBERS: dict[str, Callable[[], str]] = _collect()
"""All named prose numbers: name -> zero-argument function returning the text to print."""
