"""The layout planner: every valid layout for a model on a cluster, the ones that fit, ranked by step time.

[`plan`][calc.timing.planner.plan] takes a model (a preset name or a pasted Hugging Face ``config.json``),
the cluster (GPU type and count, GPUs per node, links) and the run (sequence length, global batch,
bytes-per-parameter convention); each of ``dp tp pp cp ep``, the ZeRO stage, recomputation, the
micro-batch and interleaving is either pinned or searched (``None``).

**Search, pruned, not brute-forced.** Every layout a practitioner would consider is in the space; what is not
timed in full is pruned for a stated reason, counted in ``rejected_by_reason``.

1. Degrees: ``tp`` divides the heads and KV heads and stays inside the NVLink domain (``gpus_per_node``) unless
   ``tp`` is pinned or ``allow_tp_across_nodes``; ``pp`` is any divisor of the GPU count up to the layer count, with
   uneven stages where it does not divide the layers (``calc.memory.layout``'s split: Llama 3's 126 layers on 16
   stages are 7 + 8 × 14 + 7); ``cp`` up to 2 from 8K tokens and up to 16 from 32K (``2·cp`` divides the sequence;
   ``calc.timing.plan_space.CP_LIMITS``), ranked below 32K only where it saves more than ``short_cp_gain`` over the
   best layout without CP; ``dp`` follows from the GPU count and must divide the global batch; ``ep`` is carved from
   ``dp × cp`` and divides the experts ([`check_layout`][calc.memory.layout.check_layout] has the rules).
   Micro-batches: every divisor of the per-replica batch from 1 up to what can still fit (at most 64); interleaving:
   1 up to ``layers / pp`` chunks per stage when the micro-batches are a multiple of ``pp``; ZeRO 0 to 3;
   recomputation none, selective, full. The training ``stack`` sets what is searched and the knobs that are not:
   ``"megatron"`` (the default) as above; ``"torchtitan"`` ZeRO 0 (DDP, ``data_parallel_replicate_degree``) or 3
   (FSDP2, ``data_parallel_shard_degree``) and recomputation none, ``op`` (its per-op selective checkpointing) or
   full, with its loss and ``reshard_after_forward`` (``calc.memory.stacks``); ``"deepspeed"`` ZeRO 0 to 3 and
   recomputation none or full; ``loss``, ``loss_chunk_tokens``, ``reshard_after_forward`` and ``compile`` given
   explicitly win, and ``recompute`` may pin any mode a [`Layout`][calc.memory.layout.Layout] takes.
2. Each set of degrees (with its micro-batch and interleaving) gets a lower bound on its step time: its busiest
   stage's compute (its own stage layer counts) and bubble at the least recomputation whose memory floor fits at
   the most sharded ZeRO stage, no communication, times the straggler allowance. Sets are visited best bound
   first; once the bound passes the ``top``-th best kept time, the rest cannot enter and are skipped (branch and
   bound). Of one set of degrees only its fastest micro-batch and interleaving is kept. Pruning never changes the
   ranking: ``tests/test_planner.py`` checks the top against the same search with every bound at zero.
3. Within a set, recomputation is tried cheapest first (none, selective or op, full) and, at each, the lower ZeRO
   stage first: the first state that fits is kept, since the others only add time. A state whose step time, or
   whose compute and bubble alone, cannot enter the top is not sized.
4. Fit: the full per-GPU peak of [`calc.memory.overheads.peak_memory`][calc.memory.overheads.peak_memory] (as
   ``nvidia-smi`` shows it: tensors, allocator reserve, CUDA context, NCCL buffers), within
   ``1 - safety_margin`` of the GPU's memory; a need equal to it fits. An interleaved split that the memory
   rules do not take is sized as its 1F1B twin plus the interleaved schedule's extra in-flight activations.
5. Time: [`step_time`][calc.timing.steptime.step_time] (`calc.parallel.network` for the links, and
   `calc.timing.overlap` and `calc.timing.efficiency` for its knobs at their defaults).

Sequence parallelism is on whenever ``tp > 1``, FlashAttention is assumed, and dropout off (as in
current LLM training). The ranking is analytical: two layouts within 5% of each other can swap on a real
cluster, and the output says where. When nothing fits, the error on ``gpus`` says why in words and the fewest GPUs
(in whole nodes) on which the same search finds a layout.
"""

from __future__ import annotations

