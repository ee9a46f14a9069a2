"""The "Plan a training run" calculator: the layouts that fit, ranked by predicted step time."""

from __future__ import annotations

from html import escape

from calc.hardware import GPUS
from calc.presets import PRESET_LABELS
from calc.widgets import Calculator, Field
from calc.widgets._html import out, table, verdict

__all__ = ["CALCULATOR"]

_SEARCHED = ("dp", "tp", "pp", "cp", "ep", "zero_stage", "recompute", "micro_batch", "interleave")


def _compute(v: dict[str, str]) -> str:
    from calc.planner import plan_from_fields  # imported here: the planner pulls in the whole engine

    model = v["config"].strip() or v["model"]
    fields = {k: v[k] for k in ("gpus", "gpu", "gpus_per_node", "seq_len", "global_batch", "safety_margin")}
    fields.update({k: v[k] for k in _SEARCHED})
    fields["matmul_efficiency"] = v["matmul_efficiency"]
    r = plan_from_fields(model, fields)
    best = r["layouts"][0]
    line = (
        f"Best of {r['searched']:,} layouts searched: dp={best['dp']} tp={best['tp']} pp={best['pp']} "
        f"cp={best['cp']} ep={best['ep']}, ZeRO-{best['zero_stage']}, {best['recompute']} recomputation, "
        f"micro-batch {best['micro_batch']}, interleave {best['interleave']}: {best['step_time_s']:.3g} s per step, "
        f"MFU {best['mfu']:.1%}."
    )
    rows = []
    for i, x in enumerate(r["layouts"], 1):
        rows.append(
            (
                str(i),
                escape(f"dp {x['dp']} · tp {x['tp']} · pp {x['pp']} · cp {x['cp']} · ep {x['ep']}"),
                escape(f"ZeRO-{x['zero_stage']}, {x['recompute']}, mb {x['micro_batch']}, v {x['interleave']}"),
                out(f"memory-{i}", f"{x['memory_bytes'] / 1e9:.1f} GB"),
                out(f"step-{i}", f"{x['step_time_s']:.3g} s"),
                out(f"mfu-{i}", f"{x['mfu']:.1%}"),
                escape(x.get("flip", "")),
            )
        )
    parts = "".join(
        f"<li>{escape(p['part'])}: {p['seconds'] * 1e3:,.4g} ms <small>({escape(p['why'])})</small></li>"
        for p in best["time"]
        if p["seconds"] > 0
    )
    rejected = "".join(
        f"<li>dp {x['dp']} · tp {x['tp']} · pp {x['pp']}: {escape(x['reason'])}</li>" for x in r["rejected"]
    )
    return (
        verdict(True, line)
        + out("step_time", f"{best['step_time_s']:.3g} s", "strong")
        + table(("#", "Degrees", "State", "Peak memory", "Step", "MFU", ""), rows, raw_cells=True)
        + f"<p><strong>Where the best step's time goes</strong></p><ul>{parts}</ul>"
        + (f"<p><strong>Best rejected</strong></p><ul>{rejected}</ul>" if rejected else "")
        + '<p class="lc-kv"><small>Analytical ranking: '
        + escape("; ".join(r["assumptions"]))
        + ".</small></p>"
    )


_MODELS = tuple((k, v) for k, v in PRESET_LABELS.items())

CALCULATOR = Calculator(
    name="plan",
    title="Plan a training run",
    description="Every valid layout for a model on your cluster, the ones that fit in memory, ranked by "
    "predicted step time. Leave a degree blank to search it.",
    fields=(
        Field("model", "Model", "llama3-70b", kind="select", options=_MODELS),
        Field("config", "…or paste a config.json", "", kind="textarea", help="overrides the model above"),
        Field("gpus", "GPUs", "1024", kind="number"),
        Field("gpu", "GPU", "h100-sxm", kind="select", options=tuple((k, g.label) for k, g in GPUS.items())),
        Field("gpus_per_node", "GPUs per node", "8", kind="number"),
        Field("seq_len", "Sequence length", "8192", kind="number"),
        Field("global_batch", "Global batch (sequences)", "1024", kind="number"),
        Field("dp", "dp (blank = search)", ""),
        Field("tp", "tp (blank = search)", ""),
        Field("pp", "pp (blank = search)", ""),
        Field("cp", "cp (blank = search)", ""),
        Field("ep", "ep (blank = search)", ""),
        Field("zero_stage", "ZeRO stage (blank = search 1 and 3)", ""),
        Field("recompute", "Recomputation (blank = search)", ""),
        Field("micro_batch", "Micro-batch (blank = search)", ""),
        Field("interleave", "Interleave (blank = search)", ""),
        Field("safety_margin", "Memory kept free (share)", "0.1"),
        Field("matmul_efficiency", "Matmul efficiency (share of peak)", "0.68"),
    ),
    compute=_compute,
)
"""The planner calculator."""
