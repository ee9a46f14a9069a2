"""The planner's inputs checked once, and its answer as plain data ([`calc.timing.planner.plan`][]'s two ends).

[`context`][calc.timing.plan_context.context] parses ``plan``'s keyword arguments into the search's context
(``calc.timing.plan_search._Ctx``), raising a [`CalcError`][calc.errors.CalcError] that names the field;
[`result`][calc.timing.plan_context.result] shapes the ranked layouts with their assumptions in words;
[`step_knobs`][calc.timing.plan_context.step_knobs] picks the [`step_time`][calc.timing.steptime.step_time]
knobs a plan passes through.
"""

from __future__ import annotations

from typing import Any

from calc.errors import CalcError
from calc.hardware import GPU
from calc.hardware import gpu as gpu_preset
from calc.memory.activation_layer import HF_RECOMPUTE_MODES
from calc.memory.activations import LAYOUT_RECOMPUTE_MODES
from calc.memory.layout import Layout
from calc.memory.model_state import CONVENTIONS
from calc.models.architecture import Architecture
from calc.parallel.interconnects import SCALE_UP_FOR_GPU, interconnect
from calc.parallel.network import Network
from calc.timing.efficiency import FP8_MEMORY_PASSES
from calc.timing.plan_report import by_reason
from calc.timing.plan_search import _STACK_SEARCH, _Ctx, _gb, _model
from calc.timing.plan_space import PIPELINE_RULES, cp_limit, share_below_one, short_cp
from calc.timing.steptime import _bool_arg, _passes
from calc.units import parse_positive_int

__all__ = ["PLAN_DTYPES", "context", "plan_dtype", "result", "step_knobs"]


def _stack_assumption(x: _Ctx) -> list[str]:
    """The assumption line a non-default stack or stack knob adds (none for Megatron's defaults)."""
    if x.stack == "megatron" and all(v in (None, False) for v in x.stack_knobs.values()):
        return []
    probe = Layout(pp=2, **x.stack_knobs, stack=x.stack)  # the loss and resharding the stack gives under PP
    reshard = "as the stack sets it" if x.stack_knobs["reshard_after_forward"] is None else "as given"
    line = (
        f"stack {x.stack}: ZeRO {', '.join(map(str, x.zeros))}, recomputation {', '.join(x.recs)}, loss "
        f"{probe.loss_kind}; FSDP reshards after forward {reshard} (torchtitan: not under pipeline parallelism)"
    )
    return [line]


def result(
    x: _Ctx,
    kept: list[dict[str, Any]],
    rejected: list[dict[str, Any]],
    counts: tuple[int, int, int, int],
    implementation: str,
) -> dict[str, Any]:
    """[`plan`][calc.timing.planner.plan]'s answer as plain data (``counts``: searched, candidates, evaluated, top)."""
    searched, n_cands, evaluated, top = counts
    eff = kept[0]["time"][0]["why"].split("matmuls at ")[1].split(" ")[0]
    return {
        "layouts": kept,
        "rejected": rejected[:top],
        "rejected_by_reason": by_reason(x, rejected),
        "searched": searched,
        "candidates": n_cands,
        "evaluated": evaluated,
        "best_step_time_s": kept[0]["step_time_s"],
        "assumptions": [
            f"fit: nvidia-smi peak (calc.memory.overheads) within {1 - x.margin:.0%} of {_gb(x.g.memory_bytes)}",
            (
                "sequence parallelism with tp > 1, FlashAttention, no dropout; ZeRO stages 0 to 3, "
                + _split_words(x.pipeline_rules)
                + f", interleaving and micro-batches searched; activations saved as {implementation} does"
            ),
            f"matmuls at {eff} of peak{_fp8_words(x)}; links {x.net.intra.name} and {x.net.inter.name}"  # type: ignore[union-attr]
            + _fabric_words(x),
            *_short_cp_assumption(x),
            *_stack_assumption(x),
        ],
    }


