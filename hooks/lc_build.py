"""MkDocs hook: pre-render calculators and prose numbers with the engine; ship Pyodide, KaTeX and the engine.

Markers a page may use (anything else that looks like a marker fails the build):

* ``[[calc NAME]]`` or ``[[calc NAME field=value ...]]`` alone on a line: a calculator, its
  results computed now by the same ``calc.widgets.render`` the browser worker calls later.
* ``[[figure NAME]]`` alone on a line: an SVG diagram from ``hooks/figures.py``, drawn by the engine.
* ``[[num NAME]]`` inline: a number from ``hooks/prose_numbers/`` (see ``hooks/numbers_registry.py``).
* ``[[wheel]]`` inline: the absolute address of the engine's wheel, which the build puts in the site as
  ``assets/<dist>-<version>-py3-none-any.whl`` (``hooks/site_wheel.py``), for ``pip install``.

Diagrams in ``docs/assets/diagrams/*.svg`` may style themselves for both palettes with a
``@media (prefers-color-scheme: dark)`` block; since an ``<img>`` cannot see Material's palette toggle, the
build serves each as two files, ``NAME.svg`` (light rules only) and ``NAME-dark.svg`` (dark rules applied),
and rewrites every Markdown image of one into the pair, tagged ``#only-light`` / ``#only-dark`` so Material
shows the one that matches the reader's palette.

After the build, ``assets/runtime/<hash>/`` (the pinned npm ``pyodide`` plus its stdlib precompiled to ``.pyc``),
``assets/katex/`` (the pinned npm ``katex``: its stylesheet and fonts, ``lc_math`` typesets the formulas) and
``assets/calc/calc.zip`` (this checkout's ``calc`` package with its ``.pyc``) are written into the site by
``tools/build_runtime.py``, so a page never needs another host.
Then ``lc_csp`` writes a Content-Security-Policy into every page.
"""

from __future__ import annotations

import html
import json
import re
import shlex
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urljoin

from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "hooks"))
sys.path.insert(0, str(ROOT / "tools"))

import build_runtime

import api_cache
import lc_csp
from build_cache import memo
from calc.errors import CalcError
from calc.widgets import calculators, render_calculator
from figures import FIGURES
from numbers_registry import NUMBERS, byte_attributes
from placeholders import Placeholders
from site_wheel import build_wheel, project, wheel_name

KATEX_FILES = ("katex.min.css", "fonts")
_CALC_LINE = re.compile(r"^\[\[calc (?P<args>[^\]]*)\]\]\s*$", re.MULTILINE)
_NUM = re.compile(r"\[\[num (?P<name>[A-Za-z0-9_.\-]+)\]\]")
_FIGURE_LINE = re.compile(r"^\[\[figure (?P<name>[A-Za-z0-9_.\-]+)\]\]\s*$", re.MULTILINE)
_WHEEL = re.compile(r"\[\[wheel\]\]")
_ANY_MARKER = re.compile(r"\[\[(calc|num|figure|wheel)\b[^\]]*\]\]")
_DIAGRAMS = "assets/diagrams/"
_DARK_MEDIA = re.compile(r"@media\s*\(prefers-color-scheme:\s*dark\)\s*\{((?:[^{}]*\{[^{}]*\})*)\s*\}")
_DIAGRAM_IMAGE = re.compile(r"!\[(?P<alt>[^\]]*)\]\((?P<path>[^)\s#]*assets/diagrams/[\w-]+)\.svg\)")

_held = Placeholders("LCCALCPLACEHOLDER", "calculator, figure or number")
# A link in a calculator's results to a site page, addressed from the site root (the live results do not know
# the page): the pre-render gets its page-relative href here, calc.mjs sets it after each live render.
_SITE_HREF = re.compile(
    r'<a (?P<attrs>[^>]*)data-site-href="(?P<target>[^"#?]*)(?P<query>\?[^"#]*)?(?P<anchor>#[^"]*)?"'
)
# A site file's absolute address in a calculator's results (the copy blocks' "pip install" of the wheel): the
# pre-render gets it from site_url here (site-base.js rebases it where the site is served), calc.mjs after each
# live render.
_SITE_ADDRESS = re.compile(r'<span data-site-address="(?P<path>[^"]*)">[^<]*</span>')


def _npm_package(name: str) -> Path:
    path = ROOT / "node_modules" / name
    if not (path / "package.json").exists():
        raise PluginError(f"node_modules/{name} is missing: run `make build` (it runs `npm ci`) first")
    pinned = json.loads((ROOT / "package.json").read_text())["dependencies"][name]
    found = json.loads((path / "package.json").read_text())["version"]
    if found != pinned:
        raise PluginError(f"node_modules/{name} is {found} but package.json pins {pinned}: run `npm ci`")
    return path


