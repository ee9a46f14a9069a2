"""The stacks' prose numbers (hooks/prose_numbers/stacks.py): loss per logit, per-op checkpointing, FSDP under PP."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hooks"))

from prose_numbers.stacks import NUMBERS  # the hooks folder is on sys.path, not a package

LOSS = [("stk-loss-fused-b", "6"), ("stk-loss-stock-b", "12"), ("stk-loss-compiled-b", "4")]
LOSS += [("stk-loss-chunked-b", "14"), ("stk-loss-chunked-hidden-b", "4")]  # one chunk: 2 B logits + 12 B stock


@pytest.mark.parametrize(("name", "value"), LOSS)
def test_loss_bytes_per_logit(name, value):
    assert NUMBERS[name]() == value


def test_per_op_keeps_less_than_none_and_more_than_full():
    from calc.memory.activations import layer_activations
    from calc.models.presets import preset

    a = preset("llama3-8b")
    kw = dict(kv_heads=a.num_kv_heads, ffn_hidden=a.intermediate_size, mlp="swiglu", dropout=False)
    kw["flash_attention"] = True
    none, op, full = (layer_activations(8192, 1, 4096, 32, recompute=r, **kw).total for r in ("none", "op", "full"))
    assert full < op < none
    assert NUMBERS["stk-l8b-op-share"]() == f"{op / none * 100:.0f}%"


def test_unsharded_stage_is_the_difference_under_pp():
    kept, resharded = (float(NUMBERS[n]().split()[0]) for n in ("stk-pp-kept", "stk-pp-resharded"))
    assert kept > resharded


@pytest.mark.parametrize("page", ["memory/activations.md", "memory/hidden.md"])
def test_every_stack_number_is_printed(page):
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    assert "[[num stk-" in text
    for marker in [m.split("]]")[0] for m in text.split("[[num ")[1:] if m.startswith("stk-")]:
        assert marker in NUMBERS
