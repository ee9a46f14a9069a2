"""DeepSpeed's estimators against the example outputs printed in DeepSpeed's memory.rst (GB there = GiB)."""

from __future__ import annotations

import pytest

from calc.peers.estimators import deepspeed_zero2_estimate, deepspeed_zero3_estimate

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


# --- llm-analysis 0.2.2 (llm_analysis/analysis.py), numbers worked by hand from its formulas ---------------------
# Per layer (get_activation_memory_per_layer, training), a = 2 B activations, fp32 layer norms, t = tp, p = sp:
#   attn = (sbh/p + 4sbh/t)·a + core + sbh/p (1-byte attention dropout mask, always)
#   core = (2sbh + 4·heads·sb)·a/t (flash) | 2·heads·s²b·a/t (no flash) | 0 (selective); + heads·s²b/t (softmax dropout)
#   mlp  = a·sbh·E·k/p + 2a·sb·ffn·E·k/t;   norms = 2·sbh/p·4
# GPT-like layer s=2048, b=1, h=4096, heads=32, ffn=16384: sbh = 8,388,608.
#   attn = 10·sbh + (2sbh + 4·32·2048)·2 + sbh = 83,886,080 + 34,078,720 + 8,388,608 = 126,353,408
#   mlp  = 2·sbh + 4·2048·16384 = 16,777,216 + 134,217,728 = 150,994,944;   norms = 8·sbh = 67,108,864
GPT = (2048, 1, 4096, 32, 16384)


@pytest.mark.parametrize(
    ("kwargs", "expected"),
    [
        ({}, 344_457_216),  # 126,353,408 + 150,994,944 + 67,108,864
        ({"tp": 8}, 43_057_152),  # sp = tp = 8: every term / 8
        # tp 8, sp 1: attn 3·sbh + 34,078,720/8 + sbh = 37,814,272; mlp 2·sbh + 134,217,728/8 = 33,554,432; norms 8·sbh
        ({"tp": 8, "sp": 1}, 138_477_568),
        ({"recompute": "selective"}, 310_378_496),  # 344,457,216 − the flash core 34,078,720
        ({"recompute": "full"}, 16_777_216),  # the layer input sbh·a
        ({"recompute": "full", "tp": 8}, 2_097_152),  # sbh·a/8
        # no flash: core 2·32·2048²·2 = 536,870,912 in place of 34,078,720, + softmax mask 32·2048² = 134,217,728
        ({"flash_attention": False}, 847_249_408),
        ({"flash_attention": False, "softmax_dropout": True}, 981_467_136),
        # recompute_gelu: the gelu term is a·sb·ffn = 67,108,864 not 2a·sb·ffn; gated: (a/3)·sb·ffn = 22,369,621.3
        ({"recompute_gelu": True}, 277_348_352),
        ({"recompute_gelu": True, "gated": True}, 232_609_109),  # rounded down
    ],
)
def test_llm_analysis_layer_gpt(kwargs: dict, expected: int) -> None:
    from calc.peers.estimators import llm_analysis_layer_activation_bytes

    assert llm_analysis_layer_activation_bytes(*GPT, **kwargs) == expected


@pytest.mark.parametrize(
    ("args", "kwargs", "expected"),
    [
        # GPT-like, 32 layers, V = 50,257: 32·344,457,216 + logits 50257·2048·2 + final norm sbh·4
        (GPT + (32, 50257), {}, 11_022_630_912 + 205_852_672 + 33_554_432),
        # harness llama-gqa eager s=128 b=2 (h 256, heads 8, ffn 688, L 2, V 1024): sbh = 65,536
        #   attn 10·sbh + 2·8·128²·2·2 + sbh = 655,360 + 1,048,576 + 65,536 = 1,769,472
        #   mlp 2·sbh + 4·256·688 = 835,584; norms 8·sbh = 524,288; layer 3,129,344
        #   total 2·3,129,344 + logits 1024·256·2 + final norm 4·sbh = 6,258,688 + 524,288 + 262,144
        ((128, 2, 256, 8, 688, 2, 1024), {"flash_attention": False, "gated": True}, 7_045_120),
        # harness mixtral sdpa s=128 b=2 (h 256, heads 8, expert ffn 344, 4 experts, top-2): E·k = 8
        #   attn 10·sbh + (2sbh + 4·8·256)·2 + sbh = 655,360 + 278,528 + 65,536 = 999,424
        #   mlp 2·sbh·8 + 4·256·344·8 = 1,048,576 + 2,818,048 = 3,866,624; norms 524,288; layer 5,390,336
        ((128, 2, 256, 8, 344, 2, 1024), {"experts": 4, "top_k": 2}, 2 * 5_390_336 + 524_288 + 262_144),
    ],
)
def test_llm_analysis_total(args: tuple, kwargs: dict, expected: int) -> None:
    from calc.peers.estimators import llm_analysis_activation_bytes

    assert llm_analysis_activation_bytes(*args, **kwargs) == expected


