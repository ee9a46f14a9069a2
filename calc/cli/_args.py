"""The command line's grammar: a command, ``field=value`` inputs and flags, in any order.

Inputs are written ``field=value``, ``--field=value`` or ``--field value`` (``-`` and ``_`` are
the same in a field name); one bare word after the command is the command's first field
(``plan llama3-70b`` is ``plan model=llama3-70b``). A checkbox field also takes ``--field`` alone (on) and reads
``1/0``, ``true/false``, ``yes/no``, ``on/off``. A textarea field (a pasted ``config.json``)
reads a file with ``field=@path``, or standard input with ``field=@-``. ``--json``,
``--help``/``-h`` and ``--version`` may stand anywhere. Every mistake is a
[`CalcError`][calc.errors.CalcError] naming the field (or ``command``).
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from calc.errors import CalcError
from calc.widgets import Field, calculators

__all__ = ["FLAGS", "Invocation", "bind", "parse"]

FLAGS = {"--json": "json", "--help": "help", "-h": "help", "--version": "version"}
"""The flags, wherever they stand, and the attribute of [`Invocation`][calc.cli._args.Invocation] each sets."""

_TRUE = ("1", "true", "yes", "on")
_FALSE = ("0", "false", "no", "off", "")


@dataclass
class Invocation:
    """A command line, split but not yet checked against a command's fields.

    Attributes:
        command: The first bare word, or ``None``.
        word: The bare word after it (the value of the command's first field), or ``None``.
        pairs: ``(field, value)`` in the order given; ``value`` is ``None`` for a bare ``--field``.
        json: ``--json`` was given.
        help: ``--help`` or ``-h`` was given.
        version: ``--version`` was given.
    """

    command: str | None = None
    word: str | None = None
    pairs: list[tuple[str, str | None]] = field(default_factory=list)
    json: bool = False
    help: bool = False
    version: bool = False


def _name(text: str) -> str:
    return text.replace("-", "_")


def parse(argv: Sequence[str]) -> Invocation:
    """Split a command line; flags may stand anywhere, before or after the inputs.

    Examples:
        >>> inv = parse(["--json", "will-it-fit", "params=70B", "--zero-stage", "3", "--dp=64"])
        >>> inv.command, inv.pairs, inv.json
        ('will-it-fit', [('params', '70B'), ('zero_stage', '3'), ('dp', '64')], True)
        >>> parse(["plan", "llama3-70b", "gpus=64"]).word
        'llama3-70b'
        >>> parse(["will-it-fit", "70B", "dp"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: dp needs a value: inputs are field=value pairs
    """
    inv = Invocation()
    args = list(argv)
    i = 0
    while i < len(args):
        arg = args[i]
        i += 1
        if arg in FLAGS:
            setattr(inv, FLAGS[arg], True)
        elif arg.startswith("--") and len(arg) > 2:
            key, sep, value = arg[2:].partition("=")
            if sep:
                inv.pairs.append((_name(key), value))
            elif i < len(args) and args[i] not in FLAGS and not args[i].startswith("--") and "=" not in args[i]:
                inv.pairs.append((_name(key), args[i]))
                i += 1
            else:
                inv.pairs.append((_name(key), None))
        elif "=" in arg and not arg.startswith("="):
            key, _, value = arg.partition("=")
            inv.pairs.append((_name(key), value))
        elif inv.command is None and arg and not arg.startswith("-"):
            inv.command = arg
        elif inv.command is not None and inv.word is None and arg and not arg.startswith("-"):
            inv.word = arg
        elif inv.command is not None and arg.isidentifier():
            raise CalcError(arg, "needs a value: inputs are field=value pairs")
        elif inv.command is not None:
            rule = "after the first field's bare value must be" if inv.word else "must be"
            raise CalcError("inputs", f"{rule} field=value pairs", arg)
        else:
            raise CalcError("command", "must be a name (see `list`)", arg)
    return inv


def _read(name: str, value: str) -> str:
    path = value[1:]
    try:
        return sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        reason = getattr(err, "strerror", None) or type(err).__name__
        raise CalcError(name, f"must name a readable UTF-8 file after @ ({reason})", path) from None


def _checkbox(name: str, value: str | None) -> str:
    text = "1" if value is None else value.strip().lower()
    if text in _TRUE:
        return "1"
    if text in _FALSE:
        return "0"
    raise CalcError(name, "must be on or off (1/0, true/false, yes/no, on/off)", value)


def bind(
    command: str, fields: Sequence[Field], pairs: Sequence[tuple[str, str | None]], word: str | None = None
) -> dict[str, str]:
    """Check ``pairs`` (and a bare ``word``, the first field) against a command's fields; fill in the defaults.

    Examples:
        >>> from calc.widgets import calculators
        >>> fields = calculators()["will-it-fit"].fields
        >>> bind("will-it-fit", fields, [("params", "70B"), ("zero_stage", "3")])["zero_stage"]
        '3'
        >>> bind("will-it-fit", fields, [("zero_stage", "4")])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: zero_stage must be one of 0, 1, 2, 3 (got '4')
        >>> bind("will-it-fit", fields, [("batch", "8")])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: batch is not an input of will-it-fit (its inputs: params, convention, ...) (got '8')
        >>> serving = calculators()["serving-memory"].fields
        >>> bind("serving-memory", serving, [("model", "llama2-70b")])["preset"]  # the old field name still works
        'llama2-70b'
    """
    by_name: Mapping[str, Field] = {f.name: f for f in fields}
    if word is not None:
        if word in by_name or not fields:
            raise CalcError(word, "needs a value: inputs are field=value pairs")
        pairs = [(fields[0].name, word), *pairs]
    values = {f.name: f.default for f in fields}
    seen: set[str] = set()
    for name, value in pairs:
        if name == "model" and name not in by_name and "preset" in by_name and "config" in by_name:
            # The serving calculator's old field: a preset name, or a config.json (inline JSON or @file).
            name = "config" if value is not None and value.lstrip().startswith(("{", "@")) else "preset"
        f = by_name.get(name)
        if f is None:
            known = ", ".join(by_name) or "none"
            raise CalcError(name, f"is not an input of {command} (its inputs: {known})", value)
        if name in seen:
            raise CalcError(name, "is given twice", value)
        seen.add(name)
        if f.kind == "checkbox":
            values[name] = _checkbox(name, value)
            continue
        if value is None:
            raise CalcError(name, "needs a value (field=value or --field value)")
        if f.kind == "textarea" and value.startswith("@"):
            value = _read(name, value)
        value = f.current(value)  # an old option name reads as the current one
        if f.kind == "select" and value not in (options := [v for v, _ in f.options]):
            raise CalcError(name, f"must be one of {', '.join(options)}", value, code="unknown-name")
        values[name] = value
    return calculators()[command].implied(values, seen) if command in calculators() else values
