"""The layout planner: every valid layout for a model on a cluster, the ones that fit, ranked by step time.

[`plan`][calc.timing.planner.plan] takes a model (a preset name or a pasted Hugging Face ``config.json``),
the cluster (GPU type and count, GPUs per node, links) and the run (sequence length, global batch,
bytes-per-parameter convention); each of ``dp tp pp cp ep``, the ZeRO stage, recomputation, the
micro-batch and interleaving is either pinned or searched (``None``).

**Search, pruned, not brute-forced.**

1. Degrees: ``tp`` divides the heads and KV heads and stays inside the NVLink domain
   (``gpus_per_node``) unless ``tp`` is pinned or ``allow_tp_across_nodes``; ``pp`` divides the
   layers; ``cp`` is searched only from 32K tokens on (``2·cp`` divides the sequence); ``dp``
   follows from the GPU count and must divide the global batch; ``ep`` is carved from ``dp × cp``
   and divides the experts ([`check_layout`][calc.memory.layout.check_layout] has the rules).
2. Each set of degrees (with its micro-batch and interleaving) gets a lower bound on its step
   time: the prediction for its cheapest state (the lowest ZeRO stage searched, no recomputation),
   which none of its variants beats. Sets are visited best bound first; once the bound passes the
   ``top``-th best kept time, the rest cannot enter and are skipped (branch and bound).
3. Within a set, recomputation is tried cheapest first (none, selective, full) and, at each, the
   lower ZeRO stage first: the first state that fits is kept, since the others only add time.
4. Fit: the full per-GPU peak of [`calc.memory.overheads.peak_memory`][calc.memory.overheads.peak_memory] (as
   ``nvidia-smi`` shows it: tensors, allocator reserve, CUDA context, NCCL buffers) on the first and
   last stages, within ``1 - safety_margin`` of the GPU's memory.
5. Time: [`step_time`][calc.timing.steptime.step_time] (`calc.parallel.network` for the links).

Sequence parallelism is on whenever ``tp > 1``, FlashAttention is assumed, and dropout off (as in
current LLM training); ZeRO stages 1 and 3 are searched (2 is never faster than 1 here and 0 never
smaller). The ranking is analytical: two layouts within 5% of each other can swap on a real cluster,
and the output says where.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any

from calc.errors import CalcError
from calc.hardware import GPU
from calc.hardware import gpu as gpu_preset
from calc.memory.layout import Layout, check_layout, stage_memory
from calc.memory.model_state import CONVENTIONS
from calc.memory.overheads import peak_memory
from calc.models.architecture import Architecture
from calc.models.hf_config import parse_config_json
from calc.models.presets import PRESETS, preset
from calc.parallel.interconnects import SCALE_UP_FOR_GPU, interconnect
from calc.parallel.network import Network
from calc.timing.steptime import MATMUL_EFFICIENCY, _elementwise_bytes, step_time
from calc.units import parse_positive_int

__all__ = ["FLIP_WITHIN", "PLAN_FIELDS", "SAFETY_MARGIN", "plan", "plan_from_fields", "run_cli"]

SAFETY_MARGIN: float = 0.1
"""Default share of GPU memory left free: a layout fits when its peak is at most 90% of the memory."""

FLIP_WITHIN: float = 0.05
"""Two layouts whose predicted step times are within 5% are reported as a ranking that could flip."""

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
    matmul_efficiency: float = MATMUL_EFFICIENCY,
    allow_tp_across_nodes: bool = False,
    top: int = 5,
) -> dict[str, Any]:
    """Search the layouts of ``model`` on ``gpus`` GPUs; return the best that fit and the best rejected.

    See the module docstring for the search. Pinned arguments restrict it; ``None`` searches.

    Returns:
        ``{"layouts": [...], "rejected": [...], "searched": int, "evaluated": int, "assumptions": [...]}``,
        best first. Each layout has the integer degrees ``dp tp pp cp ep``, ``zero_stage``,
        ``micro_batch``, ``recompute``, ``interleave``, ``memory_bytes`` (int), ``step_time_s``,
        ``tflops_per_gpu``, ``mfu``, ``hfu``, ``tokens_per_s``, ``memory`` and ``time`` breakdowns and
        ``flip`` (a sentence, or ``""``). Each rejected entry has the degrees and ``reason``.

    Raises:
        CalcError: Naming the field, for bad input or when nothing can be laid out.

    Examples:
        >>> r = plan("llama3-8b", gpus=64, seq_len=8192, global_batch=512)
        >>> best = r["layouts"][0]
        >>> best["dp"] * best["tp"] * best["pp"] * best["cp"], best["tp"] <= 8
        (64, True)
    """
    arch = _model(model)
    n = parse_positive_int(gpus, "gpus", maximum=1 << 20)
    s = parse_positive_int(seq_len, "seq_len", maximum=1 << 24)
    batch = parse_positive_int(global_batch, "global_batch", maximum=1 << 30)
    g = gpu if isinstance(gpu, GPU) else gpu_preset(gpu)
    gpn = parse_positive_int(gpus_per_node or g.gpus_per_node, "gpus_per_node", maximum=1024)
    if convention not in CONVENTIONS:
        raise CalcError("convention", f"must be one of {', '.join(sorted(CONVENTIONS))}", convention)
    Layout(implementation=implementation)  # raises, naming the field, for an unknown implementation
    net = Network(
        interconnect(intra or SCALE_UP_FOR_GPU.get(g.name, "nvlink4")),
        interconnect(inter),
        gpus_per_node=gpn,
        nics_per_node=nics_per_node,
    )
    if not 0 <= float(safety_margin) < 1:
        raise CalcError("safety_margin", "must be at least 0 and below 1", safety_margin)
    capacity = int(g.memory_bytes * (1 - float(safety_margin)))
    pins = {"dp": dp, "tp": tp, "pp": pp, "cp": cp, "ep": ep, "micro_batch": micro_batch, "interleave": interleave}
    for k, val in pins.items():
        if val is not None:
            pins[k] = parse_positive_int(val, k, maximum=n if k in ("dp", "tp", "pp", "cp", "ep") else 1 << 20)
    if zero_stage is not None:
        zero_stage = parse_positive_int(zero_stage, "zero_stage", minimum=0, maximum=3)
    if recompute is not None and recompute not in _RECOMPUTE:
        raise CalcError("recompute", f"must be one of {', '.join(_RECOMPUTE)}", recompute)
    for k in ("tp", "pp", "cp", "dp"):
        if pins[k] is not None and n % pins[k]:
            raise CalcError(k, f"must divide gpus (gpus={n})", pins[k], code="not-divisible")

    divs = _divisors(n)
    tps = [pins["tp"]] if pins["tp"] else [t for t in divs if t <= gpn or allow_tp_across_nodes]
    tps = [t for t in tps if arch.num_heads % t == 0 and (arch.uses_mla or arch.num_kv_heads % t == 0)]
    pps = [pins["pp"]] if pins["pp"] else [p for p in divs if arch.num_layers % p == 0]
    if pins["cp"]:
        cps = [pins["cp"]]
    else:
        cps = [c for c in divs if c == 1 or (s >= 32768 and c <= 16 and s % (2 * c) == 0)]
    zeros = [zero_stage] if zero_stage is not None else [1, 3]
    recs = [recompute] if recompute else list(_RECOMPUTE)

    cands: list[_Candidate] = []
    searched = 0
    for t in tps:
        for p in pps:
            for c in cps:
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
                for e in eps:
                    if (d * c) % e:
                        continue
                    for b in mbs:
                        if per_replica % b:
                            continue
                        m = per_replica // b
                        vs = [pins["interleave"]] if pins["interleave"] else [1]
                        if not pins["interleave"] and p > 1 and arch.num_layers % (2 * p) == 0 and m % p == 0:
                            vs.append(2)
                        for v in vs:
                            searched += len(zeros) * len(recs)
                            cands.append(_Candidate(t, p, c, d, e, zeros[0], b, v, 0.0))
    if not cands:
        raise CalcError("gpus", "admits no layout for this model with the pinned degrees", n)
    # Bound: each degree set's step time with its cheapest state (fewest ZeRO gathers, no recomputation),
    # which no variant of it beats; visit best bound first and stop once it passes the top-th kept time.
    for cand in cands:
        try:
            cheapest = _layout(cand, zeros[0], recs[0], batch, s, convention, distributed_optimizer, implementation)
            cand.bound = step_time(
                arch, cheapest, gpu=g, network=net, matmul_efficiency=matmul_efficiency, check=False
            ).step_time_s
        except CalcError:
            cand.bound = math.inf
    cands.sort(key=lambda x: x.bound)

    kept: list[dict[str, Any]] = []
    rejected: list[dict[str, Any]] = []
    evaluated = 0
    for cand in cands:
        if len(kept) >= top and cand.bound >= kept[top - 1]["step_time_s"]:
            break
        row = {"dp": cand.dp, "tp": cand.tp, "pp": cand.pp, "cp": cand.cp, "ep": cand.ep}
        row |= {"micro_batch": cand.mb, "interleave": cand.v}
        best_fit = None
        nearest = None
        least: tuple[int, str, int] | None = None
        for r in recs:
            for z in zeros:
                try:
                    lay = _layout(cand, z, r, batch, s, convention, distributed_optimizer, implementation)
                    check_layout(arch, lay)
                except CalcError as err:
                    rejected.append(
                        {**row, "zero_stage": z, "recompute": r, "reason": f"invalid: {err}", "bound_s": cand.bound}
                    )
                    continue
                floor = _memory_floor(arch, cand, z, r, s, batch, convention, distributed_optimizer)
                if floor > capacity:
                    if least is None or floor < least[2]:
                        least = (z, r, floor)
                    continue  # what the GPU must hold at the least already overflows
                try:
                    tensors = stage_memory(arch, lay, 0).total
                except CalcError:
                    tensors = 0
                if tensors > capacity:  # stage 0's tensors alone, before any overhead, already overflow
                    if least is None or tensors < least[2]:
                        least = (z, r, tensors)
                    continue
                evaluated += 1
                try:
                    peak = peak_memory(arch, lay)
                except CalcError as err:  # e.g. a Hugging Face profile with tp > 1
                    why = {"zero_stage": z, "recompute": r, "reason": f"invalid: {err}", "bound_s": cand.bound}
                    rejected.append({**row, **why})
                    continue
                if peak.nvidia_smi_bytes > capacity:
                    if nearest is None or peak.nvidia_smi_bytes < nearest[2].nvidia_smi_bytes:
                        nearest = (z, r, peak)
                    continue
                st = step_time(arch, lay, gpu=g, network=net, matmul_efficiency=matmul_efficiency, check=False)
                if best_fit is None or st.step_time_s < best_fit[1].step_time_s:
                    best_fit = (lay, st, peak)
                break  # a higher ZeRO stage at this recomputation is only slower
            if best_fit is not None:
                break  # more recomputation is only slower
        if best_fit is None:
            if nearest is None and least is not None:
                z, r, floor = least
                rejected.append(
                    {
                        **row,
                        "zero_stage": z,
                        "recompute": r,
                        "memory_bytes": floor,
                        "bound_s": cand.bound,
                        "reason": (
                            f"does not fit: stage 0 needs at least {_gb(floor)} of {_gb(g.memory_bytes)} "
                            f"before any overhead, even with ZeRO-{z} and {r} recomputation"
                        ),
                    }
                )
            if nearest is not None:
                z, r, peak = nearest
                rejected.append(
                    {
                        **row,
                        "zero_stage": z,
                        "recompute": r,
                        "memory_bytes": peak.nvidia_smi_bytes,
                        "bound_s": cand.bound,
                        "reason": (
                            f"does not fit: stage {peak.stage} needs {_gb(peak.nvidia_smi_bytes)} of "
                            f"{_gb(g.memory_bytes)} ({_gb(capacity)} with the {float(safety_margin):.0%} margin), "
                            f"even with ZeRO-{z} and {r} recomputation"
                        ),
                    }
                )
            continue
        lay, st, peak = best_fit
        kept.append(
            {
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
                    "capacity_bytes": capacity,
                },
                "time": st.as_dict()["breakdown"],
            }
        )
        kept.sort(key=lambda x: x["step_time_s"])
        del kept[top:]
    if not kept:
        reason = rejected[0]["reason"] if rejected else "no candidate"
        raise CalcError("gpus", f"admit no layout that fits: the nearest {reason}", n)
    for a, b in itertools.pairwise(kept):
        gap = b["step_time_s"] / a["step_time_s"] - 1
        a["flip"] = f"within {gap:.1%} of the next: the ranking could flip" if gap < FLIP_WITHIN else ""
    kept[-1].setdefault("flip", "")
    best = kept[0]
    if not allow_tp_across_nodes and not pins["tp"]:
        _tp_across(arch, kept, rejected, n, batch, s, g, gpn, net, convention, distributed_optimizer, matmul_efficiency)
    rejected.sort(key=lambda x: x.get("bound_s", 0.0))
    for r in rejected:
        r.pop("bound_s", None)
    return {
        "layouts": kept,
        "rejected": rejected[:top],
        "searched": searched,
        "evaluated": evaluated,
        "best_step_time_s": best["step_time_s"],
        "assumptions": [
            (
                f"fit: nvidia-smi peak (calc.memory.overheads) within {1 - float(safety_margin):.0%} "
                f"of {_gb(g.memory_bytes)}"
            ),
            (
                "sequence parallelism with tp > 1, FlashAttention, no dropout; ZeRO stages 1 and 3 searched; "
                f"activations saved as {implementation} does"
            ),
            f"matmuls at {float(matmul_efficiency):.0%} of peak; links {net.intra.name} and {net.inter.name}",  # type: ignore[union-attr]
        ],
    }


def _tp_across(
    arch: Architecture,
    kept: list[dict[str, Any]],
    rejected: list[dict[str, Any]],
    n: int,
    batch: int,
    s: int,
    g: GPU,
    gpn: int,
    net: Network,
    convention: str,
    dist: bool,
    eff: float,
) -> None:
    """Say what the best layout would cost with TP doubled past the node (the 3D page's warning)."""
    best = kept[0]
    t2 = 2 * gpn
    if n % (t2 * best["pp"] * best["cp"]) or arch.num_heads % t2 or (not arch.uses_mla and arch.num_kv_heads % t2):
        return
    d = n // (t2 * best["pp"] * best["cp"])
    if batch % (d * best["micro_batch"]) or (d * best["cp"]) % best["ep"]:
        return
    try:
        lay = Layout(
            dp=d,
            tp=t2,
            pp=best["pp"],
            cp=best["cp"],
            ep=best["ep"],
            zero_stage=best["zero_stage"],
            micro_batch=best["micro_batch"],
            global_batch=batch,
            seq_len=s,
            sequence_parallel=True,
            recompute=best["recompute"],
            flash_attention=True,
            dropout=False,
            convention=convention,
            distributed_optimizer=dist,
            interleave=best["interleave"] if (batch // (d * best["micro_batch"])) % best["pp"] == 0 else 1,
        )
        check_layout(arch, lay)
    except CalcError:
        return
    st = step_time(arch, lay, gpu=g, network=net, matmul_efficiency=eff, check=False)
    more = st.step_time_s / best["step_time_s"] - 1
    rejected.append(
        {
            "dp": d,
            "tp": t2,
            "pp": best["pp"],
            "cp": best["cp"],
            "ep": best["ep"],
            "zero_stage": best["zero_stage"],
            "micro_batch": best["micro_batch"],
            "recompute": best["recompute"],
            "interleave": lay.interleave,
            "step_time_s": st.step_time_s,
            "bound_s": -1.0,
            "reason": (
                f"TP={t2} spans {t2 // gpn} nodes: its all-gathers run over "
                f"{net.inter.label} and add {more:.0%} to the step"  # type: ignore[union-attr]
            ),
        }
    )


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
)
"""The ``field=value`` inputs [`plan_from_fields`][calc.timing.planner.plan_from_fields] accepts (blank = search)."""

_INT_FIELDS = {"gpus", "gpus_per_node", "nics_per_node", "seq_len", "global_batch", "dp", "tp", "pp", "cp", "ep"}
_INT_FIELDS |= {"zero_stage", "micro_batch", "interleave", "top"}


def plan_from_fields(model: str | Architecture, fields: dict[str, str]) -> dict[str, Any]:
    """[`plan`][calc.timing.planner.plan] from ``field=value`` strings (the CLI and the calculator call this).

    Blank values search; unknown fields raise naming the field.

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
        elif key == "allow_tp_across_nodes":
            if text.lower() not in ("0", "1", "true", "false", "yes", "no"):
                raise CalcError(key, "must be true or false (1 or 0)", text)
            kw[key] = text.lower() in ("1", "true", "yes")
        elif key in ("safety_margin", "matmul_efficiency"):
            try:
                kw[key] = float(text)
            except ValueError:
                raise CalcError(key, "must be a number", text) from None
            if not math.isfinite(kw[key]) or not 0 <= kw[key] <= 1:
                raise CalcError(key, "must be a number from 0 to 1", text)
        else:
            kw[key] = text
    for need in ("gpus", "seq_len", "global_batch"):
        if need not in kw:
            raise CalcError(need, "is required", "")
    if "matmul_efficiency" in kw and kw["matmul_efficiency"] <= 0:
        raise CalcError("matmul_efficiency", "must be above 0", fields["matmul_efficiency"])
    return plan(model, **kw)


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
