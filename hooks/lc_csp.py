"""Content-Security-Policy for the built site, written as a ``<meta http-equiv>`` into every page.

Called from ``lc_build.on_post_build`` once every file is in the site directory:

1. [`extract_data_uris`][]: Material's CSS embeds its icons as ``url("data:image/svg+xml,...")``
   (``mask-image``); each is written to ``assets/images/inline/<sha>.svg`` and the CSS is rewritten to
   point at it, so the policy needs no ``data:`` source.
2. [`inline_hashes`][]: the sha256 of every executable inline ``<script>`` and every ``<style>`` element
   on every page. The union goes into every page's policy, because Material's instant navigation keeps
   the first page's policy while it swaps in the next page and re-runs that page's inline scripts.
3. [`write_policy`][]: the ``<meta>`` becomes the first element of each page's ``<head>``.

Anything that cannot be handled fails the build (``PluginError``): a page without ``<head>``, an
unreadable ``data:`` URI, a charset declaration pushed past the 1024 bytes a browser scans.

There is no ``'unsafe-inline'`` anywhere: the charts' pre-rendered SVG (``hooks/lc_charts.py``) carries
its geometry in SVG attributes, never in ``style=""`` (the hook refuses one that does), scripts set styles
through the CSSOM, which a policy does not restrict, and there is no ``'unsafe-eval'``: the live charts
run Vega's expression interpreter (``vega-interpreter``), not generated code. Their specs travel in a
``data-chart-spec`` attribute, so they add no inline script to hash.
"""

from __future__ import annotations

import base64
import hashlib
import re
import urllib.parse
from pathlib import Path

from mkdocs.exceptions import PluginError

INLINE_DIR = "assets/images/inline"
_SCRIPT = re.compile(r"<script\b(?P<attrs>[^>]*)>(?P<body>.*?)</script\s*>", re.DOTALL | re.IGNORECASE)
_STYLE = re.compile(r"<style\b[^>]*>(?P<body>.*?)</style\s*>", re.DOTALL | re.IGNORECASE)
_TYPE = re.compile(r"""\btype\s*=\s*["']?(?P<type>[^"'\s>]+)""", re.IGNORECASE)
_SRC = re.compile(r"\bsrc\s*=", re.IGNORECASE)
_HEAD = re.compile(r"<head\b[^>]*>", re.IGNORECASE)
_DATA_URL = re.compile(
    r"""url\(\s*(?:"(?P<dq>data:[^"]*)"|'(?P<sq>data:[^']*)'|(?P<bare>data:[^)'"\s]*))\s*\)""", re.IGNORECASE
)
_JS_TYPES = {"", "text/javascript", "application/javascript", "module"}
META_PREFIX = '<meta http-equiv="Content-Security-Policy" content="'


def is_executable(attrs: str) -> bool:
    """Whether an inline ``<script>`` with these attributes runs (``application/json`` data blocks do not).

    Examples:
        >>> is_executable(''), is_executable(' type="module"'), is_executable(' id="c" type="application/json"')
        (True, True, False)
    """
    if _SRC.search(attrs):
        return False
    found = _TYPE.search(attrs)
    return (found["type"].lower() if found else "") in _JS_TYPES


def sha256_source(text: str) -> str:
    """The CSP source expression for an inline script or style, hashed as the browser hashes it (UTF-8).

    Examples:
        >>> sha256_source("")
        "'sha256-47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU='"
    """
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode() + "'"


def inline_hashes(html: str) -> tuple[set[str], set[str]]:
    """Hashes of the executable inline scripts and of the ``<style>`` elements in one page."""
    scripts = {sha256_source(m["body"]) for m in _SCRIPT.finditer(html) if is_executable(m["attrs"])}
    styles = {sha256_source(m["body"]) for m in _STYLE.finditer(html)}
    return scripts, styles


