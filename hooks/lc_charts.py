"""MkDocs hook: pre-render every ``[data-chart]`` to inline SVG, and ship the pinned Vega bundle.

Charts are specs made by ``calc.guide.charts`` (plain data, carried in ``data-chart-spec``). For every page:

* each chart's empty ``.lc-chart__view`` gets one SVG per Material palette (``default`` light, ``slate``
  dark), rendered now by ``vl-convert-python`` with the palette's ``calc.guide.charts.THEMES`` config; CSS
  shows the one matching ``data-md-color-scheme``, so a chart is there at first paint and with
  JavaScript off, and ``docs/assets/javascripts/charts.mjs`` later replaces it with a live rendering of
  the same spec;
* a spec that fails to render fails the build (``PluginError``), naming the page and the chart;
* each SVG is kept in ``.cache/lc_charts/`` by the hash of its spec, theme and renderer versions, so a
  rebuild renders only the charts that changed.

This runs on the finished page (``on_post_page``), so a chart any hook or calculator emitted is filled
whatever the hook order, and the search index, built from the content before, holds no axis labels.

After the build, ``assets/vega/`` receives the pinned npm ``vega``, ``vega-lite`` and ``vega-embed``
bundles, ``vega-interpreter`` (Vega's expression interpreter: no ``eval``, so the site's policy needs no
``'unsafe-eval'``) with the ``vega-util`` modules it imports, and ``themes.json`` (the palettes' configs).
``vl-convert-python`` bundles its own Vega; ``on_config`` checks that it is the very Vega and Vega-Lite
the browser gets, so the pre-rendered SVG and the live one come from the same code.
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import shutil
import sys
import tempfile
from pathlib import Path

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calc.guide.charts import SCHEMES, THEMES

ASSETS = "assets/vega"
BUNDLES = {
    "vega": "build/vega.min.js",
    "vega-lite": "build/vega-lite.min.js",
    "vega-embed": "build/vega-embed.min.js",
}
INTERPRETER = "vega-interpreter"
_INTERPRETER_IMPORT = "from 'vega-util';"
_CHART = re.compile(
    r'(?P<open><figure class="lc-chart" data-chart="(?P<name>[^"]*)" data-chart-spec="(?P<spec>[^"]*)")>'
    r'(?P<view><div class="lc-chart__view"[^>]*>)</div></figure>'
)
_SVG_OPEN = re.compile(r"^<svg\b")

_cache: dict[tuple[str, str], str] = {}
CACHE = ROOT / ".cache" / "lc_charts"
"""Rendered SVGs by [`cache_key`][]: vl-convert takes most of a build's charts time, and most specs do not change."""


def _package(name: str, *, pinned: bool = True) -> Path:
    path = ROOT / "node_modules" / name
    if not (path / "package.json").exists():
        raise PluginError(f"node_modules/{name} is missing: run `make build` (it runs `npm ci`) first")
    if pinned:
        want = json.loads((ROOT / "package.json").read_text())["dependencies"][name]
        found = json.loads((path / "package.json").read_text())["version"]
        if found != want:
            raise PluginError(f"node_modules/{name} is {found} but package.json pins {want}: run `npm ci`")
    return path


def _version(name: str) -> str:
    return json.loads((_package(name) / "package.json").read_text())["version"]


def vl_version() -> str:
    """The Vega-Lite version ``vl-convert`` must use: the pinned npm one, as ``major.minor``."""
    return ".".join(_version("vega-lite").split(".")[:2])


def on_config(config):
    for name in (*BUNDLES, INTERPRETER):
        _package(name)
    try:
        import vl_convert
    except ImportError:
        raise PluginError("vl-convert-python is missing: run `make build` (it installs requirements.txt)") from None
    if vl_convert.get_vega_version() != _version("vega"):
        raise PluginError(
            f"vl-convert-python renders with Vega {vl_convert.get_vega_version()} but the site ships "
            f"{_version('vega')}: pin matching versions in requirements.txt and package.json"
        )
    if vl_version() not in vl_convert.get_vegalite_versions():
        raise PluginError(f"vl-convert-python has no Vega-Lite {vl_version()}: pin matching versions")
    return config


def cache_key(spec_json: str, scheme: str, renderer: str) -> str:
    """The file name a rendered chart is kept under in [`CACHE`][]: the SHA-256 of everything the SVG depends on
    (the spec, the palette's theme config, and ``renderer``: vl-convert's and Vega-Lite's versions).

    Examples:
        >>> a = cache_key('{"mark": "bar"}', "default", "vl-convert 1 / vega-lite 6.1")
        >>> a == cache_key('{"mark": "bar"}', "default", "vl-convert 1 / vega-lite 6.1"), len(a)
        (True, 64)
        >>> a == cache_key('{"mark": "bar"}', "slate", "vl-convert 1 / vega-lite 6.1")
        False
    """
    theme = json.dumps(THEMES.get(scheme), sort_keys=True)
    return hashlib.sha256(f"{renderer}\0{scheme}\0{theme}\0{spec_json}".encode()).hexdigest()


