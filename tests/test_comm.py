"""Tests for calc.parallel.comm: collective costs, interconnect presets and a layout's per-step communication."""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _helpers import NARAYANAN_TABLE_1
from calc.errors import CalcError
from calc.hardware import GPUS
from calc.parallel.comm import (
    COLLECTIVES,
    INTERCONNECTS,
    SCALE_UP_FOR_GPU,
    Interconnect,
    algorithm_bandwidth,
    bus_factor,
    collective_bytes_sent,
    collective_time_s,
    group_bus_bandwidth,
    interconnect,
    step_communication,
)

GB = 10**9
"""nccl-tests prints GB/s as 10^9 bytes/s (src/all_reduce.cu: ``bytes / 1.0E9 / sec``)."""

TIME_REL_TOL = 1e-12
"""Seconds are floats computed from exact fractions: equal to the closed form up to float rounding."""

MEASURED_EFFICIENCY_TOL = 0.01
"""A maintainer's measured busbw is matched by the peak model times the implied efficiency within 1 percentage point."""


# --- bus-bandwidth factors (nccl-tests doc/PERFORMANCE.md, "Summary") ---------------------------


@pytest.mark.parametrize(
    ("collective", "n", "factor"),
    [
        ("all-reduce", 8, Fraction(7, 4)),  # golden: 2(n-1)/n = 1.75
        ("all-gather", 8, Fraction(7, 8)),  # golden: (n-1)/n = 0.875
        ("reduce-scatter", 8, Fraction(7, 8)),
        ("all-to-all", 8, Fraction(7, 8)),
        ("broadcast", 8, Fraction(1)),
        ("reduce", 8, Fraction(1)),
        ("p2p", 2, Fraction(1)),
        ("all-reduce", 2, Fraction(1)),  # two ranks: each sends half, then the other half
        ("all-reduce", 1, Fraction(0)),
        ("all-gather", 1024, Fraction(1023, 1024)),
    ],
)
def test_bus_factor_table(collective, n, factor):
    assert bus_factor(collective, n) == factor


def test_bus_factor_n8_golden_floats():
    # nccl-tests doc/PERFORMANCE.md factors evaluated at n = 8 (reference notes Sec. 7).
    assert float(bus_factor("all-reduce", 8)) == 1.75
    assert float(bus_factor("all-gather", 8)) == float(bus_factor("reduce-scatter", 8)) == 0.875


# --- bytes sent per rank -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("collective", "size", "n", "sent"),
    [
        ("all-reduce", 1000, 8, 1750),
        ("all-reduce", 1000, 3, 1334),  # 4/3 x 1000 = 1333.33..., rounded up
        ("all-gather", 1000, 3, 667),  # 2/3 x 1000 = 666.67, rounded up
        ("reduce-scatter", 1024, 4, 768),
        ("all-to-all", 800, 8, 700),  # 1/8 of the send buffer stays local
        ("broadcast", 1000, 8, 1000),
        ("reduce", 1000, 8, 1000),
        ("p2p", 1000, 2, 1000),
        ("all-reduce", 1000, 1, 0),  # one rank: nothing moves
        ("broadcast", 1000, 1, 0),
        ("all-reduce", 0, 8, 0),
    ],
)
def test_collective_bytes_sent_table(collective, size, n, sent):
    result = collective_bytes_sent(collective, size, n)
    assert result == sent
    assert isinstance(result, int)


@pytest.mark.parametrize(
    ("collective", "size", "n", "bw", "seconds"),
    [
        # nccl-tests doc/PERFORMANCE.md: t = (S/B) * 2(n-1)/n for all-reduce, (S/B)(n-1)/n for
        # reduce-scatter/all-gather, S/B for broadcast and reduce.
        ("all-reduce", 10**9, 8, 300 * GB, 1.75 / 300),
        ("reduce-scatter", 10**9, 8, 300 * GB, 0.875 / 300),
        ("all-gather", 10**9, 8, 300 * GB, 0.875 / 300),
        ("broadcast", 10**9, 8, 300 * GB, 1 / 300),
        ("reduce", 10**9, 8, 300 * GB, 1 / 300),
        ("p2p", 25 * 10**9, 2, 25 * GB, 1.0),
        ("all-reduce", 10**9, 1, 300 * GB, 0.0),
    ],
)
def test_collective_time_table(collective, size, n, bw, seconds):
    assert math.isclose(collective_time_s(collective, size, n, bw), seconds, rel_tol=TIME_REL_TOL, abs_tol=0)


