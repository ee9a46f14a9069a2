"""Join measurements with the engine's predictions and write ``validation/results.json``.

The file holds, for every configuration: its inputs, the measured bytes, the engine's prediction, the
relative error and whether it is within the category's tolerance
([`TOLERANCE`][validation.predict.TOLERANCE]), plus the versions measured with. ``make validate``
rewrites it and fails when any row is out of tolerance; ``make test`` re-predicts it without torch.
"""

from __future__ import annotations

import json
import platform
from pathlib import Path
from typing import Any

from validation.predict import TOLERANCE, predict

__all__ = ["RESULTS", "check_rows", "relative_error", "write_results"]

RESULTS = Path(__file__).with_name("results.json")
"""The committed data file."""

_PARTS = ("weights", "gradients", "master", "momentum", "variance")


def relative_error(predicted: int, measured: int) -> float:
    """``predicted / measured - 1`` (0.0 when both are 0).

    Examples:
        >>> round(relative_error(102, 100), 6), relative_error(0, 0)
        (0.02, 0.0)
    """
    if measured == 0:
        return 0.0 if predicted == 0 else float("inf")
    return predicted / measured - 1


def check_rows(rows: list[dict[str, Any]]) -> list[str]:
    """The rows out of tolerance, one line each (empty when all pass)."""
    bad = []
    for row in rows:
        err = relative_error(row["predicted"], row["measured"])
        if abs(err) > TOLERANCE[row["category"]] + 1e-12:
            bad.append(f"{row['category']} {row['name']}: predicted {row['predicted']:,}, measured {row['measured']:,}")
    return bad


def _measured_values(measured: dict[str, list[dict[str, Any]]]) -> tuple[list[dict[str, Any]], list[dict]]:
    values: list[dict[str, Any]] = []
    overheads: list[dict[str, Any]] = []
    for m in measured["activations"]:
        values.append({"measured": m["layer"]})
        values.append({"measured": m["model"]})
    for m in measured["reference_layers"]:
        values.append({"measured": m["layer"]})
    for m in measured["states"]:
        parts = {k: m.get(k, 0) for k in _PARTS}
        values.append({"measured": sum(parts.values()), "measured_parts": parts})
        overheads.append(
            {
                "name": "Adam/SGD step counters (one fp32 scalar per parameter tensor)",
                "config": m.get("convention", ""),
                "bytes": m["step_counters"],
            }
        )
    for m in measured["sharding"]:
        totals = [sum(r[k] for k in r) for r in m["ranks"]]
        busiest = max(range(len(totals)), key=totals.__getitem__)
        values.append(
            {
                "measured": totals[busiest],
                "measured_parts": {k: m["ranks"][busiest].get(k, 0) for k in _PARTS},
                "ranks": totals,
            }
        )
    return values, overheads


def write_results(measured: dict[str, list[dict[str, Any]]], device: str = "cpu") -> int:
    """Write ``results.json`` from fresh measurements; print and return 1 if any row is out of tolerance."""
    import torch
    import transformers

    rows = predict()
    values, overheads = _measured_values(measured)
    if len(values) != len(rows):
        raise RuntimeError(f"{len(values)} measurements for {len(rows)} predictions")
    for row, value in zip(rows, values, strict=True):
        row.update(value)
        row["error"] = relative_error(row["predicted"], row["measured"])
        row["ok"] = abs(row["error"]) <= TOLERANCE[row["category"]] + 1e-12
    data = {
        "generated_by": "make validate (python -m validation.measure)",
        "device": device,
        "versions": {
            "python": platform.python_version(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
        "tolerance": TOLERANCE,
        "rows": rows,
        "overheads": overheads,
    }
    RESULTS.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    bad = check_rows(rows)
    worst: dict[str, float] = {}
    for row in rows:
        worst[row["category"]] = max(worst.get(row["category"], 0.0), abs(row["error"]))
    for category, err in worst.items():
        n = sum(r["category"] == category for r in rows)
        print(f"{category}: {n} configurations, largest error {err:.4%}")
    for line in bad:
        print("OUT OF TOLERANCE:", line)
    print(f"wrote {RESULTS} ({len(rows)} rows)")
    return 1 if bad else 0