def _renderer() -> str:
    import vl_convert

    return f"vl-convert {vl_convert.__version__} vega {vl_convert.get_vega_version()} / vega-lite {vl_version()}"


def render_svg(spec_json: str, scheme: str, cache: Path | None = CACHE) -> str:
    """One spec as SVG in one palette, marked for the page: rendered once per build (memory) and once per
    input (``cache``, on disk: a rebuild renders only the charts whose spec, theme or renderer changed).

    Examples:
        >>> import tempfile
        >>> cache = Path(tempfile.mkdtemp())
        >>> bar = '{"data":{"values":[{"x":%d}]},"mark":"bar","encoding":{"x":{"field":"x","type":"quantitative"}}}'
        >>> one = render_svg(bar % 1, "default", cache)
        >>> [p.name == cache_key(bar % 1, "default", _renderer()) + ".svg" for p in cache.iterdir()]
        [True]
        >>> two = render_svg(bar % 2, "default", cache)  # a changed spec is rendered anew
        >>> one != two, len(list(cache.iterdir()))
        (True, 2)
        >>> kept = cache / f"{cache_key(bar % 3, 'default', _renderer())}.svg"
        >>> _ = kept.write_text("<svg>from the cache</svg>")
        >>> render_svg(bar % 3, "default", cache)  # an unchanged spec is read back, not rendered
        '<svg data-scheme="default" aria-hidden="true" focusable="false">from the cache</svg>'
    """
    key = (spec_json, scheme)
    if key not in _cache:
        stored = cache / f"{cache_key(spec_json, scheme, _renderer())}.svg" if cache else None
        if stored and stored.is_file():
            svg = stored.read_text(encoding="utf-8")
        else:
            import vl_convert

            svg = vl_convert.vegalite_to_svg(json.loads(spec_json), vl_version=vl_version(), config=THEMES[scheme])
            if stored:
                _store(stored, svg)
        if "style=" in svg or "<script" in svg:
            raise PluginError("a pre-rendered chart carries style= or <script>, which the policy forbids")
        _cache[key] = _SVG_OPEN.sub(
            f'<svg data-scheme="{scheme}" aria-hidden="true" focusable="false"', svg.strip(), count=1
        )
    return _cache[key]


def _store(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically: several builds may share the cache, none sees half an entry."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def prerender(content: str, where: str = "page") -> tuple[str, int]:
    """Fill every empty chart view in ``content`` with its SVGs; return the new text and the count.

    Examples:
        >>> prerender("<p>no charts</p>")
        ('<p>no charts</p>', 0)
    """
    count = 0

    def fill(match: re.Match) -> str:
        nonlocal count
        spec = html.unescape(match["spec"])
        try:
            svgs = "".join(render_svg(spec, scheme) for scheme in SCHEMES)
        except (ValueError, KeyError) as err:
            raise PluginError(f"{where}: chart {match['name']!r} cannot be rendered: {err}") from None
        count += 1
        return f'{match["open"]} data-chart-state="prerendered">{match["view"]}{svgs}</div></figure>'

    return _CHART.sub(fill, content), count


def on_post_page(output: str, page, config) -> str:
    # The finished page, after every hook's content and the theme: whoever emitted a chart, it is filled
    # here, and the search index (built from the page content before this) holds no axis labels.
    return prerender(output, page.file.src_uri)[0]


def on_post_build(config) -> None:
    out = Path(config["site_dir"]) / ASSETS
    out.mkdir(parents=True, exist_ok=True)
    for name, rel in BUNDLES.items():
        shutil.copy2(_package(name) / rel, out / Path(rel).name)
    # vega-interpreter ships as an ES module importing the bare name 'vega-util': point it at a copy.
    source = (_package(INTERPRETER) / "build" / "vega-interpreter.js").read_text(encoding="utf-8")
    if source.count(_INTERPRETER_IMPORT) != 1:
        raise PluginError("vega-interpreter no longer imports 'vega-util' once: update hooks/lc_charts.py")
    (out / "vega-interpreter.js").write_text(
        source.replace(_INTERPRETER_IMPORT, "from './vega-util/index.js';"), encoding="utf-8"
    )
    util = _package("vega-util", pinned=False) / "build"
    (out / "vega-util").mkdir(exist_ok=True)
    for path in sorted(util.glob("*.js")):
        shutil.copy2(path, out / "vega-util" / path.name)
    (out / "themes.json").write_text(json.dumps(THEMES, sort_keys=True), encoding="utf-8")
