"""Each calculator's module imported alone, in a fresh host interpreter, and what came with it (issue 20, Build 1).

``calc/__init__.py`` names its public objects lazily (PEP 562), so ``import calc`` loads no engine module, and a
page loads only the modules its calculators use: ``calc.widgets.<module>`` for each, then, at its first answer,
what ``render`` needs besides. Each row below runs in a subprocess of its own (``sys.modules`` before and after)
and prints what came (``pytest -s`` shows it); it fails when a calculator loads charts it does not draw
(``DRAWS``), a standard-library module only other paths need (``DEFERRED``), or more engine modules than its
budget (``MOST_ON_IMPORT``). ``tests/test_boot.py`` checks the same under the pinned Pyodide,
from the built archive; ``bench/run.py --only import`` times it in the browser (``import_calc_ms``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from calc.widgets import _MODULE_OF, CALCULATOR_MODULES

ROOT = Path(__file__).resolve().parent.parent

_CAME = """
import json, sys
before = set(sys.modules)
import {module}
imported = sorted(set(sys.modules) - before)
rendered = []
if {name!r}:
    from calc.widgets import render
    assert render({name!r}, {{}})["ok"]
    rendered = sorted(set(sys.modules) - before - set(imported))
print(json.dumps({{"imported": imported, "rendered": rendered}}))
"""

NEVER = ("calc.cli", "calc.guide.exercises", "calc.peers")
"""Engine modules no calculator needs: the command line, the guide's exercises (their own worker request) and the
peer estimators (the accuracy page's)."""

DRAWS: dict[str, tuple[str, ...]] = {
    "activations": ("_calculators", "_common", "_lines"),
    "communication": ("_common", "_time"),
    "finetune-memory": ("_common", "_memory"),
    "plan": ("_common", "_time"),
    "serving-memory": ("_common", "_memory"),
    "training-memory": ("_common", "_memory"),
    "will-it-fit": ("_calculators", "_common", "_lines", "_memory"),
}
"""The parts of ``calc.guide.charts`` each calculator draws with; it may load no other (a calculator not named
here draws no chart and loads none). ``calc.guide.charts`` names its parts lazily, so importing one name loads
only its part."""

DEFERRED = ("difflib", "html.parser", "importlib.metadata", "textwrap")
"""Standard-library modules only other paths need (a misspelt preset's "did you mean"; the command line's and the
guide's): the code imports them where it uses them, so no calculator's import or first render loads them."""

MOST_ON_IMPORT: dict[str, int] = {  # +1 with calc.memo (issue 20: the planner's memos), a 60-line module
    "activations": 29,
    "communication": 35,
    "finetune-memory": 45,
    "parameter-count": 23,
    "pipeline-bubble": 19,
    "plan": 42,  # +1: calc.widgets._partial (its first answer while it searches); +1: _plan_knobs (issue 21)
    "serving-memory": 26,
    "serving-time": 30,
    "training-compute": 27,
    "training-memory": 45,
    "will-it-fit": 50,
}
"""The most engine modules (``calc`` included) each calculator's module may bring on import: one above what it
brings now (issue 20, Build 1: 18 to 48, from 38 to 50 before). A new import that needs more says why, and raises
the figure with it."""


def came_with(module: str, name: str = "") -> dict[str, list[str]]:
    """What importing ``module`` in a fresh interpreter loaded (``imported``) and, for a calculator ``name``, what
    its first ``render`` loaded besides (``rendered``)."""
    code = _CAME.format(module=module, name=name)
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _engine(modules: list[str]) -> list[str]:
    return [m for m in modules if m == "calc" or m.startswith("calc.")]


def test_import_calc_loads_no_engine_module() -> None:
    came = _engine(came_with("calc")["imported"])
    print(f"import calc: {came}")
    assert came == ["calc"], "calc/__init__.py imported an engine module eagerly: make the name lazy (_NAMES)"


@pytest.mark.parametrize(("name", "module"), sorted(_MODULE_OF.items()))
def test_each_calculator_module_alone_brings_no_other_calculator(name: str, module: str) -> None:
    got = came_with(f"calc.widgets.{module}", name)
    imported, rendered = _engine(got["imported"]), _engine(got["rendered"])
    stdlib = [m for m in got["imported"] + got["rendered"] if m not in imported + rendered]
    print(f"\n{name} (calc.widgets.{module}): {len(imported)} engine modules on import, {len(rendered)} more on")
    print(f"  its first render, {len(stdlib)} other modules: {' '.join(imported)} | render: {' '.join(rendered)}")
    assert f"calc.widgets.{module}" in imported
    for when, modules in (("import", imported), ("render", rendered)):
        others = {m.removeprefix("calc.widgets.") for m in modules} & set(CALCULATOR_MODULES) - {module}
        assert not others, f"{name}: its {when} brought other calculators' modules: {sorted(others)}"
        never = [m for m in modules if m.startswith(NEVER)]
        assert not never, f"{name}: its {when} brought {never}"
    charts = {m.removeprefix("calc.guide.charts.") for m in imported + rendered if m.startswith("calc.guide.charts.")}
    assert charts <= set(DRAWS.get(name, ())), f"{name}: loads charts it does not draw: {sorted(charts)}"
    deferred = sorted(set(stdlib) & set(DEFERRED))
    assert not deferred, f"{name}: brought {deferred}: import them where they are used"
    most = MOST_ON_IMPORT[name]
    assert len(imported) <= most, f"{name}: {len(imported)} engine modules on import, more than {most} (MOST_ON_IMPORT)"


def test_every_calculator_has_an_import_budget() -> None:
    assert sorted(MOST_ON_IMPORT) == sorted(_MODULE_OF) and set(DRAWS) <= set(_MODULE_OF)
