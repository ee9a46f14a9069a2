"""Where the planner ranks each published layout (issue 21 Build 3: top 3, or within 5% of its top).

For every throughput row of ``runs.json`` that the engine models (no ``not_modelled`` mark),
[`plan`][calc.timing.planner.plan] runs twice on the row's model, GPU, GPU count, global batch and sequence
(and its network's links where the row names them):

- **pinned** to the published layout (``dp tp pp cp ep``, and ``micro_batch`` and ``interleave`` where the source
  gives them: a field the row lists as ``unpublished`` is a guess made to time the run, and is left to the
  planner; the ZeRO stage and recomputation are left to the planner, which takes the cheapest that fits): its
  step time as the planner times it, or the planner's refusal;
- **unpinned**, ``top=3``: the planner's ranking.

Both plans run on the row's training stack (``knobs.stack``: Megatron-LM or torchtitan, each searching what it
implements, ``calc.timing.planner``, with the row's ``compile`` and ``loss``), its GPU (``predict.gpu_for``) and
its network's links, and within what the source's framework could run
when it ran (``framework``: a row whose framework had one ZeRO stage, such as Megatron-LM before its distributed
optimizer, is searched at that stage only; the row says why). A practitioner then could not pick a layout that
needs a later feature, so the ranking does not offer it either.

**How the layout is matched.** The planner keeps one entry per set of degrees (its fastest micro-batch and
interleaving), so the published layout's rank is 1 + the ranked entries strictly faster than its pinned step time;
a rank above ``top`` is reported as ``None`` (outside the top 3), and so is a published layout the unpinned search
cannot offer (a context-parallel degree above ``cp_limit`` at its sequence: it fails, and ``why`` says so).
``within`` is the pinned step time over the top pick's, less 1; a row *passes* at rank ≤ 3 or ``within`` ≤ 5%.
``why`` names, in breakdown terms (compute, bubble, exposed communication, recompute), what the top pick saves
against the published layout.

``python -m validation.published.rank`` prints the table.
"""

from __future__ import annotations

import functools
import json
import time
from typing import Any

from calc.errors import CalcError
from calc.memory.stacks import STACKS
from calc.timing.plan_space import cp_limit
from calc.timing.planner import plan
from validation.published.predict import gpu_for, load

__all__ = ["SLOW_S", "TARGET", "TOP", "WITHIN", "modelled", "rank_all", "rank_row", "share", "table"]

TOP: int = 3
"""Issue 21 Build 3: the published layout in the planner's top 3 ..."""

WITHIN: float = 0.05
"""... or within 5% of its top pick's step time."""

TARGET: float = 0.80
"""Issue 21 Build 3: the share of rows that should pass (in the top 3 or within 5%)."""

SLOW_S: float = 3.0
"""A plan slower than this (CPython seconds) is recorded as ``slow``."""

_DEGREES = ("dp", "tp", "pp", "cp", "ep")


def _kwargs(row: dict[str, Any]) -> dict[str, Any]:
    lay = row["layout"]
    kw: dict[str, Any] = {
        "gpus": row["gpus"],
        "gpu": gpu_for(row),
        "seq_len": lay["seq_len"],
        "global_batch": lay["global_batch"],
    }
    if row.get("predict", {}).get("dtype"):  # an FP8 run is planned in FP8 (its linear layers and weight copies)
        kw["dtype"] = row["predict"]["dtype"]
    net = row.get("predict", {}).get("network")
    if isinstance(net, dict):  # the links, and the pod and its oversubscription where the row names them
        kw |= {k: net[k] for k in ("intra", "inter", "pod_gpus", "oversubscription") if k in net}
    elif net:
        kw["intra"], kw["inter"] = net[0], net[1]
    stack = row.get("knobs", {}).get("stack")
    if stack in STACKS:
        kw["stack"] = stack
    stages = row.get("framework", {}).get("zero_stages", ())
    if len(stages) == 1:
        kw["zero_stage"] = stages[0]
    knobs = row.get("knobs", {})
    passed = ("overlap_param_gather", "tp_comm_overlap", "tp_dgrad_overlap", "p2p_overlap", "compile", "loss")
    kw |= {k: knobs[k] for k in passed if k in knobs}
    if "pipeline_rules" in row.get("framework", {}):
        kw["pipeline_rules"] = row["framework"]["pipeline_rules"]
    if row.get("framework", {}).get("gradient_accumulation") is False:
        kw["gradient_accumulation"] = False
    return kw


