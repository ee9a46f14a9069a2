"""The README's performance table, rendered from ``bench/results.json`` (issue 20): never typed by hand.

``README.md`` holds the table between [`START`][] and [`END`][]; [`update`][] replaces what lies between with
[`render`][]'s block. ``bench/run.py`` calls [`write`][] whenever it writes ``bench/results.json``, and
``tests/test_bench.py`` fails when the README and ``results.json`` disagree. A figure ``results.json`` lacks is
shown as "not measured", never guessed.

Usage: ``.venv/bin/python bench/readme.py [--check]`` (rewrite the README from ``results.json``; ``--check``: only
say whether it is current, exit 1 if not).
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from collections.abc import Callable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from calc.units import format_bytes

__all__ = ["END", "NOT_MEASURED", "QUIET_LOAD", "ROWS", "START", "render", "update", "write"]

README = ROOT / "README.md"
RESULTS = ROOT / "bench" / "results.json"
START = "<!-- bench-table: rendered by bench/readme.py from bench/results.json; edit those, not this -->"
"""The line before the rendered block in ``README.md``."""
END = "<!-- /bench-table -->"
"""The line after it."""
NOT_MEASURED = "not measured"
"""The cell of a figure ``results.json`` does not hold."""
QUIET_LOAD = 2.0
"""A quiet machine's 1-minute load is below this (issue 20, Build 5)."""

Results = Mapping[str, object]


def _ms(value: float) -> str:
    """Milliseconds: whole from 100 up, else one decimal.

    Examples:
        >>> _ms(285.6), _ms(14.473), _ms(2)
        ('286', '14.5', '2.0')
    """
    return f"{value:.0f}" if value >= 100 else f"{value:.1f}"


def _spread(fig: Mapping[str, object], fmt: Callable[[float], str], unit: str = "") -> str:
    """``median unit (min–max)``.

    Examples:
        >>> _spread({"median": 0.571, "min": 0.244, "max": 1.134}, "{:.2f}".format)
        '0.57 (0.24–1.13)'
        >>> _spread({"median": 285.6, "min": 224.4, "max": 385}, _ms, " ms")
        '286 ms (224–385)'
    """
    return f"{fmt(fig['median'])}{unit} ({fmt(fig['min'])}–{fmt(fig['max'])})"


def _ratio(r: Results, key: str) -> str:
    return _spread(r[key], "{:.2f}".format)


def _import_calc(r: Results) -> str:
    fig = r["import_calc_ms"]
    worst = fig["worst_calculator"]
    row = fig["calculators"][worst]
    module = f"slowest `{row['module']}`: {_ms(row['median'])} ms"
    return f"{_spread(fig, _ms, ' ms')}; then one calculator's module alone, {module}"


def _visit(r: Results, page: str, visit: str) -> str:
    """A visit's bytes as sent (with what they weigh as files when compressed) and its requests."""
    base = f"bytes_{page}_{visit}"
    sent, raw = r[base]["median"], r[f"{base}_raw"]["median"]
    requests = r[f"{base}_requests"]["median"]
    if sent == 0:
        return f"0 B of bodies, {requests} requests"
    return f"{format_bytes(sent)} ({format_bytes(raw)} as files), {requests} requests"


def _home_first(r: Results) -> str:
    requests = r.get("home_requests", r["bytes_home_first_requests"])["median"]
    sent, raw = r["home_bytes_brotli"]["median"], r["bytes_home_first_raw"]["median"]
    return f"{format_bytes(sent)} brotli ({format_bytes(raw)} as files), {requests} requests"


def _fcp(r: Results) -> str:
    home, other = (_ms(r[f"fcp_{k}_calculator_ms"]["median"]) for k in ("with", "without"))
    return f"{home} ms / {other} ms, ratio {_ratio(r, 'fcp_ratio')}"


def _seconds(r: Results, key: str) -> str:
    return f"{r[key]['median']:.1f} s"


def _worst(r: Results, key: str, field: str) -> str:
    return f": {r[key][field]}" if key in r and field in r[key] else ""


ROWS: tuple[tuple[str, Callable[[Results], str], Callable[[Results], str]], ...] = (
    ("ready_ratio", lambda r: "Home page every calculator ready / stock bare boot", lambda r: _ratio(r, "ready_ratio")),
    (
        "ready_ratio_own_runtime",
        lambda r: "…over a bare boot of our own runtime",
        lambda r: _ratio(r, "ready_ratio_own_runtime"),
    ),
    ("import_calc_ms", lambda r: "`import calc` in Pyodide, fresh worker", _import_calc),
    (
        "recompute_p95_ms",
        lambda r: (
            "Recompute p95, worst calculator but the planner, after the warm-up"
            + _worst(r, "recompute_p95_ms", "worst_case")
        ),
        lambda r: _spread(r["recompute_p95_ms"], _ms, " ms"),
    ),
    (
        "recompute_cold_p95_ms",
        lambda r: (
            "…edited as soon as the page settles, before the warm-up" + _worst(r, "recompute_cold_p95_ms", "worst_case")
        ),
        lambda r: _spread(r["recompute_cold_p95_ms"], _ms, " ms"),
    ),
    (
        "plan_first_ms",
        lambda r: "Planner, 1,024 GPUs: best layout so far on screen (p95)",
        lambda r: _spread(r["plan_first_ms"], _ms, " ms"),
    ),
    (
        "plan_full_ms",
        lambda r: "Planner, 1,024 GPUs: full ranking on screen (p95)",
        lambda r: _spread(r["plan_full_ms"], _ms, " ms"),
    ),
    (
        "max_render_ms",
        lambda r: "Slowest render in Pyodide but the planner" + _worst(r, "max_render_ms", "worst"),
        lambda r: _spread(r["max_render_ms"], _ms, " ms"),
    ),
    ("home_bytes_brotli", lambda r: "Home page, first visit", _home_first),
    ("bytes_home_second", lambda r: "Home page, second visit", lambda r: _visit(r, "home", "second")),
    (
        "bytes_no_calc_first",
        lambda r: "Glossary (no calculator), first / second visit",
        lambda r: f"{_visit(r, 'no_calc', 'first')} / {_visit(r, 'no_calc', 'second')}",
    ),
    ("fcp_ratio", lambda r: "First contentful paint, home / glossary", _fcp),
    ("build_clean_s", lambda r: "Strict build of a fresh clone", lambda r: _seconds(r, "build_clean_s")),
    ("build_noop_s", lambda r: "The same strict build again, nothing changed", lambda r: _seconds(r, "build_noop_s")),
    (
        "rebuild_edit_s",
        lambda r: "One-line edit under `make serve`, to the served page",
        lambda r: _seconds(r, "rebuild_edit_s"),
    ),
)
"""The table's rows: the ``results.json`` key each shows (its load is the row's), its label and its cell."""


