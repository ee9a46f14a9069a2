"""Interconnect presets: NVLink, Infinity Fabric, PCIe, InfiniBand and RoCE, per GPU and per direction.

Always stored **per GPU, per direction, in bytes/s** (marketing figures for NVLink are both
directions summed; network figures are bits/s). Names are re-exported by [`calc.parallel.comm`][calc.parallel.comm].
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from fractions import Fraction

from calc.errors import CalcError

__all__ = ["INTERCONNECTS", "SCALE_UP_FOR_GPU", "Interconnect", "interconnect"]


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


def _switched(name: str, label: str, scope: str, gb_per_s: int, marketed: str, source: str) -> Interconnect:
    """A link behind a switch (NVSwitch, the network): one peer gets the whole per-GPU figure, ``gb_per_s`` GB/s."""
    return Interconnect(name, label, scope, gb_per_s * _G, gb_per_s * _G, marketed, source)


def _pcie(gen: int, gt_per_s: int) -> Interconnect:
    """PCIe ``gen`` x16 at ``gt_per_s`` GT/s per lane, 128b/130b encoding, per direction."""
    rate = int(gt_per_s * _G * 16 * _PCIE_ENCODING / 8)
    return Interconnect(
        f"pcie{gen}-x16",
        f"PCIe {gen}.0 x16",
        "scale-up",
        rate,
        rate,
        f"~{2 * gt_per_s} GB/s per direction: {gt_per_s} GT/s × 16 lanes / 8 × 128/130 = {rate / _G:.1f} GB/s",
        f"PCIe {gen}.0: {gt_per_s} GT/s per lane, 128b/130b encoding (PCI-SIG base specification figures as "
        f"tabulated by hpc-notes.pages.dev/reference/pcie: {rate / _G:.1f} GB/s for x16)",
    )


INTERCONNECTS: dict[str, Interconnect] = {
    i.name: i
    for i in (
        _switched(
            "nvlink3",
            "NVLink 3 (A100)",
            "scale-up",
            300,
            "600 GB/s per GPU, both directions summed: 12 links × 25 GB/s per direction",
            "NVIDIA A100 datasheet figure (600 GB/s, 12 links) as quoted by glennklockwood.com/garden/processors/A100 "
            "and NVIDIA's NVLink generation table (6/12/18 links: 300/600/900 GB/s total)",
        ),
        _switched(
            "nvlink4",
            "NVLink 4 (H100 / H200)",
            "scale-up",
            450,
            "900 GB/s per GPU, both directions summed: 18 links × 25 GB/s per direction",
            "NVIDIA H100 datasheet figure (900 GB/s) as quoted by glennklockwood.com/garden/processors/h100; "
            "MLCommons inference v4.1 H200-SXM-141GB system description (18 links, 900 GB/s)",
        ),
        _switched(
            "nvlink5",
            "NVLink 5 (B200)",
            "scale-up",
            900,
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
        _pcie(4, 16),
        _pcie(5, 32),
        _switched(
            "ib-hdr",
            "InfiniBand HDR 200 Gb/s",
            "scale-out",
            25,
            "200 Gb/s per port and direction = 25 GB/s (one NIC per GPU)",
            "InfiniBand HDR: 200 Gb/s per 4x port (4 lanes × 50 Gb/s PAM4), ConnectX-6; IBTA rate as "
            "summarized by aicplight.com; NCCL maintainers quote 24 GB/s achieved (NVIDIA/nccl#412)",
        ),
        _switched(
            "ib-ndr",
            "InfiniBand NDR 400 Gb/s",
            "scale-out",
            50,
            "400 Gb/s per port and direction = 50 GB/s (one NIC per GPU)",
            "InfiniBand NDR: 400 Gb/s per 4x port (4 lanes × 100 Gb/s PAM4), ConnectX-7; IBTA rate as "
            "summarized by nexuswise-c.com; 48-49 GB/s achieved per NIC (NVIDIA/nccl-tests#267)",
        ),
        _switched(
            "ib-xdr",
            "InfiniBand XDR 800 Gb/s",
            "scale-out",
            100,
            "800 Gb/s per port and direction = 100 GB/s (one NIC per GPU)",
            "InfiniBand XDR: 800 Gb/s per port (4 lanes × 200 Gb/s PAM4), ConnectX-8; IBTA rate as "
            "summarized by nexuswise-c.com and yobitel.com",
        ),
        _switched(
            "roce-400g",
            "RoCE 400 GbE",
            "scale-out",
            50,
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
    "gb200": "nvlink5",
    "mi300x": "infinity-fabric-mi300x",
}
"""The scale-up link of each [`calc.hardware`][calc.hardware] preset (H100 PCIe: PCIe 5.0, no NVLink bridge assumed)."""


def interconnect(name: str | Interconnect) -> Interconnect:
    """Look up a link preset by name (an [`Interconnect`][calc.parallel.comm.Interconnect] passes through).

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
