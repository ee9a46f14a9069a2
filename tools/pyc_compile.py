"""Compile Pyodide's standard library and the engine to ``.pyc``, run INSIDE the pinned Pyodide.

``tools/build_runtime.mjs`` loads ``node_modules/pyodide`` under Node and calls [`main`][] here, so every
``.pyc`` carries that exact interpreter's magic number and marshal format (the host CPython is another
version). The files are hash-based pycs (PEP 552), so nothing depends on timestamps and two builds of the
same sources give the same bytes:

* the standard library: *unchecked* pycs without their sources (zipimport trusts them; the stock
  ``python_stdlib.zip`` stays in the site as the fallback);
* the engine: unchecked pycs at ``optimize=2`` without their sources (``calc/units.pyc``: the worker imports
  the engine from the archive itself with ``zipimport``, unpacking nothing; the docstrings, half the bytes, are
  the reference pages' and the wheel's, not the worker's).

Both archives are ``ZIP_STORED``: the server's transfer compression (brotli/gzip) then works on them.
Anything unexpected raises: the build must fail loudly, not ship a half-compiled runtime.
"""

from __future__ import annotations

import importlib.util
import io
import marshal
import sys
import zipfile
from pathlib import Path

STAMP = (2020, 1, 1, 0, 0, 0)
"""The fixed timestamp of every archive member: builds are byte-identical for identical inputs."""

STDLIB_PREFIX = f"/lib/python{sys.version_info[0]}{sys.version_info[1]}.zip/"
"""Where Pyodide mounts the stdlib zip; compiled code objects name their files under it, as zipimport would."""

ENGINE_ROOT = "/home/pyodide/calc.zip/"
"""Where ``calc-worker.mjs`` puts the engine archive on ``sys.path``: compiled code names its files under it, as
``zipimport`` would."""


def pyc_bytes(source: bytes, filename: str, *, checked: bool, optimize: int = 0) -> bytes:
    """A hash-based ``.pyc`` (PEP 552) of ``source`` for the running interpreter.

    Args:
        source: The module's source bytes.
        filename: The ``co_filename`` tracebacks will show.
        checked: Whether the importer re-hashes the source and recompiles when it differs.
        optimize: ``compile``'s level (2: without docstrings and ``assert`` statements).

    Returns:
        Magic number, flags, the source's SipHash, then the marshalled code object.
    """
    code = compile(source, filename, "exec", dont_inherit=True, optimize=optimize)
    flags = 0b01 | (0b10 if checked else 0)
    header = importlib.util.MAGIC_NUMBER + flags.to_bytes(4, "little") + importlib.util.source_hash(source)
    return header + marshal.dumps(code)


def _info(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=STAMP)
    info.compress_type = zipfile.ZIP_STORED
    info.external_attr = (0o40755 << 16) | 0x10 if name.endswith("/") else 0o644 << 16
    return info


def compile_stdlib(src: Path, used: frozenset[str] | None = None, *, cut: bool = False) -> tuple[bytes, int]:
    """The stdlib zip with its ``.py`` modules replaced by unchecked ``.pyc``; other members copied.

    Args:
        src: The stock ``python_stdlib.zip``.
        used: Member names (``json/decoder.py``) to compile; ``None`` compiles every module. The others
            stay sources (importable, compiled on first import, and well compressed in transfer).
        cut: Drop the modules not in ``used`` instead of keeping their sources, and compile at ``optimize=2``
            (without docstrings and ``assert``, as ``python -OO`` runs the stdlib).

    Returns:
        The archive bytes and the number of modules compiled.
    """
    out = io.BytesIO()
    compiled = 0
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for item in zin.infolist():
            name = item.filename
            wanted = used is None or name in used
            if name.endswith(".py") and wanted:
                pyc = pyc_bytes(zin.read(item), STDLIB_PREFIX + name, checked=False, optimize=2 if cut else 0)
                zout.writestr(_info(name + "c"), pyc)
                compiled += 1
            elif not (cut and name.endswith(".py")):
                zout.writestr(_info(name), zin.read(item))
    if not compiled:
        raise RuntimeError(f"{src}: no .py module found to compile")
    if used is not None and compiled != len(used):
        missing = sorted(used - {i.filename for i in zipfile.ZipFile(src).infolist()})
        raise RuntimeError(f"{src}: modules used but not in the stdlib zip: {missing[:5]}")
    return out.getvalue(), compiled


