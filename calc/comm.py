"""Communication: what each collective costs, the links it runs on, and what a layout sends per step.

Three layers, each usable on its own:

1. **Collectives.** For a message of ``S`` bytes over ``n`` ranks, the bytes the
   busiest rank sends and the time at a given *bus bandwidth*. The factors are
   the bus-bandwidth factors of nccl-tests ``doc/PERFORMANCE.md``: a ring
   all-reduce moves ``2(n-1)/n · S`` per rank; all-gather, reduce-scatter and
   all-to-all move ``(n-1)/n · S`` (``S`` the *full*, gathered size); broadcast,
   reduce and point-to-point move ``S``.
2. **Interconnects.** Presets for NVLink, Infinity Fabric, PCIe, InfiniBand and
   RoCE, always stored **per GPU, per direction, in bytes/s** (marketing figures
   for NVLink are both directions summed; network figures are bits/s).
3. **A layout's step.** [`step_communication`][calc.comm.step_communication]
   lists every collective a data/tensor/pipeline/context/expert-parallel layout
   implies, with its group, bytes per GPU per step, and time where the group
   lives (NVLink inside a node, the network across nodes).

algbw vs busbw (nccl-tests ``doc/PERFORMANCE.md``): the *algorithm bandwidth*
is ``S / t``; the *bus bandwidth* is ``algbw × factor`` and is what can be
compared with a link's peak, independent of ``n``. So the time of a collective
is ``t = S · factor / busbw``, which is also ``bytes sent per rank / busbw``.
Latency (the constant per-call overhead) is left out: it matters for small
messages only.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

from calc.errors import CalcError
from calc.units import parse_count, parse_positive_int

__all__ = [
    "COLLECTIVES",
    "CommTerm",
    "GROUP_ORDER",
    "INTERCONNECTS",
    "Interconnect",
    "SCALE_UP_FOR_GPU",
    "StepComm",
    "algorithm_bandwidth",
    "bus_factor",
    "collective_bytes_sent",
    "collective_time_s",
    "group_bus_bandwidth",
    "interconnect",
    "step_communication",
]

COLLECTIVES: tuple[str, ...] = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "broadcast",
    "reduce",
    "p2p",
)
"""Collective names accepted everywhere in this module (``p2p`` is a send/receive pair)."""

GROUP_ORDER: tuple[str, ...] = ("tp", "cp", "ep", "dp", "pp")
"""Rank order assumed when placing groups on nodes, innermost first.

