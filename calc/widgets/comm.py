"""The "Communication per step" calculator: bytes and time of every collective a parallel layout implies."""

from __future__ import annotations

from fractions import Fraction

from calc.errors import CalcError
from calc.guide.charts import step_time_chart
from calc.markup import escape
from calc.memory.layout_rules import check_parallelism
from calc.parallel.comm import INTERCONNECTS, step_communication
from calc.units import format_count, parse_count, parse_decimal, parse_positive_int
from calc.widgets import Calculator, Field
from calc.widgets._code import call, snippet
from calc.widgets._fields import (
    PARALLELISMS,
    checkbox,
    degree,
    micro_batch_field,
    select,
    seq_len_field,
    unit_field,
    whole_numbers,
    zero_field,
)
from calc.widgets._html import byte_formatter, checked, out, table, verdict
from calc.widgets._model import CUSTOM, ModelChoice, model_chip, model_fields, read_model
from calc.widgets._parts import duration, kv, plural

__all__ = ["CALCULATOR"]

_GROUPS = {**PARALLELISMS, "dp-cp": PARALLELISMS["dp"], "expert-dp": "Expert data parallel"}
"""Each communication group's name (``CommTerm.group``): dp × cp is the data-parallel group."""


_DP_MAX = 1 << 14
"""dp (and dp × cp, the data-parallel group) up to 16,384: 128 times Llama 3 405B's dp of 128
(16,384 GPUs as tp 8 × pp 16 × dp 128, Dubey et al. 2024, arXiv:2407.21783, Table 4). The engine
places each group in closed form (``calc.parallel.network.group_placement``), so the bound is about what a
reader can mean, not about speed."""

_EP_MAX = 1024
"""ep up to 1,024: four times DeepSeek-V3's 256 routed experts, the most of any published model."""

_INT_FIELDS: tuple[tuple[str, int], ...] = (
    ("layers", 10_000),  # the deepest published LLMs have ~100-200 layers
    ("hidden", 10**6),  # 16,384 in Llama 3.1 405B
    ("kv_dims", 10**7),
    ("seq", 1 << 24),  # 16M tokens, above the longest (10M) context lengths announced
    ("micro_batch", 1 << 16),
    ("num_microbatches", 1 << 20),
    ("dp", _DP_MAX),
    ("tp", 1024),  # tensor parallelism stays inside a scale-up domain (72 GPUs in an NVL72)
    ("pp", 1024),
    ("cp", 1024),
    ("ep", _EP_MAX),
    ("virtual_stages", 64),
    ("top_k", 1024),
    ("gpus_per_node", 1024),
)
"""The whole-number fields and their upper bounds (stated in each field's error rule)."""


def _percent(text: str, field: str) -> Fraction:
    """An achieved share of peak typed as a percentage, from 1 to 100 (below 1% a link is broken, not slow)."""
    rule = "must be a percentage from 1 to 100"
    return (
        parse_decimal(text.strip().rstrip("%") if len(text) <= 64 else text, field, rule, minimum=1, maximum=100) / 100
    )


def _rate(bytes_per_s: int) -> str:
    return f"{bytes_per_s / 1e9:,.4g} GB/s"


def _links(scope: str) -> tuple[tuple[str, str], ...]:
    """The interconnects of one scope (``scale-up`` inside a node, ``scale-out`` between nodes) as select options."""
    return tuple((i.name, i.label.replace(", 8-GPU mesh", "")) for i in INTERCONNECTS.values() if i.scope == scope)


def _link(name: str, scope: str, field: str) -> str:
    if name not in INTERCONNECTS or INTERCONNECTS[name].scope != scope:
        known = ", ".join(n for n, i in INTERCONNECTS.items() if i.scope == scope)
        raise CalcError(field, f"must be one of {known}", name, code="unknown-name")
    return name


