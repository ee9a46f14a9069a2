"""The planner's table of published runs (``calc.timing.published``) is ``validation/published/runs.json``'s."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from calc.models.presets import PRESETS
from calc.timing.published import PUBLISHED_RUNS, published_runs

ROWS = {
    r["id"]: r
    for r in json.loads((Path(__file__).resolve().parents[1] / "validation/published/runs.json").read_text())["rows"]
}


@pytest.mark.parametrize("run", PUBLISHED_RUNS, ids=lambda r: r.id)
def test_each_entry_is_its_row(run):
    row = ROWS[run.id]
    lay = row["layout"]
    assert (run.preset, run.gpu, run.gpus, run.seq_len, run.global_batch) == (
        row["model"],
        row["gpu"],
        row["gpus"],
        lay["seq_len"],
        lay["global_batch"],
    )
    want = tuple(lay.get(k, 1) for k in ("tp", "pp", "dp", "cp", "interleave"))
    if "interleave" in row.get("unpublished", ()):
        want = (*want[:4], 0)  # not published: neither shown nor pinned
    assert run.degrees == want
    value = row["measured"]["value"]
    assert f"{value:,g}" in run.measured or f"{value:.2f}" in run.measured
    assert run.run == row["source"].get("row", "")
    assert run.dtype == row.get("predict", {}).get("dtype", "bf16")  # "plan it" plans an FP8 run in FP8
    assert row["hardware"].startswith(run.hardware) and row["hardware"][len(run.hardware) :][:1] in ("", ",")
    assert run.source.split(",")[0] in row["source"]["name"]


def test_every_throughput_row_of_a_preset_is_listed():
    want = [i for i, r in ROWS.items() if r["kind"] == "throughput" and r["model"] in PRESETS]
    assert [r.id for r in PUBLISHED_RUNS] == want


def test_runs_by_preset():
    assert {r.who for r in published_runs("llama3.1-405b")} >= {"Meta", "NVIDIA", "torchtitan"}
    assert published_runs("no-such-model") == ()


def test_stack_is_the_rows():
    for run in PUBLISHED_RUNS:
        stack = ROWS[run.id].get("knobs", {}).get("stack", "megatron")
        assert run.stack == (stack if stack in ("megatron", "torchtitan", "deepspeed") else "megatron"), run.id


def test_the_planner_lists_them_with_links_that_pin_their_degrees():
    """Issue 21 Build 4: the plan page shows the published layout of a preset ("Meta ran this on ...")."""
    import html
    import re

    from calc.widgets import calculators, render

    fragment = str(render("plan", {"preset": "llama3.1-405b", "gpus": "16384"})["html"])
    section = fragment[fragment.index("Published runs of this model") :]
    assert "Dubey et al. 2024" in section and "16,384 × H100 80 GB (700 W), TP8 PP16 DP128" in section
    hrefs = [html.unescape(h) for h in re.findall(r'data-site-href="(plan/\?[^"]*)"', section)]
    assert len(hrefs) == len(published_runs("llama3.1-405b"))
    fields = set(calculators()["plan"].defaults)
    for href in hrefs:
        query, _, anchor = href.removeprefix("plan/?").partition("#")
        pairs = dict(p.split("=", 1) for p in query.split("&"))
        assert anchor == "calc-plan" and {k.removeprefix("plan.") for k in pairs} <= fields
    fp8 = [h for h in hrefs if "plan.dtype=fp8" in h]  # NVIDIA's FP8 runs are planned in FP8
    assert len(fp8) == sum(r.dtype == "fp8" for r in published_runs("llama3.1-405b")) > 0
    assert "Published runs" not in str(render("plan", {"preset": "gpt2", "gpus": "8", "global_batch": "64"})["html"])