This is Megatron-LM's default ``order="tp-cp-ep-dp-pp"``
(``megatron/core/parallel_state.py``, ``initialize_model_parallel``): TP ranks
are adjacent, then CP, then DP, and pipeline stages are outermost. Expert layers
use a second rank generator with the same order and ``cp = 1``: an expert
(EP) group spans ``tp × ep`` adjacent ranks and its data-parallel group is the
remaining ``dp × cp / ep`` ranks. The gradient all-reduce of the dense
weights runs over DP and CP together (Megatron "piggybacks" CP on the DP group,
same docstring).
"""


# --------------------------------------------------------------------------- collectives


def _collective(name: str) -> str:
    if name not in COLLECTIVES:
        raise CalcError("collective", f"must be one of {', '.join(COLLECTIVES)}", name, code="unknown-name")
    return name


def bus_factor(collective: str, n: int) -> Fraction:
    """The nccl-tests bus-bandwidth factor: ``busbw = algbw × factor``.

    NVIDIA/nccl-tests ``doc/PERFORMANCE.md``, "Summary": AllReduce ``2(n-1)/n``;
    ReduceScatter, AllGather and AlltoAll ``(n-1)/n``; Broadcast and Reduce ``1``.
    Point-to-point is ``1`` (algbw and busbw coincide, same document).
    For a ring it is also the bytes each rank sends per byte of message.

    Args:
        collective: One of [`COLLECTIVES`][calc.comm.COLLECTIVES].
        n: Ranks in the group.

    Returns:
        The factor as an exact fraction.

    Raises:
        CalcError: For an unknown collective or ``n < 1``.

    Examples:
        >>> bus_factor("all-reduce", 8), bus_factor("all-gather", 8)
        (Fraction(7, 4), Fraction(7, 8))
        >>> float(bus_factor("all-reduce", 8)), float(bus_factor("reduce-scatter", 8))
        (1.75, 0.875)
        >>> bus_factor("broadcast", 8)
        Fraction(1, 1)
    """
    _collective(collective)
    ranks = parse_positive_int(n, "n")
    if collective == "all-reduce":
        return Fraction(2 * (ranks - 1), ranks)
    if collective in ("all-gather", "reduce-scatter", "all-to-all"):
        return Fraction(ranks - 1, ranks)
    return Fraction(1)


def collective_bytes_sent(collective: str, size_bytes: int, n: int) -> int:
    """Bytes the busiest rank sends for one collective on a message of ``size_bytes``.

    Ring algorithms (nccl-tests ``doc/PERFORMANCE.md``): all-reduce sends
    ``2(n-1)/n · S``, all-gather and reduce-scatter ``(n-1)/n · S`` where ``S`` is the
    full (gathered, or pre-scatter) size, all-to-all ``(n-1)/n · S`` where ``S`` is
    one rank's whole send buffer (``1/n`` of it stays local). A pipelined broadcast
    or reduce makes every rank but one forward the full ``S``; a point-to-point send
    moves ``S``. With ``n = 1`` nothing is sent.

    Rounding: the exact value ``factor · S`` is rounded **up** to a whole byte, so
    per-rank bytes times ranks never undercount the traffic.

    Args:
        collective: One of [`COLLECTIVES`][calc.comm.COLLECTIVES].
        size_bytes: ``S``, the message size in bytes (an ``int`` ≥ 0).
        n: Ranks in the group.

    Returns:
        Bytes sent by the busiest rank.

    Raises:
        CalcError: For an unknown collective, a negative size or ``n < 1``.

    Examples:
        >>> collective_bytes_sent("all-reduce", 1_000, 8)
        1750
        >>> collective_bytes_sent("all-gather", 1_000, 3)   # 2/3 of 1000, rounded up
        667
        >>> collective_bytes_sent("p2p", 1_000, 2), collective_bytes_sent("all-reduce", 1_000, 1)
        (1000, 0)
    """
    factor = bus_factor(collective, n)
    size = _size(size_bytes)
    if n == 1:
        return 0
    return math.ceil(factor * size)


def _size(size_bytes: object) -> int:
    if isinstance(size_bytes, bool) or not isinstance(size_bytes, int) or size_bytes < 0:
        raise CalcError("size_bytes", "must be a whole number of bytes, 0 or more", size_bytes)
    return size_bytes


def _efficiency(value: object, field: str) -> Fraction:
    rule = "must be a number greater than 0 and at most 1"
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise CalcError(field, rule, value)
    if isinstance(value, float) and not math.isfinite(value):
        raise CalcError(field, rule, value)
    frac = Fraction(value)
    if not 0 < frac <= 1:
        raise CalcError(field, rule, value)
    return frac


def _bandwidth(value: object, field: str) -> Fraction:
    rule = "must be a positive number of bytes per second"
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise CalcError(field, rule, value)
    if isinstance(value, float) and not math.isfinite(value):
        raise CalcError(field, rule, value)
    frac = Fraction(value)
    if frac <= 0:
        raise CalcError(field, rule, value)
    return frac


def collective_time_s(
    collective: str,
    size_bytes: int,
    n: int,
    bus_bytes_per_s: float,
    *,
    efficiency: float = 1.0,
) -> float:
    """Time of one collective: ``t = S · factor / (busbw · efficiency)``.

    nccl-tests ``doc/PERFORMANCE.md``: with per-rank bandwidth ``B`` an all-reduce
    takes ``(S/B) · 2(n-1)/n``, reduce-scatter and all-gather ``(S/B) · (n-1)/n``,
    broadcast and reduce ``S/B``. ``bus_bytes_per_s`` is that ``B``: for one link
    type, the per-GPU, per-direction peak of [`Interconnect`][calc.comm.Interconnect].
    The constant per-call latency is ignored (large-message regime).

    Args:
        collective: One of [`COLLECTIVES`][calc.comm.COLLECTIVES].
        size_bytes: ``S`` in bytes.
        n: Ranks in the group.
        bus_bytes_per_s: Bus bandwidth ``B`` in bytes/s (10^9 B/s = 1 GB/s, as nccl-tests prints).
        efficiency: Achieved busbw as a fraction of ``bus_bytes_per_s`` (default 1: the peak).

    Returns:
        Seconds, as a ``float`` (0.0 when ``n = 1``).

    Raises:
        CalcError: On an unknown collective or a non-positive size, bandwidth or efficiency.

    Examples:
        >>> round(collective_time_s("all-reduce", 10**9, 8, 300 * 10**9), 6)   # 1 GB on 8 A100s, NVLink3 peak
        0.005833
        >>> round(collective_time_s("all-reduce", 10**9, 8, 300 * 10**9, efficiency=0.8), 6)
        0.007292
    """
    factor = bus_factor(collective, n)
    size = _size(size_bytes)
    bw = _bandwidth(bus_bytes_per_s, "bus_bytes_per_s")
    eff = _efficiency(efficiency, "efficiency")
    if n == 1:
        return 0.0
    return float(factor * size / (bw * eff))


def algorithm_bandwidth(collective: str, n: int, bus_bytes_per_s: float) -> float:
    """The algorithm bandwidth ``algbw = S / t = busbw / factor`` (nccl-tests ``doc/PERFORMANCE.md``).

    Dividing a message size by algbw gives the time directly; algbw falls as
    ``n`` grows while busbw stays comparable with the link peak.

    Args:
        collective: One of [`COLLECTIVES`][calc.comm.COLLECTIVES].
        n: Ranks in the group (at least 2).
        bus_bytes_per_s: The bus bandwidth in bytes/s.

    Returns:
        Bytes/s of message per second.

    Raises:
        CalcError: On an unknown collective, ``n < 2`` or a non-positive bandwidth.

    Examples:
        >>> algorithm_bandwidth("all-reduce", 8, 175 * 10**9) / 1e9
        100.0
    """
    ranks = parse_positive_int(n, "n", minimum=2)
    factor = bus_factor(collective, ranks)
    return float(_bandwidth(bus_bytes_per_s, "bus_bytes_per_s") / factor)


# --------------------------------------------------------------------------- interconnects


@dataclass(frozen=True)
class Interconnect:
    """One link type, with its bandwidth stated per GPU and per direction.

    Attributes:
        name: Stable identifier (``"nvlink4"``, ``"ib-ndr"``...).
        label: Human label.
        scope: ``"scale-up"`` (inside a node: NVLink, Infinity Fabric, PCIe) or
            ``"scale-out"`` (between nodes: one NIC per GPU).
        bytes_per_s: Peak per GPU, **one direction**, in bytes/s (10^9 = 1 GB/s). This is
            the bus bandwidth a ring collective can reach at 100% efficiency.
        peer_bytes_per_s: Peak from one GPU to **one** peer, one direction. Equal to
            ``bytes_per_s`` behind a switch (NVSwitch, PCIe switch, network); one link's
            worth on a point-to-point mesh (MI300X).
        marketed: The figure as marketed, with how it converts.
        source: Where the figure is published.
    """

    name: str
    label: str
    scope: str
    bytes_per_s: int
    peer_bytes_per_s: int
    marketed: str
    source: str

    @property
    def bidirectional_bytes_per_s(self) -> int:
        """Both directions summed, the way NVLink and Infinity Fabric are marketed.

        Examples:
            >>> interconnect("nvlink3").bidirectional_bytes_per_s // 10**9
            600
        """
        return 2 * self.bytes_per_s

    def as_dict(self) -> dict[str, object]:
        """The preset as plain data (for JSON and the calculators).

        Examples:
            >>> interconnect("ib-ndr").as_dict()["bytes_per_s"]
            50000000000
        """
        out: dict[str, object] = asdict(self)
        out["bidirectional_bytes_per_s"] = self.bidirectional_bytes_per_s
        return out


_G = 10**9
_PCIE_ENCODING = Fraction(128, 130)
"""PCIe 3.0 and later line code: 128b/130b."""

INTERCONNECTS: dict[str, Interconnect] = {
    i.name: i
    for i in (
        Interconnect(
            "nvlink3",
            "NVLink 3 (A100)",
            "scale-up",
            300 * _G,
            300 * _G,
            "600 GB/s per GPU, both directions summed: 12 links × 25 GB/s per direction",
            "NVIDIA A100 datasheet figure (600 GB/s, 12 links) as quoted by glennklockwood.com/garden/processors/A100 "
            "and NVIDIA's NVLink generation table (6/12/18 links: 300/600/900 GB/s total)",
        ),
        Interconnect(
            "nvlink4",
            "NVLink 4 (H100 / H200)",
            "scale-up",
            450 * _G,
            450 * _G,
            "900 GB/s per GPU, both directions summed: 18 links × 25 GB/s per direction",
            "NVIDIA H100 datasheet figure (900 GB/s) as quoted by glennklockwood.com/garden/processors/h100; "
            "MLCommons inference v4.1 H200-SXM-141GB system description (18 links, 900 GB/s)",
        ),
        Interconnect(
            "nvlink5",
            "NVLink 5 (B200)",
            "scale-up",
            900 * _G,
            900 * _G,
            "1.8 TB/s per GPU, both directions summed: 18 links × 50 GB/s per direction",
            "NVIDIA HGX B200 figure (1.8 TB/s NVLink per GPU, 14.4 TB/s per 8-GPU node) as quoted by "
            "glennklockwood.com/garden/processors/B200",
        ),
        Interconnect(
            "infinity-fabric-mi300x",
            "Infinity Fabric (MI300X, 8-GPU mesh)",
            "scale-up",
            448 * _G,
            64 * _G,
            "896 GB/s per GPU, both directions summed: 7 links × 128 GB/s (64 GB/s per direction), "
            "one link to each of the 7 peers (no switch)",
            "AMD MI300X spec table (896 GB/s Infinity Fabric) as quoted by alpharomercoma/MI300X-vs-H200 "
            "METHODOLOGY.md; 7 links of 16 lanes at 32 Gb/s = 128 GB/s bidirectional each (wheelersnetwork.com, "
            "January 2024, on AMD's MI300 launch)",
        ),
        Interconnect(
            "pcie4-x16",
            "PCIe 4.0 x16",
            "scale-up",
            int(16 * _G * 16 * _PCIE_ENCODING / 8),
            int(16 * _G * 16 * _PCIE_ENCODING / 8),
            "~32 GB/s per direction: 16 GT/s × 16 lanes / 8 × 128/130 = 31.5 GB/s",
            "PCIe 4.0: 16 GT/s per lane, 128b/130b encoding (PCI-SIG base specification figures as tabulated "
            "by hpc-notes.pages.dev/reference/pcie: 31.5 GB/s for x16)",
        ),
        Interconnect(
            "pcie5-x16",
            "PCIe 5.0 x16",
            "scale-up",
            int(32 * _G * 16 * _PCIE_ENCODING / 8),
            int(32 * _G * 16 * _PCIE_ENCODING / 8),
            "~64 GB/s per direction: 32 GT/s × 16 lanes / 8 × 128/130 = 63.0 GB/s",
            "PCIe 5.0: 32 GT/s per lane, 128b/130b encoding (PCI-SIG base specification figures as tabulated "
            "by hpc-notes.pages.dev/reference/pcie: 63.0 GB/s for x16)",
        ),
        Interconnect(
            "ib-hdr",
            "InfiniBand HDR 200 Gb/s",
            "scale-out",
            25 * _G,
            25 * _G,
            "200 Gb/s per port and direction = 25 GB/s (one NIC per GPU)",
            "InfiniBand HDR: 200 Gb/s per 4x port (4 lanes × 50 Gb/s PAM4), ConnectX-6; IBTA rate as "
            "summarized by aicplight.com; NCCL maintainers quote 24 GB/s achieved (NVIDIA/nccl#412)",
        ),
        Interconnect(
            "ib-ndr",
            "InfiniBand NDR 400 Gb/s",
            "scale-out",
            50 * _G,
            50 * _G,
            "400 Gb/s per port and direction = 50 GB/s (one NIC per GPU)",
            "InfiniBand NDR: 400 Gb/s per 4x port (4 lanes × 100 Gb/s PAM4), ConnectX-7; IBTA rate as "
            "summarized by nexuswise-c.com; 48-49 GB/s achieved per NIC (NVIDIA/nccl-tests#267)",
        ),
        Interconnect(
            "ib-xdr",
            "InfiniBand XDR 800 Gb/s",
            "scale-out",
            100 * _G,
            100 * _G,
            "800 Gb/s per port and direction = 100 GB/s (one NIC per GPU)",
            "InfiniBand XDR: 800 Gb/s per port (4 lanes × 200 Gb/s PAM4), ConnectX-8; IBTA rate as "
            "summarized by nexuswise-c.com and yobitel.com",
        ),
        Interconnect(
            "roce-400g",
            "RoCE 400 GbE",
            "scale-out",
            50 * _G,
            50 * _G,
            "400 Gb/s Ethernet per port and direction = 50 GB/s (one NIC per GPU)",
            "400 Gb/s Ethernet port rate (IEEE 802.3bs 400GbE) carrying RDMA over Converged Ethernet; "
            "e.g. 8 × 400G ConnectX-7 per H100 node (NVIDIA/nccl-tests#267)",
        ),
    )
}
"""Link presets by name. ``bytes_per_s`` is per GPU and per direction, in bytes (not bits) per second.

