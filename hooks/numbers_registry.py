"""Every number the prose prints, each computed by the engine at build time.

Pages write ``[[num NAME]]``; the build hook replaces it with
``<span class="lc-num" data-num="NAME">VALUE</span>``; a value that is one byte count (a prose
module's ``format_bytes(n)``, returned as is) also carries ``data-bytes`` and its text in each unit system
(``data-si``, ``data-binary``), which the site's GB / GiB switch shows. Names are defined in the modules of
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

from calc.units import format_bytes as _format_bytes
from calc.widgets._html import Quantity

__all__ = ["FIXED_UNIT_PREFIXES", "FIXED_UNIT_SUFFIXES", "NUMBERS", "byte_attributes"]

_HERE = Path(__file__).resolve().parent
if str(_HERE) not in sys.path:
    sys.path.insert(0, str(_HERE))


def _remembering(format_bytes: Callable[..., str]) -> Callable[..., str]:
    """``format_bytes`` whose text remembers its bytes (a ``Quantity``), so a number that is exactly one
    formatted byte count carries them to the page (``data-bytes``) and follows the site's GB / GiB switch."""

    def fmt(n: int, *args: object, **kwargs: object) -> str:
        text = format_bytes(n, *args, **kwargs)
        return Quantity(text, n, "B") if isinstance(n, int) and not isinstance(n, bool) else text

    return fmt


def _collect() -> dict[str, Callable[[], str]]:
    merged: dict[str, Callable[[], str]] = {}
    origin: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules([str(_HERE / "prose_numbers")]), key=lambda m: m.name):
        module = importlib.import_module(f"prose_numbers.{info.name}")
        if getattr(module, "format_bytes", None) is _format_bytes:
            module.format_bytes = _remembering(_format_bytes)
        for name, fn in module.NUMBERS.items():
            if name in merged:
                raise RuntimeError(f"prose number {name!r} defined in both {origin[name]} and {info.name}")
            merged[name], origin[name] = fn, info.name
    return merged


NUMBERS: dict[str, Callable[[], str]] = _collect()
"""All named prose numbers: name -> zero-argument function returning the text to print."""


FIXED_UNIT_SUFFIXES: tuple[str, ...] = ("-kib", "-mib", "-gib", "-tib", "-kb", "-mb", "-gb", "-tb")
"""A number whose name ends in a unit is printed in that unit on purpose (``mem-state-7b-gib`` stands beside
``mem-state-7b`` to show the two systems): it never follows the GB / GiB switch."""

FIXED_UNIT_PREFIXES: tuple[str, ...] = (
    "mem-act-1t-",  # Korthikanti et al. 2022, Table 2 rows, compared with the paper's MiB figures
    "mem-act-22b-",
    "mem-act-175b-",
    "mem-act-530b-",
    "mem-ds-",  # DeepSpeed's estimate_zero2_model_states_mem_needs prints GiB; the prose quotes it
    "mem-kv-opt13b-token",  # the sentence reads the vLLM paper's "800 KB" as KiB
)
"""Numbers that quote a source in the source's unit: they keep it whatever the switch says."""


def byte_attributes(name: str, value: str) -> str:
    """The attributes that let the site's GB / GiB switch re-show a prose number (``""`` if it cannot).

    ``data-bytes`` holds the exact count; ``data-si`` and ``data-binary`` its text in each system, formatted by
    the engine here (the browser formats nothing). They come before ``data-num`` so ``data-num="NAME">VALUE<``
    still reads as the registry's value.

    Examples:
        >>> byte_attributes("state-7b", Quantity("112 GB", 112 * 10**9, "B"))
        ' data-bytes="112000000000" data-si="112 GB" data-binary="104 GiB"'
        >>> byte_attributes("mem-state-7b-gib", Quantity("104 GiB", 112 * 10**9, "B")), byte_attributes("x", "3")
        ('', '')
    """
    fixed = name.endswith(FIXED_UNIT_SUFFIXES) or name.startswith(FIXED_UNIT_PREFIXES)
    if not isinstance(value, Quantity) or value.unit != "B" or fixed:
        return ""
    n = value.value
    return f' data-bytes="{n}" data-si="{_format_bytes(n)}" data-binary="{_format_bytes(n, binary=True)}"'
