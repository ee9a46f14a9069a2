"""Line charts on log-log axes: model state against GPUs (ZeRO), activations against sequence length.

Examples:
    >>> zero_scaling({"ZeRO-0": [(1, 16)]}, (1, 16, "you"))["layer"][0]["mark"]
    {'type': 'line', 'point': True}
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from calc.errors import CalcError
from calc.guide.charts._common import _amount, _layered


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


def _log_axes(x_field: str, x_title: str, y_title: str) -> tuple[dict[str, object], dict[str, object]]:
    """A base-2 log x axis (GPUs, tokens: powers of two) and a log y axis of ``amount``."""
    x = {"field": x_field, "type": "quantitative", "title": x_title, "scale": {"type": "log", "base": 2}}
    y = {"field": "amount", "type": "quantitative", "title": y_title, "scale": {"type": "log"}}
    return x, y


def _reader_layer(point: dict[str, object], x: dict, y: dict, shape: dict[str, object]) -> dict[str, object]:
    """The reader's point as a diamond, named in the marker legend under the plot (``shape``), not by a label
    beside it: there it sat on the lines or ran into the legend on a phone."""
    # Unfilled, as the rings: a filled point's legend strokes no symbol, and the rule's dash is only a stroke.
    mark = {"type": "point", "filled": False, "size": 140, "strokeWidth": 2.5}
    return {"data": {"values": [point]}, "mark": mark, "encoding": {"x": x, "y": y, "shape": shape}}


def _marker_shape(reader: str | None, ring: bool, capacity: str | None) -> dict[str, object]:
    """The shape encoding whose legend (under the plot) names the chart's markers: the reader's diamond
    (``reader``, its label), the rings (``ring``) and the dashed rule at the GPU's memory (``capacity``).

    Examples:
        >>> _marker_shape("you", False, "GPU memory: H100")["scale"]
        {'domain': ['you', 'GPU memory: H100'], 'range': ['diamond', 'M-1,0H-0.3M0.3,0H1']}
    """
    pairs = [(reader, "diamond"), (_RING_MEANS if ring else None, "circle"), (capacity, _DASH_SYMBOL)]
    means, shapes = [m for m, _ in pairs if m], [s for m, s in pairs if m]
    legend = {**_BOTTOM, "title": None, "symbolStrokeWidth": 2, "symbolSize": 160, "labelLimit": 0}
    return {"field": "marker", "type": "nominal", "scale": {"domain": means, "range": shapes}, "legend": legend}


_DASH = [6, 4]
"""The capacity rule's dash, in px: dash and gap."""

_RING_MEANS = "Longest length whose peak fits"
"""The marker legend's name for a ring (the caller's "fits": the whole peak, not only the activations)."""

_DASH_SYMBOL = "M-1,0H-0.3M0.3,0H1"
"""A legend symbol that looks like the dashed capacity rule: two strokes with a gap (Vega's unit square)."""

_BOTTOM = {"orient": "bottom", "direction": "vertical"}
"""A legend under the plot, its entries in rows: it takes height, never the width a phone needs for the plot."""

_STACKED = {"legend": {"layout": {"bottom": {"direction": "vertical", "anchor": "start"}}}}
"""The spec's ``config`` that stacks the legends under the plot one below the other (Vega lays them side by
side, as wide as a phone's whole chart)."""

_SAME = 0.05
"""Two amounts within this fraction of the larger draw as one point on a log axis a few hundred px tall."""


def _capacity_layers(
    capacity: tuple[int, str] | None, unit: str, y: dict[str, object], *, labelled: bool = True
) -> list[dict[str, object]]:
    """The GPU's memory as a dashed rule, named by a label at the plot's right (``labelled``) or, where a marker
    legend names it (``_ring_layer``), by that legend: a label on the plot sits on the lines."""
    if capacity is None:
        return []
    cap = {"amount": _amount(capacity[0], unit), "label": f"GPU memory: {capacity[1]}"}
    rule = {"data": {"values": [cap]}, "mark": {"type": "rule", "strokeDash": list(_DASH)}, "encoding": {"y": y}}
    if not labelled:
        return [rule]
    label = {"type": "text", "align": "right", "x": "width", "dy": -7}
    return [rule, {"data": {"values": [cap]}, "mark": label, "encoding": {"y": y, "text": {"field": "label"}}}]


def _near(a: object, b: object) -> bool:
    x, y = float(a), float(b)  # type: ignore[arg-type]
    return abs(x - y) <= _SAME * max(x, y)


