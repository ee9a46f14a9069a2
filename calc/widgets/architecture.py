"""The "Parameter count" calculator: total and active parameters of a preset or a pasted ``config.json``."""

from __future__ import annotations

from calc.models.architecture import PARAM_KINDS, Architecture
from calc.units import format_count
from calc.widgets import Calculator
from calc.widgets._code import model_code, snippet
from calc.widgets._fields import unit_field
from calc.widgets._html import byte_formatter, out, table, verdict
from calc.widgets._model import model_chip, model_fields, read_model
from calc.widgets._parts import kv

__all__ = ["CALCULATOR"]

_KIND_LABELS = {
    "embedding": "Embedding (tokens + positions)",
    "attention": "Attention projections",
    "mlp_dense": "Dense MLPs",
    "experts_routed": "Routed experts",
    "experts_shared": "Shared experts",
    "router": "Routers",
    "norms": "Norms",
    "lm_head": "Output head (untied)",
}
_BF16_BYTES = 2
_DEEPSEEK_NOTE = (
    "<p><small>Counted as transformers instantiates the model: the multi-token-prediction layer stored in "
    "DeepSeek's checkpoint (num_nextn_predict_layers) and the routers' score-correction biases (held as "
    "buffers) are not parameters here.</small></p>"
)


def _shape(arch: Architecture) -> str:
    """One line describing the shape, for the reader to check the config was read as intended."""
    attn = f"{arch.num_heads} heads" + ("" if arch.uses_mla else f" of {arch.head_dim}")
    if arch.uses_mla:
        attn += f", latent attention (kv rank {arch.kv_lora_rank})"
    elif arch.num_kv_heads != arch.num_heads:
        attn += f", {arch.num_kv_heads} KV heads"
    parts = [f"{arch.num_layers} layers", f"hidden {arch.hidden_size:,}", attn, f"vocab {arch.vocab_size:,}"]
    if arch.is_moe:
        shared = f" + {arch.num_shared_experts} shared" if arch.num_shared_experts else ""
        parts.append(
            f"{arch.num_moe_layers} MoE layers: {arch.num_experts} experts{shared}, "
            f"top-{arch.experts_per_token}, expert FFN {arch.moe_intermediate_size:,}"
        )
    if arch.num_layers > arch.num_moe_layers:
        parts.append(f"FFN {arch.intermediate_size:,} ({arch.mlp})")
    parts.append("tied embeddings" if arch.tied_embeddings else "untied embeddings")
    return "; ".join(parts)


def _share(part: int, whole: int) -> str:
    """A percentage with one decimal; tiny non-zero shares read ``<0.1%`` rather than ``0.0%``."""
    pct = 100 * part / whole
    return "<0.1%" if 0 < pct < 0.05 else f"{pct:.1f}%"


def _kind_rows(arch: Architecture) -> list[tuple[str, str, str, str]]:
    total, active = arch.param_count, arch.active_param_count
    kinds, active_kinds = arch.params_by_kind(), arch.active_params_by_kind()
    rows = [
        (
            _KIND_LABELS[k],
            out(f"params_{k}", f"{kinds[k]:,}", value=kinds[k]),
            out(f"active_{k}", f"{active_kinds[k]:,}", value=active_kinds[k]),
            _share(kinds[k], total),
        )
        for k in PARAM_KINDS
        if kinds[k]
    ]
    rows.append(
        (
            "<strong>Total</strong>",
            out("total_params_exact", f"{total:,}", "strong", value=total),
            out("active_params_exact", f"{active:,}", "strong", value=active),
            "100%",
        )
    )
    return rows


def _active_line(arch: Architecture) -> str:
    total, active = arch.param_count, arch.active_param_count
    count = out("active_params", format_count(active), value=active)
    if arch.is_moe:
        why = (
            f"({_share(active, total)} of the weights: top-{arch.experts_per_token} of "
            f"{arch.num_experts} routed experts, plus everything else, embedding and head included)"
        )
    else:
        why = "(dense: every weight)"
    return kv("Active per token", f"{count} {why}")


def _compute(v: dict[str, str]) -> str:
    choice = read_model(v)
    arch, label = choice.arch, choice.label
    fmt = byte_formatter(v["unit"])
    total, active = arch.param_count, arch.active_param_count
    answer = f"{label}: {format_count(total)} parameters, {fmt(_BF16_BYTES * total)} of weights in bf16"
    if arch.is_moe:
        answer += f" ({format_count(active)} active per token)"
    weights = out("weights_bytes", fmt(_BF16_BYTES * total))
    if arch.is_moe:
        weights += f" (active per token: {out('active_weights_bytes', fmt(_BF16_BYTES * active))})"
    return (
        verdict(True, answer + ".")  # the answer first
        + model_chip(choice)
        + kv("Model", out("model", label))
        + kv("Shape", out("shape", _shape(arch)))
        + kv("Total parameters", out("total_params", format_count(total), "strong", value=total))
        + _active_line(arch)
        + kv("BF16 weights (2 B/param)", weights)
        + table(("Kind", "Parameters", "Active per token", "Share"), _kind_rows(arch), raw_cells=True)
        + (_DEEPSEEK_NOTE if arch.model_type == "deepseek_v3" else "")
    )


def _python(v: dict[str, str]) -> str:
    """The preset or config read by the engine, and its counts (``Architecture.param_count`` and the active ones)."""
    prints = [("total_params", "arch.param_count"), ("active_params", "arch.active_param_count")]
    return snippet([f"arch = {model_code(v)}"], [*prints, ("weights_bytes", "2 * arch.param_count")])


CALCULATOR = Calculator(
    name="parameter-count",
    title="Parameter count",
    description="Exact parameters of a model, total and active per token, by kind: pick a preset or paste a "
    "Hugging Face config.json.",
    fields=(
        *model_fields("llama3-8b"),
        unit_field(),
    ),
    compute=_compute,
    python=_python,
)
"""The parameter-count calculator."""
