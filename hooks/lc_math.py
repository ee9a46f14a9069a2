"""MkDocs hook: typeset every formula at build time with the pinned KaTeX, so pages ship math and no KaTeX script.

``pymdownx.arithmatex`` (generic mode) writes each formula as ``<span class="arithmatex">\\(…\\)</span>`` or
``<div class="arithmatex">\\[…\\]</div>``. Until issue 20, ``katex.min.js`` (63 kB brotli on every first visit)
typeset them in the browser on every page view, on the same two cores that boot Pyodide. Now
``tools/katex_render.mjs`` renders them all once per build with ``katex.renderToString`` (HTML plus MathML, as the
browser did), and the page holds the result:

* **No inline styles.** KaTeX's HTML places glyphs with ``style="height:…"`` attributes, which the site's
  Content-Security-Policy (``style-src 'self'``, no ``'unsafe-inline'``) refuses in markup. Each distinct
  declaration list becomes a class ``ks-<hash>`` in ``assets/stylesheets/katex-ssr.css`` (written here, listed in
  ``extra_css``), with ``!important`` so it wins as the inline style did.
* **Fails loudly.** TeX that KaTeX cannot parse fails the build, naming the page and the formula.
* **Cached.** Each formula's HTML is kept in ``.cache/katex/`` by KaTeX's version, so a rebuild runs Node only
  for new formulas.
* **The search index keeps the TeX** (``lc_search`` turns it into text): this runs on the built files, after the
  search plugin has read the pages, and before ``lc_compress``.

Each typeset element carries ``data-typeset="build"`` (the tests' signal that a page's math is in place).
"""

from __future__ import annotations

import hashlib
import html
import json
import os
import re
import subprocess
import tempfile
from pathlib import Path

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parent.parent
CACHE = ROOT / ".cache" / "katex"
RENDERER = ROOT / "tools" / "katex_render.mjs"
STYLESHEET = "assets/stylesheets/katex-ssr.css"
"""Where the classes that replace KaTeX's inline styles go (the path ``extra_css`` lists)."""

_MATH = re.compile(r'<(?P<tag>span|div) class="arithmatex">(?P<body>.*?)</(?P=tag)>', re.DOTALL)
_DELIMITED = re.compile(r"^\s*\\[(\[](?P<tex>.*)\\[)\]]\s*$", re.DOTALL)
_STYLED_TAG = re.compile(r'<(?P<name>[a-z]+)(?P<attrs>[^<>]*?) style="(?P<style>[^"]*)"(?P<rest>[^<>]*)>')
_CLASS = re.compile(r' class="(?P<cls>[^"]*)"')


def _katex_version() -> str:
    package = ROOT / "node_modules" / "katex" / "package.json"
    try:
        return str(json.loads(package.read_text())["version"])
    except (OSError, KeyError, ValueError) as err:
        raise PluginError(f"hooks/lc_math.py: the pinned katex is missing ({package}): run `make setup`") from err


def _tex(m: re.Match[str], where: str) -> tuple[str, bool]:
    """The TeX inside one arithmatex element and whether it is display math (a ``div``, as arithmatex writes it)."""
    match = _DELIMITED.match(html.unescape(m["body"]))
    if match is None:
        raise PluginError(f"hooks/lc_math.py: {where}: a formula without delimiters: {m['body'][:80]!r}")
    return match["tex"].strip(), m["tag"] == "div"


def _render(items: list[tuple[str, bool]]) -> list[str]:
    """KaTeX's HTML for each ``(tex, display)``, from one Node process."""
    if not items:
        return []
    payload = json.dumps([{"tex": tex, "display": display} for tex, display in items])
    proc = subprocess.run(
        ["node", str(RENDERER)], input=payload, capture_output=True, text=True, cwd=ROOT, check=False, timeout=600
    )
    if proc.returncode:
        raise PluginError(f"hooks/lc_math.py: KaTeX failed: {proc.stderr.strip()[-2000:]}")
    out = json.loads(proc.stdout)
    if len(out) != len(items):
        raise PluginError(f"hooks/lc_math.py: KaTeX returned {len(out)} formulas for {len(items)}")
    return out


