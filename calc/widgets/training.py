"""The "Training memory per GPU" calculator: a preset model on a parallel layout, against a GPU."""

from __future__ import annotations

from calc.hardware import GPUS
from calc.markup import escape
from calc.memory.activations import LAYOUT_RECOMPUTE_MODES
from calc.memory.fp8 import HIGH_PRECISION, LOW_PRECISION_RECIPES
from calc.memory.layout import Layout
from calc.memory.model_state import resolve_convention
from calc.memory.moe_routing import activation_range
from calc.memory.overheads import PeakMemory, peak_memory, stage_peaks
from calc.units import format_count, parse_positive_int
from calc.widgets import Calculator, Field
from calc.widgets._code import Code, call, model_code, snippet
from calc.widgets._fields import (
    checkbox,
    degree,
    gpu_fields,
    micro_batch_field,
    one_of,
    select,
    seq_len_field,
    unit_field,
    whole_numbers,
    zero_field,
)
from calc.widgets._html import (
    byte_formatter,
    checked,
    fit_short,
    formulas,
    gpu_memory,
    gpu_named,
    memory_chart,
    on_the_gpu,
    out,
    table,
    verdict,
    why_list,
)
from calc.widgets._model import model_chip, model_fields, read_model
from calc.widgets._parts import MODEL_STATE_LABELS, NOT_COUNTED, gpu_memory_line, kv, model_state_labels, notes, plural
from calc.widgets._stack_fields import convention_field, stack_fields, stack_knobs

__all__ = ["CALCULATOR"]

_LABELS = {**MODEL_STATE_LABELS, "activations": "Activations", "logits": "Output layer (fp32 logits)"}
_PARTS = tuple(_LABELS)


def _labels(convention: str) -> dict[str, str]:
    """The rows' labels, the optimizer states named as the convention's optimizer names them."""
    return {**_LABELS, **model_state_labels(convention)}


_STACK_KNOBS = {"recompute": "selective", "zero_stage": "1", "shard": "even", "flash_attention": "1", "dropout": "0"}
"""The fields a training stack decides, at this calculator's defaults (its Megatron-LM values); choosing another
stack sets them to that stack's defaults (``calc.memory.stacks.stack_defaults``), unless the reader set them."""

_DEGREE_MAX = 1 << 20
_ACTIVATION_FLAGS = ("sequence_parallel", "flash_attention", "dropout")
_STATE_FLAGS = ("distributed_optimizer", "offload_optimizer", "offload_params")
_FLAGS = _ACTIVATION_FLAGS + _STATE_FLAGS
"""The checkboxes passed to [`Layout`][calc.memory.layout.Layout] as they are."""


def _layout(v: dict[str, str]) -> Layout:
    return Layout(**_layout_kwargs(v))


def _layout_kwargs(v: dict[str, str]) -> dict[str, object]:
    """The [`Layout`][calc.memory.layout.Layout] the fields describe, as its keyword arguments."""
    ints = whole_numbers(
        v,
        (
            ("dp", _DEGREE_MAX),
            ("tp", 1024),
            ("pp", 1024),
            ("cp", 1024),
            ("ep", 1024),
            ("micro_batch", 1 << 16),
            ("seq_len", 1 << 24),
            ("interleave", 64),
        ),
    )
    ints["zero_stage"] = parse_positive_int(v["zero_stage"], "zero_stage", minimum=0, maximum=3)
    text = v["global_batch"].strip()
    global_batch = parse_positive_int(text, "global_batch", maximum=1 << 30) if text else None
    return dict(
        **ints,
        global_batch=global_batch,
        recompute=one_of(v, "recompute", LAYOUT_RECOMPUTE_MODES),
        **stack_knobs(v),
        convention=v["convention"],
        shard=v["shard"],
        implementation=v["implementation"],
        **{name: checked(v[name]) for name in _FLAGS},
    )


_OPTIMIZERS = ("foreach", "fused")
_STAGE_ROWS = 32
"""Pipelines up to this many stages get a row per stage."""


