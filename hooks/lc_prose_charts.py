"""MkDocs hook: ``[[chart NAME]]`` alone on a line puts a named Vega-Lite chart of engine numbers in the prose.

Each entry of [`CHARTS`][] maps a name to a caption and a zero-argument function that returns a
``[data-chart]`` element made by ``calc.guide.charts.chart`` (its spec built from the same engine calls as the
page's ``[[num ...]]`` numbers, in ``hooks/prose_numbers/``). The element is the one a calculator emits, so
``hooks/lc_charts.py`` pre-renders it to a light and a dark SVG on the finished page and
``assets/javascripts/charts.mjs`` re-renders it live. The chart is wrapped in
``<div class="lc-prose-chart" id="chart-NAME">`` with its caption under it; the table the page keeps next to
it is the text alternative. An unknown name, or a marker that does not stand alone on a line, fails the build.
"""

from __future__ import annotations

import html
import re
import sys
from collections.abc import Callable
from pathlib import Path

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from calc import format_bytes
from calc.errors import CalcError
from calc.guide.charts import CHART_WIDTH, activations_by_sequence, chart, exposed_time, memory_by_case
from calc.hardware import gpu
from calc.memory.model_state import CONVENTIONS
from calc.models.presets import preset
from calc.timing.serving import decode_step
from placeholders import Placeholders
from prose_numbers import guide2

__all__ = ["CHARTS", "curve_series", "decode_rows", "finetune_cases", "overlap_rows"]

_LINE = re.compile(r"^\[\[chart (?P<name>[^\]\s]*)\]\]\s*$", re.MULTILINE)
_ANY = re.compile(r"\[\[chart\b[^\]]*\]\]")
_H100 = gpu("h100-sxm")

_CURVE_NAMES = {
    "none": "No recomputation",
    "selective": "Selective",
    "full": "Full",
    "flash": "FlashAttention",
    "cp2": "FlashAttention, cp 2",
    "cp4": "FlashAttention, cp 4",
    "cp8": "FlashAttention, cp 8",
    "full-cp8": "Full + FlashAttention, cp 8",
}


def curve_series() -> tuple[dict[str, list[tuple[int, int]]], dict[str, int]]:
    """The activation curve (``docs/memory/activations.md#curve``): per-GPU activations per case and sequence,
    and each case's longest fitting sequence (cases that fit nowhere have no entry)."""
    series = {
        _CURVE_NAMES[case]: [(s, guide2.curve_point(case, s)[0]) for s in guide2.CURVE_SEQS]
        for case in guide2.CURVE_CASES
    }
    stops = {_CURVE_NAMES[case]: guide2.longest_fitting(case) for case in guide2.CURVE_CASES}
    return series, {k: v for k, v in stops.items() if v}


def _curve() -> str:
    series, stops = curve_series()
    spec = activations_by_sequence(
        series,
        None,
        capacity=(_H100.memory_bytes, _H100.label),
        stops=stops,
        legend="Layout",
        title="Llama 3 8B on 8 H100s: activations per GPU against sequence length",
    )
    longest = max(stops.items(), key=lambda kv: kv[1], default=("none", 0))
    label = (
        f"Per-GPU activations of Llama 3 8B against sequence length for {len(series)} layouts, log axes, with the "
        f"{_H100.label} capacity line; the longest that fits is {longest[1]:,} tokens ({longest[0]})."
    )
    return chart("activations-curve", spec, label)


_OVERLAP_NAMES = {"dp-grad-reduce-scatter": "gradient reduce-scatter", "dp-param-all-gather": "parameter all-gather"}


def overlap_rows() -> list[tuple[str, float, float]]:
    """The overlap page's collectives (``docs/parallelism/overlap.md``): ``(label, seconds on the wire, seconds
    exposed)`` for ZeRO-1 and ZeRO-3, from ``calc.timing.steptime.step_time`` and the same collectives unoverlapped."""
    rows = []
    for stage in (1, 3):
        exposed = guide2._ov(stage).exposed_s
        for name, total in guide2.raw_terms(stage).items():
            rows.append((f"ZeRO-{stage}: {_OVERLAP_NAMES.get(name, name)}", total, min(exposed.get(name, 0.0), total)))
    return rows


def _overlap() -> str:
    rows = overlap_rows()
    spec = exposed_time(rows, title="Llama 2 7B on 64 H100s: data-parallel traffic per step, exposed and hidden")
    hidden = sum(t - e for _, t, e in rows)
    label = (
        f"Seconds per step of {len(rows)} data-parallel collectives under ZeRO-1 and ZeRO-3, split into exposed "
        f"and overlapped time; overlap hides {hidden:.2f} s of {sum(t for _, t, _ in rows):.2f} s."
    )
    return chart("overlap-exposed", spec, label)