def test_efficiency_divides_bandwidth():
    full = collective_time_s("all-reduce", 10**9, 8, 450 * GB)
    assert math.isclose(
        collective_time_s("all-reduce", 10**9, 8, 450 * GB, efficiency=0.5), 2 * full, rel_tol=TIME_REL_TOL
    )


def test_algorithm_bandwidth_is_busbw_over_factor():
    # nccl-tests: busbw = algbw x factor.
    assert algorithm_bandwidth("all-reduce", 8, 175 * GB) == 100 * GB
    assert algorithm_bandwidth("all-gather", 8, 350 * GB) == 400 * GB
    assert algorithm_bandwidth("broadcast", 8, 50 * GB) == 50 * GB


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda: bus_factor("allreduce", 8), "collective"),
        (lambda: bus_factor("all-reduce", 0), "n"),
        (lambda: collective_bytes_sent("all-reduce", -1, 8), "size_bytes"),
        (lambda: collective_bytes_sent("all-reduce", 1.5, 8), "size_bytes"),
        (lambda: collective_bytes_sent("all-reduce", True, 8), "size_bytes"),
        (lambda: collective_time_s("all-reduce", 10, 8, 0), "bus_bytes_per_s"),
        (lambda: collective_time_s("all-reduce", 10, 8, float("inf")), "bus_bytes_per_s"),
        (lambda: collective_time_s("all-reduce", 10, 8, 1e9, efficiency=0), "efficiency"),
        (lambda: collective_time_s("all-reduce", 10, 8, 1e9, efficiency=1.2), "efficiency"),
        (lambda: collective_time_s("all-reduce", 10, 8, 1e9, efficiency=float("nan")), "efficiency"),
        (lambda: algorithm_bandwidth("all-reduce", 1, 1e9), "n"),  # algbw is undefined on one rank
        (lambda: interconnect("nvlink6"), "interconnect"),
    ],
)
def test_collective_errors(call, field):
    with pytest.raises(CalcError) as err:
        call()
    assert err.value.field == field


# --- interconnect presets ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "per_direction_gb", "bidirectional_gb"),
    [
        ("nvlink3", 300, 600),  # A100: marketed 600 GB/s = both directions
        ("nvlink4", 450, 900),  # H100/H200: marketed 900 GB/s
        ("nvlink5", 900, 1800),  # B200: marketed 1.8 TB/s
        ("infinity-fabric-mi300x", 448, 896),  # MI300X: 7 links x 128 GB/s bidirectional
        ("ib-hdr", 25, 50),  # 200 Gb/s = 25 GB/s each way
        ("ib-ndr", 50, 100),  # 400 Gb/s
        ("ib-xdr", 100, 200),  # 800 Gb/s
        ("roce-400g", 50, 100),  # 400 GbE
    ],
)
def test_interconnect_directions_and_bits(name, per_direction_gb, bidirectional_gb):
    link = interconnect(name)
    assert link.bytes_per_s == per_direction_gb * GB
    assert link.bidirectional_bytes_per_s == bidirectional_gb * GB


@pytest.mark.parametrize(
    ("name", "gt_per_s"),
    [("pcie4-x16", 16), ("pcie5-x16", 32)],
)
def test_pcie_encoding(name, gt_per_s):
    # PCIe 3.0+: 128b/130b; x16 lanes; 8 bits per byte. Rounded down to whole bytes/s.
    assert interconnect(name).bytes_per_s == math.floor(Fraction(gt_per_s * GB * 16 * 128, 130 * 8))


def test_interconnect_presets_are_complete():
    for name, link in INTERCONNECTS.items():
        assert link.name == name
        assert link.scope in ("scale-up", "scale-out")
        assert 0 < link.peer_bytes_per_s <= link.bytes_per_s
        assert link.source and link.marketed
        assert link.as_dict()["bidirectional_bytes_per_s"] == 2 * link.bytes_per_s
    assert interconnect(INTERCONNECTS["nvlink4"]) is INTERCONNECTS["nvlink4"]


