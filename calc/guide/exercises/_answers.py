"""Answers: the [`Case`][calc.guide.exercises.Case] and [`Exercise`][calc.guide.exercises.Exercise] types, and
reading and printing an answer in its unit (bytes, seconds, GPUs, a ratio, a count).
"""

from __future__ import annotations

import functools
import random
import re
from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction

from calc.errors import CalcError
from calc.units import BYTE_UNITS, MAX_TEXT_CHARS, format_bytes, format_count, parse_decimal

MAX_SEED = 10**9
"""The largest seed accepted: a seed is a case number in a link, nothing more."""

ANSWER_UNITS: dict[str, str] = {
    "B": "bytes with a unit (1.1 TB, 1120 GB, 1.04 TiB) or a bare number in the unit the question names",
    "gpus": "a whole number (16, 16 GPUs)",
    "ratio": "a percentage (37.5 %) or a bare number in % (37.5)",
    "s": "a time in ns, µs, ms, s, min, h or d (3.9 ms, 5 min, 12 d) or a bare number in the unit the question names",
    "count": "a count (4.2e22, 42e21, 1.5B, 70 billion)",
}
"""The kinds of answer an exercise asks for, and what the reader may type for each.

A bare number is always read in the unit the question names and the answer is shown in (its ``display_unit``):
``37.5`` for a percentage is 37.5 %, so ``0.375`` there is 0.375 %, not three eighths."""

_TIME_UNITS: dict[str, Fraction] = {
    **dict.fromkeys(("ns", "nanoseconds"), Fraction(1, 10**9)),
    **dict.fromkeys(("us", "µs", "μs", "microseconds"), Fraction(1, 10**6)),
    **dict.fromkeys(("ms", "millisecond", "milliseconds"), Fraction(1, 1000)),
    **dict.fromkeys(("s", "sec", "secs", "second", "seconds"), Fraction(1)),
    **dict.fromkeys(("min", "mins", "minute", "minutes"), Fraction(60)),
    **dict.fromkeys(("h", "hr", "hrs", "hour", "hours"), Fraction(3600)),
    **dict.fromkeys(("d", "day", "days"), Fraction(86400)),
}
"""Seconds in each time unit a reader may type (lower case; ``12 d``, ``3 h``, ``5 min``, ``3.9 ms``)."""
_BYTE_NAMES: dict[str, int] = {**{k.lower(): v for k, v in BYTE_UNITS.items()}, "byte": 1, "bytes": 1}
_COUNT_SUFFIX: dict[str, int] = {"": 1, "k": 10**3, "K": 10**3, "M": 10**6, "B": 10**9, "G": 10**9, "T": 10**12}
_COUNT_WORDS: dict[str, int] = {"thousand": 10**3, "million": 10**6, "billion": 10**9, "trillion": 10**12}
_COUNT_NOUNS = frozenset(("flop", "flops", "×", "x", "tokens", "parameters", "params", "sequences"))
"""Words a count may end with (``1.5B tokens``, ``4.2e22 FLOPs``), besides the question's own unit."""
_ANSWER = re.compile(
    r"^\s*(?P<num>[-+]?[0-9][0-9_,]*\.?[0-9]*(?:[eE][-+]?[0-9]+)?|[-+]?\.[0-9]+)\s*(?P<unit>[^\s0-9.].*?)?\s*$"
)


@dataclass(frozen=True)
class Case:
    """One drawn case of an exercise: everything a page shows, with the engine's numbers in it.

    Attributes:
        exercise: The exercise's id (also its anchor on the exercises page).
        seed: The case number (0: the default numbers).
        params: The drawn parameters, as readable strings.
        question: The question, with the numbers.
        answer: The exact answer, in ``unit``'s base (bytes, seconds, GPUs, a fraction, a count).
        unit: One of [`ANSWER_UNITS`][calc.guide.exercises.ANSWER_UNITS].
        display_unit: The unit a bare number is read in and the answer is shown in (``GB``, ``ms``, ``%``).
        tolerance: Relative tolerance of the check (0: exact).
        hint: A hint that names the formula, not the number.
        steps: The worked solution, one step a line, with the numbers substituted.
    """

    exercise: str
    seed: int
    params: dict[str, str]
    question: str
    answer: Fraction
    unit: str
    display_unit: str
    tolerance: Fraction
    hint: str
    steps: tuple[str, ...]

    def as_dict(self) -> dict[str, object]:
        """Plain data for the browser (numbers as strings, so nothing is rounded by JavaScript)."""
        return {
            "exercise": self.exercise,
            "seed": self.seed,
            "params": dict(self.params),
            "question": self.question,
            "answer": self.answer_text,
            "answer_value": str(float(self.answer)),
            "unit": self.unit,
            "display_unit": self.display_unit,
            "tolerance": self.tolerance_text,
            "hint": self.hint,
            "steps": list(self.steps),
        }

    @property
    def answer_text(self) -> str:
        """The answer as the solution prints it."""
        return format_answer(self.answer, self.unit, self.display_unit)

    @property
    def tolerance_text(self) -> str:
        """The tolerance in words."""
        if not self.tolerance:
            return "exactly"
        return f"within {_pct(self.tolerance)}"


