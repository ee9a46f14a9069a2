"""Issue 19 item 5 on the specs: no label of a rule or a marker lies on a data line, a rule never crosses a bar's
value (it is drawn under the value's halo), and no legend cuts its labels short.

The built site's audit found "GPU memory: H100 SXM 80 GB" on the ZeRO-0 line, "you: none, s 2,048" on the
Selective line, the planner's 80 GB rule through "69.2 GB", and "CUDA context and NCCL b…" in a phone legend.
"""

from __future__ import annotations

import html
import itertools
import json
import math
import re

import pytest

from _helpers import walk_json
from calc.guide import charts
from calc.guide.charts._calculators import activations_chart, zero_chart
from calc.guide.charts._time import layout_chart

GB = 10**9
ON_LINE = math.log10(2)
"""A label within a factor of two of a line's value at its x sits on it: on these log axes (a few decades in
260 px) that is less than the text's own height."""


def _spec(element: str) -> dict:
    return json.loads(html.unescape(re.search(r'data-chart-spec="([^"]*)"', element).group(1)))


LINE_CHARTS = {
    # The audit's inputs: 7B mixed precision (ZeRO-0 at 112 GB per GPU, the 80 GB rule just under it), dp 64.
    "zero-scaling": lambda: _spec(
        zero_chart(
            7 * GB,
            convention="mixed-adam-16",
            zero_stage=0,
            dp=64,
            capacity=80 * GB,
            gpu_label="H100 SXM 80 GB",
            unit="GB",
        )
    ),
    "activations-by-sequence": lambda: _spec(
        activations_chart(
            2048, 1, 4096, 32, tp=1, sequence_parallel=False, recompute="none", flash_attention=False, unit="GB"
        )
    ),
    "activations-with-capacity": lambda: charts.activations_by_sequence(
        {"None": [(512, 60 * GB), (1024, 90 * GB)], "Full": [(512, GB), (1024, 2 * GB)]},
        (1024, 90 * GB, "you"),
        capacity=(80 * GB, "H100"),
    ),
}