def test_every_gpu_preset_has_a_scale_up_link():
    assert set(SCALE_UP_FOR_GPU) == set(GPUS)
    for gpu_name, link in SCALE_UP_FOR_GPU.items():
        if INTERCONNECTS[link].name.startswith("nvlink") or link.startswith("infinity"):
            # calc.hardware stores the marketed (bidirectional) scale-up figure.
            assert INTERCONNECTS[link].bidirectional_bytes_per_s == GPUS[gpu_name].scaleup_bytes_per_s


# --- where a group lives ---------------------------------------------------------------------


def test_dgx_a100_allreduce_busbw_golden():
    # NVIDIA/nccl#812 (AddyLaddy): "On an Nvidia DGX-A100 system we have 8x200Gbit/s IB cards and we measure
    # 192GB/s AllReduce BusBW." Model: 8 members per node x 25 GB/s = 200 GB/s peak; 192 = 96% of it.
    peak = group_bus_bandwidth("all-reduce", 16, intra_node=False, members_per_node=8, intra="nvlink3", inter="ib-hdr")
    assert peak == 200 * GB
    measured = group_bus_bandwidth(
        "all-reduce", 16, intra_node=False, members_per_node=8, intra="nvlink3", inter="ib-hdr", inter_efficiency=0.96
    )
    assert abs(measured / (192 * GB) - 1) <= MEASURED_EFFICIENCY_TOL


@pytest.mark.parametrize("collective", ["all-reduce", "all-gather", "all-to-all", "p2p"])
def test_one_gpu_per_node_runs_at_nic_speed(collective):
    # NVIDIA/nccl-tests#130 (sjeaugey): "If you have one GPU per node the BusBw should be the NIC BW."
    assert group_bus_bandwidth(collective, 32, intra_node=False, members_per_node=1) == 50 * GB


@pytest.mark.parametrize("nodes", [2, 4, 8, 16, 128])
def test_alltoall_across_nodes_golden(nodes):
    # NVIDIA/nccl-tests#130 (sjeaugey): on N nodes all-to-all busbw is "N/(N-1)x the bandwidth per GPU".
    # The model is exact per rank, (n-1)/(n-k) x NIC; the quoted form drops the (n-1)/n of the busbw factor.
    n, k = 8 * nodes, 8
    bw = group_bus_bandwidth("all-to-all", n, intra_node=False, members_per_node=k)
    assert bw == Fraction(n - 1, n - k) * 50 * GB
    assert bw == Fraction(nodes, nodes - 1) * 50 * GB * Fraction(n - 1, n)


def test_ring_across_nodes_capped_by_scale_up():
    # 8 members per node on PCIe 4.0 (31.5 GB/s) with 8 x 400G NICs: the node's PCIe path is the bottleneck.
    bw = group_bus_bandwidth("all-reduce", 16, intra_node=False, members_per_node=8, intra="pcie4-x16")
    assert bw == INTERCONNECTS["pcie4-x16"].bytes_per_s


def test_mesh_point_to_point_gets_one_link():
    # MI300X: each GPU has one 64 GB/s-per-direction link to each peer; a send uses one.
    assert group_bus_bandwidth("p2p", 2, intra_node=True, members_per_node=2, intra="infinity-fabric-mi300x") == 64 * GB
    assert (
        group_bus_bandwidth("all-reduce", 8, intra_node=True, members_per_node=8, intra="infinity-fabric-mi300x")
        == 448 * GB
    )


# --- a layout's step: golden volumes -------------------------------------------------------------


def _dp_bytes(step) -> int:
    return sum(t.bytes_sent for t in step.terms if t.group == "dp-cp")


