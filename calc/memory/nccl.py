"""NCCL's communicator buffers on one GPU: the process groups a rank joins and the buffers each holds.

Its public names are re-exported by [`calc.memory.overheads`][calc.memory.overheads], which prices these buffers
as the ``nccl_*`` line items of the peak.
"""

from __future__ import annotations

from calc.hardware import GPU
from calc.memory.layout import Layout
from calc.memory.overhead_items import ESTIMATED, MEASURED, Overhead
from calc.units import parse_positive_int

__all__ = [
    "NCCL_BUFFSIZE",
    "NCCL_LL128_BUFFSIZE",
    "NCCL_LL_BUFFSIZE",
    "communicators",
    "nccl_channels",
    "nccl_communicator_bytes",
]

NCCL_BUFFSIZE = 1 << 22
"""NCCL's Simple-protocol buffer per connection and channel: 4 MiB (``NCCL_BUFFSIZE``).

NCCL ``src/init.cc``: ``DEFAULT_BUFFSIZE (1 << 22) /* 4MiB */``; the NCCL environment-variable
documentation: "NCCL_BUFFSIZE ... The default is 4194304 (4 MiB)".
"""

NCCL_LL_BUFFSIZE = 8 * 512 * 8 * 16
"""NCCL's LL-protocol buffer per connection and channel: 512 KiB (``NCCL_LL_BUFFSIZE``).

NCCL ``src/init.cc``: ``NCCL_LL_LINES_PER_THREAD × NCCL_LL_MAX_NTHREADS × NCCL_STEPS ×
sizeof(union ncclLLFifoLine)`` = 8 × 512 × 8 × 16 bytes.
"""

NCCL_LL128_BUFFSIZE = 120 * 640 * 8 * 8
"""NCCL's LL128-protocol buffer per connection and channel: 4,915,200 bytes (``NCCL_LL128_BUFFSIZE``).

NCCL ``src/init.cc``: ``NCCL_LL128_ELEMS_PER_THREAD × NCCL_LL128_MAX_NTHREADS × NCCL_STEPS ×
sizeof(uint64_t)`` = 120 × 640 × 8 × 8 bytes.
"""

_DEFAULT_CHANNELS = 16
_DEFAULT_P2P_CHANNELS = 2