def policy(script_hashes: set[str], style_hashes: set[str]) -> str:
    """The policy text. ``frame-ancestors``, ``report-uri`` and ``sandbox`` are left out: a ``<meta>``
    policy ignores them (with a console warning), so they belong in a server header."""
    directives = [
        "default-src 'self'",
        "script-src 'self' 'wasm-unsafe-eval' " + " ".join(sorted(script_hashes)),
        "style-src 'self' " + " ".join(sorted(style_hashes)),
        "img-src 'self'",
        "font-src 'self'",
        "connect-src 'self'",
        "worker-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
    ]
    return "; ".join(d.rstrip() for d in directives)


def _decode_data_uri(uri: str, where: str) -> tuple[str, bytes]:
    header, sep, payload = uri[len("data:") :].partition(",")
    if not sep:
        raise PluginError(f"{where}: malformed data: URI {uri[:60]!r}")
    parts = header.split(";")
    mime = parts[0].lower() or "text/plain"
    if "base64" in parts[1:]:
        data = base64.b64decode(payload, validate=False)
    else:
        data = urllib.parse.unquote_to_bytes(payload)
    if mime != "image/svg+xml":
        raise PluginError(f"{where}: data: URI of type {mime!r}; only SVG icons are extracted, add support here")
    return mime, data


def extract_data_uris(site: Path) -> int:
    """Move every ``url(data:…)`` in the site's CSS into a self-hosted file; return how many were moved."""
    out = site / INLINE_DIR
    moved = 0
    for css in sorted(site.rglob("*.css")):
        text = css.read_text(encoding="utf-8")
        if "data:" not in text:
            continue
        rel = css.relative_to(site).as_posix()

        def replace(match: re.Match, rel: str = rel, css: Path = css) -> str:  # called within this turn
            nonlocal moved
            _, data = _decode_data_uri(match["dq"] or match["sq"] or match["bare"], rel)
            name = hashlib.sha256(data).hexdigest()[:16] + ".svg"
            out.mkdir(parents=True, exist_ok=True)
            (out / name).write_bytes(data)
            moved += 1
            target = Path("/", INLINE_DIR, name)
            up = "../" * (len(css.relative_to(site).parts) - 1)
            return f'url("{up}{target.as_posix().lstrip("/")}")'

        new = _DATA_URL.sub(replace, text)
        if re.search(r"""url\(\s*["']?data:""", new, re.IGNORECASE):
            raise PluginError(f"{rel}: a data: URI was left in the CSS after extraction")
        css.write_text(new, encoding="utf-8")
    return moved


def write_policy(site: Path) -> str:
    """Write the policy into every HTML file of the site; return it."""
    pages = sorted(site.rglob("*.html"))
    if not pages:
        raise PluginError(f"no HTML in {site}: cannot write the Content-Security-Policy")
    texts = {p: p.read_text(encoding="utf-8") for p in pages}
    scripts: set[str] = set()
    styles: set[str] = set()
    for text in texts.values():
        s, t = inline_hashes(text)
        scripts |= s
        styles |= t
    text_policy = policy(scripts, styles)
    meta = f'{META_PREFIX}{text_policy}">'
    for path, text in texts.items():
        rel = path.relative_to(site).as_posix()
        text = re.sub(re.escape(META_PREFIX) + r'[^"]*">\s*', "", text)  # a dirty rebuild: replace, not stack
        head = _HEAD.search(text)
        if head is None:
            if "<script" in text.lower() or "<style" in text.lower():
                raise PluginError(f"{rel}: no <head> to put the Content-Security-Policy in")
            continue  # a bare fragment (e.g. an SVG wrapper) with nothing to police
        new = text[: head.end()] + "\n    " + meta + text[head.end() :]
        charset = re.search(r"<meta\s+charset=", new, re.IGNORECASE)
        if charset and len(new[: charset.end()].encode("utf-8")) > 1024:
            raise PluginError(f"{rel}: the policy pushes <meta charset> past the first 1024 bytes")
        path.write_text(new, encoding="utf-8")
    return text_policy


def apply(site: Path) -> str:
    """Self-host the CSS's data: icons, then write the policy into every page. Fails loudly."""
    extract_data_uris(site)
    return write_policy(site)