@pytest.mark.parametrize(
    ("zero_stage", "volume", "names"),
    [
        # ZeRO (arXiv:1910.02054) Sec. 7.1: DP all-reduce = reduce-scatter + all-gather = 2Ψ.
        (0, 2, ["dp-grad-all-reduce"]),
        # Sec. 7.2.1: P_os (+g): reduce-scatter of gradients Ψ + all-gather of parameters Ψ = 2Ψ.
        (1, 2, ["dp-grad-reduce-scatter", "dp-param-all-gather"]),
        (2, 2, ["dp-grad-reduce-scatter", "dp-param-all-gather"]),
        # Sec. 7.2.2: P_os+g+p: all-gather in forward Ψ + in backward Ψ + reduce-scatter Ψ = 3Ψ = 1.5x DP.
        (3, 3, ["dp-grad-reduce-scatter", "dp-param-all-gather"]),
    ],
)
@pytest.mark.parametrize("dp", [2, 8, 64, 1024])
def test_zero_section7_volumes(zero_stage, volume, names, dp):
    psi = 7_516_192_768  # divisible by every dp here, so the ring volumes are exact
    step = step_communication(params=psi, layers=36, hidden=4096, seq=2048, dp=dp, zero_stage=zero_stage)
    assert [t.name for t in step.terms] == names
    # Exact ring volume: the paper's 2Ψ / 3Ψ elements times (n-1)/n, 2 bytes each.
    assert _dp_bytes(step) == volume * psi * 2 * (dp - 1) // dp
    # The paper's large-n figure, within the ring's (n-1)/n.
    assert abs(_dp_bytes(step) / (volume * psi * 2) - 1) <= 1 / dp


def test_zero3_is_one_and_a_half_times_dp():
    # ZeRO Sec. 7.2.2: "3Ψ ... 1.5x" of baseline DP.
    kw = {"params": "7.5B", "layers": 36, "hidden": 4096, "seq": 2048, "dp": 64}
    assert Fraction(
        _dp_bytes(step_communication(zero_stage=3, **kw)), _dp_bytes(step_communication(zero_stage=0, **kw))
    ) == Fraction(3, 2)


@pytest.mark.parametrize(
    ("zero_stage", "m", "calls"),
    [
        (0, 4, {"dp-grad-all-reduce": 1}),  # full gradients accumulate locally, one all-reduce per step
        (1, 4, {"dp-grad-reduce-scatter": 1, "dp-param-all-gather": 1}),
        (2, 4, {"dp-grad-reduce-scatter": 4, "dp-param-all-gather": 1}),  # only a shard is kept: every micro-batch
        (3, 4, {"dp-grad-reduce-scatter": 4, "dp-param-all-gather": 8}),  # gather for fwd and bwd of each
    ],
)
def test_zero_calls_with_gradient_accumulation(zero_stage, m, calls):
    step = step_communication(
        params="1B", layers=8, hidden=2048, seq=2048, dp=8, zero_stage=zero_stage, num_microbatches=m
    )
    assert {t.name: t.calls for t in step.terms} == calls


# Narayanan et al. 2021 Table 1 rows with tensor parallelism (s = 2048; b = 1 assumed, the paper does not print it):
# params, hidden, layers, tp, pp, gpus.
NARAYANAN_TP_ROWS = [(r.params, r.hidden, r.layers, r.t, r.p, r.gpus) for r in NARAYANAN_TABLE_1 if r.t > 1]


@pytest.mark.parametrize(("params", "h", "layers", "tp", "pp", "gpus"), NARAYANAN_TP_ROWS)
def test_narayanan_tp_volume_per_layer(params, h, layers, tp, pp, gpus):
    # Narayanan Sec. 3.2: per layer per micro-batch each device moves 8bsh(t-1)/t (2 all-reduces fwd + 2 bwd).
    s, b, m, e = 2048, 1, 4, 2
    dp = gpus // (tp * pp)
    step = step_communication(
        params=params, layers=layers, hidden=h, seq=s, micro_batch=b, num_microbatches=m, dp=dp, tp=tp, pp=pp
    )
    (term,) = [t for t in step.terms if t.group == "tp"]
    per_layer_per_mb = Fraction(term.bytes_sent, math.ceil(layers / pp) * m)
    assert per_layer_per_mb == Fraction(8 * b * s * h * (tp - 1), tp) * e
    assert term.intra_node  # TP <= 8 is inside an 8-GPU node
    # Stage boundary: bsh per pair and micro-batch; with scatter/gather each TP rank sends bsh/t (Sec. 4.1).
    pp_terms = [t for t in step.terms if t.group == "pp"]
    assert (pp == 1) == (not pp_terms)
    if pp_terms:
        assert pp_terms[0].message_bytes == b * s * h // tp * e
        assert pp_terms[0].calls == m * (2 if pp >= 3 else 1)


