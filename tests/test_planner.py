"""calc.timing.planner: the layout search."""

from __future__ import annotations

import pytest

from calc.errors import CalcError
from calc.timing.planner import plan, plan_from_fields

_KEYS = {"dp", "tp", "pp", "cp", "ep", "zero_stage", "micro_batch", "recompute", "interleave", "memory_bytes"}
_KEYS |= {"step_time_s", "tflops_per_gpu", "mfu", "memory", "time"}


def test_layouts_have_the_issue_keys_and_are_ranked():
    r = plan("llama3-8b", gpus=64, seq_len=8192, global_batch=512)
    assert r["layouts"]
    times = [x["step_time_s"] for x in r["layouts"]]
    assert times == sorted(times)
    for x in r["layouts"]:
        assert _KEYS <= set(x)
        assert x["dp"] * x["tp"] * x["pp"] * x["cp"] == 64
        assert isinstance(x["memory_bytes"], int) and x["memory_bytes"] <= x["memory"]["capacity_bytes"]
        assert all(isinstance(x[k], int) for k in ("dp", "tp", "pp", "cp", "ep"))
        assert x["tp"] <= 8  # TP stays inside the NVLink domain


def test_pinned_fields_restrict_the_search():
    r = plan("llama3-8b", gpus=64, seq_len=8192, global_batch=512, tp=2, pp=2)
    assert {(x["tp"], x["pp"]) for x in r["layouts"]} == {(2, 2)}


def test_rejected_say_why_in_words():
    a100 = {"gpu": "a100-40", "intra": "nvlink3", "inter": "ib-hdr"}
    # An A100 40 GB exposes 40,960 MiB (42.9 GB): at 2,048 tokens every layout now fits, at 3,072 some do not.
    r = plan("narayanan-145.6b", gpus=128, seq_len=3072, global_batch=128, **a100)
    reasons = [x["reason"] for x in r["rejected"]]
    fits = [x for x in reasons if x.startswith("does not fit: stage")]
    assert fits and all("of 43 GB" in x for x in fits)


def test_narayanan_145b_published_layout_is_found():
    r = plan("narayanan-145.6b", gpus=1536, seq_len=2048, global_batch=2304, gpu="a100-80", intra="nvlink3",
             inter="ib-hdr", top=50)  # fmt: skip
    assert any(x["tp"] == 8 and x["pp"] == 8 for x in r["layouts"])
    # The 3D page's warning, from the model: TP doubled past the node is slower, and says by how much.
    assert any(x["reason"].startswith("TP=16 spans 2 nodes: its all-gathers run over") for x in r["rejected"])


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"gpus": "64", "seq_len": "4096"}, "global_batch"),
        ({"gpus": "64", "seq_len": "4096", "global_batch": "256", "tp": "3"}, "tp"),
        ({"gpus": "x", "seq_len": "4096", "global_batch": "256"}, "gpus"),
        ({"gpus": "64", "seq_len": "4096", "global_batch": "256", "bogus": "1"}, "bogus"),
    ],
)
def test_bad_fields_name_the_field(fields, field):
    with pytest.raises(CalcError) as err:
        plan_from_fields("llama3-8b", fields)
    assert err.value.field == field


def test_pasted_config_is_accepted():
    config = (
        '{"model_type": "llama", "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 16,'
        ' "num_attention_heads": 32, "num_key_value_heads": 8, "vocab_size": 128256}'
    )
    r = plan(config, gpus=8, seq_len=4096, global_batch=64)
    assert r["layouts"]


def test_cli_contract_json(capsys):
    # python -m calc plan model gpus=N gpu=… seq_len=… global_batch=… [tp=…] --json (issue 9).
    import json

    from calc.timing.planner import run_cli

    assert run_cli(["llama3-8b", "gpus=16", "gpu=h100-sxm", "seq_len=4096", "global_batch=64", "tp=2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"layouts", "rejected"}
    first = out["layouts"][0]
    for key in ("dp", "tp", "pp", "cp", "ep", "zero_stage", "micro_batch", "interleave", "memory_bytes"):
        assert isinstance(first[key], int), key
    for key in ("step_time_s", "tflops_per_gpu", "mfu"):
        assert isinstance(first[key], float), key
    assert isinstance(first["recompute"], str) and first["tp"] == 2


@pytest.mark.parametrize(
    ("argv", "field"),
    [
        (["llama3-8b", "gpus=16", "seq_len=4096"], "global_batch"),
        (["no-such-model", "gpus=16", "seq_len=4096", "global_batch=64"], "model"),
        (["llama3-8b", "gpus=16", "seq_len=4096", "global_batch=64", "gpu=tpu"], "gpu"),
    ],
)
def test_cli_bad_input_exits_2_naming_the_field(capsys, argv, field):
    from calc.timing.planner import run_cli

    assert run_cli(argv) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert captured.out == ""
    assert len(lines) == 1 and lines[0].startswith(f"error: {field} ")
