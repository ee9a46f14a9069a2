"""Which stdlib modules the browser worker uses, found by running it, INSIDE the pinned Pyodide.

Run by ``tools/build_runtime.mjs`` right after ``loadPyodide`` (before ``pyc_compile`` imports ``zipfile`` and
friends), so the answer is what Pyodide's own start-up loaded, plus what the engine can reach: every
stdlib module an ``import`` statement anywhere in ``calc/`` names (also inside functions), every engine module,
and every calculator rendered with its defaults and with a refused input. Only these are precompiled; the
rest of the stdlib stays importable from source, so a module this misses costs time, never an ImportError.
"""

from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path

EXTRA = ("linecache", "token", "tokenize", "traceback")
"""Modules the worker reaches only when an unexpected exception is formatted (``PythonError`` messages)."""


def _engine_imports(root: Path, package: str) -> tuple[list[str], list[str]]:
    engine, other = [], set()
    for path in sorted((root / package).rglob("*.py")):
        rel = path.relative_to(root).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        engine.append(".".join(parts))
        for node in ast.walk(ast.parse(path.read_bytes(), str(path))):
            if isinstance(node, ast.Import):
                other.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                other.add(node.module)
    return engine, sorted(m for m in other if m.split(".")[0] != package)


def used_stdlib(engine_root: str, prefix: str, package: str = "calc") -> list[str]:
    """Stdlib members (``json/decoder.py``) loaded once the engine has run everything it can.

    Args:
        engine_root: The folder holding the engine package (put first on ``sys.path`` here).
        prefix: Where the stdlib zip is mounted, with a trailing ``/`` (``/lib/python314.zip/``).
        package: The engine package's name.
    """
    root = Path(engine_root)
    engine, stdlib = _engine_imports(root, package)
    sys.path.insert(0, str(root))
    for name in (*EXTRA, *stdlib, *engine, "lc_stdlib_fallback"):  # the fallback finder's own imports too
        importlib.import_module(name)
    widgets = importlib.import_module(f"{package}.widgets")
    for name in sorted(widgets.calculators()):
        widgets.render(name, {})
        calc = widgets.calculators()[name]
        widgets.render(name, {f.name: "\u00a7" for f in calc.fields})  # refused input: the error path
    files = {getattr(m, "__file__", None) or "" for m in list(sys.modules.values())}
    return sorted(f.removeprefix(prefix) for f in files if f.startswith(prefix) and f.endswith(".py"))