def test_sequence_parallel_moves_the_same_volume():
    # Korthikanti et al. 2022 Sec. 4.2.2: all-gather + reduce-scatter instead of all-reduce, same bandwidth.
    # Bandwidth only: SP makes two calls where the all-reduce made one, so it pays latency twice.
    kw = {"params": "18.4B", "layers": 40, "hidden": 6144, "seq": 2048, "tp": 8, "num_microbatches": 3}
    kw["latency"] = False
    plain = step_communication(**kw)
    sp = step_communication(sequence_parallel=True, **kw)
    assert [t.collective for t in sp.terms] == ["all-gather", "reduce-scatter"]
    assert sum(t.bytes_sent for t in sp.terms) == plain.total_bytes
    assert math.isclose(sp.total_time_s, plain.total_time_s, rel_tol=TIME_REL_TOL)


def test_recompute_matches_zero_section8():
    # ZeRO Sec. 8: with activation checkpointing Megatron "performs a total of 12 x seq x hidden data movement
    # per transformer block" (6 all-reduces of 2 x message size); exact ring: 12 s h (t-1)/t per block.
    s, h, t = 1024, 8192, 16
    step = step_communication(params="100B", layers=10, hidden=h, seq=s, tp=t, recompute=True, bytes_per_element=1)
    (term,) = step.terms
    assert term.calls == 6 * 10
    assert Fraction(term.bytes_sent, 10) == Fraction(12 * s * h * (t - 1), t)


