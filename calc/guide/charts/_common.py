"""What every chart shares: the plotting width, one Vega-Lite theme per palette, the byte unit of an axis,
the spec's JSON text and the ``[data-chart]`` element that carries it.

Examples:
    >>> _amount(3 * 2**30, "GiB"), spec_json({"b": 1, "a": [1.5]})
    (3.0, '{"a":[1.5],"b":1}')
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from calc.errors import CalcError
from calc.markup import escape
from calc.units import format_bytes

CHART_WIDTH = 560
"""Width of a chart's plotting area in CSS pixels; the page scales the SVG down to the column (phones)."""

SCHEMES: tuple[str, ...] = ("default", "slate")
"""Material's palette names (``data-md-color-scheme``): light and dark, one [`THEMES`][calc.guide.charts.THEMES]
each."""

_UNITS = {"GB": 10**9, "GiB": 2**30}
_FONT = "-apple-system, BlinkMacSystemFont, Helvetica, Arial, sans-serif"


def _theme(fg: str, muted: str, grid: str, capacity: str, category: list[str], page: str) -> dict[str, object]:
    axis = {
        "labelColor": fg,
        "titleColor": fg,
        "domainColor": muted,
        "tickColor": muted,
        "gridColor": grid,
        "labelFontSize": 12,
        "titleFontSize": 12,
        "titleFontWeight": "normal",
    }
    return {
        "background": "transparent",
        "font": _FONT,
        "view": {"stroke": None},
        "title": {"color": fg, "fontSize": 14, "fontWeight": "bold", "anchor": "start", "subtitleColor": muted},
        "axis": axis,
        # No label cut short ("CUDA context and NCCL b…"): a legend's columns are sized to its labels instead.
        "legend": {"labelColor": fg, "titleColor": fg, "labelFontSize": 12, "titleFontSize": 12, "labelLimit": 0},
        "range": {"category": category},
        "text": {"color": fg, "fontSize": 12},
        "rule": {"color": capacity},
        "point": {"color": capacity},
        "line": {"strokeWidth": 2},
        # A bar's value is drawn over a halo of the page's colour, so a rule across it does not cut the digits.
        "style": {"lc-halo": {"stroke": page, "strokeWidth": 4, "strokeJoin": "round"}},
    }


THEMES: dict[str, dict[str, object]] = {
    "default": _theme(
        "#1f2329",
        "#5f6368",
        "#e3e5e8",
        "#b3261e",
        ["#3f51b5", "#e8710a", "#188038", "#9334e6", "#00838f", "#c5221f", "#795548", "#5f6368"],
        "#ffffff",  # Material's light --md-default-bg-color
    ),
    "slate": _theme(
        "#e3e5ee",
        "#a4a8b8",
        "#3b4054",
        "#ff8a80",
        ["#8c9eff", "#fdad5c", "#7bcf8e", "#d7aefb", "#4dd0e1", "#f28b82", "#c8a791", "#bdc1c6"],
        "#1e2029",  # Material's slate: hsl(232, 15%, 14%)
    ),
}
"""A Vega-Lite ``config`` per Material palette: ``default`` (light) and ``slate`` (dark).

The colours follow Material for MkDocs' own palettes (text on ``--md-default-bg-color``); each category
colour keeps at least 3:1 contrast against its background (WCAG 2.2, 1.4.11 non-text contrast)."""


def _per_unit(unit: str) -> int:
    try:
        return _UNITS[unit]
    except KeyError:
        raise CalcError("unit", "must be GB or GiB", unit, code="unknown-name") from None


def _fmt(n: int, unit: str) -> str:
    """``n`` bytes as text in ``unit`` (``"GB"`` or ``"GiB"``), for a chart's accessible name."""
    _per_unit(unit)
    return format_bytes(n, binary=unit == "GiB")


def _amount(n: int, unit: str) -> float:
    return round(n / _per_unit(unit), 6)