def _hidden_series(rows: Sequence[Mapping[str, object]], x_name: str) -> list[str]:
    """The series a later-drawn series covers: the same x values and every amount within ``_SAME``, so on a log
    axis the later line (drawn on top) would hide the earlier one completely.

    Examples:
        >>> rows = [{"series": n, "seq": 1, "amount": a} for n, a in (("Sel", 100), ("Flash", 101), ("Full", 5))]
        >>> _hidden_series(rows, "seq")
        ['Sel']
    """
    points: dict[object, list[tuple[object, object]]] = {}
    for r in rows:
        points.setdefault(r["series"], []).append((r[x_name], r["amount"]))

    def covers(a: list[tuple[object, object]], b: list[tuple[object, object]]) -> bool:
        return [x for x, _ in a] == [x for x, _ in b] and all(_near(p[1], q[1]) for p, q in zip(a, b, strict=True))

    names = list(points)
    return [str(a) for i, a in enumerate(names) if any(covers(points[a], points[b]) for b in names[i + 1 :])]


def _redrawn_layer(rows: Sequence[dict[str, object]], hidden: list[str], encoding: dict[str, object]) -> list[dict]:
    """The ``hidden`` series drawn again, dashed and a little wider, on top of the line that covers them: both
    colours show, alternating along the line (FlashAttention stores about what selective recomputation keeps)."""
    if not hidden:
        return []
    mark = {"type": "line", "strokeDash": [6, 6], "strokeWidth": 3, "clip": True}
    color = {**encoding["color"], "legend": None}  # type: ignore[dict-item]
    values = [r for r in rows if r["series"] in hidden]
    return [{"data": {"values": values}, "mark": mark, "encoding": {**encoding, "color": color}}]


def _clipped_y(y: dict[str, object], rows: Sequence[dict[str, object]], capacity: float) -> dict[str, object]:
    """A log y axis from the decade below the smallest point to the decade at or above a hundred times the GPU's
    memory, if a line runs past it: that line leaves the top instead of stretching the axis to petabytes (unless
    every point is past it: then the axis is the data's).

    Examples:
        >>> y = {"field": "amount", "scale": {"type": "log"}}
        >>> _clipped_y(y, [{"amount": 0.07}, {"amount": 2.3e6}], 80.0)["scale"]
        {'type': 'log', 'domain': [0.01, 10000.0]}
        >>> _clipped_y(y, [{"amount": 0.07}, {"amount": 300}], 80.0) is y  # nothing past it: the axis is the data's
        True
    """
    amounts = [float(r["amount"]) for r in rows]  # type: ignore[arg-type]
    high = 10.0 ** math.ceil(math.log10(capacity * 100))
    if max(amounts) <= high or min(amounts) >= high:  # nothing past it, or nothing under it to show
        return y
    low = 10.0 ** math.floor(math.log10(min(amounts)))
    return {**y, "scale": {**y["scale"], "domain": [low, high]}}  # type: ignore[dict-item]


