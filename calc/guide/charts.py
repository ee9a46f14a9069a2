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
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from html import escape

from calc.errors import CalcError
from calc.memory.activations import activation_bytes_per_layer
from calc.memory.model_state import model_state_bytes
from calc.units import format_bytes

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

CHART_WIDTH = 560
"""Width of a chart's plotting area in CSS pixels; the page scales the SVG down to the column (phones)."""

SCHEMES: tuple[str, ...] = ("default", "slate")
"""Material's palette names (``data-md-color-scheme``): light and dark, one [`THEMES`][calc.guide.charts.THEMES]
each."""

MAX_CHART_GPUS = 1 << 20
"""The ZeRO chart's GPU axis stops at 2^20 GPUs, the most any calculator accepts for ``dp``."""

_UNITS = {"GB": 10**9, "GiB": 2**30}
_FONT = "-apple-system, BlinkMacSystemFont, Helvetica, Arial, sans-serif"


def _theme(fg: str, muted: str, grid: str, capacity: str, category: list[str]) -> dict[str, object]:
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
        "legend": {"labelColor": fg, "titleColor": fg, "labelFontSize": 12, "titleFontSize": 12},
        "range": {"category": category},
        "text": {"color": fg, "fontSize": 12},
        "rule": {"color": capacity},
        "point": {"color": capacity},
        "line": {"strokeWidth": 2},
    }


