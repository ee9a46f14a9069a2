"""HTML escaping for the engine's markup, without the ``html`` package.

The standard library's ``html.escape`` lives in a package whose ``__init__`` imports ``html.entities`` (the
2,231 named character references ``html.unescape`` needs): 97 kB of compiled code that the browser worker would
load for a function that needs five replacements. [`escape`][calc.markup.escape] is that function, with the same
output.
"""

from __future__ import annotations

__all__ = ["escape"]


def escape(s: str, quote: bool = True) -> str:
    """``s`` with ``&``, ``<`` and ``>`` (and with ``quote``, both quotes) replaced by character references.

    The same output as the standard library's ``html.escape``.

    Examples:
        >>> escape('<a href="x">Tom & Jerry\\'s</a>')
        '&lt;a href=&quot;x&quot;&gt;Tom &amp; Jerry&#x27;s&lt;/a&gt;'
        >>> escape("\\"5 < 6\\"", quote=False)
        '"5 &lt; 6"'
    """
    # Chained replacements, as html.escape does: 2-5 times faster than str.translate with a mapping (a render
    # escapes some 140 strings).
    s = s.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return s.replace('"', "&quot;").replace("'", "&#x27;") if quote else s
