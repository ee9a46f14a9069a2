"""calc.memory.finetune: frozen bases, LoRA adapters and the NF4 base of QLoRA (Dettmers et al. 2023, Sec. 3)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.memory.finetune import (
    FINETUNE_METHODS,
    LORA_TARGETS,
    finetune_memory,
    linear_shapes,
    lora_params,
    nf4_bytes,
)
from calc.models.presets import preset

DENSE = ["llama2-7b", "llama3-8b", "gpt2", "gpt2-xl", "llama3-70b"]


@pytest.mark.parametrize(
    ("slug", "rank", "targets", "expected"),
    [
        ("llama2-7b", 8, "qv", 32 * 2 * 8 * (4096 + 4096)),  # LoRA Sec. 7.1: W_q and W_v
        ("llama2-7b", 16, "attention", 32 * 4 * 16 * 8192),  # MHA: q, k, v, o all 4096 x 4096
        ("llama2-7b", 1, "all-linear", 32 * (4 * 8192 + 3 * (4096 + 11008))),
        ("llama3-8b", 8, "attention", 32 * 8 * (2 * 8192 + 2 * (4096 + 1024))),  # GQA: k, v are 4096 -> 1024
        ("gpt2", 4, "all-linear", 12 * 4 * (4 * 1536 + 2 * (768 + 3072))),  # GeLU MLP: no gate
    ],
)
def test_lora_params(slug: str, rank: int, targets: str, expected: int) -> None:
    assert lora_params(preset(slug), rank, targets) == expected


def test_linear_shapes_cover_the_layer_matmuls() -> None:
    """The shapes' weights are the layer's parameters minus norms and biases (Llama has neither bias)."""
    arch = preset("llama2-7b")
    weights = sum(i * o for i, o in linear_shapes(arch).values())
    assert weights == arch.attention_params_per_layer + arch.mlp_params_per_layer(0)


@pytest.mark.parametrize(
    ("sizes", "double_quant", "values", "absmax", "second"),
    [
        ([64], True, 32, 1, 8),  # one block: one 1-byte absmax, one fp32 constant, one fp32 offset
        ([65], True, 33, 2, 8),  # a partial block still takes a constant; an odd count a whole byte
        ([64 * 256 + 1], True, 8193, 257, 12),  # 257 blocks: two second-level constants
        ([64, 64], True, 64, 2, 16),  # constants are per tensor
        ([64 * 10], False, 320, 40, 0),  # no double quantization: fp32 absmax, 4 bytes a block
    ],
)
def test_nf4_bytes(sizes: list[int], double_quant: bool, values: int, absmax: int, second: int) -> None:
    b = nf4_bytes(sizes, double_quant=double_quant)
    assert (b.values_bytes, b.absmax_bytes, b.second_level_bytes) == (values, absmax, second)
    assert b.total == values + absmax + second


def test_double_quantization_matches_the_paper() -> None:
    """Dettmers et al. 2023, Sec. 3: 32/64 = 0.5 bits of constants per parameter, 0.127 bits with DQ."""
    n = 4096 * 11008
    plain = Fraction(8 * nf4_bytes([n], double_quant=False).absmax_bytes, n)
    dq = nf4_bytes([n])
    assert plain == Fraction(1, 2)
    assert abs(float(Fraction(8 * (dq.absmax_bytes + dq.second_level_bytes), n)) - (8 / 64 + 32 / (64 * 256))) < 1e-4


@pytest.mark.parametrize("slug", DENSE)
def test_full_is_sixteen_bytes_and_lora_keeps_two_per_frozen_parameter(slug: str) -> None:
    arch = preset(slug)
    full = finetune_memory(arch, "full")
    lora = finetune_memory(arch, "lora", rank=16)
    assert full.total == 16 * arch.param_count
    assert lora.frozen_bytes == 2 * arch.param_count  # bf16 weight, no gradient, no optimizer state
    assert lora.trainable_bytes == 16 * lora_params(arch, 16)  # adapters: the full mixed-precision Adam state


@pytest.mark.parametrize("slug", DENSE)
def test_qlora_quantizes_the_block_linears_only(slug: str) -> None:
    arch = preset(slug)
    q = finetune_memory(arch, "qlora")
    assert q.frozen_nf4 is not None
    linear = sum(i * o for i, o in linear_shapes(arch).values()) * arch.num_layers
    assert q.frozen_nf4.params == linear
    assert q.frozen_bf16_bytes == 2 * (arch.param_count - linear)  # embedding, output layer, norms, biases
    assert q.total < finetune_memory(arch, "lora").total < finetune_memory(arch, "full").total


def test_convention_changes_only_the_trained_state() -> None:
    arch = preset("llama2-7b")
    a = finetune_memory(arch, "lora", convention="mixed-adam-16")
    b = finetune_memory(arch, "lora", convention="mixed-adam-18")
    assert a.frozen_bytes == b.frozen_bytes and b.trainable_bytes * 16 == a.trainable_bytes * 18


@pytest.mark.parametrize(
    ("call", "message", "code"),
    [
        (
            lambda: finetune_memory(preset("llama2-7b"), "prefix"),
            "method must be one of full, lora, qlora",
            "unknown-name",
        ),
        (lambda: finetune_memory(preset("llama2-7b"), "lora", targets="mlp"), "targets must be one of", "unknown-name"),
        (lambda: finetune_memory(preset("llama2-7b"), "lora", rank=-1), "rank must be", "invalid-value"),
        (
            lambda: finetune_memory(preset("llama2-7b"), "lora", convention="x"),
            "convention must be a key",
            "unknown-name",
        ),
        (lambda: nf4_bytes([0]), "tensor_sizes[0] must be", "invalid-value"),
    ],
)
def test_bad_input_is_a_calc_error(call, message: str, code: str) -> None:
    with pytest.raises(CalcError) as err:
        call()
    assert message in str(err.value) and err.value.code == code


@settings(max_examples=60, deadline=None)
@given(
    slug=st.sampled_from(DENSE),
    rank=st.integers(1, 256),
    targets=st.sampled_from(sorted(LORA_TARGETS)),
    method=st.sampled_from(FINETUNE_METHODS[1:]),
)
def test_a_higher_rank_never_needs_less(slug: str, rank: int, targets: str, method: str) -> None:
    arch = preset(slug)
    lo = finetune_memory(arch, method, rank=rank, targets=targets)
    hi = finetune_memory(arch, method, rank=rank + 1, targets=targets)
    assert lo.total < hi.total and lo.frozen_bytes == hi.frozen_bytes
