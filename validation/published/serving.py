"""Re-predict every published serving measurement in ``serving.json`` with the serving time model.

Each row is compared on time, the quantity the model predicts: a first-token row on the prefill of its prompt
([`prefill_time`][calc.timing.serving.prefill_time]); a latency row on the measured latency of its static batch,
a throughput row on the same latency as ``batch × output tokens / measured tokens/s`` (per GPU times ``tp`` where
the source counts per GPU), both against the prefill of the batch plus ``output − 1`` decode steps
([`decode_step`][calc.timing.serving.decode_step]) at the mean context of the generation,
``prompt + output // 2`` cached tokens.

A row marked ``not_modelled`` (with its reason) is reported but not predicted. A row marked ``outside`` is one
the model expresses but misses: the test checks that it is still outside tolerance, so a model that gets it right
has its mark removed, and the reason records what the model leaves out.

``python -m validation.published.serving`` prints the table.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from calc.errors import CalcError
from calc.models.presets import preset
from calc.timing.serving import decode_step, prefill_time
from validation.published._rows import load_rows, text_table

__all__ = ["ROWS", "TOLERANCE", "load", "measured_s", "predict", "predict_all", "predicted_s", "table"]

ROWS = Path(__file__).with_name("serving.json")
"""The published serving rows (``README.md`` beside it says how each was read)."""

TOLERANCE = 0.30
"""Predicted time within ±30% of the measured one (issue 18 Build 3). The model is a roofline without kernel
launches or scheduling, so it errs low on short steps; ±30% is what it meets on long prompts and decode-heavy
batches of one GPU (README)."""


def load(path: Path = ROWS) -> list[dict[str, Any]]:
    """The rows of ``serving.json``: first-token, latency and throughput measurements.

    Examples:
        >>> {r["kind"] for r in load()} <= {"ttft", "latency", "throughput"}
        True
    """
    return load_rows(path)


def measured_s(row: dict[str, Any]) -> float:
    """Seconds the published figure implies: the first-token latency, or the static batch's whole latency.

    Examples:
        >>> row = {"kind": "throughput", "tp": 2, "batch": 64, "output_tokens": 128,
        ...        "measured": {"metric": "output_tokens_per_s_per_gpu", "value": 1024}}
        >>> measured_s(row)
        4.0
    """
    m = row["measured"]
    if m["metric"] in ("ttft_s", "latency_s"):
        return float(m["value"])
    rate = m["value"] * (row["tp"] if m["metric"] == "output_tokens_per_s_per_gpu" else 1)
    if m["metric"] not in ("output_tokens_per_s_per_gpu", "output_tokens_per_s"):
        known = "ttft_s, latency_s, output_tokens_per_s, output_tokens_per_s_per_gpu"
        raise ValueError(f"measured.metric must be one of {known} (got {m['metric']!r})")
    return row["batch"] * row["output_tokens"] / rate


def predicted_s(row: dict[str, Any]) -> float:
    """The model's seconds for the row: the prefill, plus ``output − 1`` decode steps for a throughput row.

    Examples:
        >>> row = {"kind": "ttft", "model": "llama2-7b", "gpu": "a100-80", "tp": 1, "batch": 1,
        ...        "prompt_tokens": 2048, "output_tokens": 1, "dtype": "fp16", "kv_dtype": "fp16"}
        >>> round(predicted_s(row) * 1e3)
        131
    """
    arch = preset(row["model"])
    kw = dict(gpu=row["gpu"], tp=row["tp"], dtype=row["dtype"])
    n, out = row["prompt_tokens"], row["output_tokens"]
    t = prefill_time(arch, n, batch=row["batch"], **kw).time_s
    if row["kind"] in ("throughput", "latency") and out > 1:
        step = decode_step(arch, batch=row["batch"], context=n + out // 2, kv_dtype=row["kv_dtype"], **kw)
        t += (out - 1) * step.time_s
    return t


def predict(row: dict[str, Any]) -> dict[str, Any]:
    """One row re-predicted: measured and predicted seconds, the error (predicted / measured − 1), the verdict."""
    out: dict[str, Any] = {"id": row["id"], "kind": row["kind"], "tolerance": TOLERANCE}
    out["not_modelled"], out["outside"] = row.get("not_modelled"), row.get("outside")
    out["measured"], out["predicted"], out["error"], out["refused"] = measured_s(row), None, None, None
    if not out["not_modelled"]:
        try:
            out["predicted"] = predicted_s(row)
            out["error"] = out["predicted"] / out["measured"] - 1
        except CalcError as err:
            out["refused"] = str(err)
    out["ok"] = out["error"] is not None and abs(out["error"]) <= TOLERANCE
    out["passes"] = out["ok"] or bool(out["not_modelled"]) or bool(out["outside"])
    return out


def predict_all(rows: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """[`predict`][validation.published.serving.predict] for every row."""
    return [predict(r) for r in (load() if rows is None else rows)]


def table(results: list[dict[str, Any]]) -> str:
    """A plain-text table of the results, one row per published measurement."""

    def verdict(r: dict[str, Any]) -> str:
        if r["ok"]:
            return "ok"
        return "not modelled" if r["not_modelled"] else "outside (known)" if r["outside"] else "FAIL"

    return text_table(results, width=44, no_error="-", verdict=verdict)


if __name__ == "__main__":
    print(table(predict_all()))