def test_context_parallel_kv_volume():
    # Megatron context_parallel.rst: all-gather K/V in forward, again in backward, reduce-scatter dK/dV.
    b, s, h, cp, tp, layers, m, e = 1, 131072, 16384, 16, 8, 126, 1, 2
    kv = 2 * 8 * 128  # Llama 3 405B: 8 KV heads of 128 (GQA)
    step = step_communication(
        params="405B", layers=layers, hidden=h, seq=s, tp=tp, cp=cp, pp=16, dp=8, sequence_parallel=True, kv_dims=kv,
        micro_batch=b, num_microbatches=m,
    )  # fmt: skip
    cp_terms = {t.name: t for t in step.terms if t.group == "cp"}
    assert set(cp_terms) == {"cp-kv-all-gather", "cp-kv-grad-reduce-scatter"}
    layers_ps = math.ceil(layers / 16)
    message = b * s * (kv // tp) * e  # the whole sequence's K and V for this TP rank's heads
    assert cp_terms["cp-kv-all-gather"].calls == 2 * layers_ps * m
    assert cp_terms["cp-kv-grad-reduce-scatter"].calls == layers_ps * m
    assert sum(t.bytes_sent for t in cp_terms.values()) == 3 * layers_ps * m * (cp - 1) * message // cp
    # tp 8 x cp 16 = 128 GPUs: CP leaves the node; 16 members, one per node (stride 8), so one NIC each,
    # at the 96% of NDR's 50 GB/s that NCCL maintainers measure (calc.parallel.network.ACHIEVED_SHARE).
    assert not cp_terms["cp-kv-all-gather"].intra_node
    assert cp_terms["cp-kv-all-gather"].bus_bytes_per_s == 48 * GB


def test_expert_parallel_alltoall_volume():
    # Dispatch + combine in forward and backward: 4 all-to-alls of tokens x top_k x h per MoE layer and micro-batch.
    b, s, h, k, ep, moe, m = 1, 4096, 4096, 2, 8, 32, 2
    step = step_communication(
        params="47B",
        layers=32,
        hidden=h,
        seq=s,
        dp=8,
        ep=ep,
        top_k=k,
        expert_params="45B",
        micro_batch=b,
        num_microbatches=m,
    )
    (a2a,) = [t for t in step.terms if t.group == "ep"]
    assert a2a.collective == "all-to-all"
    assert a2a.calls == 4 * moe * m
    assert a2a.bytes_sent == 4 * moe * m * (ep - 1) * (b * s * k * h * 2) // ep
    # dp x cp / ep = 1: every expert has one replica, so expert gradients need no reduction.
    assert {t.group for t in step.terms} == {"dp-cp", "ep"}
    step_dp16 = step_communication(params="47B", layers=32, hidden=h, seq=s, dp=16, ep=ep, top_k=k, expert_params="45B")
    (edp,) = [t for t in step_dp16.terms if t.group == "expert-dp"]
    assert edp.group_size == 2
    # Expert parameters are split 8 ways, then all-reduced over the 2 expert-data-parallel replicas.
    assert edp.message_bytes == math.ceil(45 * GB / ep) * 2


def test_llama3_layout_placement():
    # Llama 3 405B (arXiv:2407.21783) Table 4, 8,192 GPUs: TP 8, PP 16, DP 64, 8 GPUs per node.
    step = step_communication(
        params="405B", layers=126, hidden=16384, seq=8192, tp=8, pp=16, dp=64, sequence_parallel=True,
        num_microbatches=16, zero_stage=1,
    )  # fmt: skip
    where = {t.group: (t.intra_node, t.bus_bytes_per_s) for t in step.terms}
    assert where["tp"] == (True, 352_500_000_000)  # NVLink 4 within the node, at NCCL's 235/300 share
    assert where["dp-cp"] == (False, 48 * GB)  # stride 8: one member per node, one 400G NIC at 96%
    assert where["pp"] == (False, 48 * GB)
    assert step.gpus == 8192


def test_megatron_docstring_groups_fit_nodes():
    # Megatron initialize_model_parallel docstring: 16 GPUs, tp 2, pp 4 -> dp 2; TP groups [g0, g1],...,
    # DP groups [g0, g2], ..., PP groups [g0, g4, g8, g12]. With 8 GPUs per node TP and DP stay inside,
    # PP crosses nodes.
    step = step_communication(params="10B", layers=24, hidden=4096, seq=2048, tp=2, pp=4, dp=2, num_microbatches=8)
    where = {t.group: t.intra_node for t in step.terms}
    assert where == {"tp": True, "dp-cp": True, "pp": False}


def test_interleaving_multiplies_pipeline_sends():
    # Narayanan Sec. 2.2.2: the interleaved schedule's point-to-point communication grows with v.
    kw = {
        "params": "145.6B",
        "layers": 80,
        "hidden": 12288,
        "seq": 2048,
        "tp": 8,
        "pp": 8,
        "dp": 24,
        "num_microbatches": 96,
    }
    for v in (1, 2, 5):
        (term,) = [t for t in step_communication(virtual_stages=v, **kw).terms if t.group == "pp"]
        assert term.calls == 96 * 2 * v


def test_no_parallelism_no_communication():
    step = step_communication(params="1B", layers=16, hidden=2048, seq=2048)
    assert step.terms == () and step.total_bytes == 0 and step.total_time_s == 0


def test_as_dict_round_trip():
    step = step_communication(params="7B", layers=32, hidden=4096, seq=4096, dp=16, tp=2, pp=2, num_microbatches=4)
    data = step.as_dict()
    assert data["total_bytes"] == sum(t["bytes_sent"] for t in data["terms"])
    assert data["gpus"] == 64 and data["gpus_per_node"] == 8
    assert sum(step.by_group().values()) == step.total_bytes


@pytest.mark.parametrize(
    ("kwargs", "field", "code"),
    [
        ({"ep": 3, "dp": 8}, "ep", "not-divisible"),
        ({"cp": 3}, "seq", "not-divisible"),
        ({"tp": 3, "sequence_parallel": True}, "seq", "not-divisible"),
        ({"virtual_stages": 2}, "virtual_stages", "invalid-value"),  # needs pp > 1
        ({"stage_params": "2B"}, "stage_params", "invalid-value"),
        ({"expert_params": "2B"}, "expert_params", "invalid-value"),
        ({"moe_layers": 17}, "moe_layers", "invalid-value"),
        ({"zero_stage": 4}, "zero_stage", "invalid-value"),
        ({"sequence_parallel": "yes"}, "sequence_parallel", "invalid-value"),
        ({"intra": "nvlink9"}, "interconnect", "unknown-name"),
        ({"inter_efficiency": 0}, "inter_efficiency", "invalid-value"),
        ({"dp": 0}, "dp", "invalid-value"),
        ({"params": "lots"}, "params", "invalid-value"),
    ],
)
def test_step_errors(kwargs, field, code):
    base = {"params": "1B", "layers": 16, "hidden": 2048, "seq": 2048}
    with pytest.raises(CalcError) as err:
        step_communication(**{**base, **kwargs})
    assert (err.value.field, err.value.code) == (field, code)


# --- invariants ------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    collective=st.sampled_from(COLLECTIVES),
    n=st.integers(1, 4096),
    a=st.integers(0, 10**13),
    b=st.integers(0, 10**13),
)
def test_bytes_sent_monotone_and_bounded(collective, n, a, b):
    small, large = sorted((a, b))
    assert collective_bytes_sent(collective, small, n) <= collective_bytes_sent(collective, large, n)
    assert collective_bytes_sent(collective, large, n) <= 2 * large  # an all-reduce never sends 2S or more


