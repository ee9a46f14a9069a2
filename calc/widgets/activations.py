"""The "Activations per layer" calculator: Korthikanti et al.'s Table 2 for the reader's numbers."""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from calc.errors import CalcError
from calc.guide.charts import activations_chart
from calc.memory.activations import IMPLEMENTATIONS, LayerActivations, activation_bytes_per_layer, layer_activations
from calc.memory.layout_rules import check_parallelism
from calc.timing.compute import RECOMPUTE_MODES
from calc.units import parse_positive_int
from calc.widgets import Calculator, Field
from calc.widgets._code import call, snippet
from calc.widgets._fields import checkbox, micro_batch_field, one_of, recompute_field, select, seq_len_field, unit_field
from calc.widgets._html import byte_formatter, checked, out, table, verdict
from calc.widgets._parts import kv

__all__ = ["CALCULATOR"]

_TABLE_2 = (
    ("none", "No parallelism", "sbh(34 + 5as/h)", dict(tp=1)),
    ("tp", "Tensor parallel", "sbh(10 + 24/t + 5as/(ht))", dict()),
    ("tp_sp", "Tensor + sequence parallel", "sbh(34/t + 5as/(ht))", dict(sequence_parallel=True)),
    ("tp_selective", "Tensor parallel + selective recompute", "sbh(10 + 24/t)", dict(recompute="selective")),
    (
        "tp_sp_selective",
        "Tensor + sequence parallel + selective recompute",
        "sbh(34/t)",
        dict(sequence_parallel=True, recompute="selective"),
    ),
    ("full", "Full recompute", "2sbh", dict(recompute="full")),
)
"""The rows of Korthikanti et al. 2022, Table 2: output key, label, formula, arguments."""

_SPLIT, _REPLICATED = "/t", ""
"""What tensor parallelism alone does to a term: divides it, or leaves it whole (the paper's "10sbh")."""

_TERMS = (
    ("norm_inputs", "Norm inputs (2 norms)", "4sbh", _REPLICATED),
    ("qkv_input", "QKV projection input", "2sbh", _REPLICATED),
    ("query_key", "Q and K", "4sbh", _SPLIT),
    ("value", "V", "2sbh", _SPLIT),
    ("softmax_output", "Softmax output", "2as²b", _SPLIT),
    ("softmax_dropout_mask", "Softmax dropout mask", "as²b", _SPLIT),
    ("softmax_dropout_output", "Softmax dropout output", "2as²b", _SPLIT),
    ("flash_stats", "FlashAttention log-sum-exp (fp32)", "4asb", _SPLIT),
    ("out_proj_input", "Output projection input", "2sbh", _SPLIT),
    ("attention_dropout_mask", "Attention dropout mask", "sbh", _REPLICATED),
    ("mlp_input", "MLP input", "2sbh", _REPLICATED),
    ("mlp_hidden", "First MLP linear output (GeLU input)", "8sbh", _SPLIT),
    ("mlp_activation_output", "GeLU output", "8sbh", _SPLIT),
    ("mlp_dropout_mask", "MLP dropout mask", "sbh", _REPLICATED),
    ("layer_input", "Layer input (checkpoint)", "2sbh", _SPLIT),
    ("norm_fp32_inputs", "fp32 norm inputs (unfused RMSNorm)", "8sbh", _SPLIT),
    ("norm_weight_inputs", "Normalized inputs of the norm weights", "4sbh", _SPLIT),
    ("norm_stats", "Norm statistics (fp32 mean, rstd)", "16sb", _SPLIT),
    ("mlp_intermediates", "Unfused gelu_new intermediates", "24sbh", _SPLIT),
    ("rng_state", "SDPA RNG seed and offset (int64)", "16 B", _SPLIT),
)
"""Korthikanti et al. 2022 Sec. 4.1's tensors: field of LayerActivations, label, size before parallelism, and
its divisor under tensor parallelism without sequence parallelism."""


def _read(v: dict[str, str]) -> dict[str, object]:
    """The layer's arguments for [`activation_bytes_per_layer`][calc.memory.activations.activation_bytes_per_layer]."""
    s = parse_positive_int(v["seq_len"], "seq_len", maximum=1 << 24)
    b = parse_positive_int(v["micro_batch"], "micro_batch", maximum=1 << 16)
    h = parse_positive_int(v["hidden"], "hidden", maximum=1 << 20)
    a = parse_positive_int(v["heads"], "heads", maximum=1 << 14)
    t = parse_positive_int(v["tp"], "tp", maximum=1024)
    sp = checked(v["sequence_parallel"])
    check_parallelism(tp=t, hidden=h, seq_len=s, sequence_parallel=sp)
    if h % a:
        raise CalcError("heads", f"must divide the hidden size (hidden={h})", a, code="not-divisible")
    if a % t:
        raise CalcError("tp", f"must divide the attention heads (heads={a})", t, code="not-divisible")
    recompute = one_of(v, "recompute", RECOMPUTE_MODES)
    flash = checked(v["flash_attention"])
    return dict(
        seq_len=s,
        micro_batch=b,
        hidden=h,
        heads=a,
        tp=t,
        sequence_parallel=sp,
        recompute=recompute,
        flash_attention=flash,
    )


def _total_line(total: int, setting: str, fmt) -> str:
    return kv(
        f"Activations per layer per GPU, one micro-batch ({setting})",
        f"{out('total', fmt(total), 'strong')} ({out('total_bytes', f'{total:,} B', value=total, unit='B')})",
    )


