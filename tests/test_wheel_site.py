"""The site carries the engine's wheel (issue 19, "Copy and run"): ``assets/<dist>-<version>-py3-none-any.whl``,
built by ``hooks/site_wheel.py`` from this checkout, cached by the hash of its inputs, installable with pip from
no index, and named on the CLI page with the ``pip install`` line that takes it.
"""

from __future__ import annotations

import base64
import hashlib
import html
import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hooks"))

import site_wheel

PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
NAME = f"{PROJECT['name'].replace('-', '_')}-{PROJECT['version']}-py3-none-any.whl"
INFO = f"{PROJECT['name'].replace('-', '_')}-{PROJECT['version']}.dist-info"


def _sh(*args: object, cwd: Path) -> subprocess.CompletedProcess[str]:
    drop = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "PYTHONSTARTUP")
    env = {k: v for k, v in os.environ.items() if k not in drop} | {"PYTHONNOUSERSITE": "1"}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return subprocess.run(
        [str(a) for a in args], check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )


def test_the_wheel_is_named_after_the_project_and_holds_the_engine() -> None:
    wheel = site_wheel.build_wheel()
    assert wheel.name == NAME == site_wheel.wheel_name(PROJECT)
    listed = _sh(sys.executable, "-m", "zipfile", "-l", wheel, cwd=ROOT)
    assert listed.returncode == 0 and re.search(r"^calc/__init__\.py\s", listed.stdout, re.MULTILINE), listed.stderr
    with zipfile.ZipFile(wheel) as whl:
        assert whl.testzip() is None
        names = whl.namelist()
        metadata = whl.read(f"{INFO}/METADATA").decode()
        init = whl.read("calc/__init__.py").decode()
        record = whl.read(f"{INFO}/RECORD").decode().splitlines()
        entry_points = whl.read(f"{INFO}/entry_points.txt").decode()
        for row in record[:-1]:  # every file's hash and size as RECORD says (PEP 376), RECORD itself unhashed
            name, digest, size = row.split(",")
            data = whl.read(name)
            assert digest == "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert int(size) == len(data)
    assert record[-1] == f"{INFO}/RECORD,,"
    assert {n.split("/", 1)[0] for n in names} == {"calc", INFO}
    sources = {p.relative_to(ROOT).as_posix() for p in (ROOT / "calc").rglob("*.py") if "__pycache__" not in p.parts}
    assert sources == {n for n in names if n.startswith("calc/")}
    assert f"Name: {PROJECT['name']}\n" in metadata and f"\nVersion: {PROJECT['version']}\n" in metadata
    assert f'__version__ = "{PROJECT["version"]}"' in init  # the engine says the version its metadata says
    assert "trainmem = calc.cli:main" in entry_points


def _tree(dest: Path) -> None:
    shutil.copytree(ROOT / "calc", dest / "calc", ignore=shutil.ignore_patterns("__pycache__"))
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, dest / name)


def test_the_wheel_is_cached_by_its_inputs_and_rebuilt_when_one_changes(tmp_path: Path, monkeypatch) -> None:
    _tree(tmp_path)
    monkeypatch.setattr(site_wheel, "ROOT", tmp_path)
    monkeypatch.setattr(site_wheel, "_CACHE", tmp_path / ".cache" / "wheel")
    first = site_wheel.build_wheel()
    assert first.is_relative_to(tmp_path / ".cache" / "wheel")
    stamp = first.stat().st_mtime_ns
    assert site_wheel.build_wheel() == first and first.stat().st_mtime_ns == stamp  # unchanged: not rebuilt
    bytes_before = first.read_bytes()
    shutil.rmtree(first.parent)
    assert site_wheel.build_wheel().read_bytes() == bytes_before  # rebuilt: the same bytes
    units = tmp_path / "calc" / "units.py"
    units.write_text(units.read_text(encoding="utf-8") + "\n# changed\n", encoding="utf-8")
    changed = site_wheel.build_wheel()
    assert changed != first and changed.name == first.name
    with zipfile.ZipFile(changed) as whl:
        assert whl.read("calc/units.py").endswith(b"# changed\n")
    (tmp_path / "calc" / "__init__.py").unlink()
    with pytest.raises(RuntimeError, match="calc/__init__.py"):  # fails loudly, never an empty wheel
        site_wheel.build_wheel()


@pytest.mark.wheel
def test_the_wheel_installs_from_no_index_and_runs(tmp_path: Path) -> None:
    wheel = site_wheel.build_wheel()
    venv, elsewhere = tmp_path / "venv", tmp_path / "elsewhere"
    elsewhere.mkdir()
    assert _sh(sys.executable, "-m", "venv", "--without-pip", venv, cwd=tmp_path).returncode == 0
    python = venv / "bin" / "python"
    into = _sh(
        sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-index", "--no-deps", wheel, cwd=tmp_path
    )
    assert into.returncode == 0, into.stderr[-3000:]
    where = _sh(python, "-c", "import calc; print(calc.__file__, calc.__version__)", cwd=elsewhere)
    path, version = where.stdout.split()
    assert Path(path).is_relative_to(venv) and version == PROJECT["version"], where.stderr
    ran = _sh(venv / "bin" / "trainmem", "--version", cwd=elsewhere)
    assert ran.stdout == f"trainmem {PROJECT['version']} ({PROJECT['name']})\n", ran.stderr


def test_the_built_site_serves_the_wheel_and_says_how_to_install_it(built_site: Path) -> None:
    served = built_site / "assets" / NAME
    assert served.is_file()
    with zipfile.ZipFile(served) as whl:
        assert "calc/__init__.py" in whl.namelist()
        assert f"\nVersion: {PROJECT['version']}\n" in whl.read(f"{INFO}/METADATA").decode()
    page = (built_site / "reference" / "cli" / "index.html").read_text(encoding="utf-8")
    text = re.sub(r"<[^>]+>", "", page)  # the console block's highlighting splits the line into spans
    line = re.search(r"\$ pip install (https?://\S+)", text)
    assert line and line[1].endswith(f"/assets/{NAME}"), "the CLI page installs the site's wheel"
    assert f'href="{line[1]}"' in page  # and links it
    assert "[[wheel]]" not in page


def test_the_copy_blocks_install_this_wheel() -> None:
    """Every calculator's copy blocks open with the ``pip install`` of the wheel the site carries (issue 19)."""
    from calc.widgets._code import WHEEL

    assert f"assets/{NAME}" == WHEEL


def test_the_built_copy_blocks_say_the_wheels_address(built_site: Path) -> None:
    """The build writes the wheel's absolute address (from site_url) into every pre-rendered copy block, on every
    page with a calculator; served elsewhere, site-base.js rebases it (tests/test_serving.py)."""
    blocks = {}
    for page in built_site.rglob("index.html"):
        for code in re.findall(r'<pre class="lc-code__text" data-code="\w+"><code>(.*?)</code>', page.read_text()):
            blocks.setdefault(html.unescape(re.sub(r"<[^>]+>", "", code)).split("\n")[0], []).append(page)
    assert len(blocks) == 1, sorted(blocks)
    (line,) = blocks
    assert re.fullmatch(rf"# Install the engine once: pip install https?://\S+/assets/{re.escape(NAME)}", line), line
    assert sum(map(len, blocks.values())) > 10  # every calculator's two blocks
