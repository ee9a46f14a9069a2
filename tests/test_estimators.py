"""DeepSpeed's estimators against the example outputs printed in DeepSpeed's memory.rst (GB there = GiB)."""

from __future__ import annotations

import pytest

from calc.estimators import deepspeed_zero2_estimate, deepspeed_zero3_estimate

GIB = 2**30
T5_3B = 2851e6  # memory.rst: t5-3b, 2851M params, 32M in the largest layer, 1 node x 8 GPUs
LARGEST = 32e6


def _gib(n: int) -> float:
    return round(n / GIB, 2)


# memory.rst "estimate_zero2_model_states_mem_needs_all_cold" table: (offload, per CPU, per GPU).
@pytest.mark.parametrize(
    ("kwargs", "cpu", "gpu"),
    [
        ({"cpu_offload": True}, 127.45, 5.31),
        ({"cpu_offload": False, "before_2024": True}, 127.45, 15.93),  # the docs' printed value (old formula)
        ({"cpu_offload": False}, 127.45, 11.28),  # current code, after DeepSpeed PR #5099
    ],
)
def test_zero2_memory_rst(kwargs: dict, cpu: float, gpu: float) -> None:
    e = deepspeed_zero2_estimate(T5_3B, gpus_per_node=8, **kwargs)
    assert (_gib(e.cpu_bytes), _gib(e.gpu_bytes)) == (cpu, gpu)


# memory.rst "estimate_zero3_model_states_mem_needs_all_cold": all 6 rows reproduce exactly.
@pytest.mark.parametrize(
    ("offload_param", "offload_optimizer", "zero_init", "cpu", "gpu"),
    [
        (True, True, True, 71.69, 0.12),
        (True, True, False, 127.45, 0.12),
        (False, True, True, 63.72, 0.78),
        (False, True, False, 127.45, 0.78),
        (False, False, True, 1.43, 6.09),
        (False, False, False, 127.45, 6.09),
    ],
)
def test_zero3_memory_rst(
    offload_param: bool, offload_optimizer: bool, zero_init: bool, cpu: float, gpu: float
) -> None:
    e = deepspeed_zero3_estimate(
        T5_3B,
        LARGEST,
        gpus_per_node=8,
        cpu_offload=offload_optimizer,
        cpu_offload_params=offload_param,
        zero_init=zero_init,
    )
    assert (_gib(e.cpu_bytes), _gib(e.gpu_bytes)) == (cpu, gpu)


def test_zero3_manual_example_t5_large() -> None:
    # memory.rst manual example: t5-large, 4 GPUs, 737.67M params, 32.90M largest layer; "largest layer memory
    # 125MB, case1 3291MB, case3 477MB" with MB = 2**20.
    params, largest = 737_670_000, 32_900_000
    no_offload = deepspeed_zero3_estimate(params, largest, gpus_per_node=4, cpu_offload=False, cpu_offload_params=False)
    opt_offload = deepspeed_zero3_estimate(params, largest, gpus_per_node=4, cpu_offload=True, cpu_offload_params=False)
    assert (4 * largest) >> 20 == 125
    assert no_offload.gpu_bytes >> 20 == 3291
    assert opt_offload.gpu_bytes >> 20 == 477


def test_estimator_vs_our_convention_at_one_gpu() -> None:
    # At one GPU DeepSpeed's ZeRO-2 no-offload estimate is 20 B/param: our mixed-adam-20 convention.
    from calc import model_state_bytes

    assert (
        deepspeed_zero2_estimate(1e9, cpu_offload=False).gpu_bytes
        == model_state_bytes(1e9, convention="mixed-adam-20").total
    )
