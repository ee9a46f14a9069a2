"""Bar charts of what a GPU holds: one stacked bar against the GPU's memory, or one bar per case.

Examples:
    >>> memory_breakdown([("Weights", 10**9)], 8 * 10**10, "H100")["layer"][0]["mark"]["type"]
    'bar'
"""

from __future__ import annotations

from collections.abc import Sequence

from calc.errors import CalcError
from calc.guide.charts._common import _amount, _layered, _legend_columns, _short, _values_layer, _with_room


def _stacked(values: list[dict], x: dict, components: list[str], **encoding: object) -> dict[str, object]:
    """The bar layer of memory by component, stacked in the order given, its legend below."""
    legend = {"orient": "bottom", "columns": _legend_columns(components)}
    color = {"field": "component", "type": "nominal", "sort": components, "title": None, "legend": legend}
    return {
        "data": {"values": values},
        "mark": {"type": "bar", "tooltip": False},
        "encoding": {
            **encoding,
            "x": {**x, "stack": "zero"},
            "color": color,
            "order": {"field": "order", "type": "ordinal"},
        },
    }


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
        >>> [layer.get("mark", {}).get("type") for layer in s["layer"]]  # the bar, the GPU, its name, the total
        ['bar', 'rule', 'text', None]
        >>> s["layer"][0]["data"]["values"]
        [{'component': 'Weights', 'amount': 14.0, 'order': 0}]
        >>> s["layer"][2]["data"]["values"][0]["label"]
        'GPU memory: H100 80 GB'
        >>> s["layer"][3]["data"]["values"], s["layer"][0]["encoding"]["x"]["scale"]  # room for the value
        ([{'amount': 14.0, 'text': '14 GB'}], {'domainMax': 92.0})
    """
    values = [
        {"component": label, "amount": _amount(n, unit), "order": i} for i, (label, n) in enumerate(segments) if n > 0
    ]
    cap = {"amount": _amount(capacity_bytes, unit), "label": f"GPU memory: {capacity_label}"}
    total = _amount(sum(n for _, n in segments if n > 0), unit)
    x = {"field": "amount", "type": "quantitative", "title": f"Memory per GPU ({unit})"}
    x = _with_room(x, max(total, cap["amount"]))  # the total is written after the bar
    # The label reads away from the nearer edge, so it never widens the chart.
    align = "right" if 2 * capacity_bytes > max(capacity_bytes, sum(n for _, n in segments if n > 0)) else "left"
    label = {"type": "text", "align": align, "dx": -4 if align == "right" else 4, "y": -12, "fontWeight": "bold"}
    return _layered(
        title,
        f"Stacked bar of memory per GPU by component, with the GPU memory ({capacity_label}) marked.",
        44,
        [
            _stacked(values, x, [v["component"] for v in values]),
            {
                "data": {"values": [cap]},
                "mark": {"type": "rule", "strokeWidth": 3, "y": -6, "y2": 50},
                "encoding": {"x": x},
            },
            {"data": {"values": [cap]}, "mark": label, "encoding": {"x": x, "text": {"field": "label"}}},
            _values_layer([{"amount": total, "text": _short(total, unit)}], x),
        ],
    )


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
        >>> [v["text"] for v in s["layer"][-1]["data"]["values"]]  # each bar's total, written after it
        ['2 GB', '1 GB']
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
    totals = [(case, _amount(sum(n for _, n in segments if n > 0), unit)) for case, segments in cases]
    top = max([t for _, t in totals] + ([_amount(capacity[0], unit)] if capacity else []))
    x = _with_room({"field": "amount", "type": "quantitative", "title": f"Memory per GPU ({unit})"}, top)
    y = {"field": "case", "type": "nominal", "sort": None, "title": None, "axis": {"labelLimit": 200}}
    layers: list[dict[str, object]] = [_stacked(values, x, components, y=y)]
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
    layers.append(_values_layer([{"case": c, "amount": t, "text": _short(t, unit)} for c, t in totals], x, y))
    marked = f", with the GPU memory ({capacity[1]}) marked." if capacity else "."
    return _layered(
        title, f"Horizontal stacked bars of memory per GPU by component, one per case{marked}", {"step": 30}, layers
    )
