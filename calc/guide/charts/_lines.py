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


_LEGEND = {"labelLimit": 320}
"""A legend whose labels are sentences (what a marker means) keeps them whole."""


def _capacity_layers(capacity: tuple[int, str] | None, unit: str, y: dict[str, object]) -> list[dict[str, object]]:
    """The GPU's memory as a dashed rule, named in a legend of its own: a label on the plot would sit on the lines."""
    if capacity is None:
        return []
    cap = {"amount": _amount(capacity[0], unit), "label": f"GPU memory: {capacity[1]}"}
    dash = {"field": "label", "type": "nominal", "title": None, "scale": {"range": [[6, 4]]}, "legend": _LEGEND}
    return [{"data": {"values": [cap]}, "mark": {"type": "rule"}, "encoding": {"y": y, "strokeDash": dash}}]


def _coincide(a: list[tuple], b: list[tuple]) -> bool:
    """Whether two series draw as one line on a log axis: the same x values, every y within 5 %."""
    if [x for x, _ in a] != [x for x, _ in b]:
        return False
    return all(abs(ya - yb) <= 0.05 * max(ya, yb) for (_, ya), (_, yb) in zip(a, b, strict=True))


def _hidden_layer(rows: Sequence[dict[str, object]], x_name: str, encoding: dict[str, object]) -> list[dict]:
    """Lines drawn under a later series with (nearly) the same points (FlashAttention stores about what selective
    recomputation keeps), drawn again dashed on top, so no series hides another."""
    points: dict[object, list[tuple]] = {}
    for r in rows:
        points.setdefault(r["series"], []).append((r[x_name], float(r["amount"])))
    names = list(points)
    hidden = {a for i, a in enumerate(names) for b in names[i + 1 :] if _coincide(points[a], points[b])}
    if not hidden:
        return []
    mark = {"type": "line", "strokeDash": [6, 6], "strokeWidth": 3, "clip": True}
    return [{"data": {"values": [r for r in rows if r["series"] in hidden]}, "mark": mark, "encoding": encoding}]


def _clipped_y(y: dict[str, object], rows: Sequence[dict[str, object]], capacity: float, reader: float) -> dict:
    """A log y axis from the decade below the smallest point to two decades above the GPU's memory (or the
    reader's point): a line past that leaves the top instead of stretching the axis to petabytes."""
    low = min(float(r["amount"]) for r in rows)
    high = max(capacity * 100, reader * 10)
    lo = 10.0 ** math.floor(math.log10(low)) if low > 0 else low
    hi = 10.0 ** math.floor(math.log10(high)) if high > 0 else high
    top = max(float(r["amount"]) for r in rows)
    return y if top <= hi else {**y, "scale": {**y["scale"], "domain": [lo, hi]}}


def _ring_layer(
    rows: Sequence[dict[str, object]], stops: Mapping[str, int], encoding: dict[str, object]
) -> dict[str, object]:
    """A ring on each series at its ``stops`` length, unlabelled on the plot (with many lines labels would
    overlap): the colour legend names the ring's line, a legend of its own says what a ring means."""
    rings = []
    for name, seq in stops.items():
        match = [r for r in rows if r["series"] == name and r["seq"] == seq]
        if not match:
            raise CalcError("stops", "must name a point of its series", f"{name}: seq={seq}")
        rings.append({**match[0], "marker": "Longest length that fits"})
    ring = {"type": "point", "filled": False, "size": 260, "strokeWidth": 2, "clip": True}
    shape = {"field": "marker", "type": "nominal", "title": None, "scale": {"range": ["circle"]}, "legend": _LEGEND}
    return {"data": {"values": rings}, "mark": ring, "encoding": {**encoding, "shape": shape}}


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
    x, y = _log_axes("gpus", "GPUs (data-parallel degree)", f"Model state per GPU ({unit})")
    gpus, n, label = reader
    point = {"gpus": gpus, "amount": _amount(n, unit), "label": label}
    lines = {
        "data": {"values": rows},
        "mark": {"type": "line", "point": True},
        "encoding": {"x": x, "y": y, "color": {"field": "series", "type": "nominal", "sort": names, "title": None}},
    }
    described = f"with the reader's layout ({label}) marked"
    return _layered(
        title,
        f"Lines of per-GPU model-state memory against GPU count for each ZeRO stage, log axes, {described}.",
        260,
        [lines, *_reader_layers(point, x, y), *_capacity_layers(capacity, unit, y)],
    )


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
        (['line', 'point'], [{'series': 'Full', 'seq': 1024, 'amount': 1.0, 'marker': 'Longest length that fits'}])
        >>> same = {"Selective": [(1024, 100 * 10**9)], "Flash": [(1024, 101 * 10**9)], "None": [(1024, 10**16)]}
        >>> s = activations_by_sequence(same, None, capacity=(80 * 10**9, "H100"), stops={"Selective": 1024})
        >>> s["layer"][2]["data"]["values"][0]["series"], s["layer"][2]["mark"]["strokeDash"]  # over the line
        ('Selective', [6, 6])
        >>> s["layer"][0]["encoding"]["y"]["scale"]  # 10 PB does not stretch the axis: it leaves the top
        {'type': 'log', 'domain': [100.0, 1000.0]}
        >>> [(s["layer"][i]["mark"]["type"], *s["layer"][i]["encoding"]) for i in (1, 3)]  # markers with a legend
        [('point', 'x', 'y', 'color', 'shape'), ('rule', 'y', 'strokeDash')]
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
        y = _clipped_y(y, rows, _amount(capacity[0], unit), _amount(reader[1], unit) if reader else 0.0)
    color = {"field": "series", "type": "nominal", "sort": names, "title": legend}
    layers: list[dict[str, object]] = [
        {
            "data": {"values": rows},
            "mark": {"type": "line", "point": True, "clip": True},
            "encoding": {"x": x, "y": y, "color": color},
        }
    ]
    described = ""
    if reader is not None:
        seq, n, label = reader
        layers += _reader_layers({"seq": seq, "amount": _amount(n, unit), "label": label}, x, y)
        described = f", with the reader's inputs ({label}) marked"
    if stops:
        layers.append(_ring_layer(rows, stops, {"x": x, "y": y, "color": color}))
        described += ", each line's longest fitting length ringed"
    layers += _hidden_layer(rows, "seq", {"x": x, "y": y, "color": {**color, "legend": None}})
    return _layered(
        title,
        f"Lines of activation memory against sequence length for each {legend.lower()} case, log axes{described}.",
        260,
        [*layers, *_capacity_layers(capacity, unit, y)],
    )