def _from_model(choice: ModelChoice) -> dict[str, str]:
    """The fields a chosen model fills in (params, layers, hidden, kv_dims, expert_params, top_k), as typed.

    ``kv_dims`` is what context parallelism all-gathers per token per layer: ``2 n_kv d`` for
    multi-head and grouped-query attention; under latent attention (DeepSeek-V2/V3) the keys and values
    are expanded per head before attention, ``n_h (d_nope + d_rope + d_v)`` (DeepSeek-V2,
    arXiv:2405.04434, Sec. 2.1.2, Eqs. 12-19). Routed-expert parameters and top-k come from the
    config; a dense model keeps the typed top-k, which then counts for nothing.

    Examples:
        >>> from calc.widgets._model import read_model
        >>> shape = _from_model(read_model({"preset": "llama3-70b"}))
        >>> shape["layers"], shape["hidden"], shape["kv_dims"], shape["expert_params"]
        ('80', '8192', '2048', '0')
    """
    a = choice.arch
    if a.uses_mla:
        kv_dims = a.num_heads * (a.qk_nope_head_dim + a.qk_rope_head_dim + a.v_head_dim)
    else:
        kv_dims = a.kv_cache_dims_per_token()
    shape = {
        "params": str(a.param_count),
        "layers": str(a.num_layers),
        "hidden": str(a.hidden_size),
        "kv_dims": str(kv_dims),
        "expert_params": str(a.params_by_kind()["experts_routed"]),
    }
    if a.is_moe:
        shape["top_k"] = str(a.experts_per_token)
    return shape


def _model_line(choice: ModelChoice | None, v: dict[str, str]) -> str:
    if choice is None:
        return ""
    moe = f", routed experts {format_count(int(v['expert_params']))}, top-{v['top_k']}" if choice.arch.is_moe else ""
    text = (
        f"{choice.label}: {format_count(int(v['params']))} parameters, {v['layers']} layers, "
        f"hidden {int(v['hidden']):,}, K+V {int(v['kv_dims']):,} per token per layer{moe}"
    )
    return kv("Model", out("model", escape(text)))


def _inputs(v: dict[str, str]) -> tuple[ModelChoice | None, dict[str, str], tuple[int, dict[str, int], int]]:
    """The chosen model (``None``: custom), the values with its shape filled in, and those values read."""
    choice = read_model(v, allow_custom=True)
    if choice is not None:
        v = {**v, **_from_model(choice)}
    return choice, v, _read(v)


def _read(v: dict[str, str]) -> tuple[int, dict[str, int], int]:
    """Parameters, the whole-number fields (checked as one layout) and the routed-expert parameters."""
    expert_text = v["expert_params"].strip()
    params = parse_count(v["params"], "params")
    ints = whole_numbers(v, _INT_FIELDS)
    ints["zero_stage"] = parse_positive_int(v["zero_stage"], "zero_stage", minimum=0, maximum=3)
    ints["grad_bytes"] = parse_positive_int(v["grad_bytes"], "grad_bytes", minimum=2, maximum=4)
    if ints["grad_bytes"] not in (2, 4):
        raise CalcError("grad_bytes", "must be 2 or 4", v["grad_bytes"])
    if ints["dp"] * ints["cp"] > _DP_MAX:
        raise CalcError(
            "dp",
            f"× cp must be at most {_DP_MAX:,} (cp={ints['cp']}): the data-parallel group, "
            "dp × cp ranks, is at most that (about 100 times the largest published one)",
            v["dp"],
        )
    check_parallelism(
        **{k: ints[k] for k in ("tp", "pp", "dp", "cp", "ep", "virtual_stages", "layers", "hidden")},
        seq_len=ints["seq"],
        num_microbatches=ints["num_microbatches"],
        micro_batch=ints["micro_batch"],
        sequence_parallel=checked(v["sequence_parallel"]),
        names={"seq_len": "seq"},
    )
    expert_params = 0 if expert_text in ("", "0") else parse_count(expert_text, "expert_params")
    if expert_params > params:
        raise CalcError("expert_params", f"must be at most params (params={params:,})", v["expert_params"])
    return params, ints, expert_params