_PER_PARAM = CONVENTIONS["mixed-adam-16"].bytes_per_param
_FT_LABELS = {"full": "Full fine-tuning", "lora": "LoRA, r 16", "qlora": "QLoRA, r 16"}


def finetune_cases(slug: str = guide2.FT_ARCH) -> list[tuple[str, list[tuple[str, int]]]]:
    """The fine-tuning page's methods (``docs/memory/finetuning.md``): model state by component, from
    ``calc.memory.finetune.finetune_memory`` with the page's defaults (rank 16, all linear layers)."""
    out = []
    for method, label in _FT_LABELS.items():
        m = guide2._ft(method, slug)
        nf4 = m.frozen_nf4
        out.append(
            (
                label,
                [
                    ("Frozen base, bf16", m.frozen_bf16_bytes),
                    ("Frozen base, NF4 values", nf4.values_bytes if nf4 else 0),
                    ("NF4 constants", nf4.absmax_bytes + nf4.second_level_bytes if nf4 else 0),
                    (f"Trained state ({_PER_PARAM} B each)", m.trainable_bytes),
                ],
            )
        )
    return out


def _finetune(slug: str, title: str) -> Callable[[], str]:
    def draw() -> str:
        cases = finetune_cases(slug)
        spec = memory_by_case(cases, (_H100.memory_bytes, _H100.label), title=title)
        totals = "; ".join(f"{case} {format_bytes(sum(n for _, n in parts))}" for case, parts in cases)
        return chart("finetune-methods", spec, f"Model-state memory by method and component: {totals}.")

    return draw


DECODE_BATCHES = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
"""The batches of the decode chart (``docs/systems/inference-performance.md#decode``)."""


def decode_rows() -> list[dict[str, object]]:
    """Llama 3 8B decoding at 1,024 tokens of context on one H100 and one B200: tokens/s for the GPU and the
    inter-token latency per batch, from ``calc.timing.serving.decode_step``."""
    rows = []
    for g in ("h100-sxm", "b200"):
        for b in DECODE_BATCHES:
            d = decode_step(preset("llama3-8b"), batch=b, context=1024, gpu=g)
            rows.append({"gpu": gpu(g).label, "batch": b, "tokens_per_s": round(d.tokens_per_s), "ms": d.time_s * 1e3})
    return rows


def _decode() -> str:
    rows = decode_rows()
    x = {"field": "batch", "type": "quantitative", "title": "Batch (sequences)", "scale": {"type": "log", "base": 2}}
    colour = {"field": "gpu", "type": "nominal", "title": None}
    spec = {
        "title": "Llama 3 8B decode, 1,024 tokens of context: throughput and latency against the batch",
        "description": "Tokens per second and inter-token latency against batch size, log axes, H100 and B200.",
        "data": {"values": rows},
        "vconcat": [
            {
                "mark": {"type": "line", "point": True},
                "encoding": {
                    "x": x,
                    "y": {
                        "field": "tokens_per_s",
                        "type": "quantitative",
                        "title": "Tokens/s",
                        "scale": {"type": "log"},
                    },
                    "color": colour,
                },
                "width": CHART_WIDTH,
                "height": 200,
            },
            {
                "mark": {"type": "line", "point": True},
                "encoding": {
                    "x": x,
                    "y": {"field": "ms", "type": "quantitative", "title": "Inter-token latency (ms)"},
                    "color": colour,
                },
                "width": CHART_WIDTH,
                "height": 160,
            },
        ],
    }
    last = {r["gpu"]: r for r in rows if r["batch"] == DECODE_BATCHES[-1]}
    label = "Decode throughput and latency of Llama 3 8B against batch size on H100 and B200; at batch " + (
        f"{DECODE_BATCHES[-1]}: " + "; ".join(f"{g} {r['tokens_per_s']:,} tokens/s" for g, r in last.items()) + "."
    )
    return chart("decode-batch", spec, label)


ROOFLINE_INTENSITIES = tuple(2**k for k in range(13))
"""Arithmetic intensities of the roofline chart, FLOPs per byte (``docs/systems/roofline.md#intensity``)."""


