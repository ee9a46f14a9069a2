"""Charts: engine specs (plain data, valid Vega-Lite), the calculators' [data-chart] elements, and the build's
pre-rendered SVGs (one per palette, from the very spec the page carries) with the pinned Vega bundle."""

from __future__ import annotations

import ast
import html
import json
import math
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from _helpers import hidden_lines, walk_json
from calc.errors import CalcError
from calc.guide import charts
from calc.memory.model_state import model_state_bytes
from calc.widgets import calculators, render

ROOT = Path(__file__).resolve().parent.parent
GB = 10**9
HOST_ONLY = pytest.mark.skipif(sys.platform == "emscripten", reason="builds the site / runs the MkDocs hook: host only")

SPECS = {
    "memory_breakdown": lambda: charts.memory_breakdown(
        [("Weights", 14 * GB), ("Gradients", 14 * GB), ("Adam", 56 * GB)], 80 * GB, "H100 SXM 80 GB"
    ),
    "memory_breakdown_gib": lambda: charts.memory_breakdown([("Weights", 2**30)], 2**34, "16 GiB", unit="GiB"),
    "zero_scaling": lambda: charts.zero_scaling(
        {"ZeRO-0": [(1, 16 * GB), (2, 16 * GB)], "ZeRO-3": [(1, 16 * GB), (2, 8 * GB)]},
        (2, 8 * GB, "you"),
        capacity=(80 * GB, "H100"),
    ),
    "activations_by_sequence": lambda: charts.activations_by_sequence(
        {"None": [(512, GB), (1024, 4 * GB)], "Full": [(512, GB // 8), (1024, GB // 4)]}, (1024, 4 * GB, "you")
    ),
    "exposed_time": lambda: charts.exposed_time([("TP all-reduce", 0.4, 0.1), ("Pipeline bubble", 0.2, 0.2)]),
    "layout_comparison": lambda: charts.layout_comparison(
        [
            {"label": "tp 8 × pp 4 × dp 8", "memory_bytes": 61 * GB, "step_s": 9.5},
            {"label": "tp 4 × pp 8 × dp 8", "memory_bytes": 66 * GB, "step_s": 10.25},
        ],
        capacity=(80 * GB, "H100 SXM 80 GB"),
    ),
    "layout_comparison_memory_only": lambda: charts.layout_comparison(
        [{"label": "dp 64", "memory_bytes": 17 * GB, "step_s": None}]
    ),
}

CALCULATOR_CHARTS = [
    # calculator, inputs, the charts its results carry
    ("will-it-fit", {}, ["memory-breakdown", "zero-scaling"]),
    (
        "will-it-fit",
        {"params": "70B", "zero_stage": "3", "dp": "64", "unit": "GiB"},
        ["memory-breakdown", "zero-scaling"],
    ),
    ("training-memory", {}, ["memory-breakdown"]),
    ("training-memory", {"preset": "llama3-70b", "tp": "8", "pp": "4", "dp": "16"}, ["memory-breakdown"]),
    ("serving-memory", {}, ["memory-breakdown"]),
    ("activations", {}, ["activations-by-sequence"]),
    ("activations", {"sequence_parallel": "1", "recompute": "selective"}, ["activations-by-sequence"]),
    ("communication", {}, ["exposed-time"]),
    ("plan", {}, ["layout-comparison", "exposed-time"]),
    ("finetune-memory", {}, ["memory-breakdown"]),
    ("finetune-memory", {"method": "qlora", "preset": "llama3-70b", "unit": "GiB"}, ["memory-breakdown"]),
    ("plan", {"pp": "4"}, ["layout-comparison", "exposed-time"]),  # with a pipeline bubble
]

_CHART = re.compile(r'<figure class="lc-chart" data-chart="([^"]+)" data-chart-spec="([^"]*)"')


def _charts_in(fragment: str) -> list[tuple[str, dict]]:
    return [(name, json.loads(html.unescape(spec))) for name, spec in _CHART.findall(fragment)]


# --- the specs: plain data, valid Vega-Lite ---------------------------------------------------------


@pytest.mark.parametrize("name", sorted(SPECS))
def test_spec_is_plain_data(name: str) -> None:
    spec = SPECS[name]()
    assert json.loads(charts.spec_json(spec)) == spec  # round-trips: only dicts, lists, str, numbers, None
    assert spec["title"] and spec["description"]  # a visible title and a text description
    assert {"mark", "layer", "hconcat"} & set(spec)
    strings = [v for v in walk_json(spec) if isinstance(v, str)]
    assert not [s for s in strings if "://" in s], "a spec never names another host (no $schema URL, no data URL)"
    assert not [v for v in walk_json(spec) if isinstance(v, dict) and "url" in v], "data is inline, never fetched"
    assert not [v for v in walk_json(spec) if isinstance(v, dict) and ("expr" in v or "calculate" in v)]


@pytest.mark.parametrize("name", sorted(SPECS))
def test_spec_compiles_with_pinned_vega_lite(name: str) -> None:
    vl_convert = pytest.importorskip("vl_convert")  # build-time only: absent under Pyodide
    vega = vl_convert.vegalite_to_vega(SPECS[name](), vl_version="6.4")
    assert vega["marks"], "the compiled Vega spec draws something"


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: charts.memory_breakdown([("w", 1)], 2, "x", unit="MB"), "unit"),
        (lambda: charts.zero_scaling({"ZeRO-0": [(0, 1)]}, (1, 1, "you")), "series"),  # log axis: no zero GPUs
        (lambda: charts.activations_by_sequence({"Full": [(512, 0)]}, (512, 1, "you")), "series"),  # no 0 B
        (lambda: charts.exposed_time([("x", 1.0, 1.5)]), "exposed"),  # exposed above the total
        (lambda: charts.exposed_time([("x", 1.0, -0.1)]), "exposed"),
        (lambda: charts.layout_comparison([]), "layouts"),
    ],
)
def test_bad_chart_input_is_a_calc_error(call, field: str) -> None:
    with pytest.raises(CalcError) as err:
        call()
    assert err.value.to_dict()["field"] == field


