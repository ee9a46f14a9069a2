"""The engine's wheel, built from this checkout for the site (``assets/<dist>-<version>-py3-none-any.whl``).

What ``pip install .`` would install, without pip or the network: the ``calc`` package (every ``.py`` file of a
package under it, as ``pyproject.toml``'s ``[tool.setuptools.packages.find]`` includes ``calc`` and ``calc.*``),
and a ``.dist-info`` with the name, version, console script and summary from ``pyproject.toml``'s ``[project]``,
written with the standard library (``zipfile``, the wheel format of PEP 427 and the core metadata of PEP 566).
Its bytes depend only on those inputs (entries sorted, timestamps fixed), and a built wheel is kept under
``.cache/wheel/<hash of the inputs>/``: an unchanged checkout reuses it, any change to ``calc/``,
``pyproject.toml`` or ``README.md`` builds a new one. A wheel that would lack ``calc/__init__.py`` or the
console script raises.

Examples:
    >>> wheel_name({"name": "llm-train-memory", "version": "0.1.0"})
    'llm_train_memory-0.1.0-py3-none-any.whl'
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import tomllib
import zipfile
from pathlib import Path

__all__ = ["ROOT", "build_wheel", "project", "wheel_name"]

ROOT = Path(__file__).resolve().parent.parent
_CACHE = ROOT / ".cache" / "wheel"
_FORMAT = "site-wheel 1"
"""Part of the cache key: change it when this builder writes different bytes for the same inputs."""
_EPOCH = (1980, 1, 1, 0, 0, 0)
_KEEP = 4


def project() -> dict:
    """``pyproject.toml``'s ``[project]`` table (name, version, scripts, ...)."""
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def wheel_name(meta: dict) -> str:
    """The wheel's file name for a ``[project]`` table (PEP 427: the name's ``-`` become ``_``)."""
    return f"{meta['name'].replace('-', '_')}-{meta['version']}-py3-none-any.whl"


def _sources() -> list[Path]:
    """Every ``.py`` file of the ``calc`` packages (a folder is a package when it has ``__init__.py``)."""
    found = []
    for path in sorted((ROOT / "calc").rglob("*.py")):
        folders = path.relative_to(ROOT).parents
        if all((ROOT / d / "__init__.py").is_file() for d in folders if d != Path(".")):
            found.append(path)
    return found


def _metadata(meta: dict, readme: str) -> str:
    lines = [
        "Metadata-Version: 2.1",
        f"Name: {meta['name']}",
        f"Version: {meta['version']}",
        f"Summary: {meta['description']}",
        f"Requires-Python: {meta['requires-python']}",
        *([f"Keywords: {','.join(meta['keywords'])}"] if meta.get("keywords") else []),
        *(f"Classifier: {c}" for c in meta.get("classifiers", ())),
        "Description-Content-Type: text/markdown",
    ]
    return "\n".join(lines) + "\n\n" + readme


def _entries(meta: dict) -> dict[str, bytes]:
    """Path in the wheel -> bytes, RECORD aside."""
    entries = {p.relative_to(ROOT).as_posix(): p.read_bytes() for p in _sources()}
    scripts = meta.get("scripts", {})
    if "calc/__init__.py" not in entries or not scripts:
        raise RuntimeError(f"the wheel would lack calc/__init__.py or a console script ({sorted(scripts)})")
    info = f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    readme = (ROOT / meta.get("readme", "README.md")).read_text(encoding="utf-8")
    entries[f"{info}/METADATA"] = _metadata(meta, readme).encode()
    entries[f"{info}/WHEEL"] = (
        b"Wheel-Version: 1.0\nGenerator: hooks/site_wheel.py\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    )
    entries[f"{info}/entry_points.txt"] = (
        "[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in sorted(scripts.items()))
    ).encode()
    entries[f"{info}/top_level.txt"] = b"calc\n"
    return entries


def _record(entries: dict[str, bytes], info: str) -> bytes:
    rows = []
    for name, data in entries.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        rows.append(f"{name},sha256={digest},{len(data)}")
    return ("\n".join([*rows, f"{info}/RECORD,,"]) + "\n").encode()


def _write(path: Path, entries: dict[str, bytes]) -> None:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as whl:
        for name, data in entries.items():
            info = zipfile.ZipInfo(name, date_time=_EPOCH)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            whl.writestr(info, data)


def build_wheel() -> Path:
    """The wheel of this checkout, from the cache when its inputs are unchanged, else built now.

    Raises:
        RuntimeError: When the wheel would lack the engine or its console script.
        OSError: When a source cannot be read or the cache cannot be written.
    """
    meta = project()
    entries = _entries(meta)
    key = hashlib.sha256(_FORMAT.encode())
    key.update((ROOT / "pyproject.toml").read_bytes())
    for name, data in sorted(entries.items()):
        key.update(f"\0{name}\0{len(data)}\0".encode() + data)
    folder = _CACHE / key.hexdigest()[:32]
    path = folder / wheel_name(meta)
    if path.is_file():
        return path
    info = f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    entries = dict(sorted(entries.items(), key=lambda kv: (kv[0].startswith(info), kv[0])))
    entries[f"{info}/RECORD"] = _record(entries, info)
    folder.mkdir(parents=True, exist_ok=True)
    partial = folder / (path.name + ".partial")
    _write(partial, entries)
    partial.replace(path)
    # Keep the newest few (a build still copying an older one must find it), drop the rest.
    for old in sorted((d for d in _CACHE.iterdir() if d.is_dir()), key=lambda d: d.stat().st_mtime)[:-_KEEP]:
        shutil.rmtree(old, ignore_errors=True)
    return path
