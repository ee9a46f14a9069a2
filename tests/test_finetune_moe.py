"""calc.memory.finetune on MoE and latent-attention (MLA) models: exact linear shapes, adapters, NF4, rendering."""

from __future__ import annotations

import dataclasses

import pytest

from calc.memory.finetune import FINETUNE_METHODS, finetune_memory, layer_linears, lora_params
from calc.models.architecture import Architecture
from calc.models.presets import PRESETS, preset
from calc.widgets import render

# h = 16, 3 layers (the first dense, f = 32), GQA 4 heads of 4 with 2 kv heads; 4 routed experts of width 8 and
# 2 shared experts, which HF's DeepseekV3MoE builds as one MLP of width 2 x 8 = 16.
SMALL_MOE = Architecture(
    name="small-moe", model_type="custom", vocab_size=100, hidden_size=16, num_layers=3, num_heads=4,
    num_kv_heads=2, head_dim=4, intermediate_size=32, num_experts=4, experts_per_token=2, num_shared_experts=2,
    moe_intermediate_size=8, first_k_dense=1,
)  # fmt: skip
# h = 16, 2 dense layers (f = 32), 2 heads; q latent 8, kv latent 4, rope 2 + nope 4 per head, values 3 per head.
SMALL_MLA = Architecture(
    name="small-mla", model_type="custom", vocab_size=100, hidden_size=16, num_layers=2, num_heads=2,
    num_kv_heads=2, head_dim=6, intermediate_size=32, q_lora_rank=8, kv_lora_rank=4, qk_rope_head_dim=2,
    qk_nope_head_dim=4, v_head_dim=3,
)  # fmt: skip
SMALL_MLA_NO_Q = dataclasses.replace(SMALL_MLA, name="small-mla-no-q", q_lora_rank=0)


@pytest.mark.parametrize(
    ("arch", "rank", "targets", "expected"),
    [
        # q 16->16, k and v 16->8, o 16->16, per layer: 2 x (32 + 24 + 24 + 32) = 224
        (SMALL_MOE, 2, "attention", 3 * 224),
        (SMALL_MOE, 2, "qv", 3 * 2 * (32 + 24)),
        # + the dense MLP (3 x 2 x (16 + 32)) and two MoE layers: 4 experts x 3 x 2 x (16 + 8) + shared 3 x 2 x 32
        (SMALL_MOE, 2, "all-linear", 3 * 224 + 3 * 2 * 48 + 2 * (4 * 3 * 2 * 24 + 3 * 2 * 32)),
        # q_a 16->8, q_b 8->12, kv_a 16->6, kv_b 4->14, o 6->16: 24 + 20 + 22 + 18 + 22 per layer at r = 1
        (SMALL_MLA, 1, "attention", 2 * (24 + 20 + 22 + 18 + 22)),
        (SMALL_MLA, 1, "qv", 2 * (20 + 18)),  # q_b and kv_b
        (SMALL_MLA, 1, "all-linear", 2 * (106 + 3 * (16 + 32))),
        (SMALL_MLA_NO_Q, 1, "attention", 2 * (28 + 22 + 18 + 22)),  # q 16->12 instead of q_a, q_b
        (SMALL_MLA_NO_Q, 1, "qv", 2 * (28 + 18)),
    ],
    ids=lambda v: v.name if isinstance(v, Architecture) else str(v),
)
def test_hand_computed_adapters(arch: Architecture, rank: int, targets: str, expected: int) -> None:
    assert lora_params(arch, rank, targets) == expected


def test_small_moe_qlora_quantizes_every_expert_but_not_the_router() -> None:
    q = finetune_memory(SMALL_MOE, "qlora")
    assert q.frozen_nf4 is not None
    attention = 16 * 16 + 2 * 16 * 8 + 16 * 16
    experts = 4 * 3 * 16 * 8 + 3 * 16 * 16
    assert q.frozen_nf4.params == 3 * attention + 3 * 16 * 32 + 2 * experts
    # 4 attention tensors a layer, 3 dense MLP tensors, then 4 x 3 expert and 3 shared tensors per MoE layer
    tensors = 3 * 4 + 3 + 2 * (4 * 3 + 3)
    assert q.frozen_nf4.second_level_bytes == 8 * tensors  # one fp32 constant + one offset per small tensor
    router = 2 * 16 * 4  # two MoE layers of h x E, kept in bf16
    assert SMALL_MOE.params_by_kind()["router"] == router
    assert q.frozen_bf16_bytes == 2 * (SMALL_MOE.param_count - q.frozen_nf4.params)
    assert SMALL_MOE.param_count - q.frozen_nf4.params == SMALL_MOE.embedding_params + SMALL_MOE.lm_head_params + (
        SMALL_MOE.params_by_kind()["norms"] + router
    )


