"""calc.parallel.network: closed-form placement, α–β collectives per link level."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.parallel.network import LATENCY, Network, Placement, collective_cost, group_placement

GB = 10**9


def _brute(stride: int, size: int, g: int) -> Placement:
    nodes = Counter((i * stride) // g for i in range(size))
    return Placement(size, len(nodes), min(nodes.values()))


@settings(max_examples=300, deadline=None)
@given(
    stride=st.integers(1, 64),
    size=st.integers(1, 300),
    g=st.sampled_from([1, 2, 4, 6, 8, 16, 72]),
)
def test_closed_form_placement_matches_walking_every_rank(stride, size, g):
    assert group_placement(stride, size, g) == _brute(stride, size, g)


@pytest.mark.parametrize(
    ("stride", "size", "g", "nodes", "per_node"),
    [
        (1, 8, 8, 1, 8),  # TP 8 in a DGX
        (1, 16, 8, 2, 8),  # TP 16: two nodes, 8 members on each
        (8, 128, 8, 128, 1),  # DP with tp 8: one member per node
        (2, 8, 8, 2, 4),  # tp 2 x dp 8: 4 DP members per node
        (2, 2**29, 8, 2**27, 4),  # half a billion ranks, O(1)
    ],
)
def test_placement_table(stride, size, g, nodes, per_node):
    assert group_placement(stride, size, g) == Placement(size, nodes, per_node)


def test_placement_rejects_bad_numbers():
    with pytest.raises(CalcError, match="stride"):
        group_placement(0, 8, 8)


_NET = Network("nvlink4", "ib-ndr")


def test_tp16_across_two_nodes_is_slower_than_tp8_inside():
    # The repro, per call: the same b·s·h message, 16 ranks on two nodes vs 8 inside one. NCCL pipelines
    # the NVLink and NIC levels, so the slower sets the time: on A100 nodes with 8 HDR NICs (192 GB/s against
    # NVLink's 235) the network does, by 15/16·S/192 against 7/8·S/235 (1.31x); on H100 with 8 NDR NICs the NICs
    # keep up with NVLink and only the latency is added.
    msg = 4096 * 8192 * 2
    a100 = Network("nvlink3", "ib-hdr")
    inside = collective_cost("all-gather", msg, group_placement(1, 8, 8), a100)
    across = collective_cost("all-gather", msg, group_placement(1, 16, 8), a100)
    assert across.inter_s > 0 and inside.inter_s == 0
    assert across.time_s > 1.25 * inside.time_s
    assert across.latency_s > inside.latency_s
    h100_in = collective_cost("all-gather", msg, group_placement(1, 8, 8), _NET)
    h100_out = collective_cost("all-gather", msg, group_placement(1, 16, 8), _NET)
    assert h100_out.time_s > h100_in.time_s and h100_out.latency_s > h100_in.latency_s


def test_cross_node_all_reduce_is_pipelined_as_measured():
    # NVIDIA/nccl#812: 192 GB/s all-reduce bus bandwidth on DGX A100 nodes with 8 HDR NICs. Adding the intra- and
    # inter-node phases gave 148 (issue 18); NCCL pipelines them.
    net = Network("nvlink3", "ib-hdr", latency=False)
    c = collective_cost("all-reduce", 2**30, group_placement(1, 16, 8), net)
    assert math.isclose(c.bus_bytes_per_s, 192e9, rel_tol=1e-9)
    assert math.isclose(c.time_s, max(c.intra_s, c.inter_s))


def test_oversubscribed_spine_slows_only_groups_wider_than_a_pod():
    # Llama 3 (Dubey et al. 2024, Sec. 3.3.1): 3,072-GPU pods, 1:7 oversubscribed above them.
    flat = Network("nvlink4", "roce-400g", latency=False)
    pods = Network("nvlink4", "roce-400g", latency=False, pod_gpus=3072, oversubscription=7)
    dp = group_placement(8, 128, 8)  # 128 ranks 8 apart: 1,017 GPUs, inside a pod
    pp = group_placement(1024, 16, 8)  # 16 stages 1,024 apart: across pods
    assert collective_cost("all-reduce", GB, dp, pods).time_s == collective_cost("all-reduce", GB, dp, flat).time_s
    slow, fast = collective_cost("p2p", GB, pp, pods), collective_cost("p2p", GB, pp, flat)
    assert math.isclose(slow.time_s, 7 * fast.time_s)
    with pytest.raises(CalcError) as err:
        Network(oversubscription=0.5)
    assert err.value.field == "oversubscription"


def test_latency_is_nccls_ring_count():
    # tuning.cc: base + (steps - inter_steps)·intra + inter_steps·inter; all-reduce 2(n-1) steps, 2(N-1) across.
    c = collective_cost("all-reduce", 1, group_placement(1, 16, 8), _NET)
    expected = LATENCY["base"] + (30 - 2) * LATENCY["scale-up"] + 2 * LATENCY["scale-out"]
    assert math.isclose(c.latency_s, expected)


def test_nics_per_node_divide_the_network_share():
    # A node with 4 NICs for 8 GPUs gives each GPU half a NIC: the cross-node part takes twice as long.
    full = Network("nvlink4", "ib-ndr", latency=False)
    half = Network("nvlink4", "ib-ndr", nics_per_node=4, latency=False)
    where = group_placement(8, 16, 8)
    a = collective_cost("all-reduce", GB, where, full)
    b = collective_cost("all-reduce", GB, where, half)
    assert math.isclose(b.inter_s, 2 * a.inter_s)


def test_a_group_of_one_costs_nothing():
    assert collective_cost("all-reduce", GB, group_placement(1, 1, 8), _NET).time_s == 0


@settings(max_examples=100, deadline=None)
@given(
    collective=st.sampled_from(["all-reduce", "all-gather", "reduce-scatter", "all-to-all"]),
    size=st.integers(1, 10**10),
    n=st.sampled_from([2, 4, 8, 16, 64, 512]),
    stride=st.sampled_from([1, 2, 8]),
)
def test_more_bytes_never_take_less_time(collective, size, n, stride):
    where = group_placement(stride, n, 8)
    assert (
        collective_cost(collective, 2 * size, where, _NET).time_s
        >= collective_cost(collective, size, where, _NET).time_s
    )
