"""Parsing and formatting: the one place units are decided."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calc import CalcError, format_bytes, format_count, parse_count, to_bytes
from calc.units import format_seconds, parse_decimal


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("7e9", 7_000_000_000),
        ("7B", 7_000_000_000),
        ("70b", 70_000_000_000),
        ("405B", 405_000_000_000),
        ("1.5T", 1_500_000_000_000),  # exact: no float rounding
        ("125M", 125_000_000),
        ("124439808", 124_439_808),
        ("124,439,808", 124_439_808),
        ("6_738_415_616", 6_738_415_616),
        (" 7B ", 7_000_000_000),
        ("0.5B", 500_000_000),
        ("7.5e9", 7_500_000_000),
        ("1e3k", 1_000_000),
        (7.5e9, 7_500_000_000),
        (42, 42),
    ],
)
def test_parse_count(text: object, expected: int) -> None:
    assert parse_count(text) == expected


@pytest.mark.parametrize("text", ["", "seven", "7 GB", "-7B", "7BB", "1e-3", "0", "0.5", "nan", "inf", True, None, [7]])
def test_parse_count_rejects(text: object) -> None:
    with pytest.raises(CalcError) as info:
        parse_count(text)
    assert info.value.field == "params"


@pytest.mark.parametrize(
    ("n", "kwargs", "expected"),
    [
        (0, {}, "0 B"),
        (999, {}, "999 B"),
        (1000, {}, "1.00 kB"),
        (31_406_250_000, {}, "31.4 GB"),
        (1_875_000_000, {}, "1.88 GB"),  # half up, like ZeRO Table 1
        (117_187_500, {"unit": "GB"}, "0.117 GB"),
        (120 * 10**9, {}, "120 GB"),
        (2**30, {"binary": True}, "1.00 GiB"),
        (112 * 10**9, {"binary": True}, "104 GiB"),
        (1_120 * 10**9, {"digits": 2}, "1.1 TB"),
        (16_000 * 10**9, {"unit": "GB"}, "16,000 GB"),
    ],
)
def test_format_bytes(n: int, kwargs: dict, expected: str) -> None:
    assert format_bytes(n, **kwargs) == expected


@pytest.mark.parametrize(("n", "expected"), [(7 * 10**9, "7B"), (124_439_808, "124M"), (1_500_000_000_000, "1.5T")])
def test_format_count(n: int, expected: str) -> None:
    assert format_count(n) == expected


def test_to_bytes() -> None:
    assert to_bytes("141", "GB", "gpu_memory") == 141 * 10**9
    with pytest.raises(CalcError, match="gpu_memory must be a positive number"):
        to_bytes("-3", "GB", "gpu_memory")
    with pytest.raises(CalcError):
        to_bytes("x", "GB", "gpu_memory")


@given(st.integers(min_value=1, max_value=10**15))
def test_parse_count_round_trips_integers(n: int) -> None:
    assert parse_count(str(n)) == n
    assert parse_count(f"{n:,}") == n


# ------------------------------------------------- text and exponent sizes checked before any arithmetic


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1e100000000", "params must be at most 1e18"),  # took 291 s: 10**100000000 was computed first
        ("1e10000000", "params must be at most 1e18"),  # took 8-15 s
        ("1e101", "params must be at most 1e18"),
        ("0e1000000", "params must be at least 1"),
        ("1e-100000000", "params must be at least 1"),
        ("1e-400", "params must be at least 1"),
        ("9" * 65, "params must be a positive count"),  # longer than MAX_TEXT_CHARS
        ("9" * 5000, "params must be a positive count"),
        ("1e" + "9" * 62, "params must be at most 1e18"),
        ("1e19", "params must be at most 1e18"),
    ],
)
def test_parse_count_bounds_before_computing(text: str, message: str) -> None:
    with pytest.raises(CalcError, match=message):
        parse_count(text)


@pytest.mark.parametrize(
    "text",
    ["1e100000000", "1e-100000000", "1e5000", "1e400", "NaN", "inf", "-0", "1/3", "9" * 65, "", "0x10", "1e"],
)
def test_to_bytes_rejects_before_computing(text: str) -> None:
    with pytest.raises(CalcError, match="gpu_memory must be a positive number"):
        to_bytes(text, "GB", "gpu_memory")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("80", Fraction(80)),
        ("0.5", Fraction(1, 2)),
        ("1e3", Fraction(1000)),
        ("-2", Fraction(-2)),
        ("1_000", Fraction(1000)),
        ("1e100", Fraction(10**100)),
        (".5", Fraction(1, 2)),
        (2.5, Fraction(5, 2)),
    ],
)
def test_parse_decimal(text: object, expected: Fraction) -> None:
    assert parse_decimal(text, "x", "must be a number") == expected


@pytest.mark.parametrize(
    "text", ["1e101", "1e-101", "nan", "Infinity", "1/2", "--1", "1e", "", " ", "9" * 65, True, float("inf"), None]
)
def test_parse_decimal_rejects(text: object) -> None:
    with pytest.raises(CalcError, match="x must be a number"):
        parse_decimal(text, "x", "must be a number")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("abc", "'abc'"),
        ("x" * 40, repr("x" * 40)),
        ("x" * 41, repr("x" * 40 + "…")),
        ("y" * 10_000, repr("y" * 40 + "…")),
        (3, "3"),
        (10**60, str(10**60)[:40] + "…"),
    ],
)
def test_calc_error_cuts_long_values(value: object, shown: str) -> None:
    assert CalcError("f", "must be short", value).message == f"f must be short (got {shown})"


@given(st.floats(min_value=1e-9, max_value=1e9, allow_nan=False, allow_infinity=False))
def test_format_seconds_is_never_in_exponent_notation(seconds: float) -> None:
    """The planner's ranking read "1e+03 ms" for a step of 0.9995 s: a value that rounds up to the next unit."""
    text = format_seconds(seconds)
    assert "e+" not in text and "e-" not in text, (seconds, text)


