"""The shape of the house (CONTRIBUTING.md): small modules, small functions, packages in layers.

Every module under ``calc/`` is at most ``MAX_MODULE_LINES`` lines and every function at most
``MAX_FUNCTION_LINES``, except the few listed below with their reason; a listed exception that no longer
needs its place fails too, so the list stays true. The packages form layers: a module imports only from its
own package or the ones below it, and no two modules import each other, directly or through others
(imports under ``if TYPE_CHECKING:`` never run, so they make no cycle; they still count as layering). A
``_`` module or name is its package's own part, imported from nowhere else. ``calc`` uses the standard
library only, every module has a docstring, and ``calc._NAMES`` is ``calc.__all__``.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
CALC = ROOT / "calc"

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 80

MODULE_EXCEPTIONS: dict[str, str] = {}
"""``calc/...py`` paths allowed over ``MAX_MODULE_LINES``, each with its reason."""

FUNCTION_EXCEPTIONS: dict[str, str] = {}
"""``path::qualified.name`` of functions allowed over ``MAX_FUNCTION_LINES``, each with its reason."""

PRIVATE_EXCEPTIONS: dict[str, str] = {
    "calc.cli._fragment -> calc.widgets._html": "the CLI reads the calculators' unit table (UNITS) to print a "
    "fragment as text; calc.widgets should export it",
    "calc.timing.compute -> calc.memory._activation_args": "RECOMPUTE_MODES is defined in calc.memory's private "
    "argument module; calc.memory should export it",
}
"""``module -> private name`` imports allowed across packages, each with its reason (see
``test_private_parts_stay_in_their_package``)."""

CYCLE_EXCEPTIONS: dict[str, str] = {}
"""Import edges ``a -> b`` the cycle check leaves out, each with its reason."""

LAYERS: tuple[tuple[str, ...], ...] = (
    ("calc.errors", "calc.units", "calc.hardware"),
    ("calc.models",),
    ("calc.parallel",),
    ("calc.memory",),
    ("calc.timing",),
    ("calc.peers",),
    ("calc.guide",),
    ("calc.widgets", "calc.cli", "calc.__main__"),
)
"""The packages from the bottom up: a module may import its own layer's and lower layers' modules only."""


def _modules() -> list[pathlib.Path]:
    return sorted(p for p in CALC.rglob("*.py") if "__pycache__" not in p.parts)


def _name(path: pathlib.Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _rel(path: pathlib.Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _layer(module: str) -> int | None:
    """The layer of a ``calc`` module, or None for the top-level package itself."""
    for rank, prefixes in enumerate(LAYERS):
        if any(module == p or module.startswith(p + ".") for p in prefixes):
            return rank
    return None


def _functions(tree: ast.AST, prefix: str = ""):
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            name = prefix + node.name
            yield name, node.end_lineno - node.lineno + 1
            yield from _functions(node, name + ".")
        elif isinstance(node, ast.ClassDef):
            yield from _functions(node, prefix + node.name + ".")


def _type_only_nodes(tree: ast.AST) -> set[int]:
    """``id`` of every node under an ``if TYPE_CHECKING:`` block (imports for annotations only, never run)."""
    inside: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            inside.update(id(n) for stmt in node.body for n in ast.walk(stmt))
    return inside


def _calc_imports(path: pathlib.Path, *, runtime_only: bool = False) -> set[str]:
    """The ``calc`` modules a module imports at its top level or anywhere inside it (with ``runtime_only``,
    not those under ``if TYPE_CHECKING:``, which never run and so cannot make a cycle)."""
    tree = ast.parse(path.read_text())
    skip = _type_only_nodes(tree) if runtime_only else set()
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "calc":
                found.update(f"calc.{a.name}" for a in node.names)
            elif node.module.startswith("calc."):
                found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.startswith("calc."))
    return found


def test_modules_are_small():
    too_long = {_rel(p): n for p in _modules() if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES}
    unexplained = {k: v for k, v in too_long.items() if k not in MODULE_EXCEPTIONS}
    assert not unexplained, f"modules over {MAX_MODULE_LINES} lines: {unexplained}"
    stale = sorted(set(MODULE_EXCEPTIONS) - set(too_long))
    assert not stale, f"listed as exceptions but now within the limit (remove them): {stale}"


def test_functions_are_small():
    too_long = {}
    for p in _modules():
        for name, n in _functions(ast.parse(p.read_text())):
            if n > MAX_FUNCTION_LINES:
                too_long[f"{_rel(p)}::{name}"] = n
    unexplained = {k: v for k, v in too_long.items() if k not in FUNCTION_EXCEPTIONS}
    assert not unexplained, f"functions over {MAX_FUNCTION_LINES} lines: {unexplained}"
    stale = sorted(set(FUNCTION_EXCEPTIONS) - set(too_long))
    assert not stale, f"listed as exceptions but now within the limit (remove them): {stale}"


@pytest.mark.parametrize("path", [p for p in _modules() if p.name == "__init__.py"], ids=_rel)
def test_every_package_says_what_it_owns(path):
    assert ast.get_docstring(ast.parse(path.read_text())), f"{_rel(path)} has no module docstring"


def test_packages_import_only_downwards():
    upward = []
    for p in _modules():
        here = _name(p)
        rank = _layer(here)
        if rank is None:
            continue
        for target in _calc_imports(p):
            there = _layer(target)
            if there is not None and there > rank:
                upward.append(f"{here} -> {target}")
    assert not upward, f"imports from a higher layer: {upward}"


def test_no_import_cycles():
    known = {_name(p) for p in _modules()}
    graph = {}
    for p in _modules():
        edges = set()
        for target in _calc_imports(p, runtime_only=True):
            # ``from calc.memory import layout`` names a module; ``from calc.memory.layout import X`` too.
            while target not in known and "." in target:
                target = target.rsplit(".", 1)[0]
            if target in known and target != "calc":
                edges.add(target)
        graph[_name(p)] = edges - {_name(p)}
    found = {f"{a} -> {b}" for a, targets in graph.items() for b in targets}
    stale = sorted(set(CYCLE_EXCEPTIONS) - found)
    assert not stale, f"listed as exceptions but no longer imported (remove them): {stale}"
    for edge in CYCLE_EXCEPTIONS:
        a, b = edge.split(" -> ")
        graph[a].discard(b)
    state: dict[str, int] = {}
    cycle: list[str] = []

    def visit(node: str, stack: list[str]) -> bool:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                cycle.extend([*stack[stack.index(nxt) :], nxt])
                return True
            if state.get(nxt) is None and visit(nxt, [*stack, nxt]):
                return True
        state[node] = 2
        return False

    for start in sorted(graph):
        if state.get(start) is None and visit(start, [start]):
            break
    assert not cycle, f"import cycle: {' -> '.join(cycle)}"


def test_old_module_names_are_the_new_modules():
    import importlib

    import calc

    for old, new in calc.MOVED_MODULES.items():
        assert importlib.import_module(old) is importlib.import_module(new), old


def _imported_names(path: pathlib.Path):
    """``(module, name)`` for every ``from calc... import name`` in a module (``name`` may be a module)."""
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("calc"):
            for alias in node.names:
                yield node.module, alias.name
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("calc."):
                    module, _, name = alias.name.rpartition(".")
                    yield module, name


def _package_of(module: str) -> str:
    """The package a ``calc`` module belongs to: itself for a package, else its parent."""
    if (CALC.joinpath(*module.split(".")[1:]) / "__init__.py").exists():
        return module
    return module.rsplit(".", 1)[0]


def test_private_parts_stay_in_their_package():
    """A ``_`` module or name is its package's part: only modules of that package (or below it) import it.

    ``calc.models._preset_data`` is read through ``calc.models.presets``; a caller elsewhere imports the public
    module, so a package can rearrange its parts without breaking anyone."""
    leaks = set()
    for p in _modules():
        here = _package_of(_name(p))
        for module, name in _imported_names(p):
            parts = [*module.split("."), name]
            private = next((i for i, part in enumerate(parts) if part.startswith("_") and part[:2] != "__"), None)
            if private is None:
                continue
            owner = _package_of(".".join(parts[:private]))
            if not (here == owner or here.startswith(owner + ".")):
                leaks.add(f"{_name(p)} -> {'.'.join(parts[: private + 1])}")
    unexplained = sorted(leaks - set(PRIVATE_EXCEPTIONS))
    assert not unexplained, f"private parts imported from another package: {unexplained}"
    stale = sorted(set(PRIVATE_EXCEPTIONS) - leaks)
    assert not stale, f"listed as exceptions but no longer imported (remove them): {stale}"


def test_engine_is_standard_library_only():
    """``calc`` runs in Pyodide from a zip with nothing installed: only the standard library and itself."""
    import sys

    foreign = set()
    for p in _modules():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0:
                roots = {(node.module or "").split(".")[0]}
            elif isinstance(node, ast.Import):
                roots = {a.name.split(".")[0] for a in node.names}
            else:
                continue
            foreign |= {f"{_rel(p)}: {r}" for r in roots if r not in sys.stdlib_module_names | {"calc", "__future__"}}
    assert not foreign, sorted(foreign)


def test_every_module_says_what_it_owns():
    """Not only packages: every module starts with a docstring (the API page and CONTRIBUTING.md's map read it)."""
    missing = [_rel(p) for p in _modules() if not ast.get_docstring(ast.parse(p.read_text()))]
    assert not missing, missing


def test_public_names_live_where_the_table_says():
    """``calc._NAMES`` maps each public name to a module that has it, and is exactly ``calc.__all__``."""
    import importlib

    import calc

    assert set(calc._NAMES) == set(calc.__all__)
    wrong = [f"{n} -> {m}" for n, m in calc._NAMES.items() if not hasattr(importlib.import_module(m), n)]
    assert not wrong, wrong


def test_contributing_maps_every_package_and_folder():
    """CONTRIBUTING.md has a paragraph for every package of ``calc`` and every top-level folder a change lands in."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    packages = sorted(_name(p) for p in _modules() if p.name == "__init__.py" and _name(p).count(".") == 1)
    folders = ["hooks/", "docs/", "validation/", "tests/", "tools/", "bench/"]
    missing = [name for name in packages + folders if f"`{name}" not in text]
    assert not missing, f"CONTRIBUTING.md's map does not mention: {missing}"
    for kind in ("preset", "calculator field", "new calculator", "prose number", "chart", "exercise",
                 "validation row", "published run"):  # fmt: skip
        assert f"### A {kind}" in text or f"### An {kind}" in text, kind


def test_no_build_is_quiet():
    """MkDocs' quiet flag sets its logger to ERROR, so the warnings ``--strict`` counts never reach its counter: a
    quiet strict build passes with a broken reference (it did, with two, until this test). No command here runs
    mkdocs with it; a build that must be quiet captures its output instead."""
    flags = ("-" + "-quiet", " -" + "q ")  # spelled apart so this file does not list itself
    files = [ROOT / "Makefile", *ROOT.glob("tools/*.py"), *ROOT.glob("bench/*.py"), *ROOT.glob("tests/*.py")]
    files += [p for p in ROOT.glob(".ci/*") if p.is_file()]
    found = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in files
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if "mkdocs" in line and any(f in line for f in flags)
    ]
    assert not found, f"mkdocs run quiet (its warnings never fail --strict): {found}"