def _biases(arch: Architecture, i: int) -> int:
    """Biases and sinks of layer ``i``, counted by hand from the flags."""
    h, nh = arch.hidden_size, arch.num_heads
    if arch.uses_mla:
        qkv = arch.q_lora_rank + arch.kv_lora_rank + arch.qk_rope_head_dim
    else:
        qkv = nh * arch.head_dim + arch.num_kv_heads * (arch.head_dim + arch.v_head_dim)
    total = (qkv if arch.qkv_bias else 0) + (h if arch.attn_out_bias else 0) + (nh if arch.attention_sinks else 0)
    gated = arch.mlp != "gelu"
    if not arch.is_moe_layer(i):
        f = arch.intermediate_size
        return total + ((2 * f + h if gated else f + h) if arch.mlp_bias else 0)
    f = arch.moe_intermediate_size
    per_expert = (2 * f + h if gated else f + h) if arch.expert_bias else 0
    router = arch.num_experts if arch.router_bias else 0
    return total + router + (arch.num_experts + arch.num_shared_experts) * per_expert


@pytest.mark.parametrize("slug", sorted(PRESETS))
def test_linears_norms_biases_and_embeddings_are_the_whole_model(slug: str) -> None:
    arch = preset(slug)
    total = arch.embedding_params + arch.lm_head_params + arch.final_norm_params
    for i in range(arch.num_layers):
        total += sum(d_in * d_out * copies for d_in, d_out, copies in layer_linears(arch, i).values())
        total += arch.norm_params_per_layer + _biases(arch, i)
    assert total == arch.param_count


@pytest.mark.parametrize(
    ("slug", "moe_layer"),
    [("mixtral-8x7b", 0), ("deepseek-v3", 3), ("qwen3-30b-a3b", 0), ("gpt-oss-20b", 0)],
)
def test_all_linear_adapts_every_expert(slug: str, moe_layer: int) -> None:
    arch = preset(slug)
    shapes = layer_linears(arch, moe_layer)
    assert shapes["expert_down"] == (arch.moe_intermediate_size, arch.hidden_size, arch.num_experts)
    qv, attention, every = (lora_params(arch, 8, t) for t in ("qv", "attention", "all-linear"))
    assert qv < attention < every
    f = arch.moe_intermediate_size
    assert every - attention >= arch.num_moe_layers * arch.num_experts * 3 * 8 * (arch.hidden_size + f)


def test_deepseek_v3_latent_projections() -> None:
    v3 = preset("deepseek-v3")
    shapes = layer_linears(v3, 0)
    assert {k: shapes[k][:2] for k in ("q_a", "q_b", "kv_a", "kv_b", "o")} == {
        "q_a": (7168, 1536),
        "q_b": (1536, 128 * 192),
        "kv_a": (7168, 512 + 64),
        "kv_b": (512, 128 * (128 + 128)),
        "o": (128 * 128, 7168),
    }
    assert "k" not in shapes and "v" not in shapes and "router" not in shapes  # layer 0 is dense
    assert lora_params(v3, 1, "qv") == 61 * ((1536 + 128 * 192) + (512 + 128 * 256))


@pytest.mark.parametrize("slug", [s for s in sorted(PRESETS) if preset(s).is_moe or preset(s).uses_mla])
@pytest.mark.parametrize("method", FINETUNE_METHODS)
def test_moe_and_mla_presets_order_methods(slug: str, method: str) -> None:
    arch = preset(slug)
    m = finetune_memory(arch, method)
    assert m.base_params == arch.param_count
    if method == "qlora":
        assert m.total < finetune_memory(arch, "lora").total < finetune_memory(arch, "full").total


@pytest.mark.parametrize("slug", sorted(PRESETS))
def test_every_preset_renders_on_defaults(slug: str) -> None:
    reply = render("finetune-memory", {"preset": slug})
    assert reply["ok"], reply.get("error")
    assert f'data-value="{preset(slug).param_count}" data-unit="1" data-output="base_params"' in reply["html"]
