"""llm-analysis on the harness's configurations: the engine's reproduction, and a check against the real package.

``activation_inputs`` and ``state_inputs`` say how each measured configuration is put to llm-analysis
(pure Python: the accuracy page's side-by-side uses them). ``check`` (run by ``python -m validation.llm_analysis``
in the validation venv, where ``llm-analysis==0.2.2`` is pinned) builds llm-analysis's own ``LLMAnalysis``
for each configuration and asserts that [`calc.peers.estimators`][calc.peers.estimators] gives the same bytes.
"""

from __future__ import annotations

from typing import Any

from calc.models.architecture import Architecture
from calc.peers.estimators import (
    llm_analysis_activation_bytes,
    llm_analysis_model_state_bytes,
)
from validation.configs import ACTIVATION_CASES, MODELS, SHARDING_CASES

__all__ = ["activation_inputs", "check", "predict_activations", "predict_states", "state_inputs"]

_ZERO = {"fsdp2": 3, "fsdp2-mp": 3, "zero1": 1}


def _arch(model: str) -> Architecture:
    return Architecture.from_hf_config(dict(MODELS[model]), name=model)


def _shape(arch: Architecture) -> dict[str, int]:
    moe = arch.num_experts > 0
    return dict(
        hidden=arch.hidden_size,
        heads=arch.num_heads,
        ffn_hidden=arch.moe_intermediate_size if moe else arch.intermediate_size,
        num_layers=arch.num_layers,
        vocab_size=arch.vocab_size,
    )


def activation_inputs(case: dict) -> dict[str, Any]:
    """llm-analysis's inputs for one ``ACTIVATION_CASES`` entry.

    ``attn="sdpa"`` is llm-analysis's ``flash_attn=True`` (its only fused-attention switch), ``"eager"`` is
    ``flash_attn=False``; attention dropout in the config is its ``softmax_dropout``; MoE models give
    ``moe_num_experts`` and ``moe_top_k``; everything else is its default (bf16 activations, fp32 layer norms,
    no recompute, tp = 1).
    """
    arch = _arch(case["model"])
    cfg = MODELS[case["model"]]
    moe = arch.num_experts > 0
    return dict(
        seq_len=case["seq_len"],
        micro_batch=case["micro_batch"],
        **_shape(arch),
        flash_attention=case["attn"] == "sdpa",
        softmax_dropout=bool(cfg.get("attn_pdrop", 0) or cfg.get("attention_dropout", 0)),
        gated=arch.mlp == "swiglu",
        experts=arch.num_experts if moe else 1,
        top_k=arch.experts_per_token if moe else 1,
    )


def predict_activations(case: dict) -> int:
    """The engine's reproduction of llm-analysis's ``activation_memory_per_gpu`` for one case."""
    return llm_analysis_activation_bytes(**activation_inputs(case))


def state_inputs(case: dict) -> dict[str, Any]:
    """llm-analysis's inputs for one ``SHARDING_CASES`` entry: FSDP2 is ZeRO-3, ZeroRedundancyOptimizer ZeRO-1,
    dp = world; its default dtypes (16-bit weights, fp32 gradients, Adam with fp32 master weights)."""
    arch = _arch(case["model"])
    shape = _shape(arch)
    shape.pop("num_layers")
    return dict(
        **shape,
        num_layers=arch.num_layers,
        kv_heads=arch.num_kv_heads,
        dp=case["world"],
        zero_stage=_ZERO[case["strategy"]],
    )


def predict_states(case: dict) -> int:
    """The engine's reproduction of llm-analysis's ``weight_grad_op_state_memory_per_gpu`` for one case."""
    return llm_analysis_model_state_bytes(**state_inputs(case)).total


def _package(inputs: dict[str, Any], *, tp: int = 1, dp: int = 1, kv_heads: int | None = None) -> Any:
    from llm_analysis.analysis import LLMAnalysis
    from llm_analysis.config import GPUConfig, ModelConfig, ParallelismConfig

    model = ModelConfig(
        name="harness",
        num_layers=inputs["num_layers"],
        n_head=inputs["heads"],
        hidden_dim=inputs["hidden"],
        vocab_size=inputs["vocab_size"],
        num_key_value_heads=kv_heads,
        # 0.2.2 asserts ffn_embed_dim % hidden_dim == 0; through expansion_ratio it takes any width.
        expansion_ratio=inputs["ffn_hidden"] / inputs["hidden"],
        moe_num_experts=inputs.get("experts", 1),
        moe_top_k=inputs.get("top_k", 1),
    )
    gpu = GPUConfig("any", 80, 2000, 300, 1e-6, 300)
    parallel = ParallelismConfig(tp_size=tp, dp_size=dp)
    return LLMAnalysis(model, gpu, parallelism_config=parallel, flops_efficiency=0.5)  # 0.5: no warning


def check() -> list[str]:
    """Compare the engine's reproduction with llm-analysis itself on every harness configuration."""
    from llm_analysis.analysis import ActivationRecomputation, DSZeRO

    lines = []
    for case in ACTIVATION_CASES:
        inp = activation_inputs(case)
        la = _package(inp)
        per_layer = la.get_activation_memory_per_layer(
            inp["micro_batch"],
            inp["seq_len"],
            is_inference=False,
            activation_recomputation=ActivationRecomputation.NONE,
            flash_attn=inp["flash_attention"],
            softmax_dropout=inp["softmax_dropout"],
            mlp_gated_linear_units=inp["gated"],
        )
        # LLMAnalysis.training's activation_memory_per_gpu: all layers + logits + the final layer norm
        real = inp["num_layers"] * per_layer
        real += la.get_activation_memory_output_embedding(inp["micro_batch"], inp["seq_len"])
        real += la.get_activation_memory_per_layernorm(inp["micro_batch"], inp["seq_len"])
        ours = predict_activations(case)
        ok = ours == int(real)
        lines.append(f"{'ok ' if ok else 'BAD'} activations {case}: llm-analysis {real!r}, engine {ours}")
    for case in SHARDING_CASES:
        inp = state_inputs(case)
        la = _package(inp, dp=inp["dp"], kv_heads=inp["kv_heads"])
        zero = DSZeRO(inp["zero_stage"])
        L = inp["num_layers"]
        w = L * la.get_weight_memory_per_layer(zero) + la.get_memory_embedding(zero)
        w += la.get_weight_memory_last_layernorm(zero)
        parts = [
            la.get_memory_optimizer_state_and_gradient_per_layer(ds_zero=zero),
            la.get_memory_optimizer_state_and_gradient_embedding(ds_zero=zero),
            la.get_memory_optimizer_state_and_gradient_last_layernorm(ds_zero=zero),
        ]
        opt = L * parts[0][0] + parts[1][0] + parts[2][0]
        grad = L * parts[0][1] + parts[1][1] + parts[2][1]
        st = llm_analysis_model_state_bytes(**inp)
        ok = (st.weights, st.gradients, st.optimizer_states) == (int(w), int(grad), int(opt))
        lines.append(f"{'ok ' if ok else 'BAD'} states {case}: llm-analysis {w + grad + opt!r}, engine {st.total}")
    return lines


if __name__ == "__main__":
    out = check()
    print("\n".join(out))
    bad = [line for line in out if line.startswith("BAD")]
    print(f"llm-analysis: {len(out) - len(bad)}/{len(out)} configurations reproduced exactly")
    raise SystemExit(1 if bad else 0)
