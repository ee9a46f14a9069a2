"""Tests for calc.memory.overheads: named line items, NCCL's documented defaults, and the three per-GPU totals."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.memory.activations import layer_activations
from calc.memory.layout import Layout, layout_memory
from calc.memory.model_state import model_state_bytes
from calc.memory.overheads import (
    CUDA_CONTEXT_BYTES,
    ESTIMATED,
    MEASURED,
    NCCL_BUFFSIZE,
    NCCL_LL128_BUFFSIZE,
    NCCL_LL_BUFFSIZE,
    NOT_MODELLED,
    communicators,
    nccl_communicator_bytes,
    overheads,
    peak_memory,
)
from calc.models.presets import preset

MIB = 1 << 20


def test_nccl_defaults_from_source() -> None:
    # NCCL src/init.cc: DEFAULT_BUFFSIZE (1 << 22); LL: 8 lines × 512 threads × 8 steps × 16 B;
    # LL128: 120 elements × 640 threads × 8 steps × 8 B.
    assert NCCL_BUFFSIZE == 4 * MIB == 4194304
    assert NCCL_LL_BUFFSIZE == 524288
    assert NCCL_LL128_BUFFSIZE == 4915200


@pytest.mark.parametrize(
    ("peers", "kw", "expected"),
    [
        (1, {}, 16 * (4194304 + 524288 + 4915200)),  # a ring, 16 channels, three protocols: 147 MiB
        (1, {"channels": 32}, 32 * 9633792),
        (2, {"channels": 2, "p2p": True}, 2 * 2 * 4194304),  # pipeline: Simple only, prev and next stage
        (7, {"channels": 2, "p2p": True}, 7 * 2 * 4194304),  # all-to-all over ep=8
    ],
)
def test_nccl_communicator_bytes(peers: int, kw: dict, expected: int) -> None:
    assert nccl_communicator_bytes(peers, **kw) == expected


@pytest.mark.parametrize(
    ("kw", "stage", "groups"),
    [
        ({}, 0, ()),
        ({"dp": 8}, 0, (("dp", 8, 1),)),
        ({"dp": 4, "cp": 2, "seq_len": 4096}, 0, (("dp", 4, 1), ("dp-cp", 8, 1), ("cp", 2, 1))),
        ({"tp": 8, "pp": 4}, 1, (("tp", 8, 1), ("pp", 4, 2), ("tp-pp", 32, 1))),  # a middle stage: no embedding group
        ({"tp": 8, "pp": 4}, 3, (("tp", 8, 1), ("pp", 4, 2), ("tp-pp", 32, 1), ("embedding", 2, 1))),
        ({"pp": 2}, 0, (("pp", 2, 1), ("embedding", 2, 1))),  # two stages: one neighbour
        ({"dp": 8, "ep": 4}, 0, (("dp", 8, 1), ("ep", 4, 3), ("ep-dp", 2, 1))),
    ],
)
def test_communicators(kw: dict, stage: int, groups: tuple) -> None:
    assert communicators(Layout(**kw), stage) == groups


def _names(arch: str, **kw: object) -> list[str]:
    return [o.name for o in overheads(preset(arch), Layout(**kw))]


def test_every_item_is_named_tagged_and_sourced() -> None:
    items = overheads(preset("llama3-8b"), Layout(dp=8, tp=2, pp=2, zero_stage=3, recompute="full", seq_len=4096))
    assert {o.name for o in items} >= {
        "cuda_context",
        "nccl_dp",
        "nccl_tp",
        "nccl_pp",
        "zero3_gathered",
        "recomputed_layer",
        "optimizer_step",
        "allocator_reserve",
    }
    for o in items:
        assert o.tag in (MEASURED, ESTIMATED) and o.source and o.formula and o.label, o.name
        assert o.counted_in in ("allocated", "reserved", "nvidia-smi"), o.name
        assert o.phase in ("always", "backward", "step"), o.name
        assert isinstance(o.bytes, int) and o.bytes >= 0, o.name
    assert len({o.name for o in items}) == len(items)


@pytest.mark.parametrize(
    ("kw", "present", "absent"),
    [
        (dict(dp=8, zero_stage=3), {"zero3_gathered"}, {"recomputed_layer"}),
        (dict(dp=8, zero_stage=2), set(), {"zero3_gathered"}),
        (dict(dp=1, zero_stage=3), set(), {"zero3_gathered", "nccl_dp"}),  # nothing to gather from
        (dict(recompute="full"), {"recomputed_layer"}, set()),
        (dict(recompute="selective"), set(), {"recomputed_layer"}),
        (dict(pp=2), {"nccl_pp", "nccl_embedding"}, set()),
        (dict(convention="fp32-sgd-8"), set(), {"optimizer_step"}),  # plain SGD: no moments, no temporaries
    ],
)
def test_items_follow_the_layout(kw: dict, present: set, absent: set) -> None:
    names = set(_names("llama3-8b", seq_len=2048, **kw))
    assert present <= names and not (absent & names)


def test_fused_optimizer_has_no_step_temporaries() -> None:
    arch, layout = preset("llama3-8b"), Layout(seq_len=2048)
    assert "optimizer_step" not in [o.name for o in overheads(arch, layout, optimizer="fused")]
    step = next(o for o in overheads(arch, layout) if o.name == "optimizer_step")
    assert step.bytes == layout_memory(arch, layout).momentum  # one moment-sized foreach temporary


def test_recomputed_layer_is_one_full_layer() -> None:
    arch = preset("llama3-8b")
    layout = Layout(seq_len=4096, recompute="full", flash_attention=True, dropout=False)
    item = next(o for o in overheads(arch, layout) if o.name == "recomputed_layer")
    full = layer_activations(
        4096, 1, arch.hidden_size, arch.num_heads, kv_heads=arch.num_kv_heads, head_dim=arch.head_dim,
        ffn_hidden=arch.intermediate_size, mlp=arch.mlp, norm=arch.norm, dropout=False, flash_attention=True,
    )  # fmt: skip
    assert item.bytes == full.total


def test_zero3_gathered_counts_three_units() -> None:
    arch = preset("llama3-8b")
    item = next(
        o
        for o in overheads(arch, Layout(dp=8, pp=2, zero_stage=3, seq_len=1024), stage=0)
        if o.name == "zero3_gathered"
    )
    unit = arch.vocab_size * arch.hidden_size  # stage 0 holds the embedding, larger than one layer
    assert item.bytes == 3 * unit * 2
    middle = Layout(dp=8, pp=4, zero_stage=3, seq_len=1024)
    item = next(o for o in overheads(arch, middle, stage=1) if o.name == "zero3_gathered")
    assert item.bytes == 3 * arch.layer_param_counts()[1] * 2  # a middle stage: one decoder layer


def test_totals_add_up() -> None:
    arch = preset("llama3-8b")
    p = peak_memory(arch, Layout(dp=8, tp=2, zero_stage=1, seq_len=4096, recompute="full"))
    by = {o.name: o for o in p.overheads}
    outside = sum(o.bytes for o in p.overheads if o.counted_in == "nvidia-smi")
    assert outside == CUDA_CONTEXT_BYTES + sum(o.bytes for n, o in by.items() if n.startswith("nccl_"))
    assert p.reserved_bytes == p.allocated_bytes + by["allocator_reserve"].bytes
    assert p.nvidia_smi_bytes == p.reserved_bytes + outside
    backward = sum(o.bytes for o in p.overheads if o.phase == "backward")
    step = sum(o.bytes for o in p.overheads if o.phase == "step")
    m = p.memory
    assert p.allocated_bytes == m.model_state + max(m.activations + m.logits + backward, step)
    assert p.not_modelled == NOT_MODELLED


def test_step_peak_wins_when_activations_are_small() -> None:
    arch = preset("gpt2")
    p = peak_memory(arch, Layout(seq_len=8, micro_batch=1, dropout=False, flash_attention=True))
    step = next(o for o in p.overheads if o.name == "optimizer_step")
    assert p.allocated_bytes == p.memory.model_state + step.bytes


def test_expandable_segments_shrink_the_reserve() -> None:
    arch, layout = preset("llama3-8b"), Layout(seq_len=4096)
    plain = peak_memory(arch, layout)
    expandable = peak_memory(arch, layout, expandable_segments=True)
    assert expandable.allocated_bytes == plain.allocated_bytes
    assert expandable.reserved_bytes < plain.reserved_bytes
    for p in (plain, expandable):
        assert (p.reserved_bytes - p.allocated_bytes) % (2 * MIB) == 0


def test_busiest_stage_by_nvidia_smi() -> None:
    arch = preset("llama3-8b")
    layout = Layout(pp=4, seq_len=2048, recompute="full")
    each = [peak_memory(arch, layout, stage=k) for k in range(4)]
    busiest = peak_memory(arch, layout)
    assert busiest.nvidia_smi_bytes == max(p.nvidia_smi_bytes for p in each)
    assert busiest.stage == next(p.stage for p in each if p.nvidia_smi_bytes == busiest.nvidia_smi_bytes)


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        (dict(optimizer="sgd"), "optimizer"),
        (dict(channels=0), "channels"),
        (dict(p2p_channels=2000), "p2p_channels"),
        (dict(expandable_segments="yes"), "expandable_segments"),
        (dict(stage=4), "stage"),
    ],
)
def test_bad_options_name_the_field(kw: dict, field: str) -> None:
    with pytest.raises(CalcError) as err:
        peak_memory(preset("gpt2"), Layout(pp=2, seq_len=1024), **kw)
    assert err.value.field == field


_ARCHS = ("gpt2", "llama3-8b", "mixtral-8x7b")


@settings(max_examples=25, deadline=None)
@given(
    arch=st.sampled_from(_ARCHS),
    stage=st.integers(0, 3),
    dp=st.sampled_from([2, 4, 8]),
    recompute=st.sampled_from(["none", "selective", "full"]),
)
def test_more_data_parallel_never_raises_allocated(arch: str, stage: int, dp: int, recompute: str) -> None:
    """Doubling dp (from 2 on) never raises the allocated peak at a fixed ZeRO stage."""
    model = preset(arch)
    base = Layout(dp=dp, zero_stage=stage, seq_len=512, recompute=recompute)
    more = replace(base, dp=dp * 2, gpus=None)
    assert peak_memory(model, more).allocated_bytes <= peak_memory(model, base).allocated_bytes


@settings(max_examples=25, deadline=None)
@given(arch=st.sampled_from(_ARCHS), dp=st.sampled_from([1, 2, 8]), seq=st.sampled_from([256, 1024, 4096]))
def test_more_zero_sharding_below_stage_3_never_raises_allocated(arch: str, dp: int, seq: int) -> None:
    model = preset(arch)
    peaks = [peak_memory(model, Layout(dp=dp, zero_stage=z, seq_len=seq)).allocated_bytes for z in range(3)]
    assert peaks == sorted(peaks, reverse=True)


@settings(max_examples=25, deadline=None)
@given(arch=st.sampled_from(_ARCHS), seq=st.sampled_from([256, 1024, 4096]), tp=st.sampled_from([1, 2]))
def test_totals_are_ordered_and_cover_the_tensors(arch: str, seq: int, tp: int) -> None:
    model = preset(arch)
    layout = Layout(dp=2, tp=tp, seq_len=seq, zero_stage=1)
    p = peak_memory(model, layout)
    assert layout_memory(model, layout).total <= p.allocated_bytes <= p.reserved_bytes < p.nvidia_smi_bytes


def _widget(**values: str) -> str:
    from calc.widgets import render

    result = render("training-memory", values)
    assert result["ok"], result
    return result["html"]


def test_training_calculator_shows_the_three_totals_and_each_item() -> None:
    page = _widget(preset="llama3-8b", dp="8", zero_stage="3", recompute="full", seq_len="4096")
    arch = preset("llama3-8b")
    layout = Layout(dp=8, zero_stage=3, recompute="full", seq_len=4096, flash_attention=True, dropout=False)
    p = peak_memory(arch, layout, gpu="h100-sxm")  # the calculator's GPU: 32 NCCL channels and NVLS buffers
    assert {"nccl_nvls", "nccl_dp"} <= {o.name for o in p.overheads}
    for name, value in (
        ("allocated_bytes", p.allocated_bytes),
        ("reserved_bytes", p.reserved_bytes),
        ("nvidia_smi_bytes", p.nvidia_smi_bytes),
    ):
        assert f'data-value="{value}" data-unit="B" data-output="{name}"' in page
    for o in p.overheads:
        assert f'data-value="{o.bytes}" data-unit="B" data-output="overhead_{o.name}"' in page
        assert o.label.replace("'", "&#x27;") in page
    assert page.count('data-tag="ESTIMATED"') == len(p.overheads)
    assert "the verdict uses this" in page
    assert "often 1-3 GB" not in page and "How accurate is this?" in page


def test_training_verdict_uses_nvidia_smi() -> None:
    arch = preset("llama3-8b")
    p = peak_memory(
        arch, Layout(dp=8, zero_stage=1, seq_len=4096, flash_attention=True, dropout=False, recompute="selective")
    )
    gb = 10**9
    # A custom GPU just above the reserved total but below what nvidia-smi would show does not fit.
    between = (p.reserved_bytes + p.nvidia_smi_bytes) / 2 / gb
    page = _widget(gpu="custom", gpu_memory=f"{between:.4f}")
    assert 'data-ok="no"' in page
    page = _widget(gpu="custom", gpu_memory=f"{p.nvidia_smi_bytes / gb + 0.01:.4f}")
    assert 'data-ok="yes"' in page


def test_training_calculator_options() -> None:
    fused = _widget(optimizer="fused")
    assert 'data-output="overhead_optimizer_step"' not in fused
    assert 'data-output="overhead_optimizer_step"' in _widget()
    assert "expandable_segments" in _widget(expandable_segments="1")


# --- FP8 and lower-precision recipes (calc.memory.fp8) ----------------------------------------------------


@pytest.mark.parametrize(
    ("recipe", "params", "values", "scales"),
    [
        ("fp8-hopper", 10**6, 2 * 10**6, 0),  # FP8 copy + its physical transpose (Hopper)
        ("fp8-blackwell", 10**6, 10**6, 0),  # one FP8 copy serves both usages
        ("mxfp8-blackwell", 10**6, 2 * 10**6, 2 * 31250),  # rowwise + columnwise, one E8M0 byte per 32
        ("nvfp4-blackwell", 10**6, 10**6, 2 * 62500),  # two 4-bit copies, one E4M3 byte per 16
        ("mxfp8-blackwell", 33, 66, 2 * 2),  # a partial block still has its scale
    ],
)
def test_low_precision_weights(recipe: str, params: int, values: int, scales: int) -> None:
    from calc.memory.fp8 import low_precision_weights

    w = low_precision_weights(params, recipe)
    assert (w.values_bytes, w.scale_bytes, w.total) == (values, scales, values + scales)
    assert "fp32 master" in " ".join(w.kept_high_precision)


def test_hopper_vs_blackwell_per_param() -> None:
    from fractions import Fraction

    from calc.memory.fp8 import LOW_PRECISION_RECIPES

    per = {n: r.bytes_per_param for n, r in LOW_PRECISION_RECIPES.items()}
    assert per == {
        "fp8-hopper": 2,
        "fp8-blackwell": 1,
        "mxfp8-blackwell": Fraction(33, 16),
        "nvfp4-blackwell": Fraction(9, 8),
    }
    for r in LOW_PRECISION_RECIPES.values():
        assert r.source and "Transformer Engine" in r.source


def test_low_precision_copies_join_the_peak() -> None:
    arch = preset("llama3-8b")
    layout = Layout(dp=8, zero_stage=1, seq_len=4096, flash_attention=True, dropout=False)
    base = peak_memory(arch, layout)
    fp8 = peak_memory(arch, layout, low_precision="fp8-hopper")
    item = next(o for o in fp8.overheads if o.name == "low_precision_weights")
    gemm = arch.param_count - 2 * arch.vocab_size * arch.hidden_size - arch.num_layers * arch.norm_params_per_layer
    assert item.bytes == 2 * (gemm - arch.final_norm_params)  # every linear layer's weight, twice, 1 byte each
    assert item.phase == "always" and item.counted_in == "allocated"
    assert fp8.allocated_bytes == base.allocated_bytes + item.bytes  # alive in both phases
    zero3 = peak_memory(arch, Layout(dp=8, zero_stage=3, seq_len=4096), low_precision="fp8-blackwell")
    small = next(o for o in zero3.overheads if o.name == "low_precision_weights")
    assert small.bytes == 2 * arch.layer_param_counts()[1] - 2 * arch.norm_params_per_layer  # two gathered layers


def test_unknown_low_precision_recipe_names_the_field() -> None:
    with pytest.raises(CalcError) as err:
        peak_memory(preset("gpt2"), Layout(seq_len=1024), low_precision="fp4")
    assert err.value.field == "low_precision"


@pytest.mark.parametrize("routing", ["dropless", "capacity-1.25", "capacity-2"])
def test_moe_routing_worst_case_is_a_named_line(routing: str) -> None:
    from calc.memory.moe_routing import activation_range
    from calc.memory.overheads import MOE_ROUTINGS

    arch = preset("mixtral-8x7b")
    layout = Layout(dp=8, ep=8, seq_len=4096, flash_attention=True, dropout=False)
    balanced = peak_memory(arch, layout)
    worst = peak_memory(arch, layout, moe_routing=routing)
    item = next(o for o in worst.overheads if o.name == "moe_routing_imbalance")
    r = activation_range(arch, layout, capacity_factor=MOE_ROUTINGS[routing])
    assert item.bytes == r.worst - r.balanced > 0
    assert worst.allocated_bytes == balanced.allocated_bytes + item.bytes  # the backward peak grows by it
    assert "moe_routing_imbalance" not in [o.name for o in balanced.overheads]


def test_moe_routing_is_nothing_for_a_dense_model() -> None:
    arch, layout = preset("llama3-8b"), Layout(seq_len=1024)
    assert peak_memory(arch, layout, moe_routing="dropless") == peak_memory(arch, layout)
    with pytest.raises(CalcError) as err:
        peak_memory(arch, layout, moe_routing="worst")
    assert err.value.field == "moe_routing"


# ---------------------------------------------------------------- training stacks (issue 17)


@pytest.mark.parametrize(
    ("kw", "expected"),
    [
        (dict(), dict(recompute="none", loss_kind="fused", zero_stage=0, shard="even", dropout=True)),
        (dict(stack="torchtitan"), dict(recompute="op", loss_kind="stock", zero_stage=3, shard="fsdp2", dropout=False)),
        (dict(stack="torchtitan", compile=True), dict(loss_kind="compiled")),
        (dict(stack="torchtitan", pp=2), dict(reshards_after_forward=False)),  # torchtitan: not resharded under PP
        (dict(stack="torchtitan", pp=1), dict(reshards_after_forward=True)),
        (dict(stack="torchtitan", recompute="full", loss="chunked"), dict(recompute="full", loss_kind="chunked")),
        # DeepSpeed around transformers: ZeRO off (DeepSpeedZeroConfig.stage = 0), ForCausalLMLoss's stock loss
        (dict(stack="deepspeed"), dict(recompute="none", loss_kind="stock", zero_stage=0, shard="even", dropout=False)),
        (dict(stack="deepspeed", pp=2), dict(reshards_after_forward=True, flash_attention=True)),
        (dict(stack="deepspeed", zero_stage=2, recompute="full"), dict(zero_stage=2, recompute="full")),
    ],
)
def test_stack_defaults_and_knobs(kw, expected):
    layout = Layout(**kw)
    for name, value in expected.items():
        assert getattr(layout, name) == value, name


@pytest.mark.parametrize(
    ("stage", "phase"),
    [
        (0, None),  # ZeRO off: no bucket
        (1, "backward"),  # stage_1_and_2.py setup_buckets: from the first gradient to the end of the backward
        (2, "backward"),
        (3, "always"),  # stage3.py: allocated at start, kept
    ],
)
def test_deepspeed_gradient_bucket_is_a_named_line(stage, phase):
    arch = preset("llama3-8b")
    kw = dict(dp=8, zero_stage=stage, seq_len=4096, flash_attention=True, dropout=False, loss="stock")
    ds = peak_memory(arch, Layout(stack="deepspeed", **kw))
    items = {o.name: o for o in ds.overheads}
    if phase is None:
        assert "deepspeed_bucket" not in items
        return
    bucket = items["deepspeed_bucket"]
    assert (bucket.bytes, bucket.phase) == (500_000_000 * 2, phase)  # reduce_bucket_size 5e8 elements in bf16
    other = peak_memory(arch, Layout(**kw))  # Megatron's stack with the same knobs has no bucket
    assert "deepspeed_bucket" not in {o.name for o in other.overheads}
    assert ds.allocated_bytes - other.allocated_bytes == bucket.bytes  # the bucket joins the peak either way


def test_deepspeed_reserve_is_megatrons_fraction():
    arch = preset("llama3-8b")
    ds = peak_memory(arch, Layout(stack="deepspeed", dp=8, zero_stage=1, seq_len=4096))
    reserve = {o.name: o for o in ds.overheads}["allocator_reserve"]
    assert reserve.formula.startswith("allocated × 1/20") and "deepspeed" in reserve.formula
    assert ds.reserved_bytes - ds.allocated_bytes == reserve.bytes


def test_stack_defaults_that_follow_other_fields_follow_replace():
    layout = Layout(stack="torchtitan", pp=2)
    assert not layout.reshards_after_forward
    assert replace(layout, pp=1, gpus=None).reshards_after_forward
    assert replace(layout, compile=True).loss_kind == "compiled"


def test_per_op_checkpointing_saves_every_other_matmul():
    """Llama 3 8B, t=1: input 2h + wq 2ad + wv 2gd + SDPA out 2ad + LSE 4a + w1 2f + w2 2h bytes per token."""
    arch = preset("llama3-8b")
    h, a, g, d, f = 4096, 32, 8, 128, 14336
    per_token = 2 * h + 2 * a * d + 2 * g * d + 2 * a * d + 4 * a + 2 * f + 2 * h
    layer = layer_activations(8192, 2, h, a, kv_heads=g, ffn_hidden=f, mlp="swiglu", recompute="op")
    assert layer.total == per_token * 8192 * 2 == 63616 * 16384
    full = layer_activations(8192, 2, h, a, kv_heads=g, ffn_hidden=f, mlp="swiglu", recompute="full")
    selective = layer_activations(8192, 2, h, a, kv_heads=g, ffn_hidden=f, mlp="swiglu", recompute="selective")
    assert full.total < layer.total < selective.total
    assert arch.hidden_size == h


@pytest.mark.parametrize(
    ("loss", "saved_per_logit", "transient_per_logit"),
    [
        ("fused", 4, 2),  # Megatron's vocab-parallel cross-entropy: 6 B per logit
        ("stock", 4, 8),  # F.cross_entropy(logits.float()): 12 B per logit in backward
        ("compiled", 2, 2),  # plus 8 B per token saved (max, log-sum-exp) and 4 B per token in backward
    ],
)
def test_loss_peak_per_logit(loss, saved_per_logit, transient_per_logit):
    from calc.memory.stacks import loss_bytes

    saved, transient, _ = loss_bytes(loss, 1000, 50000, 1, 1024)
    assert saved - (8 * 1000 if loss == "compiled" else 0) == saved_per_logit * 1000 * 50000
    assert transient - (4 * 1000 if loss == "compiled" else 0) == transient_per_logit * 1000 * 50000


def test_stock_loss_raises_the_last_stage():
    arch = preset("llama3-8b")
    fused = peak_memory(arch, Layout(dp=8, zero_stage=3, seq_len=8192, flash_attention=True, dropout=False))
    stock = peak_memory(
        arch, Layout(dp=8, zero_stage=3, seq_len=8192, flash_attention=True, dropout=False, loss="stock")
    )
    logits = 8192 * arch.vocab_size
    assert stock.allocated_bytes - fused.allocated_bytes == 6 * logits  # 12 B instead of 6 B per logit


def test_no_reshard_after_forward_under_pp_counts_the_unsharded_stage():
    arch = preset("llama3.1-405b")
    kw = dict(stack="torchtitan", dp=8, tp=8, pp=8, interleave=2, seq_len=8192, sequence_parallel=True)
    peak = peak_memory(arch, Layout(**kw))
    names = {o.name: o.bytes for o in peak.overheads}
    assert names["fsdp_unsharded_params"] == 2 * peak.memory.params
    assert names["fsdp_unsharded_grads"] == 4 * peak.memory.params
    assert "zero3_gathered" not in names
    resharded = peak_memory(arch, Layout(**kw, reshard_after_forward=True))
    assert "zero3_gathered" in {o.name for o in resharded.overheads}
    assert resharded.allocated_bytes < peak.allocated_bytes


def test_allocator_reserve_per_stack():
    arch = preset("llama3-8b")
    mega = peak_memory(arch, Layout(dp=8, zero_stage=3, seq_len=4096, recompute="full"))
    titan = peak_memory(arch, Layout(stack="torchtitan", dp=8, seq_len=4096, recompute="full"))
    for peak, (num, den) in ((mega, (1, 20)), (titan, (27, 200))):
        reserve = peak.reserved_bytes - peak.allocated_bytes
        assert reserve == -(-peak.allocated_bytes * num // (den * 2 * 2**20)) * 2 * 2**20


def test_nccl_channels_by_gpu_generation():
    from calc.memory.overheads import nccl_channels

    arch, layout = preset("llama3-8b"), Layout(dp=8, zero_stage=1, seq_len=4096)
    h100 = {o.name: o.bytes for o in peak_memory(arch, layout, gpu="h100-sxm").overheads}
    a100 = {o.name: o.bytes for o in peak_memory(arch, layout, gpu="a100-80gb").overheads}
    assert nccl_channels("h100-sxm") == 32 and nccl_channels("a100-80gb") == 16
    assert h100["nccl_dp"] == 2 * a100["nccl_dp"]


def test_expert_parallel_all_to_all_buffers_as_measured():
    # NVIDIA/nccl issue 1685: +3.3 GB of NCCL buffers for an all-to-all over 8 H100 (7 peers)
    arch = preset("mixtral-8x7b")
    peak = peak_memory(arch, Layout(dp=8, ep=8, zero_stage=1, seq_len=1024))
    ep = next(o for o in peak.overheads if o.name == "nccl_ep")
    assert ep.tag == "MEASURED"
    assert ep.bytes == 7 * (3_300_000_000 // 7)


def test_bf16_optimizer_states_convention():
    from calc.memory.model_state import CONVENTIONS

    c = CONVENTIONS["mixed-bf16-states"]
    assert c.bytes_per_param == 14
    # Megatron's distributed optimizer shards master and both moments: 6 + 8/d bytes per parameter
    state = model_state_bytes(8 * 10**9, convention="mixed-bf16-states", zero_stage=1, dp=8)
    assert state.total == 8 * 10**9 * 6 + 8 * 10**9 * 8 // 8


# ---------------------------------------------------------------- NCCL's NVLS and tree buffers (issue 17 Build 2)


@pytest.mark.parametrize(
    ("gpu", "kw", "nvls", "tree"),
    [
        # one node of H100 SXM (NVSwitch): dp 8 all inside it, 16 NVLS channels x 2 x 1 MiB x 8 heads; no tree
        ("h100-sxm", dict(dp=8), {"dp": 8}, ()),
        ("h200", dict(dp=8, zero_stage=3), {"dp": 8}, ()),
        ("a100-80", dict(dp=8), {}, ()),  # Ampere: no NVLink SHARP
        ("h100-pcie", dict(dp=8), {}, ()),  # no NVSwitch
        # tp 8 fills the node: dp crosses nodes and all-reduces there without ZeRO (ZeRO: rings and NVLS only)
        ("h100-sxm", dict(dp=16, tp=8, pp=4), {"tp": 8, "tp-pp": 8, "tp-dp": 8}, ("dp",)),
        ("h100-sxm", dict(dp=16, tp=8, pp=4, zero_stage=1), {"tp": 8, "tp-pp": 8, "tp-dp": 8}, ()),
        # tp 2 leaves 4 data-parallel ranks per node
        ("h100-sxm", dict(dp=64, tp=2), {"dp": 4, "tp": 2, "tp-dp": 8}, ("dp",)),
    ],
)
def test_nvls_and_tree_buffers(gpu, kw, nvls, tree):
    from calc.memory.nccl import nccl_communicator_bytes, nvls_bytes

    peak = peak_memory(preset("llama3-70b"), Layout(seq_len=4096, **kw), gpu=gpu)
    items = {o.name: o for o in peak.overheads}
    if nvls:
        assert items["nccl_nvls"].bytes == sum(nvls_bytes(k) for k in nvls.values())
        assert items["nccl_nvls"].formula.endswith(", ".join(f"{n} {k}" for n, k in nvls.items()))
        assert items["nccl_nvls"].counted_in == "nvidia-smi"
    else:
        assert "nccl_nvls" not in items
    if tree:
        assert items["nccl_tree"].bytes == len(tree) * nccl_communicator_bytes(2, channels=32 if "h" in gpu else 16)
        assert items["nccl_tree"].formula.endswith(", ".join(tree))
    else:
        assert "nccl_tree" not in items


def test_nvls_heads_are_capped_and_blackwell_has_more_channels():
    from calc.memory.nccl import nvls_bytes

    assert nvls_bytes(8) == 16 * 2 * 128 * 1024 * 8 * 8  # channels x 2 x NCCL_NVLS_CHUNKSIZE x NCCL_STEPS x heads
    assert nvls_bytes(72, channels=32) == nvls_bytes(32, channels=32)  # NCCL_MAX_NVLS_ARITY
    one_domain = peak_memory(preset("llama3-8b"), Layout(dp=4, seq_len=4096), gpu="gb200")
    nvls = {o.name: o for o in one_domain.overheads}["nccl_nvls"]
    assert nvls.formula.startswith("24 channels")  # NVLS_NCHANNELS_SM100_NVL: one NVLink domain


def test_no_gpu_no_nvls_or_tree():
    peak = peak_memory(preset("llama3-70b"), Layout(dp=16, tp=8, pp=4, seq_len=4096))
    assert not {"nccl_nvls", "nccl_tree"} & {o.name for o in peak.overheads}
