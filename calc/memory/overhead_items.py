"""The named overhead line items: the [`Overhead`][calc.memory.overheads.Overhead] value, its tags, the
constants it is priced with and the builders of the backward-pass, step and low-precision items.

The public names are re-exported by [`calc.memory.overheads`][calc.memory.overheads].
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from calc.memory.fp8 import LOW_PRECISION_RECIPES, low_precision_weights
from calc.memory.layout import Layout, LayoutMemory
from calc.memory.model_state import CONVENTIONS
from calc.memory.per_gpu import _layer_kinds
from calc.memory.stacks import DEEPSPEED_REDUCE_BUCKET, loss_bytes
from calc.memory.stage_plan import _stage_params, stage_plan
from calc.models.architecture import Architecture

__all__ = [
    "ALLOCATOR_FRAGMENTATION",
    "ALLOCATOR_RESERVE",
    "CUDA_CONTEXT_BYTES",
    "ESTIMATED",
    "MEASURED",
    "MOE_ROUTINGS",
    "Overhead",
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

ALLOCATOR_RESERVE: dict[str, dict[bool, tuple[int, int]]] = {
    "megatron": ALLOCATOR_FRAGMENTATION,
    "torchtitan": {False: (27, 200), True: (27, 200)},
    "deepspeed": ALLOCATOR_FRAGMENTATION,
}
"""The caching allocator's reserve per stack (``Layout.stack``), as a fraction of the allocated peak, without and
with ``expandable_segments`` (ESTIMATED from published runs):

* ``"megatron"``: [`ALLOCATOR_FRAGMENTATION`][calc.memory.overheads.ALLOCATOR_FRAGMENTATION], 1/20 (Megatron-LM
  logs put reserved 1-11% above allocated, issue 17's comparison of 30 published peaks);
* ``"torchtitan"``: 27/200 = 13.5% with or without expandable segments (FSDP2's all-gather and reduce-scatter
  buffers of every size on their own streams: about 13-14% in the same comparison's torchtitan rows, which run
  with ``PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True`` as ``run_train.sh`` sets it);
* ``"deepspeed"``: Megatron's 1/20, for want of a published figure: DeepSpeed allocates its large buffers (the
  gradient bucket, the flat partitions) once, so they do not fragment as FSDP2's per-unit collectives do.
"""

ALLOCATOR_RESERVE_SOURCES: dict[str, str] = {
    "megatron": "PyTorch CUDA semantics, Memory management and PYTORCH_CUDA_ALLOC_CONF (expandable_segments)",
    "torchtitan": "FSDP2 stacks' reserved/allocated of about 1.13-1.14 in published torchtitan runs (issue 17); "
    "PyTorch CUDA semantics, Memory management",
    "deepspeed": "Megatron's figure, not measured for DeepSpeed; PyTorch CUDA semantics, Memory management",
}
"""Where each stack's allocator reserve comes from."""

MOE_ROUTINGS: dict[str, float | None] = {"balanced": None, "dropless": None, "capacity-1.25": 1.25, "capacity-2": 2}
"""MoE routing cases [`peak_memory`][calc.memory.overheads.peak_memory] can price: balanced (the tensors' own
assumption) or the worst case under dropless routing or a capacity factor
([`calc.memory.moe_routing`][calc.memory.moe_routing])."""


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
            >>> from calc.memory.overheads import overheads
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


def _unit_params(arch: Architecture, layout: Layout, memory: LayoutMemory) -> int:
    """Parameters of the largest unit (layer, or the embedding / output layer) on the GPU, after TP and EP."""
    per_kind: dict[bool, int] = {}
    for i in stage_plan(arch, layout).layers[memory.stage]:
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
    if layout.effective_zero_stage == 3 and layout.zero_ranks > 1 and not layout.reshards_after_forward:
        items.extend(_unsharded_items(layout, memory, conv))
    elif layout.effective_zero_stage == 3 and layout.zero_ranks > 1:
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
    if layout.recompute in ("full", "op") and memory.layers:
        full = _layer_kinds(arch, replace(layout, recompute="none"))
        kept = _layer_kinds(arch, layout) if layout.recompute == "op" else {}
        layer = max(
            full[moe].total - (kept[moe].total if kept else 0)
            for moe in {arch.is_moe_layer(i) for i in stage_plan(arch, layout).layers[memory.stage]}
        )
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
        items.append(_loss_item(arch, layout))
    bucket = _deepspeed_bucket(layout)
    if bucket and bucket.phase == "backward":
        items.append(bucket)
    return items


