"""The boot and recompute path (issue 12, targets 1 and 3), by explicit signals, never by timing.

* The runtime the site ships: Pyodide under a content-hashed ``assets/runtime/<hash>/``, its stdlib and the
  engine precompiled to hash-based ``.pyc`` by the pinned Pyodide itself, stored uncompressed, deterministic,
  giving the same results as CPython; no lock file shipped.
* Its fallback: without the precompiled stdlib the worker boots the stock one and the calculators still start.
* The page: one worker, started from the ``<head>`` and adopted by ``calc.mjs``; every input posts its request at
  once (no debounce); a live answer is patched into the results in place.
* The engine: ``render(name)`` imports only that calculator's module.
"""

from __future__ import annotations

import importlib
import json
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from _helpers import run_captured
from conftest import READY_TIMEOUT_MS, Watch, wait_settled

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import build_runtime  # tools/ is not a package: found through sys.path

pytestmark = pytest.mark.skipif(sys.platform == "emscripten", reason="host-only: builds, node, browser")


# The engine -------------------------------------------------------------------------------------


def test_module_table_names_each_calculators_module() -> None:
    from calc.widgets import _MODULE_OF, CALCULATOR_MODULES

    found = {importlib.import_module(f"calc.widgets.{m}").CALCULATOR.name: m for m in CALCULATOR_MODULES}
    assert found == _MODULE_OF, "add the new calculator to calc.widgets._MODULE_OF"


def test_render_imports_only_the_calculator_it_renders() -> None:
    code = (
        "import sys, calc.widgets as w; assert w.render('will-it-fit', {})['ok']; "
        "print(sorted(m for m in sys.modules if m.startswith('calc.widgets.')))"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    from calc.widgets import CALCULATOR_MODULES

    loaded = {m.removeprefix("calc.widgets.") for m in json.loads(proc.stdout.replace("'", '"'))}
    assert loaded & set(CALCULATOR_MODULES) == {"fit"}  # shared helpers (_html, …) may come along


def test_an_unknown_calculator_is_still_a_calc_error() -> None:
    from calc.widgets import render

    assert render("no-such-calculator", {})["error"]["code"] == "unknown-name"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ('const R = "x"; const I = "__LC_LOCK_INFO__";', "__LC_RUNTIME__"),  # placeholder gone: fail, not guess
        ('"__LC_RUNTIME__" "__LC_RUNTIME__" "__LC_LOCK_INFO__"', "__LC_RUNTIME__"),  # twice: ambiguous
        ('const R = "__LC_RUNTIME__";', "__LC_LOCK_INFO__"),
    ],
)
def test_the_worker_placeholders_are_filled_exactly_once_or_the_build_fails(text: str, problem: str) -> None:
    with pytest.raises(RuntimeError, match=problem):
        build_runtime.fill_worker(text, "runtime/ab/", {})


# The built site ----------------------------------------------------------------------------------


def _runtime(built_site: Path) -> Path:
    folders = sorted((built_site / "assets" / "runtime").iterdir())
    assert len(folders) == 1, folders
    return folders[0]


def test_the_runtime_folder_is_named_by_its_content(built_site: Path) -> None:
    folder = _runtime(built_site)
    names = (*build_runtime.RUNTIME_FILES, build_runtime.COMPILED_STDLIB)
    assert sorted(p.name for p in folder.iterdir() if not p.name.endswith((".br", ".gz"))) == sorted(names)
    assert folder.name == build_runtime.runtime_hash({n: (folder / n).read_bytes() for n in names})
    worker = (built_site / build_runtime.WORKER).read_text(encoding="utf-8")
    assert f'const RUNTIME = "runtime/{folder.name}/";' in worker
    assert "__LC_" not in worker
    assert '"abi_version"' in worker  # the lock file's info, inlined
    assert not list(built_site.rglob("pyodide-lock.json")), "the lock file is inlined, not shipped"


def _pyc_flags(data: bytes) -> int:
    return int.from_bytes(data[4:8], "little")


