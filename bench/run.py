"""``make bench``: the figures of issue 12, measured side by side in one run; prints a table, writes results.json.

Against a built site on 127.0.0.1 (``--site``, else a fresh strict build), with Playwright and Debian's
``/usr/bin/chromium``, every page load in a fresh (cold) browser context:

* ``ready_ratio``, ``ready_ratio_own_runtime``: every calculator on the home page ``ready``, over the stock bare
  boot (the pinned Pyodide started in a module worker with ``loadPyodide({indexURL})``, running ``1+1``) and over
  a bare boot of the runtime the site ships; from ``bench/boot.py``'s [`measure_boot`][boot.measure_boot]:
  variants interleaved in rotated order, each ratio taken within its round.
* ``import_calc_ms``: ``import calc`` in Pyodide in the browser, in a fresh worker that boots the runtime the site
  ships as ``calc-worker.mjs`` does (``calc.zip`` on ``sys.path``), timed by the worker and posted when done; then,
  in the same interpreter, each calculator's module alone (``calculators``: module, page, median, min, max), one
  worker per calculator and round (``boot.measure_import``).
* ``plan_first_ms``, ``plan_full_ms``: the planner's own targets (it searches): input event to its best layout so
  far on screen, and to the full ranking, p95 at the page's 1,024 GPUs, a new matmul efficiency each edit, so each
  a search (``boot.measure_recompute``).
* ``recompute_p95_ms``: input event to updated DOM, the p95 of the worst calculator but the planner
  (``boot.measure_recompute``), per round; its median, min and max over the rounds. Timed once every calculator on
  the page shows ``data-warmed`` (the worker's warm-up is over); ``recompute_cold_p95_ms`` is the same for each
  page's default case edited as soon as the page has settled, before it.
* ``max_render_ms``: the slowest ``calc.widgets.render`` but the planner's inside Pyodide (under Node,
  ``bench/render.mjs``) over each calculator's default and heavy inputs (the median of the runs of each case).
* ``home_bytes_brotli`` and the ``bytes_*`` figures: bytes of response bodies the site's server
  (``tools/serve.py``: pre-compressed files, validators) sent for one visit, counted by the server; first visit
  in a cold context, second visit a new page in the same context (its HTTP cache warm). The home page and a page
  without a calculator; ``*_raw`` is what the same responses weigh uncompressed.
* ``fcp_*``: first contentful paint of the home page (a calculator) and of a page without one, interleaved
  within each round, and their ratio.
* ``home_requests``: the requests of the home page's first visit (``bytes_home_first_requests``).
* ``build_clean_s``, ``build_noop_s``, ``rebuild_edit_s``: the authors' figures from ``bench/build.py`` (a fresh
  clone's strict build, the same build again, a one-line edit under ``make serve``), one sample each;
  ``--only build`` runs just them.

Each figure is the median, min and max over ``--runs`` (at least 7 by default) cold runs, with the machine's
load (``os.getloadavg()``, 1 minute) over the samples that made it. Not part of ``make test``'s pass/fail;
``tests/test_bench.py`` smoke-runs one run of one figure.

Usage: ``.venv/bin/python bench/run.py [--site DIR] [--runs 7] [--only bytes,fcp,...] [--json PATH] [--update]``
(``--update`` re-measures the ``--only`` figures and keeps the rest of ``--json``). Writing ``bench/results.json``
re-renders the README's table from it (``bench/readme.py``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "bench"), str(ROOT / "tools")]

import boot
import readme
from build import measure_build
from serve import serving

RESULTS = ROOT / "bench" / "results.json"
NO_CALC_PAGE = "glossary/"
"""A page without a calculator (checked at run time)."""
FIGURES = ("boot", "import", "recompute", "render", "bytes", "fcp", "build")
SITE_FREE = ("build",)
"""Figures that need no built site (they build their own)."""
TIMEOUT_MS = 180_000
RECOMPUTE_EDITS = 21
"""Edits per recompute case and round: enough for a p95 (the 20th of 21)."""
_FCP_JS = """() => new Promise((resolve) => {
  new PerformanceObserver((list, obs) => {
    const fcp = list.getEntriesByName('first-contentful-paint')[0];
    if (fcp) { obs.disconnect(); resolve(fcp.startTime); }
  }).observe({ type: 'paint', buffered: true });
})"""


def stats(values: list[float], loads: list[float], unit: str, digits: int = 3) -> dict[str, object]:
    """Median, min and max of ``values`` with the load average over the same samples.

    Examples:
        >>> stats([3, 1, 2], [0.5, 1.0, 1.5], "ms")
        {'median': 2, 'min': 1, 'max': 3, 'n': 3, 'unit': 'ms', 'load': {'median': 1.0, 'min': 0.5, 'max': 1.5}}
    """
    load = {"median": round(statistics.median(loads), 2), "min": round(min(loads), 2), "max": round(max(loads), 2)}
    med = statistics.median(values)
    rounded = [round(v, digits) if isinstance(v, float) else v for v in (med, min(values), max(values))]
    return {"median": rounded[0], "min": rounded[1], "max": rounded[2], "n": len(values), "unit": unit, "load": load}


def _from_boot(summary: dict[str, float], loads: list[float], unit: str) -> dict[str, object]:
    return {
        **{k: summary[k] for k in ("median", "min", "max", "n")},
        "unit": unit,
        "load": stats(loads, loads, "")["load"],
    }


def measure_boot(site: Path, runs: int) -> dict[str, object]:
    """The ready ratios, from ``boot.measure_boot`` (stock bare boot, own bare boot and the site, interleaved)."""
    got = boot.measure_boot(site, runs, ("stock", "own", "site"))
    loads = [rd[v]["load"] for rd in got["rounds"] for v in ("stock", "own", "site")]
    return {
        "ready_ratio": _from_boot(got["ratios"]["site_ready_over_stock"], loads, "ratio"),
        "ready_ratio_own_runtime": _from_boot(got["ratios"]["site_ready_over_own"], loads, "ratio"),
        "home_ready_ms": _from_boot(got["site"]["ready"], loads, "ms"),
        "stock_bare_boot_ms": _from_boot(got["stock"]["ready"], loads, "ms"),
        "own_bare_boot_ms": _from_boot(got["own"]["ready"], loads, "ms"),
    }


def measure_recompute(site: Path, runs: int) -> dict[str, object]:
    """The worst calculator's p95, input event to updated DOM: ``runs`` rounds of ``boot.measure_recompute``
    (each: every calculator's default and heavy case, [`RECOMPUTE_EDITS`][] edits each, one browser)."""
    worst: list[float] = []
    cold: list[float] = []
    loads: list[float] = []
    per_case: dict[str, list[float]] = {}
    planner: dict[str, list[float]] = {"plan_first_ms": [], "plan_full_ms": []}
    for _ in range(runs):
        loads.append(os.getloadavg()[0])
        got = boot.measure_recompute(site, RECOMPUTE_EDITS, in_place=(True,))
        worst.append(got["recompute_p95_ms"])
        cold.append(got["recompute_cold_p95_ms"])
        for key, values in planner.items():
            values.append(got[key])
        for case, row in got["cases"].items():
            if not case.startswith(boot.SEARCHES):
                per_case.setdefault(case, []).append(row["p95"])
            loads.append(row["load"])
    medians = {case: statistics.median(v) for case, v in per_case.items() if not case.endswith("/cold")}
    colds = {case: statistics.median(v) for case, v in per_case.items() if case.endswith("/cold")}
    return {
        "recompute_p95_ms": {
            **stats(worst, loads, "ms"),
            "worst_case": max(medians, key=medians.__getitem__),
            "cases_p95_median": {case: round(v, 2) for case, v in sorted(medians.items())},
        },
        "recompute_cold_p95_ms": {
            **stats(cold, loads, "ms"),
            "worst_case": max(colds, key=colds.__getitem__),
            "cases_p95_median": {case: round(v, 2) for case, v in sorted(colds.items())},
        },
        **{key: stats(values, loads, "ms") for key, values in planner.items()},
    }


def measure_import(site: Path, runs: int) -> dict[str, object]:
    """``import calc`` in Pyodide, and each calculator's module imported after it in the same fresh worker
    (``boot.measure_import``): ``import_calc_ms`` over every sample, its ``calculators`` each over its own."""
    got = boot.measure_import(site, runs)
    samples = got["samples"]
    loads = [s["load"] for s in samples]
    per: dict[str, dict[str, object]] = {}
    for name, module in got["modules"].items():
        mine = [s["calculator"] for s in samples if s["name"] == name]
        per[name] = {"module": f"calc.widgets.{module}", "page": got["pages"][name], **boot.summary(mine)}
    return {
        "import_calc_ms": {
            **stats([s["calc"] for s in samples], loads, "ms"),
            "calculators": per,
            "worst_calculator": max(per, key=lambda n: per[n]["median"]),
        }
    }


def render_cases() -> dict[str, list[tuple[str, dict[str, str]]]]:
    """Each calculator's defaults and, from ``boot.RECOMPUTE_CASES``, its heavy values."""
    cases: dict[str, list[tuple[str, dict[str, str]]]] = {}
    for name, rows in boot.RECOMPUTE_CASES.items():
        cases[name] = [("default", {})]
        cases[name] += [
            (f"{label}-{v}", {field: v}) for label, field, values in rows if label != "default" for v in values
        ]
    return cases


def measure_render(site: Path, runs: int) -> dict[str, object]:
    """The slowest case's median render in Pyodide under Node (``bench/render.mjs``), the planner's aside."""
    engine = site / "assets" / "calc" / "calc.zip"
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(render_cases(), f)
    try:
        load0 = os.getloadavg()[0]
        proc = subprocess.run(
            ["node", str(ROOT / "bench" / "render.mjs"), str(engine), f.name, str(runs)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
            timeout=1800,
        )
    finally:
        os.unlink(f.name)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RENDER ")), None)
    if proc.returncode or line is None:
        raise RuntimeError(
            f"bench/render.mjs failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        )
    times = json.loads(line.removeprefix("RENDER "))
    # The planner searches: its own targets are plan_first_ms / plan_full_ms (its cases stay listed here).
    worst = max((k for k in times if not k.startswith(boot.SEARCHES)), key=lambda k: statistics.median(times[k]["ms"]))
    loads = [load0, os.getloadavg()[0]]
    per_case = {k: round(statistics.median(v["ms"]), 3) for k, v in times.items()}
    return {"max_render_ms": {**stats(times[worst]["ms"], loads, "ms"), "worst": worst, "cases": per_case}}


class _Counter:
    """What the server sent: body bytes as sent and as they would weigh uncompressed, and the requests."""

    def __init__(self, site: Path) -> None:
        self.site, self.sent, self.raw, self.requests = site, 0, 0, 0

    def __call__(self, where: str, status: int, coding: str | None, body: int) -> None:
        self.requests += 1
        self.sent += body
        self.raw += (self.site / where).stat().st_size if body else 0

    def take(self) -> tuple[int, int, int]:
        out = (self.sent, self.raw, self.requests)
        self.sent = self.raw = self.requests = 0
        return out


def _visit(page, url: str, has_calc: bool) -> None:
    page.goto(url)
    if has_calc:
        page.wait_for_function(
            "() => { const r = [...document.querySelectorAll('[data-calc]')]; return r.length > 0 && r.every("
            "(e) => e.dataset.state === 'ready' && e.dataset.answered === e.dataset.seq); }",
            timeout=TIMEOUT_MS,
        )
    page.wait_for_load_state("networkidle", timeout=TIMEOUT_MS)  # the search index and fonts, fetched after load


def measure_bytes(site: Path, runs: int) -> dict[str, object]:
    """First- and second-visit bytes of the home page and of a page without a calculator."""
    from playwright.sync_api import sync_playwright

    counter = _Counter(site)
    pages = {"home": ("", True), "no_calc": (NO_CALC_PAGE, False)}
    samples: dict[str, list[int]] = {}
    loads: list[float] = []
    with serving(site, record=counter) as base, sync_playwright() as p:
        browser = boot.launch(p)
        try:
            for r in range(runs):
                for label, (path, has_calc) in list(pages.items())[r % 2 :] + list(pages.items())[: r % 2]:
                    context = browser.new_context()
                    counter.take()
                    _visit(context.new_page(), f"{base}/{path}", has_calc)
                    first = counter.take()
                    _visit(context.new_page(), f"{base}/{path}", has_calc)
                    second = counter.take()
                    context.close()
                    loads.append(os.getloadavg()[0])
                    for key, value in zip(("", "_raw", "_requests"), first, strict=True):
                        samples.setdefault(f"bytes_{label}_first{key}", []).append(value)
                    for key, value in zip(("", "_raw", "_requests"), second, strict=True):
                        samples.setdefault(f"bytes_{label}_second{key}", []).append(value)
        finally:
            browser.close()
    out = {k: stats(v, loads, "requests" if k.endswith("_requests") else "bytes") for k, v in samples.items()}
    out["home_bytes_brotli"] = out["bytes_home_first"]
    out["home_requests"] = out["bytes_home_first_requests"]
    return out


def measure_fcp(site: Path, runs: int) -> dict[str, object]:
    """First contentful paint with a calculator (home) and without (``NO_CALC_PAGE``), interleaved, and the ratio."""
    from playwright.sync_api import sync_playwright

    fcp: dict[str, list[float]] = {"with": [], "without": []}
    loads: list[float] = []
    with serving(site) as base, sync_playwright() as p:
        browser = boot.launch(p)
        try:
            for r in range(runs):
                order = [("with", ""), ("without", NO_CALC_PAGE)]
                for label, path in order[r % 2 :] + order[: r % 2]:
                    context = browser.new_context()
                    page = context.new_page()
                    page.goto(f"{base}/{path}")
                    fcp[label].append(page.evaluate(_FCP_JS))
                    loads.append(os.getloadavg()[0])
                    context.close()
        finally:
            browser.close()
    ratios = [a / b for a, b in zip(fcp["with"], fcp["without"], strict=True)]
    return {
        "fcp_with_calculator_ms": stats(fcp["with"], loads, "ms"),
        "fcp_without_calculator_ms": stats(fcp["without"], loads, "ms"),
        "fcp_ratio": stats(ratios, loads, "ratio"),
    }


MEASURES: dict[str, Callable[[Path, int], dict[str, object]]] = {
    "boot": measure_boot,
    "import": measure_import,
    "recompute": measure_recompute,
    "render": measure_render,
    "bytes": measure_bytes,
    "fcp": measure_fcp,
    "build": measure_build,
}


def table(results: dict[str, object]) -> str:
    """The printed table: one figure a line, median [min–max], and the load.

    Examples:
        >>> print(table({"fcp_ratio": stats([1.0, 0.9, 1.1], [1.0, 1.0, 1.0], "ratio")}))
        figure                                 median           min           max  unit       n  load
        fcp_ratio                                 1.0           0.9           1.1  ratio      3  1.0 (1.0-1.0)
    """
    rows = [f"{'figure':34} {'median':>10} {'min':>13} {'max':>13}  {'unit':8} {'n':>3}  load"]
    for name, fig in results.items():
        if not isinstance(fig, dict) or "median" not in fig:
            continue
        load = fig["load"]
        rows.append(
            f"{name:34} {fig['median']:>10} {fig['min']:>13} {fig['max']:>13}  {fig['unit']:8} {fig['n']:>3}  "
            f"{load['median']} ({load['min']}-{load['max']})"
        )
    return "\n".join(rows)


def build_site(dest: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "SITE_URL"} | {"NO_MKDOCS_2_WARNING": "1"}
    cmd = [
        sys.executable,
        "-m",
        "mkdocs",
        "build",
        "--strict",
        "--site-dir",
        str(dest),
    ]  # never quiet: tests/test_house.py::test_no_build_is_quiet
    proc = subprocess.run(cmd, cwd=ROOT, env=env, check=False, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"the strict build failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")


def run(site: Path, runs: int, only: tuple[str, ...]) -> dict[str, object]:
    """Measure ``only`` (names from [`FIGURES`][]) on ``site``; the results as ``results.json`` holds them."""
    if set(only) - set(SITE_FREE) and "data-calc=" in (site / NO_CALC_PAGE / "index.html").read_text("utf-8"):
        raise SystemExit(f"{NO_CALC_PAGE} has a calculator now: pick another page for NO_CALC_PAGE")
    results: dict[str, object] = {
        "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "runs": runs,
        "cpus": os.cpu_count(),
        "loadavg_start": [round(x, 2) for x in os.getloadavg()],
        "chromium": subprocess.run(
            [boot.CHROMIUM, "--version"], check=False, capture_output=True, text=True
        ).stdout.strip(),
    }
    for name in only:
        started = time.monotonic()
        results.update(MEASURES[name](site, runs))
        print(f"[{name}: {time.monotonic() - started:.0f} s]", file=sys.stderr)
    results["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--site", type=Path, help="a built site (default: a fresh strict build)")
    parser.add_argument("--runs", type=int, default=7, help="cold runs per figure (default 7)")
    parser.add_argument("--only", default=",".join(FIGURES), help=f"comma-separated subset of {','.join(FIGURES)}")
    parser.add_argument("--json", type=Path, default=RESULTS, help="where to write the results")
    parser.add_argument("--update", action="store_true", help="keep the other figures already in --json")
    args = parser.parse_args(argv)
    only = tuple(args.only.split(","))
    if unknown := [n for n in only if n not in MEASURES]:
        parser.error(f"unknown figure(s) {unknown}; known: {', '.join(FIGURES)}")
    with tempfile.TemporaryDirectory(prefix="lc-bench-site-") as tmp:
        site = args.site
        if site is None and set(only) - set(SITE_FREE):
            site = Path(tmp) / "site"
            build_site(site)
        site = site or Path(tmp)
        results = run(site.resolve(), args.runs, only)
    if args.update and args.json.exists():
        results = json.loads(args.json.read_text()) | results
    print(table(results))
    args.json.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    print(f"wrote {args.json}", file=sys.stderr)
    if args.json.resolve() == RESULTS and readme.write():  # the README quotes this file
        print(f"rewrote {readme.README.name}'s table (bench/readme.py)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
