"""The planner's memory pruning: lower bounds on a GPU's model state and peak that skip the states that cannot
fit before their full peak is computed, and the interleaved schedule's extra in-flight activations
(for [`calc.timing.planner`][calc.timing.planner])."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from calc.errors import CalcError
from calc.memo import memoized
from calc.memory.layout import Layout, stage_memory
from calc.memory.model_state import CONVENTIONS
from calc.memory.overheads import peak_memory
from calc.memory.stage_plan import layer_params
from calc.models.architecture import Architecture
from calc.timing.steptime import _elementwise_bytes

if TYPE_CHECKING:  # only for the annotations: plan_search imports this module
    from calc.timing.plan_search import _Candidate

__all__: list[str] = []


def _state_floor(arch: Architecture, cand: _Candidate, z: int, convention: str, dist: bool) -> int:
    """A lower bound on a GPU's model-state bytes: the parameters spread evenly over ``tp × pp`` (experts also
    over ``ep``), sharded from ZeRO stage ``z`` on as ``calc.memory.layout`` does, no activations."""
    conv = CONVENTIONS[convention]
    experts = arch.num_moe_layers * arch.expert_params_per_layer
    dense = (arch.param_count - experts) // (cand.tp * cand.pp)
    routed = experts // (cand.tp * cand.pp * cand.ep)
    stage = max(z, 1) if dist else z
    total = 0
    for params, ranks in ((dense, cand.dp * cand.cp), (routed, max(1, cand.dp * cand.cp // cand.ep))):
        for name, first in (("master", 1), ("momentum", 1), ("variance", 1), ("gradients", 2), ("weights", 3)):
            total += (params // ranks if stage >= first else params) * getattr(conv, name)
    return total


def _memory_floor(
    arch: Architecture, cand: _Candidate, z: int, r: str, s: int, batch: int, convention: str, dist: bool
) -> int:
    """A lower bound on a GPU's peak: ``_state_floor`` plus half of the stored activations of its in-flight
    micro-batches (Korthikanti et al. 2022 Table 2 per layer; ``2sbh/t`` per layer under full recomputation, and
    under torchtitan's per-op policy, which keeps the same layer input and more)."""
    floor = _state_floor(arch, cand, z, convention, dist)
    tp_sp = cand.tp > 1
    if r in ("full", "op"):
        per_layer = 2 * s * cand.mb * arch.hidden_size // (cand.tp if tp_sp else 1) // cand.cp
    else:
        per_layer = _elementwise_bytes(s, cand.mb, arch.hidden_size, arch.num_heads, cand.tp, cand.cp, tp_sp, True)
    in_flight = min(cand.pp, batch // (cand.dp * cand.mb))
    return floor + per_layer * (arch.num_layers // cand.pp) * in_flight // 2


def _unsharded_floor(arch: Architecture, cand: _Candidate) -> int:
    """A lower bound on what FSDP without resharding after forward holds beyond the sharded state through the
    backward: 2 B of bf16 weights and 4 B of fp32 gradients per parameter of the stage, unsharded
    (``calc.memory.overhead_items``, ``fsdp_unsharded_params`` and ``fsdp_unsharded_grads``), counted for the
    lightest stage's layers at the lightest layer kind (no embedding or output layer).

    Examples:
        >>> from types import SimpleNamespace
        >>> from calc.models.presets import preset
        >>> cand = SimpleNamespace(tp=8, pp=16, ep=1, counts=(7,) + (8,) * 14 + (7,))
        >>> round(_unsharded_floor(preset("llama3.1-405b"), cand) / 2**30, 1)  # 7 layers of 405B over TP 8
        15.6
    """
    return 6 * _lightest_layer(arch, cand.tp, cand.ep) * min(cand.counts, default=0)


@memoized(maxsize=64)  # asked for every ZeRO-3 state a plan sizes; a plan has a few (tp, ep) pairs
def _lightest_layer(arch: Architecture, tp: int, ep: int) -> int:
    """Parameters one GPU holds of the lightest transformer layer kind (dense or MoE) at ``tp`` and ``ep``."""
    kinds = {arch.is_moe_layer(i): i for i in range(arch.num_layers)}  # one layer of each kind present
    return min(layer_params(arch, i, tp=tp, ep=ep) for i in kinds.values())


def _interleaved_extra(cand: _Candidate, activations: int) -> int:
    """Activation bytes the interleaved schedule holds beyond plain 1F1B on the first stage: a factor
    ``1 + (p-1)/(p·v)`` (Korthikanti et al. 2022, arXiv:2205.05198, Sec. 4.2.3)."""
    if cand.v == 1:
        return 0
    return activations * (cand.pp - 1) // (cand.pp * cand.v)


def _memory(arch: Architecture, mem: Layout, capacity: int) -> tuple[int, Any]:
    """Stage 0's tensors and the full peak of ``mem`` (the peak is skipped when the tensors already overflow;
    an error takes its place when the memory rules refuse the layout)."""
    try:
        tensors = stage_memory(arch, mem, 0).total
    except CalcError:
        tensors = 0
    if tensors > capacity:
        return tensors, None
    try:
        return tensors, peak_memory(arch, mem)
    except CalcError as err:
        return tensors, err
