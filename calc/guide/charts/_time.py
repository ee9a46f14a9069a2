"""Charts of time per step: exposed against overlapped communication, and the planner's top layouts.

Examples:
    >>> exposed_time([("Bubble", 0.1, 0.1)])["mark"]
    {'type': 'bar', 'tooltip': False}
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from calc.errors import CalcError
from calc.guide.charts._common import CHART_WIDTH, _amount


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


def _memory_panel(
    values: list[dict[str, object]], y: dict[str, object], capacity: tuple[int, str] | None, unit: str
) -> dict[str, object]:
    """The comparison's left panel: memory per GPU of each layout, and the GPU's memory as a labelled rule."""
    memory_x = {"field": "amount", "type": "quantitative", "title": f"Memory per GPU ({unit})"}
    layers: list[dict[str, object]] = [
        {
            "data": {"values": values},
            "mark": {"type": "bar", "tooltip": False},
            "encoding": {"y": y, "x": memory_x, "color": {"datum": "Memory per GPU", "legend": None}},
        }
    ]
    if capacity is not None:
        cap = {"amount": _amount(capacity[0], unit), "label": f"GPU memory: {capacity[1]}"}
        layers.append(
            {"data": {"values": [cap]}, "mark": {"type": "rule", "strokeWidth": 2}, "encoding": {"x": memory_x}}
        )
        layers.append(
            {
                "data": {"values": [cap]},
                "mark": {"type": "text", "align": "right", "dx": -4, "y": -8},
                "encoding": {"x": memory_x, "text": {"field": "label"}},
            }
        )
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