@dataclass(frozen=True)
class Exercise:
    """An exercise: named parameter choices and a solver from drawn parameters to a [`Case`][calc.guide.exercises.Case].

    Attributes:
        id: Stable id, the anchor on the exercises page.
        title: A short title.
        topic: The topic it practises (memory, ZeRO, activations, parallelism, communication, ...).
        choices: For each parameter, the values it may take; the first is the default.
        solve: Parameters to ``(question, answer, unit, display_unit, tolerance, hint, steps)``.
    """

    id: str
    title: str
    topic: str
    choices: tuple[tuple[str, tuple[object, ...]], ...]
    solve: Callable[[dict[str, object]], tuple]

    def params(self, seed: int) -> dict[str, object]:
        """The parameters of case ``seed``: the defaults for 0, else a reproducible draw."""
        if seed == 0:
            return {name: values[0] for name, values in self.choices}
        rng = random.Random(f"{self.id}:{seed}")
        return {name: rng.choice(values) for name, values in self.choices}


def _pct(x: Fraction) -> str:
    return f"{float(x) * 100:g} %"


def _b(n: int | Fraction) -> str:
    return format_bytes(int(n))


def _n(n: int | float) -> str:
    return format_count(int(n))


def _in_unit(value: Fraction, unit: str, display_unit: str) -> str:
    """A value in the question's unit alone: what a reader's answer reads as (``1100 GB``, ``12 days``, ``8×``).

    Examples:
        >>> _in_unit(Fraction(1100 * 10**9), "B", "GB"), _in_unit(Fraction(3, 800), "ratio", "%")
        ('1100 GB', '0.375 %')
        >>> _in_unit(Fraction(8), "count", "×"), _in_unit(Fraction(42 * 10**21), "count", "FLOP")
        ('8×', '4.2e+22 FLOP')
    """
    if unit == "B":
        return f"{float(value / BYTE_UNITS[display_unit]):.4g} {display_unit}"
    if unit == "count":
        return f"{float(value):.4g}" + (display_unit if display_unit in ("", "×") else f" {display_unit}")
    return format_answer(value, unit, display_unit)


def format_answer(value: Fraction, unit: str, display_unit: str) -> str:
    """Format an answer in its display unit.

    Examples:
        >>> format_answer(Fraction(1120 * 10**9), "B", "GB")
        '1120 GB (1.12 TB)'
        >>> format_answer(Fraction(3, 8), "ratio", "%")
        '37.5 %'
        >>> format_answer(Fraction(14), "gpus", "GPUs")
        '14 GPUs'
    """
    if unit == "B":
        shown = f"{float(value / BYTE_UNITS[display_unit]):.4g} {display_unit}"
        other = format_bytes(int(value))
        return shown if other.split()[-1] == display_unit else f"{shown} ({other})"
    if unit == "ratio":
        return f"{float(value) * 100:.4g} %"
    if unit == "s":
        return f"{float(value / _TIME_UNITS[display_unit]):.4g} {display_unit}"
    if unit == "gpus":
        return f"{int(value)} {display_unit}"
    return f"{float(value):.4g}"