def _fp8_words(x: _Ctx) -> str:
    """FP8 in words, when the plan uses it: what it speeds up, and the weight memory it does not add."""
    if x.knobs.get("dtype") != "fp8":
        return ""
    return (
        f" (FP8 in the linear layers, at the FP8 peak, their casts {x.knobs['fp8_memory_passes']:g} more HBM passes "
        "over the stored activations; attention and the rest in BF16. Memory as BF16: FP8 weights "
        "stand in for the BF16 ones, as NeMo's fp8_param_gather and torchao's per-step casts run; Transformer "
        "Engine's cached copies beside BF16 weights, 1 to 2 bytes per parameter more (calc.memory.fp8), not counted)"
    )


def _fabric_words(x: _Ctx) -> str:
    """The spine above the pods, in words, when it is oversubscribed (``calc.parallel.network.Network``)."""
    net = x.net
    if net.pod_gpus is None or net.oversubscription == 1:
        return ""
    return f", 1:{float(net.oversubscription):g} above pods of {net.pod_gpus:,} GPUs"


def _short_cp_assumption(x: _Ctx) -> list[str]:
    """The line for CP searched at a sequence where it is ranked only if it pays (``SHORT_CP_GAIN``), else none."""
    if x.impl != "megatron" or x.pins["cp"] or not short_cp(x.s, cp_limit(x.s)):
        return []
    return [f"CP at {x.s:,} tokens ranked where it saves over {x.short_cp_gain:.0%} of the step (short_cp_gain)"]


def context(model: str | Architecture, a: dict[str, Any]) -> _Ctx:
    """Parse and check [`plan`][calc.timing.planner.plan]'s arguments ``a`` (its keywords, by name) once."""
    arch = _model(model)
    n = parse_positive_int(a["gpus"], "gpus", maximum=1 << 20)
    g = a["gpu"] if isinstance(a["gpu"], GPU) else gpu_preset(a["gpu"])
    gpn = parse_positive_int(a["gpus_per_node"] or g.gpus_per_node, "gpus_per_node", maximum=1024)
    if a["convention"] not in CONVENTIONS:
        raise CalcError("convention", f"must be one of {', '.join(sorted(CONVENTIONS))}", a["convention"])
    knobs = {k: a[k] for k in ("loss", "loss_chunk_tokens", "reshard_after_forward", "compile")}
    Layout(implementation=a["implementation"], stack=a["stack"], **knobs)  # raises, naming a field, when unknown
    net = Network(
        interconnect(a["intra"] or SCALE_UP_FOR_GPU.get(g.name, "nvlink4")),
        interconnect(a["inter"]),
        gpus_per_node=gpn,
        nics_per_node=a["nics_per_node"],
        pod_gpus=a["pod_gpus"],
        oversubscription=a["oversubscription"],
    )
    margin = share_below_one(a["safety_margin"], "safety_margin")
    dtype = plan_dtype(g, a["dtype"])
    pins = {k: a[k] for k in ("dp", "tp", "pp", "cp", "ep", "micro_batch", "interleave")}
    for k, val in pins.items():
        if val is not None:
            pins[k] = parse_positive_int(val, k, maximum=n if k in ("dp", "tp", "pp", "cp", "ep") else 1 << 20)
    zero_stage, recompute = a["zero_stage"], a["recompute"]
    if zero_stage is not None:
        zero_stage = parse_positive_int(zero_stage, "zero_stage", minimum=0, maximum=3)
    if recompute is not None and recompute not in LAYOUT_RECOMPUTE_MODES:
        raise CalcError("recompute", f"must be one of {', '.join(LAYOUT_RECOMPUTE_MODES)}", recompute)
    zeros, recs = _STACK_SEARCH[a["stack"]]
    hf_ok = HF_RECOMPUTE_MODES  # what the hf-* profiles take (calc.memory refuses the rest)
    for k in ("tp", "pp", "cp", "dp"):
        if pins[k] is not None and n % pins[k]:
            raise CalcError(k, f"must divide gpus (gpus={n})", pins[k], code="not-divisible")
    return _Ctx(
        arch=arch,
        n=n,
        s=parse_positive_int(a["seq_len"], "seq_len", maximum=1 << 24),
        batch=parse_positive_int(a["global_batch"], "global_batch", maximum=1 << 30),
        g=g,
        gpn=gpn,
        net=net,
        convention=a["convention"],
        dist=a["distributed_optimizer"],
        impl=a["implementation"],
        eff=None if a["matmul_efficiency"] is None else float(a["matmul_efficiency"]),
        margin=margin,
        capacity=int(g.memory_bytes * (1 - margin)),
        pins=pins,
        zeros=[zero_stage] if zero_stage is not None else list(zeros),
        recs=[recompute] if recompute else [r for r in recs if a["implementation"] == "megatron" or r in hf_ok],
        allow_tp_across_nodes=a["allow_tp_across_nodes"],
        knobs={**step_knobs(a), "dtype": dtype},
        stack=a["stack"],
        stack_knobs=knobs,
        accumulate=_bool_arg(a["gradient_accumulation"], "gradient_accumulation"),
        pipeline_rules=_pipeline_rules(a["pipeline_rules"]),
        short_cp_gain=share_below_one(a["short_cp_gain"], "short_cp_gain"),
        on_first=a.get("on_first"),
    )