def test_the_archives_are_stored_and_hold_hash_based_pycs(built_site: Path) -> None:
    stdlib = zipfile.ZipFile(_runtime(built_site) / build_runtime.COMPILED_STDLIB)
    engine = zipfile.ZipFile(built_site / "assets" / "calc" / "calc.zip")
    for archive in (stdlib, engine):
        assert {i.compress_type for i in archive.infolist()} == {zipfile.ZIP_STORED}  # transfer compression works
    pycs = [n for n in stdlib.namelist() if n.endswith(".pyc")]
    assert {"encodings/__init__.pyc", "json/__init__.pyc", "fractions.pyc", "lc_stdlib_fallback.pyc"} <= set(pycs)
    stock = zipfile.ZipFile(ROOT / "node_modules" / "pyodide" / "python_stdlib.zip")
    assert not [n for n in stdlib.namelist() if n.endswith(".py")]  # the cut: the used modules only, compiled
    assert "json/tool.pyc" not in pycs and "json/tool.py" in stock.namelist()
    assert len(pycs) < len([n for n in stock.namelist() if n.endswith(".py")]) / 2
    magics = {stdlib.read(n)[:4] for n in pycs}
    assert len(magics) == 1
    assert {_pyc_flags(stdlib.read(n)) for n in pycs} == {0b01}  # unchecked: no source to compare with
    members = engine.namelist()
    assert "calc/widgets/__init__.pyc" in members
    assert not [n for n in members if "__pycache__" in n or not n.endswith(".pyc")]  # sourceless
    sources = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "calc").rglob("*.py"))
    assert sorted(n[:-1] for n in members) == sources  # one .pyc per engine module
    for name in members:
        pyc = engine.read(name)
        assert pyc[:4] in magics and _pyc_flags(pyc) == 0b01  # unchecked: no source to compare with


# Under the pinned Pyodide ------------------------------------------------------------------------


@pytest.mark.pyodide
def test_the_precompiled_runtime_gives_the_same_results_as_cpython() -> None:
    import pyodide_cases

    built = build_runtime.compiled(ROOT / "node_modules" / "pyodide")
    proc = run_captured(
        ["node", "tests/pyodide/run.mjs", "cases", str(built / "calc.zip"), str(built / build_runtime.COMPILED_STDLIB)],
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "FETCHES 0" in proc.stdout.splitlines()  # the cut stdlib holds everything the engine imports
    line = next(x for x in proc.stdout.splitlines() if x.startswith("CASES "))
    assert json.loads(line.removeprefix("CASES ")) == json.loads(json.dumps(pyodide_cases.run_cases(), sort_keys=True))


FALLBACK = """
import json, sys
import lc_stdlib_fallback as fb
out = {"before": list(fb.misses)}
try:
    import no_such_module_anywhere
except ImportError:
    out["unknown"] = "ImportError"
import json.tool, xml.dom.minidom, email.mime.text
out["cp1252"] = "\u00e9".encode("cp1252").hex()
out["misses"] = fb.misses
out["json_tool"] = json.tool.__file__
json.dumps(out)
"""


@pytest.mark.pyodide
def test_an_import_the_cut_stdlib_misses_fetches_the_stock_one_once() -> None:
    """Issue 20 Build 1: the site ships only the used stdlib modules; any other stdlib import still works. A
    submodule of a package the cut holds in part (``json.tool``), a package it lacks (``xml``), a codec
    (``cp1252``) and a package's submodules (``email.mime``) all import, from one fetch of the stock archive; a
    name outside the stdlib is an ``ImportError`` that fetches nothing."""
    built = build_runtime.compiled(ROOT / "node_modules" / "pyodide")
    stdlib = str(built / build_runtime.COMPILED_STDLIB)
    before = run_captured(["node", "tests/pyodide/run.mjs", "python", stdlib, "import x_not_here"], timeout=600)
    assert before.returncode != 0 and "FETCHES 0" in before.stdout, before.stdout[-2000:]
    proc = run_captured(["node", "tests/pyodide/run.mjs", "python", stdlib, FALLBACK], timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("RESULT ")).removeprefix("RESULT "))
    assert "FETCHES 1" in proc.stdout.splitlines()
    assert out["before"] == [] and out["unknown"] == "ImportError" and out["cp1252"] == "e9"
    assert {"json.tool", "encodings.cp1252"} <= set(out["misses"])
    assert out["json_tool"].startswith("/lib/python_stdlib_full.zip/")


