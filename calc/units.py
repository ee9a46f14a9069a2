"""Parsing counts people type and formatting byte counts: the one place units are decided.

Bytes are integers everywhere in the engine; only this module turns them into
text, and it always says which system it uses: SI (GB = 10^9 bytes, as in the
ZeRO paper and GPU datasheets) or binary (GiB = 2^30 bytes, as printed by
``nvidia-smi``, PyTorch and DeepSpeed's estimators). A parameter count never
gets a byte prefix; it gets ``M``/``B``/``T`` (10^6, 10^9, 10^12).
"""

from __future__ import annotations

import math
import re
from decimal import ROUND_HALF_UP, Decimal, localcontext
from fractions import Fraction

from calc.errors import CalcError

__all__ = [
    "BYTE_UNITS",
    "MAX_COUNT",
    "format_bytes",
    "format_count",
    "parse_count",
    "parse_positive_int",
    "to_bytes",
]

BYTE_UNITS: dict[str, int] = {
    "B": 1,
    "kB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "PB": 10**15,
    "KiB": 2**10,
    "MiB": 2**20,
    "GiB": 2**30,
    "TiB": 2**40,
    "PiB": 2**50,
}
"""Bytes in one of each unit. SI units step by 1000, binary (IEC) units by 1024."""

MAX_COUNT = 10**18
"""The largest count accepted (a quintillion parameters or tokens): beyond it a typo is likelier than a model."""

_SI_LADDER = ("B", "kB", "MB", "GB", "TB", "PB")
_IEC_LADDER = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
_COUNT_SUFFIX = {"": 1, "k": 10**3, "m": 10**6, "b": 10**9, "g": 10**9, "t": 10**12}
_COUNT_RE = re.compile(r"^([0-9][0-9_,]*(?:\.[0-9]*)?|\.[0-9]+)(?:e([+-]?[0-9]+))?\s*([kmbgt]?)$", re.IGNORECASE)


def parse_count(text: object, field: str = "params") -> int:
    """Parse a count as people write it: ``7e9``, ``7B``, ``70b``, ``1.5T``, ``125M``, ``7_000_000``.

    Suffixes are decimal: ``k`` = 10^3, ``M`` = 10^6, ``B``/``G`` = 10^9, ``T`` = 10^12.
    The result must be a whole number of at least 1; the arithmetic is exact
    (``1.5T`` is 1,500,000,000,000, not a float approximation).

    Args:
        text: What the reader typed (a string), or an ``int``/``float`` already.
        field: The input's name, used in the error message.

    Returns:
        The count as an ``int``.

    Raises:
        CalcError: When the text is not a positive whole count.

    Examples:
        >>> parse_count("7B"), parse_count("70b"), parse_count("1.5T")
        (7000000000, 70000000000, 1500000000000)
        >>> parse_count("7e9"), parse_count(7.5e9), parse_count("124,439,808")
        (7000000000, 7500000000, 124439808)
        >>> parse_count("seven")
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: params must be a positive count such as 7B, 70e9, 1.5T or 124439808 (got 'seven')
    """
    rule = "must be a positive count such as 7B, 70e9, 1.5T or 124439808"
    if isinstance(text, bool):
        raise CalcError(field, rule, text)
    if isinstance(text, int):
        value = Fraction(text)
    elif isinstance(text, float):
        if not math.isfinite(text):
            raise CalcError(field, rule, text)
        value = Fraction(text)
    elif isinstance(text, str):
        match = _COUNT_RE.match(text.strip()) if len(text) <= 64 else None
        if not match:
            raise CalcError(field, rule, text)
        mantissa, exponent, suffix = match.groups()
        digits = mantissa.replace("_", "").replace(",", "")
        value = Fraction(digits) * Fraction(10) ** int(exponent or 0) * _COUNT_SUFFIX[suffix.lower()]
    else:
        raise CalcError(field, rule, text)
    if value.denominator != 1:
        raise CalcError(field, "must be a whole number", text if isinstance(text, str) else float(value))
    if value < 1:
        raise CalcError(field, "must be at least 1", text)
    if value > MAX_COUNT:
        raise CalcError(field, "must be at most 1e18", text)
    return int(value)


def parse_positive_int(text: object, field: str, *, minimum: int = 1, maximum: int | None = None) -> int:
    """Parse a whole number typed into a field, with bounds.

    Args:
        text: The typed value (``str``) or an ``int``.
        field: The input's name, used in the error message.
        minimum: The smallest value allowed.
        maximum: The largest value allowed, or ``None`` for no limit.

    Returns:
        The value as an ``int``.

    Raises:
        CalcError: When the text is not a whole number within the bounds.

    Examples:
        >>> parse_positive_int("64", "dp")
        64
        >>> parse_positive_int("0", "dp")
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: dp must be a whole number of at least 1 (got '0')
    """
    bound = f"of at least {minimum}" if maximum is None else f"from {minimum} to {maximum}"
    rule = f"must be a whole number {bound}"
    if isinstance(text, bool):
        raise CalcError(field, rule, text)
    if isinstance(text, int):
        value = text
    elif isinstance(text, str) and len(text) <= 32 and re.fullmatch(r"\s*[0-9][0-9_,]*\s*", text):
        value = int(text.strip().replace("_", "").replace(",", ""))
    else:
        raise CalcError(field, rule, text)
    if value < minimum or (maximum is not None and value > maximum):
        raise CalcError(field, rule, text)
    return value


