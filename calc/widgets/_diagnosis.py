"""Diagnosis (issue 19): an answer that does not fit, or runs slowly, names its bottleneck in words and the cheapest
changes that fix it, each a link that opens a calculator with the reader's inputs carried.

One mechanism for every calculator: [`handoff_href`][calc.widgets._diagnosis.handoff_href] writes the address
(``page?calc.field=value&…#anchor``, which calc.mjs and the build resolve), [`handoff`][calc.widgets._diagnosis.handoff]
the link and [`diagnosis`][calc.widgets._diagnosis.diagnosis] the paragraph (``data-output="diagnosis"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from html import escape
from urllib.parse import quote

from calc.widgets._html import out

__all__ = ["TRAINING_MEMORY", "diagnosis", "handoff", "handoff_href"]

TRAINING_MEMORY = ("memory/activations/", "training-memory", "rival-model-state")
"""Where a hand-off to the training-memory calculator goes: ``(page, calculator, anchor)``, the activation page's
one ``[[calc training-memory]]`` (which has recomputation, tp, sequence parallelism and cp)."""


def handoff_href(page: str, calc: str, inputs: Mapping[str, object], anchor: str) -> str:
    """The site-relative address of calculator ``calc`` on ``page`` with ``inputs`` filled in (not escaped).

    Examples:
        >>> handoff_href("parallelism/pipeline/", "pipeline-bubble", {"pp": 4, "num_microbatches": 1}, "shrink")
        'parallelism/pipeline/?pipeline-bubble.pp=4&pipeline-bubble.num_microbatches=1#shrink'
    """
    query = "&".join(f"{calc}.{k}={quote(str(value))}" for k, value in inputs.items())
    return f"{page}?{query}#{anchor}"


def handoff(href: str, text: str) -> str:
    """A hand-off link (``lc-calc__handoff``; calc.mjs and the build set its ``href`` from ``data-site-href``).

    Examples:
        >>> handoff("a/?x.y=1&x.z=2#top", "Try it")
        '<a class="lc-calc__handoff" data-site-href="a/?x.y=1&amp;x.z=2#top">Try it</a>'
    """
    return f'<a class="lc-calc__handoff" data-site-href="{escape(href)}">{escape(text)}</a>'


def diagnosis(text: str, links: Iterable[str] = (), *, lead: str = "") -> str:
    """The diagnosis paragraph: ``text`` (plain) as ``data-output="diagnosis"``, then ``links`` after ``lead``.

    Examples:
        >>> diagnosis("Too big.")
        '<p class="lc-diagnosis"><span data-output="diagnosis">Too big.</span></p>'
        >>> diagnosis("Too big.", ["<a>x</a>", "<a>y</a>"], lead="Fits with:")
        '<p class="lc-diagnosis"><span data-output="diagnosis">Too big.</span> Fits with: <a>x</a>; <a>y</a>.</p>'
    """
    links = list(links)
    tail = f" {lead + ' ' if lead else ''}{'; '.join(links)}." if links else ""
    return f'<p class="lc-diagnosis">{out("diagnosis", text)}{tail}</p>'