@settings(max_examples=200, deadline=None)
@given(
    collective=st.sampled_from(COLLECTIVES),
    n=st.integers(2, 4096),
    size=st.integers(1, 10**12),
    bw=st.integers(10**9, 10**12),
)
def test_time_is_bytes_over_busbw(collective, n, size, bw):
    # t = S x factor / busbw; bytes sent round up by less than one byte.
    t = collective_time_s(collective, size, n, bw)
    assert math.isclose(t * bw, float(bus_factor(collective, n) * size), rel_tol=1e-9)
    assert collective_bytes_sent(collective, size, n) - t * bw < 1 + 1e-6 * size


_layouts = st.fixed_dictionaries(
    {
        "tp": st.sampled_from([1, 2, 4, 8]),
        "pp": st.sampled_from([1, 2, 4]),
        "cp": st.sampled_from([1, 2]),
        "dp": st.sampled_from([1, 2, 4, 16]),
        "num_microbatches": st.integers(1, 16),
        "zero_stage": st.integers(0, 3),
        "sequence_parallel": st.booleans(),
        "recompute": st.booleans(),
    }
)
_MODEL = {"params": "13B", "layers": 40, "hidden": 5120, "seq": 4096}


@settings(max_examples=100, deadline=None)
@given(layout=_layouts)
def test_more_microbatches_never_send_less(layout):
    step = step_communication(**_MODEL, **layout)
    more = step_communication(**_MODEL, **{**layout, "num_microbatches": layout["num_microbatches"] + 1})
    before = {t.name: t.bytes_sent for t in step.terms}
    after = {t.name: t.bytes_sent for t in more.terms}
    assert before.keys() == after.keys()
    assert all(after[k] >= before[k] for k in before)


@settings(max_examples=100, deadline=None)
@given(layout=_layouts)
def test_zero_stages_order_dp_volume(layout):
    # Per step: stages 0 and 1 move the same (2Ψ); stage 2 at least as much (per-micro-batch reduce-scatter);
    # stage 3 at least 1.5x stage 0.
    vols = [_dp_bytes(step_communication(**_MODEL, **{**layout, "zero_stage": z})) for z in range(4)]
    assert abs(vols[0] - vols[1]) <= 2  # ceil rounding of two collectives vs one
    assert vols[1] <= vols[2] + 2 <= vols[3] + 2
    assert 2 * vols[3] >= 3 * vols[0] - 6


@settings(max_examples=100, deadline=None)
@given(layout=_layouts, small=st.sampled_from([1, 2, 4, 8]), factor=st.sampled_from([2, 4, 8]))
def test_bigger_nodes_never_slow_a_step(layout, small, factor):
    # With NVLink faster than the NIC, putting more of a group inside a node never raises the time.
    slow = step_communication(**_MODEL, **layout, gpus_per_node=small)
    fast = step_communication(**_MODEL, **layout, gpus_per_node=small * factor)
    assert slow.total_bytes == fast.total_bytes
    assert fast.total_time_s <= slow.total_time_s * (1 + 1e-12)


@settings(max_examples=100, deadline=None)
@given(layout=_layouts, eff=st.floats(0.05, 1.0))
def test_efficiency_only_stretches_time(layout, eff):
    # Bandwidth only (latency does not scale with the links' achieved share).
    full = step_communication(**_MODEL, **layout, intra_efficiency=1, inter_efficiency=1, latency=False)
    derated = step_communication(**_MODEL, **layout, intra_efficiency=eff, inter_efficiency=eff, latency=False)
    assert full.total_bytes == derated.total_bytes
    assert math.isclose(derated.total_time_s * eff, full.total_time_s, rel_tol=1e-9)
    for term in derated.terms:
        assert term.bytes_sent > 0 and term.time_s > 0
        assert math.isclose(term.time_s * term.bus_bytes_per_s, term.bytes_sent, rel_tol=1e-9)


