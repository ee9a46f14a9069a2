"""Optimizer conventions beyond Adam (Lion, Muon, Adafactor, Shampoo, SOAP): their bytes, per parameter and per
matrix, hand-computed; that every calculator offers them; and that old names are accepted but not offered."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calc.cli import main
from calc.errors import CalcError
from calc.memory.conventions import (
    CONVENTION_ALIASES,
    CONVENTIONS,
    KRONECKER_BYTES_PER_PARAM,
    SHAMPOO_BLOCK,
    SOAP_MAX_DIM,
    convention_options,
    matrix_state_bytes,
    resolve_convention,
)
from calc.memory.model_state import model_state_bytes
from calc.widgets import calculators, render

NEW = {
    # name: (weights, gradients, master, momentum, variance, total)
    "mixed-lion-12": (2, 2, 4, 4, 0, 12),  # Chen et al. 2023: one momentum
    "mixed-muon-12": (2, 2, 4, 4, 0, 12),  # Jordan et al. 2024: one momentum per matrix
    "mixed-adafactor-8": (2, 2, 4, 0, 0, 8),  # beta1 = 0, factored v rounds to 0 B/param
    "mixed-adafactor-momentum-12": (2, 2, 4, 4, 0, 12),
    "mixed-shampoo-28": (2, 2, 4, 4, 16, 28),  # L, R and inverse roots: 4 b^2 fp32 per b^2 block
    "mixed-soap-32": (2, 2, 4, 4, 20, 32),  # v 4 + L, R, Q_L, Q_R 16
}


@pytest.mark.parametrize(("name", "expected"), NEW.items())
def test_bytes_per_parameter(name: str, expected: tuple[int, ...]) -> None:
    c = CONVENTIONS[name]
    assert (c.weights, c.gradients, c.master, c.momentum, c.variance, c.bytes_per_param) == expected
    assert model_state_bytes(10**9, convention=name).total == expected[-1] * 10**9
    assert c.source and str(expected[-1]) in c.label


@pytest.mark.parametrize(
    ("name", "rows", "cols", "expected"),
    [
        ("mixed-adam-16", 4, 6, 192),  # (4 + 4) x 24
        ("mixed-lion-12", 4, 6, 96),  # 4 x 24
        ("mixed-muon-12", 4, 6, 96),
        ("mixed-adafactor-8", 4, 6, 40),  # 4 x (4 + 6): one fp32 value per row and per column
        ("mixed-adafactor-8", 4096, 4096, 32768),  # 4 x 8192
        ("mixed-adafactor-momentum-12", 4, 6, 136),  # 96 + 40
        ("mixed-shampoo-28", 4, 6, 512),  # 96 + 2 x 4 x (16 + 36)
        ("mixed-shampoo-28", 1024, 1024, 20_971_520),  # one square block: 20 B x 1024^2
        # rows cut into 1024 + 476: blocks (1024, 1024) and (476, 1024):
        # 8 x (2 x 1024^2) + 8 x (476^2 + 1024^2) + 4 x 1500 x 1024 = 16,777,216 + 10,201,216 + 6,144,000
        ("mixed-shampoo-28", 1500, 1024, 33_122_432),
        ("mixed-soap-32", 4, 6, 608),  # (4 + 4) x 24 + 2 x 4 x (16 + 36)
        # Llama-2-7B's up projection: 11008 > 10000 keeps no factor; 8 x 45,088,768 + 8 x 4096^2
        ("mixed-soap-32", 4096, 11008, 494_927_872),
    ],
)
def test_matrix_state_bytes(name: str, rows: int, cols: int, expected: int) -> None:
    assert matrix_state_bytes(name, rows, cols) == expected


@given(st.sampled_from(sorted(CONVENTIONS)), st.integers(1, SHAMPOO_BLOCK))
def test_square_blocks_cost_the_conventions_bytes(name: str, side: int) -> None:
    """For a square matrix within one block the exact count is the convention's per-parameter figure."""
    c = CONVENTIONS[name]
    exact = matrix_state_bytes(name, side, side)
    extra = 4 * 2 * side if c.shape == "factored" else 0  # Adafactor's statistics, not in the integer total
    assert exact == (c.momentum + c.variance) * side * side + extra


def test_named_assumptions() -> None:
    assert (SHAMPOO_BLOCK, SOAP_MAX_DIM, KRONECKER_BYTES_PER_PARAM) == (1024, 10000, 16)
    # blocked Shampoo: many square blocks cost the same per parameter as one
    assert matrix_state_bytes("mixed-shampoo-28", 4096, 8192) == 20 * 4096 * 8192
    # unblocked, a non-square matrix costs more than a square one: 8 (m^2 + n^2) / (mn) > 16
    assert matrix_state_bytes("mixed-soap-32", 1000, 4000) > (4 + 20) * 1000 * 4000


@pytest.mark.parametrize(("rows", "cols"), [(0, 4), (4, -1), ("x", 4)])
def test_bad_shapes_name_the_field(rows: object, cols: object) -> None:
    with pytest.raises(CalcError) as err:
        matrix_state_bytes("mixed-shampoo-28", rows, cols)  # type: ignore[arg-type]
    assert err.value.field in ("rows", "cols")


def test_every_calculator_offers_the_new_conventions() -> None:
    offering = [c for c in calculators().values() if any(f.name == "convention" for f in c.fields)]
    assert offering
    for calc in offering:
        values = [v for v, _ in next(f for f in calc.fields if f.name == "convention").options]
        assert set(NEW) <= set(values), calc.name
    for name in NEW:
        assert render("will-it-fit", {"convention": name})["ok"], name


def test_the_command_line_takes_them(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["will-it-fit", "--convention", "mixed-soap-32", "--json"]) == 0
    assert "mixed-soap-32" not in capsys.readouterr().err


def test_old_names_are_accepted_but_not_offered() -> None:
    """A select lists current conventions only; an old name still resolves (links made before a rename)."""
    assert CONVENTION_ALIASES
    values = [v for v, _ in convention_options()]
    assert values == list(CONVENTIONS)
    for alias, new in CONVENTION_ALIASES.items():
        assert alias not in values
        assert all("Old name" not in label for _, label in convention_options())
        assert resolve_convention(alias) is CONVENTIONS[new]
        old_page, new_page = (render("will-it-fit", {"convention": n})["html"] for n in (alias, new))
        assert re.findall(r'data-value="([^"]*)"', old_page) == re.findall(r'data-value="([^"]*)"', new_page)
