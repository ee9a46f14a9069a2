"""The engine against ``validation/compile.json``: ``torch.compile`` (inductor, CPU) and eager PyTorch, measured.

``python -m validation.compile`` (run by ``make validate`` when its inputs change) measures the fp32-upcast
cross-entropy and a torchtitan Llama block, eager and compiled; here every row is re-predicted without torch:
the loss exactly by [`loss_bytes`][calc.memory.stacks.loss_bytes], the compiled block exactly by
[`layer_activations`][calc.memory.activations.layer_activations] (plus the norms' statistics and the expanded K
and V that [`layer_gaps`][calc.memory.stacks.layer_gaps] names), and the eager block's surplus by the formula
``layer_gaps`` states.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calc.memory.activations import layer_activations
from calc.memory.stacks import layer_gaps, loss_bytes

DATA = json.loads((Path(__file__).resolve().parent.parent / "validation" / "compile.json").read_text())
LOSS_OF = {"eager": "stock", "compiled": "compiled"}


def test_the_measurement_covers_both_modes_and_several_shapes():
    assert DATA["backend"] == "inductor, CPU" and DATA["dtype"] == "bfloat16"
    assert len(DATA["loss"]) >= 4 and len(DATA["block"]) >= 4
    assert any(c["kv_heads"] < c["heads"] for c in DATA["block"]), "grouped-query attention is measured"
    for row in DATA["loss"] + DATA["block"]:
        assert row["eager"]["saved_bytes"] > row["compiled"]["saved_bytes"] > 0


@pytest.mark.parametrize("mode", ["eager", "compiled"])
@pytest.mark.parametrize("row", DATA["loss"], ids=lambda r: f"{r['tokens']}x{r['vocab']}")
def test_loss_bytes_match_the_measurement_exactly(row, mode):
    saved, transient, _ = loss_bytes(LOSS_OF[mode], row["tokens"], row["vocab"], 1, row["tokens"])
    measured = row[mode]
    assert saved == measured["saved_bytes"], "saved for backward (the 4 B loss scalars aside)"
    assert transient == measured["transient_bytes"], "the backward's transient above what was live"


def _engine(case: dict[str, int], kv_heads: int) -> int:
    """The engine's bytes for one torchtitan block without checkpointing, with the norms' statistics."""
    return layer_activations(
        case["seq_len"],
        case["micro_batch"],
        case["hidden"],
        case["heads"],
        kv_heads=kv_heads,
        ffn_hidden=case["ffn_hidden"],
        mlp="swiglu",
        dropout=False,
        norm="rmsnorm",
        norm_stats=True,
        flash_attention=True,
    ).total


def _case_id(case: dict[str, int]) -> str:
    return "h{hidden}-a{heads}-g{kv_heads}-b{micro_batch}-s{seq_len}".format(**case)


@pytest.mark.parametrize("case", DATA["block"], ids=_case_id)
def test_the_compiled_block_saves_the_engine_terms_with_k_and_v_expanded(case):
    compiled = case["compiled"]["saved_bytes"]
    assert compiled == _engine(case, kv_heads=case["heads"])
    tokens, head_dim = case["seq_len"] * case["micro_batch"], case["hidden"] // case["heads"]
    expansion = 2 * 2 * tokens * (case["heads"] - case["kv_heads"]) * head_dim  # K and V, bf16
    assert compiled - _engine(case, kv_heads=case["kv_heads"]) == expansion
    gqa = case["kv_heads"] < case["heads"]
    gaps = layer_gaps("torchtitan", recompute="none", compile=True, gqa=gqa)
    assert len(gaps) == int(gqa) and all("repeat_kv" in g for g in gaps)


@pytest.mark.parametrize("case", DATA["block"], ids=_case_id)
def test_the_eager_block_keeps_what_layer_gaps_says_compile_fuses_away(case):
    tokens = case["seq_len"] * case["micro_batch"]
    surplus = 2 * tokens * case["ffn_hidden"] + 12 * tokens * case["hidden"]  # SiLU output, RMSNorm's fp32 upcasts
    assert case["eager"]["saved_bytes"] - case["compiled"]["saved_bytes"] == surplus
    gaps = layer_gaps("torchtitan", recompute="none", compile=False, gqa=False)
    assert len(gaps) == 1 and "2 B per token per MLP unit" in gaps[0] and "12 B per token per hidden unit" in gaps[0]


@pytest.mark.parametrize(
    ("stack", "recompute", "compile", "gqa", "count"),
    [
        ("megatron", "none", False, True, 0),
        ("torchtitan", "op", False, True, 0),
        ("torchtitan", "full", True, True, 0),
        ("torchtitan", "selective", False, True, 1),
        ("torchtitan", "none", False, True, 2),
        ("torchtitan", "none", True, False, 0),
    ],
)
def test_layer_gaps_only_where_nothing_checkpoints_a_torchtitan_layer(stack, recompute, compile, gqa, count):
    assert len(layer_gaps(stack, recompute=recompute, compile=compile, gqa=gqa)) == count
