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
    "NVLS_CHUNK_BYTES",
    "communicators",
    "nccl_channels",
    "nccl_communicator_bytes",
    "nvls_bytes",
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

NVLS_CHUNK_BYTES = 128 * 1024
"""NVLink SHARP's step size: 128 KiB (``NCCL_NVLS_CHUNKSIZE``; NCCL ``src/transport/nvls.cc``
``NCCL_PARAM(NvlsChunkSize, "NVLS_CHUNKSIZE", 128 * 1024)``), over ``NCCL_STEPS`` = 8 steps a buffer
(``src/include/device.h``)."""

_NCCL_STEPS = 8
_NVLS_MAX_HEADS = 32
_NVLS_GPUS = ("h100-sxm", "h200", "h800", "b200", "gb200", "b300", "gb300")  # NVSwitch parts with NVLink SHARP
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


def nvls_bytes(local_ranks: int, *, channels: int = 16) -> int:
    """NVLink SHARP (NVLS) buffer bytes one communicator allocates on one GPU, outside PyTorch's allocator.

    NCCL ``src/transport/nvls.cc`` (``ncclNvlsBufferSetup``): ``buffSize = NCCL_NVLS_CHUNKSIZE × NCCL_STEPS``,
    ``nvlsPerRankSize = nChannels × 2 × buffSize``, ``nvlsTotalSize = nvlsPerRankSize × nHeads``, with one head per
    GPU of the communicator in the NVLink domain (``local_ranks``, at most ``NCCL_MAX_NVLS_ARITY`` = 32,
    ``src/include/device.h``) and ``nChannels`` 16 on Hopper
    (``NVLS_NCHANNELS_SM90``), 24 on one Blackwell NVLink domain and 32 across several (``NVLS_NCHANNELS_SM100``).
    NCCL sets it up for a communicator with at least two GPUs in an NVSwitch domain (``NCCL_NVLS_ENABLE``, on by
    default where supported); ``NCCL_NVLS_ENABLE=0`` removes it.

    Examples:
        >>> nvls_bytes(8) / 2**20  # Hopper, eight GPUs of one node: 16 channels x 2 x 1 MiB x 8
        256.0
        >>> nvls_bytes(72, channels=24) == nvls_bytes(32, channels=24)  # an NVL72 domain: 32 heads at most
        True
    """
    k = min(parse_positive_int(local_ranks, "local_ranks"), _NVLS_MAX_HEADS)
    return parse_positive_int(channels, "channels") * 2 * NVLS_CHUNK_BYTES * _NCCL_STEPS * k


_AXES = {"dp": ("dp",), "dp-cp": ("cp", "dp"), "tp": ("tp",), "cp": ("cp",), "pp": ("pp",)}
_AXES |= {"tp-pp": ("tp", "pp"), "tp-dp": ("tp", "dp"), "ep-dp": ("cp", "dp")}


def _local_ranks(layout: Layout, name: str, ranks: int, domain: int) -> int:
    """Members of rank 0's ``name`` group inside its NVLink domain of ``domain`` GPUs, under Megatron-LM's rank
    order (``tp`` fastest, then ``cp``, ``dp``, ``pp``: ``megatron/core/parallel_state.py``)."""
    size = {"tp": layout.tp, "cp": layout.cp, "dp": layout.dp, "pp": layout.pp}
    stride = {"tp": 1, "cp": layout.tp, "dp": layout.tp * layout.cp, "pp": layout.tp * layout.cp * layout.dp}
    if name == "embedding":  # the first and the last stage
        return 2 if (layout.pp - 1) * stride["pp"] < domain else 1
    counts = [0]
    for axis in _AXES.get(name, ()):
        reach = range(min(size[axis], -(-domain // stride[axis])))
        counts = [c + i * stride[axis] for c in counts for i in reach]
    return max(1, min(ranks, sum(1 for c in counts if c < domain)))


def _nccl_extras(layout: Layout, gpu: GPU | None, channels: int, stage: int) -> list[Overhead]:
    """The NVLS buffers of the communicators inside an NVSwitch domain, and the tree buffers of those that
    all-reduce across domains (``nccl_nvls``, ``nccl_tree``)."""
    if gpu is None:
        return []
    domain = max(gpu.gpus_per_node, gpu.scaleup_domain_gpus)  # one NCCL node: a server, or a whole NVL72 domain
    kept = [(n, r) for n, r, _ in communicators(layout, stage) if n not in ("pp", "ep")]
    groups = [(n, r, _local_ranks(layout, n, r, domain)) for n, r in kept]
    items = []
    nvls = [(n, min(k, _NVLS_MAX_HEADS)) for n, r, k in groups if k > 1] if gpu.name.startswith(_NVLS_GPUS) else []
    if nvls:
        blackwell = not gpu.name.startswith(("h100", "h200", "h800"))
        spans = any(r > k for n, r, k in groups)
        ch = (32 if spans else 24) if blackwell else 16
        items.append(
            Overhead(
                "nccl_nvls",
                "NCCL NVLink SHARP (NVLS) buffers",
                sum(nvls_bytes(k, channels=ch) for _, k in nvls),
                "nvidia-smi",
                "always",
                ESTIMATED,
                f"{ch} channels × 2 × {NVLS_CHUNK_BYTES * _NCCL_STEPS // 2**20} MiB × its GPUs in the node (at most "
                f"{_NVLS_MAX_HEADS}), per group: " + ", ".join(f"{n} {k}" for n, k in nvls),
                "NCCL src/transport/nvls.cc (ncclNvlsBufferSetup, NVLS_NCHANNELS_SM90 16, NVLS_NCHANNELS_SM100 32 / "
                "24 in one NVLink domain, NCCL_NVLS_CHUNKSIZE 128 KiB); NCCL_NVLS_ENABLE=0 removes it",
            )
        )
    reduce_all = {"dp", "dp-cp"} if layout.effective_zero_stage == 0 else set()
    tree = [n for n, r, k in groups if r > k and n in reduce_all]
    if tree:
        per = nccl_communicator_bytes(2, channels=channels)
        items.append(
            Overhead(
                "nccl_tree",
                "NCCL tree buffers (all-reduce across nodes)",
                len(tree) * per,
                "nvidia-smi",
                "always",
                ESTIMATED,
                f"{channels} channels × 2 tree peers (parent and child) × (NCCL_BUFFSIZE + NCCL_LL_BUFFSIZE + "
                f"NCCL_LL128_BUFFSIZE), per group: {', '.join(tree)}",
                "NCCL src/graph/trees.cc (double binary tree across nodes, a chain inside each: NCCL_MAX_TREE_ARITY "
                "3) and src/init.cc buffer defaults; only all-reduce uses the tree: here the gradient all-reduce "
                "without ZeRO (ZeRO reduce-scatters and all-gathers: rings, NVLS)",
            )
        )
    return items


def _nccl(layout: Layout, stage: int, channels: int, p2p_channels: int, gpu: GPU | None = None) -> list[Overhead]:
    items = _nccl_extras(layout, gpu, channels, stage)
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