@pytest.mark.parametrize(
    ("seconds", "text"), [(0.99951, "1 s"), (0.00099951, "1 ms"), (0.9994, "999 ms"), (99.96, "100 s")]
)
def test_format_seconds_rounds_up_into_the_next_unit(seconds: float, text: str) -> None:
    assert format_seconds(seconds) == text


def _decimal_round_sig(value: Fraction, digits: int) -> str:
    """The reference: ``Decimal``'s ROUND_HALF_UP quantize, at a precision wide enough to be exact here."""
    import math
    from decimal import ROUND_HALF_UP, Decimal, localcontext

    if value == 0:
        return "0"
    with localcontext() as ctx:
        ctx.prec = len(str(value.numerator)) + len(str(value.denominator)) + digits + 10
        dec = Decimal(value.numerator) / Decimal(value.denominator)
        if dec >= 1:
            places = max(digits - len(str(int(dec))), 0)
        else:
            places = digits - 1 - math.floor(math.log10(float(value)))
        return f"{dec.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP):,.{places}f}"


@given(
    st.integers(min_value=0, max_value=10**30),
    st.sampled_from([1, 8, 1000, 1024, 10**6, 2**20, 10**9, 2**30, 10**12, 2**40, 10**15, 7, 10**5 * 3]),
    st.integers(min_value=1, max_value=5),
)
def test_round_sig_in_integers_equals_decimals_half_up(n: int, d: int, digits: int) -> None:
    from calc.units import _round_sig

    assert _round_sig(Fraction(n, d), digits) == _decimal_round_sig(Fraction(n, d), digits)


@pytest.mark.parametrize(
    ("n", "d", "digits", "text"),
    [(125, 1000, 2, "0.13"), (1235, 100, 3, "12.4"), (1234567, 1, 3, "1,234,567"), (99950, 1000, 3, "100.0"),
     (5, 10**7, 1, "0.0000005"), (0, 1, 3, "0")],
)  # fmt: skip
def test_round_sig_ties_round_up(n: int, d: int, digits: int, text: str) -> None:
    from calc.units import _round_sig

    assert _round_sig(Fraction(n, d), digits) == text