def to_bytes(amount: object, unit: str, field: str) -> int:
    """Convert an amount typed in ``unit`` (``GB``, ``GiB``...) to whole bytes, rounding down.

    Args:
        amount: The typed amount (``str``, ``int`` or ``float``); must be positive.
        unit: A key of [`BYTE_UNITS`][calc.units.BYTE_UNITS].
        field: The input's name, used in the error message.

    Returns:
        Whole bytes.

    Raises:
        CalcError: When the amount is not a positive number or the unit is unknown.

    Examples:
        >>> to_bytes("80", "GB", "gpu_memory"), to_bytes("80", "GiB", "gpu_memory")
        (80000000000, 85899345920)
    """
    if unit not in BYTE_UNITS:
        raise CalcError("unit", f"must be one of {', '.join(BYTE_UNITS)}", unit, code="unknown-name")
    rule = "must be a positive number"
    try:
        if len(str(amount)) > 64:
            raise ValueError("too long")
        value = Fraction(str(amount).strip()) if not isinstance(amount, (int, float)) else Fraction(amount)
    except (ValueError, ZeroDivisionError, OverflowError):
        raise CalcError(field, rule, amount) from None
    if isinstance(amount, bool) or value <= 0:
        raise CalcError(field, rule, amount)
    return math.floor(value * BYTE_UNITS[unit])


def _round_sig(value: Fraction, digits: int) -> str:
    """Round a non-negative exact value to ``digits`` significant figures, half up; keep all integer digits."""
    if value == 0:
        return "0"
    with localcontext() as ctx:
        ctx.prec = len(str(value.numerator)) + len(str(value.denominator)) + digits + 10
        return _round_sig_exact(value, digits)


def _round_sig_exact(value: Fraction, digits: int) -> str:
    dec = Decimal(value.numerator) / Decimal(value.denominator)
    int_digits = len(str(int(dec))) if dec >= 1 else 0
    if dec >= 1:
        places = max(digits - int_digits, 0)
    else:
        places = digits - 1 - math.floor(math.log10(float(value)))
    q = Decimal(1).scaleb(-places)
    return f"{dec.quantize(q, rounding=ROUND_HALF_UP):,.{places}f}"


def format_bytes(n: int, *, binary: bool = False, unit: str | None = None, digits: int = 3) -> str:
    """Format a byte count for people, naming the unit system explicitly.

    Args:
        n: Bytes (a non-negative ``int``).
        binary: ``False`` for SI units (GB = 10^9), ``True`` for binary units (GiB = 2^30).
        unit: Force one unit (``"GB"``, ``"GiB"``...); by default the largest unit that keeps
            the number at least 1 is chosen.
        digits: Significant figures, rounded half up (integer digits are never dropped).

    Returns:
        Text such as ``"31.4 GB"`` or ``"112 GiB"``.

    Examples:
        >>> format_bytes(31_406_250_000)
        '31.4 GB'
        >>> format_bytes(112 * 10**9), format_bytes(112 * 10**9, binary=True)
        ('112 GB', '104 GiB')
        >>> format_bytes(1_120_000_000_000), format_bytes(1_120_000_000_000, digits=2)
        ('1.12 TB', '1.1 TB')
        >>> format_bytes(2_048 * 10**9, unit="GB")
        '2,048 GB'
        >>> format_bytes(0)
        '0 B'
    """
    if unit is None:
        ladder = _IEC_LADDER if binary else _SI_LADDER
        unit = ladder[0]
        for name in ladder:
            if n >= BYTE_UNITS[name]:
                unit = name
    elif unit not in BYTE_UNITS:
        raise CalcError("unit", f"must be one of {', '.join(BYTE_UNITS)}", unit, code="unknown-name")
    if unit == "B":
        return f"{n:,} B"
    return f"{_round_sig(Fraction(n, BYTE_UNITS[unit]), digits)} {unit}"


def format_count(n: int, *, digits: int = 3) -> str:
    """Format a count (parameters, tokens) with a decimal suffix: ``7B``, ``1.5T``, ``124M``.

    Examples:
        >>> format_count(7_000_000_000), format_count(124_439_808), format_count(405_853_388_800)
        ('7B', '124M', '406B')
        >>> format_count(1_500_000_000_000), format_count(950)
        ('1.5T', '950')
    """
    for suffix, size in (("T", 10**12), ("B", 10**9), ("M", 10**6), ("k", 10**3)):
        if n >= size:
            text = _round_sig(Fraction(n, size), digits)
            if "." in text:
                text = text.rstrip("0").rstrip(".")
            return f"{text}{suffix}"
    return f"{n:,}"
