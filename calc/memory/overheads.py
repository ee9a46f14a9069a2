"""What a training GPU holds beyond the tensors it keeps: named overheads and the per-GPU peak.

[`layout_memory`][calc.memory.layout.layout_memory] counts the tensors a step keeps (model states,
saved activations, logits). A real run also pays for things that are not those tensors, and
each is a named line item here, an [`Overhead`][calc.memory.overheads.Overhead] with its formula,
its source and a tag: ``MEASURED`` when the constant was measured, ``ESTIMATED`` when it is
derived from documented defaults or from the framework's source and has not been measured here.
The accuracy page (``docs/accuracy.md``) reports how large each was where it was measured.

Three totals, as PyTorch and ``nvidia-smi`` report them
([`PeakMemory`][calc.memory.overheads.PeakMemory]):

* **allocated**, ``torch.cuda.max_memory_allocated``: the tensors plus the transient buffers of
  the busiest moment. The step has two candidate peaks that never overlap: the end of the
  forward / start of the backward (activations, logits, ZeRO-3's gathered layers, the
  recomputed layer, the loss) and the optimizer step (after the backward has freed the
  activations: the optimizer's temporaries). The larger one is the peak.
* **reserved**, ``torch.cuda.max_memory_reserved``: allocated plus the caching allocator's
  rounding and fragmentation.
* **nvidia-smi**: reserved plus what is allocated outside PyTorch's allocator, the CUDA
  context and NCCL's communicator buffers.

Not modelled (said wherever these numbers are shown): cuBLAS / cuDNN / FlashAttention
workspaces, communication buckets beyond NCCL's own buffers (DDP's bucket copies, Megatron's
overlap buffers), MoE all-to-all and router buffers, FP8 scaling state
([`calc.memory.fp8`][calc.memory.fp8] counts the weight copies), CUDA-graph and ``torch.compile`` memory
pools, and selective recomputation's transient attention tensors.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from calc.errors import CalcError
from calc.memory.fp8 import LOW_PRECISION_RECIPES, low_precision_weights
from calc.memory.layout import Layout, LayoutMemory, layout_stages
from calc.memory.model_state import CONVENTIONS
from calc.memory.moe_routing import stage_activation_ranges
from calc.memory.per_gpu import _layer_kinds
from calc.memory.stage_plan import _stage_params
from calc.models.architecture import Architecture
from calc.units import parse_positive_int

__all__ = [
    "ALLOCATOR_FRAGMENTATION",
    "CUDA_CONTEXT_BYTES",
    "ESTIMATED",
    "MEASURED",
    "MOE_ROUTINGS",
    "NCCL_BUFFSIZE",
    "NCCL_LL128_BUFFSIZE",
    "NCCL_LL_BUFFSIZE",
    "NOT_MODELLED",
    "Overhead",
    "PeakMemory",
    "communicators",
    "nccl_communicator_bytes",
    "overheads",
    "peak_memory",
    "stage_peaks",
]

MEASURED = "MEASURED"
"""Tag of a line item whose constant was measured on real hardware."""

ESTIMATED = "ESTIMATED"
"""Tag of a line item derived from documented defaults or source code, not measured here."""

_MIB = 1 << 20

CUDA_CONTEXT_BYTES = 512 * _MIB
"""The CUDA context and the kernels a PyTorch training process loads, per GPU: 512 MiB (ESTIMATED).