_STEP_INTS = (*(name for name, _ in _INT_FIELDS), "zero_stage")
"""The whole-number fields passed to [`step_communication`][calc.parallel.comm.step_communication] as they are."""


def _step_kwargs(v: dict[str, str], params: int, ints: dict[str, int], expert_params: int) -> dict[str, object]:
    """The arguments of [`step_communication`][calc.parallel.comm.step_communication] the fields give."""
    return dict(
        params=params,
        **{k: ints[k] for k in _STEP_INTS},
        sequence_parallel=checked(v["sequence_parallel"]),
        recompute=checked(v["recompute"]),
        expert_params=expert_params,
        bytes_per_element=2,
        grad_bytes_per_element=ints["grad_bytes"],
        intra=_link(v["intra"], "scale-up", "intra"),
        inter=_link(v["inter"], "scale-out", "inter"),
        intra_efficiency=_percent(v["intra_efficiency"], "intra_efficiency"),
        inter_efficiency=_percent(v["inter_efficiency"], "inter_efficiency"),
    )


def _rows(step, v: dict[str, str], fmt) -> list[tuple[str, ...]]:
    rows = []
    for t in step.terms:
        where = INTERCONNECTS[v["intra"]].label if t.intra_node else f"network ({INTERCONNECTS[v['inter']].label})"
        rows.append(
            (
                f"{escape(_GROUPS[t.group])}<br><small>{escape(t.label)}</small>",
                (
                    f"{escape(t.collective)} × {t.calls:,}<br>"
                    f"<small>{t.group_size} ranks, {escape(fmt(t.message_bytes))} each</small>"
                ),
                out(f"{t.name}-bytes", fmt(t.bytes_sent)),
                f"{escape(where)}<br><small>{escape(_rate(t.bus_bytes_per_s))} bus bandwidth</small>",
                out(f"{t.name}-time", duration(t.time_s), value=t.time_s, unit="s"),
            )
        )
    rows.append(
        (
            "<strong>Total</strong>",
            "",
            out("total_bytes", fmt(step.total_bytes), "strong"),
            "",
            out("total_time", duration(step.total_time_s), "strong", value=step.total_time_s, unit="s"),
        )
    )
    return rows


_HOW = (
    '<p class="lc-kv"><small>α–β per call: NCCL\'s ring latency per hop plus bandwidth per link level. '
    "A group inside a node runs a ring on the scale-up link; one that spans nodes runs hierarchically "
    "(reduce-scatter inside the node, the 1/k shard across nodes on each member's own NIC, all-gather "
    "inside), so only as many NICs as it has members on a node carry it. Time assumes no overlap with "
    "compute, so it bounds the exposed communication from above. Ranks are ordered TP, CP, EP, DP, PP "
    "(Megatron-LM's default).</small></p>"
)


def _compute(v: dict[str, str]) -> str:
    fmt = byte_formatter(v["unit"])
    choice, v, (params, ints, expert_params) = _inputs(v)
    step = step_communication(**_step_kwargs(v, params, ints, expert_params))
    if not step.terms:
        return (
            verdict(True, "One GPU per model replica and no parallelism: nothing to communicate.")
            + model_chip(choice)
            + _model_line(choice, v)
            + kv("Bytes sent per GPU per step", out("total_bytes", fmt(0)))
            + kv("Communication time per step", out("total_time", "0 s", value=0.0, unit="s"))
        )
    biggest = max(step.terms, key=lambda t: t.time_s)
    line = (
        f"{plural(step.gpus, 'GPU')} ({step.gpus_per_node} per node), {format_count(params)} parameters: "
        f"each GPU sends {fmt(step.total_bytes)} per step, {duration(step.total_time_s)} if nothing overlaps; "
        f"the largest share is {_GROUPS[biggest.group].lower()} ({biggest.collective})."
    )
    head = ("Parallelism", "Collective × calls / step", "Sent per GPU", "Runs on", "Time")
    return (
        verdict(True, line)
        + model_chip(choice)
        + _model_line(choice, v)
        + step_time_chart(
            [(t.name, t.time_s, t.time_s) for t in step.terms],  # the names the planner's chart uses
            title="Communication per step, no overlap assumed (an upper bound on exposed time)",
        )
        + table(head, _rows(step, v, fmt), raw_cells=True)
        + _HOW
    )


