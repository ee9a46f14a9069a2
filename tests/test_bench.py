"""``make bench`` (bench/run.py): its helpers, a one-run smoke test of one figure, and the shape of results.json.

The figures themselves are not pass/fail here (issue 12: targets are held by the benchmark, not by timed tests).
"""

from __future__ import annotations

import doctest
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

import readme  # bench/readme.py: the README's table
import run as bench

REQUIRED = (
    "ready_ratio",
    "ready_ratio_own_runtime",
    "recompute_p95_ms",
    "recompute_cold_p95_ms",
    "max_render_ms",
    "home_bytes_brotli",
)
VISITS = tuple(f"bytes_{page}_{visit}" for page in ("home", "no_calc") for visit in ("first", "second"))
FCP = ("fcp_with_calculator_ms", "fcp_without_calculator_ms", "fcp_ratio")


def test_doctests() -> None:
    assert doctest.testmod(bench).failed == 0


@pytest.mark.parametrize(
    ("values", "median", "low", "high"),
    [
        ([5], 5, 5, 5),
        ([4, 1, 3, 2], 2.5, 1, 4),  # even count: the mean of the middle two
        ([0.1234567, 0.2], 0.162, 0.123, 0.2),  # floats rounded to 3 places
    ],
)
def test_stats(values: list[float], median: float, low: float, high: float) -> None:
    got = bench.stats(values, [1.0] * len(values), "ms")
    assert (got["median"], got["min"], got["max"], got["n"]) == (median, low, high, len(values))
    assert got["load"] == {"median": 1.0, "min": 1.0, "max": 1.0}


def test_render_cases_name_real_fields() -> None:
    """Every case bench/render.mjs times is a registered calculator's default or one of its fields."""
    from calc.widgets import calculators

    known = calculators()
    for name, rows in bench.render_cases().items():
        if name not in known:
            continue  # a calculator bench/boot.py knows before it is registered
        assert rows[0] == ("default", {})
        for _, inputs in rows:
            assert set(inputs) <= set(known[name].defaults), (name, inputs)


def _figure_ok(fig: dict, runs: int) -> None:
    assert fig["min"] <= fig["median"] <= fig["max"] and fig["n"] >= runs, fig
    assert set(fig["load"]) == {"median", "min", "max"}, fig


@pytest.mark.browser
def test_one_run_of_fcp_and_bytes(built_site: Path, tmp_path: Path) -> None:
    """Smoke: one cold run of the FCP and bytes figures against the real build, through the command line (in a
    process of its own: Playwright's sync API runs once per thread, and the session's browser holds it here)."""
    out = tmp_path / "results.json"
    cmd = [sys.executable, "bench/run.py", "--site", str(built_site), "--runs", "1", "--only", "fcp,bytes"]
    cmd += ["--json", str(out)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=900, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "home_bytes_brotli" in proc.stdout, proc.stdout  # the table
    results = json.loads(out.read_text())
    for key in (*FCP, *VISITS, "home_bytes_brotli"):
        _figure_ok(results[key], 1)
    assert results["bytes_home_first"]["median"] < results["bytes_home_first_raw"]["median"], "served compressed"
    assert results["bytes_home_second"]["median"] < results["bytes_home_first"]["median"] / 20, "second visit cached"


def test_committed_results_have_every_figure() -> None:
    """bench/results.json, the latest full run (the README quotes it), holds every figure over at least 7 runs."""
    path = ROOT / "bench" / "results.json"
    if not path.exists():
        pytest.skip("no bench/results.json yet: run make bench")
    results = json.loads(path.read_text())
    for key in (*REQUIRED, *VISITS, *FCP):
        assert key in results, key
        _figure_ok(results[key], 7)


BUILD = ("build_clean_s", "build_noop_s", "rebuild_edit_s")
"""The authors' figures (issue 20), one sample each: ``bench/run.py --only build``."""


def test_build_figures_shape() -> None:
    """The build figures have a figure's shape (one sample, seconds, the load), and ``--only build`` is known."""
    import build

    assert "build" in bench.FIGURES and bench.MEASURES["build"] is build.measure_build
    fig = build._figure(12.345, [1.0, 2.0])
    _figure_ok(fig, 1)
    assert (fig["median"], fig["unit"]) == (12.35, "s")


def test_committed_results_build_figures() -> None:
    """Once bench/results.json has the build figures (a ``--only build --update`` run), each is well formed."""
    results = json.loads((ROOT / "bench" / "results.json").read_text())
    if not any(key in results for key in BUILD):
        pytest.skip("bench/results.json has no build figures yet: run bench/run.py --only build --update")
    for key in BUILD:
        assert key in results, key
        _figure_ok(results[key], 1)
    if "home_requests" in results:  # from the bytes figure's next run
        _figure_ok(results["home_requests"], 1)


def test_import_figure_is_known() -> None:
    """``--only import`` measures ``import_calc_ms`` (``boot.measure_import``: a fresh worker per calculator)."""
    assert "import" in bench.FIGURES and bench.MEASURES["import"] is bench.measure_import
    assert "import-worker.mjs" in bench.boot._IMPORT_PAGE and "__lcImportGot" in bench.boot._IMPORT_PAGE


def test_committed_results_import_figure() -> None:
    """Once bench/results.json has ``import_calc_ms`` (``--only import --update``), it has every calculator the
    site embeds, each with its module and page."""
    from calc.widgets import _MODULE_OF

    results = json.loads((ROOT / "bench" / "results.json").read_text())
    if "import_calc_ms" not in results:
        pytest.skip("bench/results.json has no import_calc_ms yet: run bench/run.py --only import --update")
    fig = results["import_calc_ms"]
    _figure_ok(fig, 7)
    assert set(fig["calculators"]) <= set(_MODULE_OF) and fig["worst_calculator"] in fig["calculators"]
    for name, row in fig["calculators"].items():
        assert row["module"] == f"calc.widgets.{_MODULE_OF[name]}", name
        assert row["min"] <= row["median"] <= row["max"] and row["n"] >= 7, (name, row)


# The README's table (bench/readme.py) --------------------------------------------------------------------------


def test_readme_table_is_rendered_from_results() -> None:
    """README.md's performance table is what bench/readme.py renders from bench/results.json: run
    ``.venv/bin/python bench/readme.py`` after editing either."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    results = json.loads((ROOT / "bench" / "results.json").read_text())
    assert readme.update(text, results) == text, "README.md's table is stale: run .venv/bin/python bench/readme.py"


def test_readme_table_follows_a_changed_figure_and_marks_missing_ones() -> None:
    """A figure that changes in results.json changes the README (the check above can fail); one that results.json
    lacks reads "not measured", its load a dash."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    results = json.loads((ROOT / "bench" / "results.json").read_text())
    key = "ready_ratio"
    changed = {**results, key: {**results[key], "median": results[key]["median"] + 0.1}}
    assert readme.update(text, changed) != readme.update(text, results)
    without = {k: v for k, v in results.items() if k != key}
    row = next(line for line in readme.render(without).splitlines() if f"(`{key}`)" in line)
    assert row.endswith(f"| {readme.NOT_MEASURED} | — |"), row


def test_readme_doctests() -> None:
    assert doctest.testmod(readme).failed == 0
