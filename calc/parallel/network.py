"""The network a collective runs on: where a group's ranks sit, and an α–β time per link level.

A cluster here is nodes of ``g`` GPUs joined by a scale-up link (NVLink / NVSwitch,
Infinity Fabric, PCIe), each node with ``nics`` network ports (InfiniBand or RoCE;
``nics = g`` on a rail-optimized DGX/HGX node, GPU ``i`` of every node on rail ``i``).

**Placement, in closed form.** Ranks are numbered with TP innermost
([`GROUP_ORDER`][calc.parallel.comm.GROUP_ORDER]); node ``j`` holds ranks ``j·g`` to ``(j+1)·g - 1``.
A group of ``n`` ranks ``stride`` apart therefore spans ``N = ⌊(n-1)·stride/g⌋ + 1``
nodes with ``k = ⌈g/stride⌉`` members on each (``k = 1`` once ``stride ≥ g``):
[`group_placement`][calc.parallel.comm.group_placement] is O(1), whatever the number of ranks.

**Time, α–β per level** (Hockney's model, as NCCL's own tuner uses it, NVIDIA/nccl
``src/graph/tuning.cc``): ``t = α + bytes/β``.

* **α.** NCCL's ring latency: a base of 8.4 µs per call plus, per ring step, 3.4 µs on
  NVLink and 9.6 µs on the network (``baseLat`` and ``hwLat``, Simple protocol): an
  all-reduce takes ``2(n-1)`` steps of which ``2(N-1)`` cross nodes, all-gather and
  reduce-scatter ``n-1`` and ``N-1`` ([`LATENCY`][calc.parallel.comm.LATENCY]).
* **β, per level.** A group inside one node runs a ring on the scale-up link at its
  nccl-tests bus bandwidth (``t = S·factor/busbw``, ``doc/PERFORMANCE.md``). A ring collective
  across nodes runs as NCCL's rings do: each of the node's ``k`` members drives one ring through its
  own NIC, data "go through each GPU and enter/exit the node once" per ring (S. Jeaugey,
  NVIDIA/nccl#687), so the network carries ``S·factor(n)/k`` per NIC while the scale-up hops carry
  the ring at its own speed (``S·factor(n)`` on the scale-up link when ``k > 1``). NCCL **pipelines**
  the two levels chunk by chunk, so the slower one sets the time, ``max(intra, inter)``: the ring runs
  at ``min(scale-up, k × NIC)``, as [`group_bus_bandwidth`][calc.parallel.comm.group_bus_bandwidth]
  states. On 8×HDR A100 nodes this gives 192 GB/s all-reduce bus bandwidth, as measured
  (NVIDIA/nccl#812: 192 GB/s); adding the two phases instead would give 148. All-to-all sends
  ``(n-k)/n`` of its buffer over the network and ``(k-1)/n`` inside, one after the other.
* **Oversubscription.** A group whose members span more than ``pod_gpus`` GPUs crosses the spine above
  the pods and gets ``1/oversubscription`` of its NIC bandwidth (Llama 3: 1:7 above 3,072-GPU pods).
* **NICs.** A member gets ``nics/g`` NICs' bandwidth: only a group with ``k`` members on a
  node uses ``k`` GPUs' NICs. A TP group of 16 on two nodes of 8 therefore moves ``1/8`` of
  each message over each GPU's NIC, at a twelfth of NVLink's speed on an A100 node.

Not modelled: congestion between concurrent groups (`calc.timing.efficiency` adds a straggler and congestion
allowance to the step instead), SHARP
in-network reduction, NCCL's LL/LL128 protocols (small messages), PXN rail crossing.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from fractions import Fraction

from calc.errors import CalcError
from calc.memo import hash_fields_once, memoized, state_without_hash
from calc.parallel.collectives import COLLECTIVES
from calc.parallel.collectives import _efficiency as _share  # one rule for a share of peak: (0, 1]
from calc.parallel.interconnects import Interconnect, interconnect
from calc.units import parse_positive_int

__all__ = [
    "ACHIEVED_SHARE",
    "LATENCY",
    "CollectiveCost",
    "Network",
    "Placement",
    "collective_cost",
    "group_bus_bandwidth",
    "group_placement",
]

LATENCY: dict[str, float] = {"base": 8.4e-6, "scale-up": 3.4e-6, "scale-out": 9.6e-6}
"""Seconds of latency: per call (``base``) and per ring step on each level.