def add_fallback(archive: bytes, stock: Path, source: Path) -> bytes:
    """``archive`` plus ``lc_stdlib_fallback.pyc`` (``tools/lc_stdlib_fallback.py``) with ``STOCK`` set to the
    stock archive's modules: the finder that fetches the rest of the stdlib when the cut misses an import."""
    sys.path.insert(0, str(source.parent))
    try:
        from lc_stdlib_fallback import _module_names
    finally:
        sys.path.pop(0)
    with zipfile.ZipFile(stock) as zin:
        names = _module_names(zin.namelist())
    code = source.read_bytes() + f"\nSTOCK = frozenset({names!r})\n".encode()
    out = io.BytesIO(archive)
    with zipfile.ZipFile(out, "a", zipfile.ZIP_STORED) as zout:
        pyc = pyc_bytes(code, STDLIB_PREFIX + "lc_stdlib_fallback.py", checked=False)
        zout.writestr(_info("lc_stdlib_fallback.pyc"), pyc)
    return out.getvalue()


def compile_engine(root: Path, package: str = "calc") -> tuple[bytes, int]:
    """The engine archive: an unchecked ``.pyc`` for every ``package/**.py``, compiled at ``optimize=2``
    (no docstrings, no ``assert``: the worker reads neither), without the sources, sorted by path. ``zipimport``
    imports a sourceless ``.pyc`` as it is; the docstrings are the reference pages' and the wheel's, and
    ``assert`` statements are checked wherever the tests run the engine from source.

    Returns:
        The archive bytes and the number of modules compiled.
    """
    sources = sorted(p for p in (root / package).rglob("*.py") if "__pycache__" not in p.parts)
    if not sources:
        raise RuntimeError(f"{root / package}: no Python sources")
    members: dict[str, bytes] = {}
    for path in sources:
        rel = path.relative_to(root).as_posix()
        members[rel + "c"] = pyc_bytes(path.read_bytes(), ENGINE_ROOT + rel, checked=False, optimize=2)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zout:
        for name in sorted(members):
            zout.writestr(_info(name), members[name])
    return out.getvalue(), len(sources)


def main(
    stdlib: str, engine_root: str, out_dir: str, used: list[str] | None = None, fallback: str | None = None
) -> dict[str, object]:
    """Write ``python_stdlib.pyc.zip`` and ``calc.zip`` into ``out_dir``; return a summary for the log.

    Args:
        stdlib: Path of the stock stdlib zip in this file system.
        engine_root: The folder holding the ``calc`` package.
        out_dir: Where to write both archives.
        used: The stdlib members to compile (see ``pyc_used.used_stdlib``); ``None`` compiles all.
        fallback: ``tools/lc_stdlib_fallback.py``: with ``used``, the archive holds only the used modules (the
            cut) and this finder, which fetches the stock archive when an import misses them.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    wanted = frozenset(used) if used is not None else None
    cut = wanted is not None and fallback is not None
    std, n_std = compile_stdlib(Path(stdlib), wanted, cut=cut)
    if cut:
        std = add_fallback(std, Path(stdlib), Path(fallback))
    eng, n_eng = compile_engine(Path(engine_root))
    (out / "python_stdlib.pyc.zip").write_bytes(std)
    (out / "calc.zip").write_bytes(eng)
    return {
        "magic": importlib.util.MAGIC_NUMBER.hex(),
        "cache_tag": sys.implementation.cache_tag,
        "python": sys.version.split()[0],
        "stdlib_modules_compiled": n_std,
        "stdlib_cut": cut,
        "stdlib_bytes": len(std),
        "engine_modules": n_eng,
        "engine_bytes": len(eng),
    }
