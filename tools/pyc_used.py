"""Which stdlib modules the browser worker uses, found by running it, INSIDE the pinned Pyodide.

Run by ``tools/build_runtime.mjs`` right after ``loadPyodide`` (before ``pyc_compile`` imports ``zipfile`` and
friends), so the answer is what Pyodide's own start-up loaded plus what the worker's entry points load when they
run: ``calc.widgets`` with every calculator rendered with its defaults and with a refused input, and
``calc.guide.exercises`` with every exercise drawn and checked (a right and a refused answer). An import statement
the worker never runs (the CLI's ``pathlib``, a misspelt preset's ``difflib``) is not shipped: on the day it runs,
``lc_stdlib_fallback`` fetches the stock stdlib once and imports it from there, so a miss costs time, never an
``ImportError``.
"""

from __future__ import annotations

import importlib
import sys

EXTRA = ("linecache", "token", "tokenize", "traceback")
"""Modules the worker reaches only when an unexpected exception is formatted (``PythonError`` messages)."""


def used_stdlib(engine_root: str, prefix: str, package: str = "calc") -> list[str]:
    """Stdlib members (``json/decoder.py``) loaded once the engine has run everything it can.

    Args:
        engine_root: The folder holding the engine package (put first on ``sys.path`` here).
        prefix: Where the stdlib zip is mounted, with a trailing ``/`` (``/lib/python314.zip/``).
        package: The engine package's name.
    """
    sys.path.insert(0, engine_root)  # no pathlib here: this module's own imports count too
    for name in (*EXTRA, "lc_stdlib_fallback"):  # the fallback finder's own imports too
        importlib.import_module(name)
    widgets = importlib.import_module(f"{package}.widgets")
    for name in sorted(widgets.calculators()):
        widgets.render(name, {})  # the defaults
        calc = widgets.calculators()[name]
        widgets.render(name, {f.name: "\u00a7" for f in calc.fields})  # refused input: the error path
    exercises = importlib.import_module(f"{package}.guide.exercises")
    for name in exercises.exercises():
        case = exercises.live({"op": "case", "exercise": name, "seed": "0"})
        answer = case["case"]["answer"] if case.get("ok") else ""
        exercises.live({"op": "check", "exercise": name, "seed": "0", "answer": answer})
        exercises.live({"op": "check", "exercise": name, "seed": "0", "answer": "\u00a7"})
    files = {getattr(m, "__file__", None) or "" for m in list(sys.modules.values())}
    return sorted(f.removeprefix(prefix) for f in files if f.startswith(prefix) and f.endswith(".py"))
