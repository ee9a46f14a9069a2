"""Communication per training step: every collective a parallel layout implies, its bytes and its time.

[`step_communication`][calc.parallel.comm.step_communication] lists every collective a
data/tensor/pipeline/context/expert-parallel layout implies, with its group, bytes per GPU
per step, and its α–β time where the group lives (`calc.parallel.network`: placement in
closed form, latency per hop, bandwidth per link level, hierarchical collectives across nodes).
The building blocks live in their own modules and are re-exported here:
`calc.parallel.collectives` (nccl-tests' bus-bandwidth factors and ring times),
`calc.parallel.interconnects` (link presets) and `calc.parallel.network`.

**What a step sends.** Notation: ``b`` micro-batch, ``s`` sequence, ``h`` hidden, ``m`` micro-batches per
step, ``t`` = tp, ``e`` bytes per element, ``T = b·s/cp`` tokens per GPU per
micro-batch. Each term's per-call bytes follow
[`collective_bytes_sent`][calc.parallel.comm.collective_bytes_sent] (ring algorithms).

* **Data parallel** (group ``dp-cp``, Megatron reduces gradients over DP and CP
  together). Per GPU ``Ψ_g = ceil(dense stage params / t)`` parameters.
  ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054) Sec. 7: plain DP all-reduces
  the gradients, ``2Ψ`` per step (7.1); ZeRO-1/2 reduce-scatter gradients and
  all-gather updated parameters, also ``2Ψ`` (7.2.1); ZeRO-3 all-gathers the
  parameters in forward and again in backward and reduce-scatters gradients,
  ``3Ψ = 1.5×`` DP (7.2.2). With ``m > 1`` micro-batches, stages 0 and 1 keep full
  gradients and reduce once per step, stage 2 keeps only its gradient shard so it
  reduce-scatters every micro-batch (Sec. 5.2), and stage 3 also gathers the
  parameters for every micro-batch's forward and backward (Sec. 5.3).
  Routed-expert parameters (``expert_params``) are sharded over ``tp × ep`` and
  reduced the same way over the ``dp·cp/ep`` expert-data-parallel ranks.
* **Tensor parallel** (``tp``). Narayanan et al. 2021 (arXiv:2104.04473) Sec. 3.2:
  two all-reduces of ``b·s·h`` in forward and two in backward per layer and
  micro-batch, ``8bsh(t-1)/t`` elements per GPU. Full recomputation re-runs the
  two forward ones (ZeRO Sec. 8 counts 6 all-reduces, ``12·s·h``, per block).
  With sequence parallelism each all-reduce becomes an all-gather plus a
  reduce-scatter of the same total volume (Korthikanti et al. 2022, arXiv:2205.05198,
  Sec. 4.2.2).
* **Pipeline parallel** (``pp``, point-to-point). Narayanan Sec. 3.2: ``b·s·h`` per
  consecutive-stage pair and micro-batch, activations forward and gradients back;
  ``b·s·h/t`` with the scatter/gather optimization (Sec. 4.1). The interleaved
  schedule sends ``v`` times as much (Sec. 2.2.2). Counted on the busiest rank.
* **Context parallel** (``cp``). Megatron-LM ``docs/source/api-guide/context_parallel.rst``:
  K and V are all-gathered in forward and again in backward, and their gradients
  reduce-scattered, per layer (run as a ring of point-to-point sends, same volume).
  ``kv_dims`` is K+V elements per token per layer (default ``2h``; ``2 × kv_heads ×
  head_dim`` with GQA), split over ``t`` ranks by head.
* **Expert parallel** (``ep``). Each MoE layer all-to-alls the routed tokens
  (``tokens × top_k × h``) to the experts and back in forward, and again in backward:
  4 all-to-alls per layer and micro-batch; uniform routing, no dropped or padded tokens.
  Tokens per GPU default to ``T/t`` with sequence parallelism, else ``T``.

Embedding/LM-head and layer-norm communication, and anything a framework overlaps,
are left out; ``total_time_s`` assumes nothing overlaps.

Placement: ranks are ordered TP innermost, then CP, EP, DP, PP outermost
([`GROUP_ORDER`][calc.parallel.comm.GROUP_ORDER]), and node ``i`` holds ranks ``i·g`` to
``(i+1)·g - 1`` for ``g = gpus_per_node``. A group whose members are ``stride`` ranks
apart (1 for TP; ``tp`` for CP, DP and EP; ``tp·ep`` for expert DP; ``tp·cp·dp`` for PP) is placed
in closed form by [`group_placement`][calc.parallel.comm.group_placement] and priced call by call by
[`collective_cost`][calc.parallel.comm.collective_cost]: a ring inside a node, the hierarchical
algorithm across nodes with each member on its own share of the node's NICs, plus NCCL's
latency per call and per hop.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from calc.parallel.collectives import (
    COLLECTIVES,
    algorithm_bandwidth,
    bus_factor,
    collective_bytes_sent,
    collective_time_s,
)
from calc.parallel.comm_terms import _cp_terms, _dp_terms, _ep_terms, _parse_step, _pp_terms, _Terms, _tp_terms
from calc.parallel.interconnects import INTERCONNECTS, SCALE_UP_FOR_GPU, Interconnect, interconnect
from calc.parallel.network import (
    ACHIEVED_SHARE,
    LATENCY,
    CollectiveCost,
    Network,
    Placement,
    collective_cost,
    group_bus_bandwidth,
    group_placement,
)

__all__ = [
    "ACHIEVED_SHARE",
    "COLLECTIVES",
    "GROUP_ORDER",
    "INTERCONNECTS",
    "LATENCY",
    "SCALE_UP_FOR_GPU",
    "CollectiveCost",
    "CommTerm",
    "Interconnect",
    "Network",
    "Placement",
    "StepComm",
    "algorithm_bandwidth",
    "bus_factor",
    "collective_bytes_sent",
    "collective_cost",
    "collective_time_s",
    "group_bus_bandwidth",
    "group_placement",
    "interconnect",
    "step_communication",
]

GROUP_ORDER: tuple[str, ...] = ("tp", "cp", "ep", "dp", "pp")
"""Rank order assumed when placing groups on nodes, innermost first.

