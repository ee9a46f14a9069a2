"""MkDocs hook: pre-compress the built site, a ``NAME.br`` and a ``NAME.gz`` beside each text asset.

Registered after ``lc_build`` in ``mkdocs.yml``, so its ``on_post_build`` runs once every page carries its
Content-Security-Policy and Pyodide, KaTeX and the engine are in the site. ``tools/serve.py`` (``make serve``
and the test server) sends the smallest variant the browser accepts, with ``Content-Encoding`` and
``Vary: Accept-Encoding``; any static server that can serve pre-compressed files (nginx ``gzip_static`` /
``brotli_static``, Caddy ``precompressed``) can do the same.

A file gets its variants when its suffix is in [`COMPRESSIBLE`][], it is at least [`MIN_BYTES`][] long, and the
variant saves at least [`MIN_SAVING`][] of it; otherwise it is served as it is. The output is deterministic:
gzip without a name or a time stamp, brotli at a fixed quality, so identical inputs give identical bytes.

Brotli at quality 11 takes about a minute for Pyodide's 9.6 MB ``pyodide.asm.wasm`` on this machine, so each
compressed variant is cached under ``.cache/lc_compress/`` by the sha256 of its input, the codec and its
settings: a rebuild compresses only what changed. Anything that fails (brotli missing, a file that cannot be
written) fails the build.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from mkdocs.exceptions import PluginError

try:
    import brotli
except ImportError as err:  # pinned in requirements.txt; without it readers would get uncompressed bytes
    raise PluginError("hooks/lc_compress.py needs the brotli package: run `make setup` (requirements.txt)") from err

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "lc_compress"
COMPRESSIBLE = frozenset(
    {".css", ".html", ".js", ".json", ".map", ".mjs", ".svg", ".ttf", ".txt", ".wasm", ".xml", ".zip"}
)
"""Suffixes worth compressing: text, WebAssembly, and zips (a stored zip compresses; a deflated one is skipped
by [`MIN_SAVING`][]). Fonts in ``woff2`` and images are compressed already."""
MIN_BYTES = 1024
"""Smaller files are sent as they are: a compressed variant would save less than a packet."""
MIN_SAVING = 0.05
"""A variant that saves less than this fraction of the file is not written."""
BROTLI_QUALITY = 11
"""Brotli's best, for ``assets/`` (Pyodide, KaTeX, Vega, Material's bundles): they change rarely, so the cache
pays for it once."""
PAGE_QUALITY = 9
"""For what changes with every edit: pages, the search index, the sitemap and the engine archive under
[`ENGINE_DIR`][]. Quality 11 saved 9% more of them for ten to twenty-five times the time (10 s a build for the
pages, 5 s for the 1.5 MB engine archive, on this machine)."""
ENGINE_DIR = "assets/calc/"
GZIP_LEVEL = 9
ENCODINGS = {"br": ".br", "gzip": ".gz"}
"""``Content-Encoding`` token -> the suffix of the file that holds that encoding."""


def gzip_bytes(data: bytes) -> bytes:
    """Gzip ``data`` deterministically: no file name, time stamp 0.

    Examples:
        >>> gzip_bytes(b"abc" * 100) == gzip_bytes(b"abc" * 100)
        True
        >>> gzip.decompress(gzip_bytes(b"abc" * 100)) == b"abc" * 100
        True
    """
    return gzip.compress(data, compresslevel=GZIP_LEVEL, mtime=0)


def brotli_bytes(data: bytes, quality: int = BROTLI_QUALITY) -> bytes:
    """Brotli ``data`` at ``quality`` (generic mode, default window), deterministic.

    Examples:
        >>> brotli.decompress(brotli_bytes(b"abc" * 100)) == b"abc" * 100
        True
    """
    return brotli.compress(data, quality=quality)


def _codecs(rel: str) -> dict[str, tuple[str, Callable[[bytes], bytes]]]:
    """Suffix -> (cache tag, codec) for the site path ``rel``."""
    quality = BROTLI_QUALITY if rel.startswith("assets/") and not rel.startswith(ENGINE_DIR) else PAGE_QUALITY
    return {
        ".br": (f"br-{brotli.__version__}-q{quality}", lambda data: brotli_bytes(data, quality)),
        ".gz": (f"gz-l{GZIP_LEVEL}", gzip_bytes),
    }


def _cached(data: bytes, entry: tuple[str, Callable[[bytes], bytes]], cache: Path | None) -> bytes:
    """``data`` through the codec of ``entry``, from ``cache`` when it holds it; written there atomically if not."""
    tag, codec = entry
    if cache is None:
        return codec(data)
    stored = cache / f"{hashlib.sha256(data).hexdigest()}.{tag}"
    if stored.is_file():
        return stored.read_bytes()
    out = codec(data)
    cache.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=cache, prefix=".tmp-")
    with os.fdopen(fd, "wb") as f:
        f.write(out)
    os.replace(tmp, stored)  # several builds may share the cache: never a half-written entry
    return out


def wanted(path: Path, size: int) -> bool:
    """Whether ``path`` (``size`` bytes) gets compressed variants.

    Examples:
        >>> wanted(Path("index.html"), 5000), wanted(Path("logo.png"), 5000), wanted(Path("a.js"), 10)
        (True, False, False)
    """
    return path.suffix.lower() in COMPRESSIBLE and size >= MIN_BYTES


def _compress_file(path: Path, rel: str, cache: Path | None) -> dict[str, int]:
    """Write ``path``'s variants that save enough; return the bytes written per suffix and ``"raw"``."""
    data = path.read_bytes()
    totals = {"raw": 0, ".br": 0, ".gz": 0}
    for suffix, codec in _codecs(rel).items():
        packed = _cached(data, codec, cache)
        if len(packed) <= len(data) * (1 - MIN_SAVING):
            path.with_name(path.name + suffix).write_bytes(packed)
            totals[suffix] += len(packed)
            totals["raw"] = len(data)
    return totals


