"""The fine-tuning memory calculator: one GPU fine-tuning a model fully, with LoRA or with QLoRA.

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
    >>> render("finetune-memory", {"preset": "deepseek-v3", "method": "qlora"})["ok"]  # MoE and latent attention
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
from calc.widgets._code import Code, call, model_code, snippet
from calc.widgets._fields import (
    gpu_fields,
    micro_batch_field,
    one_of,
    recompute_field,
    select,
    seq_len_field,
    unit_field,
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
from calc.widgets._model import model_chip, model_fields, read_model
from calc.widgets._parts import NOT_COUNTED, gpu_memory_line, headroom, kv

__all__ = ["CALCULATOR"]

_METHODS = {
    "full": "Full fine-tuning",
    "lora": "LoRA (bf16 base)",
    "qlora": "QLoRA (NF4 base)",
}
_METHODS_HELP = "full trains every parameter; LoRA and QLoRA train adapters on a frozen bf16 or NF4 base"
_TARGETS = {
    "all-linear": "All linear layers",
    "attention": "Attention q, k, v, o",
    "qv": "q and v only (LoRA paper)",
}
_TARGETS_HELP = (
    "of each block; all linear is QLoRA's choice; MLA adapts q_a, q_b, kv_a, kv_b, o (attention) or q_b, kv_b (q and v)"
)
_RECOMPUTE = {
    "selective": "Selective",
    "none": "None",
    "full": "Full",
}
_RECOMPUTE_HELP = "selective: FlashAttention keeps no scores; full: each layer's input only"
_ADAPTERS = "Adapters"
_ONE_GPU = {"flash_attention": True, "dropout": False}
"""The activation settings of the module docstring: FlashAttention, no dropout."""
_MAX_RANK = 1 << 16
_SOURCE = (
    "Hu et al. 2021 (LoRA), Sec. 4.1: r(d_in + d_out) per adapted matrix; Dettmers et al. 2023 (QLoRA), Sec. 3: "
    "NF4 in blocks of 64, double-quantized constants; Korthikanti et al. 2022, Table 2: activations"
)
assert tuple(_METHODS) == FINETUNE_METHODS and set(_TARGETS) == set(LORA_TARGETS)


def _state(choice, v: dict[str, str], rank: int):
    """The fine-tuned model state, an unsupported model blamed on the field that chose it."""
    try:
        return finetune_memory(choice.arch, v["method"], rank=rank, targets=v["targets"])
    except CalcError as err:
        if err.field != "model":
            raise
        # The reader chose the model in the preset menu or the pasted config: name that field.
        raise CalcError(choice.source, err.rule, choice.label, code=err.code) from None


def _parts(arch, state, lay, seq: int, micro: int) -> list[tuple[str, str, int, str]]:
    """``(output, label, bytes, formula)`` of each non-zero part of the GPU's memory."""
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
    return [p for p in parts if p[2] > 0]  # full fine-tuning has no frozen base, LoRA no NF4 part


def _verdict_line(head: str, total: int, memory: int, gpu_label: str, fmt) -> str:
    if total <= memory:
        where = on_the_gpu(gpu_label, memory, fmt)
        return f"Fits: {fmt(total)} of {fmt(memory)} on {where} ({head}), {fmt(memory - total)} left."
    return (
        f"Does not fit: {head} needs {fmt(total)}, over {gpu_named(gpu_label, memory, fmt)} by {fmt(total - memory)}."
    )


def _engine(choice, v: dict[str, str], states: dict | None = None):
    """The fine-tuned state, the rank and the parts of the GPU's memory for the values ``v``; ``states`` keeps
    each state computed by method, rank and targets (QLoRA's NF4 blocks of a large MoE take tens of ms)."""
    recompute = one_of(v, "recompute", _RECOMPUTE)
    rank = parse_positive_int(v["rank"], "rank", maximum=_MAX_RANK)
    seq = parse_positive_int(v["seq_len"], "seq_len", maximum=1 << 24)
    micro = parse_positive_int(v["micro_batch"], "micro_batch", maximum=1 << 16)
    states = {} if states is None else states
    key = (v["method"], rank, v["targets"])
    state = states[key] if key in states else states.setdefault(key, _state(choice, v, rank))
    layout = Layout(seq_len=seq, micro_batch=micro, recompute=recompute, **_ONE_GPU)
    return state, rank, _parts(choice.arch, state, layout_memory(choice.arch, layout), seq, micro)


def _fixes(choice, v: dict[str, str], states: dict, parts, memory: int, fmt) -> str:
    """A "Does not fit"'s diagnosis (issue 19); its module loads only when the answer does not fit."""
    if sum(n for _, _, n, _ in parts) <= memory:
        return ""
    from calc.widgets._fit_fixes import finetune_fixes

    def total(w: dict[str, str]) -> int:
        return sum(n for _, _, n, _ in _engine(choice, w, states)[2])

    return finetune_fixes(v, CALCULATOR.defaults, parts, memory, fmt, total)


