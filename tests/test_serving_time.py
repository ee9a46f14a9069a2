"""calc.timing.serving: prefill is compute-bound, small-batch decode bandwidth-bound, and the closed forms agree."""

from __future__ import annotations

import pytest

from calc.errors import CalcError
from calc.hardware import gpu
from calc.memory.inference import weight_bytes
from calc.models.presets import preset
from calc.timing.serving import (
    SERVING_MATMUL_EFFICIENCY,
    decode_compute_bound_batch,
    decode_step,
    kv_transfer_s,
    prefill_time,
    speculative_speedup,
    speculative_tokens_per_step,
)

MODELS = ["llama3-8b", "llama3-70b", "mixtral-8x7b", "qwen2.5-7b"]


@pytest.mark.parametrize("slug", MODELS)
@pytest.mark.parametrize("g", ["h100-sxm", "b200", "a100-80"])
def test_decode_turns_compute_bound_at_the_closed_form_batch(slug: str, g: str) -> None:
    arch = preset(slug)
    b = decode_compute_bound_batch(arch, gpu=g)
    assert decode_step(arch, batch=b, context=0, gpu=g).bound == "compute"
    assert decode_step(arch, batch=b - 1, context=0, gpu=g).bound == "memory"
    if arch.active_param_count == arch.param_count:  # dense: B* is the ridge point times bytes/param over 2
        hw = gpu(g)
        ridge = hw.peak_flops("bf16") * SERVING_MATMUL_EFFICIENCY / hw.hbm_bytes_per_s
        assert abs(b - ridge) <= 1


@pytest.mark.parametrize("slug", MODELS)
def test_small_batch_decode_reads_the_weights_once_per_token(slug: str) -> None:
    arch = preset(slug)
    d = decode_step(arch, batch=1, context=0)
    assert d.bound == "memory"
    assert d.time_s == pytest.approx(weight_bytes(arch.param_count, "bf16") / gpu("h100-sxm").hbm_bytes_per_s)


def test_tensor_parallelism_cuts_decode_latency_but_not_linearly() -> None:
    arch = preset("llama3-70b")
    t1, t8 = decode_step(arch, tp=1), decode_step(arch, tp=8)
    assert t8.time_s < t1.time_s / 4  # a big gain
    assert t8.time_s > t1.time_s / 8  # but the all-reduces keep it off 1/tp
    assert t8.tp_s > 0 == t1.tp_s


def test_longer_context_costs_decode_bandwidth() -> None:
    arch = preset("llama3-8b")
    assert decode_step(arch, batch=32, context=32768).time_s > decode_step(arch, batch=32, context=1024).time_s


def test_prefill_is_compute_bound_and_linear_in_the_batch() -> None:
    arch = preset("llama3-8b")
    one, four = prefill_time(arch, 4096), prefill_time(arch, 4096, batch=4)
    assert one.compute_s > one.memory_s
    assert four.flops == 4 * one.flops


@pytest.mark.parametrize(
    ("alpha", "gamma", "tokens"),
    [
        (0.0, 4, 1.0),  # every draft rejected: the target's own token only
        (0.5, 1, 1.5),
        (0.8, 4, 3.3616),
        (1.0, 7, 8.0),  # every draft accepted: gamma + 1
    ],
)
def test_speculative_tokens_per_step(alpha: float, gamma: int, tokens: float) -> None:
    assert speculative_tokens_per_step(alpha, gamma) == pytest.approx(tokens)
    assert speculative_speedup(alpha, gamma, 0) == pytest.approx(tokens)


def test_kv_transfer_is_linear_in_the_prompt() -> None:
    arch = preset("llama3-70b")
    assert kv_transfer_s(arch, 8192, 50e9) == pytest.approx(2 * kv_transfer_s(arch, 4096, 50e9))


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: decode_step(preset("llama3-8b"), batch=0), "batch"),
        (lambda: decode_step(preset("llama3-8b"), context=-1), "context"),
        (lambda: prefill_time(preset("llama3-8b"), 0), "prompt_tokens"),
        (lambda: speculative_tokens_per_step(1.5, 4), "acceptance"),
        (lambda: kv_transfer_s(preset("llama3-8b"), 10, 0), "link_bytes_per_s"),
    ],
)
def test_bad_input_names_its_field(call, field: str) -> None:
    with pytest.raises(CalcError) as err:
        call()
    assert err.value.field == field