def parse_answer(text: object, unit: str, display_unit: str) -> Fraction:
    """Read what the reader typed as an answer of kind ``unit``, exactly.

    A number with a unit is read in that unit (``1.1 TB``, ``12 d``, ``37.5 %``); a bare number in
    ``display_unit``, the unit the question asks in and the answer is shown in: ``37.5`` for a percentage is
    37.5 %, and ``0.375`` there is 0.375 %.

    Args:
        text: What was typed.
        unit: One of [`ANSWER_UNITS`][calc.guide.exercises.ANSWER_UNITS].
        display_unit: The unit a bare number is in (``GB``, ``ms``, ``%``, ``GPUs``).

    Returns:
        The value in the kind's base unit (bytes, seconds, a fraction, GPUs, a count).

    Raises:
        CalcError: For empty text, a number that cannot be read or a unit of the wrong kind.

    Examples:
        >>> parse_answer("1.1 TB", "B", "GB") == 1_100 * 10**9
        True
        >>> parse_answer("1120", "B", "GB") == 1_120 * 10**9
        True
        >>> parse_answer("37.5%", "ratio", "%"), parse_answer("37.5", "ratio", "%"), parse_answer("0.375", "ratio", "%")
        (Fraction(3, 8), Fraction(3, 8), Fraction(3, 800))
        >>> parse_answer("3.9 ms", "s", "ms"), parse_answer("12 d", "s", "days") == 12 * 86400
        (Fraction(39, 10000), True)
        >>> parse_answer("16 GPUs", "gpus", "GPUs")
        Fraction(16, 1)
        >>> try:
        ...     parse_answer("12 parsecs", "B", "GB")
        ... except CalcError as err:
        ...     print(err)
        answer must be bytes with a unit (1.1 TB, 1120 GB, 1.04 TiB) or a bare number in GB (got '12 parsecs')
        >>> try:
        ...     parse_answer("12 weeks", "s", "days")
        ... except CalcError as err:
        ...     print(err.rule)
        must be a time in ns, µs, ms, s, min, h or d (3.9 ms, 5 min, 12 d) or a bare number in days
    """
    if unit not in ANSWER_UNITS:
        raise CalcError("unit", f"must be one of {', '.join(ANSWER_UNITS)}", unit, code="unknown-name")
    raw = str(text)
    if len(raw) > MAX_TEXT_CHARS:
        raise CalcError("answer", f"must be at most {MAX_TEXT_CHARS} characters", raw)
    expect = ANSWER_UNITS[unit].replace("the unit the question names", display_unit or "the question's unit")
    if not raw.strip():
        raise CalcError("answer", f"must be {expect}: type a number")
    match = _ANSWER.match(raw.replace("\u202f", " ").replace("\u00a0", " "))
    wrong = CalcError("answer", f"must be {expect}", raw.strip())
    if not match:
        raise wrong
    try:
        number = parse_decimal(match["num"].replace(",", "").replace("_", ""), "answer", wrong.rule, minimum=0)
    except CalcError:  # the whole answer quoted, not the number alone
        raise CalcError("answer", "must not be negative", raw.strip()) if match["num"][0] == "-" else wrong from None
    scale = _SCALES[unit](match["unit"] or "", display_unit)
    if scale is None:
        raise wrong
    return number * scale


def _byte_scale(suffix: str, display: str) -> int | None:
    return _BYTE_NAMES.get((suffix or display).lower())


def _time_scale(suffix: str, display: str) -> Fraction | None:
    return _TIME_UNITS.get((suffix or display).lower())


def _ratio_scale(suffix: str, display: str) -> Fraction | int | None:
    return {"%": Fraction(1, 100), "percent": Fraction(1, 100), "": 1}.get((suffix or display).lower())


def _gpu_scale(suffix: str, display: str) -> int | None:
    names = ("", "gpu", "gpus", display.lower(), display.lower().removesuffix("es").removesuffix("s"))
    return 1 if suffix.lower() in names else None


def _count_scale(suffix: str, display: str) -> int | None:
    words = suffix.split()
    while words and words[-1].lower() in _COUNT_NOUNS | {display.lower()}:
        words.pop()
    if len(words) > 1:
        return None
    word = (words or [""])[0].removesuffix("FLOPs").removesuffix("FLOP").removesuffix("×").removesuffix("x")
    return _COUNT_SUFFIX.get(word) or _COUNT_WORDS.get(word.lower())


_SCALES: dict[str, Callable[[str, str], Fraction | int | None]] = {
    "B": _byte_scale,
    "s": _time_scale,
    "ratio": _ratio_scale,
    "gpus": _gpu_scale,
    "count": _count_scale,
}
"""Per kind of answer: (what follows the number, the question's unit) to the factor into the base unit, or None."""


Solver = Callable[[dict], tuple]
"""A solver: drawn parameters to a tuple of the case's parts."""

_TOL = Fraction(2, 100)
"""The relative tolerance of every non-exact answer: 2 %, room for rounding, not for a wrong formula."""


def _asks(units: str, hint: str, tolerance: Fraction = _TOL) -> Callable[[Solver], Solver]:
    """Declare what a solver asks: ``units`` is ``"kind/display"`` (``"B/GB"``, ``"s/ms"``, ``"ratio/%"``), then
    the hint and the tolerance. The decorated solver returns ``(question, answer, steps)``; the exercise sees the
    full ``(question, answer, unit, display_unit, tolerance, hint, steps)``.
    """
    kind, _, display = units.partition("/")
    if kind not in ANSWER_UNITS:
        raise CalcError("unit", f"must be one of {', '.join(ANSWER_UNITS)}", kind, code="unknown-name")

    def declare(solve: Solver) -> Solver:
        @functools.wraps(solve)
        def solved(p: dict) -> tuple:
            question, answer, steps = solve(p)
            return question, Fraction(answer), kind, display, Fraction(tolerance), hint, tuple(steps)

        return solved

    return declare


_MODELS = ((7, "7B"), (13, "13B"), (34, "34B"), (70, "70B"), (175, "175B"), (405, "405B"))
"""The model sizes exercises draw from: (billions, name); the first is the default."""
_GPUS = ("h100-sxm", "a100-80", "h200", "b200", "a100-40")
"""The GPU presets exercises draw from."""
