"""Diagnosis (issue 19): an answer that does not fit names its bottleneck in words and the cheapest changes that
fix it, each a link that opens a calculator with the reader's inputs carried.

One mechanism for the links: a [`Target`][calc.widgets._diagnosis.Target] is a calculator embedded on a page (its
page, its id there, the anchor to land on and the inputs its marker sets);
[`handoff_href`][calc.widgets._diagnosis.handoff_href] writes the address (``page?calc.field=value&…#anchor``,
which calc.mjs and the build resolve) with the [`carried`][calc.widgets._diagnosis.carried] inputs,
[`handoff`][calc.widgets._diagnosis.handoff] the link and [`diagnosis`][calc.widgets._diagnosis.diagnosis] the
paragraph (``data-output="diagnosis"``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from urllib.parse import quote

from calc.markup import escape
from calc.widgets._html import out

__all__ = ["TRAINING_MEMORY", "Target", "carried", "diagnosis", "handoff", "handoff_href"]


@dataclass(frozen=True)
class Target:
    """A calculator where a hand-off lands: ``calc`` embedded on ``page`` under ``anchor``.

    Attributes:
        page: The page, from the site's root (``memory/activations/``).
        calc: The calculator's id on that page (its name when the page embeds it once).
        anchor: The heading the link scrolls to.
        marker: The inputs the page's ``[[calc …]]`` marker sets: a link's inputs replace the page's values, and
            every field a link leaves out keeps the page's, so a link carries whatever differs from these.
    """

    page: str
    calc: str
    anchor: str
    marker: Mapping[str, str] = field(default_factory=dict)


TRAINING_MEMORY = Target(
    "memory/activations/",
    "training-memory",
    "rival-model-state",
    {
        "preset": "llama3-8b",
        "dp": "1",
        "zero_stage": "0",
        "seq_len": "8192",
        "recompute": "none",
        "flash_attention": "1",
        "dropout": "0",
    },
)
"""The activation page's one ``[[calc training-memory …]]`` (recomputation, tp, sequence parallelism, cp), with its
marker's inputs as ``docs/memory/activations.md`` writes them (``tests/test_widgets_diagnosis.py`` reads the page)."""


def carried(values: Mapping[str, str], defaults: Mapping[str, str], target: Target) -> dict[str, str]:
    """The inputs a link to ``target`` carries so that it opens on ``values``: those other than what the page shows.

    Args:
        values: The calculator's values to open with.
        defaults: The calculator's own defaults (what the page's marker does not set).
        target: Where the link lands.

    Returns:
        ``{field: value}`` for each field whose value differs from the page's (its marker's, else the default).

    Examples:
        >>> t = Target("p/", "c", "a", {"dp": "1"})
        >>> carried({"dp": "8", "tp": "1", "pp": "2"}, {"dp": "8", "tp": "1", "pp": "1"}, t)
        {'dp': '8', 'pp': '2'}
    """
    shown = {**defaults, **target.marker}
    return {k: value for k, value in values.items() if value != shown.get(k)}


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