def _term_rows(layer: LayerActivations, kw: dict[str, object], fmt) -> list[tuple[str, str, str]]:
    """Each stored tensor: its label, its size with the divisor tensor parallelism applies, its bytes."""
    t, sp, recompute = kw["tp"], kw["sequence_parallel"], kw["recompute"]
    rows = []
    for key, label, size, tp_alone in _TERMS:
        value = getattr(layer, key)
        if not value:
            continue
        divisor = "" if recompute == "full" else "/t" if sp else tp_alone
        rows.append((label, f"{size}{divisor}" if t > 1 else size, out(key, fmt(value))))
    return rows


def _compute(v: dict[str, str]) -> str:
    kw = _read(v)
    impl = one_of({"implementation": v.get("implementation", "megatron")}, "implementation", IMPLEMENTATIONS)
    fmt = byte_formatter(v["unit"])
    if impl != "megatron":  # stock transformers' GPT-2 layer (LayerNorm, gelu_new, dropout)
        return _hf(layer_activations(**kw, implementation=impl), impl, fmt)
    s, b, h, a, t = (kw[k] for k in ("seq_len", "micro_batch", "hidden", "heads", "tp"))
    sp, recompute, flash = kw["sequence_parallel"], kw["recompute"], kw["flash_attention"]
    total = activation_bytes_per_layer(**kw)
    layer = layer_activations(**kw)
    setting = ", ".join(
        x
        for x in (
            f"t = {t}",
            "sequence parallel" if sp else "",
            f"{recompute} recompute" if recompute != "none" else "",
            "FlashAttention" if flash else "",
        )
        if x
    )
    table2 = [
        (label, formula, out(f"row_{key}", fmt(activation_bytes_per_layer(**{**kw, **_PLAIN, **args}))))
        for key, label, formula, args in _TABLE_2
    ]
    ratio = Fraction(5 * a * s, h)
    return (
        verdict(True, f"{fmt(total)} of activations per layer per GPU for one micro-batch ({setting}).")
        + _total_line(total, setting, fmt)
        + kv("5as/h (the attention-score term per sbh)", out("five_as_over_h", f"{float(ratio):.4g}", value=ratio))
        + activations_chart(
            s, b, h, a, tp=t, sequence_parallel=sp, recompute=recompute, flash_attention=flash, unit=v["unit"]
        )
        + table(("Stored tensor (Korthikanti Sec. 4.1)", "Size", "Per GPU"), _term_rows(layer, kw, fmt), raw_cells=True)
        + "<p><small>Korthikanti et al. 2022, Table 2, for these numbers"
        + (" (FlashAttention: the 5as/(ht) term becomes an fp32 log-sum-exp, 4as/(ht)):" if flash else ":")
        + "</small></p>"
        + table(("Configuration", "Bytes per layer", "Per GPU"), table2, raw_cells=True)
    )


_PLAIN = {"sequence_parallel": False, "recompute": "none"}
"""Table 2's rows start from no sequence parallelism and no recomputation; each row sets its own."""


def _hf(layer: LayerActivations, impl: str, fmt: Callable[[int], str]) -> str:
    """The result under a Hugging Face profile: the total and every saved tensor (no Table 2)."""
    rows = [(label, size, out(key, fmt(getattr(layer, key)))) for key, label, size, _ in _TERMS if getattr(layer, key)]
    name = {"hf-eager": "eager attention", "hf-sdpa": "SDPA"}[impl]
    return (
        verdict(True, f"{fmt(layer.total)} of activations per layer per GPU for one micro-batch (GPT-2, {name}).")
        + _total_line(layer.total, f"Hugging Face GPT-2, {name}", fmt)
        + table(("Saved tensor (transformers 5.24, CUDA)", "Size", "Per GPU"), rows, raw_cells=True)
        + "<p><small>Measured to the byte with saved_tensors_hooks (How accurate is this?). Korthikanti et al.'s "
        "Table 2 describes Megatron-LM's fused kernels, not this implementation.</small></p>"
    )


def _python(v: dict[str, str]) -> str:
    """[`activation_bytes_per_layer`][calc.memory.activations.activation_bytes_per_layer] (Table 2), or a Hugging
    Face profile's [`layer_activations`][calc.memory.activations.layer_activations]."""
    kw = _read(v)
    impl = v.get("implementation", "megatron")
    if impl != "megatron":
        layer = call("layer_activations", fn=layer_activations, **kw, implementation=impl)
        return snippet([f"layer = {layer}"], [("total", "layer.total")])
    total = call("activation_bytes_per_layer", fn=activation_bytes_per_layer, **kw)
    return snippet([f"total = {total}"], [("total", "total")])


CALCULATOR = Calculator(
    name="activations",
    title="Activations per layer",
    description="Bytes one GPT transformer layer keeps for the backward pass, per GPU and micro-batch "
    "(Korthikanti et al. 2022, Table 2; 16-bit activations, 1-byte dropout masks).",
    fields=(
        seq_len_field("2048", "Sequence length s"),
        micro_batch_field(label="Micro-batch b"),
        Field("hidden", "Hidden size h", "12288", kind="number"),
        Field("heads", "Attention heads a", "96", kind="number"),
        Field("tp", "Tensor-parallel degree t", "8", kind="number", help="must divide the heads"),
        checkbox("sequence_parallel", "Sequence parallelism"),
        recompute_field(
            "none",
            (("none", "None"), ("selective", "Selective (attention core)"), ("full", "Full (keep layer input)")),
        ),
        checkbox("flash_attention", "FlashAttention"),
        select(
            "implementation",
            "Implementation",
            "megatron",
            (
                ("megatron", "Megatron-LM fused kernels"),
                ("hf-eager", "Hugging Face, eager attention"),
                ("hf-sdpa", "Hugging Face, SDPA"),
            ),
            help="what saves the tensors (Megatron-LM: the paper's); Hugging Face needs t = 1",
        ),
        unit_field(),
    ),
    compute=_compute,
    python=_python,
)
"""The per-layer activations calculator."""