def _intro(r: Results) -> str:
    loads = [r[key]["load"] for key, _, _ in ROWS if key in r]
    if not loads:
        return "No figure measured yet: run `make bench`."
    low, high = min(x["min"] for x in loads), max(x["max"] for x in loads)
    quiet = (
        f"quiet (below {QUIET_LOAD:g})"
        if high < QUIET_LOAD
        else f"not quiet (issue 20 asks for below {QUIET_LOAD:g}), so every time is inflated and spread wide"
    )
    return textwrap.fill(
        f"Latest figures (`bench/results.json`, last written {r.get('when', '?')}; {r.get('runs', '?')} cold runs a "
        f"figure, one sample for the build ones) on {r.get('cpus', '?')} cores, 1-minute load {low:.1f} to "
        f"{high:.1f} over their samples: {quiet}.",
        width=118,
    )


def render(results: Results) -> str:
    r"""The block between the markers: a sentence on the run and the table, one row per [`ROWS`][] entry.

    Examples:
        >>> fig = {"median": 0.571, "min": 0.244, "max": 1.134, "load": {"median": 1.2, "min": 0.5, "max": 1.5}}
        >>> out = render({"ready_ratio": fig, "when": "2026-12-01T12:02:25Z", "runs": 7, "cpus": 2})
        >>> print(out.split("\n\n")[0].replace("\n", " "))  # doctest: +ELLIPSIS
        Latest figures (`bench/results.json`, last written 2026-12-01T12:02:25Z; ...: quiet (below 2).
        >>> print("\n".join(out.splitlines()[3:8]))
        | Figure (`results.json` key) | Median (min–max) | Load |
        |---|---|---|
        | Home page every calculator ready / stock bare boot (`ready_ratio`) | 0.57 (0.24–1.13) | 1.2 |
        | …over a bare boot of our own runtime (`ready_ratio_own_runtime`) | not measured | — |
        | `import calc` in Pyodide, fresh worker (`import_calc_ms`) | not measured | — |
    """
    lines = [_intro(results), "", "| Figure (`results.json` key) | Median (min–max) | Load |", "|---|---|---|"]
    for key, label, cell in ROWS:
        if key in results:
            shown, load = cell(results), f"{results[key]['load']['median']:.1f}"
        else:
            shown, load = NOT_MEASURED, "—"
        lines.append(f"| {label(results)} (`{key}`) | {shown} | {load} |")
    return "\n".join(lines)


def update(text: str, results: Results) -> str:
    """``text`` (the README) with the block between [`START`][] and [`END`][] rendered from ``results``.

    Examples:
        >>> update(f"a\\n{START}\\nold\\n{END}\\nb\\n", {}).splitlines()[2]
        'No figure measured yet: run `make bench`.'
        >>> update("no markers", {})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        RuntimeError: README.md: expected one line '<!-- bench-table: ...' and one line '<!-- /bench-table -->' after it
    """
    head, sep, rest = text.partition(START + "\n")
    _, sep2, tail = rest.partition(END + "\n")
    if not sep or not sep2 or START in tail or END in head:
        msg = f"README.md: expected one line {START!r} and one line {END!r} after it"
        raise RuntimeError(msg)
    return f"{head}{START}\n{render(results)}\n{END}\n{tail}"


def write(results_path: Path = RESULTS, readme: Path = README) -> bool:
    """Render ``readme``'s table from ``results_path``; whether the file changed."""
    text = readme.read_text(encoding="utf-8")
    new = update(text, json.loads(results_path.read_text(encoding="utf-8")))
    if new != text:
        readme.write_text(new, encoding="utf-8")
    return new != text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if README.md is not current; write nothing")
    args = parser.parse_args(argv)
    if args.check:
        current = README.read_text(encoding="utf-8")
        stale = update(current, json.loads(RESULTS.read_text(encoding="utf-8"))) != current
        print("README.md's table is stale: run bench/readme.py" if stale else "README.md's table is current")
        return int(stale)
    print("README.md rewritten" if write() else "README.md already current")
    return 0


if __name__ == "__main__":
    sys.exit(main())
