"""The "Plan a training run" calculator: the layouts that fit, ranked by predicted step time."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from calc.errors import CalcError
from calc.guide.charts import layout_chart, step_time_chart
from calc.hardware import GPUS
from calc.markup import escape
from calc.memory.activations import IMPLEMENTATIONS
from calc.memory.model_state import CONVENTIONS
from calc.memory.stacks import LOSS_KINDS, STACKS
from calc.parallel.interconnects import INTERCONNECTS
from calc.units import parse_positive_int
from calc.widgets import Calculator, Field
from calc.widgets._code import Code, call, model_code, snippet
from calc.widgets._fields import (
    one_of,
    recompute_field,
    select,
    seq_len_field,
)
from calc.widgets._html import out, table, verdict, why_list
from calc.widgets._model import accept_legacy_model, model_chip, model_fields, read_model
from calc.widgets._partial import listening, post_partial
from calc.widgets._parts import duration, kv, plural
from calc.widgets._plan_knobs import (
    DTYPES,
    SAFETY_MARGIN_DEFAULT,
    SHARE_KNOBS,
    STEP_KNOB_FIELDS,
    SWITCH_KNOBS,
    efficiency_help,
    server_help,
    step_knobs,
)
from calc.widgets._stack_fields import STACK_DEFAULT, convention_field, loss_field, stack_field

__all__ = ["CALCULATOR", "plan_result"]

_SEARCHED = ("dp", "tp", "pp", "cp", "ep", "micro_batch", "interleave")


_ANY = "any"

_CP_HELP = "searched up to 2 from 8K tokens, up to 16 from 32K"
"""The cp field's hint: ``calc.timing.plan_space.CP_LIMITS`` in words (that module pulls in the step-time model,
which the form does not import; ``tests/test_widgets_planner.py`` holds the two equal)."""
_RECOMPUTE = (_ANY, "none", "selective", "op", "full")
_NETWORKS = tuple(name for name, link in INTERCONNECTS.items() if link.scope == "scale-out")

_MAXIMA = {"gpus": 1 << 20, "seq_len": 1 << 24, "global_batch": 1 << 24}
"""Upper bounds of the whole-number fields: a million GPUs, 16M-token sequences and 16M-sequence batches are
far beyond any published run (Llama 3 405B: 16,384 GPUs, 16M tokens per batch)."""


def _searched(v: dict[str, str], name: str) -> str:
    """A degree field: blank or ``any`` searches it (returned as blank), anything else is passed on to be checked."""
    text = v[name].strip()
    return "" if text.lower() in ("", _ANY) else text


def _share(v: dict[str, str], name: str, low: float, high: float) -> str:
    rule = f"must be a number from {low:g} to {high:g}"
    try:
        value = float(v[name].strip()) if len(v[name]) <= 64 else math.nan
    except ValueError:
        raise CalcError(name, rule, v[name]) from None
    if not math.isfinite(value) or not low <= value <= high:
        raise CalcError(name, rule, v[name])
    return repr(value)


def plan_result(
    v: dict[str, str], on_first: Callable[[list[dict[str, Any]]], object] | None = None
) -> tuple[Any, dict[str, Any]]:
    """The calculator's fields (every one given, ``any`` = search) to the model choice and
    [`calc.timing.planner.plan`][calc.timing.planner.plan]'s plain-data result; the page and
    ``trainmem plan --json`` both use it; ``on_first`` is [`plan`][calc.timing.planner.plan]'s.

    Examples:
        >>> v = {**CALCULATOR.defaults, "preset": "llama3-8b", "gpus": "16", "global_batch": "64", "tp": "2"}
        >>> choice, r = plan_result(v)
        >>> {x["tp"] for x in r["layouts"]}, isinstance(r["layouts"][0]["memory_bytes"], int)
        ({2}, True)
    """
    from calc.timing.planner import plan_from_fields  # imported here: the planner pulls in the whole engine

    choice, fields = _plan_fields(v)
    try:
        return choice, plan_from_fields(choice.arch, fields, on_first=on_first)
    except CalcError as err:
        if err.field != "gpus" or "no layout" not in err.rule or "fits" in err.rule:
            raise  # (a search whose layouts all overflow memory says so itself)
        raise _no_layout(choice, fields) or err from None


def _pins(fields: dict[str, str]) -> dict[str, int]:
    """The degrees the reader pinned (a whole number typed instead of ``any``)."""
    return {k: int(fields[k]) for k in ("dp", "tp", "pp", "cp") if fields[k].isdigit() and int(fields[k]) > 0}


def _no_layout(choice, fields: dict[str, str]) -> CalcError | None:
    """Why no layout exists, naming the field the reader set, in the reader's words (issue 19); ``None`` leaves the
    planner's own reason."""
    arch, label, pins = choice.arch, choice.label, _pins(fields)
    n, batch = int(fields["gpus"]), int(fields["global_batch"])
    gpn = int(fields["gpus_per_node"] or GPUS[fields["gpu"]].gpus_per_node)
    tp, pp = pins.get("tp"), pins.get("pp")
    nvlink = f"the {gpn} GPUs that share NVLink"
    if tp and (arch.num_heads % tp or (not arch.uses_mla and arch.num_kv_heads % tp)):
        heads = math.gcd(arch.num_heads, arch.num_heads if arch.uses_mla else arch.num_kv_heads)
        what = f"{arch.num_heads} attention heads" + ("" if arch.uses_mla else f" and {arch.num_kv_heads} KV heads")
        fit = [str(t) for t in range(1, min(heads, gpn) + 1) if heads % t == 0]
        first = f"= {tp} is more than {nvlink}, and it does not divide" if tp > gpn else f"= {tp} does not divide"
        return CalcError("tp", f"{first} the {what} of {label}: tp ≤ {fit[-1]} ({', '.join(fit)})")
    if tp and tp > gpn:
        return CalcError("tp", f"= {tp} is more than {nvlink}: set GPUs per node to {tp}, or tp ≤ {gpn}")
    if pp and arch.num_layers % pp:
        fit = [str(q) for q in range(1, arch.num_layers + 1) if arch.num_layers % q == 0 and n % q == 0]
        return CalcError(
            "pp", f"= {pp} does not divide the {arch.num_layers} layers of {label}: pp one of {', '.join(fit)}"
        )
    split = math.prod(pins.values())
    if n % split:
        named = " × ".join(f"{k} {pins[k]}" for k in pins)
        return CalcError(
            "gpus", f"= {n:,} is not a multiple of the pinned {named} = {split:,}: use a multiple of {split:,}"
        )
    if pins.get("dp") and batch % pins["dp"]:
        return CalcError("dp", f"= {pins['dp']} does not divide the global batch of {batch:,} sequences")
    return None


