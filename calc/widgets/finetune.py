"""The fine-tuning memory calculator: one GPU fine-tuning a dense model fully, with LoRA or with QLoRA.

Model state from [`finetune_memory`][calc.memory.finetune.finetune_memory] (Hu et al. 2021, "LoRA", Sec. 4.1;
Dettmers et al. 2023, "QLoRA", Sec. 3), activations and logits from
[`layout_memory`][calc.memory.layout.layout_memory] (Korthikanti et al. 2022, Table 2) for one GPU with FlashAttention
and no dropout: a frozen layer still saves its inputs so the gradient reaches the adapters below it, so the
activations are those of full fine-tuning. Plus the CUDA context
([`CUDA_CONTEXT_BYTES`][calc.memory.overheads.CUDA_CONTEXT_BYTES]). Not counted: the adapters' own ``r``-wide
intermediates, QLoRA's momentary dequantized bf16 copy of one layer, paged optimizers, the caching
allocator's reserve and fragmentation, and any sharding (one GPU, one replica).

Examples:
    >>> from calc.widgets import render
    >>> reply = render("finetune-memory", {"method": "qlora", "preset": "llama3-70b", "recompute": "full"})
    >>> reply["ok"], 'data-ok="yes"' in reply["html"], 'data-output="frozen_nf4"' in reply["html"]
    (True, True, True)
    >>> 'data-ok="no"' in render("finetune-memory", {"method": "qlora", "preset": "llama3-70b"})["html"]
    True
    >>> render("finetune-memory", {"rank": "0"})["error"]["field"]
    'rank'
"""

from __future__ import annotations

from calc.errors import CalcError
from calc.memory.finetune import FINETUNE_METHODS, LORA_TARGETS, finetune_memory
from calc.memory.layout import Layout, layout_memory
from calc.memory.model_state import CONVENTIONS
from calc.memory.overheads import CUDA_CONTEXT_BYTES
from calc.units import parse_positive_int
from calc.widgets import Calculator, Field
from calc.widgets._html import (
    GPU_FIELD_OPTIONS,
    UNIT_FIELD_OPTIONS,
    byte_formatter,
    formulas,
    gpu_memory,
    memory_chart,
    out,
    table,
    verdict,
)
from calc.widgets._model import model_fields, read_model

__all__ = ["CALCULATOR"]

_METHODS = {
    "full": "Full fine-tuning (every parameter trained)",
    "lora": "LoRA (frozen bf16 base + adapters)",
    "qlora": "QLoRA (frozen NF4 base + adapters)",
}
_TARGETS = {
    "all-linear": "All linear layers of each block (QLoRA's choice)",
    "attention": "Attention projections q, k, v, o",
    "qv": "q and v only (LoRA paper)",
}
_RECOMPUTE = {
    "selective": "Selective (FlashAttention keeps no scores)",
    "none": "None",
    "full": "Full (each layer's input only)",
}
_ADAPTERS = "Adapters"
_MAX_RANK = 1 << 16
_SOURCE = (
    "Hu et al. 2021 (LoRA), Sec. 4.1: r(d_in + d_out) per adapted matrix; Dettmers et al. 2023 (QLoRA), Sec. 3: "
    "NF4 in blocks of 64, double-quantized constants; Korthikanti et al. 2022, Table 2: activations"
)
assert tuple(_METHODS) == FINETUNE_METHODS and set(_TARGETS) == set(LORA_TARGETS)