def roofline_rows() -> list[dict[str, object]]:
    """Attainable dense bf16 TFLOP/s against arithmetic intensity, ``min(peak, I × HBM)`` (Williams et al. 2009),
    for an H100 and a B200."""
    rows = []
    for g in ("h100-sxm", "b200"):
        hw = gpu(g)
        ridge = hw.bf16_flops / hw.hbm_bytes_per_s  # the kink, drawn exactly
        for i in sorted({*ROOFLINE_INTENSITIES, ridge}):
            rows.append({"gpu": hw.label, "intensity": i, "tflops": min(hw.bf16_flops, i * hw.hbm_bytes_per_s) / 1e12})
    return rows


def _roofline() -> str:
    rows = roofline_rows()
    spec = {
        "title": "The roofline: attainable bf16 TFLOP/s against FLOPs per byte",
        "description": "Attainable dense bf16 throughput against arithmetic intensity, log axes, H100 and B200.",
        "width": CHART_WIDTH,
        "height": 240,
        "data": {"values": rows},
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": {
                "field": "intensity",
                "type": "quantitative",
                "title": "Arithmetic intensity (FLOPs per byte of HBM; ≈ tokens per weight read)",
                "scale": {"type": "log", "base": 2},
            },
            "y": {"field": "tflops", "type": "quantitative", "title": "Attainable TFLOP/s", "scale": {"type": "log"}},
            "color": {"field": "gpu", "type": "nominal", "title": None},
        },
    }
    ridges = "; ".join(f"{gpu(g).label} {gpu(g).bf16_flops / gpu(g).hbm_bytes_per_s:.0f}" for g in ("h100-sxm", "b200"))
    return chart(
        "roofline", spec, f"Roofline of the H100 and the B200, log axes; ridge points in FLOPs per byte: {ridges}."
    )


CHARTS: dict[str, tuple[str, Callable[[], str]]] = {
    "roofline": (
        (
            "Below its ridge point a kernel runs at intensity × memory bandwidth; above it, at the peak. Decode at "
            "batch 1 sits at the far left, a training matmul of thousands of tokens at the far right."
        ),
        _roofline,
    ),
    "decode-batch": (
        (
            "Decode throughput rises almost linearly with the batch while the step is bandwidth-bound, and the latency "
            "barely moves; once the batch's FLOPs outlast the weight reads the latency grows with the batch."
        ),
        _decode,
    ),
    "activations-curve": (
        (
            "Per-GPU activations against sequence length (log axes, cut off far above the GPU's memory); a ring marks "
            "the longest length at which each layout's whole peak still fits the GPU, the dashed rule is the GPU's "
            "memory, and a line drawn dashed over another is one the other would hide (nearly the same numbers). The "
            "table below holds the same numbers."
        ),
        _curve,
    ),
    "overlap-exposed": (
        (
            "What each data-parallel collective would take on the wire, and how much of it the step still waits for "
            "once buckets (ZeRO-1) and prefetch (ZeRO-3) overlap it with compute."
        ),
        _overlap,
    ),
    "finetune-methods": (
        (
            "Model state of Llama 2 7B under full fine-tuning, LoRA and QLoRA (activations not included), against "
            "one GPU's memory."
        ),
        _finetune(guide2.FT_ARCH, "Llama 2 7B: model state by fine-tuning method"),
    ),
    "finetune-methods-70b": (
        "The same for Llama 3 70B: only QLoRA's model state fits one 80 GB GPU.",
        _finetune("llama3-70b", "Llama 3 70B: model state by fine-tuning method"),
    ),
}
"""Named prose charts: name -> (caption, function returning a ``[data-chart]`` element)."""

_held = Placeholders("LCPROSECHARTPLACEHOLDER", "chart")


def on_page_markdown(markdown: str, page, config, files) -> str:
    src = page.file.src_uri
    _held.begin(src)

    def marker(match: re.Match) -> str:
        name = match["name"]
        if name not in CHARTS:
            raise PluginError(f"{src}: unknown chart {name!r} in {match[0]!r}; known: {', '.join(sorted(CHARTS))}")
        caption, draw = CHARTS[name]
        try:
            element = draw()
        except CalcError as err:
            raise PluginError(f"{src}: chart {name!r} failed in the engine: {err}") from None
        div = f'<div class="lc-prose-chart" id="chart-{html.escape(name)}">{element}'
        return _held.hold(src, div + f'<p class="lc-prose-chart__caption">{html.escape(caption)}</p></div>')

    return _held.check(src, _LINE.sub(marker, markdown), _ANY)


def on_page_content(content: str, page, config, files) -> str:
    return _held.fill(page.file.src_uri, content)
