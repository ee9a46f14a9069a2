"""The training stack in the calculators (issue 17, Build 7): the stack select sets the stack's defaults, and
will-it-fit and the planner take the loss and the recomputation policy."""

from __future__ import annotations

import json
import re
from html import unescape

import pytest

from calc import Layout, peak_memory, preset
from calc.memory.stacks import STACKS, stack_defaults
from calc.timing.planner import plan_from_fields
from calc.widgets import calculators, render, render_calculator
from calc.widgets.planner import plan_result

KNOBS = ("recompute", "zero_stage", "shard", "flash_attention", "dropout")
"""The training-memory fields a stack decides."""


def _value(fragment: str, name: str) -> int:
    found = re.search(rf'data-value="(-?\d+)" data-unit="B" data-output="{name}"', fragment)
    assert found, name
    return int(found[1])


def _stack_sets(name: str) -> dict[str, dict[str, str]]:
    """The ``data-sets`` of a calculator's stack select, as the browser reads it."""
    found = re.search(r'name="stack" data-sets="([^"]*)"', render_calculator(name))
    assert found, f"{name}: the stack select sets nothing"
    return json.loads(unescape(found[1]))


def test_choosing_a_stack_sets_its_defaults_in_training_memory() -> None:
    defaults = calculators()["training-memory"].defaults
    sets = _stack_sets("training-memory")
    assert set(sets) == set(STACKS)
    assert sets["megatron"] == {k: defaults[k] for k in KNOBS}  # back to the calculator's own values
    titan = stack_defaults("torchtitan", pp=1)
    assert sets["torchtitan"] == {
        "recompute": "op",  # torchtitan's per-op selective checkpointing, not the page's "selective"
        "zero_stage": "3",
        "shard": "fsdp2",
        "flash_attention": "1",
        "dropout": "0",
    }
    assert sets["torchtitan"]["recompute"] == titan["recompute"] and sets["torchtitan"]["zero_stage"] == "3"


def test_the_fields_torchtitan_sets_are_the_stacks_own_layout() -> None:
    """The page after choosing torchtitan computes what ``Layout(stack="torchtitan")`` gives with every knob left to
    the stack; the stack alone (a link or command line that names no other field) takes the same fields."""
    fields = {"stack": "torchtitan", **_stack_sets("training-memory")["torchtitan"]}
    shown = _value(str(render("training-memory", fields)["html"]), "nvidia_smi_bytes")
    layout = Layout(dp=8, seq_len=4096, stack="torchtitan")
    assert (layout.recompute, layout.zero_stage, layout.shard) == ("op", 3, "fsdp2")
    assert shown == peak_memory(preset("llama3-8b"), layout, gpu="h100-sxm").nvidia_smi_bytes  # the default GPU
    stack_only = _value(str(render("training-memory", {"stack": "torchtitan"})["html"]), "nvidia_smi_bytes")
    assert stack_only == shown
    megatron_knobs = {"stack": "torchtitan", **_stack_sets("training-memory")["megatron"]}
    assert _value(str(render("training-memory", megatron_knobs)["html"]), "nvidia_smi_bytes") != shown


@pytest.mark.parametrize(
    ("fields", "layout"),
    [
        ({}, {}),  # the stack's: Megatron-LM, no recomputation, the fused loss
        ({"recompute": "full"}, {"recompute": "full"}),
        ({"recompute": "selective", "loss": "stock"}, {"recompute": "selective", "loss": "stock"}),
        ({"stack": "torchtitan"}, {"stack": "torchtitan"}),  # per-op recomputation, the stock loss
        ({"stack": "torchtitan", "recompute": "none", "loss": "chunked"},) * 2,  # the reader's over the stack's
    ],
)
def test_will_it_fit_activations_take_the_loss_and_recompute(fields, layout) -> None:
    inputs = {"preset": "llama3-8b", "seq_len": "32768", "zero_stage": "3", "dp": "64", **fields}
    shown = _value(str(render("will-it-fit", inputs)["html"]), "peak")
    want = Layout(dp=64, zero_stage=3, seq_len=32768, flash_attention=True, dropout=False, **layout)
    state = _value(str(render("will-it-fit", inputs)["html"]), "total")
    assert shown == max(peak_memory(preset("llama3-8b"), want).nvidia_smi_bytes, state)


def test_will_it_fit_names_the_recomputation_it_counts() -> None:
    text = str(render("will-it-fit", {"preset": "llama3-8b", "stack": "torchtitan"})["html"])
    assert "FlashAttention, per-op selective recomputation, no dropout" in text
    text = str(render("will-it-fit", {"preset": "llama3-8b", "recompute": "full"})["html"])
    assert "FlashAttention, full recomputation, no dropout" in text


def test_the_planner_takes_the_stack_loss_and_recompute() -> None:
    base = {**calculators()["plan"].defaults, "preset": "llama3-8b", "gpus": "64", "global_batch": "256"}
    fields = {**base, "stack": "torchtitan", "loss": "stock", "recompute": "op"}
    _, shown = plan_result(fields)
    page_fields = {"gpus": "64", "gpu": "h100-sxm", "gpus_per_node": "8", "inter": "ib-ndr", "seq_len": "8192"}
    page_fields |= {"global_batch": "256", "safety_margin": "0.05", "matmul_efficiency": ""}
    engine = plan_from_fields("llama3-8b", {**page_fields, "stack": "torchtitan", "loss": "stock", "recompute": "op"})
    assert shown["layouts"] == engine["layouts"] and shown["layouts"]
    assert {x["recompute"] for x in shown["layouts"]} == {"op"}
    assert {x["zero_stage"] for x in shown["layouts"]} <= {0, 3}  # torchtitan: DDP or FSDP
    _, fused = plan_result({**fields, "loss": "fused"})
    assert fused["layouts"] != shown["layouts"]  # the loss reaches the planner's memory
    page = str(render("plan", fields)["html"])
    assert "per-op selective recomputation" in page