import copy
import math
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from calc.errors import CalcError
from calc.hardware import GPU
from calc.models.architecture import Architecture
from calc.timing.efficiency import FP8_MEMORY_PASSES, MAX_PASSES, STRAGGLER_PER_DOUBLING
from calc.timing.overlap import TP_OVERLAP
from calc.timing.plan_context import context, result
from calc.timing.plan_report import least_fits, no_layout, state_bytes, tp_across
from calc.timing.plan_search import _Ctx, bound, candidates, evaluate, rank
from calc.timing.plan_space import SHORT_CP_GAIN
from calc.units import parse_decimal, parse_positive_int

__all__ = ["FLIP_WITHIN", "PLAN_FIELDS", "RECENT_PLANS", "SAFETY_MARGIN", "plan", "plan_from_fields", "run_cli"]

SAFETY_MARGIN: float = 0.05
"""Default share of GPU memory left free: a layout fits when its peak is at most 95% of the memory.

The peak it is compared with is already what ``nvidia-smi`` shows (tensors, the caching allocator's reserve, the
CUDA context and NCCL's buffers: [`calc.memory.overheads`][calc.memory.overheads]), so the margin only covers
fragmentation spikes and what is not modelled; 10% on top of that refused runs that fit in practice (Llama 3 405B
on 16,384 H100s at 80 GB of the 85.5 GB an H100 exposes)."""

FLIP_WITHIN: float = 0.05
"""Two layouts whose predicted step times are within 5% are reported as a ranking that could flip."""

RECENT_PLANS: int = 8
"""How many of its latest answers [`plan`][calc.timing.planner.plan] keeps, by its arguments.

A plan is a search (tenths of a second to seconds in the browser); a reader who goes back to inputs already asked,
or back to the planner's page (the browser worker outlives instant navigation), gets the answer at once. A kept
answer is handed out as a deep copy, so what a caller does to it changes no later answer; an error is kept too.
Its last best layout is also the first one a new search posts (``_first_from_last``). ``plan.cache_clear()``
forgets both (a test or benchmark that times the search itself)."""

_recent: OrderedDict[tuple[tuple[str, str, Any], ...], dict[str, Any] | CalcError] = OrderedDict()
_incumbent: list[tuple[int, ...]] = []
"""The degrees, micro-batch and interleaving of the last plan's best layout (``_first_from_last``)."""


def plan(
    model: str | Architecture,
    *,
    gpus: int,
    seq_len: int,
    global_batch: int,
    gpu: str | GPU = "h100-sxm",
    gpus_per_node: int | None = None,
    intra: str | None = None,
    inter: str = "ib-ndr",
    nics_per_node: int | None = None,
    convention: str = "mixed-adam-16",
    dtype: str = "bf16",
    distributed_optimizer: bool = False,
    implementation: str = "megatron",
    dp: int | None = None,
    tp: int | None = None,
    pp: int | None = None,
    cp: int | None = None,
    ep: int | None = None,
    zero_stage: int | None = None,
    recompute: str | None = None,
    micro_batch: int | None = None,
    interleave: int | None = None,
    safety_margin: float = SAFETY_MARGIN,
    matmul_efficiency: float | None = None,
    allow_tp_across_nodes: bool = False,
    top: int = 5,
    attention_efficiency: float | None = None,
    tp_overlap: float = TP_OVERLAP,
    overlap_param_gather: bool = False,
    straggler_per_doubling: float = STRAGGLER_PER_DOUBLING,
    tp_comm_overlap: bool = False,
    tp_dgrad_overlap: bool | None = None,
    p2p_overlap: bool | None = None,
    fp8_memory_passes: float = FP8_MEMORY_PASSES,
    pod_gpus: int | None = None,
    oversubscription: float = 1.0,
    stack: str = "megatron",
    loss: str | None = None,
    loss_chunk_tokens: int | None = None,
    reshard_after_forward: bool | None = None,
    compile: bool = False,
    gradient_accumulation: bool = True,
    pipeline_rules: str = "current",
    short_cp_gain: float = SHORT_CP_GAIN,
    on_first: Callable[[list[dict[str, Any]]], object] | None = None,
) -> dict[str, Any]:
    """Search the layouts of ``model`` on ``gpus`` GPUs; return the best that fit and the best rejected.

    Pinned arguments restrict the search (module docstring); ``None`` searches. ``gradient_accumulation=False``: each
    rank's batch is one micro-batch outside pipeline parallelism (torchtitan before pytorch/torchtitan#1238).
    ``pipeline_rules``: ``calc.timing.plan_space.PIPELINE_RULES`` (``"megatron-2021"``: even stages,
    interleaving on more than 2); ``short_cp_gain``: ``calc.timing.plan_space.SHORT_CP_GAIN``, what CP
    must save below 32K tokens. ``dtype="fp8"``: linear layers at the FP8 peak, memory as BF16 (FP8 weights stand in
    for the BF16 ones). ``matmul_efficiency`` to ``fp8_memory_passes``: [`step_time`][calc.timing.steptime.step_time]'s;
    ``pod_gpus``, ``oversubscription``: the network's; ``stack`` to ``compile``: the Layout's; ``on_first(kept)``: once.

    Returns:
        ``{"layouts", "rejected", "rejected_by_reason", "searched", "candidates", "evaluated", "assumptions"}``,
        best first (``searched``: layouts in the space, pruned ones included; ``rejected_by_reason``:
        ``{"reason", "count"}`` per pruned or rejected group). Each layout has the integer degrees
        ``dp tp pp cp ep``, ``zero_stage``, ``micro_batch``, ``recompute``, ``interleave``, ``stage_layers``,
        ``memory_bytes`` (int), ``step_time_s``, ``tflops_per_gpu``, ``mfu``, ``hfu``, ``tokens_per_s``,
        ``memory`` and ``time`` breakdowns and ``flip``; each rejected entry the degrees and ``reason``.

    Raises:
        CalcError: Naming the field, for bad input or when nothing can be laid out.

    Examples:
        >>> r = plan("llama3-8b", gpus=64, seq_len=8192, global_batch=512)
        >>> best = r["layouts"][0]
        >>> best["dp"] * best["tp"] * best["pp"] * best["cp"], best["tp"] <= 8
        (64, True)
        >>> titan = plan("llama3-8b", gpus=8, seq_len=8192, global_batch=16, stack="torchtitan", tp=1, pp=1)
        >>> {x["recompute"] for x in titan["layouts"]} <= {"none", "op", "full"}, titan["layouts"][0]["zero_stage"]
        (True, 3)
    """
    return _remembered(dict(locals()))