def communicators(layout: Layout, stage: int = 0) -> tuple[tuple[str, int, int], ...]:
    """The NCCL communicators one GPU of ``stage`` joins: ``(name, ranks, peers)`` per process group.

    One communicator per process group of more than one rank (a group of one sends nothing).
    The groups are Megatron-LM's (``megatron/core/parallel_state.py``): data parallel ``dp``,
    data parallel with context parallel ``dp-cp`` (where ZeRO shards and gradients are reduced
    when ``cp > 1``), tensor ``tp``, pipeline ``pp``, context ``cp``, expert ``ep`` and the
    experts' data-parallel group ``ep-dp`` (``dp × cp / ep``), the model-parallel group
    ``tp-pp``, the tensor-and-data group ``tp-dp`` and, on the first and last stages, the
    embedding group (the tied embedding's gradient all-reduce). ``peers`` is how many ranks
    this GPU receives from on one channel: 1 on a ring; 2 on the pipeline (activations from
    the previous stage, gradients from the next) and ``ep - 1`` for the all-to-all.

    Examples:
        >>> [name for name, _, _ in communicators(Layout(dp=4, tp=8, pp=2))]
        ['dp', 'tp', 'pp', 'tp-pp', 'tp-dp', 'embedding']
        >>> communicators(Layout())
        ()
    """
    d, t, p, c, e = layout.dp, layout.tp, layout.pp, layout.cp, layout.ep
    groups = [
        ("dp", d, 1),
        ("dp-cp", d * c if d > 1 and c > 1 else 1, 1),
        ("tp", t, 1),
        ("pp", p, 2 if p > 2 else 1),
        ("cp", c, 1),
        ("ep", e, e - 1),
        ("ep-dp", d * c // e if e > 1 else 1, 1),
        ("tp-pp", t * p if t > 1 and p > 1 else 1, 1),
        ("tp-dp", t * d if t > 1 and d > 1 else 1, 1),
        ("embedding", 2 if p > 1 and stage in (0, p - 1) else 1, 1),
    ]
    return tuple((name, ranks, peers) for name, ranks, peers in groups if ranks > 1)


def nccl_communicator_bytes(peers: int, *, channels: int = _DEFAULT_CHANNELS, p2p: bool = False) -> int:
    """NCCL buffer bytes one communicator holds on one GPU, from NCCL's documented defaults.

    A collective communicator keeps, per channel and per peer it receives from, one buffer for
    each protocol: ``NCCL_BUFFSIZE`` (Simple, 4 MiB) + ``NCCL_LL_BUFFSIZE`` + ``NCCL_LL128_BUFFSIZE``
    (NCCL ``src/init.cc`` defaults, overridable by those environment variables). Point-to-point
    traffic (pipeline sends, the MoE all-to-all) uses the Simple protocol only, over
    ``NCCL_NCHANNELS_PER_NET_PEER``-like few channels per peer. The channel count is NCCL's own
    choice from the topology (``NCCL_MIN_NCHANNELS`` / ``NCCL_MAX_NCHANNELS`` bound it); 16 is
    assumed for collectives and 2 for point-to-point. NCCL 2.22+ connects lazily
    (``NCCL_RUNTIME_CONNECT=1``), so a protocol never used may never be allocated: an upper
    estimate.

    Args:
        peers: Ranks this GPU receives from per channel.
        channels: Channels (collectives) or channels per peer (point-to-point).
        p2p: Point-to-point (Simple protocol only).

    Examples:
        >>> nccl_communicator_bytes(1) / 2**20  # one ring, 16 channels, three protocols
        147.0
        >>> nccl_communicator_bytes(2, channels=2, p2p=True) / 2**20
        16.0
    """
    k = parse_positive_int(peers, "peers")
    ch = parse_positive_int(channels, "channels")
    per = NCCL_BUFFSIZE if p2p else NCCL_BUFFSIZE + NCCL_LL_BUFFSIZE + NCCL_LL128_BUFFSIZE
    return ch * k * per


NCCL_HOPPER_CHANNELS = 32
"""NCCL channels per collective communicator on H100/H200/B200-class NVLink: 32 (ESTIMATED).

NCCL picks the count from the topology (``NCCL_MIN_NCHANNELS`` / ``NCCL_MAX_NCHANNELS`` bound it); H100 logs show
24-32 collective channels (``NCCL INFO ... coll channels``, issue 17's comparison); the upper end is taken, as
these buffers are an upper estimate."""

EP_ALLTOALL_BYTES_PER_PEER = 3_300_000_000 // 7
"""NCCL buffers of the expert-parallel all-to-all per peer (MEASURED): +3.3 GB on 8×H100, i.e. over 7 peers
(NVIDIA/nccl issue 1685: the all-to-all connects every pair with point-to-point buffers on many channels)."""

_HOPPER_PLUS = ("h100", "h200", "h800", "h20", "gh200", "b100", "b200", "gb200", "b300", "gb300")


def nccl_channels(gpu: GPU | str | None) -> int:
    """NCCL collective channels assumed for ``gpu``: 32 on Hopper and Blackwell, 16 otherwise or when unknown.

    Examples:
        >>> nccl_channels("h100-sxm"), nccl_channels("a100-80gb"), nccl_channels(None)
        (32, 16, 16)
    """
    if gpu is None:
        return _DEFAULT_CHANNELS
    name = (gpu.name if isinstance(gpu, GPU) else str(gpu)).lower()
    return NCCL_HOPPER_CHANNELS if name.startswith(_HOPPER_PLUS) else _DEFAULT_CHANNELS


def _nccl(layout: Layout, stage: int, channels: int, p2p_channels: int) -> list[Overhead]:
    items = []
    for name, ranks, peers in communicators(layout, stage):
        if name == "ep":
            items.append(_alltoall(ranks, peers))
            continue
        p2p = name in ("pp", "ep")
        ch = p2p_channels if p2p else channels
        size = nccl_communicator_bytes(peers, channels=ch, p2p=p2p)
        proto = "NCCL_BUFFSIZE" if p2p else "(NCCL_BUFFSIZE + NCCL_LL_BUFFSIZE + NCCL_LL128_BUFFSIZE)"
        items.append(
            Overhead(
                f"nccl_{name.replace('-', '_')}",
                f"NCCL buffers, {name} group ({ranks} ranks)",
                size,
                "nvidia-smi",
                "always",
                ESTIMATED,
                f"{ch} channels × {peers} peer{'s' if peers != 1 else ''} × {proto}",
                "NCCL environment variables documentation and src/init.cc defaults; one communicator "
                "per process group (Megatron-LM parallel_state.py)",
            )
        )
    return items


def _alltoall(ranks: int, peers: int) -> Overhead:
    """The expert-parallel all-to-all's buffers, per peer as measured ([`EP_ALLTOALL_BYTES_PER_PEER`])."""
    return Overhead(
        "nccl_ep",
        f"NCCL buffers, ep group all-to-all ({ranks} ranks)",
        peers * EP_ALLTOALL_BYTES_PER_PEER,
        "nvidia-smi",
        "always",
        MEASURED,
        f"{peers} peer{'s' if peers != 1 else ''} × {EP_ALLTOALL_BYTES_PER_PEER:,} B (3.3 GB over 7 peers, measured)",
        "NVIDIA/nccl issue 1685: an 8×H100 all-to-all adds 3.3 GB of NCCL buffers",
    )