def _layered(title: str, description: str, height: object, layers: list[dict]) -> dict[str, object]:
    """A layered spec at the plotting width: a title, its text alternative in ``description``, the layers."""
    return {"title": title, "description": description, "width": CHART_WIDTH, "height": height, "layer": layers}


def _short(value: float, unit: str) -> str:
    """A bar's value as its label: three significant figures, thousands grouped, the unit after it."""
    text = f"{value:,.0f}" if value >= 100 else f"{value:.3g}" if value >= 1 else f"{value:.2g}"
    return f"{text} {unit}"


def _legend_columns(labels: list[str], most: int = 3) -> int:
    """How many legend columns of ``labels`` fit the plotting width, at most ``most``: a column is as wide as
    the longest label (about 7 px a character at 12 px, and the symbol); the page narrows it further on a phone.

    Examples:
        >>> _legend_columns(["Weights", "Adam"]), _legend_columns(["CUDA context and NCCL buffers"])
        (3, 2)
    """
    column = 7 * max((len(s) for s in labels), default=0) + 30
    return max(1, min(most, CHART_WIDTH // column))


def _with_room(x: dict[str, object], top: float, room: float = 0.15) -> dict[str, object]:
    """``x`` with its scale reaching ``room`` past ``top``, so a label after the longest bar stays in the plot."""
    return {**x, "scale": {**x.get("scale", {}), "domainMax": round(top * (1 + room), 6)}}  # type: ignore[dict-item]


def _values_layer(totals: list[dict[str, object]], x: dict[str, object], y: dict[str, object] | None = None) -> dict:
    """Each bar's value written just past its end (``totals``: the bar's ``x`` field, ``y`` field and ``text``),
    over a halo of the page's colour (the theme's ``lc-halo`` style) that keeps a crossing rule off the digits."""
    encoding = {"x": {k: v for k, v in x.items() if k != "stack"}, "text": {"field": "text"}}
    if y is not None:
        encoding["y"] = y
    mark = {"type": "text", "align": "left", "baseline": "middle", "dx": 4, "fontWeight": "bold"}
    layers = [{"mark": {**mark, "style": "lc-halo"}, "encoding": encoding}, {"mark": mark, "encoding": encoding}]
    return {"data": {"values": totals}, "layer": layers}


def spec_json(spec: Mapping[str, object]) -> str:
    """The spec as compact, key-sorted JSON: the text both renderers read, identical for identical charts.

    Examples:
        >>> spec_json({"mark": "bar", "data": {"values": [1]}})
        '{"data":{"values":[1]},"mark":"bar"}'
    """
    return json.dumps(spec, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def chart(name: str, spec: Mapping[str, object], label: str) -> str:
    """The ``[data-chart]`` element for a spec: what a calculator puts in its results.

    The element carries the spec (``data-chart-spec``, JSON) and an empty ``.lc-chart__view`` with
    ``role="img"`` and ``label`` as its accessible name; the build fills the view with one pre-rendered
    SVG per palette, and the browser replaces them with a live rendering. The calculator's table next to
    the chart stays the text alternative. Being attributes only, the element adds no text to the CLI.

    Args:
        name: What the chart shows (``"memory-breakdown"``...), the ``data-chart`` value.
        spec: A Vega-Lite spec from this module.
        label: The accessible name, one sentence with the key numbers.

    Examples:
        >>> print(chart("demo", {"mark": "bar"}, "A demo").replace("><", ">\\n<"))
        <figure class="lc-chart" data-chart="demo" data-chart-spec="{&quot;mark&quot;:&quot;bar&quot;}">
        <div class="lc-chart__view" role="img" aria-label="A demo">
        </div>
        </figure>
    """
    return (
        f'<figure class="lc-chart" data-chart="{escape(name)}" data-chart-spec="{escape(spec_json(spec))}">'
        f'<div class="lc-chart__view" role="img" aria-label="{escape(label)}"></div></figure>'
    )
