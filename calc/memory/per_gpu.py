"""The per-GPU memory of a layout: model states plus activations, stage by stage.

[`stage_memory`][calc.memory.layout.stage_memory] gives one GPU of one pipeline stage,
[`layout_stages`][calc.memory.layout.layout_stages] every stage and
[`layout_memory`][calc.memory.layout.layout_memory] the most loaded one, each a
[`LayoutMemory`][calc.memory.layout.LayoutMemory]. They read the stage plan
([`stage_plan`][calc.memory.layout.stage_plan]) once; the accounting is described in
[`calc.memory.layout`][calc.memory.layout].

The public names are re-exported by [`calc.memory.layout`][calc.memory.layout].
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields
from fractions import Fraction
from itertools import accumulate, pairwise

from calc.memo import memoized
from calc.memory.activation_profiles import hf_model_terms
from calc.memory.activation_stages import _stage_extras
from calc.memory.activations import LayerActivations, layer_activations
from calc.memory.layout_spec import Layout, check_layout
from calc.memory.model_state import COMPONENTS, CONVENTIONS, Convention, busiest_shard
from calc.memory.stacks import loss_bytes
from calc.memory.stage_plan import StagePlan, _ceil_div, _tensors_of, stage_plan
from calc.models.architecture import Architecture
from calc.units import parse_positive_int

__all__ = ["LayoutMemory", "layout_memory", "layout_stages", "stage_memory"]


@dataclass(frozen=True)
class LayoutMemory:
    """What one GPU of a pipeline stage holds during training, in bytes (and a few counts).

    Attributes:
        stage: The pipeline stage (0 to ``pp - 1``) these numbers are for.
        layers: Transformer layers the stage holds.
        params: Parameters the GPU holds a copy or shard of before ZeRO sharding (its stage's
            parameters after tensor and expert parallelism).
        weights: Working weights on the GPU.
        gradients: Gradients on the GPU.
        master: fp32 master weights on the GPU.
        momentum: First Adam moment on the GPU.
        variance: Second Adam moment on the GPU.
        activations: Activations of the stage's layers for the in-flight micro-batches, plus the
            embedding dropout mask on stage 0.
        logits: Output-layer activations (last stage only): final-norm input, output-projection input,
            fp32 logits for the loss.
        cpu_offload: Bytes this GPU's rank keeps in CPU memory (offloaded states); not in ``total``.
        in_flight: Micro-batch chunks in flight on the stage (a count).
        num_microbatches: Micro-batches per step per pipeline (0 when the layout does not say).
        saved_activations: Every byte saved for backward on the GPU under the layout's
            ``implementation``: its layers for the in-flight micro-batches, the embedding side
            (token ids, positions, dropout mask), the final norm, the output layer's input and the
            loss's fp32 logits (``activations + logits``).
    """

    stage: int
    layers: int
    params: int
    weights: int
    gradients: int
    master: int
    momentum: int
    variance: int
    activations: int
    logits: int
    cpu_offload: int
    in_flight: int
    num_microbatches: int
    saved_activations: int = 0

    @property
    def model_state(self) -> int:
        """Model-state bytes on the GPU (weights, gradients, master, both moments).

        Examples:
            >>> from calc.models.presets import preset
            >>> layout_memory(preset("gpt2"), Layout(seq_len=1024)).model_state
            1991036928
        """
        return sum(getattr(self, name) for name in COMPONENTS)

    @property
    def total(self) -> int:
        """All bytes on the GPU: model states, activations and logits."""
        return self.model_state + self.activations + self.logits

    def as_dict(self) -> dict[str, int]:
        """Fields plus ``model_state`` and ``total`` as a plain ``dict``.

        Examples:
            >>> from calc.models.presets import preset
            >>> d = layout_memory(preset("gpt2"), Layout(seq_len=1024)).as_dict()
            >>> d["total"] == d["model_state"] + d["activations"] + d["logits"]
            True
        """
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["model_state"] = self.model_state
        out["total"] = self.total
        return out


def _layer_kinds(arch: Architecture, layout: Layout) -> dict[bool, LayerActivations]:
    """Per-layer activations for a dense layer and (if any) an MoE layer."""
    common = dict(
        kv_heads=arch.num_kv_heads,
        head_dim=arch.head_dim,
        v_head_dim=arch.v_head_dim,
        mlp=arch.mlp,
        dropout=layout.dropout,
        norm=arch.norm,
        tp=layout.tp,
        sequence_parallel=layout.sequence_parallel,
        cp=layout.cp,
        recompute=layout.recompute,
        flash_attention=layout.flash_attention,
        implementation=layout.implementation,
        qk_norm=arch.qk_norm,
        num_experts=arch.num_experts,
    )
    args = (layout.seq_len, layout.micro_batch, arch.hidden_size, arch.num_heads)
    kinds = {False: layer_activations(*args, ffn_hidden=arch.intermediate_size, **common)}
    if arch.is_moe:
        kinds[True] = layer_activations(
            *args,
            ffn_hidden=arch.moe_intermediate_size,
            experts_per_token=arch.experts_per_token,
            shared_experts=arch.num_shared_experts,
            router_weight_bytes=2 if arch.model_type == "qwen3_moe" else 4,  # HF profiles only
            **common,
        )
    return kinds


def _state(params: int, ranks: int, stage: int, conv: Convention, shard: int | None = None) -> dict[str, int]:
    """Bytes of each component for ``params`` parameters, sharded over ``ranks`` from ZeRO ``stage`` on.

    ``shard`` is the busiest rank's element count when it is not the even ``ceil(params / ranks)``.
    """
    shard = _ceil_div(params, ranks) if shard is None else shard
    sharded_from = {"master": 1, "momentum": 1, "variance": 1, "gradients": 2, "weights": 3}
    return {name: (shard if stage >= sharded_from[name] else params) * getattr(conv, name) for name in COMPONENTS}


def stage_memory(arch: Architecture, layout: Layout, stage: int = 0) -> LayoutMemory:
    """Memory of one GPU of pipeline stage ``stage``.

    Model states: the stage's dense parameters after tensor parallelism (matrices ``/tp``,
    norms, routers and position embeddings replicated; Megatron-LM's
    ``theoretical_memory_usage.py`` counts the most loaded shard the same way) and its
    routed experts ``/(ep × tp)`` (expert tensor parallelism equal to ``tp``). ZeRO stage
    ``z`` then shards the optimizer states (``z ≥ 1``), gradients (``z ≥ 2``) and weights
    (``z = 3``) over [`zero_ranks`][calc.memory.layout.Layout.zero_ranks] for the dense part and
    ``zero_ranks / ep`` for the experts (their data-parallel group is ``ep`` times smaller),
    each shard ``ceil(params / ranks)`` (ZeRO, Rajbhandari et al. 2020, Sec. 5). Offloaded
    components move to ``cpu_offload``: ZeRO-Offload keeps gradients and optimizer states
    on the CPU and only the 16-bit weights on the GPU (Ren et al. 2021, Sec. 4.1; DeepSpeed's
    estimator, reference numbers Sec. 8, likewise keeps ``2Ψ`` on the GPU).

    Activations: [`layer_activations`][calc.memory.activations.layer_activations] for each of the
    stage's layers (dense or MoE), combined by
    [`stage_activations`][calc.memory.activations.stage_activations] with the in-flight micro-batches.

    Args:
        arch: The model.
        layout: The layout.
        stage: The pipeline stage, from 0 to ``pp - 1``.

    Returns:
        The stage's [`LayoutMemory`][calc.memory.layout.LayoutMemory].

    Raises:
        CalcError: When the layout cannot run the model ([`check_layout`][calc.memory.layout.check_layout])
            or the stage is outside the pipeline.

    Examples:
        >>> from calc.models.presets import preset
        >>> m = stage_memory(preset("megatron-175b"), Layout(tp=8, pp=8, recompute="selective",
        ...                  sequence_parallel=True), stage=7)
        >>> m.in_flight, m.logits > 0
        (1, True)
    """
    check_layout(arch, layout)
    k = parse_positive_int(stage, "stage", minimum=0, maximum=layout.pp - 1)
    return _stage_memory(arch, layout, k, _layer_kinds(arch, layout), stage_plan(arch, layout))


def _stage_memory(
    arch: Architecture, layout: Layout, k: int, kinds: dict[bool, LayerActivations], plan: StagePlan
) -> LayoutMemory:
    """[`stage_memory`][calc.memory.layout.stage_memory] for a checked layout, its per-layer activations and stage
    plan given."""
    layers = list(plan.layers[k])
    dense, experts = plan.params[k]
    conv = CONVENTIONS[layout.convention]
    zstage = layout.effective_zero_stage
    ranks = layout.zero_ranks
    expert_ranks = max(1, ranks // layout.ep)
    dense_shard = expert_shard = None
    if layout.shard != "even" and zstage >= 1:
        degrees = (layout.tp, layout.pp, layout.ep, ranks, expert_ranks)
        dense_shard, expert_shard = _busiest_shards(arch, degrees, tuple(layers), k, layout.shard)
    gpu = _state(dense, ranks, zstage, conv, dense_shard)
    if experts:
        for name, value in _state(experts, expert_ranks, zstage, conv, expert_shard).items():
            gpu[name] += value
    offloaded = set()
    if layout.offload_optimizer:
        offloaded |= {"gradients", "master", "momentum", "variance"}
    if layout.offload_params:
        offloaded.add("weights")
    cpu = sum(gpu[name] for name in offloaded)
    for name in offloaded:
        gpu[name] = 0
    per_layer = [kinds[arch.is_moe_layer(i)].total for i in layers]
    acts = _stage_extras(
        sum(per_layer),
        layout.pp,
        layout.interleave,
        layout.num_microbatches,
        k,
        Fraction(layout.seq_len * layout.micro_batch, layout.cp),
        arch.hidden_size,
        arch.vocab_size,
        layout.tp,
        layout.sequence_parallel,
        layout.dropout,
        _chunk_bytes(per_layer, plan.virtual_layer_counts[k :: layout.pp]),
    )
    activations = acts.layers + acts.embedding_dropout
    logits = acts.final_norm_input + acts.output_input + acts.logits
    if layout.loss_kind != "fused" and acts.logits:
        tokens = -(-layout.seq_len // layout.cp) * layout.micro_batch
        saved = loss_bytes(
            layout.loss_kind, tokens, arch.vocab_size, layout.tp, layout.loss_chunk_tokens, hidden=arch.hidden_size
        )[0]
        logits += saved - acts.logits
    if layout.implementation != "megatron":
        activations, logits = _hf_extras(arch, layout, acts.layers, acts.in_flight, k)
    return LayoutMemory(
        stage=k,
        layers=len(layers),
        params=dense + experts,
        **gpu,
        activations=activations,
        logits=logits,
        cpu_offload=cpu,
        in_flight=acts.in_flight,
        num_microbatches=layout.num_microbatches or 0,
        saved_activations=activations + logits,
    )


@memoized()  # the planner sizes the same stage's shards for every recomputation and micro-batch
def _busiest_shards(
    arch: Architecture, degrees: tuple[int, int, int, int, int], layers: tuple[int, ...], k: int, mode: str
) -> tuple[int, int]:
    """The busiest rank's dense and routed-expert shards of stage ``k`` (``degrees``: tp, pp, ep, the ZeRO ranks and
    the expert ranks), [`busiest_shard`][calc.memory.model_state.busiest_shard] of its tensors."""
    t, pp, ep, ranks, expert_ranks = degrees
    dense, experts = _tensors_of(arch, t, pp, ep, layers, k)
    return busiest_shard(dense, ranks, mode), busiest_shard(experts, expert_ranks, mode)


def _chunk_bytes(per_layer: list[int], counts: tuple[int, ...]) -> tuple[int, ...]:
    """Bytes of each model chunk of the stage (its layers in chunk order, ``counts`` layers per chunk)."""
    starts = (0, *accumulate(counts))
    return tuple(sum(per_layer[a:b]) for a, b in pairwise(starts))


def _hf_extras(arch: Architecture, layout: Layout, layer_bytes: int, in_flight: int, k: int) -> tuple[int, int]:
    """(activations, logits) under a Hugging Face implementation: the layers plus the embedding side on
    stage 0 (per in-flight micro-batch), the final norm, output input and loss on the last stage
    (``calc.memory.activation_profiles.hf_model_terms``)."""
    terms = hf_model_terms(
        tokens=layout.seq_len * layout.micro_batch,
        seq_len=layout.seq_len,
        hidden=arch.hidden_size,
        head_dim=arch.head_dim,
        vocab_size=arch.vocab_size,
        norm=arch.norm,
        position=arch.position,
        dropout=layout.dropout,
    )
    first = terms["embedding"] * Fraction(in_flight, layout.interleave) if k == 0 else 0
    last = terms["final_norm"] + terms["output_input"] + terms["loss"] if k == layout.pp - 1 else 0
    return layer_bytes + math.ceil(first), math.ceil(last)


def layout_memory(arch: Architecture, layout: Layout) -> LayoutMemory:
    """Memory of the most loaded GPU: every pipeline stage evaluated, the largest ``total`` kept.

    Ties go to the earlier stage, so a pipeline whose stages weigh the same reports
    stage 0 (Korthikanti et al. 2022, Sec. 4.2.3: the first stage holds the embedding
    and ``p`` micro-batches in flight).

    Args:
        arch: The model.
        layout: The layout.

    Returns:
        The [`LayoutMemory`][calc.memory.layout.LayoutMemory] of the heaviest stage.

    Raises:
        CalcError: When the layout cannot run the model ([`check_layout`][calc.memory.layout.check_layout]).

    Examples:
        >>> from calc.models.presets import preset
        >>> from calc.units import format_bytes
        >>> m = layout_memory(preset("llama3-8b"), Layout(dp=8, zero_stage=1, seq_len=8192,
        ...                   flash_attention=True, dropout=False, recompute="selective"))
        >>> m.stage, format_bytes(m.model_state), format_bytes(m.activations + m.logits)
        (0, '44.2 GB', '40.8 GB')
    """
    best = None
    for m in layout_stages(arch, layout):
        if best is None or m.total > best.total:
            best = m
    assert best is not None  # pp >= 1
    return best


def layout_stages(arch: Architecture, layout: Layout) -> tuple[LayoutMemory, ...]:
    """Memory of one GPU of every pipeline stage, first to last.

    Args:
        arch: The model.
        layout: The layout.

    Returns:
        One [`LayoutMemory`][calc.memory.layout.LayoutMemory] per stage;
        [`layout_memory`][calc.memory.layout.layout_memory] is the one with the largest ``total``.

    Raises:
        CalcError: When the layout cannot run the model ([`check_layout`][calc.memory.layout.check_layout]).

    Examples:
        >>> from calc.models.presets import preset
        >>> stages = layout_stages(preset("llama3.1-405b"), Layout(tp=8, pp=16, seq_len=8192))
        >>> [m.layers for m in stages][:3], stages[-1].layers
        ([7, 8, 8], 7)
    """
    check_layout(arch, layout)
    kinds = _layer_kinds(arch, layout)
    plan = stage_plan(arch, layout)
    return tuple(_stage_memory(arch, layout, k, kinds, plan) for k in range(layout.pp))