# Model states, harness llama-gqa (h 256, heads 8, kv 2, ffn 688, L 2, V 1024), llm-analysis's parameter count:
#   attn 2h² + 2h·(h·kv/heads) = 131,072 + 32,768 = 163,840; mlp 2·h·ffn = 352,256 (no third gated matrix);
#   norms 2h = 512; a layer 516,608; P = 2·516,608 + V·h 262,144 (one shared embedding) + h 256 = 1,295,616.
P_LLAMA = 1_295_616
LLAMA = (256, 8, 688, 2, 1024)


@pytest.mark.parametrize(
    ("kwargs", "weights", "grads", "opt"),
    [
        ({}, 2 * P_LLAMA, 4 * P_LLAMA, 12 * P_LLAMA),  # 18 B/param: w16, fp32 grads, Adam 4 + 8
        ({"dp": 4, "zero_stage": 1}, 2 * P_LLAMA, 4 * P_LLAMA, 3 * P_LLAMA),  # optimizer / 4
        ({"dp": 4, "zero_stage": 2}, 2 * P_LLAMA, P_LLAMA, 3 * P_LLAMA),  # + gradients / 4
        ({"dp": 2, "zero_stage": 3}, P_LLAMA, 2 * P_LLAMA, 6 * P_LLAMA),  # + weights / 2
        ({"optimizer_bytes": 4}, 2 * P_LLAMA, 4 * P_LLAMA, 8 * P_LLAMA),  # e.g. Lion: master 4 + momentum 4
    ],
)
def test_llm_analysis_states(kwargs: dict, weights: int, grads: int, opt: int) -> None:
    from calc.peers.estimators import llm_analysis_model_state_bytes

    st = llm_analysis_model_state_bytes(*LLAMA, kv_heads=2, **kwargs)
    assert (st.weights, st.gradients, st.optimizer_states) == (weights, grads, opt)
    assert st.total == weights + grads + opt


def test_llm_analysis_states_tp_keeps_one_kv_head_per_rank() -> None:
    # kv 2 at tp 4: max(2/4, 1)·4 = 4 KV heads counted, attn 131,072 + 2·256·128 = 196,608; layer 549,376;
    # P = 2·549,376 + 262,144 + 256 = 1,361,152; weights 2P/4 (every matrix and norm over tp) = 680,576
    from calc.peers.estimators import llm_analysis_model_state_bytes

    assert llm_analysis_model_state_bytes(*LLAMA, kv_heads=2, tp=4).weights == 680_576


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [({"recompute": "attn"}, "recompute"), ({"tp": 4, "sp": 2}, "sp"), ({"tp": 0}, "tp")],
)
def test_llm_analysis_bad_input(kwargs: dict, field: str) -> None:
    from calc.errors import CalcError
    from calc.peers.estimators import llm_analysis_layer_activation_bytes

    with pytest.raises(CalcError) as err:
        llm_analysis_layer_activation_bytes(*GPT, **kwargs)
    assert err.value.field == field


def test_llm_analysis_matches_the_package_when_installed() -> None:
    # The validation venv pins llm-analysis==0.2.2; the main venv does not have it.
    pytest.importorskip("llm_analysis")
    from validation.llm_analysis import check

    lines = check()
    assert lines and all(line.startswith("ok") for line in lines), [x for x in lines if not x.startswith("ok")]