def compress_site(site: Path, cache: Path | None = CACHE, workers: int | None = None) -> dict[str, int]:
    """Write the ``.br`` and ``.gz`` variants for every file of ``site`` that [`wanted`][] names.

    Stale variants from an earlier build in the same folder are removed first. Files are compressed by
    ``workers`` threads (default: one per core; brotli and zlib release the GIL), largest first, so a fresh
    build's brotli 11 of Pyodide's wasm runs beside everything else. Returns the bytes written per suffix plus
    ``"raw"``, the bytes of the files that got at least one variant.
    """
    for stale in [p for s in ENCODINGS.values() for p in site.rglob(f"*{s}")]:
        if stale.with_suffix("").suffix.lower() in COMPRESSIBLE:
            stale.unlink()
    sizes = {p: p.stat().st_size for p in site.rglob("*") if p.is_file()}
    todo = sorted((p for p, size in sizes.items() if wanted(p, size)), key=lambda p: (-sizes[p], p))
    totals = {"raw": 0, ".br": 0, ".gz": 0}
    with ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1) as pool:
        for done in pool.map(lambda p: _compress_file(p, p.relative_to(site).as_posix(), cache), todo):
            for key, value in done.items():
                totals[key] += value
    return totals


VENDORED = (
    "node_modules/pyodide/pyodide.asm.wasm",
    "node_modules/pyodide/python_stdlib.zip",
    "node_modules/pyodide/pyodide.asm.mjs",
)
"""The largest files the site ships unchanged under ``assets/`` (brotli 11 of the wasm alone takes about a minute):
[`on_config`][] starts compressing them into the cache at once, so a fresh build's pages render meanwhile."""

_warming: list[threading.Thread] = []


def warm(paths: tuple[str, ...] = VENDORED, cache: Path = CACHE) -> threading.Thread:
    """Compress ``paths`` (relative to the repository, shipped under ``assets/``) into ``cache`` in a thread."""

    def run() -> None:
        for rel in paths:
            source = ROOT / rel
            if source.is_file():
                data = source.read_bytes()
                for entry in _codecs(f"assets/{source.name}").values():
                    _cached(data, entry, cache)

    thread = threading.Thread(target=run, name="lc_compress-warm", daemon=True)
    thread.start()
    return thread


def on_config(config):
    _warming.append(warm())
    return config


def on_post_build(config) -> None:
    site = Path(config["site_dir"])
    while _warming:  # the warm-up's entries are what compress_site would compute again
        _warming.pop().join()
    try:
        compress_site(site)
    except OSError as err:
        raise PluginError(f"lc_compress: cannot write compressed variants in {site}: {err}") from err