class _Background(threading.Thread):
    """``build_runtime.compiled`` in a daemon thread (a failed build does not wait for it); ``result()`` joins
    and re-raises its error."""

    def __init__(self, pyodide: Path) -> None:
        super().__init__(name="lc_build-runtime", daemon=True)
        self.pyodide, self.error = pyodide, None

    def run(self) -> None:
        try:
            build_runtime.compiled(self.pyodide)
        except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as err:  # re-raised by result()
            self.error = err

    def result(self) -> None:
        self.join()
        if self.error is not None:
            raise self.error


_compiling: dict[str, _Background] = {}


def on_config(config):
    api_cache.install()  # mkdocstrings' renders kept by their inputs (hooks/api_cache.py)
    pyodide = _npm_package("pyodide")
    _npm_package("katex")
    # The compiled runtime (a Node run when the engine changed, see tools/build_runtime.py) depends on the sources
    # only: start it now, beside the page rendering, and take it in on_post_build.
    _compiling["runtime"] = _Background(pyodide)
    _compiling["runtime"].start()
    return config


def palette_variants(svg: str) -> tuple[str, str]:
    """Split a diagram styled with a dark-scheme media query into a light and a dark file.

    Examples:
        >>> palette_variants("<style>svg{color:#111}@media (prefers-color-scheme: dark){svg{color:#eee}}</style>")
        ('<style>svg{color:#111}</style>', '<style>svg{color:#111}svg{color:#eee}</style>')
    """
    return _DARK_MEDIA.sub("", svg), _DARK_MEDIA.sub(lambda m: m[1], svg)


def on_files(files, config):
    try:
        wheel = build_wheel()
    except (RuntimeError, OSError, ValueError, KeyError) as err:
        raise PluginError(f"the engine's wheel cannot be built: {err}") from None
    files.append(File.generated(config, f"assets/{wheel.name}", abs_src_path=str(wheel)))
    for f in [f for f in files if f.src_uri.startswith(_DIAGRAMS) and f.src_uri.endswith(".svg")]:
        light, dark = palette_variants(Path(f.abs_src_path).read_text(encoding="utf-8"))
        files.remove(f)
        files.append(File.generated(config, f.src_uri, content=light))
        files.append(File.generated(config, f.src_uri.removesuffix(".svg") + "-dark.svg", content=dark))
    return files


def on_page_markdown(markdown: str, page, config, files) -> str:
    src = page.file.src_uri
    _held.begin(src)
    counts: dict[str, int] = {}

    def calc_marker(match: re.Match) -> str:
        try:
            parts = shlex.split(match["args"])
        except ValueError as err:
            raise PluginError(f"{src}: bad calculator marker {match[0]!r}: {err}") from None
        if not parts:
            raise PluginError(f"{src}: calculator marker without a name: {match[0]!r}")
        name, pairs = parts[0], parts[1:]
        if name not in calculators():
            raise PluginError(f"{src}: unknown calculator {name!r}; known: {', '.join(sorted(calculators()))}")
        inputs = {}
        for pair in pairs:
            key, sep, value = pair.partition("=")
            if not sep or key not in calculators()[name].defaults:
                raise PluginError(f"{src}: calculator {name!r} has no input {key!r} (marker {match[0]!r})")
            inputs[key] = value
        counts[name] = counts.get(name, 0) + 1
        calc_id = name if counts[name] == 1 else f"{name}-{counts[name]}"
        try:
            fragment = memo("calc", [name, inputs, calc_id], lambda: render_calculator(name, inputs, calc_id=calc_id))
            return _held.hold(src, fragment)
        except CalcError as err:
            raise PluginError(f"{src}: calculator {name!r} cannot pre-render {inputs}: {err}") from None

    def num_marker(match: re.Match) -> str:
        name = match["name"]
        if name not in NUMBERS:
            raise PluginError(f"{src}: unknown number [[num {name}]]; add it to hooks/numbers_registry.py")

        def span() -> str:
            value = NUMBERS[name]()
            return f'<span class="lc-num"{byte_attributes(name, value)} data-num="{name}">{value}</span>'

        try:
            return memo("num", name, span)
        except CalcError as err:
            raise PluginError(f"{src}: number {name!r} failed in the engine: {err}") from None

    def figure_marker(match: re.Match) -> str:
        name = match["name"]
        if name not in FIGURES:
            raise PluginError(f"{src}: unknown figure {name!r}; known: {', '.join(sorted(FIGURES))}")
        caption, draw = FIGURES[name]
        figure = f'<figure class="lc-diagram" id="figure-{name}">{memo("figure", name, draw)}'
        return _held.hold(src, figure + f"<figcaption>{html.escape(caption)}</figcaption></figure>")

    out = _DIAGRAM_IMAGE.sub(
        lambda m: f"![{m['alt']}]({m['path']}.svg#only-light)![{m['alt']}]({m['path']}-dark.svg#only-dark)", markdown
    )
    out = _CALC_LINE.sub(calc_marker, out)
    out = _FIGURE_LINE.sub(figure_marker, out)
    out = _WHEEL.sub(lambda _: wheel_url(config), _NUM.sub(num_marker, out))
    return _held.check(src, out, _ANY_MARKER)