Outside PyTorch's allocator, so it shows in ``nvidia-smi`` but not in ``memory_reserved``
(PyTorch's ``torch.cuda.memory_allocated`` documentation: "some context needs to be created on
GPU"). With lazy module loading (``CUDA_MODULE_LOADING=LAZY``, the default from CUDA 12.2) the
context of a PyTorch process is a few hundred MiB; pytorch/pytorch#34323 reports 781 MB in
``nvidia-smi`` for a program that only creates a tensor (eager module loading). Depends on the
driver, the CUDA version and which kernel libraries are loaded.
"""

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

ALLOCATOR_FRAGMENTATION = {False: (1, 20), True: (1, 100)}
"""The caching allocator's reserve as a fraction of the allocated peak (ESTIMATED), without and with
``expandable_segments``: 1/20 and 1/100.

PyTorch's CUDA-semantics documentation ("Memory management", ``PYTORCH_CUDA_ALLOC_CONF``): the
caching allocator keeps freed blocks reserved, rounds requests up (to 512 bytes, large blocks
from segments of at least 2 MiB, requests under 10 MiB from 20 MiB segments) and can leave
fragments it cannot reuse; ``expandable_segments:True`` maps one growing segment per stream
instead, which the documentation recommends when allocation sizes change (it "can reduce
fragmentation"). Reserved minus allocated is workload-dependent; these fractions are typical of
what users report, not measured here.
"""

MOE_ROUTINGS: dict[str, float | None] = {"balanced": None, "dropless": None, "capacity-1.25": 1.25, "capacity-2": 2}
"""MoE routing cases [`peak_memory`][calc.memory.overheads.peak_memory] can price: balanced (the tensors' own
assumption) or the worst case under dropless routing or a capacity factor
([`calc.memory.moe_routing`][calc.memory.moe_routing])."""

_DEFAULT_CHANNELS = 16
_DEFAULT_P2P_CHANNELS = 2


@dataclass(frozen=True)
class Overhead:
    """One named overhead on one GPU.

    Attributes:
        name: Stable identifier (``"cuda_context"``, ``"nccl_tp"``, ...).
        label: Short human label.
        bytes: Its size, exact integer bytes.
        counted_in: ``"allocated"`` (a tensor of PyTorch's allocator), ``"reserved"`` (the
            allocator's reserve beyond allocated) or ``"nvidia-smi"`` (outside the allocator).
        phase: When it is alive: ``"always"``, ``"backward"`` (around the end of the forward and the
            backward, with the activations) or ``"step"`` (the optimizer step, after the activations
            are freed).
        tag: ``MEASURED`` or ``ESTIMATED``.
        formula: How the bytes are computed, in words and symbols.
        source: Where the formula or constant comes from.
    """

    name: str
    label: str
    bytes: int
    counted_in: str
    phase: str
    tag: str
    formula: str
    source: str

    def as_dict(self) -> dict[str, object]:
        """The fields as a plain ``dict`` (for JSON and the CLI).

        Examples:
            >>> from calc.models.presets import preset
            >>> overheads(preset("gpt2"), Layout(seq_len=1024))[0].as_dict()["name"]
            'cuda_context'
        """
        return {
            "name": self.name,
            "label": self.label,
            "bytes": self.bytes,
            "counted_in": self.counted_in,
            "phase": self.phase,
            "tag": self.tag,
            "formula": self.formula,
            "source": self.source,
        }


@dataclass(frozen=True)
class PeakMemory:
    """The full per-GPU peak of the busiest GPU, as PyTorch and ``nvidia-smi`` would report it.

    Attributes:
        stage: The pipeline stage of that GPU.
        memory: Its tensors ([`LayoutMemory`][calc.memory.layout.LayoutMemory]).
        overheads: The line items ([`Overhead`][calc.memory.overheads.Overhead]).
        allocated_bytes: ``torch.cuda.max_memory_allocated``: model states plus the larger of the
            backward-phase peak (activations, logits and the backward-phase items) and the
            step-phase peak (the step's items).
        reserved_bytes: ``torch.cuda.max_memory_reserved``: allocated plus the allocator reserve.
        nvidia_smi_bytes: What ``nvidia-smi`` shows: reserved plus the CUDA context and NCCL buffers.
        not_modelled: What is still not counted, in words.
    """

    stage: int
    memory: LayoutMemory
    overheads: tuple[Overhead, ...]
    allocated_bytes: int
    reserved_bytes: int
    nvidia_smi_bytes: int
    not_modelled: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        """The totals, the tensors and the line items as plain data.

        Examples:
            >>> from calc.models.presets import preset
            >>> d = peak_memory(preset("gpt2"), Layout(seq_len=1024)).as_dict()
            >>> d["allocated_bytes"] <= d["reserved_bytes"] <= d["nvidia_smi_bytes"]
            True
        """
        return {
            "stage": self.stage,
            "allocated_bytes": self.allocated_bytes,
            "reserved_bytes": self.reserved_bytes,
            "nvidia_smi_bytes": self.nvidia_smi_bytes,
            "tensors": self.memory.as_dict(),
            "overheads": [o.as_dict() for o in self.overheads],
            "not_modelled": list(self.not_modelled),
        }


NOT_MODELLED: tuple[str, ...] = (
    "cuBLAS, cuDNN and FlashAttention workspaces",
    "communication buckets beyond NCCL's own buffers (DDP bucket copies, Megatron overlap buffers)",
    "MoE all-to-all and router buffers",
    "FP8 per-tensor scaling state, and FP8 activations (saved in 8 bits; counted here in 16)",
    "CUDA-graph and torch.compile memory pools",
    "selective recomputation's transient attention tensors",
)
"""What [`peak_memory`][calc.memory.overheads.peak_memory] still does not count, said next to its numbers."""


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


def _nccl(layout: Layout, stage: int, channels: int, p2p_channels: int) -> list[Overhead]:
    items = []
    for name, ranks, peers in communicators(layout, stage):
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


def _unit_params(arch: Architecture, layout: Layout, memory: LayoutMemory) -> int:
    """Parameters of the largest unit (layer, or the embedding / output layer) on the GPU, after TP and EP."""
    start = sum(layout.stage_layer_counts(arch.num_layers)[: memory.stage])
    per_kind: dict[bool, int] = {}
    for i in range(start, start + memory.layers):
        moe = arch.is_moe_layer(i)
        if moe not in per_kind:
            dense, experts = _stage_params(arch, layout, [i], -1)  # -1: neither first nor last stage
            per_kind[moe] = dense + experts
    biggest = max(per_kind.values(), default=0)
    if memory.stage in (0, layout.pp - 1):
        biggest = max(biggest, -(-arch.vocab_size * arch.hidden_size // layout.tp))
    return biggest


def _backward_items(arch: Architecture, layout: Layout, memory: LayoutMemory) -> list[Overhead]:
    conv = CONVENTIONS[layout.convention]
    items = []
    if layout.effective_zero_stage == 3 and layout.zero_ranks > 1:
        unit = _unit_params(arch, layout, memory)
        items.append(
            Overhead(
                "zero3_gathered",
                "ZeRO-3 gathered and prefetched layers",
                3 * unit * conv.weights,
                "allocated",
                "backward",
                ESTIMATED,
                f"3 × {unit:,} params of the largest unit × {conv.weights} B: the unsharded unit being run, "
                "the next one prefetched, and the unsharded gradient of the current one before its "
                "reduce-scatter",
                "PyTorch FSDP2 fully_shard (implicit prefetching of one unit in forward and backward; "
                "gradients reduce-scattered per unit); DeepSpeed ZeRO-3 keeps up to "
                "stage3_max_live_parameters (default 1e9) gathered, which can be more",
            )
        )
    if layout.recompute == "full" and memory.layers:
        full = _layer_kinds(arch, replace(layout, recompute="none"))
        start = sum(layout.stage_layer_counts(arch.num_layers)[: memory.stage])
        layer = max(full[arch.is_moe_layer(i)].total for i in range(start, start + memory.layers))
        items.append(
            Overhead(
                "recomputed_layer",
                "The layer being recomputed (full recomputation)",
                layer,
                "allocated",
                "backward",
                ESTIMATED,
                "one layer's activations without recomputation, for one micro-batch",
                "Korthikanti et al. 2022 (arXiv:2205.05198), Sec. 5: full recomputation re-runs each "
                "layer's forward in the backward pass, so one layer's full activations are alive at once",
            )
        )
    if memory.logits:
        tokens = -(-layout.seq_len // layout.cp) * layout.micro_batch
        grad = -(-2 * tokens * arch.vocab_size // layout.tp)
        items.append(
            Overhead(
                "loss_logits",
                "Loss and logits peak (the logits' gradient)",
                grad,
                "allocated",
                "backward",
                ESTIMATED,
                "2 B × s/cp × b × vocab / tp: the gradient of the logits in the compute dtype, alive with "
                "the fp32 logits while the output layer's backward runs",
                "Megatron-LM vocab_parallel_cross_entropy (softmax saved in place of the fp32 logits, "
                "gradient computed in place and cast back); Hugging Face upcasts the logits to fp32 "
                "(counted in the logits term) and returns a logits-sized gradient",
            )
        )
    return items


def _gemm_params(arch: Architecture, layout: Layout, memory: LayoutMemory) -> int:
    """Parameters of the GEMMs (linear layers) of the stage's layers on one GPU: no norms, routers or embeddings."""
    start = sum(layout.stage_layer_counts(arch.num_layers)[: memory.stage])
    layers = list(range(start, start + memory.layers))
    dense, experts = _stage_params(arch, layout, layers, -1)  # -1: neither first nor last stage
    replicated = sum(
        arch.norm_params_per_layer + (arch.router_params_per_layer if arch.is_moe_layer(i) else 0) for i in layers
    )
    return dense - replicated + experts


def _low_precision_item(arch: Architecture, layout: Layout, memory: LayoutMemory, recipe: str) -> Overhead:
    r = LOW_PRECISION_RECIPES[recipe]
    params = _gemm_params(arch, layout, memory)
    scope = "all GEMM weights of the stage's layers"
    if layout.effective_zero_stage == 3 and layout.zero_ranks > 1 and memory.layers:
        params = -(-2 * params // memory.layers)  # only the gathered units: the current and the prefetched layer
        scope = "the GEMM weights of the two gathered layers (ZeRO-3)"
    w = low_precision_weights(params, recipe)
    return Overhead(
        "low_precision_weights",
        f"Quantized weight copies ({r.name})",
        w.total,
        "allocated",
        "always",
        ESTIMATED,
        f"{r.bytes_per_param} B × {params:,} params: {r.copies} cop{'ies' if r.copies > 1 else 'y'} of {scope}",
        r.source,
    )


def _step_items(layout: Layout, memory: LayoutMemory, optimizer: str) -> list[Overhead]:
    if optimizer == "fused" or not memory.momentum:
        return []
    return [
        Overhead(
            "optimizer_step",
            "Optimizer-step temporaries (foreach)",
            memory.momentum,
            "allocated",
            "step",
            ESTIMATED,
            "one moment-sized tensor for the parameters this GPU steps (the first moment's bytes)",
            "torch.optim.Adam/AdamW/SGD foreach implementation (_multi_tensor_adam: torch._foreach_sqrt "
            "of the second moments allocates one copy before addcdiv); fused=True steps in one kernel "
            "with no such copy",
        )
    ]


def overheads(
    arch: Architecture,
    layout: Layout,
    *,
    stage: int | None = None,
    channels: int = _DEFAULT_CHANNELS,
    p2p_channels: int = _DEFAULT_P2P_CHANNELS,
    expandable_segments: bool = False,
    optimizer: str = "foreach",
    low_precision: str | None = None,
    moe_routing: str = "balanced",
) -> tuple[Overhead, ...]:
    """The named overheads of one GPU: the busiest stage's, or ``stage``'s.

    See [`peak_memory`][calc.memory.overheads.peak_memory] for the arguments.

    Examples:
        >>> from calc.models.presets import preset
        >>> [o.name for o in overheads(preset("llama3-8b"), Layout(dp=8, tp=2, zero_stage=3, seq_len=4096))]
        ... # doctest: +ELLIPSIS
        ['cuda_context', 'nccl_dp', 'nccl_tp', 'nccl_tp_dp', 'zero3_gathered', 'loss_logits', ...]
    """
    return peak_memory(
        arch,
        layout,
        stage=stage,
        channels=channels,
        p2p_channels=p2p_channels,
        expandable_segments=expandable_segments,
        optimizer=optimizer,
        low_precision=low_precision,
        moe_routing=moe_routing,
    ).overheads


def peak_memory(
    arch: Architecture,
    layout: Layout,
    *,
    stage: int | None = None,
    channels: int = _DEFAULT_CHANNELS,
    p2p_channels: int = _DEFAULT_P2P_CHANNELS,
    expandable_segments: bool = False,
    optimizer: str = "foreach",
    low_precision: str | None = None,
    moe_routing: str = "balanced",
) -> PeakMemory:
    """The full per-GPU peak: tensors plus every named overhead, as allocated, reserved and ``nvidia-smi``.

    Without ``stage``, every pipeline stage is evaluated and the one with the largest
    ``nvidia-smi`` total is returned (ties to the earlier stage).

    ``allocated = model states + always-alive items + max(activations + logits + backward-phase items,
    step-phase items)``;
    ``reserved = allocated + allocator reserve``, the reserve being ``allocated × f`` rounded up to
    2 MiB (``f`` from [`ALLOCATOR_FRAGMENTATION`][calc.memory.overheads.ALLOCATOR_FRAGMENTATION]);
    ``nvidia-smi = reserved + CUDA context + NCCL buffers``.

    Args:
        arch: The model.
        layout: The layout.
        stage: A pipeline stage; ``None`` takes the busiest.
        channels: NCCL channels per collective communicator (NCCL picks them from the topology).
        p2p_channels: NCCL channels per peer for point-to-point traffic (pipeline, all-to-all).
        expandable_segments: ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``.
        optimizer: ``"foreach"`` (PyTorch's default on CUDA) or ``"fused"`` (``fused=True``, apex /
            Transformer Engine FusedAdam, Megatron-LM's default).
        low_precision: A key of [`LOW_PRECISION_RECIPES`][calc.memory.fp8.LOW_PRECISION_RECIPES] to add the
            quantized weight copies of FP8 / MXFP8 / NVFP4 training; ``None`` for bf16 GEMMs.
        moe_routing: A key of [`MOE_ROUTINGS`][calc.memory.overheads.MOE_ROUTINGS]: ``"balanced"`` (the default, as
            the tensors assume) or a worst case, added as a named line for MoE models.

    Returns:
        The [`PeakMemory`][calc.memory.overheads.PeakMemory].

    Raises:
        CalcError: On a layout the model cannot run, a stage outside the pipeline, or a bad option.

    Examples:
        >>> from calc.models.presets import preset
        >>> from calc.units import format_bytes
        >>> p = peak_memory(preset("llama3-8b"), Layout(dp=8, zero_stage=1, seq_len=8192,
        ...                 flash_attention=True, dropout=False, recompute="selective"))
        >>> format_bytes(p.memory.total), format_bytes(p.allocated_bytes), format_bytes(p.nvidia_smi_bytes)
        ('85.0 GB', '87.1 GB', '92.2 GB')
    """
    if stage is not None:
        k = parse_positive_int(stage, "stage", minimum=0, maximum=layout.pp - 1)
        return stage_peaks(
            arch,
            layout,
            channels=channels,
            p2p_channels=p2p_channels,
            expandable_segments=expandable_segments,
            optimizer=optimizer,
            low_precision=low_precision,
            moe_routing=moe_routing,
        )[k]
    best = None
    for p in stage_peaks(
        arch,
        layout,
        channels=channels,
        p2p_channels=p2p_channels,
        expandable_segments=expandable_segments,
        optimizer=optimizer,
        low_precision=low_precision,
        moe_routing=moe_routing,
    ):
        if best is None or p.nvidia_smi_bytes > best.nvidia_smi_bytes:
            best = p
    assert best is not None  # pp >= 1
    return best


def stage_peaks(
    arch: Architecture,
    layout: Layout,
    *,
    channels: int = _DEFAULT_CHANNELS,
    p2p_channels: int = _DEFAULT_P2P_CHANNELS,
    expandable_segments: bool = False,
    optimizer: str = "foreach",
    low_precision: str | None = None,
    moe_routing: str = "balanced",
) -> tuple[PeakMemory, ...]:
    """[`peak_memory`][calc.memory.overheads.peak_memory] of every pipeline stage, first to last (same options).

    Examples:
        >>> from calc.models.presets import preset
        >>> peaks = stage_peaks(preset("llama3.1-405b"), Layout(tp=8, pp=16, seq_len=8192))
        >>> len(peaks), [p.memory.layers for p in peaks][:2]
        (16, [7, 8])
    """
    if optimizer not in ("foreach", "fused"):
        raise CalcError("optimizer", "must be one of foreach, fused", optimizer, code="unknown-name")
    if not isinstance(expandable_segments, bool):
        raise CalcError("expandable_segments", "must be true or false", expandable_segments)
    if low_precision is not None and low_precision not in LOW_PRECISION_RECIPES:
        low_precision_weights(1, low_precision)  # raises, naming the field
    if moe_routing not in MOE_ROUTINGS:
        raise CalcError("moe_routing", f"must be one of {', '.join(MOE_ROUTINGS)}", moe_routing, code="unknown-name")
    ch = parse_positive_int(channels, "channels", maximum=1024)
    p2p = parse_positive_int(p2p_channels, "p2p_channels", maximum=1024)
    stages = layout_stages(arch, layout)
    excess = [0] * len(stages)
    if moe_routing != "balanced" and arch.is_moe:
        ranges = stage_activation_ranges(arch, layout, capacity_factor=MOE_ROUTINGS[moe_routing])
        excess = [r.worst - r.balanced for r in ranges]
    return tuple(
        _peak(arch, layout, m, ch, p2p, expandable_segments, optimizer, low_precision, (moe_routing, excess[m.stage]))
        for m in stages
    )


def _peak(
    arch: Architecture,
    layout: Layout,
    m: LayoutMemory,
    channels: int,
    p2p_channels: int,
    expandable: bool,
    optimizer: str,
    low_precision: str | None,
    routing: tuple[str, int] = ("balanced", 0),
) -> PeakMemory:
    context = Overhead(
        "cuda_context",
        "CUDA context and loaded kernels",
        CUDA_CONTEXT_BYTES,
        "nvidia-smi",
        "always",
        ESTIMATED,
        "constant, 512 MiB",
        "PyTorch torch.cuda.memory_allocated documentation ('some context needs to be created on GPU'); "
        "pytorch/pytorch#34323 (781 MB for an empty program, eager loading)",
    )
    backward = _backward_items(arch, layout, m)
    if routing[1]:
        backward.append(
            Overhead(
                "moe_routing_imbalance",
                f"MoE routing imbalance ({routing[0]}, worst case)",
                routing[1],
                "allocated",
                "backward",
                ESTIMATED,
                "the routed experts' activations at the worst tokens-per-rank the routing allows, less the balanced "
                "ones, times the micro-batches in flight",
                "calc.memory.moe_routing: GShard (arXiv:2006.16668) and Switch Transformer (arXiv:2101.03961) expert "
                "capacity; Megatron-LM dropless routing (no capacity factor)",
            )
        )
    step = _step_items(layout, m, optimizer)
    always = [_low_precision_item(arch, layout, m, low_precision)] if low_precision and m.layers else []
    allocated = (
        m.model_state
        + sum(o.bytes for o in always)
        + max(m.activations + m.logits + sum(o.bytes for o in backward), sum(o.bytes for o in step))
    )
    num, den = ALLOCATOR_FRAGMENTATION[expandable]
    reserve = -(-allocated * num // (den * 2 * _MIB)) * 2 * _MIB
    allocator = Overhead(
        "allocator_reserve",
        "Caching allocator reserve (rounding, fragmentation)",
        reserve,
        "reserved",
        "always",
        ESTIMATED,
        f"allocated × {num}/{den}, rounded up to 2 MiB" + (" (expandable_segments)" if expandable else ""),
        "PyTorch CUDA semantics, Memory management and PYTORCH_CUDA_ALLOC_CONF (expandable_segments)",
    )
    nccl = _nccl(layout, m.stage, channels, p2p_channels)
    items = (context, *nccl, *always, *backward, *step, allocator)
    reserved = allocated + reserve
    outside = context.bytes + sum(o.bytes for o in nccl)
    return PeakMemory(
        stage=m.stage,
        memory=m,
        overheads=items,
        allocated_bytes=allocated,
        reserved_bytes=reserved,
        nvidia_smi_bytes=reserved + outside,
        not_modelled=NOT_MODELLED,
    )