def _plan_fields(v: dict[str, str]) -> tuple[Any, dict[str, str]]:
    """The model and the planner's ``field=value`` strings, checked (blank: searched)."""
    choice = read_model(v)
    fields = {k: str(parse_positive_int(v[k], k, maximum=m)) for k, m in _MAXIMA.items()}
    gpn = v["gpus_per_node"].strip()  # blank: the GPU's standard server, as plan() takes it
    fields["gpus_per_node"] = str(parse_positive_int(gpn, "gpus_per_node", maximum=1024)) if gpn else ""
    selects = (
        ("gpu", tuple(GPUS)),
        ("inter", _NETWORKS),
        ("convention", tuple(CONVENTIONS)),
        ("dtype", tuple(k for k, _ in DTYPES)),
        ("implementation", IMPLEMENTATIONS),
        ("zero_stage", (_ANY, "0", "1", "2", "3")),
        ("recompute", _RECOMPUTE),
        ("stack", STACKS),
        ("loss", (STACK_DEFAULT, *LOSS_KINDS)),
    )
    for name, known in selects:
        one_of(v, name, known)
    for name in ("gpu", "inter", "convention", "dtype", "implementation"):
        fields[name] = v[name]
    fields["stack"] = "" if v["stack"] == "megatron" else v["stack"]  # blank: the planner's default, megatron
    fields["loss"] = "" if v["loss"] == STACK_DEFAULT else v["loss"]
    fields.update({k: _searched(v, k) for k in _SEARCHED})
    fields["safety_margin"] = _share(v, "safety_margin", 0.01, 0.9)
    blank = not v["matmul_efficiency"].strip()  # the GPU generation's default (calc.timing.efficiency)
    fields["matmul_efficiency"] = "" if blank else _share(v, "matmul_efficiency", 0.05, 1)
    fields["zero_stage"] = "" if v["zero_stage"] == _ANY else v["zero_stage"]
    fields["recompute"] = "" if v["recompute"] == _ANY else v["recompute"]
    return choice, {**fields, **step_knobs(v)}