def _compute(v: dict[str, str]) -> str:
    choice = read_model(v)
    assert choice is not None  # no "custom" choice offered
    method, targets, recompute = v["method"], v["targets"], v["recompute"]
    if recompute not in _RECOMPUTE:
        raise CalcError("recompute", f"must be one of {', '.join(_RECOMPUTE)}", recompute, code="unknown-name")
    rank = parse_positive_int(v["rank"], "rank", maximum=_MAX_RANK)
    seq = parse_positive_int(v["seq_len"], "seq_len", maximum=1 << 24)
    micro = parse_positive_int(v["micro_batch"], "micro_batch", maximum=1 << 16)
    fmt = byte_formatter(v["unit"])
    memory, gpu_label = gpu_memory(v)
    arch = choice.arch
    try:
        state = finetune_memory(arch, method, rank=rank, targets=targets)
    except CalcError as err:
        if err.field != "model":
            raise
        # The reader chose the model in the preset menu or the pasted config: name that field.
        raise CalcError(choice.source, err.rule, choice.label, code=err.code) from None
    lay = layout_memory(
        arch, Layout(seq_len=seq, micro_batch=micro, flash_attention=True, dropout=False, recompute=recompute)
    )
    nf4 = state.frozen_nf4
    per_param = CONVENTIONS["mixed-adam-16"].bytes_per_param
    parts = [
        ("frozen_bf16", "Frozen base, bf16", state.frozen_bf16_bytes, f"2 B × {state.frozen_bf16_bytes // 2:,}"),
        (
            "frozen_nf4",
            "Frozen base, NF4 (values + constants)",
            nf4.total if nf4 else 0,
            (
                f"½ B × {nf4.params:,} + absmax {nf4.absmax_bytes:,} B + second level {nf4.second_level_bytes:,} B"
                if nf4
                else "no NF4 base"
            ),
        ),
        (
            "trained",
            "Trained: weights, gradients, Adam",
            state.trainable_bytes,
            f"{per_param} B × {state.trainable_params:,} trained parameters",
        ),
        ("activations", "Activations", lay.activations, f"{arch.num_layers} layers at s = {seq:,}, b = {micro}"),
        ("logits", "Logits (output layer)", lay.logits, "final-norm input, output-projection input, fp32 logits"),
        ("cuda_context", "CUDA context", CUDA_CONTEXT_BYTES, "CUDA runtime and kernels, calc.memory.overheads"),
    ]
    parts = [p for p in parts if p[2] > 0]  # full fine-tuning has no frozen base, LoRA no NF4 part
    total = sum(n for _, _, n, _ in parts)
    fits = total <= memory
    head = f"{choice.label}, {_METHODS[method].split(' (')[0]}" + (f", r = {rank}" if method != "full" else "")
    if fits:
        line = f"Fits: {fmt(total)} of {fmt(memory)} on the {gpu_label} ({head}), {fmt(memory - total)} left."
    else:
        line = (
            f"Does not fit: {head} needs {fmt(total)}, over the {gpu_label} ({fmt(memory)}) by {fmt(total - memory)}."
        )
    rows = [(label, out(key, fmt(n))) for key, label, n, _ in parts]
    rows.append(("<strong>Total per GPU</strong>", out("total", fmt(total), "strong")))
    lines = [(label, f"{math} = {fmt(n)}") for _, label, n, math in parts]
    share = state.trainable_params / state.base_params
    room = fmt(memory - total) if fits else f"none (short by {fmt(total - memory)})"
    return (
        verdict(fits, line)
        + memory_chart([(label, n) for _, label, n, _ in parts], memory, gpu_label, v["unit"])
        + table(("Component", "Per GPU"), rows, raw_cells=True)
        + formulas(lines, _SOURCE)
        + f'<p class="lc-kv"><span>Trained parameters</span> '
        f"{out('trainable_params', f'{state.trainable_params:,}', value=state.trainable_params)} of "
        f"{out('base_params', f'{state.base_params:,}', value=state.base_params)} "
        f"({out('trainable_share', f'{share:.3%}', value=share)})</p>"
        + f'<p class="lc-kv"><span>GPU memory</span> {out("gpu_memory_bytes", fmt(memory))}</p>'
        + f'<p class="lc-kv"><span>Headroom</span> {out("headroom", room, value=memory - total, unit="B")}</p>'
        + '<p class="lc-note"><a class="lc-calc__not-counted" data-site-href="accuracy/#not-modelled">Not counted</a>'
        ": the adapters' r-wide intermediates, QLoRA's momentary bf16 copy of "
        "one layer, paged optimizers, the allocator's reserve and fragmentation, NCCL buffers; one GPU, nothing "
        "sharded.</p>"
    )


_PRESET, _CONFIG = model_fields("llama2-7b")

CALCULATOR = Calculator(
    name="finetune-memory",
    title="Fine-tuning memory",
    description="Per-GPU memory of full fine-tuning, LoRA or QLoRA on one GPU: frozen base, adapters, activations.",
    fields=(
        _PRESET,
        _CONFIG,
        Field("method", "Method", "lora", kind="select", options=tuple(_METHODS.items()), group=_ADAPTERS),
        Field("rank", "LoRA rank r", "16", kind="number", help="ignored by full fine-tuning", group=_ADAPTERS),
        Field(
            "targets", "Adapted layers", "all-linear", kind="select", options=tuple(_TARGETS.items()), group=_ADAPTERS
        ),
        Field("seq_len", "Sequence length", "4096", kind="number"),
        Field("micro_batch", "Micro-batch (sequences)", "1", kind="number"),
        Field("recompute", "Activation recomputation", "selective", kind="select", options=tuple(_RECOMPUTE.items())),
        Field("gpu", "GPU", "h100-sxm", kind="select", options=GPU_FIELD_OPTIONS),
        Field("gpu_memory", "GPU memory (custom)", "80", kind="number", enabled_when=("gpu", "custom")),
        Field("unit", "Units", "GB", kind="select", options=UNIT_FIELD_OPTIONS),
    ),
    compute=_compute,
)
"""The fine-tuning memory calculator."""
