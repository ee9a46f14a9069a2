"""The "Will it fit?" calculator: model-state memory per GPU under ZeRO, against a GPU's memory."""

from __future__ import annotations

from urllib.parse import quote

from calc.guide.charts import zero_chart
from calc.markup import escape
from calc.memory.layout import Layout
from calc.memory.model_state import (
    COMPONENTS,
    model_state_bytes,
    resolve_convention,
    smallest_fitting_layout,
)
from calc.memory.overheads import peak_memory
from calc.memory.stacks import stack_defaults
from calc.models.presets import preset
from calc.units import format_count, parse_count, parse_positive_int
from calc.widgets import Calculator, Field
from calc.widgets._code import Code, call, gpu_code, model_code, snippet
from calc.widgets._fields import (
    degree,
    gpu_fields,
    micro_batch_field,
    select,
    seq_len_field,
    unit_field,
    zero_field,
)
from calc.widgets._html import (
    byte_formatter,
    fit_short,
    formulas,
    gpu_memory,
    gpu_named,
    memory_chart,
    on_the_gpu,
    out,
    table,
    verdict,
)
from calc.widgets._model import PRESET_HELP, preset_options
from calc.widgets._parts import gpu_memory_line, headroom, kv, model_state_labels
from calc.widgets._stack_fields import STACK_DEFAULT, convention_field, stack_fields, stack_knobs

__all__ = ["CALCULATOR"]


def _labels(convention: str) -> dict[str, str]:
    """The model states' labels for ``convention``'s optimizer, the weights named as the working copy."""
    return {**model_state_labels(convention), "weights": "Weights (working copy)"}


_SHARDED_FROM = {"master": 1, "momentum": 1, "variance": 1, "gradients": 2, "weights": 3}
"""The ZeRO stage from which each component is sharded over ``dp`` (Rajbhandari et al. 2020, Sec. 5.1-5.3)."""

_SOURCE = "Rajbhandari et al. 2020 (ZeRO), Sec. 3.1 (bytes per parameter) and Sec. 5 (stages P_os, P_os+g, P_os+g+p)"
_NO_MODEL = "none"
_ACTIVATIONS = "Activations (optional)"
_WHAT_ACTIVATIONS = "FlashAttention, {}, no dropout, no tensor or pipeline parallelism"
_RECOMPUTATION = {
    "none": "no recomputation",
    "selective": "selective recomputation",
    "op": "per-op selective recomputation",
    "full": "full recomputation",
}
_MAX_DP = 1 << 20
_AS_SHOWN = {"flash_attention": True, "dropout": False}
"""The activation settings the peak is counted with (``_WHAT_ACTIVATIONS``); recomputation and the loss are the
reader's or the stack's."""


def _sci(n: int) -> str:
    """A count as the formulas print it: ``7.00e9``."""
    mantissa, exponent = f"{n:.2e}".split("e")
    return f"{mantissa}e{int(exponent)}"