def _verdict_line(label: str, r: dict[str, Any]) -> str:
    best = r["layouts"][0]
    return (
        f"{label}: best of {r['searched']:,} layouts searched: dp={best['dp']} tp={best['tp']} pp={best['pp']} "
        f"cp={best['cp']} ep={best['ep']}, ZeRO-{best['zero_stage']}, {_RECOMPUTATION[best['recompute']]}, "
        f"micro-batch {best['micro_batch']}, interleave {best['interleave']}: "
        f"{duration(best['step_time_s'])} per step, MFU {best['mfu']:.1%}."
    )


def _verdict_short(best: dict[str, Any]) -> str:
    """The best layout's numbers first, for the phone's sticky one-line verdict: ``Best: 6.86 s, MFU 54.0%``."""
    return f"Best: {duration(best['step_time_s'])}, MFU {best['mfu']:.1%}"


_RECOMPUTATION = {
    "none": "no recomputation",
    "selective": "selective recomputation",
    "op": "per-op selective recomputation",
    "full": "full recomputation",
}

_RECOMPUTE_SHORT = {k: v.replace("recomputation", "recompute") for k, v in _RECOMPUTATION.items()}
"""A ranking row's recomputation in two words: ``no recompute``, ``full recompute``."""


def _flip(layouts: list[dict[str, Any]], i: int) -> str:
    """The "could flip" note of layout ``i`` (from 1) in words: how close the next one is, never "0.0%"."""
    x = layouts[i - 1]
    if not x.get("flip") or i >= len(layouts):
        return ""
    gap = layouts[i]["step_time_s"] / x["step_time_s"] - 1
    close = (
        "the same step time as" if gap <= 0 else "under 0.1% faster than" if gap < 0.001 else f"{gap:.1%} faster than"
    )
    return f"could flip: {close} #{i + 1}"


def _ranking(layouts: list[dict[str, Any]]) -> str:
    rows = [
        (
            str(i),
            escape(f"dp {x['dp']} · tp {x['tp']} · pp {x['pp']} · cp {x['cp']} · ep {x['ep']}"),
            escape(
                f"ZeRO-{x['zero_stage']} · {_RECOMPUTE_SHORT[x['recompute']]} · micro-batch {x['micro_batch']}"
                f" · interleave {x['interleave']}"
            ),
            out(f"memory-{i}", f"{x['memory_bytes'] / 1e9:.1f} GB", value=x["memory_bytes"], unit="B"),
            out(f"step-{i}", duration(x["step_time_s"]), value=x["step_time_s"], unit="s"),
            out(f"mfu-{i}", f"{x['mfu']:.1%}", value=x["mfu"]),
            escape(_flip(layouts, i)),
        )
        for i, x in enumerate(layouts, 1)
    ]
    head = table(("#", "Degrees", "State", "Peak", "Step", "MFU", ""), rows, raw_cells=True)
    return head.replace("<th>Peak</th>", '<th><abbr title="Peak memory per GPU">Peak</abbr></th>', 1)


def _where_time_goes(best: dict[str, Any]) -> str:
    """The best layout's step, part by part: a chart of what is not compute and a table of every part."""
    shown = [(i, p) for i, p in enumerate(best["time"]) if p["seconds"] > 0]
    parts = [
        (escape(p["part"]), out(f"time-{i}", duration(p["seconds"]), value=p["seconds"], unit="s")) for i, p in shown
    ]
    return (
        "<p><strong>Where the best layout's step goes</strong></p>"
        + step_time_chart(
            [
                (p["part"], p["seconds"], p["seconds"])
                for p in best["time"]
                if p["part"] != "compute" and p["seconds"] > 0
            ],
            title="Exposed communication and bubble of the best layout",
        )
        + table(("Part", "Time"), parts, raw_cells=True)
        + why_list([(p["part"], p["why"]) for _, p in shown], "Why each part takes its time")
    )


