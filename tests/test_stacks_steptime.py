"""Step time under torchtitan's per-op selective checkpointing, and the stack's FSDP resharding."""

from dataclasses import replace

from calc.memory.layout import Layout
from calc.models.presets import preset
from calc.timing.steptime import step_time

LLAMA = preset("llama3-8b")
TITAN = Layout(stack="torchtitan", dp=8, micro_batch=2, global_batch=16, seq_len=8192)


def _time(lay):
    return step_time(LLAMA, lay, gpu="h100-sxm")


def test_op_reruns_wk_wo_and_w3_forward():
    none, op = _time(replace(TITAN, recompute="none")), _time(replace(TITAN, recompute="op"))
    h, kv, f = 4096, 8 * 128, 14336
    tokens = TITAN.global_batch * TITAN.seq_len
    extra = LLAMA.num_layers * 2 * (h * kv + h * h + h * f) * tokens
    assert op.hardware_flops - none.hardware_flops == extra
    assert op.model_flops == none.model_flops


def test_op_costs_between_none_and_full():
    times = [_time(replace(TITAN, recompute=r)).step_time_s for r in ("none", "op", "full")]
    assert times == sorted(times) and len(set(times)) == 3


def test_the_stack_sets_resharding_under_pp():
    lay = Layout(stack="torchtitan", dp=4, pp=2, micro_batch=1, global_batch=16, seq_len=8192)
    assert not lay.reshards_after_forward
    kept = step_time(LLAMA, lay, reshard_after_forward=False).as_dict()
    assert step_time(LLAMA, lay).as_dict() == kept
    assert step_time(LLAMA, lay, reshard_after_forward=True).as_dict() != kept
