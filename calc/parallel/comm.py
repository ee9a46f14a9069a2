"""Communication per training step: every collective a parallel layout implies, its bytes and its time.

[`step_communication`][calc.parallel.comm.step_communication] lists every collective a
data/tensor/pipeline/context/expert-parallel layout implies, with its group, bytes per GPU
per step, and its α–β time where the group lives (`calc.parallel.network`: placement in
closed form, latency per hop, bandwidth per link level, hierarchical collectives across nodes).
The building blocks live in their own modules and are re-exported here:
`calc.parallel.collectives` (nccl-tests' bus-bandwidth factors and ring times),
`calc.parallel.interconnects` (link presets) and `calc.parallel.network`.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

from calc.errors import CalcError
from calc.parallel.collectives import (
    COLLECTIVES,
    algorithm_bandwidth,
    bus_factor,
    collective_bytes_sent,
    collective_time_s,
)
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
from calc.units import parse_count, parse_positive_int

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
        return sum(t.time_s for t in self.terms)

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


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _pp_sends_per_microbatch(pp: int, v: int) -> int:
    """Sends per microbatch by the busiest pipeline rank.

    With ``pp × v`` model chunks, chunk ``g`` lives on rank ``g mod pp``; each chunk
    but the last sends its output forward, each but the first sends a gradient back.
    A middle rank therefore sends ``2v``; with two ranks each sends ``2v - 1``.
    """
    if pp == 1:
        return 0
    return 2 * v if pp >= 3 else 2 * v - 1


def _flag(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise CalcError(field, "must be true or false", value)
    return value


def step_communication(
    *,
    params: float | str,
    layers: int,
    hidden: int,
    seq: int,
    micro_batch: int = 1,
    num_microbatches: int = 1,
    dp: int = 1,
    tp: int = 1,
    pp: int = 1,
    cp: int = 1,
    ep: int = 1,
    zero_stage: int = 0,
    sequence_parallel: bool = False,
    virtual_stages: int = 1,
    recompute: bool = False,
    pp_scatter_gather: bool = True,
    stage_params: int | None = None,
    expert_params: int = 0,
    moe_layers: int | None = None,
    top_k: int = 1,
    moe_tokens: int | None = None,
    kv_dims: int | None = None,
    bytes_per_element: int = 2,
    grad_bytes_per_element: int | None = None,
    gpus_per_node: int = 8,
    intra: str | Interconnect = "nvlink4",
    inter: str | Interconnect = "ib-ndr",
    intra_efficiency: float | None = None,
    inter_efficiency: float | None = None,
    nics_per_node: int | None = None,
    latency: bool = True,
) -> StepComm:
    """Bytes each GPU sends per optimizer step, for every collective a layout implies.

    Notation: ``b`` micro-batch, ``s`` sequence, ``h`` hidden, ``m`` micro-batches per
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

    Returns:
        A [`StepComm`][calc.parallel.comm.StepComm].

    Raises:
        CalcError: On bad numbers, unknown presets, or degrees that do not divide.

    Examples:
        >>> s = step_communication(params="7B", layers=32, hidden=4096, seq=4096, dp=64)
        >>> [(t.name, t.bytes_sent) for t in s.terms]
        [('dp-grad-all-reduce', 27562500000)]
        >>> s.terms[0].intra_node, round(s.terms[0].time_s, 3)
        (False, 0.134)
        >>> z3 = step_communication(params="7B", layers=32, hidden=4096, seq=4096, dp=64, zero_stage=3)
        >>> z3.total_bytes / s.total_bytes
        1.5
    """
    x = _parse_step(locals())  # at this point locals() is exactly the keyword arguments, by name
    terms = _Terms(x)
    for add_terms in (_dp_terms, _tp_terms, _cp_terms, _ep_terms, _pp_terms):
        add_terms(x, terms)
    return StepComm(terms=tuple(terms.terms), gpus=x.tp * x.cp * x.dp * x.pp, gpus_per_node=x.gpn)


@dataclass(frozen=True)
class _Step:
    """The inputs of [`step_communication`][calc.parallel.comm.step_communication], parsed and checked, with the
    per-stage quantities every group's terms are built from (notation as in its docstring)."""

    n_params: int
    n_layers: int
    h: int
    s: int
    b: int
    m: int
    dp: int
    tp: int
    pp: int
    cp: int
    ep: int
    stage: int  # ZeRO stage
    sp: bool
    v: int
    recompute: bool
    scatter: bool
    k: int  # top-k
    e: int  # bytes per element
    ge: int  # bytes per gradient element
    gpn: int
    net: Network
    st_params: int
    x_params: int
    n_moe: int
    kvd: int
    moe_tokens: int | None

    @property
    def stage_expert(self) -> int:
        """Routed-expert parameters on the busiest stage."""
        return min(_ceil_div(self.x_params, self.pp), self.st_params)

    @property
    def stage_dense(self) -> int:
        """Every other parameter on the busiest stage."""
        return self.st_params - self.stage_expert

    @property
    def layers_ps(self) -> int:
        """Layers per pipeline stage (the busiest)."""
        return _ceil_div(self.n_layers, self.pp)

    @property
    def moe_ps(self) -> int:
        """MoE layers per pipeline stage (the busiest)."""
        return _ceil_div(self.n_moe, self.pp)

    @property
    def tokens(self) -> int:
        """``T = b·s/cp``: tokens per GPU per micro-batch."""
        return self.b * self.s // self.cp

    @property
    def fwd_passes(self) -> int:
        """Forward passes per micro-batch: 2 with full recomputation."""
        return 2 if self.recompute else 1