def _rejected(r: dict[str, Any]) -> str:
    rejected = [
        (escape(f"dp {x['dp']} · tp {x['tp']} · pp {x['pp']} · cp {x['cp']}"), escape(x["reason"]))
        for x in r["rejected"]
    ]
    if not rejected:
        return ""
    return "<p><strong>Best rejected</strong></p>" + table(("Layout", "Why not"), rejected, raw_cells=True)


def _rejected_by_reason(r: dict[str, Any]) -> str:
    """Every layout the search set aside, grouped by why, with how many (issue 19), most first."""
    groups = sorted(r["rejected_by_reason"], key=lambda g: -g["count"])
    rows = [
        (out(f"rejected-reason-{i}", g["reason"]), out(f"rejected-{i}", f"{g['count']:,}", value=g["count"]))
        for i, g in enumerate(groups, 1)
    ]
    if not rows:
        return ""
    head = "<p><strong>Layouts set aside, by reason</strong></p>"
    return head + table(("Why not", "Layouts"), rows, raw_cells=True)


_LOW_MFU = 0.35
"""Below this MFU the answer says where the step goes (large runs report 38-46%: Llama 3 405B, PaLM)."""

_BUBBLE_SHARE = 0.25
"""A pipeline bubble over a quarter of the compute is the bottleneck worth naming."""

_MICROBATCHES_PER_STAGE = 4
"""Micro-batches per pipeline stage that keep the 1F1B bubble, (p-1)/m, under a quarter (Narayanan et al. 2021,
Sec. 2.2.1, recommend m >> p)."""


def _diagnosis(best: dict[str, Any], v: dict[str, str]) -> str:
    """A low-MFU answer names its bottleneck and the cheapest changes that fix it (issue 19), or nothing."""
    part = {p["part"]: p["seconds"] for p in best["time"]}
    compute, bubble = part.get("compute", 0.0), part.get("pipeline bubble", 0.0)
    dp, pp, mb = best["dp"], best["pp"], best["micro_batch"]
    batch = int(v["global_batch"])
    per_pipeline = batch // (dp * mb)
    if pp > 1 and compute > 0 and bubble > _BUBBLE_SHARE * compute:
        enough = _MICROBATCHES_PER_STAGE * pp
        wider = enough * dp * mb
        narrower = batch // (enough * mb) * best["tp"] * pp * best["cp"]
        fewer = f", or {plural(narrower, 'GPU')} at this batch" if narrower else ""
        few = plural(per_pipeline, "micro-batch", "micro-batches")
        text = (
            f"The pipeline bubble ({duration(bubble)}) is {bubble / compute:.0%} of the compute ({duration(compute)}): "
            f"a global batch of {batch:,} sequences over dp {dp} leaves {few} per pipeline for {pp} stages. "
            f"A global batch of {wider:,} ({enough} micro-batches a pipeline){fewer} "
            "would shrink it."
        )
        href = _bubble_href(pp, max(per_pipeline, 1))
        link = f'<a class="lc-calc__handoff" data-site-href="{href}">Draw this pipeline</a>'
        return f'<p class="lc-diagnosis">{out("diagnosis", text)} {link}.</p>'
    if best["mfu"] < _LOW_MFU:
        worst = max((p for p in best["time"] if p["part"] != "compute"), key=lambda p: p["seconds"], default=None)
        if worst is not None and worst["seconds"] > 0:
            most = f"{worst['part']} ({duration(worst['seconds'])})"
            text = f"MFU {best['mfu']:.1%}: after compute, the step goes most to {most}."
            return f'<p class="lc-diagnosis">{out("diagnosis", text)}</p>'
    return ""


