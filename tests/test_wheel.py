"""`pip install .` works: the wheel holds only ``calc``, and ``trainmem`` runs from a fresh venv outside the repository.

One session-wide build: the working tree's files (tracked, and new ones git does not ignore) are copied to a
temporary directory outside the repository, as a clean clone would have them; ``pip wheel --no-deps`` builds
them with the pinned setuptools of ``[build-system]``; the wheel goes into a new venv (no system site-packages)
with ``--no-index``; every command then runs from another temporary directory, with no ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

pytestmark = [
    pytest.mark.wheel,
    pytest.mark.skipif(sys.platform == "emscripten", reason="builds and runs processes: host only"),
]


@dataclass(frozen=True)
class Installed:
    wheel: Path
    bin: Path
    cwd: Path
    env: dict[str, str]


def _sh(*args: str | Path, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, check=False, timeout=600
    )


def _clean_env() -> dict[str, str]:
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    return {**env, "PYTHONNOUSERSITE": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def _copy_tree(dest: Path) -> None:
    """The files a clone of this working tree has: tracked ones and new ones that git does not ignore."""
    listed = _sh("git", "ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT)
    assert listed.returncode == 0, listed.stderr
    for name in filter(None, listed.stdout.split("\0")):
        src = ROOT / name
        if src.is_file():  # a file deleted in the work tree but not yet in git is skipped
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    base = tmp_path_factory.mktemp("wheel")
    assert not base.resolve().is_relative_to(ROOT), "the install must happen outside the repository"
    clone, wheels, venv, elsewhere = base / "clone", base / "wheels", base / "venv", base / "elsewhere"
    for d in (clone, wheels, elsewhere):
        d.mkdir()
    _copy_tree(clone)
    env = _clean_env()
    built = _sh(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", wheels, clone, cwd=base, env=env)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-3000:]
    (wheel,) = wheels.glob("*.whl")
    made = _sh(sys.executable, "-m", "venv", "--without-pip", venv, cwd=base, env=env)
    assert made.returncode == 0, made.stderr
    bin_ = venv / ("Scripts" if os.name == "nt" else "bin")
    # The outer pip installs into the new venv (no ensurepip run): only the wheel, from no index.
    into = _sh(
        sys.executable, "-m", "pip", "--python", bin_ / "python", "install", "-q", "--no-index", "--no-deps", wheel,
        cwd=base, env=env,
    )  # fmt: skip
    assert into.returncode == 0, into.stdout[-2000:] + into.stderr[-3000:]
    return Installed(wheel, bin_, elsewhere, env)


def _project() -> dict:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_wheel_holds_only_calc(installed: Installed) -> None:
    project = _project()
    with zipfile.ZipFile(installed.wheel) as whl:
        names = whl.namelist()
        dist_info = f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
        metadata = whl.read(f"{dist_info}/METADATA").decode()
        entry_points = whl.read(f"{dist_info}/entry_points.txt").decode()
    tops = {n.split("/", 1)[0] for n in names}
    assert tops == {"calc", dist_info}, tops  # no hooks/, overrides/, tools/ or tests/
    assert "calc/cli/__init__.py" in names and "calc/widgets/__init__.py" in names and "calc/__main__.py" in names
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "calc").rglob("*.py") if "__pycache__" not in p.parts}
    assert sources <= set(names), sources - set(names)
    assert f"Name: {project['name']}\n" in metadata and f"Version: {project['version']}\n" in metadata
    assert "trainmem = calc.cli:main" in entry_points


def test_console_command_runs_outside_the_repository(installed: Installed) -> None:
    trainmem = installed.bin / "trainmem"
    where = _sh(
        installed.bin / "python", "-c", "import calc; print(calc.__file__)", cwd=installed.cwd, env=installed.env
    )
    assert where.returncode == 0 and not Path(where.stdout.strip()).resolve().is_relative_to(ROOT), where.stdout

    version = _sh(trainmem, "--version", cwd=installed.cwd, env=installed.env)
    assert version.stdout == f"trainmem {_project()['version']} ({_project()['name']})\n", version.stderr

    listed = _sh(trainmem, "list", cwd=installed.cwd, env=installed.env)
    from calc.widgets import calculators

    assert listed.returncode == 0 and all(name in listed.stdout for name in calculators())

    fit = _sh(
        trainmem, "will-it-fit", "params=70B", "--json", "zero_stage=3", "dp=64", cwd=installed.cwd, env=installed.env
    )
    from calc.memory.model_state import model_state_bytes

    assert fit.returncode == 0, fit.stderr
    assert json.loads(fit.stdout)["outputs"]["total_bytes"] == model_state_bytes(70e9, zero_stage=3, dp=64).total

    bad = _sh(trainmem, "will-it-fit", "dp=0", cwd=installed.cwd, env=installed.env)
    assert (
        bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1 and bad.stderr.startswith("error: dp ")
    )


def test_python_dash_m_calc_runs_outside_the_repository(installed: Installed) -> None:
    python = installed.bin / "python"
    human = _sh(python, "-m", "calc", "training-memory", cwd=installed.cwd, env=installed.env)
    assert human.returncode == 0 and human.stderr == "" and "Per GPU" in human.stdout
    fit = _sh(python, "-m", "calc", "--json", "will-it-fit", cwd=installed.cwd, env=installed.env)
    assert fit.returncode == 0 and json.loads(fit.stdout)["command"] == "will-it-fit"
    usage = _sh(python, "-m", "calc", "--help", cwd=installed.cwd, env=installed.env)
    assert usage.returncode == 0 and usage.stdout.startswith("usage: python -m calc COMMAND")
