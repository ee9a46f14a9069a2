"""What the engine predicts for each measured configuration (pure Python: no torch needed).

``make test`` imports this to check that today's engine still predicts the committed measurements in
``validation/results.json``; ``make validate`` uses it after re-measuring.

The implementation profiles model CUDA. The measurements here run on CPU, where PyTorch's kernels save
a few tensors differently ([`CPU_DIFFERENCES`][calc.memory.activation_profiles.CPU_DIFFERENCES]: dropout masks,
LayerNorm statistics, flash's RNG scalars, and SDPA with dropout, which runs the math kernel on CPU); the CPU
deltas add those documented differences back, term by term, so the comparison is still exact.
"""

from __future__ import annotations

from typing import Any

from calc.memory.activations import LayerActivations, layer_activations
from calc.memory.layout import Layout, layout_memory
from calc.memory.model_state import CONVENTIONS
from calc.models.architecture import Architecture
from validation.configs import MODELS

__all__ = ["CATEGORIES", "TOLERANCE", "predict"]

TOLERANCE: dict[str, float] = {
    "activations-layer": 0.0,
    "activations-model": 0.0,
    "reference-layer": 0.0,
    "model-state": 0.0,
    "fsdp2": 0.0,
    "zero1": 0.02,
}
"""Largest relative error allowed per category: 0 where the implementation is deterministic (exact to
the byte); 2% for ZeroRedundancyOptimizer, which assigns whole tensors to ranks where the engine splits
evenly (the even split is a lower bound for the busiest rank)."""

CATEGORIES: dict[str, str] = {
    "activations-layer": "Saved for backward, one decoder layer (transformers, bf16)",
    "activations-model": "Saved for backward, whole model with loss (transformers, bf16)",
    "reference-layer": "Saved for backward, Megatron-style reference layer (bf16)",
    "model-state": "Model states after a real optimizer step",
    "fsdp2": "Per-rank model states, FSDP2 fully_shard (gloo)",
    "zero1": "Per-rank model states, ZeroRedundancyOptimizer (gloo)",
}
"""What each category measures."""


def _arch(model: str) -> Architecture:
    return Architecture.from_hf_config(dict(MODELS[model]), name=model)


def _has_dropout(model: str) -> bool:
    cfg = MODELS[model]
    return any(cfg.get(k, 0) for k in ("resid_pdrop", "embd_pdrop", "attn_pdrop", "attention_dropout"))


def _layer(arch: Architecture, case: dict, implementation: str, flash: bool = False) -> LayerActivations:
    moe = arch.is_moe_layer(1)
    return layer_activations(
        case["seq_len"],
        case["micro_batch"],
        arch.hidden_size,
        arch.num_heads,
        kv_heads=arch.num_kv_heads,
        head_dim=arch.head_dim,
        v_head_dim=arch.v_head_dim,
        ffn_hidden=arch.moe_intermediate_size if moe else arch.intermediate_size,
        mlp=arch.mlp,
        dropout=_has_dropout(case["model"]),
        norm=arch.norm,
        experts_per_token=arch.experts_per_token if moe else 0,
        shared_experts=arch.num_shared_experts if moe else 0,
        implementation=implementation,
        flash_attention=flash,
        qk_norm=arch.qk_norm,
        num_experts=arch.num_experts if moe else 0,
        router_weight_bytes=2 if arch.model_type == "qwen3_moe" else 4,
    )


def _cpu_delta_layer(layer: LayerActivations, norm: str) -> int:
    """CPU minus CUDA for one layer: dropout masks 2 B not 1, LayerNorm statistics 2 B not 4, no RNG scalars."""
    masks = layer.softmax_dropout_mask + layer.attention_dropout_mask + layer.mlp_dropout_mask
    stats = layer.norm_stats // 2 if norm == "layernorm" else 0
    return masks - stats - layer.rng_state


def _cpu_sdpa_math(layer: LayerActivations, arch: Architecture, case: dict) -> int:
    """CPU minus CUDA for one layer under SDPA with dropout (``CPU_DIFFERENCES["sdpa_dropout_math"]``).

    PyTorch's CPU flash kernel takes no dropout (``aten/src/ATen/native/transformers/sdp_utils_cpp.cpp``,
    ``use_flash_attention_cpp`` checks ``check_for_dropout``), so SDPA falls back to
    ``_scaled_dot_product_attention_math`` (``attention.cpp``): it upcasts bf16 Q, K and V to fp32, expands K and V
    to all heads (``enable_gqa``), and its two matmuls, softmax and dropout (``input * mask / (1 - p)``) save the
    scaled fp32 Q and K, the fp32 V, the fp32 softmax output, the fp32 scaled mask and the fp32 dropped
    probabilities. Flash's bf16 Q, K, V and log-sum-exp are not saved then (its RNG scalars are already left out).
    Measured exact on GPT-2 and Llama, eager and SDPA, s 64-1,024, b 1-4 (``validation/sample.json``).
    """
    s, b, a = case["seq_len"], case["micro_batch"], arch.num_heads
    tokens = s * b
    math = 4 * tokens * a * (2 * arch.head_dim + arch.v_head_dim) + 3 * 4 * a * s * s * b
    return math - (layer.query_key + layer.value + layer.flash_stats)