def _published(v: dict[str, str], source: str) -> str:
    """The model's published runs (``calc.timing.published``): who ran it, how, what they measured, and a link that
    plans it here with their degrees pinned (issue 21: "Meta ran this on ...")."""
    from calc.timing.published import published_runs  # imported here, with the planner (tests/test_import_alone.py)

    runs = published_runs(v.get("preset", "")) if source == "preset" else ()
    if not runs:
        return ""
    rows = []
    for run in sorted(runs, key=lambda r: r.gpus):
        tp, pp, dp, cp, vv = run.degrees
        layout = f"TP{tp} PP{pp} DP{dp}" + (f" CP{cp}" if cp > 1 else "") + (f" v{vv}" if vv > 1 else "")
        pins = {"preset": run.preset, "gpus": run.gpus, "gpu": run.gpu, "seq_len": run.seq_len, "stack": run.stack}
        pins |= {"global_batch": run.global_batch, "tp": tp, "pp": pp, "dp": dp, "cp": cp, "interleave": vv or _ANY}
        pins |= {"dtype": run.dtype} if run.dtype != "bf16" else {}
        href = "plan/?" + "&amp;".join(f"plan.{k}={val}" for k, val in pins.items()) + "#calc-plan"
        where = (run.source if run.source.startswith(run.who) else f"{run.who}: {run.source}") + (
            f" ({run.run})" if run.run else ""
        )
        ran = f"{run.gpus:,} × {run.hardware}, {layout}, batch {run.global_batch:,} × {run.seq_len:,}"
        ran += ", FP8" if run.dtype == "fp8" else ""
        link = f'<a class="lc-calc__handoff" data-site-href="{href}">plan it</a>'
        rows.append((escape(where), escape(ran), escape(run.measured), link))
    head = f"<p><strong>Published runs of this model</strong> ({plural(len(runs), 'run')})</p>"
    return head + table(("Who and where", "Ran", "Measured", ""), rows, raw_cells=True)


def _bubble_href(pp: int, m: int) -> str:
    """The pipeline-bubble calculator (parallelism/pipeline/#shrink) with these stages and micro-batches."""
    return f"parallelism/pipeline/?pipeline-bubble.pp={pp}&amp;pipeline-bubble.num_microbatches={m}#shrink"


def _first() -> Callable[[list[dict[str, Any]]], object] | None:
    """Where the search's first kept layouts go: a first fragment to the page while it goes on (``None`` when no
    one listens, outside the browser)."""
    if not listening():
        return None
    return lambda rows: post_partial(_partial_html(rows))


def _step_out(best: dict[str, Any]) -> str:
    """The best layout's step time as the result's ``step_time`` output."""
    return out("step_time", duration(best["step_time_s"]), "strong", value=best["step_time_s"], unit="s")


def _partial_html(rows: list[dict[str, Any]]) -> str:
    """The first fragment: the best layout found so far and its row, marked as a search still under way."""
    best = rows[0]
    line = (
        f"Searching. Best so far: dp={best['dp']} tp={best['tp']} pp={best['pp']} cp={best['cp']} "
        f"ep={best['ep']}, {duration(best['step_time_s'])} per step, MFU {best['mfu']:.1%}; the ranking follows."
    )
    return (
        verdict(True, line, short=f"Searching: {duration(best['step_time_s'])} so far")
        + kv("Best step time so far", _step_out(best))
        + _ranking(rows)
    )


def _compute(v: dict[str, str]) -> str:
    choice, r = plan_result(v, on_first=_first())
    best = r["layouts"][0]
    return (
        verdict(True, _verdict_line(choice.label, r), short=_verdict_short(best))
        + model_chip(choice)
        + _diagnosis(best, v)
        + kv("Best step time", _step_out(best))
        + _ranking(r["layouts"])
        + layout_chart(
            [
                {"label": f"#{i} dp {x['dp']} · tp {x['tp']} · pp {x['pp']}", "step_s": x["step_time_s"], **x}
                for i, x in enumerate(r["layouts"], 1)
            ],
            capacity=GPUS[v["gpu"]].memory_bytes,
            gpu_label=GPUS[v["gpu"]].label,
            unit="GB",
        )
        + _where_time_goes(best)
        + _published(v, choice.source)
        + _rejected(r)
        + _rejected_by_reason(r)
        + '<p class="lc-kv"><small>Analytical ranking: '
        + escape("; ".join(r["assumptions"]))
        + ".</small></p>"
    )


