"""Where a calculator that searches posts its first answer while the search goes on (issue 20: the planner).

[`render`][calc.widgets.render] sets [`PARTIAL`][calc.widgets._partial.PARTIAL] for the length of one render; a
calculator's ``compute`` that can say something before it is done (the planner's best layout so far) calls
[`post_partial`][calc.widgets._partial.post_partial] with a results fragment. Outside the browser nobody listens
and the call does nothing.
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

__all__ = ["PARTIAL", "SEARCHING", "listening", "post_partial"]

SEARCHING: tuple[str, ...] = ("plan",)
"""The calculators that search (and may post a first answer): the browser worker never repeats their renders to
warm up the runtime (``docs/assets/javascripts/calc-worker.mjs``), since one takes hundreds of milliseconds."""

PARTIAL: ContextVar[Callable[[str], object] | None] = ContextVar("lc_partial", default=None)
"""The listener of the render under way (the browser worker's ``postMessage``), or ``None``."""


def post_partial(html: str) -> bool:
    """Hand ``html``, a first results fragment, to the render's listener; ``False`` when there is none.

    Examples:
        >>> post_partial("<p>soon</p>")
        False
        >>> got = []
        >>> token = PARTIAL.set(got.append)
        >>> post_partial("<p>soon</p>"), got
        (True, ['<p>soon</p>'])
        >>> PARTIAL.reset(token)
    """
    listener = PARTIAL.get()
    if listener is None:
        return False
    listener(html)
    return True


def listening() -> bool:
    """Whether the render under way has a listener (so a first fragment is worth building)."""
    return PARTIAL.get() is not None
