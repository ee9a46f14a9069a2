"""Charts of time per step: exposed against overlapped communication, and the planner's top layouts; and the
communication calculator's and the planner's charts of them, as ``[data-chart]`` elements.

Examples:
    >>> [layer.get("mark", {}).get("type") for layer in exposed_time([("Bubble", 0.1, 0.1)])["layer"]]
    ['bar', None]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from calc.errors import CalcError
from calc.guide.charts._common import CHART_WIDTH, _amount, _fmt, _short, _values_layer, _with_room, chart


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
        >>> [v["text"] for v in s["layer"][1]["data"]["values"]]  # each bar's total, written after it
        ['0.5 s', '0.1 s']
        >>> exposed_time([("x", 1.0, 2.0)])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: exposed must be between 0 and the row's total seconds (got ...)
    """
    values, totals = [], []
    for label, total, exposed in rows:
        if not 0 <= exposed <= total * (1 + 1e-12):
            raise CalcError(
                "exposed", "must be between 0 and the row's total seconds", f"{label}: {exposed} of {total}"
            )
        for part, seconds in (("Exposed", exposed), ("Overlapped with compute", max(total - exposed, 0))):
            if seconds > 0:  # a zero part draws nothing and would only add a legend entry
                values.append({"what": label, "part": part, "seconds": round(seconds, 9)})
        totals.append({"what": label, "seconds": round(total, 9), "text": _short(total, "s")})
    y = {"field": "what", "type": "nominal", "sort": None, "title": None, "axis": {"labelLimit": 220}}
    x = {"field": "seconds", "type": "quantitative", "stack": "zero", "title": "Seconds per step"}
    x = _with_room(x, max((float(t["seconds"]) for t in totals), default=0.0)) if totals else x
    parts = {"field": "part", "type": "nominal", "sort": ["Exposed", "Overlapped with compute"], "title": None}
    bars = {
        "mark": {"type": "bar", "tooltip": False},
        "encoding": {
            "y": y,
            "x": x,
            "color": {**parts, "legend": {"orient": "bottom"}},
            "order": {"field": "part", "sort": "ascending"},
        },
    }
    return {
        "title": title,
        "description": "Horizontal bars of seconds per step for each collective and the pipeline bubble, "
        "split into exposed and overlapped time, each bar's total written after it.",
        "width": CHART_WIDTH,
        "height": {"step": 26},
        "data": {"values": values},
        "layer": [bars, _values_layer(totals, x, y)],
    }


def _memory_panel(
    values: list[dict[str, object]], y: dict[str, object], capacity: tuple[int, str] | None, unit: str
) -> dict[str, object]:
    """The comparison's left panel: memory per GPU of each layout, and the GPU's memory as a labelled rule."""
    memory_x = {"field": "amount", "type": "quantitative", "title": f"Memory per GPU ({unit})"}
    top = max([float(v["amount"]) for v in values] + ([_amount(capacity[0], unit)] if capacity else []))  # type: ignore[arg-type]
    memory_x = _with_room(memory_x, top, 0.3)  # a narrow panel: more room for the values after the bars
    layers: list[dict[str, object]] = [
        {
            "data": {"values": values},
            "mark": {"type": "bar", "tooltip": False},
            "encoding": {"y": y, "x": memory_x, "color": {"datum": "Memory per GPU", "legend": None}},
        }
    ]
    if capacity is not None:  # the rule is drawn before the values: their halo covers it, it never cuts the digits
        cap = {"amount": _amount(capacity[0], unit), "label": f"GPU memory: {capacity[1]}"}
        rule = {"data": {"values": [cap]}, "mark": {"type": "rule", "strokeWidth": 2}, "encoding": {"x": memory_x}}
        label = {"type": "text", "align": "right", "dx": -4, "y": -8}
        layers += [
            rule,
            {"data": {"values": [cap]}, "mark": label, "encoding": {"x": memory_x, "text": {"field": "label"}}},
        ]
    texts = [{**v, "text": _short(float(v["amount"]), unit)} for v in values]  # type: ignore[arg-type]
    layers.append(_values_layer(texts, memory_x, y))
    return {"width": CHART_WIDTH // 2 - 40, "height": {"step": 26}, "layer": layers}


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
        >>> [[v["text"] for v in p["layer"][-1]["data"]["values"]] for p in s["hconcat"]]  # values on the bars
        [['60 GB', '70 GB'], ['2.5 s', '2 s']]
        >>> [lay.get("mark", {}).get("type") for lay in s["hconcat"][0]["layer"]]  # the rule under the values
        ['bar', 'rule', 'text', None]
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
    panels = [_memory_panel(values, y, capacity, unit)]
    timed = [v for v in values if v["seconds"] is not None]
    if timed:
        x = {"field": "seconds", "type": "quantitative", "title": "Seconds per step"}
        x = _with_room(x, max(float(v["seconds"]) for v in timed), 0.3)  # type: ignore[arg-type]
        bars = {"mark": {"type": "bar", "tooltip": False}, "encoding": {"y": {**y, "axis": None}, "x": x}}
        bars["encoding"]["color"] = {"datum": "Seconds per step", "legend": None}  # type: ignore[index]
        texts = [{**v, "text": _short(float(v["seconds"]), "s")} for v in timed]  # type: ignore[arg-type]
        panels.append(
            {
                "width": CHART_WIDTH // 2 - 40,
                "height": {"step": 26},
                "data": {"values": timed},
                "layer": [bars, _values_layer(texts, x, {**y, "axis": None})],
            }
        )
    return {
        "title": title,
        "description": "Bars comparing memory per GPU and seconds per step of the top layouts, best first.",
        "hconcat": panels,
        "resolve": {"scale": {"y": "shared"}},
    }


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
