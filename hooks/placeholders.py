"""Placeholders for the hooks that pre-render HTML into a page (calculators, figures, exercises, prose charts).

Markdown must not see the HTML a marker stands for, so ``on_page_markdown`` swaps each marker for a token on a
line of its own ([`Placeholders.hold`][]), Markdown wraps the token in ``<p>…</p>``, and ``on_page_content``
puts the HTML back ([`Placeholders.fill`][]). A token Markdown lost or doubled fails the build.

Examples:
    >>> held = Placeholders("LCDEMOPLACEHOLDER", "demo")
    >>> held.begin("a.md")
    >>> line = held.hold("a.md", "<b>x</b>")
    >>> held.fill("a.md", "<p>LCDEMOPLACEHOLDER0X</p>")
    '<b>x</b>'
"""

from __future__ import annotations

import re

from mkdocs.exceptions import PluginError

__all__ = ["Placeholders"]


class Placeholders:
    """The HTML fragments waiting for their page's rendered content, one list per page.

    Args:
        prefix: The token's text (unique to the hook, letters only, so Markdown leaves it alone).
        what: What the fragments are, for the build error.
    """

    def __init__(self, prefix: str, what: str) -> None:
        self._token = prefix + "{}X"
        self._what = what
        self._pending: dict[str, list[str]] = {}

    def begin(self, src: str) -> None:
        """Start page ``src`` afresh (a rebuild forgets what an earlier build held)."""
        self._pending[src] = []

    def hold(self, src: str, fragment: str) -> str:
        """Keep ``fragment`` for page ``src``; the Markdown to put where its marker was."""
        fragments = self._pending.setdefault(src, [])
        fragments.append(fragment)
        return "\n" + self._token.format(len(fragments) - 1) + "\n"

    def check(self, src: str, markdown: str, marker: re.Pattern) -> str:
        """``markdown`` after the swap, or a build error when ``marker`` still finds one: a marker not alone on
        its line, or one with bad syntax."""
        leftover = marker.search(markdown)
        if leftover:
            raise PluginError(f"{src}: malformed {self._what} marker {leftover[0]!r} (a marker stands alone on a line)")
        return markdown

    def fill(self, src: str, content: str) -> str:
        """Put page ``src``'s fragments back into its rendered ``content``.

        Raises:
            PluginError: When a token is not in ``content`` exactly once.
        """
        for i, fragment in enumerate(self._pending.pop(src, [])):
            token = f"<p>{self._token.format(i)}</p>"
            if content.count(token) != 1:
                raise PluginError(f"{src}: {self._what} placeholder {i} lost in rendering")
            content = content.replace(token, fragment)
        return content
