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

from dataclasses import dataclass

from calc.errors import CalcError
from calc.hardware import GPU, GPUS
from calc.memory.fp8 import LOW_PRECISION_RECIPES, low_precision_weights
from calc.memory.layout import Layout, LayoutMemory, layout_stages
from calc.memory.moe_routing import stage_activation_ranges
from calc.memory.nccl import (
    _DEFAULT_P2P_CHANNELS,
    NCCL_BUFFSIZE,
    NCCL_LL128_BUFFSIZE,
    NCCL_LL_BUFFSIZE,
    _nccl,
    communicators,
    nccl_channels,
    nccl_communicator_bytes,
)
from calc.memory.overhead_items import (
    _MIB,
    ALLOCATOR_FRAGMENTATION,
    ALLOCATOR_RESERVE,
    ALLOCATOR_RESERVE_SOURCES,
    CUDA_CONTEXT_BYTES,
    ESTIMATED,
    MEASURED,
    MOE_ROUTINGS,
    Overhead,
    _backward_items,
    _deepspeed_bucket,
    _low_precision_item,
    _step_items,
)
from calc.memory.stacks import layer_gaps
from calc.models.architecture import Architecture
from calc.units import parse_positive_int

__all__ = [
    "ALLOCATOR_FRAGMENTATION",
    "ALLOCATOR_RESERVE",
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
    "nccl_channels",
    "nccl_communicator_bytes",
    "overheads",
    "peak_memory",
    "stage_peaks",
]


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


def overheads(arch: Architecture, layout: Layout, **options) -> tuple[Overhead, ...]:
    """The named overheads of one GPU: the busiest stage's, or ``stage``'s.

    ``options`` are [`peak_memory`][calc.memory.overheads.peak_memory]'s keyword arguments (``stage``, ``channels``,
    ``p2p_channels``, ``expandable_segments``, ``optimizer``, ``low_precision``, ``moe_routing``, ``gpu``).

    Examples:
        >>> from calc.models.presets import preset
        >>> [o.name for o in overheads(preset("llama3-8b"), Layout(dp=8, tp=2, zero_stage=3, seq_len=4096))]
        ... # doctest: +ELLIPSIS
        ['cuda_context', 'nccl_dp', 'nccl_tp', 'nccl_tp_dp', 'zero3_gathered', 'loss_logits', ...]
    """
    return peak_memory(arch, layout, **options).overheads


