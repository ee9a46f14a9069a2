"""Re-predict every published run in ``runs.json`` with today's engine and print the errors.

Memory rows go through [`peak_memory`][calc.memory.overheads.peak_memory] and are compared on the figure the
source measured (``allocated``, ``reserved`` or ``nvidia_smi``); throughput rows through
[`step_time`][calc.timing.steptime.step_time], compared as step time: the measured step is derived from the
published figure (tokens/s, TFLOP/s per GPU of the FLOP kind the source names, or seconds per step).

Each row's ``knobs`` (``stack``, ``recompute="op"``, ``loss``, ``compile``, ``reshard_after_forward``...) are
passed to [`Layout`][calc.memory.layout.Layout] where ``dataclasses.fields(Layout)`` has them and the value is
accepted, else to ``peak_memory`` / ``step_time`` where their signature has the name, so the rows pick up the
stack knobs as the engine gains them; the result lists the knobs that were applied nowhere. A row marked
``not_modelled`` (with its reason) is reported but does not fail.

``python -m validation.published.predict`` prints the table.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path
from typing import Any

from calc.errors import CalcError
from calc.hardware import GPU
from calc.hardware import gpu as gpu_preset
from calc.memory.layout import Layout
from calc.memory.overheads import peak_memory
from calc.models.presets import preset
from calc.parallel.network import Network
from calc.timing.steptime import step_time
from validation.published._rows import load_rows, text_table

__all__ = [
    "ROWS",
    "TOLERANCE",
    "arch_for",
    "gpu_for",
    "layout_for",
    "load",
    "measured_step_s",
    "predict",
    "predict_all",
    "table",
]

ROWS = Path(__file__).with_name("runs.json")
"""The published rows (``README.md`` beside it says how each was read)."""

TOLERANCE: dict[str, float] = {"memory": 0.15, "memory-compiled": 0.25, "throughput": 0.15}
"""Issue 17 item 5 and issue 21 item 3: memory ±15% eager, ±25% with ``torch.compile`` or FP8; step time ±15%."""

_UNITS = {"GiB": 2**30, "MiB": 2**20, "GB": 10**9}
_MEMORY_METRICS = {"allocated": "allocated_bytes", "reserved": "reserved_bytes", "nvidia_smi": "nvidia_smi_bytes"}
_MEMORY_KWARGS = ("low_precision", "optimizer", "expandable_segments", "channels", "p2p_channels", "stage")
_STEP_KWARGS = ("dtype", "schedule", "matmul_efficiency")


def load(path: Path = ROWS) -> list[dict[str, Any]]:
    """The rows of ``runs.json``, memory and throughput, each id unique.

    Examples:
        >>> sorted({r["kind"] for r in load()})
        ['memory', 'throughput']
    """
    return load_rows(path)


def arch_for(row: dict[str, Any]) -> Any:
    """The row's model: the engine preset ``model``, with the row's ``arch`` fields replaced where it has them.

    A run whose shapes no preset has (a functional test's 7B GPT, a padded vocabulary) names the nearest preset
    and the fields that differ; the [`Architecture`][calc.models.architecture.Architecture] validates them.

    Examples:
        >>> arch_for({"model": "gpt2", "arch": {"vocab_size": 50304}}).vocab_size
        50304
    """
    arch = preset(row["model"])
    return dataclasses.replace(arch, **row["arch"]) if row.get("arch") else arch


def gpu_for(row: dict[str, Any]) -> GPU | str:
    """The GPU the row is timed on: the preset ``gpu``, or, where the run's hardware differs from every preset, that
    preset with the figures in ``predict.gpu`` replaced (its ``why`` says where each was read).

    Examples:
        >>> gpu_for({"gpu": "h100-sxm"})
        'h100-sxm'
        >>> g = gpu_for({"gpu": "h100-sxm", "predict": {"gpu": {"hbm_bytes_per_s": 2_400_000_000_000, "why": "..."}}})
        >>> g.name, g.hbm_bytes_per_s, g.bf16_flops
        ('h100-sxm', 2400000000000, 989400000000000)
    """
    figures = {k: v for k, v in row.get("predict", {}).get("gpu", {}).items() if k != "why"}
    return dataclasses.replace(gpu_preset(row["gpu"]), **figures) if figures else row["gpu"]


def layout_for(row: dict[str, Any]) -> tuple[Layout, tuple[str, ...]]:
    """The row's [`Layout`][calc.memory.layout.Layout] and the knobs today's engine could not take.

    The knobs are tried all together; if the engine lacks a field, or refuses a value (``recompute="op"``
    before it knows the policy), the row falls back to its plain ``layout`` and the knob is listed.

    Examples:
        >>> row = {"layout": {"dp": 8, "zero_stage": 3}, "knobs": {"no_such_knob": 1}}
        >>> lay, missing = layout_for(row)
        >>> lay.dp, missing
        (8, ('no_such_knob',))
    """
    fields = {f.name for f in dataclasses.fields(Layout)}
    knobs = {k: v for k, v in row.get("knobs", {}).items() if k != "fp8"}
    known = {k: v for k, v in knobs.items() if k in fields}
    missing = tuple(sorted(k for k in knobs if k not in fields))
    if known:
        try:
            return Layout(**{**row["layout"], **known}), missing
        except (CalcError, TypeError):
            missing = tuple(sorted(knobs))
    return Layout(**row["layout"]), missing


def measured_step_s(row: dict[str, Any], predicted: Any) -> float:
    """Seconds per step that the published figure implies.

    Tokens per second (per GPU or for the job) give it exactly: tokens of a step over the rate. TFLOP/s per
    GPU give it through the engine's own FLOP count of the kind the source names (``model``: without
    recomputation, ``hardware``: with it), so a row whose source counts FLOPs another way says so in its
    ``measured.how``.

    Examples:
        >>> row = {"gpus": 8, "layout": {"global_batch": 16, "seq_len": 8192},
        ...        "measured": {"metric": "tokens_per_s_per_gpu", "value": 8192}}
        >>> measured_step_s(row, None)
        2.0
    """
    m, lay = row["measured"], row["layout"]
    tokens = lay["global_batch"] * lay["seq_len"]
    if m["metric"] == "step_time_s":
        return float(m["value"])
    if m["metric"] == "tokens_per_s_per_gpu":
        return tokens / (m["value"] * row["gpus"])
    if m["metric"] == "tokens_per_s":
        return tokens / m["value"]
    if m["metric"] == "tflops_per_gpu":
        flops = predicted.model_flops if m["flops"] == "model" else predicted.hardware_flops
        return flops / (m["value"] * 1e12 * row["gpus"])
    known = "step_time_s, tokens_per_s_per_gpu, tokens_per_s, tflops_per_gpu"
    msg = f"measured.metric must be one of {known} (got {m['metric']!r})"
    raise ValueError(msg)


def _knob_kwargs(fn: Any, row: dict[str, Any], out: dict[str, Any]) -> dict[str, Any]:
    """The knobs ``layout_for`` could not place that ``fn`` takes as keywords; they leave ``knobs_missing``."""
    params = inspect.signature(fn).parameters
    taken = {k: row["knobs"][k] for k in out["knobs_missing"] if k in params}
    out["knobs_missing"] = tuple(k for k in out["knobs_missing"] if k not in taken)
    return taken


def _tolerance(row: dict[str, Any]) -> float:
    if row["kind"] == "throughput":
        return TOLERANCE["throughput"]
    knobs = row.get("knobs", {})
    return TOLERANCE["memory-compiled" if knobs.get("compile") or knobs.get("fp8") else "memory"]


def predict(row: dict[str, Any]) -> dict[str, Any]:
    """One row re-predicted: measured and predicted (bytes, or seconds per step), the error and the verdict.

    ``error`` is predicted / measured - 1 (``None`` when the engine refused the layout, with ``refused``
    giving its message). ``ok`` is within tolerance; ``passes`` is ``ok`` or marked ``not_modelled``.
    """
    out: dict[str, Any] = {"id": row["id"], "kind": row["kind"], "tolerance": _tolerance(row)}
    out["not_modelled"] = row.get("not_modelled")
    extra = row.get("predict", {})
    try:
        layout, out["knobs_missing"] = layout_for(row)
        arch = arch_for(row)
        if row["kind"] == "memory":
            m = row["measured"]
            kwargs = {k: extra[k] for k in _MEMORY_KWARGS if k in extra}
            kwargs.update(_knob_kwargs(peak_memory, row, out))
            peak = peak_memory(arch, layout, **kwargs)
            out["measured"] = round(m["value"] * _UNITS[m["unit"]])
            out["predicted"] = getattr(peak, _MEMORY_METRICS[m["metric"]])
        else:
            kwargs = {k: extra[k] for k in _STEP_KWARGS if k in extra}
            if "network" in extra:
                net = extra["network"]
                kwargs["network"] = Network(**net) if isinstance(net, dict) else Network(*net)
            kwargs.update(_knob_kwargs(step_time, row, out))
            t = step_time(arch, layout, gpu=gpu_for(row), **kwargs)
            out["measured"] = measured_step_s(row, t)
            out["predicted"] = t.step_time_s
        out["error"] = out["predicted"] / out["measured"] - 1
        out["refused"] = None
    except CalcError as err:
        out.update(predicted=None, error=None, refused=str(err), knobs_missing=out.get("knobs_missing", ()))
        out.setdefault("measured", None)
    out["ok"] = out["error"] is not None and abs(out["error"]) <= out["tolerance"]
    out["passes"] = out["ok"] or bool(out["not_modelled"])
    return out


def predict_all(rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """[`predict`][validation.published.predict.predict] for every row."""
    return [predict(r) for r in (load() if rows is None else rows)]


def table(results: list[dict[str, Any]]) -> str:
    """A plain-text table of the results, one row per published run."""

    def verdict(r: dict[str, Any]) -> str:
        return "ok" if r["ok"] else ("not modelled" if r["not_modelled"] else "FAIL")

    return text_table(results, width=40, no_error="refused", verdict=verdict)


if __name__ == "__main__":
    print(table(predict_all()))