def _python(v: dict[str, str]) -> str:
    """[`step_communication`][calc.parallel.comm.step_communication] with every field (a model's shape filled in)."""
    choice, v, (params, ints, expert_params) = _inputs(v)
    step = call("step_communication", fn=step_communication, **_step_kwargs(v, params, ints, expert_params))
    shape = [f"# {choice.label}: its parameters and shape, as the calculator reads them"] if choice else []
    return snippet(
        [*shape, f"step = {step}"], [("total_bytes", "step.total_bytes"), ("total_time", "step.total_time_s")]
    )


CALCULATOR = Calculator(
    name="communication",
    title="Communication per step",
    description="Bytes each GPU sends per optimizer step for every collective a layout implies, and how long "
    "they take on NVLink and the network.",
    fields=(
        *model_fields(CUSTOM, custom="Custom: the fields below"),
        Field("params", "Parameters", "70B", help="e.g. 7B, 70e9, 405B", enabled_when=("preset", CUSTOM)),
        Field("layers", "Layers", "80", kind="number", enabled_when=("preset", CUSTOM)),
        Field("hidden", "Hidden size", "8192", kind="number", enabled_when=("preset", CUSTOM)),
        Field(
            "kv_dims",
            "K+V size per token per layer",
            "2048",
            kind="number",
            help="2 × KV heads × head dim (2 × hidden without GQA); for context parallelism",
            enabled_when=("preset", CUSTOM),
        ),
        seq_len_field("4096", name="seq"),
        micro_batch_field(label="Micro-batch size"),
        Field(
            "num_microbatches",
            "Micro-batches per step",
            "16",
            kind="number",
            help="per pipeline: global batch / (micro-batch × dp)",
        ),
        degree("tp", "8"),
        degree("pp", "4"),
        degree("dp", "8"),
        degree("cp", "1"),
        degree("ep", "1", "must divide dp × cp"),
        zero_field(
            "1",
            (
                ("0", "0: all-reduce gradients"),
                ("1", "1: reduce-scatter + all-gather"),
                ("2", "2: micro-batch reduce-scatter"),
                ("3", "3: + weight all-gathers"),
            ),
            help="2 reduce-scatters every micro-batch; 3 also gathers the weights every micro-batch",
        ),
        checkbox("sequence_parallel", "Sequence parallelism", "1"),
        Field("virtual_stages", "Model chunks per stage (interleaving)", "1", kind="number"),
        checkbox("recompute", "Full activation recomputation"),
        Field(
            "expert_params",
            "Routed-expert parameters (MoE)",
            "0",
            help="0 for a dense model, e.g. 45B",
            enabled_when=("preset", CUSTOM),
        ),
        Field("top_k", "Experts per token (MoE)", "2", kind="number", enabled_when=("preset", CUSTOM)),
        select("grad_bytes", "Gradient reduction precision", "2", (("2", "bf16 (2 bytes)"), ("4", "fp32 (4 bytes)"))),
        Field("gpus_per_node", "GPUs per node", "8", kind="number"),
        select(
            "intra",
            "Inside a node",
            "nvlink4",
            _links("scale-up"),
        ),
        select(
            "inter",
            "Between nodes (per GPU)",
            "ib-ndr",
            _links("scale-out"),
        ),
        Field(
            "intra_efficiency",
            "Achieved share of link peak, inside a node (%)",
            "78.3",
            kind="number",
            help="NCCL's own model caps A100 NVLink at 235 of 300 GB/s (src/graph/tuning.cc)",
        ),
        Field(
            "inter_efficiency",
            "Achieved share of NIC peak (%)",
            "96",
            kind="number",
            help="NCCL maintainers report ~96–97% for HDR/NDR NICs",
        ),
        unit_field(),
    ),
    compute=_compute,
    python=_python,
)
"""The communication calculator."""
