"""Model-state memory against the ZeRO paper (Rajbhandari et al. 2020, arXiv:1910.02054)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc import (
    CONVENTION_ALIASES,
    CONVENTIONS,
    SHARD_MODES,
    CalcError,
    busiest_shard,
    convention_options,
    format_bytes,
    model_state_bytes,
    resolve_convention,
    smallest_fitting_layout,
)

GB = 10**9

# ZeRO Table 1, exactly as printed (GB = 10^9 B). Columns: (params, stage) -> {dp: printed}.
# The 7.5B columns are rounded to 3 significant figures; the 128B and 1T columns are truncated
# (257.75 is printed 257) - see shared/reference/reference_numbers.md, Sec. 1.
TABLE_1 = {
    (7.5e9, 1): {1: 120, 4: 52.5, 16: 35.6, 64: 31.4, 256: 30.4, 1024: 30.1},
    (7.5e9, 2): {1: 120, 4: 41.3, 16: 21.6, 64: 16.6, 256: 15.4, 1024: 15.1},
    (7.5e9, 3): {1: 120, 4: 30, 16: 7.5, 64: 1.88, 256: 0.47, 1024: 0.12},
    (128e9, 1): {1: 2048, 4: 896, 16: 608, 64: 536, 256: 518, 1024: 513},
    (128e9, 2): {1: 2048, 4: 704, 16: 368, 64: 284, 256: 263, 1024: 257},
    (128e9, 3): {1: 2048, 4: 512, 16: 128, 64: 32, 256: 8, 1024: 2},
    (1e12, 1): {1: 16000, 4: 7000, 16: 4750, 64: 4187, 256: 4046, 1024: 4011},
    (1e12, 2): {1: 16000, 4: 5500, 16: 2875, 64: 2218, 256: 2054, 1024: 2013},
    (1e12, 3): {1: 16000, 4: 4000, 16: 1000, 64: 250, 256: 62.5, 1024: 15.6},
}
CELLS = [(p, s, dp, v) for (p, s), col in TABLE_1.items() for dp, v in col.items()]


def _last_digit(printed: float) -> Fraction:
    """One unit of the last printed digit: the tolerance for a rounded or truncated cell."""
    text = repr(printed)
    decimals = len(text.split(".")[1]) if "." in text and not text.endswith(".0") else 0
    return Fraction(1, 10**decimals)


@pytest.mark.parametrize(("params", "stage", "dp", "printed"), CELLS)
def test_zero_table_1(params: float, stage: int, dp: int, printed: float) -> None:
    got = Fraction(model_state_bytes(params, zero_stage=stage, dp=dp).total, GB)
    assert abs(got - Fraction(str(printed))) <= _last_digit(printed)


@pytest.mark.parametrize(
    ("stage", "dp", "text"),
    [
        (0, 64, "120 GB"),
        (1, 64, "31.4 GB"),  # the acceptance number
        (2, 64, "16.6 GB"),
        (3, 64, "1.88 GB"),  # Sec. 5.3 text rounds this to "1.9 GB"
    ],
)
def test_zero_text_examples(stage: int, dp: int, text: str) -> None:
    assert format_bytes(model_state_bytes(7.5e9, zero_stage=stage, dp=dp).total) == text


# ZeRO Table 2: the largest model whose states fit a 32 GB V100 with Nd = 64 (MP = 1 row, in billions,
# printed to one decimal: 2B, 7.6B, 14.4B, 128B). Largest Ψ with per-GPU bytes <= 32e9.
@pytest.mark.parametrize(("stage", "printed_billions"), [(0, 2), (1, 7.6), (2, 14.4), (3, 128)])
def test_zero_table_2_max_model(stage: int, printed_billions: float) -> None:
    lo, hi = 1, 10**13
    while lo < hi:  # largest params that fit
        mid = (lo + hi + 1) // 2
        if model_state_bytes(mid, zero_stage=stage, dp=64).total <= 32 * GB:
            lo = mid
        else:
            hi = mid - 1
    assert abs(lo / 1e9 - printed_billions) < 0.05


@pytest.mark.parametrize(
    ("convention", "per_param", "parts"),
    [
        ("mixed-adam-16", 16, (2, 2, 4, 4, 4)),  # ZeRO Sec. 3.1
        ("mixed-adam-18", 18, (2, 4, 4, 4, 4)),  # Megatron: fp32 main grads
        ("mixed-adam-20", 20, (2, 6, 4, 4, 4)),  # DeepSpeed ZeRO-2 estimator at one GPU
        ("fp32-adam-16", 16, (4, 4, 0, 4, 4)),
        ("bf16-adam-12", 12, (2, 2, 0, 4, 4)),  # no fp32 master copy
        ("bf16-adam-fused-6", 6, (2, 0, 0, 2, 2)),  # fused step, stock Adam: bf16 moments (zeros_like)
        ("fp32-adam-fused-12", 12, (4, 0, 0, 4, 4)),  # the PyTorch tutorial's fp32 ViT with Adam
        ("bf16-adam-pure-8", 8, (2, 2, 0, 2, 2)),
        ("mixed-adam8bit-10", 10, (2, 2, 4, 1, 1)),
        ("mixed-sgdm-12", 12, (2, 2, 4, 4, 0)),
        ("fp32-sgd-8", 8, (4, 4, 0, 0, 0)),
        ("fp32-sgdm-12", 12, (4, 4, 0, 4, 0)),  # torch.optim.SGD momentum_buffer = clone(grad), fp32
    ],
)
def test_conventions(convention: str, per_param: int, parts: tuple[int, ...]) -> None:
    assert convention in CONVENTIONS
    state = model_state_bytes(1, convention=convention)
    assert state.total == per_param == CONVENTIONS[convention].bytes_per_param
    assert (state.weights, state.gradients, state.master, state.momentum, state.variance) == parts


def test_headline_numbers() -> None:
    assert model_state_bytes("7B").total == 112 * GB
    assert model_state_bytes("70B").total == 1120 * GB
    assert model_state_bytes("7B").total // model_state_bytes("7B").weights == 8


def test_deepspeed_zero2_estimator_at_one_gpu() -> None:
    # DeepSpeed estimate_zero2_model_states_mem_needs, no offload, 1 GPU: 2Ψ + 18Ψ = 20Ψ.
    assert model_state_bytes(2851e6, convention="mixed-adam-20").total == 20 * 2_851_000_000


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"params": "abc"}, "params"),
        ({"params": 0}, "params"),
        ({"params": "1.5"}, "params"),  # not a whole number of parameters
        ({"params": float("nan")}, "params"),
        ({"params": "7B", "zero_stage": 4}, "zero_stage"),
        ({"params": "7B", "zero_stage": -1}, "zero_stage"),
        ({"params": "7B", "dp": 0}, "dp"),
        ({"params": "7B", "dp": "two"}, "dp"),
        ({"params": "7B", "convention": "adam-17"}, "convention"),
    ],
)
def test_bad_input_names_the_field(kwargs: dict, field: str) -> None:
    params = kwargs.pop("params")
    with pytest.raises(CalcError) as info:
        model_state_bytes(params, **kwargs)
    assert info.value.field == field
    assert field in str(info.value)


def test_smallest_fitting_layout() -> None:
    assert smallest_fitting_layout("1B", 80 * GB) == (0, 1)
    assert smallest_fitting_layout("7B", 80 * GB) == (1, 2)
    assert smallest_fitting_layout("70B", 80 * GB) == (3, 14)
    assert smallest_fitting_layout("100T", 1 * GB, max_dp=1024) is None


params_st = st.integers(min_value=1, max_value=10**13)
dp_st = st.integers(min_value=1, max_value=1 << 16)
conv_st = st.sampled_from(sorted(CONVENTIONS))


@settings(deadline=None)  # shared CPUs: a slow example is not a failure
@given(params_st, dp_st, conv_st)
def test_more_zero_never_raises_memory(params: int, dp: int, conv: str) -> None:
    totals = [model_state_bytes(params, zero_stage=s, dp=dp, convention=conv).total for s in range(4)]
    assert totals == sorted(totals, reverse=True)


@settings(deadline=None)  # shared CPUs: a slow example is not a failure
@given(params_st, dp_st, st.integers(0, 3), conv_st)
def test_more_gpus_never_raise_memory(params: int, dp: int, stage: int, conv: str) -> None:
    assert (
        model_state_bytes(params, zero_stage=stage, dp=2 * dp, convention=conv).total
        <= model_state_bytes(params, zero_stage=stage, dp=dp, convention=conv).total
    )


@settings(deadline=None)  # shared CPUs: a slow example is not a failure
@given(params_st, dp_st, st.integers(0, 3), conv_st)
def test_shards_cover_the_whole_state(params: int, dp: int, stage: int, conv: str) -> None:
    per_gpu = model_state_bytes(params, zero_stage=stage, dp=dp, convention=conv).total
    assert per_gpu * dp >= params * CONVENTIONS[conv].bytes_per_param
    assert per_gpu <= params * CONVENTIONS[conv].bytes_per_param


@settings(deadline=None)  # shared CPUs: a slow example is not a failure
@given(params_st, st.integers(1, 4096))
def test_stage_3_is_16_psi_over_nd(params: int, dp: int) -> None:
    # ZeRO Sec. 5.3: (4 + K)Ψ/N_d with K = 12, exactly when dp divides Ψ.
    state = model_state_bytes(params * dp, zero_stage=3, dp=dp)
    assert state.total == 16 * params


def test_old_fused_name_is_an_alias() -> None:
    """Links made with ``bf16-adam-fused-10`` still work and give what the cited recipe gives."""
    assert "bf16-adam-fused-10" not in CONVENTIONS
    assert resolve_convention("bf16-adam-fused-10") is CONVENTIONS["bf16-adam-fused-6"]
    assert model_state_bytes(10, convention="bf16-adam-fused-10") == model_state_bytes(
        10, convention="bf16-adam-fused-6"
    )
    assert [v for v, _ in convention_options()] == list(CONVENTIONS)  # old names are accepted, not listed
    for alias, new in CONVENTION_ALIASES.items():
        assert new in CONVENTIONS and alias not in CONVENTIONS


@pytest.mark.parametrize(
    ("zero_stage", "dp", "expected"),
    [
        # FSDP2 (fully_shard, bf16 param_dtype): fp32 sharded weights and gradients, no separate master.
        (3, 4, (1000, 1000, 0, 1000, 1000)),
        (3, 3, (1336, 1336, 0, 1336, 1336)),  # ceil(1000 / 3) = 334 elements per rank, 4 B each
        (0, 1, (4000, 4000, 0, 4000, 4000)),
    ],
)
def test_fsdp2_split_of_mixed_adam_16(zero_stage: int, dp: int, expected: tuple[int, ...]) -> None:
    state = model_state_bytes(1000, zero_stage=zero_stage, dp=dp, split="fsdp2")
    assert (state.weights, state.gradients, state.master, state.momentum, state.variance) == expected
    # Same total as the ZeRO paper's split when nothing is sharded, other components.
    whole = model_state_bytes(1000, split="fsdp2")
    assert whole.total == model_state_bytes(1000).total == 16000
    assert whole.master == 0 and model_state_bytes(1000).master == 4000


def test_splits_keep_the_total() -> None:
    for conv in CONVENTIONS.values():
        for split in conv.splits:
            assert split.bytes_per_param == conv.bytes_per_param, (conv.name, split.framework)
            assert split.source


def test_unknown_split_names_the_field() -> None:
    with pytest.raises(CalcError) as err:
        model_state_bytes(1000, convention="mixed-adam-18", split="fsdp2")
    assert err.value.field == "split"
    assert "fsdp2" in str(err.value)


@pytest.mark.parametrize(
    ("tensors", "ranks", "mode", "expected"),
    [
        ([(10, 100), (3, 3), (1, 7)], 4, "even", 28),  # ceil(110 / 4)
        ([(10, 100), (3, 3), (1, 7)], 4, "fsdp2", 30 + 1 + 7),  # each tensor's rank-0 chunk: ceil(d0 / 4) rows
        ([(10, 100), (3, 3), (1, 7)], 4, "whole-tensor", 100),  # one rank gets the big tensor whole
        ([(8, 64), (8, 64)], 4, "fsdp2", 32),  # dim 0 divides: no padding, the even split
        # Greedy, largest first, to the emptiest rank: {5, 3} and {4, 3, 3}, so 10 (the best split is 9).
        ([(5, 5), (4, 4), (3, 3), (3, 3), (3, 3)], 2, "whole-tensor", 10),
        ([(4, 4)] * 3, 2, "whole-tensor", 8),  # ties go to the lowest rank: rank 0 gets two
        ([(7, 7)], 1, "whole-tensor", 7),
        ([], 4, "fsdp2", 0),
    ],
)
def test_busiest_shard(tensors: list, ranks: int, mode: str, expected: int) -> None:
    assert busiest_shard(tensors, ranks, mode) == expected


def test_busiest_shard_rejects_an_unknown_mode() -> None:
    with pytest.raises(CalcError) as err:
        busiest_shard([(1, 1)], 2, "round-robin")
    assert err.value.field == "shard"
    assert SHARD_MODES == ("even", "fsdp2", "whole-tensor")


@settings(max_examples=200, deadline=None)
@given(
    tensors=st.lists(st.tuples(st.integers(1, 64), st.integers(1, 8)).map(lambda t: (t[0], t[0] * t[1])), max_size=30),
    ranks=st.integers(1, 16),
)
def test_even_is_a_lower_bound_of_every_shard(tensors: list, ranks: int) -> None:
    even = busiest_shard(tensors, ranks)
    total = sum(n for _, n in tensors)
    for mode in SHARD_MODES:
        got = busiest_shard(tensors, ranks, mode)
        assert even <= got <= total or (total == 0 and got == 0), mode
    # FSDP2's padded chunk never grows with more ranks.
    assert busiest_shard(tensors, ranks * 2, "fsdp2") <= busiest_shard(tensors, ranks, "fsdp2")
