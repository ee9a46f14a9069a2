"""Line charts on log-log axes: model state against GPUs (ZeRO), activations against sequence length.

Examples:
    >>> zero_scaling({"ZeRO-0": [(1, 16)]}, (1, 16, "you"))["layer"][0]["mark"]
    {'type': 'line', 'point': True}
"""

from __future__ import annotations

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


def _ring_layer(
    rows: Sequence[dict[str, object]], stops: Mapping[str, int], encoding: dict[str, object]
) -> dict[str, object]:
    """An unlabelled ring on each series at its ``stops`` length (with many lines labels would overlap; the
    legend's colour names the ring's line)."""
    rings = []
    for name, seq in stops.items():
        match = [r for r in rows if r["series"] == name and r["seq"] == seq]
        if not match:
            raise CalcError("stops", "must name a point of its series", f"{name}: seq={seq}")
        rings.append(match[0])
    ring = {"type": "point", "filled": False, "size": 260, "strokeWidth": 2}
    return {"data": {"values": rings}, "mark": ring, "encoding": encoding}


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
    x, y = _log_axes("seq", "Sequence length (tokens)", f"Activations ({unit})")
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
        layers.append(_ring_layer(rows, stops, {"x": x, "y": y, "color": color}))
        described += ", each line's longest fitting length ringed"
    return _layered(
        title,
        f"Lines of activation memory against sequence length for each {legend.lower()} case, log axes{described}.",
        260,
        [*layers, *_capacity_layers(capacity, unit, y)],
    )