def _remembered(a: dict[str, Any]) -> dict[str, Any]:
    """``_plan(a, advise=True)``, or a copy of its answer to the same arguments among the last ``RECENT_PLANS``
    (``on_first`` is not one: an answer kept is whole at once)."""
    key = tuple(sorted((k, type(v).__name__, v) for k, v in a.items() if k != "on_first"))
    try:
        hash(key)
    except TypeError:  # an argument that cannot be hashed is left to plan's own checks
        return _plan(a, advise=True)
    if key in _recent:
        _recent.move_to_end(key)
        kept = _recent[key]
        if isinstance(kept, CalcError):
            raise kept.with_traceback(None)
        result = copy.deepcopy(kept)
    else:
        try:
            result = _plan(a, advise=True)
        except CalcError as err:
            _keep(key, err)
            raise
        _keep(key, copy.deepcopy(result))
    best = result["layouts"][0]
    _incumbent[:] = [tuple(best[k] for k in ("dp", "tp", "pp", "cp", "ep", "micro_batch", "interleave"))]
    return result


def _keep(key: tuple[tuple[str, str, Any], ...], answer: dict[str, Any] | CalcError) -> None:
    _recent[key] = answer
    while len(_recent) > RECENT_PLANS:
        _recent.popitem(last=False)


def _forget() -> None:
    """``plan.cache_clear()``: the kept answers and the last best layout go."""
    _recent.clear()
    _incumbent.clear()


plan.cache_clear = _forget  # type: ignore[attr-defined]


def _first_from_last(x: _Ctx, cands: list[Any]) -> None:
    """Post the last plan's best layout first, when it fits here: a reader's edit usually leaves it a good layout,
    and it is sized before the bounds of every candidate are (tens of ms in the browser). Where the GPU count or the
    batch changed, the nearest: the same tensor, pipeline and context parallelism, the same micro-batch and
    interleaving where this search has them. The search then runs as it would have (its result does not depend on
    which plan came before); only the first fragment comes sooner."""
    if x.on_first is None or not _incumbent:
        return
    dp, tp, pp, cp, *rest = _incumbent[0]
    near = [c for c in cands if (c.tp, c.pp, c.cp) == (tp, pp, cp)]  # the same model parallelism
    if not near:
        return
    same = tuple(rest)  # ep, micro-batch, interleaving
    # the last layout itself, else the same ep, micro-batch and interleaving at another dp, else the first
    cand = min(near, key=lambda c: ((c.dp, c.ep, c.mb, c.v) != (dp, *same), (c.ep, c.mb, c.v) != same))
    try:
        row = evaluate(x, cand, [])[0]
    except CalcError:  # whatever this layout cannot do, the search finds (or says) on its own
        row = None
    if row is not None:
        first, x.on_first = x.on_first, None
        first([row])