def _compute(v: dict[str, str]) -> str:
    choice = read_model(v)
    method = v["method"]
    states: dict = {}
    state, rank, parts = _engine(choice, v, states)
    fmt = byte_formatter(v["unit"])
    memory, gpu_label = gpu_memory(v)
    total = sum(n for _, _, n, _ in parts)
    head = f"{choice.label}, {_METHODS[method].split(' (')[0]}" + (f", r = {rank}" if method != "full" else "")
    rows = [(label, out(key, fmt(n))) for key, label, n, _ in parts]
    rows.append(("<strong>Total per GPU</strong>", out("total", fmt(total), "strong")))
    share = state.trainable_params / state.base_params
    trained = (
        f"{out('trainable_params', f'{state.trainable_params:,}', value=state.trainable_params)} of "
        f"{out('base_params', f'{state.base_params:,}', value=state.base_params)} "
        f"({out('trainable_share', f'{share:.3%}', value=share)})"
    )
    return (
        verdict(
            total <= memory,
            _verdict_line(head, total, memory, gpu_label, fmt),
            short=fit_short(total, memory, fmt),
        )
        + _fixes(choice, v, states, parts, memory, fmt)
        + model_chip(choice)
        + memory_chart([(label, n) for _, label, n, _ in parts], memory, gpu_label, v["unit"])
        + table(("Component", "Per GPU"), rows, raw_cells=True)
        + formulas([(label, f"{math} = {fmt(n)}") for _, label, n, math in parts], _SOURCE)
        + kv("Trained parameters", trained)
        + gpu_memory_line(memory, fmt)
        + kv("Headroom", headroom(memory, total, fmt))
        + '<p class="lc-note">'
        + NOT_COUNTED.format("Not counted")
        + ": the adapters' r-wide intermediates, QLoRA's momentary bf16 copy of "
        "one layer, paged optimizers, the allocator's reserve and fragmentation, NCCL buffers; one GPU, nothing "
        "sharded.</p>"
    )


def _python(v: dict[str, str]) -> str:
    """[`finetune_memory`][calc.memory.finetune.finetune_memory] and the activations of
    [`layout_memory`][calc.memory.layout.layout_memory] on one GPU."""
    choice = read_model(v)
    rank = parse_positive_int(v["rank"], "rank", maximum=_MAX_RANK)
    seq = parse_positive_int(v["seq_len"], "seq_len", maximum=1 << 24)
    micro = parse_positive_int(v["micro_batch"], "micro_batch", maximum=1 << 16)
    state = _state(choice, v, rank)
    layout = call("Layout", fn=Layout, seq_len=seq, micro_batch=micro, recompute=v["recompute"], **_ONE_GPU)
    body = [
        f"arch = {model_code(v)}",
        "state = "
        + call("finetune_memory", Code("arch"), v["method"], fn=finetune_memory, rank=rank, targets=v["targets"]),
        f"acts = calc.layout_memory(arch, {layout})",
    ]
    prints = [("frozen_bf16", "state.frozen_bf16_bytes")] if state.frozen_bf16_bytes else []
    prints += [("frozen_nf4", "state.frozen_nf4.total")] if state.frozen_nf4 else []
    prints += [("trained", "state.trainable_bytes"), ("activations", "acts.activations"), ("logits", "acts.logits")]
    return snippet(
        body, [*prints, ("trainable_params", "state.trainable_params"), ("base_params", "state.base_params")]
    )


CALCULATOR = Calculator(
    name="finetune-memory",
    title="Fine-tuning memory",
    description="Per-GPU memory of full fine-tuning, LoRA or QLoRA on one GPU: frozen base, adapters, activations.",
    fields=(
        *model_fields("llama2-7b"),
        select("method", "Method", "lora", tuple(_METHODS.items()), help=_METHODS_HELP, group=_ADAPTERS),
        Field("rank", "LoRA rank r", "16", kind="number", help="ignored by full fine-tuning", group=_ADAPTERS),
        select("targets", "Adapted layers", "all-linear", tuple(_TARGETS.items()), help=_TARGETS_HELP, group=_ADAPTERS),
        seq_len_field("4096"),
        micro_batch_field(),
        recompute_field("selective", tuple(_RECOMPUTE.items()), "Activation recomputation", help=_RECOMPUTE_HELP),
        *gpu_fields(),
        unit_field(),
    ),
    compute=_compute,
    python=_python,
)
"""The fine-tuning memory calculator."""
