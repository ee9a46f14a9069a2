"""The same engine under real Pyodide (the pinned npm package, run by Node)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import pyodide_cases

ROOT = Path(__file__).resolve().parent.parent
RUNNER = ROOT / "tests" / "pyodide" / "run.mjs"

pytestmark = [pytest.mark.pyodide, pytest.mark.skipif(sys.platform == "emscripten", reason="already in Pyodide")]


def _node(*args: str, timeout: int = 3600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["node", str(RUNNER), *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, check=False
    )


SHARDS = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")))
"""The engine suite runs as this many Node processes, one per xdist worker (``make test``: one per core), each
booting Pyodide once and running every SHARDS-th test (``--lc-shard``, ``tests/conftest.py``). Each shard is its
own class, so ``--dist loadscope`` hands them to different workers; a plain run (no xdist) boots once."""


def _engine_suite_shard(shard: int) -> None:
    """Every engine test (unit, golden, Hypothesis, doctest) also passes under Pyodide's Python: this shard's."""
    site_packages = ROOT / ".stamps" / "pyodide-site"
    assert (site_packages / ".done").exists(), "run `make test` (it installs requirements-pyodide.txt there)"
    proc = _node(
        "pytest",
        str(site_packages),
        "calc",
        "tests",
        "-q",
        "-p",
        "no:cacheprovider",
        "-m",
        "not browser and not pyodide",
        "--ignore=tests/test_site.py",
        "--ignore=tests/test_browser.py",
        f"--lc-shard={shard}/{SHARDS}",
    )
    tail = "\n".join(proc.stdout.splitlines()[-15:])
    assert proc.returncode == 0, f"{tail}\n{proc.stderr[-3000:]}"
    assert " passed" in tail


def _shard_class(shard: int) -> type:
    def test_engine_suite_passes_in_pyodide(self) -> None:
        _engine_suite_shard(shard)

    return type(
        f"TestEngineSuiteShard{shard}", (), {"test_engine_suite_passes_in_pyodide": test_engine_suite_passes_in_pyodide}
    )


for _i in range(SHARDS):
    globals()[f"TestEngineSuiteShard{_i}"] = _shard_class(_i)


def test_engine_zip_gives_the_same_results_as_cpython(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "hooks"))
    from lc_build import _engine_zip  # the archive the site ships

    archive = tmp_path / "calc.zip"
    _engine_zip(archive)
    proc = _node("cases", str(archive))
    assert proc.returncode == 0, proc.stderr[-3000:]
    line = next(x for x in proc.stdout.splitlines() if x.startswith("CASES "))
    in_pyodide = json.loads(line.removeprefix("CASES "))
    in_cpython = json.loads(json.dumps(pyodide_cases.run_cases(), sort_keys=True))
    assert in_pyodide == in_cpython
    assert in_pyodide["render"][2]["ok"] is False  # bad input came back as data, not an exception
