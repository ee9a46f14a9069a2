"""Issue 21 Build 3: unpinned, the published layout ranks in the planner's top 3 or within 5% of its top.

The published layout is never refused when pinned. The share of rows that pass is a ratchet: it may not fall
below ``RATCHET`` (measured 2026-12-02: 8 of 20 modelled throughput rows, 40%; 8 of 21 once per-op recomputation's
cost brought ``tt26-8b-gb200-fsdp4-bf16-tps`` within tolerance, a row whose torchtitan layout is not in the
planner's top 3; 9 of 21, 43%, once Megatron's backward TP ``dgrad`` overlap was modelled and the rows' unpublished
micro-batch and interleaving were left to the planner instead of pinned: ``narayanan21-310.1b``'s TP8 PP16 DP15
is within 1.9% of the top at its best interleaving; 18 of 21, 86%, once each row is searched within what its
framework could run: Narayanan et al. and Korthikanti et al. ran Megatron-LM before its distributed optimizer, so
at ZeRO-0 only; 19 of 23, 83%, once Llama 3's two 8K rows were modelled with its placement of the embedding and
the loss: the 16,384-GPU layout ranks first, the 8,192-GPU one needs recomputation in the engine's memory); 20 of
30, 67%, once the 128K Llama 3 row was timed with cuDNN's measured attention rate (its layout is the planner's
first) and five rows of NVIDIA's tuned H100 recipes joined (``dgxc25-*``: CP 2 at 8K, outside the planner's search,
so none passes); 20 of 34, 59%, once three torchtitan 405B rows came within tolerance (demonstration layouts the
planner beats) and the sixth NVIDIA row with Transformer Engine's TP overlap; 19 of 34, 56%, once Narayanan et
al.'s rows ran as Megatron-LM did in April 2021, without the asynchronous TP input-gradient all-reduce (added
in August 2021): their pinned errors narrowed (largest 6.4% to 5.1%), and the 39.1B row's TP8 PP2 fell 5.8% behind
the planner's TP4 PP4; 20 of 34, 59%, once those rows were also searched within Megatron-LM's 2021 pipeline rules
(even stages, interleaving on more than 2 of them: ``pipeline_rules="megatron-2021"``), where the 7.5B row's TP4
ranks third; 20 of 40, 50%, once the same NVIDIA recipes' six FP8 rows joined (CP 2 at 8K too); 32 of 40, 80%,
once CP 2 was searched at 8K and ranked where it saves more than 5% over the best layout without CP
(``calc.timing.plan_space.SHORT_CP_GAIN``): the twelve NVIDIA rows pass, and Table 4's layout stays first on 16,384
GPUs, where CP 2 would save 4.4%; still 32 of 40 once the FP8 rows were planned in FP8 (``plan(dtype="fp8")``):
all six of NVIDIA's still pass; 41 of 51, 80%, once FP8's casts (``FP8_MEMORY_PASSES``), torchtitan's eager kernels
(``EAGER_MEMORY_PASSES``) and the benchmark's 96 GB, 500 W H100 (``predict.gpu``) brought twelve more torchtitan
and Trainy rows within tolerance: nine rank first or within 1%; 8B's CP 1 at 32K (TP2 PP2 CP2 without
recomputation is 18% faster in the engine), the 70B 2D row (TP8's exposed collectives) and the NVFP4 row (timed
as FP8, where its BF16 and MXFP8 twins miss too: the pick's micro-batch 1 needs no recomputation) do not, so the
80% target is an xfail again (41 of 52, 79%). The ratchet
counts passing rows, so a new row the planner misses does not lower it; a row made more faithful to its source
may.
"""

from __future__ import annotations

import pytest

from validation.published.rank import TARGET, rank_all, share

pytestmark = pytest.mark.one_shard  # rank_all() plans every row: 13 s in CPython, 22 s under Pyodide

RATCHET = 41
"""Rows that passed when this test was last set (41 of 52); raise it as the planner improves."""


@pytest.fixture(scope="module")
def results():
    return rank_all()


def test_rows_exist(results):
    assert len(results) >= 20


def test_published_layout_never_refused_when_pinned(results):
    refused = {r["id"]: r["refused"] for r in results if r["refused"]}
    assert not refused


def test_share_does_not_fall(results):
    got = sum(r["passes"] for r in results)
    print(f"published layout in the top 3 or within 5%: {got} of {len(results)} rows")
    assert got >= RATCHET, f"passing rows fell to {got} (ratchet {RATCHET})"


@pytest.mark.xfail(strict=True, reason="41 of 52 rows (79%) against issue 21's 80%: see the docstring")
def test_share_meets_target(results):
    """Issue 21's 80%. The eleven rows that fail: torchtitan's demonstration layouts (tt24-70b-2d-tps and its AsyncTP
    twin, tt24-8b-fsdp8-cp1-tps, tt26-8b-gb200-fsdp4-bf16-tps and its NVFP4 twin, the three 405B rows: PP 8 with 4
    to 8 micro-batches, a 50-110% bubble) that the planner beats; llama3-405b-8k-8192, which needs recomputation in
    the engine's memory (tests/test_planner.py); narayanan21-18.4b and -39.1b, run without the asynchronous TP
    all-reduce Megatron-LM lacked in 2021, 10% and 13% behind the pick."""
    assert share(results) >= TARGET


def test_framework_rows_are_searched_at_their_zero_stage():
    """A row whose framework had one ZeRO stage is planned at it: its pick, and its published layout, use it."""
    from validation.published.predict import load

    stages = {r["id"]: r["framework"]["zero_stages"] for r in load() if "zero_stages" in r.get("framework", {})}
    assert len(stages) >= 19  # Narayanan et al. (10) and Korthikanti et al. (9)
    for r in (r for r in rank_all() if r["id"] in stages):
        assert f"ZeRO-{stages[r['id']][0]} " in r["pick"], r["id"]
        assert f"ZeRO-{stages[r['id']][0]} " in r["published"], r["id"]


def test_why_given_where_not_top(results):
    for r in results:
        if r["rank"] != 1:
            assert r["why"].startswith(("the pick saves", "outside the search")), r["id"]
