"""One error family for every bad input the engine can be given.

Every message names the field, the rule and the value, so that a reader who
typed something wrong knows which box to fix and how:

Examples:
    >>> from calc.errors import CalcError
    >>> err = CalcError("dp", "must be a whole number of at least 1", 0)
    >>> str(err)
    'dp must be a whole number of at least 1 (got 0)'
    >>> err.field, err.code
    ('dp', 'invalid-value')
    >>> isinstance(err, ValueError)
    True
"""

from __future__ import annotations

__all__ = ["ERROR_CODES", "MAX_ECHO_CHARS", "CalcError", "echo"]

MAX_ECHO_CHARS = 40
"""The most characters of a bad value a message quotes; longer values are cut and end in ``…``.

A reader who pasted 10 KB into a box needs to see which box and what it starts with, not the 10 KB
again (and a page must not grow by what was pasted)."""

ERROR_CODES: dict[str, str] = {
    "invalid-value": "The value is not of the right kind or outside the allowed range (a count, a whole number, a "
    "positive amount).",
    "missing-field": "A required field is absent, e.g. a key of a Hugging Face config.json.",
    "not-divisible": "A parallel degree does not divide what it splits (heads by tp, layers by pp, the sequence by "
    "cp, the batch by dp x micro-batch...).",
    "unknown-name": "A name is not one of the known ones (a calculator, convention, preset, GPU or schedule); the "
    "message lists them.",
    "unsupported": "The input is understood but not modelled (a model type, or an option that needs another).",
}
"""Every error code a [`CalcError`][calc.errors.CalcError] can carry, with its meaning. Codes are stable: tools and
tests may match on them, and ``tests/test_errors.py`` checks that the engine raises no other."""


def echo(value: object) -> str:
    """The value as a message quotes it: ``repr`` for text, ``str`` otherwise, cut to ``MAX_ECHO_CHARS``.

    Examples:
        >>> echo("abc"), echo(3), echo("x" * 100)
        ("'abc'", '3', "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…'")
    """
    if isinstance(value, str):
        return repr(value) if len(value) <= MAX_ECHO_CHARS else repr(value[:MAX_ECHO_CHARS] + "…")
    try:
        text = str(value)
    except ValueError:  # e.g. an int past Python's digit limit for str()
        text = f"a {type(value).__name__} too long to show"
    return text if len(text) <= MAX_ECHO_CHARS else text[:MAX_ECHO_CHARS] + "…"


class CalcError(ValueError):
    """Bad input to the engine: a value the calculators and the CLI show verbatim.

    Args:
        field: The name of the input at fault, as the calculators name it
            (``params``, ``dp``, ``tp``...).
        rule: What the value should have been, phrased to follow the field name.
        value: The offending value, echoed back in the message (omitted when ``None``; cut to
            [`MAX_ECHO_CHARS`][calc.errors.MAX_ECHO_CHARS] characters plus ``…``).
        code: A stable, machine-readable code, one of [`ERROR_CODES`][calc.errors.ERROR_CODES].

    Examples:
        >>> CalcError("tp", "must divide attention heads (heads=32)", 5, code="not-divisible").message
        'tp must divide attention heads (heads=32) (got 5)'
    """

    def __init__(self, field: str, rule: str, value: object = None, *, code: str = "invalid-value") -> None:
        self.field = field
        self.rule = rule
        self.value = value
        self.code = code
        msg = f"{field} {rule}"
        if value is not None:
            msg += f" (got {echo(value)})"
        self.message = msg
        super().__init__(msg)

    def to_dict(self) -> dict[str, str]:
        """Return the error as plain data, for the browser worker and the CLI.

        Examples:
            >>> CalcError("params", "must be positive", -1).to_dict()["field"]
            'params'
        """
        return {"field": self.field, "message": self.message, "code": self.code}
