"""What the planner says beside its ranking: the layout it would pick with TP doubled past the node, priced, and
the rejected and pruned layouts grouped by reason; and, when nothing fits, why in words and the GPU count that fixes
it (for [`calc.timing.planner`][calc.timing.planner])."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

from calc.errors import CalcError
from calc.memory.layout import check_layout
from calc.memory.model_state import CONVENTIONS
from calc.timing.plan_search import _Candidate, _Ctx, evaluate

__all__: list[str] = []


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
    counts = tuple(best["stage_layers"])
    cand = _Candidate(
        t2, best["pp"], best["cp"], d, best["ep"], best["zero_stage"], best["micro_batch"], v, 0.0, counts
    )
    try:
        lay = x.layout(cand, best["zero_stage"], best["recompute"], for_memory=True)
        check_layout(arch, lay)
    except CalcError:
        return
    st = x.time(x.layout(cand, best["zero_stage"], best["recompute"]))
    more = st.step_time_s / best["step_time_s"] - 1
    row = {"dp": d, "tp": t2, "pp": best["pp"], "cp": best["cp"], "ep": best["ep"], "zero_stage": best["zero_stage"]}
    row |= {"micro_batch": best["micro_batch"], "recompute": best["recompute"], "interleave": lay.interleave}
    rejected.append(
        {
            **row,
            "step_time_s": st.step_time_s,
            "bound_s": -1.0,
            "reason": (
                f"TP={t2} spans {t2 // gpn} nodes: its all-gathers run over {net.inter.label} and "  # type: ignore[union-attr]
                + (f"add {more:.0%} to the step" if more > 0 else "would not shorten the step (more collectives)")
            ),
        }
    )


def by_reason(x: _Ctx, rejected: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Rejected and pruned layouts grouped by reason, with counts, most common first."""
    groups = Counter(x.pruned)
    for r in rejected:
        reason = r["reason"]
        if reason.startswith("does not fit"):
            key = "does not fit in memory"
        elif reason.startswith("invalid: "):
            key = reason.split(" (")[0]  # the rule, without the values of this layout
        else:
            key = reason.split(":")[0]
        groups[key] += 1
    return [{"reason": k, "count": v} for k, v in groups.most_common() if v]


_MEMORY_PRUNED = "does not fit even at ZeRO-3 with full recomputation (this micro-batch and larger)"


def state_bytes(x: _Ctx) -> int:
    """The model's states (weights, gradients, optimizer) in bytes, all of them: ``params × bytes per parameter``
    (Rajbhandari et al. 2020, Sec. 3.1); over ``n`` GPUs at ZeRO-3 each holds at least ``1/n`` of it."""
    return x.arch.param_count * CONVENTIONS[x.convention].bytes_per_param


def least_fits(x: _Ctx, cands: list[_Candidate]) -> bool:
    """Whether some set of degrees fits at its least memory: its smallest micro-batch, no interleaving, the most
    recomputation searched, each ZeRO stage. Activations grow with the micro-batch and the in-flight interleaved
    chunks and shrink with recomputation (Korthikanti et al. 2022, Table 2), so ``False`` means no state fits and
    the full search (which sizes every state) can be skipped."""
    least: dict[tuple[int, ...], _Candidate] = {}
    for cand in sorted(cands, key=lambda c: (c.mb, c.v)):
        least.setdefault((cand.dp, cand.tp, cand.pp, cand.cp, cand.ep), cand)
    y = replace(x, recs=x.recs[-1:])
    return any(evaluate(y, cand, [])[0] is not None for cand in least.values())


def no_layout(x: _Ctx, rejected: list[dict[str, Any]], fewest: int | None, tried: int) -> CalcError:
    """Why ``x.n`` GPUs hold no layout, in words, and the fix: the ``fewest`` GPUs above ``x.n`` on which the
    planner finds one (``None``: none of the ``tried`` larger counts), as the error on the ``gpus`` field.

    Examples:
        >>> from calc.timing.planner import plan
        >>> try:
        ...     plan("llama3.1-405b", gpus=8, seq_len=8192, global_batch=1024)
        ... except CalcError as err:
        ...     print(*err.message.split("; "), sep=chr(10))  # doctest: +NORMALIZE_WHITESPACE
        gpus = 8 holds no layout of this model: its model states alone, sharded over all 8 GPUs (ZeRO-3), take
        811.7 GB per GPU, over the 81.2 GB a layout may use (95% of the H100 SXM 80 GB's memory)
        set GPUs to 112 (14 nodes of 8), the fewest whole nodes that hold a layout of it
    """
    n, gpn = x.n, x.gpn
    states = state_bytes(x) // n
    usable = f"the {_gb1(x.capacity)} a layout may use ({1 - x.margin:.0%} of the {x.g.label}'s memory)"
    what = "of this model with the pinned settings" if x.pinned else "of this model"
    sharded = "on its one GPU" if n == 1 else f"sharded over all {n:,} GPUs (ZeRO-3)"
    fits = [r["reason"] for r in rejected if r["reason"].startswith("does not fit")]
    pins = {k: x.pins[k] for k in ("dp", "tp", "pp", "cp", "ep") if x.pins[k]}
    if states > x.capacity:
        why = f"its model states alone, {sharded}, take {_gb1(states)} per GPU, over {usable}"
    elif fits:
        sized = f"{len(rejected):,} layout{'s' if len(rejected) > 1 else ''}"
        why = f"of the {sized} sized, none fits in memory; the nearest: {fits[0].removeprefix('does not fit: ')}"
    elif x.pruned[_MEMORY_PRUNED]:
        why = (
            f"{sharded}, its model states take {_gb1(states)} per GPU, which leaves too little of {usable} for the "
            "activations of one micro-batch even with full recomputation"
        )
    elif x.pruned or rejected or not pins:
        reasons = [k for k, _ in x.pruned.most_common()] + [r["reason"] for r in rejected[:1]]
        why = "no split of them works: " + ("; ".join(reasons) or "no degrees multiply to it")
    else:
        named = " × ".join(f"{k} {v}" for k, v in pins.items())
        why = f"the pinned {named} leave no split of {n:,} GPUs"
    if fewest is None:
        fix = f"none of the next {tried:,} GPU counts tried holds one either"
        fix += ": change a pinned setting" if x.pinned else ""
    elif fewest >= gpn and fewest % gpn == 0:
        nodes = f"{fewest // gpn:,} nodes of {gpn}"
        fix = f"set GPUs to {fewest:,} ({nodes}), the fewest whole nodes that hold a layout of it"
    else:
        fix = f"set GPUs to {fewest:,}, the fewest that hold a layout of it"
    return CalcError("gpus", f"= {n:,} holds no layout {what}: {why}; {fix}")


def _gb1(n: int) -> str:
    return f"{n / 1e9:.1f} GB"