def _activations(case: dict) -> list[dict[str, Any]]:
    arch = _arch(case["model"])
    impl = f"hf-{case['attn']}"
    dropout = _has_dropout(case["model"])
    layer = _layer(arch, case, impl)
    layer_delta = _cpu_delta_layer(layer, arch.norm)
    if dropout and case["attn"] == "sdpa":
        layer_delta += _cpu_sdpa_math(layer, arch, case)
    layout = Layout(seq_len=case["seq_len"], micro_batch=case["micro_batch"], dropout=dropout, implementation=impl)
    model = layout_memory(arch, layout).saved_activations
    tokens = case["seq_len"] * case["micro_batch"]
    model_delta = arch.num_layers * layer_delta
    model_delta += tokens * arch.hidden_size if dropout and arch.norm == "layernorm" else 0  # GPT-2's embd_pdrop
    model_delta -= 4 * tokens if arch.norm == "layernorm" else 0  # the final LayerNorm's statistics
    flash = case["attn"] == "sdpa"
    megatron_layout = Layout(
        seq_len=case["seq_len"], micro_batch=case["micro_batch"], dropout=dropout, flash_attention=flash
    )
    name = f"{case['model']} {case['attn']} s={case['seq_len']} b={case['micro_batch']}"
    inputs = {**case, "implementation": impl}
    return [
        dict(
            category="activations-layer",
            name=name,
            inputs=inputs,
            predicted=layer.total + layer_delta,
            cuda_predicted=layer.total,
            megatron=_layer(arch, case, "megatron", flash).total,
        ),
        dict(
            category="activations-model",
            name=name,
            inputs=inputs,
            predicted=model + model_delta,
            cuda_predicted=model,
            megatron=layout_memory(arch, megatron_layout).saved_activations,
        ),
    ]


def _reference(case: dict) -> dict[str, Any]:
    norm = "rmsnorm" if case["mlp"] == "swiglu" else "layernorm"
    dims = {k: case[k] for k in ("seq_len", "micro_batch", "hidden", "heads")}
    layer = layer_activations(
        **dims, kv_heads=case["kv_heads"], ffn_hidden=case["ffn_hidden"], mlp=case["mlp"], dropout=False, norm=norm
    )
    name = f"{case['mlp']} h={case['hidden']} a={case['heads']} g={case['kv_heads']} s={case['seq_len']}"
    return dict(category="reference-layer", name=name, inputs=case, predicted=layer.total)


def _state(case: dict) -> dict[str, Any]:
    arch = _arch(case["model"])
    conv = CONVENTIONS[case["convention"]]
    n = arch.param_count
    parts = {k: n * getattr(conv, k) for k in ("weights", "gradients", "master", "momentum", "variance")}
    return dict(
        category="model-state",
        name=f"{case['model']} {case['convention']}",
        inputs=case,
        predicted=sum(parts.values()),
        predicted_parts=parts,
    )


def _sharding(case: dict) -> dict[str, Any]:
    arch = _arch(case["model"])
    zero = 3 if case["strategy"].startswith("fsdp2") else 1
    m = layout_memory(arch, Layout(dp=case["world"], zero_stage=zero, convention=case["convention"], seq_len=32))
    parts = {k: getattr(m, k) for k in ("weights", "gradients", "master", "momentum", "variance")}
    return dict(
        category="zero1" if case["strategy"] == "zero1" else "fsdp2",
        name=f"{case['model']} {case['strategy']} world={case['world']}",
        inputs=case,
        predicted=sum(parts.values()),
        predicted_parts=parts,
    )


def predict() -> list[dict[str, Any]]:
    """Every configuration the harness measures, with the engine's prediction, in the harness's order."""
    from validation.configs import ACTIVATION_CASES, REFERENCE_LAYERS, SHARDING_CASES, STATE_CASES

    rows: list[dict[str, Any]] = []
    for case in ACTIVATION_CASES:
        rows.extend(_activations(case))
    rows.extend(_reference(c) for c in REFERENCE_LAYERS)
    rows.extend(_state(c) for c in STATE_CASES)
    rows.extend(_sharding(c) for c in SHARDING_CASES)
    return rows