def _stage_table(peaks: tuple[PeakMemory, ...], fmt) -> str:
    if not peaks:
        return ""
    rows = [
        (
            str(q.stage),
            f"{q.memory.layers:,}",
            fmt(q.memory.model_state),
            fmt(q.memory.activations + q.memory.logits),
            out(f"stage_{q.stage}_nvidia_smi_bytes", fmt(q.nvidia_smi_bytes)),
        )
        for q in peaks
    ]
    return table(("Stage", "Layers", "Model state", "Activations", "nvidia-smi"), rows, raw_cells=True)


def _short_recipe(label: str) -> str:
    """A low-precision recipe's label without its bytes ("FP8 per tensor, Hopper"): short enough for the form."""
    return label.split(" (")[0].replace(", per-tensor scaling,", " per tensor,")


def _overheads(p: PeakMemory, fmt) -> str:
    """The overheads' table, one line a row, and each row's formula and source folded under it."""
    rows = []
    for o in p.overheads:
        tag = f'<span class="lc-tag" data-tag="{o.tag}">{o.tag}</span>'
        rows.append((escape(o.label), tag, escape(_COUNTED[o.counted_in]), out(f"overhead_{o.name}", fmt(o.bytes))))
    return table(("Overhead", "Tag", "Counted in", "Per GPU"), rows, raw_cells=True) + why_list(
        [(o.label, f"{o.formula}. Source: {o.source}.") for o in p.overheads]
    )


_COUNTED = {"allocated": "allocated", "reserved": "reserved", "nvidia-smi": "nvidia-smi only"}