def test_interconnect_objects_accepted():
    custom = Interconnect("lab", "Lab fabric", "scale-out", 10 * GB, 10 * GB, "80 Gb/s", "measured")
    step = step_communication(
        params="1B", layers=16, hidden=2048, seq=2048, dp=16, inter=custom, intra_efficiency=1, inter_efficiency=1,
        latency=False,
    )  # fmt: skip
    # NCCL's rings: 8 per node, each through one 10 GB/s NIC carrying 2(n-1)/n of 1/8 of the message, pipelined
    # with the NVLink 4 hops (the ring at NVLink's speed); the NICs are the slower level.
    (term,) = step.terms
    message = 2 * 10**9 // 1  # bf16 gradients of 1B parameters
    on_nvlink = Fraction(15, 8) * term.message_bytes / (450 * GB)
    expected = max(on_nvlink, Fraction(15, 8) * Fraction(term.message_bytes, 8) / (10 * GB))
    assert message == term.message_bytes
    assert math.isclose(term.time_s, float(expected), rel_tol=1e-9)


# --- the calculator (calc/widgets/comm.py) ---------------------------------------------------------


def _widget(**inputs: str) -> str:
    from calc.widgets.comm import CALCULATOR

    return CALCULATOR.compute({**CALCULATOR.defaults, **inputs})


def test_widget_defaults_match_the_engine():
    from calc.units import format_bytes

    step = step_communication(
        params="70B", layers=80, hidden=8192, seq=4096, num_microbatches=16, tp=8, pp=4, dp=8, zero_stage=1,
        sequence_parallel=True, kv_dims=2048, top_k=2,
    )  # fmt: skip
    fragment = _widget()
    assert f'data-output="total_bytes">{format_bytes(step.total_bytes)}<' in fragment
    for term in step.terms:
        assert f'data-output="{term.name}-bytes">{format_bytes(term.bytes_sent)}<' in fragment


def test_widget_without_parallelism():
    assert 'data-output="total_bytes">0 B<' in _widget(tp="1", pp="1", dp="1")


def test_widget_efficiency_and_units():
    full = _widget()
    assert "GiB" in _widget(unit="GiB")
    assert full != _widget(inter_efficiency="50")


@pytest.mark.parametrize(
    ("inputs", "field"),
    [
        ({"intra": "ib-ndr"}, "intra"),  # a network preset is not a scale-up link
        ({"inter": "nvlink4"}, "inter"),
        ({"intra_efficiency": "0"}, "intra_efficiency"),
        ({"inter_efficiency": "120"}, "inter_efficiency"),
        ({"ep": "3"}, "ep"),
        ({"grad_bytes": "8"}, "grad_bytes"),
    ],
)
def test_widget_errors_name_the_field(inputs, field):
    with pytest.raises(CalcError) as err:
        _widget(**inputs)
    assert err.value.field == field


@pytest.mark.parametrize("garbage", ["", "abc", "-1", "1e999", "NaN", "9" * 5000, "<script>"])
def test_widget_garbage_is_an_error_not_a_crash(garbage):
    from calc.widgets.comm import CALCULATOR

    for f in CALCULATOR.fields:
        if f.kind == "checkbox":
            continue  # any text is read as "off"
        try:
            assert "<script>" not in _widget(**{f.name: garbage})
        except CalcError as err:
            assert err.field in (f.name, "unit")


def test_widget_tp_across_two_nodes_costs_more():
    # Issue 9's repro: the calculator's defaults with tp 8 -> 16 (two nodes per TP group). Before the α-β
    # hierarchical model the step's communication went *down* (493 -> 471 ms): the cross-node TP group was
    # credited with every NIC and paid no latency.
    import re

    def total(html: str) -> float:
        (text,) = re.findall(r'data-output="total_time"[^>]*>([\d.]+) (ms|s)<', html)
        return float(text[0]) * (1e-3 if text[1] == "ms" else 1)

    # Since the two levels are pipelined (NVIDIA/nccl#812), eight NDR NICs keep up with NVLink 4: the cross-node
    # TP group costs its latency and the flat ring's network share, not a second phase.
    assert total(_widget(tp="16")) > total(_widget(tp="8"))