def _ring_layer(
    rows: Sequence[dict[str, object]], stops: Mapping[str, int], encoding: dict[str, object], shape: dict[str, object]
) -> dict[str, object]:
    """A ring on each series at its ``stops`` length, unlabelled on the plot (with many lines labels would
    overlap: the colour legend names the ring's line). The marker legend under the plot (``shape``) says what a
    ring means. Rings at one point (lines that coincide) nest, the later one wider, so neither hides the other."""
    rings: list[dict[str, object]] = []
    for name, seq in stops.items():
        match = [r for r in rows if r["series"] == name and r["seq"] == seq]
        if not match:
            raise CalcError("stops", "must name a point of its series", f"{name}: seq={seq}")
        under = [r for r in rings if r["seq"] == seq and _near(r["amount"], match[0]["amount"])]
        rings.append({**match[0], "marker": _RING_MEANS, "ring": 260 + 200 * len(under)})
    size = {"field": "ring", "type": "quantitative", "scale": None, "legend": None}
    mark = {"type": "point", "filled": False, "strokeWidth": 2}  # unclipped: a ring fits, it is under the top
    return {"data": {"values": rings}, "mark": mark, "encoding": {**encoding, "shape": shape, "size": size}}


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
        reader: ``(gpus, bytes, label)`` of the reader's own layout, drawn as a diamond the legend names.
        capacity: ``(bytes, label)`` of the GPU, drawn as a dashed rule the legend names, or ``None``.
        unit: ``"GB"`` or ``"GiB"``.
        title: The chart's title.

    Examples:
        >>> s = zero_scaling({"ZeRO-0": [(1, 16), (8, 16)]}, (8, 16, "you"), unit="GB")
        >>> s["layer"][0]["encoding"]["x"]["scale"], s["layer"][0]["encoding"]["y"]["scale"]
        ({'type': 'log', 'base': 2}, {'type': 'log'})
        >>> s["layer"][1]["data"]["values"][0]["label"], s["layer"][1]["encoding"]["shape"]["scale"]["domain"]
        ('you', ['you'])
        >>> s = zero_scaling({"ZeRO-0": [(1, 16)]}, (1, 16, "you"), capacity=(80, "H100"))
        >>> [lay["mark"]["type"] for lay in s["layer"]]  # the rule unlabelled: the legend under the plot names it
        ['line', 'point', 'rule']
    """
    rows, names = _log_series(series, unit, "gpus")
    x, y = _log_axes("gpus", "GPUs (data-parallel degree)", f"Model state per GPU ({unit})")
    gpus, n, label = reader
    point = {"gpus": gpus, "amount": _amount(n, unit), "label": label, "marker": label}
    color = {"field": "series", "type": "nominal", "sort": names, "title": None, "legend": {**_BOTTOM, "columns": 4}}
    lines = {
        "data": {"values": rows},
        "mark": {"type": "line", "point": True},
        "encoding": {"x": x, "y": y, "color": color},
    }
    shape = _marker_shape(label, False, f"GPU memory: {capacity[1]}" if capacity else None)
    described = f"with the reader's layout ({label}) marked"
    spec = _layered(
        title,
        f"Lines of per-GPU model-state memory against GPU count for each ZeRO stage, log axes, {described}.",
        260,
        [lines, _reader_layer(point, x, y, shape), *_capacity_layers(capacity, unit, y, labelled=False)],
    )
    return {**spec, "config": _STACKED}


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
        reader: ``(seq_len, bytes, label)`` of the reader's inputs, drawn as a diamond the legend names, or ``None``
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
        >>> [layer["mark"]["type"] for layer in s["layer"]], s["layer"][1]["data"]["values"]  # doctest: +ELLIPSIS
        (['line', 'point'], [{'series': 'Full', 'seq': 1024, 'amount': 1.0, 'marker': 'Longest...', 'ring': 260}])
        >>> same = {"Selective": [(1024, 100 * 10**9)], "Flash": [(1024, 101 * 10**9)], "None": [(1024, 10**16)]}
        >>> stops = {"Selective": 1024, "Flash": 1024}
        >>> s = activations_by_sequence(same, None, capacity=(80 * 10**9, "H100"), stops=stops)
        >>> [(lay["mark"]["type"], lay["mark"].get("strokeDash")) for lay in s["layer"]]  # Selective redrawn on top
        [('line', None), ('point', None), ('line', [6, 6]), ('rule', [6, 4])]
        >>> {r["series"] for r in s["layer"][2]["data"]["values"]}, [r["ring"] for r in s["layer"][1]["data"]["values"]]
        ({'Selective'}, [260, 460])
        >>> s["layer"][0]["encoding"]["y"]["scale"]  # 10 PB does not stretch the axis: it leaves the top
        {'type': 'log', 'domain': [100.0, 10000.0]}
        >>> s["layer"][1]["encoding"]["shape"]["scale"]["domain"]  # what the markers mean, in a legend under the plot
        ['Longest length whose peak fits', 'GPU memory: H100']
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
    x, y = _log_axes("seq", "Sequence length (tokens)", f"Activations ({unit})")
    if capacity is not None:
        y = _clipped_y(y, rows, _amount(capacity[0], unit))
    color = {"field": "series", "type": "nominal", "sort": names, "title": legend}
    color["legend"] = {**_BOTTOM, "columns": 2}  # under the plot with the marker legend, in columns a phone narrows
    layers: list[dict[str, object]] = [
        {
            "data": {"values": rows},
            "mark": {"type": "line", "point": True, "clip": True},
            "encoding": {"x": x, "y": y, "color": color},
        }
    ]
    cap_label = f"GPU memory: {capacity[1]}" if capacity else None
    marks, described = _curve_marks(rows, reader, stops, {"x": x, "y": y, "color": color}, unit, cap_label)
    layers += marks
    spec = _layered(
        title,
        f"Lines of activation memory against sequence length for each {legend.lower()} case, log axes{described}.",
        260,
        [*layers, *_capacity_layers(capacity, unit, y, labelled=not (stops or reader))],
    )
    return {**spec, "config": _STACKED}


def _curve_marks(
    rows: list[dict[str, object]],
    reader: tuple[int, int, str] | None,
    stops: Mapping[str, int] | None,
    enc: dict[str, object],
    unit: str,
    cap_label: str | None,
) -> tuple[list[dict[str, object]], str]:
    """The activations curve's marks over its lines (the reader's diamond, the rings, the redrawn hidden lines)
    and the words that describe them."""
    shape = _marker_shape(reader[2] if reader else None, bool(stops), cap_label)
    layers: list[dict[str, object]] = []
    described = ""
    if reader is not None:
        seq, n, label = reader
        point = {"seq": seq, "amount": _amount(n, unit), "label": label, "marker": label}
        layers.append(_reader_layer(point, enc["x"], enc["y"], shape))
        described = f", with the reader's inputs ({label}) marked"
    if stops:
        layers.append(_ring_layer(rows, stops, enc, shape))
        described += ", each line's longest fitting length ringed"
    hidden = _hidden_series(rows, "seq")
    layers += _redrawn_layer(rows, hidden, enc)
    if hidden:
        described += f", {' and '.join(hidden)} dashed over the line that covers it"
    return layers, described