_FEWEST_TRIES = 32
"""How many larger GPU counts a plan with no layout tries for the fewest that hold one (whole nodes from the first
count whose fully sharded model states fit)."""


def _plan(a: dict[str, Any], *, advise: bool) -> dict[str, Any]:
    """[`plan`][calc.timing.planner.plan] of its arguments ``a``; with ``advise``, an error for no layout names the
    fewest GPUs that hold one (``_fewest_gpus``)."""
    x = context(a["model"], a)
    cands, searched = candidates(x)
    kept: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    evaluated = 0
    if cands:
        _first_from_last(x, cands)
        bound(x, cands)
        kept, rejected, evaluated = rank(x, cands, a["top"], FLIP_WITHIN)
    if not kept:
        raise no_layout(x, rejected, *(_fewest_gpus(a, x) if advise else (None, 0)))
    if not a["allow_tp_across_nodes"] and not x.pins["tp"]:
        tp_across(x, kept, rejected)
    rejected.sort(key=lambda r: r.pop("bound_s", 0.0))
    return result(x, kept, rejected, (searched, len(cands), evaluated, a["top"]), a["implementation"])


def _fewest_gpus(a: dict[str, Any], x: _Ctx) -> tuple[int | None, int]:
    """The fewest GPUs above ``x.n`` on which the same plan finds a layout that fits, and how many counts were tried.

    No count below ``params × bytes per parameter / usable memory`` can hold the model states even at ZeRO-3
    (Rajbhandari et al. 2020, Sec. 5), so the search starts there (or at ``x.n + 1``): every count below the
    node size, then whole nodes, ``_FEWEST_TRIES`` counts at most. A count is searched in full only once some set of
    its degrees fits at its least memory (``least_fits``)."""
    first = max(x.n + 1, state_bytes(x) // max(x.capacity, 1))
    below = list(range(first, x.gpn))
    start = -(-max(first, x.gpn) // x.gpn)
    counts = [*below, *(k * x.gpn for k in range(start, start + _FEWEST_TRIES))]
    counts = [m for m in counts if m <= 1 << 20][:_FEWEST_TRIES]
    for m in counts:
        try:
            y = context(a["model"], {**a, "gpus": m, "on_first": None})
            if not least_fits(y, candidates(y)[0]):
                continue  # the cheap test: nothing fits at its least memory
            _plan({**a, "gpus": m, "top": 1, "on_first": None}, advise=False)
        except CalcError:
            continue
        return m, len(counts)
    return None, len(counts)


PLAN_FIELDS: tuple[str, ...] = (
    "gpus",
    "gpu",
    "gpus_per_node",
    "intra",
    "inter",
    "nics_per_node",
    "seq_len",
    "global_batch",
    "convention",
    "dtype",
    "implementation",
    "dp",
    "tp",
    "pp",
    "cp",
    "ep",
    "zero_stage",
    "recompute",
    "micro_batch",
    "interleave",
    "safety_margin",
    "matmul_efficiency",
    "allow_tp_across_nodes",
    "top",
    "attention_efficiency",
    "tp_overlap",
    "overlap_param_gather",
    "straggler_per_doubling",
    "tp_comm_overlap",
    "tp_dgrad_overlap",
    "p2p_overlap",
    "fp8_memory_passes",
    "pod_gpus",
    "oversubscription",
    "stack",
    "loss",
    "loss_chunk_tokens",
    "reshard_after_forward",
    "compile",
    "gradient_accumulation",
    "pipeline_rules",
    "short_cp_gain",
)
"""The ``field=value`` inputs [`plan_from_fields`][calc.timing.planner.plan_from_fields] accepts (blank = search)."""

_INT_FIELDS = {"gpus", "gpus_per_node", "nics_per_node", "seq_len", "global_batch", "dp", "tp", "pp", "cp", "ep"}
_INT_FIELDS |= {"zero_stage", "micro_batch", "interleave", "top", "pod_gpus", "loss_chunk_tokens"}
_BOOL_FIELDS = ("allow_tp_across_nodes", "overlap_param_gather", "reshard_after_forward", "compile")
_BOOL_FIELDS += ("gradient_accumulation", "tp_comm_overlap", "tp_dgrad_overlap", "p2p_overlap")
_SHARE_FIELDS = {"safety_margin", "matmul_efficiency", "attention_efficiency", "tp_overlap", "straggler_per_doubling"}
_SHARE_FIELDS.add("short_cp_gain")


def plan_from_fields(
    model: str | Architecture, fields: dict[str, str], on_first: Callable[[list[dict[str, Any]]], object] | None = None
) -> dict[str, Any]:
    """[`plan`][calc.timing.planner.plan] from ``field=value`` strings (the CLI and the calculator call this).

    Blank values search; unknown fields raise naming the field; ``on_first`` is ``plan``'s.

    Examples:
        >>> r = plan_from_fields("llama3-8b", {"gpus": "16", "seq_len": "4096", "global_batch": "64", "tp": "2"})
        >>> {x["tp"] for x in r["layouts"]}
        {2}
        >>> plan_from_fields("llama3-8b", {"gpus": "16", "tpp": "2"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: tpp is not an input of plan ...
    """
    kw: dict[str, Any] = {}
    for key, raw in fields.items():
        if key not in PLAN_FIELDS:
            raise CalcError(key, "is not an input of plan (inputs: gpus, gpu, gpus_per_node, intra, inter, ...)", raw)
        text = str(raw).strip()
        if text == "":
            continue
        if key in _INT_FIELDS:
            kw[key] = parse_positive_int(text, key, minimum=0 if key == "zero_stage" else 1, maximum=1 << 30)
        elif key in _BOOL_FIELDS:
            if text.lower() not in ("0", "1", "true", "false", "yes", "no"):
                raise CalcError(key, "must be true or false (1 or 0)", text)
            kw[key] = text.lower() in ("1", "true", "yes")
        elif key == "fp8_memory_passes":
            rule = f"must be a number from 0 to {MAX_PASSES}"
            kw[key] = float(parse_decimal(text, key, rule, minimum=0, maximum=MAX_PASSES))
        elif key in _SHARE_FIELDS or key == "oversubscription":
            try:
                kw[key] = float(text)
            except ValueError:
                raise CalcError(key, "must be a number", text) from None
            top = math.inf if key == "oversubscription" else 1
            if not math.isfinite(kw[key]) or not (1 if key == "oversubscription" else 0) <= kw[key] <= top:
                raise CalcError(key, "must be a number from 0 to 1" if top == 1 else "must be at least 1", text)
        else:
            kw[key] = text
    for need in ("gpus", "seq_len", "global_batch"):
        if need not in kw:
            raise CalcError(need, "is required", "")
    for key in ("matmul_efficiency", "attention_efficiency"):
        if key in kw and kw[key] <= 0:
            raise CalcError(key, "must be above 0", fields[key])
    return plan(model, **kw, on_first=on_first)


def run_cli(argv: list[str]) -> int:
    """``python -m calc plan model-or-config field=value … [--json]``: print the plan; 2 on bad input.

    ``model-or-config`` is a preset name, a path to a ``config.json`` or the JSON text itself. With
    ``--json`` it prints ``{"layouts": [...], "rejected": [...]}`` (best first); otherwise one line per
    layout. Bad input prints one line naming the field to stderr and returns 2.

    Examples:
        >>> run_cli(["llama3-8b", "gpus=8", "seq_len=4096"])  # stderr: error: global_batch is required (got '')
        2
    """
    import json
    import sys
    from pathlib import Path

    want_json = "--json" in argv
    args = [a for a in argv if a != "--json"]
    try:
        if not args or "=" in args[0]:
            raise CalcError("model", "must come first: a preset name or a config.json", args[0] if args else "")
        model = args[0]
        if not model.lstrip().startswith("{") and model.endswith(".json"):
            try:
                model = Path(model).read_text(encoding="utf-8")
            except OSError:
                raise CalcError("model", "is not a readable config.json file", args[0]) from None
        fields: dict[str, str] = {}
        for item in args[1:]:
            key, sep, value = item.partition("=")
            if not sep:
                raise CalcError("inputs", "are field=value pairs", item)
            fields[key] = value
        result = plan_from_fields(model, fields)
    except CalcError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if want_json:
        print(json.dumps({"layouts": result["layouts"], "rejected": result["rejected"]}, indent=2))
        return 0
    for i, x in enumerate(result["layouts"], 1):
        print(
            f"{i}. dp={x['dp']} tp={x['tp']} pp={x['pp']} cp={x['cp']} ep={x['ep']} zero={x['zero_stage']} "
            f"mb={x['micro_batch']} recompute={x['recompute']} v={x['interleave']}: {x['step_time_s']:.3g} s/step, "
            f"{x['tflops_per_gpu']:.0f} TFLOP/s per GPU, MFU {x['mfu']:.1%}, {x['memory_bytes'] / 1e9:.1f} GB"
            + (f" ({x['flip']})" if x.get("flip") else "")
        )
    for x in result["rejected"]:
        print(f"rejected: dp={x['dp']} tp={x['tp']} pp={x['pp']}: {x['reason']}")
    return 0
