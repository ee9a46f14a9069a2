"""The planner's search, pruning and ranking, behind [`plan`][calc.timing.planner.plan].

* **Search** (``candidates``): every set of degrees, micro-batch and interleaving the rules admit.
* **Pruning** (``bound``, ``_memory_floor``): a lower bound on each set's step time orders the visit and stops
  it (branch and bound); a lower bound on its memory skips the states that cannot fit before their full peak
  is computed.
* **Ranking** (``evaluate``): the cheapest state of a set that fits, with its time and memory breakdowns, or
  the reason nothing does.

The rules and their sources are in [`calc.timing.planner`][calc.timing.planner]'s module docstring.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from calc.errors import CalcError
from calc.hardware import GPU
from calc.memory.layout import Layout, check_layout, stage_memory
from calc.memory.model_state import CONVENTIONS
from calc.memory.overheads import peak_memory
from calc.models.architecture import Architecture
from calc.models.hf_config import parse_config_json
from calc.models.presets import PRESETS, preset
from calc.parallel.network import Network
from calc.timing.steptime import StepTime, _elementwise_bytes, step_time

__all__: list[str] = []

_RECOMPUTE = ("none", "selective", "full")


def _model(model: str | Architecture) -> Architecture:
    if isinstance(model, Architecture):
        return model
    if not isinstance(model, str) or not model.strip():
        raise CalcError("model", "must be a preset name or a pasted config.json", model)
    text = model.strip()
    if text.startswith("{"):
        return Architecture.from_hf_config(parse_config_json(text, "model"))
    if text not in PRESETS:
        raise CalcError("model", "must be a preset name (python -m calc list) or a pasted config.json", text)
    return preset(text)


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


@dataclass
class _Candidate:
    tp: int
    pp: int
    cp: int
    dp: int
    ep: int
    zero: int
    mb: int
    v: int
    bound: float


def _layout(
    cand: _Candidate, z: int, r: str, batch: int, s: int, convention: str, dist: bool, impl: str = "megatron"
) -> Layout:
    return Layout(
        dp=cand.dp,
        tp=cand.tp,
        pp=cand.pp,
        cp=cand.cp,
        ep=cand.ep,
        zero_stage=z,
        micro_batch=cand.mb,
        global_batch=batch,
        seq_len=s,
        sequence_parallel=cand.tp > 1,
        recompute=r,
        flash_attention=True,
        dropout=False,
        convention=convention,
        distributed_optimizer=dist,
        interleave=cand.v,
        implementation=impl,
    )


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
    micro-batches (Korthikanti et al. 2022 Table 2 per layer; ``2sbh/t`` per layer under full recomputation)."""
    floor = _state_floor(arch, cand, z, convention, dist)
    tp_sp = cand.tp > 1
    if r == "full":
        per_layer = 2 * s * cand.mb * arch.hidden_size // (cand.tp if tp_sp else 1) // cand.cp
    else:
        per_layer = _elementwise_bytes(s, cand.mb, arch.hidden_size, arch.num_heads, cand.tp, cand.cp, tp_sp, True)
    in_flight = min(cand.pp, batch // (cand.dp * cand.mb))
    return floor + per_layer * (arch.num_layers // cand.pp) * in_flight // 2


def _gb(n: int) -> str:
    return f"{n / 1e9:.0f} GB"


@dataclass(frozen=True)
class _Ctx:
    """One plan's parsed inputs, shared by the search, the pruning and the ranking."""

    arch: Architecture
    n: int
    s: int
    batch: int
    g: GPU
    gpn: int
    net: Network
    convention: str
    dist: bool
    impl: str
    eff: float
    margin: float
    capacity: int
    pins: dict[str, Any]
    zeros: list[int]
    recs: list[str]
    allow_tp_across_nodes: bool

    def layout(self, cand: _Candidate, z: int, r: str) -> Layout:
        """The [`Layout`][calc.memory.layout.Layout] of ``cand`` at ZeRO stage ``z`` and recomputation ``r``."""
        return _layout(cand, z, r, self.batch, self.s, self.convention, self.dist, self.impl)

    def time(self, lay: Layout) -> StepTime:
        """[`step_time`][calc.timing.steptime.step_time] of ``lay`` on this cluster (checked already)."""
        return step_time(self.arch, lay, gpu=self.g, network=self.net, matmul_efficiency=self.eff, check=False)


def _search_space(x: _Ctx) -> tuple[list[int], list[int], list[int]]:
    """The ``tp``, ``pp`` and ``cp`` degrees searched (module docstring, step 1)."""
    arch, pins = x.arch, x.pins
    divs = _divisors(x.n)
    tps = [pins["tp"]] if pins["tp"] else [t for t in divs if t <= x.gpn or x.allow_tp_across_nodes]
    tps = [t for t in tps if arch.num_heads % t == 0 and (arch.uses_mla or arch.num_kv_heads % t == 0)]
    pps = [pins["pp"]] if pins["pp"] else [p for p in divs if arch.num_layers % p == 0]
    if pins["cp"]:
        cps = [pins["cp"]]
    else:
        cps = [c for c in divs if c == 1 or (x.s >= 32768 and c <= 16 and x.s % (2 * c) == 0)]
    return tps, pps, cps


def candidates(x: _Ctx) -> tuple[list[_Candidate], int]:
    """Every set of degrees, micro-batch and interleaving searched, and how many layouts they stand for."""
    arch, pins, n, batch = x.arch, x.pins, x.n, x.batch
    tps, pps, cps = _search_space(x)
    cands: list[_Candidate] = []
    searched = 0
    for t, p, c in itertools.product(tps, pps, cps):
        if n % (t * p * c):
            continue
        d = n // (t * p * c)
        if (pins["dp"] and d != pins["dp"]) or batch % d:
            continue
        eps = [1]
        if arch.is_moe:
            eps = [pins["ep"]] if pins["ep"] else [e for e in _divisors(d * c) if arch.num_experts % e == 0]
        elif pins["ep"] not in (None, 1):
            raise CalcError("ep", "must be 1 for a dense model", pins["ep"], code="unsupported")
        per_replica = batch // d
        mbs = [pins["micro_batch"]] if pins["micro_batch"] else [b for b in (1, 2) if per_replica % b == 0]
        for e, b in itertools.product(eps, mbs):
            if (d * c) % e or per_replica % b:
                continue
            m = per_replica // b
            vs = [pins["interleave"]] if pins["interleave"] else [1]
            if not pins["interleave"] and p > 1 and arch.num_layers % (2 * p) == 0 and m % p == 0:
                vs.append(2)
            for v in vs:
                searched += len(x.zeros) * len(x.recs)
                cands.append(_Candidate(t, p, c, d, e, x.zeros[0], b, v, 0.0))
    return cands, searched


def bound(x: _Ctx, cands: list[_Candidate]) -> None:
    """Give each candidate its lower bound (the step time of its cheapest state: fewest ZeRO gathers, no
    recomputation, which no variant of it beats) and sort them best bound first (module docstring, step 2)."""
    for cand in cands:
        try:
            cand.bound = x.time(x.layout(cand, x.zeros[0], x.recs[0])).step_time_s
        except CalcError:
            cand.bound = math.inf
    cands.sort(key=lambda c: c.bound)


def _try_state(x: _Ctx, cand: _Candidate, z: int, r: str, row: dict[str, Any], out: _Outcome) -> bool:
    """Evaluate ``cand`` at ZeRO ``z`` and recomputation ``r``; ``True`` when it fits (the state is kept)."""
    try:
        lay = x.layout(cand, z, r)
        check_layout(x.arch, lay)
    except CalcError as err:
        out.rejected.append(
            {**row, "zero_stage": z, "recompute": r, "reason": f"invalid: {err}", "bound_s": cand.bound}
        )
        return False
    floor = _memory_floor(x.arch, cand, z, r, x.s, x.batch, x.convention, x.dist)
    if floor > x.capacity:
        if out.least is None or floor < out.least[2]:
            out.least = (z, r, floor)
        return False  # what the GPU must hold at the least already overflows
    try:
        tensors = stage_memory(x.arch, lay, 0).total
    except CalcError:
        tensors = 0
    if tensors > x.capacity:  # stage 0's tensors alone, before any overhead, already overflow
        if out.least is None or tensors < out.least[2]:
            out.least = (z, r, tensors)
        return False
    out.evaluated += 1
    try:
        peak = peak_memory(x.arch, lay)
    except CalcError as err:  # e.g. a Hugging Face profile with tp > 1
        out.rejected.append(
            {**row, "zero_stage": z, "recompute": r, "reason": f"invalid: {err}", "bound_s": cand.bound}
        )
        return False
    if peak.nvidia_smi_bytes > x.capacity:
        if out.nearest is None or peak.nvidia_smi_bytes < out.nearest[2].nvidia_smi_bytes:
            out.nearest = (z, r, peak)
        return False
    st = x.time(lay)
    if out.best is None or st.step_time_s < out.best[1].step_time_s:
        out.best = (lay, st, peak)
    return True


@dataclass
class _Outcome:
    """What evaluating one candidate found: its best fitting state, or the nearest misses, and the rejections."""

    rejected: list[dict[str, Any]]
    evaluated: int = 0
    best: tuple[Layout, StepTime, Any] | None = None
    nearest: tuple[int, str, Any] | None = None
    least: tuple[int, str, int] | None = None


def evaluate(x: _Ctx, cand: _Candidate, rejected: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, int]:
    """The cheapest state of ``cand`` that fits, as a result row (``None`` if none does; the reason goes to
    ``rejected``), and how many states were evaluated in full (module docstring, steps 3 and 4)."""
    row = {"dp": cand.dp, "tp": cand.tp, "pp": cand.pp, "cp": cand.cp, "ep": cand.ep}
    row |= {"micro_batch": cand.mb, "interleave": cand.v}
    out = _Outcome(rejected)
    for r in x.recs:
        # a higher ZeRO stage at this recomputation is only slower, and more recomputation only slower
        if any(_try_state(x, cand, z, r, row, out) for z in x.zeros):
            break
    if out.best is None:
        _reject_memory(x, cand, row, out)
        return None, out.evaluated
    lay, st, peak = out.best
    return _kept_row(x, row, lay, st, peak), out.evaluated


def _reject_memory(x: _Ctx, cand: _Candidate, row: dict[str, Any], out: _Outcome) -> None:
    """Say why nothing of ``cand`` fits: the nearest full peak, else the least floor."""
    mem = _gb(x.g.memory_bytes)
    if out.nearest is None and out.least is not None:
        z, r, floor = out.least
        why = (
            f"does not fit: stage 0 needs at least {_gb(floor)} of {mem} before any overhead, "
            f"even with ZeRO-{z} and {r} recomputation"
        )
        out.rejected.append({**row, "zero_stage": z, "recompute": r, "memory_bytes": floor, "bound_s": cand.bound,
                             "reason": why})  # fmt: skip
    if out.nearest is not None:
        z, r, peak = out.nearest
        why = (
            f"does not fit: stage {peak.stage} needs {_gb(peak.nvidia_smi_bytes)} of {mem} "
            f"({_gb(x.capacity)} with the {x.margin:.0%} margin), even with ZeRO-{z} and {r} recomputation"
        )
        out.rejected.append({**row, "zero_stage": z, "recompute": r, "memory_bytes": peak.nvidia_smi_bytes,
                             "bound_s": cand.bound, "reason": why})  # fmt: skip


def _kept_row(x: _Ctx, row: dict[str, Any], lay: Layout, st: StepTime, peak: Any) -> dict[str, Any]:
    """A fitting layout as the plan's result row."""
    return {
        **row,
        "zero_stage": lay.zero_stage,
        "recompute": lay.recompute,
        "memory_bytes": peak.nvidia_smi_bytes,
        "step_time_s": st.step_time_s,
        "tflops_per_gpu": st.tflops_per_gpu,
        "mfu": st.mfu,
        "hfu": st.hfu,
        "tokens_per_s": st.tokens_per_s,
        "memory": {
            "stage": peak.stage,
            "model_state_bytes": peak.memory.model_state,
            "activation_bytes": peak.memory.activations + peak.memory.logits,
            "allocated_bytes": peak.allocated_bytes,
            "reserved_bytes": peak.reserved_bytes,
            "nvidia_smi_bytes": peak.nvidia_smi_bytes,
            "capacity_bytes": x.capacity,
        },
        "time": st.as_dict()["breakdown"],
    }


def tp_across(x: _Ctx, kept: list[dict[str, Any]], rejected: list[dict[str, Any]]) -> None:
    """Say what the best layout would cost with TP doubled past the node (the 3D page's warning)."""
    arch, n, batch, gpn, net = x.arch, x.n, x.batch, x.gpn, x.net
    best = kept[0]
    t2 = 2 * gpn
    if n % (t2 * best["pp"] * best["cp"]) or arch.num_heads % t2 or (not arch.uses_mla and arch.num_kv_heads % t2):
        return
    d = n // (t2 * best["pp"] * best["cp"])
    if batch % (d * best["micro_batch"]) or (d * best["cp"]) % best["ep"]:
        return
    v = best["interleave"] if (batch // (d * best["micro_batch"])) % best["pp"] == 0 else 1
    cand = _Candidate(t2, best["pp"], best["cp"], d, best["ep"], best["zero_stage"], best["micro_batch"], v, 0.0)
    try:
        lay = _layout(cand, best["zero_stage"], best["recompute"], batch, x.s, x.convention, x.dist, "megatron")
        check_layout(arch, lay)
    except CalcError:
        return
    st = x.time(lay)
    more = st.step_time_s / best["step_time_s"] - 1
    row = {"dp": d, "tp": t2, "pp": best["pp"], "cp": best["cp"], "ep": best["ep"], "zero_stage": best["zero_stage"]}
    row |= {"micro_batch": best["micro_batch"], "recompute": best["recompute"], "interleave": lay.interleave}
    rejected.append(
        {
            **row,
            "step_time_s": st.step_time_s,
            "bound_s": -1.0,
            "reason": (
                f"TP={t2} spans {t2 // gpn} nodes: its all-gathers run over "
                f"{net.inter.label} and add {more:.0%} to the step"  # type: ignore[union-attr]
            ),
        }
    )


def rank(
    x: _Ctx, cands: list[_Candidate], top: int, flip_within: float
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """Visit the bounded candidates best first and keep the ``top`` fastest that fit (flagging near ties);
    stop once a bound passes the ``top``-th kept time; times within ``flip_within`` could swap.
    Returns ``(kept, rejected, states evaluated)``."""
    kept: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    evaluated = 0
    for cand in cands:
        if len(kept) >= top and cand.bound >= kept[top - 1]["step_time_s"]:
            break  # no later candidate can enter the top
        row, n_eval = evaluate(x, cand, rejected)
        evaluated += n_eval
        if row is not None:
            kept.append(row)
            kept.sort(key=lambda r: r["step_time_s"])
            del kept[top:]
    if not kept:
        reason = rejected[0]["reason"] if rejected else "no candidate"
        raise CalcError("gpus", f"admit no layout that fits: the nearest {reason}", x.n)
    for a, b in itertools.pairwise(kept):
        gap = b["step_time_s"] / a["step_time_s"] - 1
        a["flip"] = f"within {gap:.1%} of the next: the ranking could flip" if gap < flip_within else ""
    kept[-1].setdefault("flip", "")
    return kept, rejected, evaluated