def _pins(row: dict[str, Any]) -> dict[str, Any]:
    """The published layout's degrees, and its micro-batch and interleaving where the source gives them.

    Examples:
        >>> row = {"layout": {"dp": 24, "tp": 8, "pp": 8, "interleave": 2}, "unpublished": ["interleave"]}
        >>> _pins(row)
        {'dp': 24, 'tp': 8, 'pp': 8, 'cp': 1, 'ep': 1}
    """
    lay, guessed = row["layout"], set(row.get("unpublished", ()))
    pins = {k: lay.get(k, 1) for k in _DEGREES}
    for k in ("micro_batch", "interleave"):
        if k in lay and k not in guessed:
            pins[k] = lay[k]
    return pins


def _parts(layout: dict[str, Any]) -> dict[str, float]:
    """The breakdown grouped: compute, bubble, exposed communication, straggler."""
    out = {"compute": 0.0, "bubble": 0.0, "communication": 0.0, "straggler": 0.0}
    for p in layout["time"]:
        name = p["part"]
        key = "compute" if name == "compute" else "bubble" if "bubble" in name else None
        key = key or ("straggler" if "straggler" in name else "communication")
        out[key] += p["seconds"]
    return out


def _why(top: dict[str, Any], pub: dict[str, Any]) -> str:
    """In words: what the top pick saves (and pays) against the published layout, biggest term first.

    Examples:
        >>> part = lambda c, b: [{"part": "compute", "seconds": c}, {"part": "pipeline bubble", "seconds": b}]
        >>> top = {"time": part(1.0, 0.1), "recompute": "none", "step_time_s": 1.1}
        >>> pub = {"time": part(1.3, 0.4), "recompute": "full", "step_time_s": 1.7}
        >>> _why(top, pub)
        'the pick saves 0.3 s of compute (recompute included), 0.3 s of pipeline bubble; recompute full → none'
    """
    a, b = _parts(top), _parts(pub)
    names = {
        "compute": "compute (recompute included)",
        "bubble": "pipeline bubble",
        "communication": "exposed communication",
        "straggler": "straggler allowance",
    }
    diffs = sorted(((b[k] - a[k], k) for k in a), reverse=True)
    small = 0.005 * pub["step_time_s"]
    saves = [f"{d:.3g} s of {names[k]}" for d, k in diffs if d >= small]
    pays = [f"{-d:.3g} s of {names[k]}" for d, k in diffs if d <= -small]
    text = "the pick saves " + ", ".join(saves) if saves else "no term differs by more than 0.5%"
    if pays:
        text += "; it pays " + ", ".join(pays)
    if top["recompute"] != pub["recompute"]:
        text += f"; recompute {pub['recompute']} → {top['recompute']}"
    return text


def _layout_text(x: dict[str, Any]) -> str:
    return (
        f"TP{x['tp']} PP{x['pp']} DP{x['dp']}"
        + (f" CP{x['cp']}" if x["cp"] > 1 else "")
        + (f" EP{x['ep']}" if x["ep"] > 1 else "")
        + (f" v{x['interleave']}" if x["interleave"] > 1 else "")
        + f" ZeRO-{x['zero_stage']} mb{x['micro_batch']} {x['recompute']}"
    )