@given(st.lists(st.integers(min_value=0, max_value=10**13), min_size=1, max_size=8), st.integers(1, 10**13))
def test_memory_breakdown_stacks_every_nonzero_segment(sizes: list[int], capacity: int) -> None:
    spec = charts.memory_breakdown([(f"part {i}", n) for i, n in enumerate(sizes)], capacity, "GPU")
    bars = spec["layer"][0]["data"]["values"]
    assert [b["component"] for b in bars] == [f"part {i}" for i, n in enumerate(sizes) if n > 0]
    assert sum(b["amount"] for b in bars) == pytest.approx(sum(sizes) / GB, rel=1e-6, abs=1e-5)
    assert spec["layer"][1]["data"]["values"][0]["amount"] == pytest.approx(capacity / GB, abs=1e-6)


@given(
    st.lists(st.integers(GB // 100, 10**17), min_size=1, max_size=6),
    st.floats(0.96, 1.04),
    st.integers(GB, 200 * GB),
)
def test_activations_chart_hides_no_line_and_clips_its_axis(sizes: list[int], near: float, capacity: int) -> None:
    """Issue 19: a line drawn under a later one with about the same points was invisible, and one line of
    petabytes stretched the log axis to them. A covered line is drawn again dashed on top; with a GPU on the
    chart the axis stops at the decade at or above a hundred times its memory."""
    seqs = [512 << k for k in range(len(sizes))]
    series = {
        "Selective": list(zip(seqs, sizes, strict=True)),
        "FlashAttention": [(s, max(1, round(n * near))) for s, n in zip(seqs, sizes, strict=True)],
        "Full": [(s, max(1, n // 7)) for s, n in zip(seqs, sizes, strict=True)],
    }
    spec = charts.activations_by_sequence(series, None, capacity=(capacity, "GPU"), stops={"Full": seqs[0]})
    assert hidden_lines(spec) == {}
    redrawn = {r["series"] for layer in spec["layer"][2:] if layer["mark"].get("strokeDash") == [6, 6]
               for r in layer["data"]["values"]}  # fmt: skip
    assert "Selective" in redrawn  # within 4 % of FlashAttention's, drawn after it
    (rule,) = [layer for layer in spec["layer"] if layer["mark"]["type"] == "rule"]
    top = 10 ** math.ceil(math.log10(rule["data"]["values"][0]["amount"] * 100))
    amounts = [r["amount"] for r in spec["layer"][0]["data"]["values"]]
    domain = spec["layer"][0]["encoding"]["y"]["scale"].get("domain")
    if min(amounts) < top < max(amounts):  # a line past the top, and one under it to show
        assert domain is not None and domain[1] == pytest.approx(top) and domain[0] <= min(amounts)
    else:
        assert domain is None
    assert all(layer["encoding"]["y"] == spec["layer"][0]["encoding"]["y"] for layer in spec["layer"])  # one axis


@given(st.integers(10**6, 10**13), st.sampled_from([0, 1, 2, 3]), st.integers(1, 1 << 20))
def test_zero_chart_lines_never_rise_and_mark_the_reader(params: int, stage: int, dp: int) -> None:
    (name, spec), *_ = _charts_in(
        charts.zero_chart(
            params, convention="mixed-adam-16", zero_stage=stage, dp=dp, capacity=80 * GB, gpu_label="H100", unit="GB"
        )
    )
    assert name == "zero-scaling"
    lines = spec["layer"][0]["data"]["values"]
    for k in range(4):
        amounts = [r["amount"] for r in lines if r["series"] == f"ZeRO-{k}"]
        assert amounts == sorted(amounts, reverse=True), f"ZeRO-{k} rises with more GPUs"
    reader = spec["layer"][1]["data"]["values"][0]
    assert reader["gpus"] == dp
    assert reader["amount"] == round(model_state_bytes(params, zero_stage=stage, dp=dp).total / GB, 6)
    assert max(r["gpus"] for r in lines) >= min(dp, charts.MAX_CHART_GPUS)


def test_activations_chart_grows_with_sequence_and_parts_the_modes() -> None:
    html_ = charts.activations_chart(
        4096, 1, 4096, 32, tp=1, sequence_parallel=False, recompute="none", flash_attention=False, unit="GB"
    )
    (_, spec), *_ = _charts_in(html_)
    rows = spec["layer"][0]["data"]["values"]
    for mode in ("None", "Selective", "Full"):
        amounts = [r["amount"] for r in rows if r["series"] == mode]
        assert amounts == sorted(amounts) and len(amounts) >= 7, mode
    at = {r["series"]: r["amount"] for r in rows if r["seq"] == 32768}
    assert at["None"] > at["Selective"] > at["Full"]


def test_charts_module_is_standard_library_only() -> None:
    tree = ast.parse("\n".join(p.read_text() for p in sorted((ROOT / "calc" / "guide" / "charts").glob("*.py"))))
    roots = {
        (n.module or "").split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.level == 0
    } | {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert roots - {"__future__", "calc"} <= set(sys.stdlib_module_names)


def test_themes_cover_both_palettes_with_the_same_keys() -> None:
    assert set(charts.THEMES) == set(charts.SCHEMES) == {"default", "slate"}
    light, dark = charts.THEMES["default"], charts.THEMES["slate"]
    assert light.keys() == dark.keys() and light != dark
    assert light["background"] == dark["background"] == "transparent"  # the page's own background shows


def _luminance(colour: str) -> float:
    channels = [int(colour[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    r, g, b = (c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize(
    ("scheme", "background"),
    [
        ("default", "#ffffff"),  # Material's light --md-default-bg-color
        ("slate", "#1e2029"),  # Material's slate: hsl(232, 15%, 14%)
    ],
)
def test_theme_colours_keep_contrast_on_their_background(scheme: str, background: str) -> None:
    """WCAG 2.2: text 4.5:1 (1.4.3), marks 3:1 (1.4.11) against the page behind the transparent chart."""
    theme = charts.THEMES[scheme]

    def ratio(colour: str) -> float:
        high, low = sorted((_luminance(colour), _luminance(background)), reverse=True)
        return (high + 0.05) / (low + 0.05)

    for colour in (theme["axis"]["labelColor"], theme["title"]["color"], theme["text"]["color"]):
        assert ratio(colour) >= 4.5, colour
    for colour in [*theme["range"]["category"], theme["rule"]["color"], theme["axis"]["domainColor"]]:
        assert ratio(colour) >= 3, colour


# --- the calculators' charts ---------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "inputs", "expected"), CALCULATOR_CHARTS)
def test_calculator_results_carry_their_charts(name: str, inputs: dict, expected: list[str]) -> None:
    reply = render(name, inputs)
    assert reply["ok"], reply
    found = _charts_in(reply["html"])
    assert [n for n, _ in found] == expected
    for _, spec in found:
        assert json.loads(charts.spec_json(spec)) == spec
    assert "<svg" not in reply["html"], "the engine draws nothing itself: the build or vega-embed renders"
    assert 'role="img" aria-label="' in reply["html"]
    assert "<table" in reply["html"], "the breakdown table stays as the text alternative"


def test_memory_chart_draws_the_table_numbers() -> None:
    reply = render("training-memory", {"preset": "llama3-8b", "dp": "8", "zero_stage": "1"})
    (_, spec), *_ = _charts_in(reply["html"])
    total = re.search(r'data-output="total"[^>]*data-value="(\d+)"', reply["html"])
    bars = spec["layer"][0]["data"]["values"]
    if total:  # the raw data-value attribute, where the calculator carries one
        assert sum(b["amount"] for b in bars) == pytest.approx(int(total[1]) / GB, abs=1e-5)
    label = spec["layer"][2]["data"]["values"][0]["label"]
    assert label == "GPU memory: H100 SXM 80 GB"


def test_no_calculator_uses_a_hand_drawn_bar() -> None:
    for name in calculators():
        reply = render(name)
        assert reply["ok"] and "lc-bar" not in reply["html"], name


# --- the build ----------------------------------------------------------------------------------------

_FIGURE = re.compile(
    r'<figure class="lc-chart" data-chart="(?P<name>[^"]+)" data-chart-spec="(?P<spec>[^"]*)"(?P<rest>[^>]*)>'
    r'<div class="lc-chart__view"[^>]*>(?P<view>.*?)</div></figure>',
    re.DOTALL,
)
_CALC_ROOT = re.compile(
    r'data-calc="(?P<name>[^"]+)" data-calc-id="[^"]*" data-state="prerendered" data-defaults="(?P<v>[^"]*)"'
)


@HOST_ONLY
def test_every_chart_is_prerendered_as_svg_per_palette(site_pages: dict[str, str]) -> None:
    seen = set()
    for path, page in site_pages.items():
        for m in _FIGURE.finditer(page):
            seen.add(m["name"])
            assert 'data-chart-state="prerendered"' in m["rest"], (path, m["name"])
            schemes = re.findall(r'<svg data-scheme="(\w+)" aria-hidden="true"', m["view"])
            assert schemes == ["default", "slate"], (path, m["name"])
            assert "style=" not in m["view"] and "<script" not in m["view"]
    assert seen >= {"memory-breakdown", "zero-scaling", "activations-by-sequence", "exposed-time", "layout-comparison"}


@HOST_ONLY
def test_prerendered_charts_match_the_calculators_defaults(site_pages: dict[str, str]) -> None:
    """Each pre-rendered chart is the spec the engine gives for that calculator's build-time values."""
    for path, page in site_pages.items():
        for block in page.split('<div class="lc-calc" ')[1:]:
            block = block.split('<div class="lc-prose-chart"')[0]  # a prose chart further down is not this one's
            root = _CALC_ROOT.search(block)
            if not root:
                continue
            values = json.loads(html.unescape(root["v"]))
            expected = _charts_in(render(root["name"], values)["html"])
            got = [(m["name"], json.loads(html.unescape(m["spec"]))) for m in _FIGURE.finditer(block)]
            assert got == expected, (path, root["name"])


@HOST_ONLY
def test_prerendered_svg_is_the_spec_rendered_in_the_palette(site_pages: dict[str, str]) -> None:
    sys.path.insert(0, str(ROOT / "hooks"))
    import lc_charts

    m = _FIGURE.search(site_pages["parallelism/zero/"])
    assert m and m["name"] == "memory-breakdown"
    spec = html.unescape(m["spec"])
    for scheme in charts.SCHEMES:
        assert lc_charts.render_svg(spec, scheme) in m["view"]


@HOST_ONLY
def test_search_index_holds_no_chart_text(built_site: Path) -> None:
    index = (built_site / "search" / "search_index.json").read_text(encoding="utf-8")
    assert "Will it fit?" in index  # the calculators' own text is indexed
    for words in (
        "Model state per GPU against the number of GPUs",
        "Memory per GPU (GB)",
        "GPUs (data-parallel degree)",
    ):
        assert words not in index, words


@HOST_ONLY
def test_vega_bundle_is_shipped_without_bare_imports(built_site: Path) -> None:
    out = built_site / "assets" / "vega"
    for name in ("vega.min.js", "vega-lite.min.js", "vega-embed.min.js", "vega-interpreter.js", "vega-util/index.js"):
        assert (out / name).is_file(), name
    interpreter = (out / "vega-interpreter.js").read_text()
    assert "from './vega-util/index.js'" in interpreter and "'vega-util'" not in interpreter
    for module in (out / "vega-util").glob("*.js"):
        assert not re.search(r"""from\s+['"][^./]""", module.read_text()), module.name
    assert json.loads((out / "themes.json").read_text()) == json.loads(json.dumps(charts.THEMES))


@HOST_ONLY
def test_hook_fails_loudly_on_a_broken_spec() -> None:
    sys.path.insert(0, str(ROOT / "hooks"))
    from mkdocs.exceptions import PluginError

    import lc_charts

    good = charts.chart("demo", charts.exposed_time([("x", 1.0, 0.5)]), "demo")
    filled, count = lc_charts.prerender(good)
    assert count == 1 and filled.count("<svg") == 2
    broken = charts.chart("demo", {"mark": "bar", "encoding": {"x": {"field": "a", "type": "nope"}}}, "demo")
    with pytest.raises(PluginError, match="chart 'demo' cannot be rendered"):
        lc_charts.prerender(broken, "page.md")
