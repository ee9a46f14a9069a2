"""MkDocs hook: the "How accurate is this?" page, built from ``validation/results.json`` at build time.

``docs/accuracy.md`` holds prose and ``[[accuracy NAME]]`` markers, each alone on a line; this hook
replaces them with tables and a chart computed from the committed measurements and from the engine
(no number is typed into the page). An unknown marker, or a marker on another page, fails the build.
When ``validation/results-gpu.json`` (written by ``validation/gpu.py`` on a CUDA machine) exists, its
rows join the page.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.exceptions import PluginError
from mkdocs.utils import get_relative_url

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from build_cache import memo
from calc.guide.charts import CHART_WIDTH, chart
from calc.memory.activation_profiles import CPU_DIFFERENCES
from calc.memory.activations import megatron_activation_bytes
from calc.memory.layout import Layout
from calc.models.architecture import Architecture
from calc.models.presets import preset
from calc.peers.estimators import deepspeed_zero2_estimate, deepspeed_zero3_estimate
from calc.units import format_bytes
from calc.widgets import ACCURACY_HREF
from validation.configs import ACTIVATION_CASES, MODELS, SHARDING_CASES
from validation.llm_analysis import predict_activations, predict_states
from validation.predict import CATEGORIES, TOLERANCE
from validation.published.predict import load as load_published
from validation.published.predict import predict as predict_published
from validation.published.rank import TARGET as RANK_TARGET
from validation.published.rank import TOP as RANK_TOP
from validation.published.rank import WITHIN as RANK_WITHIN
from validation.published.rank import rank_all, share
from validation.published.serving import load as load_serving
from validation.published.serving import predict as predict_serving

RESULTS = ROOT / "validation" / "results.json"
GPU_RESULTS = ROOT / "validation" / "results-gpu.json"
PAGE = "accuracy.md"
_MARKER = re.compile(r"^\[\[accuracy (?P<name>[a-z-]+)\]\]\s*$", re.MULTILINE)


def _load(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise PluginError(f"{PAGE}: cannot read {path.relative_to(ROOT)}: {err}") from None


def _pct(x: float) -> str:
    return f"{x:+.2%}" if x else "0 (exact)"


def _b(n: int) -> str:
    return f"{n:,}"


def _summary(data: dict[str, Any]) -> str:
    lines = ["| What was measured | Configurations | Largest error | Tolerance |", "|---|---:|---:|---:|"]
    for category, label in CATEGORIES.items():
        rows = [r for r in data["rows"] if r["category"] == category]
        worst = max((r["error"] for r in rows), key=abs, default=0.0)  # signed: under (-) or over (+)
        tol = TOLERANCE[category]
        lines.append(f"| {label} | {len(rows)} | {_pct(worst)} | {'±' + format(tol, '.2%') if tol else '0 (exact)'} |")
    v = data["versions"]
    lines.append("")
    lines.append(
        f"Measured on {data['device'].upper()} with PyTorch {v['torch']}, transformers {v['transformers']}, "
        f"Python {v['python']}."
    )
    return "\n".join(lines)


def _table(data: dict[str, Any]) -> str:
    out = []
    for category, label in CATEGORIES.items():
        rows = [r for r in data["rows"] if r["category"] == category]
        hf = category.startswith("activations")
        head = "| Configuration | Measured (B) | Engine (B) | Error |"
        rule = "|---|---:|---:|---:|"
        if hf:
            head += " Megatron accounting (B) | Its error |"
            rule += "---:|---:|"
        out += [f"**{label}**", "", head, rule]
        for r in rows:
            line = f"| {r['name']} | {_b(r['measured'])} | {_b(r['predicted'])} | {_pct(r['error'])} |"
            if hf:
                err = r["megatron"] / r["measured"] - 1
                line += f" {_b(r['megatron'])} | {err:+.1%} |"
            out.append(line)
        out.append("")
    return "\n".join(out)


def _chart(data: dict[str, Any]) -> str:
    values = []
    for r in data["rows"]:
        values.append({"category": r["category"], "error": 100 * r["error"], "who": "this engine"})
        if "megatron" in r:
            err = 100 * (r["megatron"] / r["measured"] - 1)
            values.append({"category": r["category"], "error": err, "who": "fused-kernel accounting"})
    spec = {
        "title": {"text": "Prediction error per configuration", "subtitle": "predicted / measured − 1, in %"},
        "data": {"values": values},
        "width": CHART_WIDTH,
        "height": {"step": 28},
        "mark": {"type": "tick", "thickness": 2},
        "encoding": {
            "x": {"field": "error", "type": "quantitative", "title": "error (%)"},
            "y": {"field": "category", "type": "nominal", "title": None, "sort": list(CATEGORIES)},
            "color": {"field": "who", "type": "nominal", "title": None, "legend": {"orient": "bottom"}},
        },
    }
    worst = max(abs(r["error"]) for r in data["rows"])
    label = (
        f"Prediction error of {len(data['rows'])} measured configurations: at most {worst:.2%} for this engine; "
        "the fused-kernel accounting misses stock transformers by far more."
    )
    return chart("accuracy-errors", spec, label)


def _overheads(data: dict[str, Any]) -> str:
    from calc.memory.overheads import overheads

    lines = ["**Measured here (CPU)**", "", "| Overhead | Configuration | Bytes |", "|---|---|---:|"]
    for o in data["overheads"]:
        lines.append(f"| {o['name']} | {o['config']} | {_b(o['bytes'])} |")
    gap = [r for r in data["rows"] if r["category"] == "activations-model"]
    if gap:
        ratios = [r["measured"] / r["megatron"] - 1 for r in gap]
        lines.append(
            f"| Stock transformers' saved tensors beyond the fused-kernel accounting (fp32 norms, unfused "
            f"activations, eager fp32 softmax, `repeat_kv` copies, fp32 loss) | {len(gap)} models | "
            f"{min(ratios):+.0%} to {max(ratios):+.0%} |"
        )
    arch, layout = preset("llama3-8b"), Layout(dp=8, tp=2, zero_stage=3, seq_len=4096, flash_attention=True)
    lines += [
        "",
        "**On a GPU: each line item the training calculator adds** (Llama 3 8B, dp 8, tp 2, ZeRO-3, s = 4096)",
        "",
        "| Overhead | Bytes | Tag | Counted in | Source |",
        "|---|---:|---|---|---|",
    ]
    for o in overheads(arch, layout):
        lines.append(f"| {o.label} | {format_bytes(o.bytes)} | {o.tag} | {o.counted_in} | {o.source} |")
    lines.append("")
    lines.append("**Where PyTorch's CPU kernels save other tensors than CUDA's** (the profiles model CUDA):")
    lines.append("")
    lines += [f"- {text}" for text in CPU_DIFFERENCES.values()]
    return "\n".join(lines)


def _case(cases: list[dict], inputs: dict[str, Any], keys: tuple[str, ...]) -> dict:
    """The harness case a results row was measured from (its recorded inputs name it)."""
    for case in cases:
        if all(case.get(k) == inputs.get(k) for k in keys):
            return case
    raise PluginError(f"{PAGE}: no harness case for results row {inputs}; re-run make validate")


def _peers(data: dict[str, Any]) -> str:
    lines = [
        (
            "| Configuration | Measured (B) | This engine (B) | Megatron-LM's printed estimate (B) | Its error "
            "| llm-analysis (B) | Its error |"
        ),
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in (r for r in data["rows"] if r["category"] == "activations-model"):
        inputs = r["inputs"]
        arch = Architecture.from_hf_config(dict(MODELS[inputs["model"]]), name=inputs["model"])
        meg = megatron_activation_bytes(
            inputs["seq_len"],
            inputs["micro_batch"],
            arch.hidden_size,
            arch.num_layers,
            arch.vocab_size,
            ffn_hidden=arch.intermediate_size,
            sequence_parallel=False,
            recompute="none",
        )
        la = predict_activations(_case(ACTIVATION_CASES, inputs, ("model", "attn", "seq_len", "micro_batch")))
        lines.append(
            f"| {r['name']} | {_b(r['measured'])} | {_b(r['predicted'])} | {_b(meg)} | {meg / r['measured'] - 1:+.1%} "
            f"| {_b(la)} | {la / r['measured'] - 1:+.1%} |"
        )
    lines += [
        "",
        (
            "| Configuration | Measured busiest rank (B) | This engine (B) | DeepSpeed ZeRO-2 estimator (B) "
            "| DeepSpeed ZeRO-3 estimator (B) | llm-analysis (B) |"
        ),
        "|---|---:|---:|---:|---:|---:|",
    ]
    for r in (r for r in data["rows"] if r["category"] in ("fsdp2", "zero1")):
        arch = Architecture.from_hf_config(dict(MODELS[r["inputs"]["model"]]), name=r["inputs"]["model"])
        n, world = arch.param_count, r["inputs"]["world"]
        largest = arch.vocab_size * arch.hidden_size
        z2 = deepspeed_zero2_estimate(n, gpus_per_node=world, cpu_offload=False).gpu_bytes
        z3 = deepspeed_zero3_estimate(
            n, largest, gpus_per_node=world, cpu_offload=False, cpu_offload_params=False
        ).gpu_bytes
        la = predict_states(_case(SHARDING_CASES, r["inputs"], ("model", "strategy", "world")))
        lines.append(f"| {r['name']} | {_b(r['measured'])} | {_b(r['predicted'])} | {_b(z2)} | {_b(z3)} | {_b(la)} |")
    return "\n".join(lines)


def _gpu(_data: dict[str, Any]) -> str:
    if not GPU_RESULTS.exists():
        return (
            "No GPU measurements yet: `validation/results-gpu.json` does not exist. Run "
            "`.venv-validation/bin/python -m validation.gpu` on a machine with a CUDA device (and a CUDA build "
            "of torch); its rows, with `max_memory_allocated`, `memory_reserved` and `nvidia-smi`, then appear here."
        )
    gpu = _load(GPU_RESULTS)
    v = gpu["versions"]
    lines = [
        f"Measured on {gpu['device']} with PyTorch {v['torch']} (CUDA {v['cuda']}), transformers {v['transformers']}.",
        "",
        "| Configuration | Saved, measured (B) | Engine (B) | Error | max allocated | reserved | nvidia-smi |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in (r for r in gpu["rows"] if r["category"] == "gpu-activations-model"):
        smi = format_bytes(r["nvidia_smi_used"]) if r.get("nvidia_smi_used") else "n/a"
        lines.append(
            f"| {r['name']} | {_b(r['measured'])} | {_b(r['predicted'])} | {_pct(r['error'])} | "
            f"{format_bytes(r['max_memory_allocated'])} | {format_bytes(r['memory_reserved'])} | {smi} |"
        )
    return "\n".join(lines)


def _source_cell(src: dict[str, Any]) -> str:
    """A source as one table cell: its link, table and row, a quoted row's own ``|`` escaped for the table."""
    return f"[{src['name']}]({src['url']}), {src['table']}, {src['row']}".replace("|", "\\|")