This is Megatron-LM's default ``order="tp-cp-ep-dp-pp"``
(``megatron/core/parallel_state.py``, ``initialize_model_parallel``): TP ranks
are adjacent, then CP, then DP, and pipeline stages are outermost. Expert layers
use a second rank generator with the same order and ``cp = 1``: an expert
(EP) group spans ``tp × ep`` adjacent ranks and its data-parallel group is the
remaining ``dp × cp / ep`` ranks. The gradient all-reduce of the dense
weights runs over DP and CP together (Megatron "piggybacks" CP on the DP group,
same docstring).
"""


# --------------------------------------------------------------------------- a layout's step


@dataclass(frozen=True)
class CommTerm:
    """One kind of communication in a training step, as seen by one GPU.

    Attributes:
        name: Stable identifier (``"tp-all-reduce"``, ``"dp-grad-reduce-scatter"``...).
        label: Human description.
        group: The process group it runs on: ``tp``, ``cp``, ``dp-cp`` (dense gradients),
            ``ep``, ``expert-dp`` or ``pp``.
        collective: One of [`COLLECTIVES`][calc.parallel.comm.COLLECTIVES].
        group_size: Ranks in the group (``2`` for point-to-point).
        message_bytes: ``S`` of one call (the full, gathered size for all-gather/reduce-scatter).
        calls: Calls per optimizer step on the busiest GPU.
        bytes_sent: Bytes this GPU sends per step: ``calls × collective_bytes_sent(S)``.
        intra_node: ``True`` when the group fits in one node.
        bus_bytes_per_s: Effective bus bandwidth of one call, bandwidth part only, bytes/s (rounded down).
        time_s: Seconds per step if nothing overlaps: ``calls ×`` the α–β time of one call
            ([`collective_cost`][calc.parallel.comm.collective_cost]).
        source: Where the volume comes from.
        latency_s: Of ``time_s``, the latency (α) part.
    """

    name: str
    label: str
    group: str
    collective: str
    group_size: int
    message_bytes: int
    calls: int
    bytes_sent: int
    intra_node: bool
    bus_bytes_per_s: int
    time_s: float
    source: str
    latency_s: float = 0.0

    def as_dict(self) -> dict[str, object]:
        """The term as plain data.

        Examples:
            >>> step_communication(params="1B", layers=4, hidden=1024, seq=2048, dp=8).terms[0].as_dict()["group"]
            'dp-cp'
        """
        return asdict(self)


@dataclass(frozen=True)
class StepComm:
    """All communication of one optimizer step, per GPU.

    Attributes:
        terms: One [`CommTerm`][calc.parallel.comm.CommTerm] per kind of communication (groups of size 1 are left out).
        gpus: ``tp × cp × dp × pp``.
        gpus_per_node: GPUs per node used for placement.
    """

    terms: tuple[CommTerm, ...]
    gpus: int
    gpus_per_node: int

    @property
    def total_bytes(self) -> int:
        """Bytes one GPU sends per step, all terms summed."""
        return sum(t.bytes_sent for t in self.terms)

    @property
    def total_time_s(self) -> float:
        """Seconds of communication per step with no overlap at all (an upper bound on exposed time)."""
        return math.fsum(t.time_s for t in self.terms)  # the same digits under 3.11's and 3.12's sum()

    def by_group(self) -> dict[str, int]:
        """Bytes sent per step, summed per process group.

        Examples:
            >>> s = step_communication(params="1B", layers=4, hidden=1024, seq=2048, dp=4, tp=2)
            >>> sorted(s.by_group())
            ['dp-cp', 'tp']
        """
        out: dict[str, int] = {}
        for t in self.terms:
            out[t.group] = out.get(t.group, 0) + t.bytes_sent
        return out

    def as_dict(self) -> dict[str, object]:
        """Terms and totals as plain data (for JSON and the calculators).

        Examples:
            >>> step_communication(params="1B", layers=4, hidden=1024, seq=2048, dp=8).as_dict()["total_bytes"]
            3500000000
        """
        return {
            "terms": [t.as_dict() for t in self.terms],
            "gpus": self.gpus,
            "gpus_per_node": self.gpus_per_node,
            "total_bytes": self.total_bytes,
            "total_time_s": self.total_time_s,
        }


def step_communication(
    *, params: float | str, layers: int, hidden: int, seq: int, micro_batch: int = 1, num_microbatches: int = 1,
    dp: int = 1, tp: int = 1, pp: int = 1, cp: int = 1, ep: int = 1, zero_stage: int = 0,
    sequence_parallel: bool = False, virtual_stages: int = 1, recompute: bool = False, pp_scatter_gather: bool = True,
    stage_params: int | None = None, expert_params: int = 0, moe_layers: int | None = None, top_k: int = 1,
    moe_tokens: int | None = None, kv_dims: int | None = None, bytes_per_element: int = 2,
    grad_bytes_per_element: int | None = None, gpus_per_node: int = 8, intra: str | Interconnect = "nvlink4",
    inter: str | Interconnect = "ib-ndr", intra_efficiency: float | None = None, inter_efficiency: float | None = None,
    nics_per_node: int | None = None, latency: bool = True, reshard_after_forward: bool = True,
    pod_gpus: int | None = None, oversubscription: float = 1.0,
) -> StepComm:  # fmt: skip
    """Bytes each GPU sends per optimizer step, for every collective a layout implies.

    The terms per parallelism (their volumes and sources) and the placement on nodes are described in
    the module docstring; notation ``b`` micro-batch, ``s`` sequence, ``h`` hidden, ``m`` micro-batches.

    Args:
        params: Total parameters Ψ.
        layers: Transformer layers (all stages together).
        hidden: Hidden size ``h``.
        seq: Sequence length ``s``.
        micro_batch: Micro-batch size ``b`` (sequences).
        num_microbatches: Micro-batches per optimizer step per pipeline, ``m``.
        dp: Data-parallel degree.
        tp: Tensor-parallel degree.
        pp: Pipeline-parallel degree.
        cp: Context-parallel degree.
        ep: Expert-parallel degree (must divide ``dp × cp``).
        zero_stage: 0, 1, 2 or 3.
        sequence_parallel: Megatron sequence parallelism with TP.
        virtual_stages: Model chunks per pipeline rank (``v``; interleaved schedule when > 1).
        recompute: Full activation recomputation (forward collectives run twice).
        pp_scatter_gather: Send ``1/t`` of each stage boundary's activation per TP rank.
        stage_params: Parameters held by the busiest pipeline stage (default ``ceil(Ψ/pp)``).
        expert_params: Of Ψ, routed-expert parameters (model total; the stage holds ``ceil(·/pp)``).
        moe_layers: MoE layers in the model (default: ``layers`` when ``ep > 1``, else 0).
        top_k: Experts per token.
        moe_tokens: Tokens each GPU routes per micro-batch (overrides the default above).
        kv_dims: K+V elements per token per layer, for CP (default ``2 × hidden``).
        bytes_per_element: Bytes of each activation/parameter element sent (2 for bf16).
        grad_bytes_per_element: Bytes per gradient element reduced (default ``bytes_per_element``;
            4 when gradients are reduced in fp32).
        gpus_per_node: GPUs per scale-up node.
        intra: Scale-up link preset (see [`INTERCONNECTS`][calc.parallel.comm.INTERCONNECTS]).
        inter: Scale-out link preset (per GPU).
        intra_efficiency: Achieved fraction of the scale-up peak (default
            [`ACHIEVED_SHARE`][calc.parallel.comm.ACHIEVED_SHARE]).
        inter_efficiency: Achieved fraction of the network peak (default likewise).
        nics_per_node: NICs per node (default one per GPU).
        latency: Add NCCL's per-call and per-hop latency ([`LATENCY`][calc.parallel.comm.LATENCY]).
        reshard_after_forward: ZeRO-3 only: ``False`` keeps the gathered parameters from forward to backward
            (FSDP's ``reshard_after_forward=False``, as Llama 3 trains), so each micro-batch gathers once, not twice.
        pod_gpus: GPUs per non-blocking pod, ``oversubscription`` the spine's ratio above it
            ([`Network`][calc.parallel.comm.Network]).

    Returns:
        A [`StepComm`][calc.parallel.comm.StepComm].

    Raises:
        CalcError: On bad numbers, unknown presets, or degrees that do not divide.

    Examples:
        >>> s = step_communication(params="7B", layers=32, hidden=4096, seq=4096, dp=64)
        >>> [(t.name, t.bytes_sent) for t in s.terms]
        [('dp-grad-all-reduce', 27562500000)]
        >>> s.terms[0].intra_node, round(s.terms[0].time_s, 3)
        (False, 0.079)
        >>> z3 = step_communication(params="7B", layers=32, hidden=4096, seq=4096, dp=64, zero_stage=3)
        >>> z3.total_bytes / s.total_bytes
        1.5
    """
    x = _parse_step(locals())  # at this point locals() is exactly the keyword arguments, by name
    terms = _Terms(x, CommTerm)
    for add_terms in (_dp_terms, _tp_terms, _cp_terms, _ep_terms, _pp_terms):
        add_terms(x, terms)
    return StepComm(terms=tuple(terms.terms), gpus=x.tp * x.cp * x.dp * x.pp, gpus_per_node=x.gpn)
