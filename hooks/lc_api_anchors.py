"""MkDocs hook: the API page keeps the anchors of the flat module names (``#calc.layout.Layout``).

The engine moved into subpackages (``calc.memory.layout``); mkdocstrings names each heading after the new
path. Links that readers pasted before the move point at the old ids, so each heading whose module has an
old name gets an empty ``<span>`` with that id just before it (``calc.MOVED_MODULES``).
"""

from __future__ import annotations

import re

from calc import MOVED_MODULES

_NEW_TO_OLD = {new: old for old, new in MOVED_MODULES.items()}
_ID = re.compile(r'<(h[1-6]|div|a|span)\b([^>]*?)\bid="(' + "|".join(map(re.escape, _NEW_TO_OLD)) + r')((?:\.\w+)*)"')


def _old_anchor(match: re.Match) -> str:
    old = _NEW_TO_OLD[match[3]] + match[4]
    return f'<span id="{old}" class="lc-moved-anchor"></span>{match[0]}'


def on_page_content(content: str, page, config, files) -> str:
    """Add the old ids on the API page; every other page is left alone."""
    if page.file.src_uri != "reference/api.md":
        return content
    out, count = _ID.subn(_old_anchor, content)
    if not count:
        raise RuntimeError("lc_api_anchors: no engine heading found on reference/api.md (mkdocstrings changed?)")
    return out