def _published_results() -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return [(row, predict_published(row)) for row in load_published()]


def _published_value(row: dict[str, Any], x: float | None) -> str:
    if x is None:
        return "refused"
    return format_bytes(int(x), binary=True) if row["kind"] == "memory" else f"{x:.3g} s"


def _published(_data: dict[str, Any]) -> str:
    """Every published run: measured, the engine, the error, and why a row is not modelled yet."""
    results = _published_results()
    lines = [
        "| Run | Source | Measured | Engine | Error | Tolerance | Verdict |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    for row, r in results:
        src = row["source"]
        what = "step time" if row["kind"] == "throughput" else row["measured"]["metric"].replace("_", "-")
        err = "refused" if r["error"] is None else f"{r['error']:+.1%}"
        verdict = "within" if r["ok"] else row.get("not_modelled", "FAILS")
        if row.get("predict", {}).get("gpu") and row["kind"] == "throughput":
            verdict += " (GPU †)"
        lines.append(
            f"| `{row['id']}` ({what}) | {_source_cell(src)} | "
            f"{_published_value(row, r['measured'])} | {_published_value(row, r['predicted'])} | {err} | "
            f"±{r['tolerance']:.0%} | {verdict} |"
        )
    own = sorted({row["predict"]["gpu"]["why"] for row, _ in results if row.get("predict", {}).get("gpu")})
    lines += ["", *(f"† Timed on {why}." for why in own)]
    lines += ["", "| Stack | Rows | Within tolerance | Knobs the engine does not take yet |", "|---|---:|---:|---|"]
    stacks: dict[str, list[dict[str, Any]]] = {}
    for row, r in results:
        stacks.setdefault(row.get("knobs", {}).get("stack", "unnamed"), []).append(r)
    for stack, rs in stacks.items():
        missing = sorted({k for r in rs for k in r["knobs_missing"]} - {"stack"})
        lines.append(
            f"| {stack} | {len(rs)} | {sum(r['ok'] for r in rs)} | {', '.join(f'`{k}`' for k in missing) or 'none'} |"
        )
    return "\n".join(lines + ["", _published_rank()])


def _published_rank() -> str:
    """Where the unpinned planner ranks each modelled published layout, its pick, and why it prefers it."""
    ranks = rank_all()
    ok = sum(r["passes"] for r in ranks)
    lines = [
        (
            f"Unpinned, the planner ranks the published layout in its top {RANK_TOP} or within {RANK_WITHIN:.0%} of "
            f"its top pick on {ok} of {len(ranks)} modelled step-time rows ({share(ranks):.0%}; the target is "
            f"{RANK_TARGET:.0%}). The published layout is pinned by its degrees (and micro-batch and interleaving "
            "where published); the planner picks its ZeRO stage and recomputation, among what the run's framework "
            "had when it ran: Megatron-LM gained its distributed optimizer (ZeRO-1) only in June 2022, so the "
            "Narayanan et al. and Korthikanti et al. rows are planned without ZeRO. Unconstrained, the planner "
            "prefers ZeRO-1 to 3 with less tensor parallelism for most of them."
        ),
        "",
        "| Run | Published layout | Rank | Slower than the pick | Planner's pick | Why the engine prefers its pick |",
        "|---|---|---:|---:|---|---|",
    ]
    for r in ranks:
        rank = "refused" if r["refused"] else (str(r["rank"]) if r["rank"] else f"below {RANK_TOP}")
        within = "" if r["within"] is None else f"{r['within']:+.1%}"
        why = r["why"] or r["refused"] or "it is the pick"
        lines.append(f"| {r['id']} | {r['published'] or ''} | {rank} | {within} | {r['pick']} | {why} |")
    return "\n".join(lines)


def _published_chart(_data: dict[str, Any]) -> str:
    """Predicted / measured − 1 for every published run, by source, memory and step time apart."""
    values = [
        {
            "source": row["source"]["name"].split(",")[0],
            "error": round(100 * r["error"], 1),
            "what": "peak memory" if row["kind"] == "memory" else "step time",
            "verdict": "within tolerance" if r["ok"] else "not modelled yet",
        }
        for row, r in _published_results()
        if r["error"] is not None
    ]
    spec = {
        "title": {"text": "Published runs: prediction error", "subtitle": "predicted / measured − 1, in %"},
        "data": {"values": values},
        "width": CHART_WIDTH,
        "height": {"step": 28},
        "mark": {"type": "point", "filled": True, "size": 50},
        "encoding": {
            "x": {"field": "error", "type": "quantitative", "title": "error (%)"},
            "y": {"field": "source", "type": "nominal", "title": None},
            "shape": {"field": "what", "type": "nominal", "title": None, "legend": {"orient": "bottom"}},
            "color": {"field": "verdict", "type": "nominal", "title": None, "legend": {"orient": "bottom"}},
        },
    }
    ok = sum(v["verdict"] == "within tolerance" for v in values)
    label = f"Prediction error of {len(values)} published runs by source: {ok} within tolerance."
    return chart("accuracy-published", spec, label)


def _serving(_data: dict[str, Any]) -> str:
    """Every published serving measurement: measured and modelled seconds, the error, and why a row is marked."""
    lines = [
        "| Measurement | Source | Measured | Engine | Error | Tolerance | Verdict |",
        "|---|---|---:|---:|---:|---:|---|",
    ]
    counts = {"within": 0, "outside": 0, "not modelled": 0}
    for row in load_serving():
        r = predict_serving(row)
        src = row["source"]
        engine = "" if r["predicted"] is None else f"{r['predicted']:.3g} s"
        err = "" if r["error"] is None else f"{r['error']:+.1%}"
        if r["ok"]:
            verdict, key = "within", "within"
        elif row.get("not_modelled"):
            verdict, key = row["not_modelled"], "not modelled"
        else:
            verdict, key = row.get("outside") or r["refused"] or "FAILS", "outside"
        counts[key] += 1
        lines.append(
            f"| `{row['id']}` ({row['kind']}) | {_source_cell(src)} | "
            f"{r['measured']:.3g} s | {engine} | {err} | ±{r['tolerance']:.0%} | {verdict} |"
        )
    head = (
        f"{counts['within']} of {sum(counts.values())} serving measurements within tolerance, "
        f"{counts['outside']} outside with what the model leaves out, {counts['not modelled']} not modelled."
    )
    return "\n".join([head, "", *lines])


BLOCKS: dict[str, Callable[[dict[str, Any]], str]] = {
    "summary": _summary,
    "table": _table,
    "chart": _chart,
    "overheads": _overheads,
    "peers": _peers,
    "gpu": _gpu,
    "published": _published,
    "published-chart": _published_chart,
    "serving": _serving,
}
"""The markers ``docs/accuracy.md`` may use."""


def render(markdown: str, where: str = PAGE) -> str:
    """Replace every ``[[accuracy NAME]]`` marker; raise on an unknown one or one outside the page."""
    if not _MARKER.search(markdown):
        return markdown
    if where != PAGE:
        raise PluginError(f"{where}: [[accuracy ...]] markers belong on {PAGE} only")
    data = _load(RESULTS)

    def fill(match: re.Match) -> str:
        name = match["name"]
        if name not in BLOCKS:
            raise PluginError(f"{where}: unknown marker [[accuracy {name}]]; one of {', '.join(BLOCKS)}")
        return memo("accuracy", name, lambda: BLOCKS[name](data)) + "\n"

    return _MARKER.sub(fill, markdown)


def on_page_markdown(markdown: str, page, config, files) -> str:
    return render(markdown, page.file.src_uri)


def on_page_content(content: str, page, config, files) -> str:
    """Point every calculator's "How accurate is this?" footer link at the page, relative to this page."""
    if ACCURACY_HREF not in content:
        return content
    target = files.get_file_from_path(PAGE)
    if target is None:
        raise PluginError(f"{page.file.src_uri}: calculators link to {PAGE}, which is not in the site")
    return content.replace(ACCURACY_HREF, get_relative_url(target.url, page.url))
