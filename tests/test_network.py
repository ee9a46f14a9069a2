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
    # The repro, per call: the same b·s·h message, 16 ranks on two nodes vs 8 inside one.
    msg = 4096 * 8192 * 2
    inside = collective_cost("all-gather", msg, group_placement(1, 8, 8), _NET)
    across = collective_cost("all-gather", msg, group_placement(1, 16, 8), _NET)
    assert across.inter_s > 0 and inside.inter_s == 0
    assert across.time_s > 1.3 * inside.time_s
    assert across.latency_s > inside.latency_s


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
