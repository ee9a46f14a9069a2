"""Charts as data: Vega-Lite specs built from engine numbers, and the ``[data-chart]`` element that carries one.

Every function here returns a Vega-Lite specification as plain ``dict``/``list`` data (no dependency, no
drawing code), in the grammar of Satyanarayan et al., "Vega-Lite: A Grammar of Interactive Graphics"
(IEEE TVCG 23(1), 2017). Two renderers read the same spec:

* the build (``hooks/lc_charts.py``) turns it into inline SVG with ``vl-convert-python``, once per palette,
  so a chart is on the page at first paint and with JavaScript off;
* the browser (``docs/assets/javascripts/charts.mjs``) renders it again, live, with ``vega-embed`` and
  Vega's CSP-safe expression interpreter, whenever a calculator shows new numbers or the palette changes.

[`chart`][calc.guide.charts.chart] wraps a spec into the element both look for. Colours, fonts and axes come
from one [`THEMES`][calc.guide.charts.THEMES] config per Material palette (``default`` light, ``slate`` dark),
which both renderers apply, so a spec itself names no colour.

Byte values are plotted in the reader's unit (``"GB"`` = 10^9 bytes or ``"GiB"`` = 2^30 bytes, see
[`calc.units`][calc.units]); the unit is named in every axis title. What a chart does not model is what
its calculator does not: the chart draws the calculator's numbers and nothing else.

The package's parts, all re-exported here (import from ``calc.guide.charts``): ``_common`` (themes, units, the
element), ``_memory`` (bars of memory), ``_lines`` (log-log lines), ``_time`` (time per step, and the
communication calculator's and the planner's charts) and ``_calculators`` (the memory calculators' line charts,
computed with the engine). Each name loads its part on first use (PEP 562), so a calculator loads only the
charts it draws.

Examples:
    >>> from calc.guide.charts import chart, step_time_chart
    >>> chart.__module__, step_time_chart.__module__
    ('calc.guide.charts._common', 'calc.guide.charts._time')
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names, for readers of the code, type checkers and the API page (griffe reads them)
    from calc.guide.charts._calculators import MAX_CHART_GPUS, activations_chart, zero_chart
    from calc.guide.charts._common import CHART_WIDTH, SCHEMES, THEMES, chart, spec_json
    from calc.guide.charts._lines import activations_by_sequence, zero_scaling
    from calc.guide.charts._memory import memory_breakdown, memory_by_case
    from calc.guide.charts._time import exposed_time, layout_chart, layout_comparison, step_time_chart

_PARTS: dict[str, str] = {
    **dict.fromkeys(("MAX_CHART_GPUS", "activations_chart", "zero_chart"), "_calculators"),
    **dict.fromkeys(("CHART_WIDTH", "SCHEMES", "THEMES", "chart", "spec_json"), "_common"),
    **dict.fromkeys(("activations_by_sequence", "zero_scaling"), "_lines"),
    **dict.fromkeys(("memory_breakdown", "memory_by_case"), "_memory"),
    **dict.fromkeys(("exposed_time", "layout_chart", "layout_comparison", "step_time_chart"), "_time"),
}
"""Each public name and the part that defines it."""


def __getattr__(name: str):  # a public name's part, loaded on first use (PEP 562); no docstring: not on the API page
    part = _PARTS.get(name)
    if part is None:
        raise AttributeError(f"module 'calc.guide.charts' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"calc.guide.charts.{part}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "CHART_WIDTH",
    "MAX_CHART_GPUS",
    "SCHEMES",
    "THEMES",
    "activations_by_sequence",
    "activations_chart",
    "chart",
    "exposed_time",
    "layout_chart",
    "layout_comparison",
    "memory_breakdown",
    "memory_by_case",
    "spec_json",
    "step_time_chart",
    "zero_chart",
    "zero_scaling",
]