def peak_memory(
    arch: Architecture,
    layout: Layout,
    *,
    stage: int | None = None,
    channels: int | None = None,
    p2p_channels: int = _DEFAULT_P2P_CHANNELS,
    expandable_segments: bool = False,
    optimizer: str = "foreach",
    low_precision: str | None = None,
    moe_routing: str = "balanced",
    gpu: GPU | str | None = None,
) -> PeakMemory:
    """The full per-GPU peak: tensors plus every named overhead, as allocated, reserved and ``nvidia-smi``.

    Without ``stage``, every pipeline stage is evaluated and the one with the largest
    ``nvidia-smi`` total is returned (ties to the earlier stage).

    ``allocated = model states + always-alive items + max(activations + logits + backward-phase items,
    step-phase items)``;
    ``reserved = allocated + allocated × f`` rounded up to 2 MiB (``f`` per stack:
    [`ALLOCATOR_RESERVE`][calc.memory.overheads.ALLOCATOR_RESERVE]); ``nvidia-smi = reserved + context + NCCL``.

    Args:
        arch: The model.
        layout: The layout.
        stage: A pipeline stage; ``None`` takes the busiest.
        channels: NCCL channels per collective; ``None``: [`nccl_channels`][calc.memory.overheads.nccl_channels].
        p2p_channels: NCCL channels per peer for point-to-point traffic (pipeline, all-to-all).
        expandable_segments: ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True``.
        optimizer: ``"foreach"`` (PyTorch's CUDA default) or ``"fused"`` (apex / TE FusedAdam, Megatron's).
        low_precision: A key of [`LOW_PRECISION_RECIPES`][calc.memory.fp8.LOW_PRECISION_RECIPES] to add the
            quantized weight copies of FP8 / MXFP8 / NVFP4 training; ``None`` for bf16 GEMMs.
        moe_routing: A key of [`MOE_ROUTINGS`][calc.memory.overheads.MOE_ROUTINGS]: ``"balanced"`` (the default, as
            the tensors assume) or a worst case, added as a named line for MoE models.
        gpu: The GPU (a [`GPU`][calc.hardware.GPU] or preset name), for NCCL's channel count (``None``: 16) and
            its NVLink SHARP and tree buffers (``None``: not counted).

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
    k = None if stage is None else parse_positive_int(stage, "stage", minimum=0, maximum=layout.pp - 1)
    peaks = stage_peaks(
        arch,
        layout,
        channels=channels,
        p2p_channels=p2p_channels,
        expandable_segments=expandable_segments,
        optimizer=optimizer,
        low_precision=low_precision,
        moe_routing=moe_routing,
        gpu=gpu,
    )
    return peaks[k] if k is not None else max(peaks, key=lambda p: p.nvidia_smi_bytes)  # ties: the earlier stage


def stage_peaks(
    arch: Architecture,
    layout: Layout,
    *,
    channels: int | None = None,
    p2p_channels: int = _DEFAULT_P2P_CHANNELS,
    expandable_segments: bool = False,
    optimizer: str = "foreach",
    low_precision: str | None = None,
    moe_routing: str = "balanced",
    gpu: GPU | str | None = None,
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
    ch = parse_positive_int(nccl_channels(gpu) if channels is None else channels, "channels", maximum=1024)
    p2p = parse_positive_int(p2p_channels, "p2p_channels", maximum=1024)
    g = gpu if isinstance(gpu, GPU) else GPUS.get(str(gpu)) if gpu is not None else None  # NVLS and tree buffers
    stages = layout_stages(arch, layout)
    excess = [0] * len(stages)
    if moe_routing != "balanced" and arch.is_moe:
        ranges = stage_activation_ranges(arch, layout, capacity_factor=MOE_ROUTINGS[moe_routing])
        excess = [r.worst - r.balanced for r in ranges]
    return tuple(
        _peak(
            arch, layout, m, ch, p2p, expandable_segments, optimizer, low_precision, (moe_routing, excess[m.stage]), g
        )
        for m in stages
    )


_CONTEXT = Overhead(
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
    gpu: GPU | None = None,
) -> PeakMemory:
    context = _CONTEXT
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
    bucket = _deepspeed_bucket(layout)
    always += [bucket] if bucket and bucket.phase == "always" else []
    allocated = (
        m.model_state
        + sum(o.bytes for o in always)
        + max(m.activations + m.logits + sum(o.bytes for o in backward), sum(o.bytes for o in step))
    )
    num, den = ALLOCATOR_RESERVE[layout.stack][expandable]
    reserve = -(-allocated * num // (den * 2 * _MIB)) * 2 * _MIB
    allocator = Overhead(
        "allocator_reserve",
        "Caching allocator reserve (rounding, fragmentation)",
        reserve,
        "reserved",
        "always",
        ESTIMATED,
        f"allocated × {num}/{den}, rounded up to 2 MiB"
        + (f" ({layout.stack})" if layout.stack != "megatron" else "")
        + (" (expandable_segments)" if expandable else ""),
        ALLOCATOR_RESERVE_SOURCES[layout.stack],
    )
    nccl = _nccl(layout, m.stage, channels, p2p_channels, gpu)
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
        not_modelled=NOT_MODELLED
        + layer_gaps(
            layout.stack,
            recompute=layout.recompute,
            compile=layout.compile,
            gqa=arch.num_kv_heads < arch.num_heads,
        ),
    )
