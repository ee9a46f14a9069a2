"""The planner takes the training stack: its defaults, its search, and the knobs given alone."""

import pytest

from calc.errors import CalcError
from calc.timing.planner import plan, plan_from_fields

RUN = {"gpus": 8, "seq_len": 8192, "global_batch": 16}


def _best(**kw):
    return plan("llama3-8b", **RUN, **kw)["layouts"][0]


def test_megatron_named_is_the_default():
    assert plan("llama3-8b", **RUN, stack="megatron") == plan("llama3-8b", **RUN)


def test_torchtitan_searches_its_own_states():
    r = plan("llama3-8b", **RUN, stack="torchtitan", top=20)
    assert {x["zero_stage"] for x in r["layouts"]} <= {0, 3}
    assert {x["recompute"] for x in r["layouts"]} <= {"none", "op", "full"}
    assert r["assumptions"][-1].startswith("stack torchtitan: ZeRO 0, 3, recomputation none, op, full, loss stock")


def test_deepspeed_searches_every_zero_stage_and_whole_layer_checkpoints():
    r = plan("llama3-8b", **RUN, stack="deepspeed", top=40)
    assert {x["zero_stage"] for x in r["layouts"]} <= {0, 1, 2, 3}
    assert {x["recompute"] for x in r["layouts"]} <= {"none", "full"}
    assert r["assumptions"][-1].startswith("stack deepspeed: ZeRO 0, 1, 2, 3, recomputation none, full, loss stock")


def test_op_can_be_pinned_on_either_stack():
    assert _best(recompute="op")["recompute"] == "op"
    assert _best(stack="torchtitan", recompute="op")["recompute"] == "op"


def test_loss_knob_changes_the_peak():
    stock = _best(stack="torchtitan", recompute="op", micro_batch=1, tp=1, pp=1, zero_stage=3)
    fused = _best(stack="torchtitan", recompute="op", micro_batch=1, tp=1, pp=1, zero_stage=3, loss="fused")
    assert stock["memory_bytes"] > fused["memory_bytes"]


def test_fields_reach_the_layout():
    fields = {"gpus": "8", "seq_len": "8192", "global_batch": "16", "tp": "1", "pp": "1", "zero_stage": "3"}
    titan = {**fields, "stack": "torchtitan", "recompute": "op", "loss": "chunked", "loss_chunk_tokens": "512"}
    a = plan_from_fields("llama3-8b", titan)["layouts"][0]
    b = plan("llama3-8b", **RUN, tp=1, pp=1, zero_stage=3, stack="torchtitan", recompute="op", loss="chunked",
             loss_chunk_tokens=512)["layouts"][0]  # fmt: skip
    assert a == b
    compiled = plan_from_fields("llama3-8b", {**fields, "stack": "torchtitan", "compile": "true"})
    assert "loss compiled" in compiled["assumptions"][-1]
    kept = plan_from_fields("llama3-8b", {**fields, "gpu": "h200", "stack": "torchtitan", "reshard_after_forward": "0"})
    assert "as given" in kept["assumptions"][-1]


@pytest.mark.parametrize(("kw", "field"), [({"stack": "colossalai"}, "stack"), ({"loss": "magic"}, "loss"),
                                           ({"recompute": "some"}, "recompute")])  # fmt: skip
def test_bad_stack_knobs_name_their_field(kw, field):
    with pytest.raises(CalcError) as err:
        plan("llama3-8b", **RUN, **kw)
    assert err.value.field == field