Measured figures, for choosing an ``efficiency`` (all from NCCL maintainers in
public issue threads, not datasheets): ConnectX-7 NICs at NDR "should achieve up
to 48-49 GB/s per NIC" (NVIDIA/nccl-tests#267), i.e. ~97% of 50 GB/s; an HDR
200 Gb/s NIC gives "24GB/s inter-node" busbw (NVIDIA/nccl#412), 96% of 25 GB/s;
on a DGX A100 with 8 × 200 Gb/s IB "we measure 192GB/s AllReduce BusBW"
(NVIDIA/nccl#812), 96% of 8 × 25 GB/s. No comparably sourced figure was found
for NVLink all-reduce busbw, so none is given here.
"""

SCALE_UP_FOR_GPU: dict[str, str] = {
    "a100-40": "nvlink3",
    "a100-80": "nvlink3",
    "h100-sxm": "nvlink4",
    "h100-pcie": "pcie5-x16",
    "h200": "nvlink4",
    "b200": "nvlink5",
    "mi300x": "infinity-fabric-mi300x",
}
"""The scale-up link of each [`calc.hardware`][calc.hardware] preset (H100 PCIe: PCIe 5.0, no NVLink bridge assumed)."""


def interconnect(name: str | Interconnect) -> Interconnect:
    """Look up a link preset by name (an [`Interconnect`][calc.comm.Interconnect] passes through).

    Raises:
        CalcError: For an unknown name, listing the known ones.

    Examples:
        >>> interconnect("nvlink4").bytes_per_s
        450000000000
        >>> interconnect("pcie4-x16").bytes_per_s
        31507692307
        >>> interconnect("ethernet")
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: interconnect must be one of ib-hdr, ib-ndr, ib-xdr,
        infinity-fabric-mi300x, nvlink3, nvlink4, nvlink5, pcie4-x16, pcie5-x16, roce-400g (got 'ethernet')
    """
    if isinstance(name, Interconnect):
        return name
    try:
        return INTERCONNECTS[name]
    except (KeyError, TypeError):
        raise CalcError(
            "interconnect", f"must be one of {', '.join(sorted(INTERCONNECTS))}", name, code="unknown-name"
        ) from None


# --------------------------------------------------------------------------- placement


def _placement(stride: int, size: int, gpus_per_node: int) -> tuple[bool, int]:
    """Whether the group holding rank 0 sits in one node, and its fewest members on any node.

    The group is ranks ``0, stride, 2·stride, ...`` (``size`` of them); node ``i``
    holds ranks ``i·g ... (i+1)·g - 1``. With power-of-two degrees every group is
    placed like this one.
    """
    nodes = Counter((i * stride) // gpus_per_node for i in range(size))
    return len(nodes) == 1, min(nodes.values())


def group_bus_bandwidth(
    collective: str,
    n: int,
    *,
    intra_node: bool,
    members_per_node: int,
    intra: str | Interconnect = "nvlink4",
    inter: str | Interconnect = "ib-ndr",
    intra_efficiency: float = 1.0,
    inter_efficiency: float = 1.0,
) -> Fraction:
    """Effective bus bandwidth (bytes/s) of a collective on a group, given where it lives.

    Inside one node, every collective runs at the scale-up link's per-direction
    peak, except a point-to-point send, which gets the bandwidth to one peer.

    Across nodes (one NIC per GPU, each of the group's ``k`` members on a node using
    its own NIC):

    * Ring collectives (all-reduce, all-gather, reduce-scatter, broadcast, reduce):
      ``min(scale-up, k × NIC)``. Data "go through each GPU and enter/exit the node
      once" per ring (S. Jeaugey, NVIDIA/nccl#687), and NCCL runs one ring per NIC,
      so the node's ``k`` NICs add up; with ``k = 1`` busbw is one NIC
      (NVIDIA/nccl-tests#130). A DGX A100 with 8 × 200 Gb/s NICs measures 192 GB/s
      all-reduce busbw against this model's 200 GB/s (NVIDIA/nccl#812).
    * All-to-all: ``(n-k)/n · S`` leaves the node through each GPU's own NIC (all-to-all
      "cannot aggregate the bandwidth of multiple NICs", NVIDIA/nccl-tests#267) while
      ``(k-1)/n · S`` stays on the scale-up link; the slower part sets the time, so
      ``busbw = (n-1) / max((n-k)/NIC, (k-1)/scale-up)``. On ``N`` nodes this is about
      ``N/(N-1)`` × NIC, as NVIDIA/nccl-tests#130 states.
    * Point-to-point: one NIC.

    Two-node runs can beat these figures with NCCL's tree algorithm (NVIDIA/nccl-tests#196);
    the model is the ring, which is what larger jobs see.

    Args:
        collective: One of [`COLLECTIVES`][calc.comm.COLLECTIVES].
        n: Ranks in the group.
        intra_node: ``True`` when the whole group sits in one node.
        members_per_node: ``k``, the group's members on each node it spans.
        intra: Scale-up link (preset name or [`Interconnect`][calc.comm.Interconnect]).
        inter: Scale-out link per GPU.
        intra_efficiency: Achieved fraction of the scale-up peak.
        inter_efficiency: Achieved fraction of the network peak.

    Returns:
        The bus bandwidth in bytes/s, exact.

    Raises:
        CalcError: On unknown names or bad numbers.

    Examples:
        >>> float(group_bus_bandwidth("all-reduce", 16, intra_node=False, members_per_node=8,
        ...                           intra="nvlink3", inter="ib-hdr")) / 1e9
        200.0
        >>> float(group_bus_bandwidth("all-reduce", 16, intra_node=False, members_per_node=1,
        ...                           intra="nvlink3", inter="ib-hdr")) / 1e9
        25.0
        >>> float(group_bus_bandwidth("all-to-all", 16, intra_node=False, members_per_node=8,
        ...                           intra="nvlink4", inter="ib-ndr")) / 1e9   # 2 nodes: ~2 x NIC
        93.75
    """
    _collective(collective)
    ranks = parse_positive_int(n, "n")
    k = parse_positive_int(members_per_node, "members_per_node")
    up = interconnect(intra)
    out = interconnect(inter)
    eff_up = _efficiency(intra_efficiency, "intra_efficiency")
    eff_out = _efficiency(inter_efficiency, "inter_efficiency")
    up_bw = up.bytes_per_s * eff_up
    if intra_node:
        if collective == "p2p":
            return up.peer_bytes_per_s * eff_up
        return up_bw
    nic = out.bytes_per_s * eff_out
    if collective == "p2p":
        return nic
    if collective == "all-to-all":
        k = min(k, ranks - 1)
        slowest = max(Fraction(ranks - k) / nic, Fraction(k - 1) / up_bw)
        return Fraction(ranks - 1) / slowest
    return min(up_bw, k * nic)


# --------------------------------------------------------------------------- a layout's step


@dataclass(frozen=True)
class CommTerm:
    """One kind of communication in a training step, as seen by one GPU.

    Attributes:
        name: Stable identifier (``"tp-all-reduce"``, ``"dp-grad-reduce-scatter"``...).
        label: Human description.
        group: The process group it runs on: ``tp``, ``cp``, ``dp-cp`` (dense gradients),
            ``ep``, ``expert-dp`` or ``pp``.
        collective: One of [`COLLECTIVES`][calc.comm.COLLECTIVES].
        group_size: Ranks in the group (``2`` for point-to-point).
        message_bytes: ``S`` of one call (the full, gathered size for all-gather/reduce-scatter).
        calls: Calls per optimizer step on the busiest GPU.
        bytes_sent: Bytes this GPU sends per step: ``calls × collective_bytes_sent(S)``.
        intra_node: ``True`` when the group fits in one node.
        bus_bytes_per_s: Effective bus bandwidth used for the time, bytes/s (rounded down).
        time_s: Seconds per step if nothing overlaps: ``bytes_sent / busbw``.
        source: Where the volume comes from.
    """

    name: str
    label: str
    group: str
    collective: str
    group_size: int
    message_bytes: int
    calls: int
    bytes_sent: int
    intra_node: bool
    bus_bytes_per_s: int
    time_s: float
    source: str

    def as_dict(self) -> dict[str, object]:
        """The term as plain data.

        Examples:
            >>> step_communication(params="1B", layers=4, hidden=1024, seq=2048, dp=8).terms[0].as_dict()["group"]
            'dp-cp'
        """
        return asdict(self)


@dataclass(frozen=True)
class StepComm:
    """All communication of one optimizer step, per GPU.

    Attributes:
        terms: One [`CommTerm`][calc.comm.CommTerm] per kind of communication (groups of size 1 are left out).
        gpus: ``tp × cp × dp × pp``.
        gpus_per_node: GPUs per node used for placement.
    """

    terms: tuple[CommTerm, ...]
    gpus: int
    gpus_per_node: int

    @property
    def total_bytes(self) -> int:
        """Bytes one GPU sends per step, all terms summed."""
        return sum(t.bytes_sent for t in self.terms)

    @property
    def total_time_s(self) -> float:
        """Seconds of communication per step with no overlap at all (an upper bound on exposed time)."""
        return sum(t.time_s for t in self.terms)

    def by_group(self) -> dict[str, int]:
        """Bytes sent per step, summed per process group.

        Examples:
            >>> s = step_communication(params="1B", layers=4, hidden=1024, seq=2048, dp=4, tp=2)
            >>> sorted(s.by_group())
            ['dp-cp', 'tp']
        """
        out: dict[str, int] = {}
        for t in self.terms:
            out[t.group] = out.get(t.group, 0) + t.bytes_sent
        return out

    def as_dict(self) -> dict[str, object]:
        """Terms and totals as plain data (for JSON and the calculators).

        Examples:
            >>> step_communication(params="1B", layers=4, hidden=1024, seq=2048, dp=8).as_dict()["total_bytes"]
            3500000000
        """
        return {
            "terms": [t.as_dict() for t in self.terms],
            "gpus": self.gpus,
            "gpus_per_node": self.gpus_per_node,
            "total_bytes": self.total_bytes,
            "total_time_s": self.total_time_s,
        }


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _pp_sends_per_microbatch(pp: int, v: int) -> int:
    """Sends per microbatch by the busiest pipeline rank.

    With ``pp × v`` model chunks, chunk ``g`` lives on rank ``g mod pp``; each chunk
    but the last sends its output forward, each but the first sends a gradient back.
    A middle rank therefore sends ``2v``; with two ranks each sends ``2v - 1``.
    """
    if pp == 1:
        return 0
    return 2 * v if pp >= 3 else 2 * v - 1


def _flag(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise CalcError(field, "must be true or false", value)
    return value


def step_communication(
    *,
    params: float | str,
    layers: int,
    hidden: int,
    seq: int,
    micro_batch: int = 1,
    num_microbatches: int = 1,
    dp: int = 1,
    tp: int = 1,
    pp: int = 1,
    cp: int = 1,
    ep: int = 1,
    zero_stage: int = 0,
    sequence_parallel: bool = False,
    virtual_stages: int = 1,
    recompute: bool = False,
    pp_scatter_gather: bool = True,
    stage_params: int | None = None,
    expert_params: int = 0,
    moe_layers: int | None = None,
    top_k: int = 1,
    moe_tokens: int | None = None,
    kv_dims: int | None = None,
    bytes_per_element: int = 2,
    grad_bytes_per_element: int | None = None,
    gpus_per_node: int = 8,
    intra: str | Interconnect = "nvlink4",
    inter: str | Interconnect = "ib-ndr",
    intra_efficiency: float = 1.0,
    inter_efficiency: float = 1.0,
) -> StepComm:
    """Bytes each GPU sends per optimizer step, for every collective a layout implies.

    Notation: ``b`` micro-batch, ``s`` sequence, ``h`` hidden, ``m`` micro-batches per
    step, ``t`` = tp, ``e`` bytes per element, ``T = b·s/cp`` tokens per GPU per
    micro-batch. Each term's per-call bytes follow
    [`collective_bytes_sent`][calc.comm.collective_bytes_sent] (ring algorithms).

    * **Data parallel** (group ``dp-cp``, Megatron reduces gradients over DP and CP
      together). Per GPU ``Ψ_g = ceil(dense stage params / t)`` parameters.
      ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054) Sec. 7: plain DP all-reduces
      the gradients, ``2Ψ`` per step (7.1); ZeRO-1/2 reduce-scatter gradients and
      all-gather updated parameters, also ``2Ψ`` (7.2.1); ZeRO-3 all-gathers the
      parameters in forward and again in backward and reduce-scatters gradients,
      ``3Ψ = 1.5×`` DP (7.2.2). With ``m > 1`` micro-batches, stages 0 and 1 keep full
      gradients and reduce once per step, stage 2 keeps only its gradient shard so it
      reduce-scatters every micro-batch (Sec. 5.2), and stage 3 also gathers the
      parameters for every micro-batch's forward and backward (Sec. 5.3).
      Routed-expert parameters (``expert_params``) are sharded over ``tp × ep`` and
      reduced the same way over the ``dp·cp/ep`` expert-data-parallel ranks.
    * **Tensor parallel** (``tp``). Narayanan et al. 2021 (arXiv:2104.04473) Sec. 3.2:
      two all-reduces of ``b·s·h`` in forward and two in backward per layer and
      micro-batch, ``8bsh(t-1)/t`` elements per GPU. Full recomputation re-runs the
      two forward ones (ZeRO Sec. 8 counts 6 all-reduces, ``12·s·h``, per block).
      With sequence parallelism each all-reduce becomes an all-gather plus a
      reduce-scatter of the same total volume (Korthikanti et al. 2022, arXiv:2205.05198,
      Sec. 4.2.2).
    * **Pipeline parallel** (``pp``, point-to-point). Narayanan Sec. 3.2: ``b·s·h`` per
      consecutive-stage pair and micro-batch, activations forward and gradients back;
      ``b·s·h/t`` with the scatter/gather optimization (Sec. 4.1). The interleaved
      schedule sends ``v`` times as much (Sec. 2.2.2). Counted on the busiest rank.
    * **Context parallel** (``cp``). Megatron-LM ``docs/source/api-guide/context_parallel.rst``:
      K and V are all-gathered in forward and again in backward, and their gradients
      reduce-scattered, per layer (run as a ring of point-to-point sends, same volume).
      ``kv_dims`` is K+V elements per token per layer (default ``2h``; ``2 × kv_heads ×
      head_dim`` with GQA), split over ``t`` ranks by head.
    * **Expert parallel** (``ep``). Each MoE layer all-to-alls the routed tokens
      (``tokens × top_k × h``) to the experts and back in forward, and again in backward:
      4 all-to-alls per layer and micro-batch; uniform routing, no dropped or padded tokens.
      Tokens per GPU default to ``T/t`` with sequence parallelism, else ``T``.

    Embedding/LM-head and layer-norm communication, and anything a framework overlaps,
    are left out; ``total_time_s`` assumes nothing overlaps.

    Placement: ranks are ordered TP innermost, then CP, EP, DP, PP outermost
    ([`GROUP_ORDER`][calc.comm.GROUP_ORDER]), and node ``i`` holds ranks ``i·g`` to
    ``(i+1)·g - 1`` for ``g = gpus_per_node``. A group whose members are ``stride`` ranks
    apart (1 for TP; ``tp`` for CP, DP and EP; ``tp·ep`` for expert DP; ``tp·cp·dp`` for PP) fits in a node when
    ``size × stride ≤ g`` (with power-of-two degrees); otherwise it runs over the network
    with ``g / stride`` members per node. Bandwidths come from
    [`group_bus_bandwidth`][calc.comm.group_bus_bandwidth].

    Args:
        params: Total parameters Ψ.
        layers: Transformer layers (all stages together).
        hidden: Hidden size ``h``.
        seq: Sequence length ``s``.
        micro_batch: Micro-batch size ``b`` (sequences).
        num_microbatches: Micro-batches per optimizer step per pipeline, ``m``.
        dp: Data-parallel degree.
        tp: Tensor-parallel degree.
        pp: Pipeline-parallel degree.
        cp: Context-parallel degree.
        ep: Expert-parallel degree (must divide ``dp × cp``).
        zero_stage: 0, 1, 2 or 3.
        sequence_parallel: Megatron sequence parallelism with TP.
        virtual_stages: Model chunks per pipeline rank (``v``; interleaved schedule when > 1).
        recompute: Full activation recomputation (forward collectives run twice).
        pp_scatter_gather: Send ``1/t`` of each stage boundary's activation per TP rank.
        stage_params: Parameters held by the busiest pipeline stage (default ``ceil(Ψ/pp)``).
        expert_params: Of Ψ, routed-expert parameters (model total; the stage holds ``ceil(·/pp)``).
        moe_layers: MoE layers in the model (default: ``layers`` when ``ep > 1``, else 0).
        top_k: Experts per token.
        moe_tokens: Tokens each GPU routes per micro-batch (overrides the default above).
        kv_dims: K+V elements per token per layer, for CP (default ``2 × hidden``).
        bytes_per_element: Bytes of each activation/parameter element sent (2 for bf16).
        grad_bytes_per_element: Bytes per gradient element reduced (default ``bytes_per_element``;
            4 when gradients are reduced in fp32).
        gpus_per_node: GPUs per scale-up node.
        intra: Scale-up link preset (see [`INTERCONNECTS`][calc.comm.INTERCONNECTS]).
        inter: Scale-out link preset (per GPU).
        intra_efficiency: Achieved fraction of the scale-up peak (default 1).
        inter_efficiency: Achieved fraction of the network peak (default 1).

    Returns:
        A [`StepComm`][calc.comm.StepComm].

    Raises:
        CalcError: On bad numbers, unknown presets, or degrees that do not divide.

    Examples:
        >>> s = step_communication(params="7B", layers=32, hidden=4096, seq=4096, dp=64)
        >>> [(t.name, t.bytes_sent) for t in s.terms]
        [('dp-grad-all-reduce', 27562500000)]
        >>> s.terms[0].intra_node, round(s.terms[0].time_s, 3)
        (False, 0.069)
        >>> z3 = step_communication(params="7B", layers=32, hidden=4096, seq=4096, dp=64, zero_stage=3)
        >>> z3.total_bytes / s.total_bytes
        1.5
    """
    x = _parse_step(locals())  # at this point locals() is exactly the keyword arguments, by name
    terms = _Terms(x)
    for add_terms in (_dp_terms, _tp_terms, _cp_terms, _ep_terms, _pp_terms):
        add_terms(x, terms)
    return StepComm(terms=tuple(terms.terms), gpus=x.tp * x.cp * x.dp * x.pp, gpus_per_node=x.gpn)


@dataclass(frozen=True)
class _Step:
    """The inputs of [`step_communication`][calc.comm.step_communication], parsed and checked, with the
    per-stage quantities every group's terms are built from (notation as in its docstring)."""

    n_params: int
    n_layers: int
    h: int
    s: int
    b: int
    m: int
    dp: int
    tp: int
    pp: int
    cp: int
    ep: int
    stage: int  # ZeRO stage
    sp: bool
    v: int
    recompute: bool
    scatter: bool
    k: int  # top-k
    e: int  # bytes per element
    ge: int  # bytes per gradient element
    gpn: int
    up: Interconnect
    out: Interconnect
    eff_up: Fraction
    eff_out: Fraction
    st_params: int
    x_params: int
    n_moe: int
    kvd: int
    moe_tokens: int | None

    @property
    def stage_expert(self) -> int:
        """Routed-expert parameters on the busiest stage."""
        return min(_ceil_div(self.x_params, self.pp), self.st_params)

    @property
    def stage_dense(self) -> int:
        """Every other parameter on the busiest stage."""
        return self.st_params - self.stage_expert

    @property
    def layers_ps(self) -> int:
        """Layers per pipeline stage (the busiest)."""
        return _ceil_div(self.n_layers, self.pp)

    @property
    def moe_ps(self) -> int:
        """MoE layers per pipeline stage (the busiest)."""
        return _ceil_div(self.n_moe, self.pp)

    @property
    def tokens(self) -> int:
        """``T = b·s/cp``: tokens per GPU per micro-batch."""
        return self.b * self.s // self.cp

    @property
    def fwd_passes(self) -> int:
        """Forward passes per micro-batch: 2 with full recomputation."""
        return 2 if self.recompute else 1


def _parse_step(a: dict[str, Any]) -> _Step:
    """Parse and cross-check the arguments of [`step_communication`][calc.comm.step_communication]."""
    n_params = parse_count(a["params"], "params")
    n_layers = parse_positive_int(a["layers"], "layers")
    dp = parse_positive_int(a["dp"], "dp")
    tp = parse_positive_int(a["tp"], "tp")
    pp = parse_positive_int(a["pp"], "pp")
    cp = parse_positive_int(a["cp"], "cp")
    ep = parse_positive_int(a["ep"], "ep")
    s = parse_positive_int(a["seq"], "seq")
    sp = _flag(a["sequence_parallel"], "sequence_parallel")
    v = parse_positive_int(a["virtual_stages"], "virtual_stages")
    e = parse_positive_int(a["bytes_per_element"], "bytes_per_element")
    ge = a["grad_bytes_per_element"]
    if v > 1 and pp == 1:
        raise CalcError("virtual_stages", "must be 1 when pp = 1 (interleaving needs a pipeline)", v)
    if (dp * cp) % ep:
        raise CalcError("ep", f"must divide dp × cp (= {dp * cp})", ep, code="not-divisible")
    if s % cp:
        raise CalcError("seq", f"must be divisible by cp (= {cp})", s, code="not-divisible")
    if sp and (s // cp) % tp:
        raise CalcError(
            "seq", f"must be divisible by cp × tp (= {cp * tp}) with sequence parallelism", s, code="not-divisible"
        )
    stage_params = a["stage_params"]
    st_params = _ceil_div(n_params, pp) if stage_params is None else parse_count(stage_params, "stage_params")
    if st_params > n_params:
        raise CalcError("stage_params", f"must be at most params (= {n_params})", st_params)
    x_params = 0 if a["expert_params"] == 0 else parse_count(a["expert_params"], "expert_params")
    if x_params > n_params:
        raise CalcError("expert_params", f"must be at most params (= {n_params})", x_params)
    moe_layers = a["moe_layers"]
    n_moe = (
        (n_layers if ep > 1 else 0) if moe_layers is None else parse_positive_int(moe_layers, "moe_layers", minimum=0)
    )
    if n_moe > n_layers:
        raise CalcError("moe_layers", f"must be at most layers (= {n_layers})", n_moe)
    h = parse_positive_int(a["hidden"], "hidden")
    moe_tokens = a["moe_tokens"]
    return _Step(
        n_params=n_params,
        n_layers=n_layers,
        h=h,
        s=s,
        b=parse_positive_int(a["micro_batch"], "micro_batch"),
        m=parse_positive_int(a["num_microbatches"], "num_microbatches"),
        dp=dp,
        tp=tp,
        pp=pp,
        cp=cp,
        ep=ep,
        stage=parse_positive_int(a["zero_stage"], "zero_stage", minimum=0, maximum=3),
        sp=sp,
        v=v,
        recompute=_flag(a["recompute"], "recompute"),
        scatter=_flag(a["pp_scatter_gather"], "pp_scatter_gather"),
        k=parse_positive_int(a["top_k"], "top_k"),
        e=e,
        ge=e if ge is None else parse_positive_int(ge, "grad_bytes_per_element"),
        gpn=parse_positive_int(a["gpus_per_node"], "gpus_per_node"),
        up=interconnect(a["intra"]),
        out=interconnect(a["inter"]),
        eff_up=_efficiency(a["intra_efficiency"], "intra_efficiency"),
        eff_out=_efficiency(a["inter_efficiency"], "inter_efficiency"),
        st_params=st_params,
        x_params=x_params,
        n_moe=n_moe,
        kvd=2 * h if a["kv_dims"] is None else parse_positive_int(a["kv_dims"], "kv_dims"),
        moe_tokens=None if moe_tokens is None else parse_positive_int(moe_tokens, "moe_tokens"),
    )


class _Terms:
    """Collects a step's [`CommTerm`][calc.comm.CommTerm]s, placing each group on the nodes and pricing it."""

    def __init__(self, x: _Step) -> None:
        self.x = x
        self.terms: list[CommTerm] = []

    def add(
        self, name: str, label: str, group: str, stride: int, size: int, collective: str, message: int, calls: int,
        source: str,
    ) -> None:  # fmt: skip
        """Add one term: ``calls`` calls of ``collective`` on ``size`` ranks ``stride`` apart, ``message`` bytes each.

        Groups of one rank, and terms with no calls or no bytes, are left out.
        """
        if size == 1 or calls == 0 or message == 0:
            return
        x = self.x
        n_ranks = 2 if collective == "p2p" else size
        sent = calls * collective_bytes_sent(collective, message, n_ranks)
        intra_node, per_node = _placement(stride, size, x.gpn)
        bw = group_bus_bandwidth(
            collective, size, intra_node=intra_node, members_per_node=per_node, intra=x.up, inter=x.out,
            intra_efficiency=x.eff_up, inter_efficiency=x.eff_out,
        )  # fmt: skip
        self.terms.append(
            CommTerm(
                name=name,
                label=label,
                group=group,
                collective=collective,
                group_size=n_ranks,
                message_bytes=message,
                calls=calls,
                bytes_sent=sent,
                intra_node=intra_node,
                bus_bytes_per_s=math.floor(bw),
                time_s=float(Fraction(sent) / bw),
                source=source,
            )
        )


_ZERO_SRC = "ZeRO (arXiv:1910.02054) Sec. 7"


def _dp_terms(x: _Step, terms: _Terms) -> None:
    """Data parallel: dense weights over ``dp × cp``, expert weights over ``dp × cp / ep`` (ZeRO Sec. 7, 5.2-5.3)."""
    for group, stride, size, n_el in (
        ("dp-cp", x.tp, x.dp * x.cp, _ceil_div(x.stage_dense, x.tp)),
        ("expert-dp", x.tp * x.ep, x.dp * x.cp // x.ep, _ceil_div(x.stage_expert, x.tp * x.ep)),
    ):
        what = "expert " if group == "expert-dp" else ""
        prefix = group.split("-")[0]
        grads, weights = n_el * x.ge, n_el * x.e
        if x.stage == 0:
            terms.add(
                f"{prefix}-grad-all-reduce", f"{what}gradient all-reduce (once per step)", group, stride, size,
                "all-reduce", grads, 1, _ZERO_SRC + ".1: 2Ψ",
            )  # fmt: skip
            continue
        rs_calls = 1 if x.stage == 1 else x.m
        terms.add(
            f"{prefix}-grad-reduce-scatter",
            f"{what}gradient reduce-scatter ({'once per step' if rs_calls == 1 else 'every micro-batch'})",
            group, stride, size, "reduce-scatter", grads, rs_calls, _ZERO_SRC + ".2.1: Ψ of 2Ψ",
        )  # fmt: skip
        if x.stage < 3:
            terms.add(
                f"{prefix}-param-all-gather", f"{what}updated-parameter all-gather (once per step)", group, stride,
                size, "all-gather", weights, 1, _ZERO_SRC + ".2.1: Ψ of 2Ψ",
            )  # fmt: skip
        else:
            terms.add(
                f"{prefix}-param-all-gather", f"{what}parameter all-gather, forward and backward of every micro-batch",
                group, stride, size, "all-gather", weights, 2 * x.m, _ZERO_SRC + ".2.2: 2Ψ of 3Ψ",
            )  # fmt: skip


def _tp_terms(x: _Step, terms: _Terms) -> None:
    """Tensor parallel: 4 all-reduces per layer per micro-batch, +2 with recomputation (Narayanan et al. 2021
    Sec. 3.2); under sequence parallelism each becomes an all-gather plus a reduce-scatter (Korthikanti et al.
    2022 Sec. 4.2.2)."""
    msg = x.tokens * x.h * x.e
    calls = x.layers_ps * x.m * 2 * (x.fwd_passes + 1)
    if x.sp:
        src = "Narayanan et al. 2021 Sec. 3.2; Korthikanti et al. 2022 Sec. 4.2.2 (same volume as all-reduce)"
        for collective in ("all-gather", "reduce-scatter"):
            terms.add(
                f"tp-{collective}", f"sequence-parallel {collective} (per layer, fwd + bwd)", "tp", 1, x.tp,
                collective, msg, calls, src,
            )  # fmt: skip
    else:
        terms.add(
            "tp-all-reduce", "tensor-parallel all-reduce (2 fwd + 2 bwd per layer)", "tp", 1, x.tp, "all-reduce",
            msg, calls, "Narayanan et al. 2021 Sec. 3.2: 8bsh(t-1)/t per layer per micro-batch",
        )  # fmt: skip


def _cp_terms(x: _Step, terms: _Terms) -> None:
    """Context parallel: K/V all-gathered in forward and again in backward, dK/dV reduce-scattered in backward
    (Megatron-LM ``docs/source/api-guide/context_parallel.rst``)."""
    msg = x.b * x.s * _ceil_div(x.kvd, x.tp) * x.e
    src = "Megatron-LM docs/source/api-guide/context_parallel.rst"
    terms.add(
        "cp-kv-all-gather", "K/V all-gather (forward, and again in backward)", "cp", x.tp, x.cp, "all-gather", msg,
        x.layers_ps * x.m * (x.fwd_passes + 1), src,
    )  # fmt: skip
    terms.add(
        "cp-kv-grad-reduce-scatter", "dK/dV reduce-scatter (backward)", "cp", x.tp, x.cp, "reduce-scatter", msg,
        x.layers_ps * x.m, src,
    )  # fmt: skip


def _ep_terms(x: _Step, terms: _Terms) -> None:
    """Expert parallel: dispatch and combine all-to-alls per MoE layer, forward and backward; uniform routing."""
    routed = (x.tokens // x.tp if x.sp else x.tokens) if x.moe_tokens is None else x.moe_tokens
    terms.add(
        "ep-all-to-all", "MoE token dispatch + combine (fwd + bwd)", "ep", x.tp, x.ep, "all-to-all",
        routed * x.k * x.h * x.e, x.moe_ps * x.m * 2 * (x.fwd_passes + 1),
        "dispatch and combine all-to-all per MoE layer, forward and backward; uniform routing",
    )  # fmt: skip


def _pp_terms(x: _Step, terms: _Terms) -> None:
    """Pipeline parallel: point-to-point between consecutive stages (Narayanan et al. 2021 Sec. 3.2, 4.1, 2.2.2)."""
    msg = (_ceil_div(x.tokens * x.h, x.tp) if x.scatter else x.tokens * x.h) * x.e
    terms.add(
        "pp-p2p", "stage-boundary activations (fwd) and gradients (bwd)", "pp", x.tp * x.cp * x.dp, x.pp, "p2p", msg,
        x.m * _pp_sends_per_microbatch(x.pp, x.v),
        "Narayanan et al. 2021 Sec. 3.2 (bsh per boundary), Sec. 4.1 (scatter/gather: /t), Sec. 2.2.2 (x v)",
    )  # fmt: skip
