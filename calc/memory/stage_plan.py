"""The stage plan: which layers, how many parameters and how many in-flight micro-batches each pipeline stage has.

[`StagePlan`][calc.memory.layout.StagePlan] is computed once per (model, layout) by
[`stage_plan`][calc.memory.layout.stage_plan] and read by the per-GPU memory
([`layout_stages`][calc.memory.layout.layout_stages]), the overheads and the step time, instead of each of
them splitting the layers again. The layer counts come from
[`Layout.stage_layer_counts`][calc.memory.layout.Layout.stage_layer_counts]; the layer indices from
[`stage_layers`][calc.memory.layout.stage_layers] (interleaved chunks, Narayanan et al. 2021,
arXiv:2104.04473, Sec. 2.2.2); the parameters after tensor and expert parallelism as Megatron-LM's
``theoretical_memory_usage.py`` counts the most loaded shard; the in-flight micro-batches from
[`in_flight_chunks`][calc.memory.activations.in_flight_chunks] (1F1B, Sec. 2.2.1).

The public names are re-exported by [`calc.memory.layout`][calc.memory.layout].
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import accumulate

from calc.memo import memoized
from calc.memory.activations import in_flight_chunks
from calc.memory.layout_spec import Layout
from calc.memory.pipeline_split import split_layers
from calc.models.architecture import Architecture

__all__ = ["StagePlan", "layer_params", "stage_layers", "stage_plan"]


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class StagePlan:
    """How a model's layers and parameters are placed on the pipeline stages of a layout.

    Attributes:
        layer_counts: Transformer layers on each stage, first to last.
        layers: The indices of each stage's layers (under interleaving, its chunks' layers in order).
        params: ``(dense, routed experts)`` parameters one GPU of each stage holds after tensor and
            expert parallelism (before ZeRO sharding).
        in_flight: Micro-batch chunks each stage holds at its peak under 1F1B.
        virtual_layer_counts: Layers on each virtual stage (``pp × interleave``; equal to ``layer_counts``
            when not interleaved).
        placement: How the layers were placed, in words
            ([`Layout.placement`][calc.memory.layout.Layout.placement]).

    Examples:
        >>> from calc.models.presets import preset
        >>> plan = stage_plan(preset("llama3.1-405b"), Layout(tp=8, pp=16))
        >>> plan.layer_counts[:3], plan.layer_counts[-1], plan.in_flight[:2]
        ((7, 8, 8), 7, (16, 15))
    """

    layer_counts: tuple[int, ...]
    layers: tuple[tuple[int, ...], ...]
    params: tuple[tuple[int, int], ...]
    in_flight: tuple[int, ...]
    virtual_layer_counts: tuple[int, ...] = ()
    placement: str = ""


@lru_cache(maxsize=256)
def stage_plan(arch: Architecture, layout: Layout) -> StagePlan:
    """The [`StagePlan`][calc.memory.layout.StagePlan] of ``layout`` for ``arch`` (a layout already checked).

    Both are frozen values, so the plan is computed once per pair and then read from a small cache by every
    stage's memory, overheads and step time.

    Args:
        arch: The model.
        layout: The layout, accepted by [`check_layout`][calc.memory.layout.check_layout].

    Returns:
        Layers, parameters and in-flight micro-batches per stage.

    Examples:
        >>> from calc.models.presets import preset
        >>> stage_plan(preset("gpt2"), Layout(pp=4)).layer_counts
        (3, 3, 3, 3)
        >>> plan = stage_plan(preset("llama3.1-405b"), Layout(tp=8, pp=8, interleave=2))  # torchtitan's run
        >>> plan.layer_counts, plan.placement
        ((15, 16, 16, 16, 16, 16, 16, 15), 'uneven (torchtitan weighted): 7 + 8×14 + 7')
    """
    virtual, placement = layout._split(arch.num_layers)
    p = layout.pp
    counts = tuple(sum(virtual[k::p]) for k in range(p))
    starts = (0, *accumulate(virtual))
    layers = tuple(tuple(starts[i] + j for i in range(k, len(virtual), p) for j in range(virtual[i])) for k in range(p))
    params = tuple(_stage_params(arch, layout, list(ks), k) for k, ks in enumerate(layers))
    in_flight = tuple(
        in_flight_chunks(layout.pp, interleave=layout.interleave, num_microbatches=layout.num_microbatches, stage=k)
        for k in range(layout.pp)
    )
    return StagePlan(counts, layers, params, in_flight, virtual, placement)


def stage_layers(
    num_layers: int, pp: int, interleave: int, stage: int, counts: tuple[int, ...] | None = None
) -> list[int]:
    """Indices of the transformer layers pipeline stage ``stage`` holds.

    The layers are cut into ``pp × interleave`` contiguous virtual stages of ``counts`` layers (one count per
    virtual stage; ``pp`` counts when not interleaved; ``None``: [`split_layers`][calc.memory.layout.split_layers]'s
    default) and stage ``k`` holds virtual stages ``k, k + p, k + 2p...`` (Narayanan et al. 2021, Sec. 2.2.2).

    Examples:
        >>> stage_layers(8, 2, 1, 0), stage_layers(8, 2, 2, 0), stage_layers(8, 2, 2, 1)
        ([0, 1, 2, 3], [0, 1, 4, 5], [2, 3, 6, 7])
        >>> stage_layers(10, 3, 1, 1, counts=(3, 4, 3))
        [3, 4, 5, 6]
        >>> stage_layers(10, 2, 2, 0, counts=(2, 3, 3, 2))  # uneven virtual stages
        [0, 1, 5, 6, 7]
    """
    if counts is None:
        counts = split_layers(num_layers, pp * interleave)[0]
    starts = (0, *accumulate(counts))
    return [starts[i] + j for i in range(stage, len(counts), pp) for j in range(counts[i])]


def _stage_params(arch: Architecture, layout: Layout, layers: list[int], stage: int) -> tuple[int, int]:
    """(dense params, routed-expert params) one GPU of ``stage`` holds, after TP and EP."""
    return _params_of(arch, layout.tp, layout.pp, layout.ep, tuple(layers), stage)


def layer_params(arch: Architecture, layer: int, *, tp: int = 1, ep: int = 1) -> int:
    """Parameters one GPU holds of transformer layer ``layer`` (no embedding or output layer): its attention and
    MLP split over ``tp``, routed experts over ``ep × tp``, norms and router replicated.

    Examples:
        >>> from calc.models.presets import preset
        >>> arch = preset("llama3-8b")
        >>> layer_params(arch, 0) == 8 * layer_params(arch, 0, tp=8) - 7 * 2 * arch.hidden_size
        True
    """
    return sum(_params_of(arch, tp, 1, ep, (layer,), -1))


@memoized()  # the planner sizes the same stage for every ZeRO stage, recomputation and micro-batch
def _params_of(arch: Architecture, t: int, p: int, ep: int, layers: tuple[int, ...], stage: int) -> tuple[int, int]:
    """[`_stage_params`][] of the degrees it reads."""
    split = replicated = experts = 0
    for i in layers:
        replicated += arch.norm_params_per_layer
        split += arch.attention_params_per_layer
        if arch.is_moe_layer(i):
            replicated += arch.router_params_per_layer
            split += arch.shared_expert_params_per_layer
            experts += arch.expert_params_per_layer
        else:
            split += arch.dense_mlp_params
    if stage == 0:
        tokens = arch.vocab_size * arch.hidden_size
        split += tokens  # vocabulary-parallel embedding
        replicated += arch.embedding_params - tokens  # learned positions are not split
    if stage == p - 1:
        replicated += arch.final_norm_params
        if arch.tied_embeddings:
            if p > 1:  # the last stage keeps its own copy of the tied matrix for the output layer
                split += arch.vocab_size * arch.hidden_size
        else:
            split += arch.lm_head_params
    return _ceil_div(split, t) + replicated, _ceil_div(experts, ep * t)


def _stage_tensors(arch: Architecture, layout: Layout, layers: list[int], stage: int) -> tuple[list, list]:
    """``(dim0, numel)`` of each tensor one GPU of ``stage`` holds after TP and EP: (dense, routed experts).

    Hugging Face module shapes: ``q/k/v_proj`` ``(heads × head_dim / tp, hidden)``, ``o_proj`` ``(hidden,
    heads × v_head_dim / tp)``, gate/up ``(ffn / tp, hidden)``, down ``(hidden, ffn / tp)``, one set per
    expert, the router ``(experts, hidden)``, the embedding and head ``(vocab / tp, hidden)``, learned
    positions ``(positions, hidden)``; norms and biases as their own 1-D tensors (GPT-2's ``Conv1D`` stores
    its matrices transposed, which this does not distinguish). Latent attention is one
    ``(hidden, ·)`` matrix per layer. What is left over (rounding under ``tp``) is one more 1-D tensor, so
    the totals equal [`stage_memory`][calc.memory.layout.stage_memory]'s parameter counts exactly; if the shapes
    overshoot them (an architecture this sketch does not know), the vectors and then the matrices give way
    to one flat tensor.
    """
    dense, experts = _tensors_of(arch, layout.tp, layout.pp, layout.ep, tuple(layers), stage)
    return list(dense), list(experts)


@memoized(maxsize=64)  # the planner shards a stage once for its every recomputation and ZeRO stage (an MoE stage
# lists tens of thousands of tensors, so few are kept)
def _tensors_of(
    arch: Architecture, t: int, pp: int, ep: int, layers: tuple[int, ...], stage: int
) -> tuple[tuple[tuple[int, int], ...], tuple[tuple[int, int], ...]]:
    """[`_stage_tensors`][] of the degrees it reads, as tuples."""
    h = arch.hidden_size
    mats: tuple[list[tuple[int, int]], list[tuple[int, int]]] = ([], [])
    vecs: tuple[list[tuple[int, int]], list[tuple[int, int]]] = ([], [])

    def norm(dim: int, n: int = 1) -> None:
        vecs[0].extend([(dim, dim)] * (n * (2 if arch.norm == "layernorm" else 1)))

    def mlp(width: int, part: int, bias: bool) -> None:
        w = width // t
        mats[part].extend([(w, w * h)] * (1 if arch.mlp == "gelu" else 2) + [(h, h * w)])
        if bias:
            vecs[part].extend([(w, w)] * (1 if arch.mlp == "gelu" else 2) + [(h, h)])

    for i in layers:
        norm(h, 4 if arch.sandwich_norm else 2)
        if arch.qk_norm:
            norm(arch.head_dim, 2)
        if arch.uses_mla:
            mats[0].append((h, h * (arch.attention_params_per_layer // t // h)))
        else:
            q, kv = arch.num_heads * arch.head_dim // t, arch.num_kv_heads * arch.head_dim // t
            v, o = arch.num_kv_heads * arch.v_head_dim // t, arch.num_heads * arch.v_head_dim // t
            mats[0].extend([(q, q * h), (kv, kv * h), (v, v * h), (h, h * o)])
            if arch.qkv_bias:
                vecs[0].extend([(q, q), (kv, kv), (v, v)])
            if arch.attn_out_bias:
                vecs[0].append((h // t, h // t))
        if arch.is_moe_layer(i):
            mats[0].append((arch.num_experts, arch.num_experts * h))
            for _ in range(arch.num_shared_experts):
                mlp(arch.moe_intermediate_size, 0, arch.expert_bias)
            for _ in range(arch.num_experts // ep):
                mlp(arch.moe_intermediate_size, 1, arch.expert_bias)
        else:
            mlp(arch.intermediate_size, 0, arch.mlp_bias)
    rows = arch.vocab_size // t
    if stage == 0:
        mats[0].append((rows, rows * h))  # the embedding
        if arch.position == "learned":
            mats[0].append((arch.max_position_embeddings, arch.max_position_embeddings * h))
    if stage == pp - 1:
        norm(h)  # the final norm
        if pp > 1 or not arch.tied_embeddings:
            mats[0].append((rows, rows * h))  # the output layer (its own copy when tied across stages)
    out = []
    for want, m, vec in zip(_params_of(arch, t, pp, ep, layers, stage), mats, vecs, strict=True):
        for got in (m + vec, list(m), []):
            rest = want - sum(n for _, n in got)
            if rest >= 0:
                out.append(tuple(got + ([(rest, rest)] if rest else [])))
                break
    return out[0], out[1]