def _formulas(p: PeakMemory, layout: Layout, fmt, in_flight: float) -> str:
    """The breakdown's arithmetic with the reader's numbers; a model-state line is shown only where bytes per
    parameter × the GPU's (sharded) parameters is the engine's own number (offload and FSDP2 splits are not)."""
    m = p.memory
    conv = resolve_convention(layout.convention)
    labels = _labels(conv.name)
    lines = []
    for key in ("weights", "gradients", "master", "momentum", "variance"):
        per, got = getattr(conv, key), getattr(m, key)
        for ranks in dict.fromkeys((1, layout.dp, layout.dp * layout.cp)):
            if got and per * -(-m.params // ranks) == got:
                shard = f"⌈{m.params:,} / {ranks:,}⌉" if ranks > 1 else f"{m.params:,}"
                lines.append((labels[key], f"{per} B × {shard} parameters = {fmt(got)}"))
                break
    lines.append(
        (
            _LABELS["activations"],
            (
                f"{m.layers} layers × {in_flight:.3g} micro-batch{'' if in_flight == 1 else 'es'} in flight × "
                f"{layout.micro_batch} × "
                f"{layout.seq_len:,} tokens, tensor by tensor = {fmt(m.activations)}"
            ),
        )
    )
    transient = p.allocated_bytes - m.total
    lines += [
        ("Allocated", f"{fmt(m.total)} kept + {fmt(transient)} transient at the peak = {fmt(p.allocated_bytes)}"),
        (
            "Reserved",
            (
                f"{fmt(p.allocated_bytes)} + {fmt(p.reserved_bytes - p.allocated_bytes)} allocator reserve = "
                f"{fmt(p.reserved_bytes)}"
            ),
        ),
        (
            "nvidia-smi",
            (
                f"{fmt(p.reserved_bytes)} + {fmt(p.nvidia_smi_bytes - p.reserved_bytes)} CUDA context and NCCL "
                f"buffers = {fmt(p.nvidia_smi_bytes)}"
            ),
        ),
    ]
    return formulas(
        lines,
        "Rajbhandari et al. 2020 (ZeRO), Sec. 3.1 and 5 (model states); Korthikanti et al. 2022, Sec. 4 "
        "(activations); calc.memory.overheads.peak_memory (the overheads, each with its source in the table below)",
    )


def _options(v: dict[str, str]) -> dict[str, object]:
    """The options of [`peak_memory`][calc.memory.overheads.peak_memory] the fields set: the GPU preset decides
    NCCL's channels and its NVLS and tree buffers (a custom GPU: 16 channels, neither)."""
    return dict(
        gpu=v["gpu"] if v["gpu"] in GPUS else None,
        optimizer=one_of(v, "optimizer", _OPTIMIZERS),
        expandable_segments=checked(v["expandable_segments"]),
        low_precision=None if v["low_precision"] == "none" else v["low_precision"],
        moe_routing=v["moe_routing"],
    )


def _peak(arch, layout: Layout, v: dict[str, str]) -> tuple[PeakMemory, tuple[PeakMemory, ...]]:
    """The busiest GPU's peak and, for a pipeline of up to ``_STAGE_ROWS`` stages, every stage's."""
    options = _options(v)
    per_stage = stage_peaks(arch, layout, **options) if 1 < layout.pp <= _STAGE_ROWS else ()
    p = max(per_stage, key=lambda q: q.nvidia_smi_bytes) if per_stage else peak_memory(arch, layout, **options)
    return p, per_stage


def _verdict_line(p: PeakMemory, layout: Layout, label: str, memory: int, gpu_label: str, fmt) -> str:
    shown = p.nvidia_smi_bytes
    degrees = f"dp {layout.dp} × tp {layout.tp} × pp {layout.pp}" + (f" × cp {layout.cp}" if layout.cp > 1 else "")
    where = f"pipeline stage {p.memory.stage}" if layout.pp > 1 else "each GPU"
    head = f"{label} on {plural(layout.gpus, 'GPU')}, {degrees}, as nvidia-smi would show it"
    if shown <= memory:
        return (
            f"Fits: {fmt(shown)} of {fmt(memory)} on {on_the_gpu(gpu_label, memory, fmt, where)} ({head}), "
            f"{fmt(memory - shown)} left."
        )
    return (
        f"Does not fit: {fmt(shown)} on {where} ({head}) is over {gpu_named(gpu_label, memory, fmt)} by "
        f"{fmt(shown - memory)}."
    )


def _tables(p: PeakMemory, fmt, labels: dict[str, str]) -> tuple[str, str]:
    """The kept tensors' table and the allocated / reserved / nvidia-smi table."""
    m = p.memory
    rows = [(labels[k], out(k, fmt(getattr(m, k)))) for k in _PARTS]
    rows.append(("<strong>Tensors kept (model states and activations)</strong>", out("total", fmt(m.total), "strong")))
    totals = [
        ("Allocated at the peak (torch.cuda.max_memory_allocated)", out("allocated_bytes", fmt(p.allocated_bytes))),
        ("Reserved (torch.cuda.max_memory_reserved)", out("reserved_bytes", fmt(p.reserved_bytes))),
        (
            "<strong>What nvidia-smi would show (the verdict uses this)</strong>",
            out("nvidia_smi_bytes", fmt(p.nvidia_smi_bytes), "strong"),
        ),
    ]
    return table(("Component", "Per GPU"), rows, raw_cells=True), table(("Total", "Per GPU"), totals, raw_cells=True)


def _notes(p: PeakMemory, layout: Layout, arch, low: str | None, fmt) -> list[str]:
    """The notes under the result, as plain text."""
    m = p.memory
    found = [
        (
            "The verdict compares what nvidia-smi would show (reserved memory plus the CUDA context and NCCL's "
            "buffers, which live outside PyTorch's allocator) with the GPU's memory. Allocated is the peak of the "
            "backward (activations, logits and transient buffers) or of the optimizer step, whichever is larger."
        )
    ]
    if layout.pp > 1:
        found.append(f"Layers placed on the {layout.pp} pipeline stages: {layout.placement(arch.num_layers)}.")
    if layout.pp > 1 and m.stage != 0:
        found.append(
            f"Pipeline stage {m.stage} outweighs stage 0 here (its {m.layers} layers, fp32 logits "
            f"{fmt(m.logits)} and overheads)."
        )
    if m.cpu_offload:
        found.append("Offloaded states live in CPU memory; the CPU of each node holds this much per GPU.")
    if layout.seq_len > arch.max_position_embeddings:
        found.append(
            f"{layout.seq_len:,} tokens is longer than the {arch.max_position_embeddings:,} positions "
            "the model is configured for."
        )
    if low:
        found.append(
            f"{LOW_PRECISION_RECIPES[low].label}: the quantized weight copies are one line above; kept in high "
            "precision: " + "; ".join(HIGH_PRECISION) + "."
        )
    return found


def _linked(p: PeakMemory, layout: Layout, arch, fmt) -> list[str]:
    """The notes that link the accuracy page's list of what is not counted, as HTML."""
    link = NOT_COUNTED.format
    linked = []
    if arch.is_moe:
        r = activation_range(arch, layout)
        linked.append(
            escape(
                f"MoE layers: the activations above assume balanced routing (the MoE routing select adds a worst "
                "case as a named line). Routing is decided at run time: "
                f"dropless, a rank's experts can receive {float(r.tokens.ratio):.3g}× their balanced tokens, which "
                f"would make this stage's activations {fmt(r.balanced)} to {fmt(r.worst)} (a capacity factor "
                "caps it; calc.memory.moe_routing). Router and all-to-all buffers are "
            )
            + link("not counted")
            + "."
        )
    linked.append(
        escape(
            "ESTIMATED items come from documented defaults and framework source, not from a measurement; how far "
            "the engine is from measured runs is on the accuracy page (How accurate is this?). "
        )
        + link("Still not modelled")
        + escape(": " + "; ".join(p.not_modelled) + ".")
    )
    return linked


def _lines(p: PeakMemory, layout: Layout, memory: int, in_flight: float, fmt) -> str:
    """The labelled values under the tables."""
    m = p.memory
    if m.num_microbatches:
        per_step = f"{m.num_microbatches:,}"
    else:
        per_step = f"not given (≥ {layout.pp} assumed)" if layout.pp > 1 else "not given"
    return (
        gpu_memory_line(memory, fmt)
        + kv("Parameters on this GPU (before ZeRO)", out("params", format_count(m.params), value=m.params))
        + kv("Layers on this stage", out("layers", f"{m.layers:,}", value=m.layers))
        + kv("Micro-batches in flight on this stage", out("in_flight", f"{in_flight:.3g}", value=in_flight))
        + kv(
            "Micro-batches per step per pipeline",
            out("num_microbatches", per_step, value=m.num_microbatches or None),
        )
        + kv("CPU memory per GPU (offload)", out("cpu_offload", fmt(m.cpu_offload)))
    )


def _fixes(arch, v: dict[str, str], layout: Layout, p: PeakMemory, memory: int, fmt) -> str:
    """A "Does not fit"'s diagnosis (issue 19); its module loads only when a layout does not fit (issue 20: a
    calculator imports only what its answer needs, ``tests/test_import_alone.py``)."""
    if p.nvidia_smi_bytes <= memory:
        return ""
    from calc.widgets._memory_fixes import memory_fixes

    def peak(w: dict[str, str]) -> tuple[Layout, PeakMemory]:
        there = _layout(w)
        return there, _peak(arch, there, w)[0]

    return memory_fixes(arch, v, CALCULATOR.defaults, layout, p, memory, fmt, peak)


def _compute(v: dict[str, str]) -> str:
    choice = read_model(v)
    arch = choice.arch
    layout = _layout(v)
    fmt = byte_formatter(v["unit"])
    memory, gpu_label = gpu_memory(v)
    p, per_stage = _peak(arch, layout, v)
    m = p.memory
    labels = _labels(resolve_convention(layout.convention).name)
    segments = [(labels[k], getattr(m, k)) for k in _PARTS] + [
        ("Transient buffers at the peak", p.allocated_bytes - m.total),
        ("Allocator reserve", p.reserved_bytes - p.allocated_bytes),
        ("CUDA context and NCCL buffers", p.nvidia_smi_bytes - p.reserved_bytes),
    ]
    low = None if v["low_precision"] == "none" else v["low_precision"]
    in_flight = m.in_flight / layout.interleave
    kept, totals = _tables(p, fmt, labels)
    return (
        verdict(
            p.nvidia_smi_bytes <= memory,
            _verdict_line(p, layout, choice.label, memory, gpu_label, fmt),
            short=fit_short(p.nvidia_smi_bytes, memory, fmt),
        )
        + _fixes(arch, v, layout, p, memory, fmt)
        + model_chip(choice)
        + memory_chart(segments, memory, gpu_label, v["unit"])
        + kept
        + _formulas(p, layout, fmt, in_flight)
        + _overheads(p, fmt)
        + totals
        + _stage_table(per_stage, fmt)
        + _lines(p, layout, memory, in_flight, fmt)
        + notes(escape(n) for n in _notes(p, layout, arch, low, fmt))
        + notes(_linked(p, layout, arch, fmt))
    )


def _python(v: dict[str, str]) -> str:
    """[`peak_memory`][calc.memory.overheads.peak_memory] of the model on the [`Layout`][calc.memory.layout.Layout]."""
    read_model(v)
    layout = call("Layout", fn=Layout, **_layout_kwargs(v))
    peak = call("peak_memory", Code("arch"), Code("layout"), fn=peak_memory, **_options(v))
    totals = ("allocated_bytes", "reserved_bytes", "nvidia_smi_bytes")
    prints = [("total", "peak.memory.total"), *((k, f"peak.{k}") for k in totals)]
    return snippet([f"arch = {model_code(v)}", f"layout = {layout}", f"peak = {peak}"], prints)


CALCULATOR = Calculator(
    name="training-memory",
    title="Training memory per GPU",
    description="Model states, activations and every named overhead on the most loaded GPU of a "
    "data/tensor/pipeline/context/expert-parallel layout, with ZeRO, recomputation and offload: allocated, "
    "reserved and what nvidia-smi would show.",
    fields=(
        *model_fields("llama3-8b"),
        degree("dp", "8"),
        degree("tp", "1", "divides the heads and KV heads"),
        degree("pp", "1", "divides the layers"),
        degree("cp", "1"),
        degree("ep", "1", "MoE only; divides dp × cp"),
        zero_field(_STACK_KNOBS["zero_stage"]),
        micro_batch_field(),
        Field(
            "global_batch",
            "Global batch (sequences)",
            "",
            kind="number",
            help="blank: at least pp micro-batches per step",
        ),
        seq_len_field("4096"),
        *stack_fields(_STACK_KNOBS["recompute"], _STACK_KNOBS),
        checkbox("flash_attention", "FlashAttention", _STACK_KNOBS["flash_attention"]),
        checkbox("sequence_parallel", "Sequence parallelism"),
        checkbox("dropout", "Dropout", _STACK_KNOBS["dropout"]),
        select(
            "implementation",
            "Activations saved by",
            "megatron",
            (
                ("megatron", "Megatron-LM fused kernels"),
                ("hf-eager", "Hugging Face, eager attention"),
                ("hf-sdpa", "Hugging Face, SDPA"),
            ),
            help="Hugging Face: tp, cp 1, no sequence parallelism, recompute none or full",
        ),
        Field("interleave", "Interleaved chunks per stage", "1", kind="number"),
        convention_field(),
        select(
            "shard",
            "ZeRO shard of the busiest rank",
            _STACK_KNOBS["shard"],
            (
                ("even", "Even split (ZeRO paper)"),
                ("fsdp2", "FSDP2: dim-0 chunks, padded"),
                ("whole-tensor", "Whole tensors"),
            ),
            help="even is the ZeRO paper's lower bound; whole tensors as ZeroRedundancyOptimizer keeps them",
        ),
        checkbox("distributed_optimizer", "Megatron distributed optimizer"),
        checkbox("offload_optimizer", "Offload optimizer to CPU"),
        checkbox("offload_params", "Offload weights to CPU (ZeRO-3)"),
        select(
            "optimizer",
            "Optimizer implementation",
            "foreach",
            (("foreach", "PyTorch foreach (default)"), ("fused", "Fused (fused=True, apex, TE)")),
        ),
        checkbox("expandable_segments", "expandable_segments allocator"),
        select(
            "moe_routing",
            "MoE routing (MoE models)",
            "balanced",
            (
                ("balanced", "Balanced"),
                ("dropless", "Worst case, dropless"),
                ("capacity-1.25", "Worst case, capacity factor 1.25"),
                ("capacity-2", "Worst case, capacity factor 2"),
            ),
        ),
        select(
            "low_precision",
            "Low-precision GEMMs",
            "none",
            (
                ("none", "None (bf16 GEMMs)"),
                *((r.name, _short_recipe(r.label)) for r in LOW_PRECISION_RECIPES.values()),
            ),
            help="the quantized weight copies and their bytes per parameter are in the results",
        ),
        *gpu_fields(),
        unit_field(),
    ),
    compute=_compute,
    python=_python,
)
"""The training-memory calculator."""