PLAN_DTYPES: tuple[str, ...] = ("bf16", "fp8")
"""The matmul precisions a plan takes: BF16, or FP8 in the linear layers (Transformer Engine's and torchao's)."""


def plan_dtype(g: GPU, dtype: object) -> str:
    """``dtype`` checked for ``g``: ``"bf16"``, or ``"fp8"`` on a GPU with FP8 tensor cores. FP8 times the linear
    layers at the FP8 peak; memory stays as in BF16, the FP8 weights standing in for the BF16 ones (NeMo's
    ``fp8_param_gather`` recipes, torchao's per-step casts; Transformer Engine's cached copies are not counted).

    Examples:
        >>> from calc.hardware import gpu
        >>> plan_dtype(gpu("h100-sxm"), "fp8")
        'fp8'
        >>> plan_dtype(gpu("a100-80"), "fp8")
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: dtype must be bf16 on the A100 80 GB: it has no FP8 tensor cores (got 'fp8')
    """
    if dtype not in PLAN_DTYPES:
        raise CalcError("dtype", f"must be one of {', '.join(PLAN_DTYPES)}", dtype, code="unknown-name")
    if dtype == "fp8" and not g.fp8_flops:
        rule = f"must be bf16 on the {g.label}: it has no FP8 tensor cores"
        raise CalcError("dtype", rule, dtype, code="unsupported")
    return str(dtype)


def _split_words(rules: str) -> str:
    """How the pipeline split is searched, in words."""
    if rules == "megatron-2021":
        return "pp dividing the layers (Megatron-LM's 2021 rules: even stages, interleaving on more than 2)"
    return "any pp up to the layers (uneven stages)"


def step_knobs(a: dict[str, Any]) -> dict[str, Any]:
    """The [`step_time`][calc.timing.steptime.step_time] knobs of ``plan``'s arguments ``a``, checked.

    ``tp_dgrad_overlap`` and ``p2p_overlap`` left at ``None`` stay the stack's and the schedule's own (Megatron-LM
    overlaps the interleaved schedule's p2p: ``calc.timing.overlap``).

    Examples:
        >>> a = {"attention_efficiency": None, "tp_overlap": 0.0, "overlap_param_gather": False,
        ...      "straggler_per_doubling": 0.0, "tp_comm_overlap": True, "tp_dgrad_overlap": None, "p2p_overlap": False}
        >>> k = step_knobs(a)
        >>> k["tp_comm_overlap"], k["p2p_overlap"], "tp_dgrad_overlap" in k
        (True, False, False)
    """
    knobs = {k: a[k] for k in ("attention_efficiency", "tp_overlap", "overlap_param_gather", "straggler_per_doubling")}
    knobs["tp_comm_overlap"] = _bool_arg(a["tp_comm_overlap"], "tp_comm_overlap")
    knobs["fp8_memory_passes"] = _passes(a.get("fp8_memory_passes", FP8_MEMORY_PASSES), "fp8_memory_passes")
    for key in ("tp_dgrad_overlap", "p2p_overlap"):
        if a.get(key) is not None:  # None: the stack's or the schedule's own
            knobs[key] = _bool_arg(a[key], key)
    return knobs


def _pipeline_rules(value: object) -> str:
    if value not in PIPELINE_RULES:
        raise CalcError("pipeline_rules", f"must be one of {', '.join(PIPELINE_RULES)}", value, code="unknown-name")
    return str(value)