def _row(key: str, c, params: int, stage: int, dp: int, fmt) -> tuple[str, str, str, int]:
    """One breakdown row: the label unfolding to its formula with the reader's numbers, and the bytes."""
    bytes_per = getattr(c, key)
    if stage >= _SHARDED_FROM[key] and dp > 1:
        shard = -(-params // dp)
        value = shard * bytes_per
        math = f"{bytes_per} B × ⌈{_sci(params)} / {dp:,}⌉ = {bytes_per} B × {shard:,} = {fmt(value)}"
    else:
        value = params * bytes_per
        math = f"{bytes_per} B × {_sci(params)} = {fmt(value)}"
    return _labels(c.name)[key], f"{bytes_per} B", math, value


def _stack(v: dict[str, str]) -> dict[str, str]:
    """The layout's ``stack``, ``recompute`` and ``loss``, each only when not the default (``"megatron"``, the
    stack's)."""
    return stack_knobs(v, ("recompute", "loss"))


def _recompute(v: dict[str, str]) -> str:
    """The recomputation the activations are counted with: the reader's, else the stack's."""
    return _stack(v).get("recompute") or str(stack_defaults(v["stack"], pp=1)["recompute"])


def _what_activations(v: dict[str, str]) -> str:
    return _WHAT_ACTIVATIONS.format(_RECOMPUTATION[_recompute(v)])


def _peak(arch, stage: int, dp: int, v: dict[str, str], seq: int, micro: int) -> int:
    """``nvidia-smi`` bytes of the busiest GPU, activations and overheads included.

    From [`peak_memory`][calc.memory.overheads.peak_memory] with FlashAttention and no dropout; recomputation,
    the loss and the shard are the stack's (Megatron: none, fused; torchtitan: per-op, stock, FSDP2).
    """
    layout = Layout(
        dp=dp, zero_stage=stage, seq_len=seq, micro_batch=micro, convention=v["convention"], **_AS_SHOWN, **_stack(v)
    )
    return peak_memory(arch, layout).nvidia_smi_bytes


def _smallest_with_activations(
    arch, memory: int, v: dict[str, str], seq: int, micro: int
) -> tuple[int, int, int] | None:
    """The lowest stage and smallest ``dp`` whose whole peak (activations and overheads included) fits, and that peak.

    Per-GPU peak only falls as ``dp`` grows (only model states are sharded), so each stage is
    bisected, as [`smallest_fitting_layout`][calc.memory.model_state.smallest_fitting_layout] does for model state.
    """
    for stage in range(4):
        if _peak(arch, stage, _MAX_DP, v, seq, micro) > memory:
            continue
        lo, hi = 1, _MAX_DP
        while lo < hi:
            mid = (lo + hi) // 2
            if _peak(arch, stage, mid, v, seq, micro) <= memory:
                hi = mid
            else:
                lo = mid + 1
        return stage, lo, _peak(arch, stage, lo, v, seq, micro)
    return None


def _read(v: dict[str, str]) -> tuple[int, int, int, int, object]:
    """ZeRO stage, dp, sequence, micro-batch and the model (``None``: the typed parameter count only)."""
    stage = parse_positive_int(v["zero_stage"], "zero_stage", minimum=0, maximum=3)
    dp = parse_positive_int(v["dp"], "dp", maximum=_MAX_DP)
    seq = parse_positive_int(v["seq_len"], "seq_len", maximum=1 << 24)  # checked even while no model uses them
    micro = parse_positive_int(v["micro_batch"], "micro_batch", maximum=1 << 16)
    _stack(v)  # checked even while no model uses it, like the sequence
    arch = preset(v["preset"]) if v["preset"] != _NO_MODEL else None
    return stage, dp, seq, micro, arch


def _breakdown(state, c, params: int, stage: int, dp: int, fmt) -> tuple[list, list]:
    """The table rows and formula lines of the model states, each checked against the engine's own bytes."""
    rows, lines = [], []
    for k in COMPONENTS:
        label, per, math, value = _row(k, c, params, stage, dp, fmt)
        if value != getattr(state, k):  # the formula shown must be the engine's own arithmetic
            raise RuntimeError(f"will-it-fit: the {k} formula gives {value}, the engine {getattr(state, k)}")
        rows.append((label, per, out(k, fmt(value))))
        lines.append((label, math))
    lines.append(("Total model state", f"{c.bytes_per_param} B per parameter before sharding → {fmt(state.total)}"))
    rows.append(
        ("<strong>Total model state</strong>", f"{c.bytes_per_param} B", out("total", fmt(state.total), "strong"))
    )
    return rows, lines


def _peak_rows(rows: list, lines: list, total: int, peak: int, v: dict[str, str], fmt) -> None:
    """Adds the activations-and-overheads and peak rows (a model is chosen)."""
    extra = peak - total
    rows.append(("Activations and overheads", "", out("activations_overheads", fmt(extra))))
    lines.append(
        (
            "Activations and overheads",
            (
                f"peak {fmt(peak)} − model state {fmt(total)} = {fmt(extra)} ({_what_activations(v)}; activations "
                "from Korthikanti et al. 2022, Sec. 4, plus the CUDA context, NCCL buffers and allocator reserve "
                "of calc.memory.overheads.peak_memory)"
            ),
        )
    )
    rows.append(("<strong>Peak per GPU</strong>", "", out("peak", fmt(peak), "strong")))


def _verdict_line(used: int, memory: int, gpu_label: str, head: str, what: str, counted: bool, fmt) -> str:
    if used <= memory:
        where = on_the_gpu(gpu_label, memory, fmt)
        line = f"Fits: {fmt(used)} of {fmt(memory)} on {where} ({head}), {fmt(memory - used)} left"
        return line + ("." if counted else " for activations and buffers.")
    return f"Does not fit: {head}: {what} exceeds {gpu_named(gpu_label, memory, fmt)} by {fmt(used - memory)}."


def _hint(arch, params: int, memory: int, v: dict[str, str], seq: int, micro: int, fmt) -> str:
    """The smallest layout that fits, in words."""
    conv = v["convention"]
    if arch is not None:
        found = _smallest_with_activations(arch, memory, v, seq, micro)
        if found is None:
            return (
                f"Nothing fits with ZeRO and data parallelism alone: even ZeRO-3 over {_MAX_DP:,} GPUs leaves no "
                f"room for the activations of {seq:,} tokens × {micro} ({_what_activations(v)}). Recomputation "
                "(selective or full), tensor parallelism with sequence parallelism, and context parallelism "
                "shrink them."
            )
        s, d, at = found
        where = "any dp" if s == 0 else f"dp ≥ {d:,}"
        return f"ZeRO-{s} with {where}: {fmt(at)} per GPU with activations and overheads, {fmt(memory - at)} left."
    # Never a layout with nothing left for activations: the model state must leave at least one byte free,
    # and the reader is told that activations are not counted unless a model and sequence are given.
    best = smallest_fitting_layout(params, memory - 1, convention=conv, max_dp=_MAX_DP)
    if best is None:
        return f"Nothing fits: even ZeRO-3 over {_MAX_DP:,} GPUs exceeds this GPU's memory."
    s, d = best
    at = model_state_bytes(params, zero_stage=s, dp=d, convention=conv).total
    where = "any dp" if s == 0 else f"dp ≥ {d:,}"
    return (
        f"ZeRO-{s} with {where}: {fmt(at)} of model state per GPU, {fmt(memory - at)} left for activations "
        "(not counted: give a model and sequence length under Activations to count them)."
    )


def _compute(v: dict[str, str]) -> str:
    stage, dp, seq, micro, arch = _read(v)
    conv, unit = v["convention"], v["unit"]
    fmt = byte_formatter(unit)
    memory, gpu_label = gpu_memory(v)
    params = arch.param_count if arch is not None else parse_count(v["params"], "params")
    state = model_state_bytes(params, zero_stage=stage, dp=dp, convention=conv)
    total = state.total
    head = f"{format_count(params)} parameters, ZeRO-{stage}, dp={dp}"
    rows, lines = _breakdown(state, resolve_convention(conv), params, stage, dp, fmt)
    segments = [(_labels(resolve_convention(conv).name)[k], getattr(state, k)) for k in COMPONENTS]
    used, what = total, f"{fmt(total)} of model state per GPU"
    if arch is not None:
        used = max(_peak(arch, stage, dp, v, seq, micro), total)
        what = f"{fmt(used)} per GPU with activations at {seq:,} tokens × {micro} and overheads (as nvidia-smi shows)"
        _peak_rows(rows, lines, total, used, v, fmt)
        if used > total:
            segments.append(("Activations and overheads", used - total))
    line = _verdict_line(used, memory, gpu_label, head, what, arch is not None, fmt)
    hint = _hint(arch, params, memory, v, seq, micro, fmt)
    return (
        verdict(used <= memory, line, short=fit_short(used, memory, fmt))
        + memory_chart(segments, memory, gpu_label, unit)
        + zero_chart(params, convention=conv, zero_stage=stage, dp=dp, capacity=memory, gpu_label=gpu_label, unit=unit)
        + table(("Component", "Bytes / param", "Per GPU"), rows, raw_cells=True)
        + formulas(lines, _SOURCE)
        + gpu_memory_line(memory, fmt)
        + (_params_from_model(params) if arch is not None else "")
        + kv("Headroom for activations", headroom(memory, used, fmt))
        + kv("Smallest layout that fits", out("suggestion", hint) + _handoff(v, hint, stage, dp, seq, micro))
    )


def _params_from_model(params: int) -> str:
    """The chosen model's parameter count, marked ``data-fill="params"``: the Parameters box should show it (the
    preset replaces what was typed there), so the browser writes this text into that field after a render."""
    line = kv("Parameters (from the model)", out("params_from_model", format_count(params), value=params))
    return line.replace("<span data-value=", '<span data-fill="params" data-value=', 1)


_HANDOFF_PAGE = "memory/activations/"
_HANDOFF_ID = "training-memory"
"""Where the hand-off goes: the activation page's training-memory calculator (``#rival-model-state``), which has
recomputation, tp, sequence parallelism and cp."""


def _handoff(v: dict[str, str], hint: str, stage: int, dp: int, seq: int, micro: int) -> str:
    """When nothing fits with a model, a link to the training-memory calculator carrying the reader's inputs."""
    if v["preset"] == _NO_MODEL or not hint.startswith("Nothing fits"):
        return ""
    inputs = {"preset": v["preset"], "dp": dp, "zero_stage": stage, "micro_batch": micro, "seq_len": seq}
    inputs |= {"recompute": _recompute(v), "flash_attention": 1, "dropout": 0, "convention": v["convention"]}
    inputs |= {k: value for k, value in _stack(v).items() if k != "recompute"}
    inputs |= {"gpu": v["gpu"], "unit": v["unit"]} | ({"gpu_memory": v["gpu_memory"]} if v["gpu"] == "custom" else {})
    query = "&".join(f"{_HANDOFF_ID}.{k}={quote(str(value))}" for k, value in inputs.items())
    href = f"{_HANDOFF_PAGE}?{query}#rival-model-state"
    return (
        f' <a class="lc-calc__handoff" data-site-href="{escape(href)}">Try recomputation, tp and cp in the '
        "training-memory calculator, with these inputs</a>."
    )


def _python(v: dict[str, str]) -> str:
    """The engine calls behind the page: [`model_state_bytes`][calc.memory.model_state.model_state_bytes], and with a
    model [`peak_memory`][calc.memory.overheads.peak_memory] on the same layout."""
    stage, dp, seq, micro, arch = _read(v)
    body, used = [], "state.total"
    if arch is not None:
        body.append(f"arch = {model_code(v)}")
    params = Code("arch.param_count") if arch is not None else v["params"]
    body += [
        "state = "
        + call("model_state_bytes", params, fn=model_state_bytes, zero_stage=stage, dp=dp, convention=v["convention"]),
        f"memory = {gpu_code(v)}",
    ]
    prints = [(k, f"state.{k}") for k in COMPONENTS] + [("total", "state.total"), ("gpu_memory_bytes", "memory")]
    if arch is not None:
        layout = call(
            "Layout",
            fn=Layout,
            dp=dp,
            zero_stage=stage,
            seq_len=seq,
            micro_batch=micro,
            convention=v["convention"],
            **_AS_SHOWN,
            **_stack(v),
        )
        body += [f"layout = {layout}", "peak = max(calc.peak_memory(arch, layout).nvidia_smi_bytes, state.total)"]
        prints += [("activations_overheads", "peak - state.total"), ("peak", "peak")]
        used = "peak"
    return snippet(body, [*prints, ("headroom", f"memory - {used}")])


CALCULATOR = Calculator(
    name="will-it-fit",
    title="Will it fit?",
    description="Model-state memory per GPU (weights, gradients, optimizer states) before activations.",
    fields=(
        Field("params", "Parameters", "7B", help="e.g. 7B, 70e9, 1.5T or 124439808"),
        convention_field(),
        zero_field(
            "0",
            (
                ("0", "0: nothing sharded"),
                ("1", "1: shard optimizer states"),
                ("2", "2: + gradients"),
                ("3", "3: + weights (FSDP)"),
            ),
            help="0 is plain data parallelism; each stage also shards what the one before it does",
        ),
        degree("dp", "1", "GPUs the states are sharded over", label="Data-parallel degree"),
        *gpu_fields(),
        unit_field(),
        select(
            "preset",
            "Model (counts activations)",
            _NO_MODEL,
            ((_NO_MODEL, "None: model state only"), *preset_options()),
            help="its parameter count replaces Parameters, and activations and overheads are counted. " + PRESET_HELP,
            group=_ACTIVATIONS,
            advanced=True,
        ),
        seq_len_field("4096", group=_ACTIVATIONS, advanced=True),
        micro_batch_field(group=_ACTIVATIONS, advanced=True),
        *stack_fields(
            STACK_DEFAULT,
            stack_help="torchtitan: per-op recomputation, stock loss, FSDP2; DeepSpeed: stock loss, gradient bucket",
            group=_ACTIVATIONS,
            advanced=True,
        ),
    ),
    compute=_compute,
    python=_python,
)
"""The Will-it-fit calculator."""