@pytest.mark.pyodide
def test_compiling_twice_gives_the_same_bytes_with_pyodides_magic(tmp_path: Path) -> None:
    shutil.copytree(ROOT / "calc", tmp_path / "engine" / "calc", ignore=shutil.ignore_patterns("__pycache__"))
    summaries, archives = [], []
    for run in ("a", "b"):
        proc = run_captured(
            ["node", "tools/build_runtime.mjs", str(tmp_path / run), str(tmp_path / "engine")], timeout=600
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        summaries.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        archives.append({p.name: p.read_bytes() for p in sorted((tmp_path / run).iterdir())})
    assert archives[0] == archives[1]
    assert (
        summaries[0]["python"]
        == json.loads((ROOT / "node_modules/pyodide/pyodide-lock.json").read_text())["info"]["python"]
    )
    pyc = zipfile.ZipFile(tmp_path / "a" / "calc.zip").read("calc/__init__.pyc")
    assert pyc[:4].hex() == summaries[0]["magic"]


ALONE = """
import json, sys, zipimport
sys.path.insert(0, "/home/pyodide/calc.zip")
from calc.widgets import _MODULE_OF
out = {}
for name, module in sorted(_MODULE_OF.items()):
    for m in [m for m in sys.modules if m == "calc" or m.startswith("calc.")]:
        del sys.modules[m]
    __import__(f"calc.widgets.{module}")
    came = sorted(m for m in sys.modules if m == "calc" or m.startswith("calc."))
    bad = [m for m in came if not isinstance(sys.modules[m].__loader__, zipimport.zipimporter)
           or not sys.modules[m].__file__.endswith(".pyc")]
    out[name] = {"module": module, "came": came, "not_from_pyc": bad}
json.dumps(out)
"""


@pytest.mark.pyodide
def test_each_calculator_imports_alone_from_the_archive_with_zipimport() -> None:
    """As the worker boots: ``calc.zip`` on ``sys.path`` (nothing unpacked); each calculator's module imported
    alone in the pinned Pyodide comes from its precompiled ``.pyc`` and brings no other calculator's module."""
    built = build_runtime.compiled(ROOT / "node_modules" / "pyodide")
    script = f"""
import {{ readFileSync }} from "node:fs";
const {{ loadPyodide }} = await import({json.dumps((ROOT / "node_modules/pyodide/pyodide.mjs").as_uri())});
const py = await loadPyodide();
py.FS.writeFile("/home/pyodide/calc.zip", new Uint8Array(readFileSync({json.dumps(str(built / "calc.zip"))})));
process.stdout.write("ALONE " + py.runPython({json.dumps(ALONE)}) + "\\n");
"""
    node = ["node", "--input-type=module", "-e", script]
    proc = run_captured(node, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    alone = json.loads(next(x for x in proc.stdout.splitlines() if x.startswith("ALONE ")).removeprefix("ALONE "))
    from calc.widgets import _MODULE_OF, CALCULATOR_MODULES

    assert set(alone) == set(_MODULE_OF)
    for name, row in alone.items():
        print(f"{name}: {len(row['came'])} calc modules: {' '.join(row['came'])}")  # the list, shown with -s
        assert row["not_from_pyc"] == [], f"{name}: imported from source, not the archive's .pyc"
        others = {m.rsplit(".", 1)[1] for m in row["came"] if m.startswith("calc.widgets.")} & set(CALCULATOR_MODULES)
        assert others == {row["module"]}, f"{name} brought another calculator's module: {others}"


# In the browser ----------------------------------------------------------------------------------

COUNT_WORKERS = """(() => {
  const lc = (window.__lcBoot = { workers: 0, posted: 0 });
  const Native = window.Worker;
  window.Worker = class extends Native {
    constructor(...args) {
      super(...args);
      this.lcCalc = String(args[0]).includes("calc-worker");
      if (this.lcCalc) lc.workers += 1;
    }
    postMessage(...args) { if (this.lcCalc) lc.posted += 1; return super.postMessage(...args); }
  };
})();"""


def _outputs(fragment: str) -> dict[str, str]:
    import html

    pattern = r'data-output="([^"]+)"[^>]*>(.*?)</(?:span|strong|p|td|div)>'
    return {
        name: " ".join(html.unescape(re.sub(r"<[^>]+>", "", inner)).split())
        for name, inner in re.findall(pattern, fragment, re.DOTALL)
    }


@pytest.mark.browser
def test_a_normal_boot_uses_the_precompiled_runtime_from_one_early_worker(browser, site_url) -> None:
    context = browser.new_context()
    watch = Watch(context, site_url)
    page = context.new_page()
    watch.attach(page)
    page.add_init_script(COUNT_WORKERS)
    page.goto(f"{site_url}/")
    wait_settled(page, "will-it-fit")
    assert page.evaluate("window.__lcBoot.workers") == 1
    assert page.evaluate("window.__lcEarlyWorker") is None  # the <head>'s worker was adopted, not left running
    names = [u.rsplit("/", 1)[-1] for u in watch.requests]
    assert "python_stdlib.pyc.zip" in names
    assert "python_stdlib.zip" not in names and "pyodide-lock.json" not in names
    assert any(re.search(r"/assets/runtime/[0-9a-f]{16}/pyodide\.asm\.wasm$", u) for u in watch.requests)
    context.close()
    assert watch.errors == [] and watch.foreign() == []


@pytest.mark.browser
@pytest.mark.parametrize("failure", ["missing", "unreachable"])
def test_without_the_precompiled_stdlib_the_calculators_still_start(browser, site_url, failure: str) -> None:
    from calc.widgets import render

    context = browser.new_context()
    if failure == "missing":
        context.route("**/python_stdlib.pyc.zip", lambda route: route.fulfill(status=404, body="gone"))
    else:
        context.route("**/python_stdlib.pyc.zip", lambda route: route.abort())
    watch = Watch(context, site_url)
    page = context.new_page()
    watch.attach(page)
    page.goto(f"{site_url}/")
    root = page.locator('[data-calc="will-it-fit"]').first
    root.locator('[name="params"]').fill("13B")
    wait_settled(page, root)
    assert any(u.endswith("/python_stdlib.zip") for u in watch.requests), "the stock stdlib was not fetched"
    live = _outputs(root.locator("[data-results]").inner_html())
    assert live == _outputs(render("will-it-fit", {"params": "13B"})["html"])
    context.close()
    errors = [e for e in watch.errors if "python_stdlib.pyc.zip" not in e]  # the refused request itself
    assert errors == [] and watch.foreign() == []


@pytest.mark.browser
def test_each_input_is_sent_at_once_and_answered_in_place(browser, site_url) -> None:
    from calc.widgets import render

    context = browser.new_context()
    page = context.new_page()
    page.add_init_script(COUNT_WORKERS)
    page.goto(f"{site_url}/")
    root = page.locator('[data-calc="will-it-fit"]').first
    wait_settled(page, root)
    posted = page.evaluate(
        """() => {
          const root = document.querySelector('[data-calc="will-it-fit"]');
          root.querySelector('[data-output="verdict"]').lcMark = true;  // survives only a patch in place
          const field = root.querySelector('[name="params"]');
          const before = window.__lcBoot.posted;
          field.value = '13B';
          field.dispatchEvent(new Event('input', { bubbles: true }));
          return window.__lcBoot.posted - before;  // within the same task as the event: no debounce
        }"""
    )
    assert posted == 1
    wait_settled(page, root)
    assert page.evaluate("document.querySelector('[data-calc=\"will-it-fit\"] [data-output=verdict]').lcMark")
    expected = _outputs(render("will-it-fit", {"params": "13B"})["html"])
    assert _outputs(root.locator("[data-results]").inner_html()) == expected
    page.wait_for_selector('[data-calc="will-it-fit"][data-state="ready"]', timeout=READY_TIMEOUT_MS)
    context.close()