def _load(path: Path) -> dict[str, str]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _store(path: Path, cache: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    with os.fdopen(fd, "w") as out:
        json.dump(cache, out, sort_keys=True)
    os.replace(tmp, path)


def style_class(style: str) -> str:
    """The class that stands for one inline ``style`` value (stable across builds).

    Examples:
        >>> style_class("height:0.6444em;")
        'ks-425d6a7b'
    """
    return "ks-" + hashlib.sha256(style.encode()).hexdigest()[:8]


def unstyle(fragment: str, styles: dict[str, str]) -> str:
    """``fragment`` with every ``style`` attribute replaced by its class; ``styles`` collects class → style.

    Examples:
        >>> seen = {}
        >>> unstyle('<span class="strut" style="height:1em;"></span><span style="top:-2em;">x</span>', seen)
        '<span class="strut ks-29edcb1d"></span><span class="ks-7a0b67f6">x</span>'
        >>> sorted(seen.values())
        ['height:1em;', 'top:-2em;']
    """

    def swap(m: re.Match[str]) -> str:
        cls = style_class(m["style"])
        styles[cls] = m["style"]
        attrs = m["attrs"] + m["rest"]
        if _CLASS.search(attrs):
            attrs = _CLASS.sub(lambda c: f' class="{c["cls"]} {cls}"', attrs, count=1)
        else:
            attrs = f' class="{cls}"' + attrs
        return f"<{m['name']}{attrs}>"

    return _STYLED_TAG.sub(swap, fragment)


def stylesheet(styles: dict[str, str]) -> str:
    """The CSS for [`unstyle`][]'s classes, each declaration ``!important`` as the inline style was.

    Examples:
        >>> stylesheet({"ks-1": "height:1em;vertical-align:-0.2em;"})
        '.katex .ks-1{height:1em!important;vertical-align:-0.2em!important}\\n'
    """
    rules = []
    for cls, style in sorted(styles.items()):
        decls = [d.strip() for d in style.split(";") if d.strip()]
        rules.append(f".katex .{cls}{{{';'.join(d + '!important' for d in decls)}}}\n")
    return "".join(rules)


def _key(item: tuple[str, bool]) -> str:
    """The cache key of ``(tex, display)``."""
    return ("D" if item[1] else "I") + item[0]


def on_post_build(config) -> None:
    site = Path(config["site_dir"])
    pages = sorted(site.rglob("*.html"))
    found: dict[Path, list[tuple[re.Match[str], tuple[str, bool]]]] = {}
    for page in pages:
        text = page.read_text(encoding="utf-8")
        where = page.relative_to(site).as_posix()
        found[page] = [(m, _tex(m, where)) for m in _MATH.finditer(text)]
    cache_file = CACHE / f"{_katex_version()}.json"
    cache = _load(cache_file)
    todo = sorted({item for items in found.values() for _, item in items if _key(item) not in cache})
    for item, rendered in zip(todo, _render(todo), strict=True):
        cache[_key(item)] = rendered
    if todo:
        _store(cache_file, cache)
    styles: dict[str, str] = {}
    for page, items in found.items():
        if not items:
            continue
        text = page.read_text(encoding="utf-8")
        parts, last = [], 0
        for m, item in items:
            body = unstyle(cache[_key(item)], styles)
            tag = m["tag"]
            parts += [text[last : m.start()], f'<{tag} class="arithmatex" data-typeset="build">{body}</{tag}>']
            last = m.end()
        page.write_text("".join(parts) + text[last:], encoding="utf-8")
    out = site / STYLESHEET
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("/* Written by hooks/lc_math.py: KaTeX's inline styles as classes. */\n" + stylesheet(styles))