def _line_value(rows: list[dict], x_field: str, series: str, x: float) -> float | None:
    """The series' amount at ``x``, interpolated on log-log axes; ``None`` outside its points."""
    pts = sorted((float(r[x_field]), float(r["amount"])) for r in rows if r["series"] == series)
    for (x0, y0), (x1, y1) in itertools.pairwise(pts):
        if x0 <= x <= x1:
            t = 0.0 if x1 == x0 else (math.log(x) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return math.exp(math.log(y0) + t * (math.log(y1) - math.log(y0)))
    return pts[0][1] if pts and pts[0][0] == x else None


def labels_on_lines(spec: dict) -> list[tuple[str, str]]:
    """Each text mark drawn at a data position of a log-log line chart that lies on a line: (text, series)."""
    lines = spec["layer"][0]
    rows, x_field = lines["data"]["values"], lines["encoding"]["x"]["field"]
    right = max(float(r[x_field]) for r in rows)
    out = []
    for layer in spec["layer"][1:]:
        mark = layer.get("mark", {})
        if not isinstance(mark, dict) or mark.get("type") != "text":
            continue
        for point in layer["data"]["values"]:
            x = float(point[x_field]) if "x" in layer["encoding"] else right  # no x: the label is at the plot's right
            for name in {r["series"] for r in rows}:
                value = _line_value(rows, x_field, name, x)
                if value and abs(math.log10(float(point["amount"]) / value)) < ON_LINE:
                    out.append((str(point[layer["encoding"]["text"]["field"]]), name))
    return out


@pytest.mark.parametrize("name", sorted(LINE_CHARTS))
def test_no_marker_or_rule_label_lies_on_a_line(name: str) -> None:
    spec = LINE_CHARTS[name]()
    assert labels_on_lines(spec) == []
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert "point" in marks  # the reader's diamond is still drawn, named in the legend under the plot
    shape = next(layer["encoding"]["shape"] for layer in spec["layer"] if "shape" in layer["encoding"])
    assert any(m.startswith("you") for m in shape["scale"]["domain"]) and shape["legend"]["orient"] == "bottom"
    if "rule" in marks:
        assert any(m.startswith("GPU memory") for m in shape["scale"]["domain"])


def test_the_check_finds_a_label_on_a_line() -> None:
    """The check itself: the reader's label drawn beside its point (as before) is on its line."""
    spec = LINE_CHARTS["zero-scaling"]()
    point = next(layer for layer in spec["layer"] if layer["mark"]["type"] == "point")
    text = {
        "data": point["data"],
        "mark": {"type": "text"},
        "encoding": {**point["encoding"], "text": {"field": "label"}},
    }
    assert labels_on_lines({**spec, "layer": [*spec["layer"], text]}) == [("you: ZeRO-0, dp 64", "ZeRO-0")]


def _layer_lists(spec: object):
    for node in walk_json(spec):
        if isinstance(node, dict) and isinstance(node.get("layer"), list):
            yield node["layer"]


def _has_text(layer: dict) -> bool:
    mark = layer.get("mark")
    return (isinstance(mark, dict) and mark.get("type") == "text") or any(map(_has_text, layer.get("layer", [])))


BAR_CHARTS = {
    "layout-comparison": lambda: _spec(
        layout_chart(
            [
                {"label": "tp 8 × pp 2 × dp 4", "memory_bytes": 69_200_000_000, "step_s": 9.5},
                {"label": "tp 4 × pp 4 × dp 4", "memory_bytes": 70_300_000_000, "step_s": 9.9},
                {"label": "tp 8 × pp 4 × dp 2", "memory_bytes": 69_100_000_000, "step_s": 10.1},
            ],
            capacity=80 * GB,
            gpu_label="H100 SXM 80 GB",
            unit="GB",
        )
    ),
    "memory-breakdown": lambda: charts.memory_breakdown([("Weights", 70 * GB)], 80 * GB, "H100"),
    "memory-by-case": lambda: charts.memory_by_case([("Full", [("Weights", 70 * GB)])], (80 * GB, "H100")),
}


@pytest.mark.parametrize("name", sorted(BAR_CHARTS))
def test_a_rule_is_drawn_under_the_values(name: str) -> None:
    """A rule layer after a text layer is painted over the digits (69.2 GB under the planner's 80 GB rule)."""
    for layers in _layer_lists(BAR_CHARTS[name]()):
        rules = [
            i for i, lay in enumerate(layers) if isinstance(lay.get("mark"), dict) and lay["mark"]["type"] == "rule"
        ]
        texts = [i for i, lay in enumerate(layers) if _has_text(lay)]
        assert not rules or not texts or max(rules) < min(texts), (name, rules, texts)


def _legends(spec: object) -> list[dict]:
    return [n["legend"] for n in walk_json(spec) if isinstance(n, dict) and isinstance(n.get("legend"), dict)]


@pytest.mark.parametrize("scheme", sorted(charts.THEMES))
def test_legends_never_truncate_their_labels(scheme: str) -> None:
    """Vega cuts a legend label at 160 px unless told; the theme says 0 (no limit) and no legend says less."""
    assert charts.THEMES[scheme]["legend"]["labelLimit"] == 0
    specs = [make() for make in (*LINE_CHARTS.values(), *BAR_CHARTS.values())]
    specs.append(charts.memory_breakdown([("CUDA context and NCCL buffers", GB), ("Weights", GB)], 80 * GB, "H100"))
    limited = [lg for spec in specs for lg in _legends(spec) if lg.get("labelLimit", 0) != 0]
    assert limited == []


def test_a_legend_of_long_labels_takes_fewer_columns() -> None:
    """Three columns of "Trained: weights, gradients, Adam" are wider than the chart: its legend takes fewer."""
    labels = ["Trained: weights, gradients, Adam", "Frozen weights", "CUDA context and NCCL buffers"]
    spec = charts.memory_breakdown([(s, GB) for s in labels], 80 * GB, "H100")
    columns = spec["layer"][0]["encoding"]["color"]["legend"]["columns"]
    assert columns * (7 * max(map(len, labels)) + 30) <= charts.CHART_WIDTH
    assert (
        charts.memory_breakdown([("Weights", GB)], 80 * GB, "H100")["layer"][0]["encoding"]["color"]["legend"][
            "columns"
        ]
        == 3
    )