def _loss_item(arch: Architecture, layout: Layout) -> Overhead:
    """The loss's backward transient on the last stage ([`loss_bytes`][calc.memory.layout.loss_bytes])."""
    tokens = -(-layout.seq_len // layout.cp) * layout.micro_batch
    if layout.loss_kind == "fused":
        grad = -(-2 * tokens * arch.vocab_size // layout.tp)
        return Overhead(
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
    _, transient, formula = loss_bytes(
        layout.loss_kind, tokens, arch.vocab_size, layout.tp, layout.loss_chunk_tokens, hidden=arch.hidden_size
    )
    return Overhead(
        "loss_logits",
        f"Loss and logits peak ({layout.loss_kind} cross-entropy's backward)",
        transient,
        "allocated",
        "backward",
        ESTIMATED,
        formula,
        "calc.memory.stacks: torch.nn.functional.cross_entropy = log_softmax + nll_loss on fp32-upcast logits "
        "(torchtitan/components/loss.py, transformers' ForCausalLMLoss); torchtitan ChunkedLossWrapper; "
        "torch.compile fuses the three",
    )


def _unsharded_items(layout: Layout, memory: LayoutMemory, conv: object) -> list[Overhead]:
    """FSDP without resharding after forward: the stage unsharded from forward to backward, and its fp32
    gradients accumulated unsharded over the micro-batches (reduce-scattered on the last one)."""
    params = memory.params
    return [
        Overhead(
            "fsdp_unsharded_params",
            "FSDP parameters kept unsharded (reshard_after_forward=False)",
            2 * params,
            "allocated",
            "backward",
            ESTIMATED,
            f"2 B × {params:,} params of the stage: the bf16 all-gathered weights stay from forward to backward",
            "PyTorch FSDP2 fully_shard(reshard_after_forward=False); torchtitan sets it under pipeline parallelism "
            "(fsdp_reshard_after_forward='default', torchtitan/models/llama3/infra/parallelize.py)",
        ),
        Overhead(
            "fsdp_unsharded_grads",
            "FSDP gradients accumulated unsharded across micro-batches",
            4 * params,
            "allocated",
            "backward",
            ESTIMATED,
            f"4 B × {params:,} params: fp32 (reduce_dtype) unsharded gradients until the last micro-batch",
            "torchtitan pipeline schedules run FSDP2 with gradient sync only on the last micro-batch "
            "(set_requires_gradient_sync / set_reshard_after_backward); MixedPrecisionPolicy(reduce_dtype=float32)",
        ),
    ]


def _deepspeed_bucket(layout: Layout) -> Overhead | None:
    """DeepSpeed's contiguous gradient bucket under ZeRO-1/2/3 (``Layout.stack == "deepspeed"``), else ``None``.

    ``reduce_bucket_size`` elements ([`DEEPSPEED_REDUCE_BUCKET`][calc.memory.stacks.DEEPSPEED_REDUCE_BUCKET]) in
    the 16-bit dtype, allocated whole: in the backward pass under ZeRO-1/2, for the whole run under ZeRO-3.

    Examples:
        >>> _deepspeed_bucket(Layout(stack="deepspeed", zero_stage=2)).bytes
        1000000000
        >>> _deepspeed_bucket(Layout(stack="deepspeed")) is None  # ZeRO off: DeepSpeed's default
        True
    """
    stage = layout.effective_zero_stage
    if layout.stack != "deepspeed" or stage == 0:
        return None
    width = CONVENTIONS[layout.convention].weights or 2
    return Overhead(
        "deepspeed_bucket",
        "DeepSpeed contiguous gradient bucket (reduce_bucket_size)",
        DEEPSPEED_REDUCE_BUCKET * width,
        "allocated",
        "always" if stage == 3 else "backward",
        ESTIMATED,
        f"{DEEPSPEED_REDUCE_BUCKET:,} elements × {width} B, whatever the model's size"
        + (" (kept from the start)" if stage == 3 else " (from the first gradient to the end of the backward)"),
        "DeepSpeed deepspeed/runtime/zero/config.py (reduce_bucket_size 5e8, contiguous_gradients True), "
        "stage_1_and_2.py setup_buckets / stage3.py (one IPG buffer; a second only with overlap_comm below stage 3)",
    )


def _gemm_params(arch: Architecture, layout: Layout, memory: LayoutMemory) -> int:
    """Parameters of the GEMMs (linear layers) of the stage's layers on one GPU: no norms, routers or embeddings."""
    layers = list(stage_plan(arch, layout).layers[memory.stage])
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