NVIDIA/nccl ``src/graph/tuning.cc`` (``baseLat`` for the ring, Simple protocol: 8.4 µs;
``hwLat`` ring/Simple: NVLink 3.4 µs, network 9.6 µs); NCCL's tuner sums
``base + (steps - inter_steps)·intra + inter_steps·inter``.
"""

ACHIEVED_SHARE: dict[str, Fraction] = {
    "nvlink3": Fraction(235, 300),
    "nvlink4": Fraction(235, 300),
    "nvlink5": Fraction(235, 300),
    "infinity-fabric-mi300x": Fraction(235, 300),
    "pcie4-x16": Fraction(235, 300),
    "pcie5-x16": Fraction(235, 300),
    "ib-hdr": Fraction(24, 25),
    "ib-ndr": Fraction(24, 25),
    "ib-xdr": Fraction(24, 25),
    "roce-400g": Fraction(24, 25),
}
"""Default achieved bus bandwidth as a share of each link's peak.

Scale-up: NCCL caps its A100 ring model at 235 GB/s of NVLink 3's 300 GB/s per direction
(``tuning.cc``: ``if (compCap80) busBw = std::min(busBw, 235.0f)``), 78%; the same share is
assumed for the other scale-up links (no comparably sourced figure). Network: an HDR NIC
gives "24GB/s inter-node" busbw (NVIDIA/nccl#412), 96% of 25 GB/s, and ConnectX-7 NDR
48-49 GB/s of 50 (NVIDIA/nccl-tests#267).
"""


@dataclass(frozen=True)
class Placement:
    """Where one process group's ranks sit.

    Attributes:
        size: Ranks in the group (``n``).
        nodes: Nodes it spans (``N``).
        per_node: Fewest members on any node it spans (``k``).
        span_gpus: GPUs from its first to its last member, ``(n-1)·stride + 1`` (0 when not known): a group
            wider than a pod crosses the oversubscribed spine ([`Network`][calc.parallel.comm.Network]).
    """

    size: int
    nodes: int
    per_node: int
    span_gpus: int = field(default=0, compare=False, repr=False)

    @property
    def intra_node(self) -> bool:
        """``True`` when the whole group sits in one node."""
        return self.nodes == 1


@memoized()
def group_placement(stride: int, size: int, gpus_per_node: int) -> Placement:
    """Placement of the group holding rank 0: ranks ``0, stride, …, (size-1)·stride``, in closed form.

    With ``g = gpus_per_node``: when ``stride ≥ g`` every member is on its own node (``size`` nodes);
    otherwise the group spans ``⌊(size-1)·stride/g⌋ + 1`` nodes, node ``j`` holding members
    ``⌈j·g/stride⌉`` to ``⌈(j+1)·g/stride⌉ - 1`` (``g/stride`` of them when ``stride`` divides ``g``) and
    the last node what is left. With power-of-two degrees every group is placed like this one. No
    rank is visited: the work is at most ``g`` steps, whatever the group's size.

    Args:
        stride: Rank distance between consecutive members (1 for TP; ``tp`` for CP, DP, EP…).
        size: Ranks in the group.
        gpus_per_node: GPUs per node.

    Returns:
        A [`Placement`][calc.parallel.comm.Placement].

    Raises:
        CalcError: When a number is not a positive whole number.

    Examples:
        >>> group_placement(1, 8, 8), group_placement(1, 16, 8)
        (Placement(size=8, nodes=1, per_node=8), Placement(size=16, nodes=2, per_node=8))
        >>> group_placement(8, 64, 8)   # DP over 64 nodes, one member on each
        Placement(size=64, nodes=64, per_node=1)
        >>> group_placement(2, 2**30, 8).nodes   # a billion ranks, no loop
        268435456
    """
    s = parse_positive_int(stride, "stride")
    n = parse_positive_int(size, "size")
    g = parse_positive_int(gpus_per_node, "gpus_per_node")
    nodes = (n - 1) * s // g + 1
    span = (n - 1) * s + 1
    if nodes == 1:
        return Placement(n, 1, n, span)
    if s >= g:
        return Placement(n, n, 1, span)
    # Node j < nodes - 1 holds members ceil(j·g/s) .. ceil((j+1)·g/s) - 1; the counts repeat with
    # period s / gcd(g, s) < g, so at most g nodes are looked at, whatever the number of ranks.
    period = s // math.gcd(g, s)
    full = min(-(-(j + 1) * g // s) - -(-j * g // s) for j in range(min(nodes - 1, period)))
    last = n - -(-((nodes - 1) * g) // s)
    return Placement(n, nodes, min(full, last), span)


@dataclass(frozen=True)
class Network:
    """A cluster's links: the scale-up domain, the NICs, achieved shares and latencies.

    Attributes:
        intra: Scale-up link (an [`Interconnect`][calc.parallel.comm.Interconnect] or preset name).
        inter: Network link per NIC.
        gpus_per_node: GPUs per scale-up node (the NVLink / NVSwitch domain).
        nics_per_node: NICs per node (default ``gpus_per_node``: one per GPU, rail-optimized).
        intra_efficiency: Achieved share of the scale-up peak (default
            [`ACHIEVED_SHARE`][calc.parallel.comm.ACHIEVED_SHARE]).
        inter_efficiency: Achieved share of the NIC peak (default likewise).
        latency: ``True`` to add [`LATENCY`][calc.parallel.comm.LATENCY]; ``False`` for bandwidth only.
        pod_gpus: GPUs under one non-blocking pod (``None``: the whole fabric is non-blocking).
        oversubscription: Down-to-up bandwidth ratio of the spine above a pod: a group whose members span more
            than ``pod_gpus`` GPUs gets ``1/oversubscription`` of its NIC bandwidth (Llama 3's RoCE fabric: pods
            of 3,072 GPUs, "1:7 oversubscription ratio" above them, Dubey et al. 2024, arXiv:2407.21783,
            Sec. 3.3.1).

    Examples:
        >>> n = Network("nvlink3", "ib-hdr")
        >>> float(n.up_bytes_per_s) / 1e9, float(n.nic_bytes_per_s) / 1e9
        (235.0, 24.0)
    """

    intra: Interconnect | str = "nvlink4"
    inter: Interconnect | str = "ib-ndr"
    gpus_per_node: int = 8
    nics_per_node: int | None = None
    intra_efficiency: Fraction | float | None = None
    inter_efficiency: Fraction | float | None = None
    latency: bool = True
    pod_gpus: int | None = None
    oversubscription: float = 1.0

    def __post_init__(self) -> None:
        put = object.__setattr__
        put(self, "intra", interconnect(self.intra))
        put(self, "inter", interconnect(self.inter))
        put(self, "gpus_per_node", parse_positive_int(self.gpus_per_node, "gpus_per_node"))
        nics = self.gpus_per_node if self.nics_per_node is None else self.nics_per_node
        put(self, "nics_per_node", parse_positive_int(nics, "nics_per_node"))
        for name, link in (("intra_efficiency", self.intra), ("inter_efficiency", self.inter)):
            value = getattr(self, name)
            put(self, name, ACHIEVED_SHARE.get(link.name, Fraction(1)) if value is None else _share(value, name))
        if not isinstance(self.latency, bool):
            raise CalcError("latency", "must be true or false", self.latency)
        if self.pod_gpus is not None:
            put(self, "pod_gpus", parse_positive_int(self.pod_gpus, "pod_gpus"))
        ratio = self.oversubscription
        if isinstance(ratio, bool) or not isinstance(ratio, (int, float, Fraction)) or not 1 <= ratio < 1e6:
            raise CalcError("oversubscription", "must be a number of at least 1 (1 = non-blocking)", ratio)

    __hash__ = hash_fields_once  # computed once: the planner's memos key on the network thousands of times a plan
    __getstate__ = state_without_hash

    def nic_for(self, where: Placement) -> Fraction:
        """NIC bandwidth per member of the group placed at ``where``: divided by the oversubscription when
        the group spans more GPUs than a pod.

        Examples:
            >>> net = Network("nvlink4", "roce-400g", pod_gpus=3072, oversubscription=7)
            >>> float(net.nic_for(group_placement(1024, 16, 8)) / net.nic_for(group_placement(8, 128, 8)))
            0.14285714285714285
        """
        nic = self.nic_bytes_per_s
        if self.pod_gpus is not None and where.span_gpus > self.pod_gpus:
            return nic / Fraction(self.oversubscription)
        return nic

    @property
    def up_bytes_per_s(self) -> Fraction:
        """Achieved scale-up bus bandwidth per GPU, bytes/s."""
        return self.intra.bytes_per_s * self.intra_efficiency  # type: ignore[union-attr]

    @property
    def nic_bytes_per_s(self) -> Fraction:
        """Achieved network bandwidth per GPU (its share of the node's NICs), bytes/s."""
        nics = Fraction(self.nics_per_node, self.gpus_per_node)  # type: ignore[arg-type]
        return self.inter.bytes_per_s * self.inter_efficiency * nics  # type: ignore[union-attr]


@dataclass(frozen=True)
class CollectiveCost:
    """Time of one collective call, split into its parts.

    Attributes:
        time_s: Total seconds: ``latency_s + max(intra_s, inter_s)`` for a ring collective across nodes (the two
            levels pipelined), ``latency_s + intra_s + inter_s`` otherwise.
        latency_s: The α part.
        intra_s: Bandwidth time on the scale-up link.
        inter_s: Bandwidth time on the network.
        bus_bytes_per_s: The effective bus bandwidth, ``S·factor`` over the bandwidth time (0 for no data).
    """

    time_s: float
    latency_s: float
    intra_s: float
    inter_s: float
    bus_bytes_per_s: float

    def as_dict(self) -> dict[str, float]:
        """The fields as plain data."""
        return asdict(self)


_RING_STEPS = {"all-reduce": 2, "all-gather": 1, "reduce-scatter": 1, "all-to-all": 1, "broadcast": 1, "reduce": 1}


def _ring_factor(collective: str, n: int) -> Fraction:
    if n <= 1:
        return Fraction(0)
    if collective == "all-reduce":
        return Fraction(2 * (n - 1), n)
    if collective in ("all-gather", "reduce-scatter", "all-to-all"):
        return Fraction(n - 1, n)
    return Fraction(1)


@memoized()  # a 1,024-GPU plan of Llama 3 70B prices 4,156 calls, 70 distinct
def collective_cost(collective: str, size_bytes: int, where: Placement, network: Network) -> CollectiveCost:
    """α–β time of one call of ``collective`` on ``size_bytes`` over a placed group.

    See the module docstring for the model: inside a node a ring at the scale-up bus bandwidth
    (nccl-tests ``doc/PERFORMANCE.md``: ``t = S·factor/busbw``); across nodes the hierarchical
    rings of NCCL, one per member of a node through its NIC share, pipelined with the scale-up phase
    (the slower level sets the time; NVIDIA/nccl#812); latency as NCCL's tuner counts it.
    ``p2p`` is one send of ``S`` to the neighbouring rank (to a peer on the scale-up link when
    the pair shares a node, else over the NIC).

    Args:
        collective: ``all-reduce``, ``all-gather``, ``reduce-scatter``, ``all-to-all``,
            ``broadcast``, ``reduce`` or ``p2p``.
        size_bytes: ``S``: the full (gathered) size, or one rank's send buffer for all-to-all.
        where: The group's [`Placement`][calc.parallel.comm.Placement].
        network: The [`Network`][calc.parallel.comm.Network].

    Returns:
        A [`CollectiveCost`][calc.parallel.comm.CollectiveCost].

    Examples:
        >>> net = Network("nvlink4", "ib-ndr", latency=False)
        >>> S = 64 * 2**20
        >>> one = collective_cost("all-reduce", S, group_placement(1, 8, 8), net)
        >>> two = collective_cost("all-reduce", S, group_placement(1, 16, 8), net)
        >>> round(two.time_s / one.time_s, 2)   # TP 16 on two nodes: 8 NDR NICs keep up with NVLink (pipelined)
        1.07
        >>> spread = collective_cost("all-reduce", S, group_placement(8, 8, 8), net)
        >>> round(spread.time_s / one.time_s, 1)   # 8 ranks on 8 nodes, one NIC each
        7.3
    """
    n, nodes, k = where.size, where.nodes, where.per_node
    if n <= 1 or size_bytes == 0:
        return CollectiveCost(0.0, 0.0, 0.0, 0.0, 0.0)
    up, nic = network.up_bytes_per_s, network.nic_for(where)
    lat = LATENCY if network.latency else {"base": 0.0, "scale-up": 0.0, "scale-out": 0.0}
    size = Fraction(size_bytes)
    if collective == "p2p":
        if nodes == 1:
            peer = network.intra.peer_bytes_per_s * network.intra_efficiency  # type: ignore[union-attr]
            t_up = float(size / peer)
            return CollectiveCost(
                lat["base"] + lat["scale-up"] + t_up, lat["base"] + lat["scale-up"], t_up, 0.0, float(peer)
            )
        t_out = float(size / nic)
        return CollectiveCost(
            lat["base"] + lat["scale-out"] + t_out, lat["base"] + lat["scale-out"], 0.0, t_out, float(nic)
        )
    per = _RING_STEPS[collective]
    steps, inter_steps = per * (n - 1), per * (nodes - 1)
    latency = lat["base"] + (steps - inter_steps) * lat["scale-up"] + inter_steps * lat["scale-out"]
    if nodes == 1:
        t_up, t_out = _ring_factor(collective, n) * size / up, Fraction(0)
    elif collective == "all-to-all":
        t_up = Fraction(k - 1, n) * size / up
        t_out = Fraction(n - k, n) * size / nic
    else:  # NCCL's rings: the node's k rings cross its k NICs, pipelined with the NVLink hops
        t_up = _ring_factor(collective, n) * size / up if k > 1 else Fraction(0)
        t_out = _ring_factor(collective, n) * (size / k) / nic
    busy = max(t_up, t_out) if nodes > 1 and collective != "all-to-all" else t_up + t_out
    bus = float(_ring_factor(collective, n) * size / busy) if busy else 0.0
    return CollectiveCost(latency + float(busy), latency, float(t_up), float(t_out), bus)


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
    """Peak ring bus bandwidth (bytes/s) of a collective on a group, given where it lives (no latency).

    The flat-ring, bandwidth-only view that [`collective_cost`][calc.parallel.comm.collective_cost] refines. Inside
    one node, every collective runs at the scale-up link's per-direction peak, except a point-to-point send, which
    gets the bandwidth to one peer.

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
    * Point-to-point: one NIC. (Two-node runs can beat these figures with NCCL's tree algorithm,
      NVIDIA/nccl-tests#196; the model is the ring, which is what larger jobs see.)

    Args:
        collective: One of [`COLLECTIVES`][calc.parallel.comm.COLLECTIVES].
        n: Ranks in the group.
        intra_node: ``True`` when the whole group sits in one node; else ``members_per_node`` is ``k``.
        intra: Scale-up link (preset name or [`Interconnect`][calc.parallel.comm.Interconnect]).
        inter: Scale-out link per GPU.
        intra_efficiency: Achieved fraction of the scale-up peak (``inter_efficiency``: of the network's).

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
    if collective not in COLLECTIVES:
        raise CalcError("collective", f"must be one of {', '.join(COLLECTIVES)}", collective, code="unknown-name")
    ranks = parse_positive_int(n, "n")
    k = parse_positive_int(members_per_node, "members_per_node")
    up = interconnect(intra)
    out = interconnect(inter)
    eff_up = _share(intra_efficiency, "intra_efficiency")
    eff_out = _share(inter_efficiency, "inter_efficiency")
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