THEMES: dict[str, dict[str, object]] = {
    "default": _theme(
        "#1f2329",
        "#5f6368",
        "#e3e5e8",
        "#b3261e",
        ["#3f51b5", "#e8710a", "#188038", "#9334e6", "#00838f", "#c5221f", "#795548", "#5f6368"],
    ),
    "slate": _theme(
        "#e3e5ee",
        "#a4a8b8",
        "#3b4054",
        "#ff8a80",
        ["#8c9eff", "#fdad5c", "#7bcf8e", "#d7aefb", "#4dd0e1", "#f28b82", "#c8a791", "#bdc1c6"],
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


def _amount(n: int, unit: str) -> float:
    return round(n / _per_unit(unit), 6)


def memory_breakdown(
    segments: Sequence[tuple[str, int]],
    capacity_bytes: int,
    capacity_label: str,
    *,
    unit: str = "GB",
    title: str = "Memory per GPU against its capacity",
) -> dict[str, object]:
    """A stacked bar of what one GPU holds, against a labelled mark at the GPU's memory.

    Args:
        segments: ``(label, bytes)`` in stacking order; empty ones are left out.
        capacity_bytes: The GPU's memory.
        capacity_label: What the mark says, e.g. ``"H100 SXM 80 GB"``.
        unit: ``"GB"`` or ``"GiB"``, the axis unit.
        title: The chart's title.

    Returns:
        A layered Vega-Lite spec: the bar, a rule at the capacity and its label.

    Examples:
        >>> s = memory_breakdown([("Weights", 14 * 10**9), ("Gradients", 0)], 80 * 10**9, "H100 80 GB")
        >>> [layer["mark"]["type"] for layer in s["layer"]]
        ['bar', 'rule', 'text']
        >>> s["layer"][0]["data"]["values"]
        [{'component': 'Weights', 'amount': 14.0, 'order': 0}]
        >>> s["layer"][2]["data"]["values"][0]["label"]
        'GPU memory: H100 80 GB'
    """
    values = [
        {"component": label, "amount": _amount(n, unit), "order": i} for i, (label, n) in enumerate(segments) if n > 0
    ]
    cap = {"amount": _amount(capacity_bytes, unit), "label": f"GPU memory: {capacity_label}"}
    x = {"field": "amount", "type": "quantitative", "title": f"Memory per GPU ({unit})"}
    # The label reads away from the nearer edge, so it never widens the chart.
    align = "right" if 2 * capacity_bytes > max(capacity_bytes, sum(n for _, n in segments if n > 0)) else "left"
    return {
        "title": title,
        "description": f"Stacked bar of memory per GPU by component, with the GPU memory ({capacity_label}) marked.",
        "width": CHART_WIDTH,
        "height": 44,
        "layer": [
            {
                "data": {"values": values},
                "mark": {"type": "bar", "tooltip": False},
                "encoding": {
                    "x": {**x, "stack": "zero"},
                    "color": {
                        "field": "component",
                        "type": "nominal",
                        "sort": [v["component"] for v in values],
                        "title": None,
                        "legend": {"orient": "bottom", "columns": 3},
                    },
                    "order": {"field": "order", "type": "ordinal"},
                },
            },
            {
                "data": {"values": [cap]},
                "mark": {"type": "rule", "strokeWidth": 3, "y": -6, "y2": 50},
                "encoding": {"x": x},
            },
            {
                "data": {"values": [cap]},
                "mark": {
                    "type": "text",
                    "align": align,
                    "dx": -4 if align == "right" else 4,
                    "y": -12,
                    "fontWeight": "bold",
                },
                "encoding": {"x": x, "text": {"field": "label"}},
            },
        ],
    }


def memory_by_case(
    cases: Sequence[tuple[str, Sequence[tuple[str, int]]]],
    capacity: tuple[int, str] | None = None,
    *,
    unit: str = "GB",
    title: str = "Memory by case",
) -> dict[str, object]:
    """Horizontal stacked bars, one per case (a method, a layout), of memory by component.

    The same encoding as [`memory_breakdown`][calc.guide.charts.memory_breakdown], one bar per case, so cases
    are compared component by component; empty components are left out.

    Args:
        cases: ``(case label, [(component, bytes), ...])`` in display order.
        capacity: ``(bytes, label)`` of the GPU, drawn as a labelled rule, or ``None``.
        unit: ``"GB"`` or ``"GiB"``.
        title: The chart's title.

    Examples:
        >>> s = memory_by_case([("Full", [("Weights", 2 * 10**9), ("Adam", 0)]), ("LoRA", [("Weights", 10**9)])])
        >>> s["layer"][0]["data"]["values"]
        [{'case': 'Full', 'component': 'Weights', 'amount': 2.0, 'order': 0}, \
{'case': 'LoRA', 'component': 'Weights', 'amount': 1.0, 'order': 0}]
        >>> memory_by_case([])
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: cases must name at least one case (got 0)
    """
    if not cases:
        raise CalcError("cases", "must name at least one case", 0)
    values, components = [], []
    for case, segments in cases:
        for i, (component, n) in enumerate(segments):
            if n > 0:
                values.append({"case": case, "component": component, "amount": _amount(n, unit), "order": i})
                if component not in components:
                    components.append(component)
    x = {"field": "amount", "type": "quantitative", "title": f"Memory per GPU ({unit})"}
    layers: list[dict[str, object]] = [
        {
            "data": {"values": values},
            "mark": {"type": "bar", "tooltip": False},
            "encoding": {
                "y": {"field": "case", "type": "nominal", "sort": None, "title": None, "axis": {"labelLimit": 200}},
                "x": {**x, "stack": "zero"},
                "color": {
                    "field": "component",
                    "type": "nominal",
                    "sort": components,
                    "title": None,
                    "legend": {"orient": "bottom", "columns": 3},
                },
                "order": {"field": "order", "type": "ordinal"},
            },
        }
    ]
    if capacity is not None:
        cap = {"amount": _amount(capacity[0], unit), "label": f"GPU memory: {capacity[1]}"}
        layers += [
            {"data": {"values": [cap]}, "mark": {"type": "rule", "strokeWidth": 2}, "encoding": {"x": x}},
            {
                "data": {"values": [cap]},
                "mark": {"type": "text", "align": "right", "dx": -4, "y": -8, "fontWeight": "bold"},
                "encoding": {"x": x, "text": {"field": "label"}},
            },
        ]
    return {
        "title": title,
        "description": "Horizontal stacked bars of memory per GPU by component, one per case"
        + (f", with the GPU memory ({capacity[1]}) marked." if capacity else "."),
        "width": CHART_WIDTH,
        "height": {"step": 30},
        "layer": layers,
    }


def _log_series(
    series: Mapping[str, Sequence[tuple[int, int]]], unit: str, x_name: str
) -> tuple[list[dict[str, object]], list[str]]:
    rows = []
    for name, points in series.items():
        for x, n in points:
            if x <= 0 or n <= 0:
                raise CalcError("series", "must hold positive points for log axes", f"{name}: {x_name}={x}, {n} B")
            rows.append({"series": name, x_name: x, "amount": _amount(n, unit)})
    return rows, list(series)


def _reader_layers(point: dict[str, object], x: dict[str, object], y: dict[str, object]) -> list[dict[str, object]]:
    return [
        {
            "data": {"values": [point]},
            "mark": {"type": "point", "filled": True, "size": 120, "shape": "diamond"},
            "encoding": {"x": x, "y": y},
        },
        {
            "data": {"values": [point]},
            "mark": {"type": "text", "align": "left", "dx": 8, "dy": -10, "fontWeight": "bold"},
            "encoding": {"x": x, "y": y, "text": {"field": "label"}},
        },
    ]


def _capacity_layers(capacity: tuple[int, str] | None, unit: str, y: dict[str, object]) -> list[dict[str, object]]:
    if capacity is None:
        return []
    cap = {"amount": _amount(capacity[0], unit), "label": f"GPU memory: {capacity[1]}"}
    return [
        {"data": {"values": [cap]}, "mark": {"type": "rule", "strokeDash": [6, 4]}, "encoding": {"y": y}},
        {
            "data": {"values": [cap]},
            "mark": {"type": "text", "align": "right", "x": "width", "dy": -7},
            "encoding": {"y": y, "text": {"field": "label"}},
        },
    ]


def zero_scaling(
    series: Mapping[str, Sequence[tuple[int, int]]],
    reader: tuple[int, int, str],
    *,
    capacity: tuple[int, str] | None = None,
    unit: str = "GB",
    title: str = "Model state per GPU against the number of GPUs",
) -> dict[str, object]:
    """Per-GPU memory against the data-parallel degree, one line per ZeRO stage, on log-log axes.

    ZeRO-1/2/3 divide the optimizer states, then the gradients, then the weights by the number of
    data-parallel GPUs (Rajbhandari et al., "ZeRO", SC 2020, Figure 1), so on log-log axes each stage
    is a line that bends down towards its floor, and ZeRO-0 stays flat.

    Args:
        series: Line name (``"ZeRO-0"``...) to ``(gpus, bytes per GPU)`` points, all positive.
        reader: ``(gpus, bytes, label)`` of the reader's own layout, drawn as a labelled diamond.
        capacity: ``(bytes, label)`` of the GPU, drawn as a dashed labelled rule, or ``None``.
        unit: ``"GB"`` or ``"GiB"``.
        title: The chart's title.

    Examples:
        >>> s = zero_scaling({"ZeRO-0": [(1, 16), (8, 16)]}, (8, 16, "you"), unit="GB")
        >>> s["layer"][0]["encoding"]["x"]["scale"], s["layer"][0]["encoding"]["y"]["scale"]
        ({'type': 'log', 'base': 2}, {'type': 'log'})
        >>> s["layer"][2]["data"]["values"][0]["label"]
        'you'
    """
    rows, names = _log_series(series, unit, "gpus")
    x = {
        "field": "gpus",
        "type": "quantitative",
        "title": "GPUs (data-parallel degree)",
        "scale": {"type": "log", "base": 2},
    }
    y = {"field": "amount", "type": "quantitative", "title": f"Model state per GPU ({unit})", "scale": {"type": "log"}}
    gpus, n, label = reader
    point = {"gpus": gpus, "amount": _amount(n, unit), "label": label}
    return {
        "title": title,
        "description": "Lines of per-GPU model-state memory against GPU count for each ZeRO stage, log axes, "
        f"with the reader's layout ({label}) marked.",
        "width": CHART_WIDTH,
        "height": 260,
        "layer": [
            {
                "data": {"values": rows},
                "mark": {"type": "line", "point": True},
                "encoding": {
                    "x": x,
                    "y": y,
                    "color": {"field": "series", "type": "nominal", "sort": names, "title": None},
                },
            },
            *_reader_layers(point, x, y),
            *_capacity_layers(capacity, unit, y),
        ],
    }


def activations_by_sequence(
    series: Mapping[str, Sequence[tuple[int, int]]],
    reader: tuple[int, int, str] | None,
    *,
    capacity: tuple[int, str] | None = None,
    stops: Mapping[str, int] | None = None,
    legend: str = "Recomputation",
    unit: str = "GB",
    title: str = "Activations against sequence length",
) -> dict[str, object]:
    """Activation memory against sequence length, one line per recomputation mode, on log-log axes.

    Without recomputation attention's score matrices grow with the square of the sequence (Korthikanti
    et al., "Reducing Activation Recomputation in Large Transformer Models", MLSys 2023, Table 2);
    selective and full recomputation keep the growth linear, so the lines part as the sequence grows.

    Args:
        series: Mode name (``"None"``, ``"Selective"``, ``"Full"``) to ``(seq_len, bytes)`` points.
        reader: ``(seq_len, bytes, label)`` of the reader's inputs, drawn as a labelled diamond, or ``None``
            (a chart in the prose has no reader).
        capacity: ``(bytes, label)`` of the GPU, or ``None``.
        stops: Series name to the longest sequence at which that layout still fits, drawn as a ring on
            the line (a point of the series). What "fits" means is the caller's: the whole peak, not
            only the activations, so a ring may sit well below the capacity line.
        legend: The colour legend's title.
        unit: ``"GB"`` or ``"GiB"``.
        title: The chart's title.

    Examples:
        >>> s = activations_by_sequence({"Full": [(1024, 10**9), (2048, 2 * 10**9)]}, (2048, 2 * 10**9, "you"))
        >>> [r["amount"] for r in s["layer"][0]["data"]["values"]]
        [1.0, 2.0]
        >>> s = activations_by_sequence({"Full": [(1024, 10**9), (2048, 2 * 10**9)]}, None, stops={"Full": 1024})
        >>> [layer["mark"]["type"] for layer in s["layer"]], s["layer"][1]["data"]["values"]
        (['line', 'point'], [{'series': 'Full', 'seq': 1024, 'amount': 1.0}])
        >>> activations_by_sequence({"Full": [(1024, 1)]}, None, stops={"Full": 4096})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: stops must name a point of its series (got 'Full: seq=4096')
        >>> activations_by_sequence({"Full": [(0, 1)]}, (1, 1, "you"))  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: series must hold positive points for log axes (got 'Full: seq=0, 1 B')
    """
    rows, names = _log_series(series, unit, "seq")
    x = {
        "field": "seq",
        "type": "quantitative",
        "title": "Sequence length (tokens)",
        "scale": {"type": "log", "base": 2},
    }
    y = {"field": "amount", "type": "quantitative", "title": f"Activations ({unit})", "scale": {"type": "log"}}
    color = {"field": "series", "type": "nominal", "sort": names, "title": legend}
    layers: list[dict[str, object]] = [
        {
            "data": {"values": rows},
            "mark": {"type": "line", "point": True},
            "encoding": {"x": x, "y": y, "color": color},
        }
    ]
    described = ""
    if reader is not None:
        seq, n, label = reader
        layers += _reader_layers({"seq": seq, "amount": _amount(n, unit), "label": label}, x, y)
        described = f", with the reader's inputs ({label}) marked"
    if stops:
        rings = []
        for name, seq in stops.items():
            match = [r for r in rows if r["series"] == name and r["seq"] == seq]
            if not match:
                raise CalcError("stops", "must name a point of its series", f"{name}: seq={seq}")
            rings.append(match[0])
        ring = {"type": "point", "filled": False, "size": 260, "strokeWidth": 2}
        # Unlabelled: with many lines the labels would overlap; the legend's colour names the ring's line.
        layers.append({"data": {"values": rings}, "mark": ring, "encoding": {"x": x, "y": y, "color": color}})
        described += ", each line's longest fitting length ringed"
    return {
        "title": title,
        "description": f"Lines of activation memory against sequence length for each {legend.lower()} case, log axes"
        f"{described}.",
        "width": CHART_WIDTH,
        "height": 260,
        "layer": [*layers, *_capacity_layers(capacity, unit, y)],
    }


def exposed_time(
    rows: Sequence[tuple[str, float, float]],
    *,
    title: str = "Time per step: exposed and overlapped",
) -> dict[str, object]:
    """Horizontal bars of seconds per step for each collective and the pipeline bubble.

    Each row is split into the part that stalls the step (exposed) and the part hidden behind
    compute (overlapped), the decomposition of step time used by Narayanan et al., "Efficient
    Large-Scale Language Model Training on GPU Clusters Using Megatron-LM" (SC 2021, Section 3).

    Args:
        rows: ``(label, total seconds, exposed seconds)``; ``0 <= exposed <= total``. The bubble is a row
            whose exposed time is its total.
        title: The chart's title.

    Examples:
        >>> s = exposed_time([("TP all-reduce", 0.5, 0.2), ("Pipeline bubble", 0.1, 0.1)])
        >>> [(v["what"], v["part"], v["seconds"]) for v in s["data"]["values"]]  # a zero part is left out
        [('TP all-reduce', 'Exposed', 0.2),
         ('TP all-reduce', 'Overlapped with compute', 0.3),
         ('Pipeline bubble', 'Exposed', 0.1)]
        >>> exposed_time([("x", 1.0, 2.0)])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: exposed must be between 0 and the row's total seconds (got ...)
    """
    values = []
    for label, total, exposed in rows:
        if not 0 <= exposed <= total * (1 + 1e-12):
            raise CalcError(
                "exposed", "must be between 0 and the row's total seconds", f"{label}: {exposed} of {total}"
            )
        for part, seconds in (("Exposed", exposed), ("Overlapped with compute", max(total - exposed, 0))):
            if seconds > 0:  # a zero part draws nothing and would only add a legend entry
                values.append({"what": label, "part": part, "seconds": round(seconds, 9)})
    return {
        "title": title,
        "description": "Horizontal bars of seconds per step for each collective and the pipeline bubble, "
        "split into exposed and overlapped time.",
        "width": CHART_WIDTH,
        "height": {"step": 26},
        "data": {"values": values},
        "mark": {"type": "bar", "tooltip": False},
        "encoding": {
            "y": {"field": "what", "type": "nominal", "sort": None, "title": None, "axis": {"labelLimit": 220}},
            "x": {"field": "seconds", "type": "quantitative", "stack": "zero", "title": "Seconds per step"},
            "color": {
                "field": "part",
                "type": "nominal",
                "sort": ["Exposed", "Overlapped with compute"],
                "title": None,
                "legend": {"orient": "bottom"},
            },
            "order": {"field": "part", "sort": "ascending"},
        },
    }


def layout_comparison(
    layouts: Sequence[Mapping[str, object]],
    *,
    capacity: tuple[int, str] | None = None,
    unit: str = "GB",
    title: str = "Top layouts compared",
) -> dict[str, object]:
    """Side-by-side bars comparing the planner's best layouts: memory per GPU and time per step.

    Args:
        layouts: One mapping per layout, best first, with ``label`` (e.g. ``"tp 8 × pp 4 × dp 16"``),
            ``memory_bytes`` (per GPU, the most loaded stage) and ``step_s`` (seconds per step, or
            ``None`` when not estimated).
        capacity: ``(bytes, label)`` of the GPU, drawn as a labelled rule on the memory panel.
        unit: ``"GB"`` or ``"GiB"``.
        title: The chart's title.

    Returns:
        A horizontally concatenated spec: memory per GPU, and seconds per step when any layout has one.

    Examples:
        >>> top = [
        ...     {"label": "tp 8", "memory_bytes": 60 * 10**9, "step_s": 2.5},
        ...     {"label": "tp 4", "memory_bytes": 70 * 10**9, "step_s": 2.0},
        ... ]
        >>> s = layout_comparison(top, capacity=(80 * 10**9, "H100 80 GB"))
        >>> len(s["hconcat"]), s["hconcat"][0]["layer"][0]["data"]["values"][1]
        (2, {'layout': 'tp 4', 'rank': 2, 'amount': 70.0, 'seconds': 2.0})
        >>> layout_comparison([])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: layouts must name at least one layout (got 0)
    """
    if not layouts:
        raise CalcError("layouts", "must name at least one layout", 0)
    values = []
    for rank, item in enumerate(layouts, start=1):
        step = item.get("step_s")
        values.append(
            {
                "layout": str(item["label"]),
                "rank": rank,
                "amount": _amount(int(item["memory_bytes"]), unit),  # type: ignore[call-overload]
                "seconds": None if step is None else round(float(step), 6),  # type: ignore[arg-type]
            }
        )
    y = {"field": "layout", "type": "nominal", "sort": None, "title": None, "axis": {"labelLimit": 200}}
    memory_x = {"field": "amount", "type": "quantitative", "title": f"Memory per GPU ({unit})"}
    memory: dict[str, object] = {
        "width": CHART_WIDTH // 2 - 40,
        "height": {"step": 26},
        "layer": [
            {
                "data": {"values": values},
                "mark": {"type": "bar", "tooltip": False},
                "encoding": {"y": y, "x": memory_x, "color": {"datum": "Memory per GPU", "legend": None}},
            }
        ],
    }
    if capacity is not None:
        cap = {"amount": _amount(capacity[0], unit), "label": f"GPU memory: {capacity[1]}"}
        memory["layer"].append(
            {"data": {"values": [cap]}, "mark": {"type": "rule", "strokeWidth": 2}, "encoding": {"x": memory_x}}
        )  # type: ignore[union-attr]
        memory["layer"].append(  # type: ignore[union-attr]
            {
                "data": {"values": [cap]},
                "mark": {"type": "text", "align": "right", "dx": -4, "y": -8},
                "encoding": {"x": memory_x, "text": {"field": "label"}},
            }
        )
    panels = [memory]
    if any(v["seconds"] is not None for v in values):
        panels.append(
            {
                "width": CHART_WIDTH // 2 - 40,
                "height": {"step": 26},
                "data": {"values": [v for v in values if v["seconds"] is not None]},
                "mark": {"type": "bar", "tooltip": False},
                "encoding": {
                    "y": {**y, "axis": None},
                    "x": {"field": "seconds", "type": "quantitative", "title": "Seconds per step"},
                    "color": {"datum": "Seconds per step", "legend": None},
                },
            }
        )
    return {
        "title": title,
        "description": "Bars comparing memory per GPU and seconds per step of the top layouts, best first.",
        "hconcat": panels,
        "resolve": {"scale": {"y": "shared"}},
    }


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


# ---------------------------------------------------------------------------------------------
# The calculators' charts: engine numbers for the reader's inputs, as [data-chart] elements.


def _fmt(n: int, unit: str) -> str:
    _per_unit(unit)
    return format_bytes(n, binary=unit == "GiB")


def _powers_of_two(low: int, high: int) -> list[int]:
    out, x = [], low
    while x <= high:
        out.append(x)
        x *= 2
    return out


def zero_chart(
    params: int,
    *,
    convention: str,
    zero_stage: int,
    dp: int,
    capacity: int,
    gpu_label: str,
    unit: str,
) -> str:
    """The ZeRO chart for the will-it-fit calculator: per-GPU model state for stages 0-3 against dp.

    Each line is [`model_state_bytes`][calc.memory.model_state.model_state_bytes] (ZeRO, Rajbhandari et al.
    2020, Table 1) at dp = 1, 2, 4, ... up to at least 64 and four times the reader's dp (at most
    [`MAX_CHART_GPUS`][calc.guide.charts.MAX_CHART_GPUS]); the reader's stage and dp are marked.

    Examples:
        >>> html_ = zero_chart(7 * 10**9, convention="mixed-adam-16", zero_stage=3, dp=8,
        ...                    capacity=80 * 10**9, gpu_label="H100 SXM 80 GB", unit="GB")
        >>> 'data-chart="zero-scaling"' in html_, "ZeRO-3 on 8 GPUs: 14.0 GB per GPU" in html_
        (True, True)
    """
    top = min(MAX_CHART_GPUS, max(64, 1 << (4 * dp - 1).bit_length()))
    gpus = _powers_of_two(1, top)
    series = {
        f"ZeRO-{k}": [(g, model_state_bytes(params, zero_stage=k, dp=g, convention=convention).total) for g in gpus]
        for k in range(4)
    }
    mine = model_state_bytes(params, zero_stage=zero_stage, dp=dp, convention=convention).total
    you = f"ZeRO-{zero_stage} on {dp:,} GPUs: {_fmt(mine, unit)} per GPU"
    spec = zero_scaling(
        series, (dp, mine, f"you: ZeRO-{zero_stage}, dp {dp:,}"), capacity=(capacity, gpu_label), unit=unit
    )
    label = f"Model state per GPU against GPU count for ZeRO stages 0 to 3, log axes; {you}."
    return chart("zero-scaling", spec, label)


def activations_chart(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    *,
    tp: int,
    sequence_parallel: bool,
    recompute: str,
    flash_attention: bool,
    unit: str,
) -> str:
    """The activations calculator's chart: bytes per layer against sequence length for each recomputation mode.

    Each line is [`activation_bytes_per_layer`][calc.memory.activations.activation_bytes_per_layer]
    (Korthikanti et al. 2022, Table 2) at s = 512, 1024, ... up to at least 32,768 and four times the
    reader's s, with the reader's other inputs; lengths the layout refuses (``s`` not divisible by ``t``
    under sequence parallelism) are left out. The reader's point is marked.

    Examples:
        >>> html_ = activations_chart(2048, 1, 12288, 96, tp=8, sequence_parallel=False, recompute="none",
        ...                           flash_attention=False, unit="GiB")
        >>> 'data-chart="activations-by-sequence"' in html_
        True
    """
    kw = dict(tp=tp, sequence_parallel=sequence_parallel, flash_attention=flash_attention)
    top = min(1 << 24, max(32768, 1 << (4 * seq_len - 1).bit_length()))
    names = {"none": "None", "selective": "Selective", "full": "Full"}
    series: dict[str, list[tuple[int, int]]] = {}
    for mode, name in names.items():
        points = []
        for s in _powers_of_two(512, top):
            try:
                points.append((s, activation_bytes_per_layer(s, micro_batch, hidden, heads, recompute=mode, **kw)))
            except CalcError:
                continue
        series[name] = points
    mine = activation_bytes_per_layer(seq_len, micro_batch, hidden, heads, recompute=recompute, **kw)
    you = f"{names[recompute]} recomputation at s = {seq_len:,}: {_fmt(mine, unit)} per layer"
    spec = activations_by_sequence(
        series,
        (seq_len, mine, f"you: {names[recompute].lower()}, s {seq_len:,}"),
        unit=unit,
        title="Activations per layer per GPU against sequence length",
    )
    label = f"Activation bytes per layer against sequence length for each recomputation mode, log axes; {you}."
    return chart("activations-by-sequence", spec, label)


def step_time_chart(rows: Sequence[tuple[str, float, float]], *, title: str | None = None) -> str:
    """The communication calculator's chart: [`exposed_time`][calc.guide.charts.exposed_time] for its terms.

    Args:
        rows: ``(label, total seconds, exposed seconds)`` per collective, then the pipeline bubble if the
            calculator models one (exposed = total). No rows, no chart (``""``).
        title: The chart's title, if not [`exposed_time`][calc.guide.charts.exposed_time]'s.

    Examples:
        >>> 'data-chart="exposed-time"' in step_time_chart([("TP all-reduce", 0.25, 0.25)])
        True
        >>> step_time_chart([])
        ''
    """
    if not rows:
        return ""
    worst = max(rows, key=lambda r: r[2])
    label = (
        f"Seconds per step for each of {len(rows)} communication terms, exposed and overlapped; "
        f"the most exposed is {worst[0]} at {worst[2]:.3g} s."
    )
    spec = exposed_time(rows) if title is None else exposed_time(rows, title=title)
    return chart("exposed-time", spec, label)


def layout_chart(layouts: Sequence[Mapping[str, object]], *, capacity: int, gpu_label: str, unit: str) -> str:
    """The planner's chart: [`layout_comparison`][calc.guide.charts.layout_comparison] of its top layouts.

    Args:
        layouts: Best first; each with ``label``, ``memory_bytes`` and ``step_s`` (or ``None``).
        capacity: The GPU's memory in bytes.
        gpu_label: The GPU's name for the capacity mark.
        unit: ``"GB"`` or ``"GiB"``.

    Examples:
        >>> top = [{"label": "tp 8 × dp 8", "memory_bytes": 6 * 10**10, "step_s": 1.5}]
        >>> html_ = layout_chart(top, capacity=8 * 10**10, gpu_label="H100 SXM 80 GB", unit="GB")
        >>> 'data-chart="layout-comparison"' in html_ and "best: tp 8 × dp 8" in html_
        True
    """
    spec = layout_comparison(layouts, capacity=(capacity, gpu_label), unit=unit)
    best = layouts[0]
    label = (
        f"Memory per GPU and seconds per step of the top {len(layouts)} layouts; best: {best['label']}, "
        f"{_fmt(int(best['memory_bytes']), unit)} per GPU."  # type: ignore[call-overload]
    )
    return chart("layout-comparison", spec, label)
