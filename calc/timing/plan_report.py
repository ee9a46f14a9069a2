"""What the planner says beside its ranking: the layout it would pick with TP doubled past the node, priced, and
the rejected and pruned layouts grouped by reason (for [`calc.timing.planner`][calc.timing.planner])."""

from __future__ import annotations

from collections import Counter
from typing import Any

from calc.errors import CalcError
from calc.memory.layout import check_layout
from calc.timing.plan_search import _Candidate, _Ctx

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