def wheel_url(config) -> str:
    """Where the site serves the engine's wheel: what ``pip install`` takes (``[[wheel]]`` in a page).

    The build writes it from ``site_url``; served anywhere else, ``site-base.js`` rebases the link and the
    ``pip install`` line to the page's own address when the page loads.
    """
    if not config.get("site_url"):
        raise PluginError("[[wheel]] needs site_url: pip installs the wheel from an absolute address")
    return urljoin(config["site_url"], f"assets/{wheel_name(project())}")


def on_page_content(content: str, page, config, files) -> str:
    return _site_addresses(_site_hrefs(_held.fill(page.file.src_uri, content), page, files), page, config, files)


def _site_addresses(content: str, page, config, files) -> str:
    """Write each ``<span data-site-address="assets/…">``'s text as that file's absolute address from ``site_url``;
    a file not in the site, or no ``site_url``, fails the build."""

    def rewrite(m: re.Match) -> str:
        path = html.unescape(m["path"])
        if files.get_file_from_path(path) is None:
            raise PluginError(f"{page.file.src_uri}: a calculator gives the address of {path!r}, not in the site")
        if not config.get("site_url"):
            raise PluginError("a calculator's copy block needs site_url: pip installs from an absolute address")
        url = urljoin(config["site_url"], path)
        return f'<span data-site-address="{m["path"]}">{html.escape(url)}</span>'

    return _SITE_ADDRESS.sub(rewrite, content)


def _site_hrefs(content: str, page, files) -> str:
    """Give each ``<a data-site-href="path/#anchor">`` its href relative to this page; an unknown page fails."""
    from mkdocs.utils import get_relative_url

    def rewrite(m: re.Match) -> str:
        target = m["target"]
        src = (target.rstrip("/") or "index") + ".md"
        found = files.get_file_from_path(src)
        if found is None:
            raise PluginError(f"{page.file.src_uri}: a calculator links to {target!r}, which is not in the site")
        query, anchor = m["query"] or "", m["anchor"] or ""  # a hand-off carries inputs: ?calc-id.field=value&...
        href = get_relative_url(found.url, page.url) + html.unescape(query) + anchor
        return f'<a href="{html.escape(href)}" {m["attrs"]}data-site-href="{target}{query}{anchor}"'

    return _SITE_HREF.sub(rewrite, content)


def _engine_zip(dest: Path) -> None:
    """Write the engine archive the site ships (``calc/`` sources plus their ``.pyc``, see
    ``tools/build_runtime.py``) to ``dest``: byte-identical for identical sources."""
    try:
        built = build_runtime.compiled(_npm_package("pyodide"))
    except RuntimeError as err:
        raise PluginError(str(err)) from None
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(built / "calc.zip", dest)


def on_post_build(config) -> None:
    site = Path(config["site_dir"])
    pyo, katex = _npm_package("pyodide"), _npm_package("katex")
    try:
        if "runtime" in _compiling:  # started by on_config; its errors surface here, as a failed build
            _compiling.pop("runtime").result()
        build_runtime.write_runtime(site, pyo)
    except (RuntimeError, OSError, ValueError, subprocess.SubprocessError) as err:
        raise PluginError(str(err)) from None
    for name in KATEX_FILES:
        src, dst = katex / "dist" / name, site / "assets" / "katex" / name
        if src.is_dir():
            shutil.copytree(src, dst, dirs_exist_ok=True)
        else:
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    # Last, once every page and style sheet is in place: self-host the CSS's data: icons and write the
    # Content-Security-Policy (hashes of the inline scripts and styles just built) into every page.
    lc_csp.apply(site)