def _python(v: dict[str, str]) -> str:
    """[`plan`][calc.timing.planner.plan] with the pinned fields (a searched one is left out) and the best layout."""
    from calc.timing.planner import plan  # imported here: the planner pulls in the whole engine

    _, fields = _plan_fields(v)
    kw: dict[str, object] = {}
    shares = ("safety_margin", "matmul_efficiency", "oversubscription", "fp8_memory_passes", *SHARE_KNOBS)
    for key, text in fields.items():
        if key in SWITCH_KNOBS:
            kw[key] = True  # set only when on (step_knobs)
        elif key == "p2p_overlap":  # forced on or off; left to the schedule, it is not passed
            kw[key] = text == "1"
        elif text != "":
            kw[key] = float(text) if key in shares else int(text) if text.isdigit() else text
    body = [
        f"arch = {model_code(v)}",
        "result = " + call("plan", Code("arch"), fn=plan, **kw),
        'best = result["layouts"][0]',
    ]
    prints = [("step_time", 'best["step_time_s"]'), ("memory-1", 'best["memory_bytes"]'), ("mfu-1", 'best["mfu"]')]
    return snippet(body, prints)


CALCULATOR = accept_legacy_model(
    Calculator(
        name="plan",
        title="Plan a training run",
        description="Every valid layout for a model on your cluster, the ones that fit in memory, ranked by "
        "predicted step time. Leave a degree blank to search it.",
        fields=(
            *model_fields("llama3-70b"),
            Field("gpus", "GPUs", "1024", kind="number"),
            select("gpu", "GPU", "h100-sxm", tuple((k, g.label) for k, g in GPUS.items())),
            Field("gpus_per_node", "GPUs per node (NVLink domain)", "", kind="number", help=server_help()),
            select(
                "inter", "Network (one NIC per GPU)", "ib-ndr", tuple((n, INTERCONNECTS[n].label) for n in _NETWORKS)
            ),
            seq_len_field("8192"),
            Field("global_batch", "Global batch (sequences)", "1024", kind="number"),
            convention_field("Bytes per parameter (precision and optimizer)", tuple((k, k) for k in CONVENTIONS)),
            select(
                "dtype",
                "Matmul precision",
                "bf16",
                DTYPES,
                help="FP8: the linear layers at the FP8 peak (GPUs with FP8 tensor cores); attention stays BF16",
            ),
            select(
                "implementation",
                "Implementation (whose kernels save activations)",
                "megatron",
                tuple((k, k) for k in IMPLEMENTATIONS),
            ),
            Field("dp", "dp", _ANY, help="a number pins it; any (or blank) searches it"),
            Field("tp", "tp", _ANY, help="searched within the node"),
            Field("pp", "pp", _ANY),
            Field("cp", "cp", _ANY, help=_CP_HELP),
            Field("ep", "ep", _ANY, help="MoE only; carved from dp × cp"),
            select("zero_stage", "ZeRO stage", _ANY, ((_ANY, "search"), *((z, z) for z in "0123"))),
            recompute_field(_ANY, ((_ANY, "search"), *((r, r) for r in _RECOMPUTE[1:]))),
            stack_field(help="torchtitan searches ZeRO 0 and 3, recomputation none, op and full"),
            loss_field(),
            Field("micro_batch", "Micro-batch", _ANY),
            Field("interleave", "Interleave (model chunks per stage)", _ANY),
            Field(
                "safety_margin",
                "Memory kept free (share)",
                SAFETY_MARGIN_DEFAULT,
                help="from 0.01 to 0.9, beyond the nvidia-smi peak (allocator and CUDA context already counted)",
            ),
            Field(
                "matmul_efficiency",
                "Matmul efficiency (share of peak)",
                "",
                help=efficiency_help(),
            ),
            *STEP_KNOB_FIELDS,
        ),
        compute=_compute,
        python=_python,
    )
)
"""The planner calculator."""