@functools.cache
def _rank_cached(row_json: str) -> str:
    row = json.loads(row_json)
    kw = _kwargs(row)
    out: dict[str, Any] = {"id": row["id"], "refused": None}
    plan.cache_clear()  # plan_s times the search, not an answer kept from a row with the same arguments
    t0 = time.perf_counter()
    top = plan(row["model"], top=TOP, **kw)
    out["plan_s"] = time.perf_counter() - t0
    out["slow"] = out["plan_s"] > SLOW_S
    best = top["layouts"][0]
    out["pick"] = _layout_text(best)
    out["best_s"] = best["step_time_s"]
    try:
        pub = plan(row["model"], top=1, **kw, **_pins(row))["layouts"][0]
    except CalcError as err:
        out.update(refused=str(err), rank=None, within=None, passes=False, why="", published=None)
        return json.dumps(out)
    out["published"] = _layout_text(pub)
    out["published_s"] = pub["step_time_s"]
    faster = sum(1 for x in top["layouts"] if x["step_time_s"] < pub["step_time_s"])
    out["rank"] = faster + 1 if faster < TOP else None
    out["within"] = pub["step_time_s"] / best["step_time_s"] - 1
    out["passes"] = out["rank"] is not None or out["within"] <= WITHIN
    out["why"] = "" if out["rank"] == 1 else _why(best, pub)
    outside = _outside(pub, row["layout"]["seq_len"])
    if outside:  # the planner times it when pinned, but would never offer it: it does not pass
        out.update(rank=None, passes=False, why=outside)
    return json.dumps(out)


def _outside(pub: dict[str, Any], seq_len: int) -> str:
    """Why the unpinned planner cannot offer the published layout ``pub``, or ``""``.

    Examples:
        >>> _outside({"cp": 4}, 8192)
        'outside the search: the planner tries CP up to 2 at 8192 tokens (CP4)'
        >>> _outside({"cp": 2}, 4096)
        'outside the search: the planner tries no CP at 4096 tokens (CP2)'
        >>> _outside({"cp": 16}, 32768), _outside({"cp": 1}, 4096)
        ('', '')
    """
    if pub["cp"] > cp_limit(seq_len):
        most = cp_limit(seq_len)
        tried = f"CP up to {most}" if most > 1 else "no CP"
        return f"outside the search: the planner tries {tried} at {seq_len} tokens (CP{pub['cp']})"
    return ""


def rank_row(row: dict[str, Any]) -> dict[str, Any]:
    """One row's rank (cached by the row's contents).

    Returns:
        ``{"id", "rank", "within", "passes", "pick", "published", "best_s", "published_s", "why", "refused",
        "plan_s", "slow"}``; ``rank`` is 1-based, ``None`` outside the top 3.
    """
    return json.loads(_rank_cached(json.dumps(row, sort_keys=True)))


def modelled(rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """The throughput rows the engine models."""
    return [r for r in (load() if rows is None else rows) if r["kind"] == "throughput" and not r.get("not_modelled")]


def rank_all(rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """[`rank_row`][validation.published.rank.rank_row] for every modelled throughput row."""
    return [rank_row(r) for r in modelled(rows)]


def share(results: list[dict[str, Any]]) -> float:
    """The share of rows in the top 3 or within 5% of the top."""
    return sum(r["passes"] for r in results) / len(results) if results else 0.0


def table(results: list[dict[str, Any]]) -> str:
    """A plain-text table: rank, within, the pick, and why."""
    lines = [f"{'id':32} {'rank':>4} {'within':>7}  pick / why"]
    for r in results:
        rk = "-" if r["rank"] is None else str(r["rank"])
        w = "refused" if r["within"] is None else f"{r['within']:+.1%}"
        lines.append(f"{r['id']:32} {rk:>4} {w:>7}  {r['pick']} ({r['plan_s']:.2f} s) {r['why'] or r['refused'] or ''}")
    lines.append(f"share in top {TOP} or within {WITHIN:.0%}: {share(results):.0%} of {len(results)}")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table(rank_all()))
