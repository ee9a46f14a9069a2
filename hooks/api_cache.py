"""mkdocstrings' pages from ``.cache/memo/api/``: each ``::: identifier`` rendered once per set of inputs.

Rendering the API page's Jinja templates was the largest share of a warm build after the engine's own answers.
[`install`][] (called from ``lc_build.on_config``) wraps mkdocstrings-python's ``PythonHandler.render``: its
HTML, and the headings it reported for the table of contents, autorefs and ``objects.inv``, are kept by the hash
of the identifier, the options, the locale, the versions of every package on the rendering path, ``mkdocs.yml``
(the Markdown extensions docstrings are converted with), ``docs/_abbreviations.md`` (appended to each docstring
by ``pymdownx.snippets``), ``overrides/`` and [`build_cache.stamp`][] (the engine's sources). A hit puts the
very headings back where ``render`` leaves them (and the aliases ``get_aliases`` gave for them right after
the render: a render resolves them), so everything after it (anchors, the inventory, the page) runs
as before: the built site is byte-identical with or without the cache. Collection (griffe) is not cached.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
from pathlib import Path
from typing import Any
from xml.etree.ElementTree import Element

from build_cache import CACHE, ROOT, entry, store

PACKAGES = ("mkdocs", "mkdocstrings", "mkdocstrings-python", "griffelib", "markdown", "pymdown-extensions", "jinja2")
"""Distributions whose code renders a docstring; their versions are part of every key."""
FILES = ("mkdocs.yml", "docs/_abbreviations.md")
FOLDERS = ("overrides",)
_key: list[str] = []


def element_data(el: Element) -> list[Any]:
    """An element as JSON-able data: tag, attributes, text, tail and children, recursively.

    Examples:
        >>> from xml.etree.ElementTree import SubElement
        >>> h = Element("h2", {"id": "calc.x"})
        >>> h.text, h.tail = "x ", "\\n"
        >>> SubElement(h, "code").text = "\\x02wzxhzdk:1\\x03"
        >>> element_data(h)
        ['h2', {'id': 'calc.x'}, 'x ', '\\n', [['code', {}, '\\x02wzxhzdk:1\\x03', None, []]]]
        >>> element_data(from_data(element_data(h))) == element_data(h)
        True
    """
    return [el.tag, dict(el.attrib), el.text, el.tail, [element_data(c) for c in el]]


def from_data(data: list[Any]) -> Element:
    """The element [`element_data`][] described."""
    tag, attrib, text, tail, children = data
    el = Element(tag, attrib)
    el.text, el.tail = text, tail
    el.extend(from_data(c) for c in children)
    return el


def _static_key() -> str:
    digest = hashlib.sha256()
    for name in PACKAGES:
        digest.update(f"{name}={importlib.metadata.version(name)}\0".encode())
    paths = [ROOT / f for f in FILES] + sorted(p for d in FOLDERS for p in (ROOT / d).rglob("*") if p.is_file())
    for path in paths:
        digest.update(path.relative_to(ROOT).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def install(cache: Path | None = CACHE) -> None:
    """Wrap ``PythonHandler.render`` once per process (a second call, a rebuild under ``mkdocs serve``, keeps it)."""
    from mkdocstrings_handlers.python._internal.handler import PythonHandler

    _key[:] = [_static_key()]  # every build: mkdocs.yml or a package may have changed under `mkdocs serve`
    if getattr(PythonHandler.render, "lc_cached", False):
        return
    original = PythonHandler.render

    def render(self, data, options, locale=None) -> str:
        path = entry("api", [*_key, data.path, repr(options), locale], cache) if cache else None
        self._lc_aliases, self._lc_record = {}, None
        if path is not None and path.is_file():  # a hit: the headings and aliases the render reported
            stored = json.loads(path.read_bytes().decode("utf-8"))
            self._headings.extend(from_data(h) for h in stored["headings"])
            self._lc_aliases = {k: tuple(v) for k, v in stored["aliases"].items()}
            return stored["html"]
        before = len(self._headings)
        html = original(self, data, options, locale=locale)
        new = self._headings[before:]
        ids = {h.get("id") for h in new if h.get("id") and "data-skip-inventory" not in h.attrib}
        record = {"html": str(html), "headings": [element_data(h) for h in new], "aliases": {}}
        self._lc_record = (path, ids, record)
        _finish(self)
        return html

    original_aliases = PythonHandler.get_aliases

    def get_aliases(self, identifier: str) -> tuple[str, ...]:
        # Rendering resolves griffe's aliases (who re-exports an object); a cached render did not, so the
        # aliases asked for its headings after the render are kept with it and given back on a hit.
        known = getattr(self, "_lc_aliases", {})
        found = known[identifier] if identifier in known else original_aliases(self, identifier)
        if getattr(self, "_lc_record", None) and identifier in self._lc_record[1]:
            self._lc_record[2]["aliases"][identifier] = list(found)
            _finish(self)
        return found

    render.lc_cached = True
    PythonHandler.render, PythonHandler.get_aliases = render, get_aliases


def _finish(handler) -> None:
    """Store a render once ``get_aliases`` was asked about each of its inventory headings."""
    path, ids, record = handler._lc_record
    if path is not None and ids <= record["aliases"].keys():
        store(path, json.dumps(record, ensure_ascii=False))
        handler._lc_record = None
