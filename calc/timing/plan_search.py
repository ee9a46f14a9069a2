"""The planner's search, pruning and ranking, behind [`plan`][calc.timing.planner.plan].

* **Search** (``candidates``): every set of degrees, micro-batch and interleaving the rules admit; what a rule
  leaves out is counted by reason, never silently.
* **Pruning** (``bound``, ``_memory_floor``): a lower bound on each set's step time (its compute and bubble at
  the fastest state, no communication) orders the visit and stops it (branch and bound); a lower bound on its
  memory skips the states that cannot fit before their full peak is computed.
* **Ranking** (``rank``, ``evaluate``): the cheapest state of a set that fits, with its time and memory
  breakdowns, or the reason nothing does.

The rules and their sources are in [`calc.timing.planner`][calc.timing.planner]'s module docstring.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from calc.errors import CalcError
from calc.hardware import GPU
from calc.memory.layout import Layout, check_layout
from calc.models.architecture import Architecture
from calc.models.hf_config import parse_config_json
from calc.models.presets import PRESETS, preset
from calc.parallel.network import Network
from calc.timing.efficiency import (
    STRAGGLER_PER_DOUBLING,
    attention_efficiency,
    elementwise_passes,
    matmul_efficiency_for,
    straggler_allowance,
)
from calc.timing.plan_memory import _interleaved_extra, _memory, _memory_floor, _unsharded_floor
from calc.timing.plan_space import SHORT_CP_GAIN, _counts, _divisors, _interleaves, _search_space, _slot_flags, short_cp
from calc.timing.steptime import MEMORY_PASSES, StepTime, _bubble, _peaks, _stage_compute, step_time

__all__: list[str] = []

_RECOMPUTE = ("none", "selective", "full")

_STACK_SEARCH: dict[str, tuple[tuple[int, ...], tuple[str, ...]]] = {
    "megatron": ((0, 1, 2, 3), _RECOMPUTE),
    "torchtitan": ((0, 3), ("none", "op", "full")),
    "deepspeed": ((0, 1, 2, 3), ("none", "full")),
}
"""ZeRO stages and recomputation modes searched per training stack, cheapest first. torchtitan's data parallelism
is DDP (``data_parallel_replicate_degree``, ZeRO 0) or FSDP2 (``data_parallel_shard_degree``, ZeRO 3), and its
``activation_checkpoint.mode`` is ``none``, ``selective`` with ``selective_ac_option = "op"`` or ``full``
(``torchtitan/config/job_config.py``). DeepSpeed offers every ZeRO stage and checkpoints whole layers
(``deepspeed.checkpointing`` or ``transformers``' ``gradient_checkpointing``); a stack not listed here raises
when its layout is built."""

MAX_MICRO_BATCH = 64
"""Largest micro-batch searched (any divisor of the per-replica batch up to it, and only while it can fit)."""


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
    counts: tuple[int, ...] = ()
    bounds: dict[str, float] = field(default_factory=dict)


def _why(err: CalcError) -> str:
    """An error's words without its ``(got …)`` tail, for a message that adds its own."""
    return f"{err.field} {err.rule}"


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


def _gb(n: int) -> str:
    return f"{n / 1e9:.0f} GB"


@dataclass
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
    eff: float | None
    margin: float
    capacity: int
    pins: dict[str, Any]
    zeros: list[int]
    recs: list[str]
    allow_tp_across_nodes: bool
    knobs: dict[str, Any] = field(default_factory=dict)
    stack: str = "megatron"
    stack_knobs: dict[str, Any] = field(default_factory=dict)
    accumulate: bool = True
    pipeline_rules: str = "current"
    short_cp_gain: float = SHORT_CP_GAIN
    pruned: Counter[str] = field(default_factory=Counter)
    splits: dict[tuple[int, int], tuple[int, ...]] = field(default_factory=dict)
    memo: dict[tuple[Any, ...], tuple[int, Any]] = field(default_factory=dict)
    bounds: dict[tuple[Any, ...], float] = field(default_factory=dict)  # state_bound's compute per micro-batch
    allowance: float | None = None  # 1 + the straggler allowance, once per plan
    reshards: dict[int, bool] = field(default_factory=dict)  # pp -> whether FSDP reshards after forward
    on_first: Callable[[list[dict[str, Any]]], object] | None = None

    @property
    def floor_args(self) -> tuple[int, int, str, bool]:
        """``_memory_floor``'s arguments after the state: sequence, batch, convention, distributed optimizer."""
        return self.s, self.batch, self.convention, self.dist

    @property
    def pinned(self) -> bool:
        """Whether any degree, stage or schedule was pinned."""
        return any(v is not None for v in self.pins.values()) or len(self.zeros) == 1 or len(self.recs) == 1

    def layout(self, cand: _Candidate, z: int, r: str, *, for_memory: bool = False) -> Layout:
        """The [`Layout`][calc.memory.layout.Layout] of ``cand`` at ZeRO ``z`` and recomputation ``r``.

        ``for_memory``: its plain 1F1B twin (``interleave=1``), for an interleaved split the memory rules do not
        take; it is sized plus the interleaved schedule's extra in-flight activations (``_interleaved_extra``)."""
        return Layout(
            dp=cand.dp, tp=cand.tp, pp=cand.pp, cp=cand.cp, ep=cand.ep, zero_stage=z, micro_batch=cand.mb,
            global_batch=self.batch, seq_len=self.s, sequence_parallel=cand.tp > 1, recompute=r,
            flash_attention=True, dropout=False, convention=self.convention, distributed_optimizer=self.dist,
            interleave=1 if for_memory else cand.v, implementation=self.impl, stack=self.stack, **self.stack_knobs,
            **_slot_flags(self.stack == "megatron" and cand.pp * (1 if for_memory else cand.v) > self.arch.num_layers),
        )  # fmt: skip

    def time(self, lay: Layout) -> StepTime:
        """[`step_time`][calc.timing.steptime.step_time] of ``lay`` on this cluster (checked already)."""
        return step_time(self.arch, lay, gpu=self.g, network=self.net, matmul_efficiency=self.eff, check=False,
                         reshard_after_forward=lay.reshards_after_forward, **self.knobs)  # fmt: skip


def _micro_batches(x: _Ctx, cand: _Candidate, per_replica: int) -> list[int]:
    """Micro-batches searched for a degree set: divisors of the per-replica batch, from 1 up to what can fit (the
    memory floor at the most sharded state and full recomputation grows with the micro-batch)."""
    if x.pins["micro_batch"]:
        return [x.pins["micro_batch"]] if per_replica % x.pins["micro_batch"] == 0 else []
    sizes = [d for d in _divisors(per_replica) if d <= MAX_MICRO_BATCH]
    if not x.accumulate and cand.pp == 1:  # the framework runs the rank's batch in one pass
        x.pruned["no gradient accumulation: the micro-batch is the rank's whole batch"] += max(0, len(sizes) - 1)
        sizes = [per_replica]
    out = []
    for b in sizes:
        cand.mb = b
        if _memory_floor(x.arch, cand, 3, "full", x.s, x.batch, x.convention, x.dist) > x.capacity:
            x.pruned["does not fit even at ZeRO-3 with full recomputation (this micro-batch and larger)"] += 1
            break
        out.append(b)
    return out


def candidates(x: _Ctx) -> tuple[list[_Candidate], int]:
    """Every set of degrees, micro-batch and interleaving searched, and how many layouts they stand for."""
    arch, pins, n, batch = x.arch, x.pins, x.n, x.batch
    tps, pps, cps = _search_space(x)
    cands: list[_Candidate] = []
    for t, p, c in itertools.product(tps, pps, cps):
        if n % (t * p * c):
            continue
        d = n // (t * p * c)
        if pins["dp"] and d != pins["dp"]:
            continue
        if batch % d:
            x.pruned["dp does not divide the global batch"] += 1
            continue
        eps = [1]
        if arch.is_moe:
            eps = [pins["ep"]] if pins["ep"] else [e for e in _divisors(d * c) if arch.num_experts % e == 0]
        elif pins["ep"] not in (None, 1):
            raise CalcError("ep", "must be 1 for a dense model", pins["ep"], code="unsupported")
        for e in eps:
            if (d * c) % e:
                continue
            probe = _Candidate(t, p, c, d, e, x.zeros[0], 1, 1, 0.0, _counts(x, p, 1))
            for b in _micro_batches(x, probe, batch // d):
                for v in _interleaves(x, p, batch // d // b):
                    cands.append(_Candidate(t, p, c, d, e, x.zeros[0], b, v, 0.0, _counts(x, p, v)))
    return cands, len(cands) * len(x.zeros) * len(x.recs)


def bound(x: _Ctx, cands: list[_Candidate]) -> None:
    """Give each candidate a lower bound on its step time and sort them best first (module docstring, step 2):
    the busiest stage's compute and bubble at the least recomputation whose memory floor fits (none, unless even
    the most sharded ZeRO stage's floor overflows without it), without communication or overlap, times the
    straggler allowance. Every state of the candidate that fits takes at least that long."""
    zmax = max(x.zeros)
    for cand in cands:
        fits = (r for r in x.recs if _memory_floor(x.arch, cand, zmax, r, *x.floor_args) <= x.capacity)
        least = next(fits, x.recs[0])
        cand.bound = state_bound(x, cand, least)
    cands.sort(key=lambda c: (c.bound, c.v))


def state_bound(x: _Ctx, cand: _Candidate, r: str) -> float:
    """A lower bound on the step time of ``cand``'s states at recomputation ``r``, any ZeRO stage: the busiest
    stage's compute (recomputation included) and bubble, no communication, times the straggler allowance."""
    if r in cand.bounds:
        return cand.bounds[r]
    key = (cand.tp, cand.pp, cand.cp, cand.mb, r, cand.counts)
    if key not in x.bounds:
        peak, attn_peak = _peaks(x.g, x.knobs.get("dtype", "bf16"))  # FP8: the linear layers only
        eff = matmul_efficiency_for(x.g) if x.eff is None else x.eff
        attn = x.knobs.get("attention_efficiency") or attention_efficiency(x.g, x.s // cand.cp, x.stack)
        like = SimpleNamespace(tp=cand.tp, cp=cand.cp, pp=cand.pp, micro_batch=cand.mb, seq_len=x.s,
                               recompute=r, flash_attention=True, sequence_parallel=cand.tp > 1)  # fmt: skip
        rates = (peak * eff, attn_peak * attn)  # a CP rank's kernel: s / cp rows
        compiled, fp8 = bool(x.stack_knobs.get("compile")), x.knobs.get("fp8_memory_passes", 0.0)
        passes = elementwise_passes(MEMORY_PASSES, stack=x.stack, compile=compiled, dtype=x.knobs.get("dtype", "bf16"),
                                    fp8=fp8)  # fmt: skip
        x.bounds[key] = _stage_compute(x.arch, like, rates, x.g.hbm_bytes_per_s, passes, cand.counts).t_mb  # type: ignore[arg-type]
    if x.allowance is None:
        x.allowance = 1 + straggler_allowance(x.n, x.knobs.get("straggler_per_doubling", STRAGGLER_PER_DOUBLING))
    m = x.batch // (cand.dp * cand.mb)
    cand.bounds[r] = m * x.bounds[key] * (1 + _bubble(cand.pp, m, cand.v, None)) * x.allowance
    return cand.bounds[r]


@dataclass
class _Outcome:
    """What evaluating one candidate found: its best fitting state, or the nearest misses, and the rejections."""

    rejected: list[dict[str, Any]]
    evaluated: int = 0
    best: tuple[Layout, StepTime, Any, int] | None = None
    nearest: tuple[int, str, int, int] | None = None
    least: tuple[int, str, int] | None = None
    twin: bool = False
    cutoff: float = math.inf
    too_slow: bool = False

    def invalid(self, row: dict[str, Any], z: int, r: str, err: CalcError, bound_s: float) -> None:
        """Reject a state that cannot run, with the error's words."""
        why = f"invalid: {_why(err)}"
        self.rejected.append({**row, "zero_stage": z, "recompute": r, "reason": why, "bound_s": bound_s})


def _reshards(x: _Ctx, pp: int) -> bool:
    """Whether FSDP / ZeRO-3 reshards after forward on ``pp`` stages (the knob, else the stack's default)."""
    if pp not in x.reshards:
        x.reshards[pp] = Layout(pp=pp, stack=x.stack, **x.stack_knobs).reshards_after_forward
    return x.reshards[pp]


def _try_state(x: _Ctx, cand: _Candidate, z: int, r: str, row: dict[str, Any], out: _Outcome) -> bool:
    """Evaluate ``cand`` at ZeRO ``z`` and recomputation ``r``; ``True`` when it fits (the state is kept)."""
    twin = out.twin
    if out.cutoff < math.inf and state_bound(x, cand, r) >= out.cutoff:  # its compute alone is already too slow
        out.too_slow = True
        return False
    floor = _memory_floor(x.arch, cand, z, r, x.s, x.batch, x.convention, x.dist)
    if z == 3 and cand.dp * cand.cp > 1 and not _reshards(x, cand.pp):  # ZeRO-3's weights stay gathered
        floor += _unsharded_floor(x.arch, cand)
    if floor > x.capacity:  # sized before the layout is built: most states of a large model stop here
        if out.least is None or floor < out.least[2]:
            out.least = (z, r, floor)
        return False  # what the GPU must hold at the least already overflows
    try:
        mem = x.layout(cand, z, r, for_memory=twin)
        check_layout(x.arch, mem)
    except CalcError as err:
        out.invalid(row, z, r, err, cand.bound)
        return False
    lay = x.layout(cand, z, r) if twin else mem
    st = x.time(lay)
    if st.step_time_s >= out.cutoff:  # this state, and every slower one after it, cannot enter the top
        out.too_slow = True
        return False
    key = (cand.tp, cand.pp, cand.cp, cand.dp, cand.ep, cand.mb, z, r, 1 if twin else cand.v)
    if key not in x.memo:  # interleavings sized as one 1F1B twin share it
        x.memo[key] = _memory(x.arch, mem, x.capacity)
    tensors, peak = x.memo[key]
    if tensors > x.capacity:  # stage 0's tensors alone, before any overhead, already overflow
        if out.least is None or tensors < out.least[2]:
            out.least = (z, r, tensors)
        return False
    out.evaluated += 1
    if isinstance(peak, CalcError):  # e.g. a Hugging Face profile with tp > 1
        out.invalid(row, z, r, peak, cand.bound)
        return False
    total = peak.nvidia_smi_bytes + (_interleaved_extra(cand, peak.memory.activations) if twin else 0)
    if total > x.capacity:
        if out.nearest is None or total < out.nearest[3]:
            out.nearest = (z, r, peak.stage, total)
        return False
    if out.best is None or st.step_time_s < out.best[1].step_time_s:
        out.best = (lay, st, peak, total)
    return True


def evaluate(
    x: _Ctx, cand: _Candidate, rejected: list[dict[str, Any]], cutoff: float = math.inf, slow_why: str = ""
) -> tuple[dict[str, Any] | None, int]:
    """The cheapest state of ``cand`` that fits, as a result row (``None`` if none does; the reason goes to
    ``rejected``), and how many states were evaluated in full (module docstring, steps 3 and 4). States whose
    step time is at least ``cutoff`` are not sized: they could not enter the result (counted as ``slow_why``)."""
    row = {"dp": cand.dp, "tp": cand.tp, "pp": cand.pp, "cp": cand.cp, "ep": cand.ep}
    row |= {"micro_batch": cand.mb, "interleave": cand.v}
    out = _Outcome(rejected, cutoff=cutoff)
    try:
        check_layout(x.arch, x.layout(cand, x.zeros[0], x.recs[0]))
    except CalcError as err:
        try:  # an interleaved split the memory rules refuse: size its 1F1B twin, plus the extra in flight
            if cand.v == 1:
                raise
            check_layout(x.arch, x.layout(cand, x.zeros[0], x.recs[0], for_memory=True))
            out.twin = True
        except CalcError:
            out.invalid(row, x.zeros[0], x.recs[0], err, cand.bound)
            return None, 0
    for r in x.recs:
        # a higher ZeRO stage at this recomputation is only slower, and more recomputation only slower
        if any(_try_state(x, cand, z, r, row, out) or out.too_slow for z in x.zeros) or out.too_slow:
            break
    if out.best is None:
        if out.too_slow:
            x.pruned[slow_why or "slower than the top at its fastest state that could fit"] += 1
        else:
            _reject_memory(x, cand, row, out)
        return None, out.evaluated
    lay, st, peak, total = out.best
    return _kept_row(x, row, cand, lay, st, peak, total), out.evaluated


def _reject_memory(x: _Ctx, cand: _Candidate, row: dict[str, Any], out: _Outcome) -> None:
    """Say why nothing of ``cand`` fits: the nearest full peak, else the least floor. A need equal to the usable
    memory fits; only a need above it is a rejection, and both figures are printed to 0.1 GB."""
    usable = f"{_gb1(x.capacity)} usable of {_gb(x.g.memory_bytes)} with the {x.margin:.0%} margin"
    if out.nearest is None and out.least is not None:
        z, r, floor = out.least
        why = (
            f"does not fit: stage 0 needs at least {_gb1(floor)} before the allocator's, NCCL's and CUDA's overheads "
            f"({usable}), "
            f"even with ZeRO-{z} and {_recompute_words(r)}"
        )
        out.rejected.append({**row, "zero_stage": z, "recompute": r, "memory_bytes": floor, "bound_s": cand.bound,
                             "reason": why})  # fmt: skip
    if out.nearest is not None:
        z, r, stage, total = out.nearest
        why = (
            f"does not fit: stage {stage} needs {_gb1(total)} ({usable}), even with ZeRO-{z} and {_recompute_words(r)}"
        )
        out.rejected.append({**row, "zero_stage": z, "recompute": r, "memory_bytes": total, "bound_s": cand.bound,
                             "reason": why})  # fmt: skip


def _recompute_words(mode: str) -> str:
    """A recompute mode in words: ``"none"`` reads "no recomputation", ``"op"`` "per-op recomputation"."""
    return {"none": "no recomputation", "op": "per-op recomputation"}.get(mode, f"{mode} recomputation")


def _gb1(n: int) -> str:
    return f"{n / 1e9:.1f} GB"


def _kept_row(
    x: _Ctx, row: dict[str, Any], cand: _Candidate, lay: Layout, st: StepTime, peak: Any, total: int
) -> dict[str, Any]:
    """A fitting layout as the plan's result row."""
    return {
        **row,
        "zero_stage": lay.zero_stage,
        "recompute": lay.recompute,
        "memory_bytes": total,
        "step_time_s": st.step_time_s,
        "tflops_per_gpu": st.tflops_per_gpu,
        "mfu": st.mfu,
        "hfu": st.hfu,
        "tokens_per_s": st.tokens_per_s,
        "stage_layers": list(cand.counts),
        "memory": {
            "stage": peak.stage,
            "model_state_bytes": peak.memory.model_state,
            "activation_bytes": peak.memory.activations + peak.memory.logits + total - peak.nvidia_smi_bytes,
            "allocated_bytes": peak.allocated_bytes + total - peak.nvidia_smi_bytes,
            "reserved_bytes": peak.reserved_bytes + total - peak.nvidia_smi_bytes,
            "nvidia_smi_bytes": total,
            "capacity_bytes": x.capacity,
        },
        "time": st.as_dict()["breakdown"],
    }


@dataclass
class _Ranking:
    """What [`rank`][] has kept so far: the ``top`` fastest rows, the fastest of each set of degrees, the rejected."""

    top: int
    kept: list[dict[str, Any]] = field(default_factory=list)
    best: dict[tuple[int, ...], dict[str, Any]] = field(default_factory=dict)
    rejected: list[dict[str, Any]] = field(default_factory=list)
    evaluated: int = 0


def _visit(x: _Ctx, cands: list[_Candidate], at: _Ranking, gate: float = math.inf) -> None:
    """Visit ``cands`` best bound first into ``at``; stop once a bound passes the ``top``-th kept time (the rest
    are counted as pruned). A row must also be faster than ``gate`` (a short-sequence CP layout's, ``rank``)."""
    top, kept, best = at.top, at.kept, at.best
    gate_why = _SHORT_CP_WHY.format(s=f"{x.s:,}", gain=x.short_cp_gain)
    for i, cand in enumerate(cands):
        if len(kept) >= top and cand.bound >= kept[top - 1]["step_time_s"]:
            x.pruned[f"slower than the top {top} at best (lower bound on the step time)"] += len(cands) - i
            break
        if cand.bound >= gate:
            x.pruned[gate_why] += len(cands) - i
            break
        degrees = (cand.dp, cand.tp, cand.pp, cand.cp, cand.ep)
        if degrees in best and cand.bound >= best[degrees]["step_time_s"]:
            x.pruned["slower than a kept micro-batch or interleaving of the same degrees"] += 1
            continue
        cutoff = kept[top - 1]["step_time_s"] if len(kept) >= top else math.inf
        if degrees in best:
            cutoff = min(cutoff, best[degrees]["step_time_s"])
        row, n_eval = evaluate(x, cand, at.rejected, min(cutoff, gate), gate_why if gate < cutoff else "")
        at.evaluated += n_eval
        if row is None:
            continue
        if degrees in best:
            if row["step_time_s"] >= best[degrees]["step_time_s"]:
                x.pruned["slower than a kept micro-batch or interleaving of the same degrees"] += 1
                continue
            kept.remove(best[degrees]) if best[degrees] in kept else None
        best[degrees] = row
        kept.append(row)
        kept.sort(key=lambda r: r["step_time_s"])
        del kept[top:]
        if x.on_first is not None:  # the best so far, once, while the search goes on
            first, x.on_first = x.on_first, None
            first([dict(r) for r in kept])


_SHORT_CP_TWIN = (
    "CP below 32K tokens with a micro-batch it divides: the same tokens per micro-batch and the same micro-batches as "
    "the layout without CP at cp times the data parallelism, which is searched, less CP's K/V exchange"
)
_SHORT_CP_WHY = "CP at {s} tokens saves at most {gain:.0%} over the fastest layout without it (short_cp_gain)"


def rank(
    x: _Ctx, cands: list[_Candidate], top: int, flip_within: float
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], int]:
    """Visit the bounded candidates best first and keep the ``top`` fastest that fit (flagging near ties); times
    within ``flip_within`` could swap. Below ``LONG_CP`` tokens an unpinned CP layout is visited after the others
    and kept only if it beats the fastest of them by more than ``short_cp_gain``
    ([`SHORT_CP_GAIN`][calc.timing.plan_space.SHORT_CP_GAIN]). Returns ``(kept, rejected, states evaluated)``;
    ``kept`` is empty when nothing fits."""
    at = _Ranking(top)
    short: list[_Candidate] = [] if x.pins["cp"] else [c for c in cands if short_cp(x.s, c.cp)]
    _visit(x, [c for c in cands if not short_cp(x.s, c.cp)] if short else cands, at)
    if short and not x.pins["micro_batch"] and not x.pins["dp"]:  # the twin at cp × dp is searched
        twins = [c for c in short if c.mb % c.cp == 0]
        x.pruned[_SHORT_CP_TWIN] += len(twins)
        short = [c for c in short if c.mb % c.cp]
    if short:
        _visit(x, short, at, at.kept[0]["step_time_s"] * (1 - x.short_cp_gain) if at.kept else math.inf)
    kept, rejected, evaluated = at.kept, at.rejected, at.evaluated
    if not kept:
        return kept, rejected, evaluated  # the planner says why (calc.timing.plan_report.no_layout)
    for a, b in itertools.pairwise(kept):
        gap = b["step_time_s"] / a["step_time_s"] - 1
        within = "a tie with the next" if gap < 0.0005 else f"within {gap:.1%} of the next"
        a["flip"] = f"{within}: the ranking could flip" if gap < flip_within else ""
    kept[-1].setdefault("flip", "")
    return kept, rejected, evaluated
