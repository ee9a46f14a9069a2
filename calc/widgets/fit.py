"""The "Will it fit?" calculator: model-state memory per GPU under ZeRO, against a GPU's memory."""

from __future__ import annotations

from calc.charts import zero_chart
from calc.model_state import (
    COMPONENTS,
    convention_options,
    model_state_bytes,
    resolve_convention,
    smallest_fitting_layout,
)
from calc.units import format_count, parse_count, parse_positive_int
from calc.widgets import Calculator, Field
from calc.widgets._html import (
    GPU_FIELD_OPTIONS,
    UNIT_FIELD_OPTIONS,
    byte_formatter,
    gpu_memory,
    memory_chart,
    out,
    table,
    verdict,
)

__all__ = ["CALCULATOR"]

_LABELS = {
    "weights": "Weights (working copy)",
    "gradients": "Gradients",
    "master": "fp32 master weights",
    "momentum": "Adam momentum",
    "variance": "Adam variance",
}


def _compute(v: dict[str, str]) -> str:
    params = parse_count(v["params"], "params")
    stage = parse_positive_int(v["zero_stage"], "zero_stage", minimum=0, maximum=3)
    dp = parse_positive_int(v["dp"], "dp", maximum=1 << 20)
    conv = v["convention"]
    fmt = byte_formatter(v["unit"])
    memory, gpu_label = gpu_memory(v)
    state = model_state_bytes(params, zero_stage=stage, dp=dp, convention=conv)
    c = resolve_convention(conv)
    total = state.total
    fits = total <= memory
    head = f"{format_count(params)} parameters, ZeRO-{stage}, dp={dp}: {fmt(total)} of model state per GPU"
    if fits:
        line = f"Fits: {head}, leaving {fmt(memory - total)} of the {gpu_label} for activations and buffers."
    else:
        line = f"Does not fit: {head} exceeds the {gpu_label} ({fmt(memory)}) by {fmt(total - memory)}."
    rows = [(_LABELS[k], f"{getattr(c, k)} B", out(k, fmt(getattr(state, k)))) for k in COMPONENTS]
    rows.append(("<strong>Total model state</strong>", f"{c.bytes_per_param} B", out("total", fmt(total), "strong")))
    headroom = out(
        "headroom",
        fmt(memory - total) if fits else f"none (short by {fmt(total - memory)})",
        value=memory - total,
        unit="B",
    )
    best = smallest_fitting_layout(params, memory, convention=conv)
    if best is None:
        hint = "Nothing fits: even ZeRO-3 over 1,048,576 GPUs exceeds this GPU's memory."
    else:
        s, d = best
        at = model_state_bytes(params, zero_stage=s, dp=d, convention=conv).total
        where = "any dp" if s == 0 else f"dp ≥ {d:,}"
        hint = f"ZeRO-{s} with {where}: {fmt(at)} per GPU, {fmt(memory - at)} left for activations."
    segments = [(_LABELS[k], getattr(state, k)) for k in COMPONENTS]
    return (
        verdict(fits, line)
        + memory_chart(segments, memory, gpu_label, v["unit"])
        + zero_chart(
            params, convention=conv, zero_stage=stage, dp=dp, capacity=memory, gpu_label=gpu_label, unit=v["unit"]
        )
        + table(("Component", "Bytes / param", "Per GPU"), rows, raw_cells=True)
        + f'<p class="lc-kv"><span>GPU memory</span> {out("gpu_memory_bytes", fmt(memory))}</p>'
        + f'<p class="lc-kv"><span>Headroom for activations</span> {headroom}</p>'
        + f'<p class="lc-kv"><span>Smallest layout that fits</span> {out("suggestion", hint)}</p>'
    )


CALCULATOR = Calculator(
    name="will-it-fit",
    title="Will it fit?",
    description="Model-state memory per GPU (weights, gradients, optimizer states) before activations.",
    fields=(
        Field("params", "Parameters", "7B", help="e.g. 7B, 70e9, 1.5T or 124439808"),
        Field(
            "convention",
            "Bytes per parameter",
            "mixed-adam-16",
            kind="select",
            options=convention_options(),
        ),
        Field(
            "zero_stage",
            "ZeRO stage",
            "0",
            kind="select",
            options=(
                ("0", "0: plain data parallel (nothing sharded)"),
                ("1", "1: shard optimizer states"),
                ("2", "2: + gradients"),
                ("3", "3: + weights (FSDP)"),
            ),
        ),
        Field("dp", "Data-parallel degree", "1", kind="number", help="GPUs the states are sharded over"),
        Field(
            "gpu",
            "GPU",
            "h100-sxm",
            kind="select",
            options=GPU_FIELD_OPTIONS,
        ),
        Field("gpu_memory", "GPU memory (custom)", "80", kind="number", enabled_when=("gpu", "custom")),
        Field("unit", "Units", "GB", kind="select", options=UNIT_FIELD_OPTIONS),
    ),
    compute=_compute,
)
"""The Will-it-fit calculator."""
