"""One error family with stable codes: every code the engine raises is documented in ERROR_CODES."""

from __future__ import annotations

import re
from pathlib import Path

import calc
from calc.errors import ERROR_CODES, CalcError

ROOT = Path(__file__).resolve().parent.parent


def test_every_raised_code_is_documented() -> None:
    used = set()
    for path in (ROOT / "calc").rglob("*.py"):
        used |= set(re.findall(r'(?<![\w-])code="([a-z-]+)"', path.read_text(encoding="utf-8")))
    used.add("invalid-value")  # CalcError's default
    assert used == set(ERROR_CODES), used ^ set(ERROR_CODES)


def test_calc_error_is_a_value_error_with_plain_data() -> None:
    err = CalcError("tp", "must divide attention heads (heads=32)", 5, code="not-divisible")
    assert isinstance(err, ValueError) and err.to_dict() == {
        "field": "tp",
        "message": "tp must divide attention heads (heads=32) (got 5)",
        "code": "not-divisible",
    }
    assert calc.CalcError is CalcError and "ERROR_CODES" in calc.__all__