def _parse_step(a: dict[str, Any]) -> _Step:
    """Parse and cross-check the arguments of [`step_communication`][calc.parallel.comm.step_communication]."""
    n_params = parse_count(a["params"], "params")
    n_layers = parse_positive_int(a["layers"], "layers")
    dp = parse_positive_int(a["dp"], "dp")
    tp = parse_positive_int(a["tp"], "tp")
    pp = parse_positive_int(a["pp"], "pp")
    cp = parse_positive_int(a["cp"], "cp")
    ep = parse_positive_int(a["ep"], "ep")
    s = parse_positive_int(a["seq"], "seq")
    sp = _flag(a["sequence_parallel"], "sequence_parallel")
    v = parse_positive_int(a["virtual_stages"], "virtual_stages")
    e = parse_positive_int(a["bytes_per_element"], "bytes_per_element")
    ge = a["grad_bytes_per_element"]
    if v > 1 and pp == 1:
        raise CalcError("virtual_stages", "must be 1 when pp = 1 (interleaving needs a pipeline)", v)
    if (dp * cp) % ep:
        raise CalcError("ep", f"must divide dp × cp (= {dp * cp})", ep, code="not-divisible")
    if s % cp:
        raise CalcError("seq", f"must be divisible by cp (= {cp})", s, code="not-divisible")
    if sp and (s // cp) % tp:
        raise CalcError(
            "seq", f"must be divisible by cp × tp (= {cp * tp}) with sequence parallelism", s, code="not-divisible"
        )
    stage_params = a["stage_params"]
    st_params = _ceil_div(n_params, pp) if stage_params is None else parse_count(stage_params, "stage_params")
    if st_params > n_params:
        raise CalcError("stage_params", f"must be at most params (= {n_params})", st_params)
    x_params = 0 if a["expert_params"] == 0 else parse_count(a["expert_params"], "expert_params")
    if x_params > n_params:
        raise CalcError("expert_params", f"must be at most params (= {n_params})", x_params)
    moe_layers = a["moe_layers"]
    n_moe = (
        (n_layers if ep > 1 else 0) if moe_layers is None else parse_positive_int(moe_layers, "moe_layers", minimum=0)
    )
    if n_moe > n_layers:
        raise CalcError("moe_layers", f"must be at most layers (= {n_layers})", n_moe)
    h = parse_positive_int(a["hidden"], "hidden")
    moe_tokens = a["moe_tokens"]
    return _Step(
        n_params=n_params,
        n_layers=n_layers,
        h=h,
        s=s,
        b=parse_positive_int(a["micro_batch"], "micro_batch"),
        m=parse_positive_int(a["num_microbatches"], "num_microbatches"),
        dp=dp,
        tp=tp,
        pp=pp,
        cp=cp,
        ep=ep,
        stage=parse_positive_int(a["zero_stage"], "zero_stage", minimum=0, maximum=3),
        sp=sp,
        v=v,
        recompute=_flag(a["recompute"], "recompute"),
        scatter=_flag(a["pp_scatter_gather"], "pp_scatter_gather"),
        k=parse_positive_int(a["top_k"], "top_k"),
        e=e,
        ge=e if ge is None else parse_positive_int(ge, "grad_bytes_per_element"),
        gpn=parse_positive_int(a["gpus_per_node"], "gpus_per_node"),
        net=Network(
            interconnect(a["intra"]),
            interconnect(a["inter"]),
            gpus_per_node=a["gpus_per_node"],
            nics_per_node=a["nics_per_node"],
            intra_efficiency=a["intra_efficiency"],
            inter_efficiency=a["inter_efficiency"],
            latency=_flag(a["latency"], "latency"),
        ),
        st_params=st_params,
        x_params=x_params,
        n_moe=n_moe,
        kvd=2 * h if a["kv_dims"] is None else parse_positive_int(a["kv_dims"], "kv_dims"),
        moe_tokens=None if moe_tokens is None else parse_positive_int(moe_tokens, "moe_tokens"),
    )


class _Terms:
    """Collects a step's [`CommTerm`][calc.parallel.comm.CommTerm]s, placing each group on the nodes and pricing it."""

    def __init__(self, x: _Step) -> None:
        self.x = x
        self.terms: list[CommTerm] = []

    def add(
        self, name: str, label: str, group: str, stride: int, size: int, collective: str, message: int, calls: int,
        source: str,
    ) -> None:  # fmt: skip
        """Add one term: ``calls`` calls of ``collective`` on ``size`` ranks ``stride`` apart, ``message`` bytes each.

        Groups of one rank, and terms with no calls or no bytes, are left out.
        """
        if size == 1 or calls == 0 or message == 0:
            return
        x = self.x
        n_ranks = 2 if collective == "p2p" else size
        sent = calls * collective_bytes_sent(collective, message, n_ranks)
        where = group_placement(stride, size, x.gpn)
        one = collective_cost(collective, message, where, x.net)
        intra_node = where.intra_node
        self.terms.append(
            CommTerm(
                name=name,
                label=label,
                group=group,
                collective=collective,
                group_size=n_ranks,
                message_bytes=message,
                calls=calls,
                bytes_sent=sent,
                intra_node=intra_node,
                bus_bytes_per_s=math.floor(one.bus_bytes_per_s),
                time_s=calls * one.time_s,
                latency_s=calls * one.latency_s,
                source=source,
            )
        )


_ZERO_SRC = "ZeRO (arXiv:1910.02054) Sec. 7"


def _dp_terms(x: _Step, terms: _Terms) -> None:
    """Data parallel: dense weights over ``dp × cp``, expert weights over ``dp × cp / ep`` (ZeRO Sec. 7, 5.2-5.3)."""
    for group, stride, size, n_el in (
        ("dp-cp", x.tp, x.dp * x.cp, _ceil_div(x.stage_dense, x.tp)),
        ("expert-dp", x.tp * x.ep, x.dp * x.cp // x.ep, _ceil_div(x.stage_expert, x.tp * x.ep)),
    ):
        what = "expert " if group == "expert-dp" else ""
        prefix = group.split("-")[0]
        grads, weights = n_el * x.ge, n_el * x.e
        if x.stage == 0:
            terms.add(
                f"{prefix}-grad-all-reduce", f"{what}gradient all-reduce (once per step)", group, stride, size,
                "all-reduce", grads, 1, _ZERO_SRC + ".1: 2Ψ",
            )  # fmt: skip
            continue
        rs_calls = 1 if x.stage == 1 else x.m
        terms.add(
            f"{prefix}-grad-reduce-scatter",
            f"{what}gradient reduce-scatter ({'once per step' if rs_calls == 1 else 'every micro-batch'})",
            group, stride, size, "reduce-scatter", grads, rs_calls, _ZERO_SRC + ".2.1: Ψ of 2Ψ",
        )  # fmt: skip
        if x.stage < 3:
            terms.add(
                f"{prefix}-param-all-gather", f"{what}updated-parameter all-gather (once per step)", group, stride,
                size, "all-gather", weights, 1, _ZERO_SRC + ".2.1: Ψ of 2Ψ",
            )  # fmt: skip
        else:
            terms.add(
                f"{prefix}-param-all-gather", f"{what}parameter all-gather, forward and backward of every micro-batch",
                group, stride, size, "all-gather", weights, 2 * x.m, _ZERO_SRC + ".2.2: 2Ψ of 3Ψ",
            )  # fmt: skip


def _tp_terms(x: _Step, terms: _Terms) -> None:
    """Tensor parallel: 4 all-reduces per layer per micro-batch, +2 with recomputation (Narayanan et al. 2021
    Sec. 3.2); under sequence parallelism each becomes an all-gather plus a reduce-scatter (Korthikanti et al.
    2022 Sec. 4.2.2)."""
    msg = x.tokens * x.h * x.e
    calls = x.layers_ps * x.m * 2 * (x.fwd_passes + 1)
    if x.sp:
        src = "Narayanan et al. 2021 Sec. 3.2; Korthikanti et al. 2022 Sec. 4.2.2 (same volume as all-reduce)"
        for collective in ("all-gather", "reduce-scatter"):
            terms.add(
                f"tp-{collective}", f"sequence-parallel {collective} (per layer, fwd + bwd)", "tp", 1, x.tp,
                collective, msg, calls, src,
            )  # fmt: skip
    else:
        terms.add(
            "tp-all-reduce", "tensor-parallel all-reduce (2 fwd + 2 bwd per layer)", "tp", 1, x.tp, "all-reduce",
            msg, calls, "Narayanan et al. 2021 Sec. 3.2: 8bsh(t-1)/t per layer per micro-batch",
        )  # fmt: skip


def _cp_terms(x: _Step, terms: _Terms) -> None:
    """Context parallel: K/V all-gathered in forward and again in backward, dK/dV reduce-scattered in backward
    (Megatron-LM ``docs/source/api-guide/context_parallel.rst``)."""
    msg = x.b * x.s * _ceil_div(x.kvd, x.tp) * x.e
    src = "Megatron-LM docs/source/api-guide/context_parallel.rst"
    terms.add(
        "cp-kv-all-gather", "K/V all-gather (forward, and again in backward)", "cp", x.tp, x.cp, "all-gather", msg,
        x.layers_ps * x.m * (x.fwd_passes + 1), src,
    )  # fmt: skip
    terms.add(
        "cp-kv-grad-reduce-scatter", "dK/dV reduce-scatter (backward)", "cp", x.tp, x.cp, "reduce-scatter", msg,
        x.layers_ps * x.m, src,
    )  # fmt: skip


def _ep_terms(x: _Step, terms: _Terms) -> None:
    """Expert parallel: dispatch and combine all-to-alls per MoE layer, forward and backward; uniform routing."""
    routed = (x.tokens // x.tp if x.sp else x.tokens) if x.moe_tokens is None else x.moe_tokens
    terms.add(
        "ep-all-to-all", "MoE token dispatch + combine (fwd + bwd)", "ep", x.tp, x.ep, "all-to-all",
        routed * x.k * x.h * x.e, x.moe_ps * x.m * 2 * (x.fwd_passes + 1),
        "dispatch and combine all-to-all per MoE layer, forward and backward; uniform routing",
    )  # fmt: skip


def _pp_terms(x: _Step, terms: _Terms) -> None:
    """Pipeline parallel: point-to-point between consecutive stages (Narayanan et al. 2021 Sec. 3.2, 4.1, 2.2.2)."""
    msg = (_ceil_div(x.tokens * x.h, x.tp) if x.scatter else x.tokens * x.h) * x.e
    terms.add(
        "pp-p2p", "stage-boundary activations (fwd) and gradients (bwd)", "pp", x.tp * x.cp * x.dp, x.pp, "p2p", msg,
        x.m * _pp_sends_per_microbatch(x.pp, x.v),
        "Narayanan et al. 2021 Sec. 3.2 (bsh per boundary), Sec. 4.1 (scatter/gather: /t), Sec. 2.2.2 (x v)",
    )  # fmt: skip
