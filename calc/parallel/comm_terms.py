"""The communication terms of one training step, one builder per parallelism (data, tensor, context, expert,
pipeline), for [`step_communication`][calc.parallel.comm.step_communication]: its inputs parsed once into
``_Step``, and each builder adding its collectives, placed on the nodes and priced
(`calc.parallel.network`). Volumes and sources are in each builder's docstring and in
[`calc.parallel.comm`][calc.parallel.comm]'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from calc.errors import CalcError
from calc.memo import memoized
from calc.parallel.collectives import collective_bytes_sent
from calc.parallel.interconnects import interconnect
from calc.parallel.network import Network, collective_cost, group_placement
from calc.units import parse_count, parse_positive_int

__all__: list[str] = []


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


def _flag(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise CalcError(field, "must be true or false", value)
    return value


def _pp_sends_per_microbatch(pp: int, v: int) -> int:
    """Sends per microbatch by the busiest pipeline rank.

    With ``pp × v`` model chunks, chunk ``g`` lives on rank ``g mod pp``; each chunk
    but the last sends its output forward, each but the first sends a gradient back.
    A middle rank therefore sends ``2v``; with two ranks each sends ``2v - 1``.
    """
    if pp == 1:
        return 0
    return 2 * v if pp >= 3 else 2 * v - 1


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
    reshard: bool
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
        reshard=_flag(a["reshard_after_forward"], "reshard_after_forward"),
        scatter=_flag(a["pp_scatter_gather"], "pp_scatter_gather"),
        k=parse_positive_int(a["top_k"], "top_k"),
        e=e,
        ge=e if ge is None else parse_positive_int(ge, "grad_bytes_per_element"),
        gpn=parse_positive_int(a["gpus_per_node"], "gpus_per_node"),
        net=_network(tuple(a[k] for k in _NETWORK_KEYS)),
        st_params=st_params,
        x_params=x_params,
        n_moe=n_moe,
        kvd=2 * h if a["kv_dims"] is None else parse_positive_int(a["kv_dims"], "kv_dims"),
        moe_tokens=None if moe_tokens is None else parse_positive_int(moe_tokens, "moe_tokens"),
    )


_NETWORK_KEYS = ("intra", "inter", "gpus_per_node", "nics_per_node", "intra_efficiency", "inter_efficiency", "latency",
                 "pod_gpus", "oversubscription")  # fmt: skip


@memoized(maxsize=64)  # a plan times thousands of layouts on one network
def _network(values: tuple[Any, ...]) -> Network:
    """The [`Network`][calc.parallel.comm.Network] of ``step_communication``'s link arguments (``_NETWORK_KEYS``)."""
    intra, inter, gpn, nics, intra_eff, inter_eff, latency, pod, over = values
    return Network(interconnect(intra), interconnect(inter), gpus_per_node=gpn, nics_per_node=nics,
                   intra_efficiency=intra_eff, inter_efficiency=inter_eff, latency=_flag(latency, "latency"),
                   pod_gpus=pod, oversubscription=over)  # fmt: skip


class _Terms:
    """Collects a step's [`CommTerm`][calc.parallel.comm.CommTerm]s, placing each group on the nodes and pricing it."""

    def __init__(self, x: _Step, make: Callable[..., Any]) -> None:
        self.x = x
        self.make = make
        self.terms: list[Any] = []

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
            self.make(
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
            passes = " and backward" if x.reshard else ""
            terms.add(
                f"{prefix}-param-all-gather", f"{what}parameter all-gather, forward{passes} of every micro-batch",
                group, stride, size, "all-gather", weights, (2 if x.reshard else 1) * x.m, _ZERO_SRC + ".2.2: 2Ψ of 3Ψ",
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
