"""Pieces several test files share: a captured subprocess, a pasted Llama config, Narayanan et al.'s Table 1, a
calculator's fragment and error, a walk through JSON, the lines a layered line chart hides."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import pytest

if TYPE_CHECKING:
    from collections.abc import Iterator

    from calc.errors import CalcError
    from calc.widgets import Calculator

ROOT = Path(__file__).resolve().parent.parent

LLAMA_7B_CONFIG = {
    "model_type": "llama", "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,
    "num_hidden_layers": 32, "num_attention_heads": 32,
}  # fmt: skip
"""The keys of a Llama 7B ``config.json`` a pasted config needs (the rest take transformers' defaults)."""


def walk_json(value: object) -> Iterator[object]:
    """``value`` and everything inside it, depth first: each dict's values, each list's items."""
    yield value
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
    for child in children:
        yield from walk_json(child)


def hidden_lines(spec: dict, x: str = "seq") -> dict[str, str]:
    """The series of a layered line chart (``spec["layer"][0]``: rows of ``series``, ``x`` and ``amount``) that a
    later-drawn series covers (the same ``x`` values, every amount within 5 %: one line on a log axis) and no
    dashed line layer drawn after them repeats: series name -> the series on top of it."""
    lines = spec["layer"][0]["data"]["values"]
    points: dict[str, list[tuple[object, float]]] = {}
    for r in lines:
        points.setdefault(r["series"], []).append((r[x], r["amount"]))

    def redrawn(name: str) -> bool:
        mine = [r for r in lines if r["series"] == name]
        return any(
            layer["mark"]["type"] == "line"
            and layer["mark"].get("strokeDash")
            and [r for r in layer["data"]["values"] if r["series"] == name] == mine
            for layer in spec["layer"][1:]
        )

    names, out = list(points), {}
    for i, a in enumerate(names):
        for b in names[i + 1 :]:
            pa, pb = points[a], points[b]
            same = [s for s, _ in pa] == [s for s, _ in pb]
            if same and all(abs(u - v) <= 0.05 * max(u, v) for (_, u), (_, v) in zip(pa, pb, strict=True)):
                out.setdefault(a, b)
    return {a: b for a, b in out.items() if not redrawn(a)}


def run_captured(
    args: list[str], *, timeout: float, cwd: Path = ROOT, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run ``args`` in ``cwd`` with its output captured as text; the caller checks the return code."""
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False)


def widget_fragment(calculator: Calculator, changes: dict[str, str]) -> str:
    """The HTML fragment ``calculator`` renders for its defaults with ``changes``."""
    return calculator.compute({**calculator.defaults, **changes})


def widget_error(calculator: Calculator, changes: dict[str, str]) -> CalcError:
    """The `CalcError` ``calculator`` raises for its defaults with ``changes`` (the test fails if none is)."""
    from calc.errors import CalcError  # conftest imports this module: the engine loads only when a test asks

    with pytest.raises(CalcError) as info:
        widget_fragment(calculator, changes)
    return info.value


class NarayananRow(NamedTuple):
    """One row of Narayanan et al. 2021 (arXiv:2104.04473) Table 1, as printed."""

    preset: str
    params: str
    """The printed size ("1008B" for the 1T row)."""
    hidden: int
    layers: int
    t: int
    p: int
    gpus: int
    batch: int
    tflops: int
    """Published hardware TFLOP/s per GPU."""


NARAYANAN_TABLE_1 = [
    NarayananRow(*row)
    for row in [
        ("narayanan-1.7b", "1.7B", 2304, 24, 1, 1, 32, 512, 137),
        ("narayanan-3.6b", "3.6B", 3072, 30, 2, 1, 64, 512, 138),
        ("narayanan-7.5b", "7.5B", 4096, 36, 4, 1, 128, 512, 142),
        ("narayanan-18.4b", "18.4B", 6144, 40, 8, 1, 256, 1024, 135),
        ("narayanan-39.1b", "39.1B", 8192, 48, 8, 2, 512, 1536, 138),
        ("narayanan-76.1b", "76.1B", 10240, 60, 8, 4, 1024, 1792, 140),
        ("narayanan-145.6b", "145.6B", 12288, 80, 8, 8, 1536, 2304, 148),
        ("narayanan-310.1b", "310.1B", 16384, 96, 8, 16, 1920, 2160, 155),
        ("narayanan-529.6b", "529.6B", 20480, 105, 8, 35, 2520, 2520, 163),
        ("narayanan-1t", "1008B", 25600, 128, 8, 64, 3072, 3072, 163),
    ]
]
"""All rows: s = 2048, V = 51,200, full recomputation, interleaved schedule, A100 80 GB on DGX nodes with
8 x 200 Gb/s HDR InfiniBand; micro-batch and v are not printed."""


def check_garbage(calculator: Calculator, garbage: str, needs: dict[str, dict[str, str]]) -> None:
    """``garbage`` typed into each field of ``calculator`` (with the inputs ``needs`` lists for that field) comes
    back as a `CalcError` naming a field, or as a fragment that does not echo markup."""
    from calc.errors import CalcError

    for f in calculator.fields:
        try:
            fragment = widget_fragment(calculator, {f.name: garbage, **needs.get(f.name, {})})
        except CalcError as err:
            assert err.field and err.message
        else:
            assert "<script>" not in fragment
