"""The command line, ``trainmem`` (also ``python -m calc``): every calculator of the site, same inputs.

Examples (shell)::

    trainmem list
    trainmem will-it-fit params=70B zero_stage=3 dp=64
    trainmem will-it-fit params=70B --json | jq .outputs.total_bytes
    trainmem training-memory --help

Each calculator of [`calc.widgets`][calc.widgets] is a subcommand of the same name with the
same fields; a missing field takes the calculator's default. The command computes the
fragment the page shows and reads it back (``data-value``/``data-unit``), so the numbers are
one computation. ``--json`` prints them with the unit in each key (bytes as integers, seconds
as floats); without it the result is printed as aligned tables.

Exit status: 0 for a result (whether or not it fits), 2 for bad input (one line on standard
error naming the field), 1 for a fault in the engine itself (one line, never a traceback).

To add a subcommand that is not a calculator, append a factory to
[`EXTRA_COMMANDS`][calc.cli.EXTRA_COMMANDS]: one entry, a function returning a
[`Command`][calc.cli.Command] (or ``None`` when what it needs is not there).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from calc.cli._args import bind, parse
from calc.cli._command import Command, calculator_command
from calc.cli._help import command_help, main_help
from calc.cli._text import table
from calc.errors import CalcError
from calc.widgets import calculators

__all__ = [
    "DISTRIBUTION",
    "EXTRA_COMMANDS",
    "PROG",
    "Command",
    "calculator_command",
    "commands",
    "main",
    "version",
]

DISTRIBUTION = "llm-train-memory"
"""The distribution's name on an index (``pip install llm-train-memory``); ``calc`` alone is taken."""

PROG = "trainmem"
"""The console command's name."""


def _plan() -> Command | None:
    from calc.cli._plan import plan_command

    return plan_command()


EXTRA_COMMANDS: list[Callable[[], Command | None]] = [_plan]
"""Factories of subcommands, one entry each; a command an entry returns replaces a calculator of its name.

A factory returns ``None`` when what it needs is absent, so the table never breaks an import. ``plan`` is
one: the planner's JSON is ``{"layouts": [...], "rejected": [...]}`` (``calc.cli._plan``)."""


def commands() -> dict[str, Command]:
    """Every subcommand but ``list``, by name: the calculators, then [`EXTRA_COMMANDS`][calc.cli.EXTRA_COMMANDS].

    Examples:
        >>> {"will-it-fit", "training-memory"} <= set(commands())
        True
    """
    table_ = {name: calculator_command(calc) for name, calc in calculators().items()}
    for factory in EXTRA_COMMANDS:
        cmd = factory()
        if cmd is not None:
            table_[cmd.name] = cmd
    return table_


def version() -> str:
    """This package's version: from ``pyproject.toml`` in a checkout, else from the installed metadata.

    ``pyproject.toml``'s ``[project] version`` is the one source; a wheel carries it in its metadata.

    Examples:
        >>> version().count(".") >= 1
        True
    """
    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    if pyproject.is_file():
        import tomllib

        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project", {})
        if project.get("name") == DISTRIBUTION and "version" in project:
            return str(project["version"])
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "0+unknown"


def _list_data() -> dict[str, object]:
    return {
        "commands": [
            {
                "name": c.name,
                "title": c.title,
                "description": c.description,
                "fields": [
                    {
                        "name": f.name,
                        "label": f.label,
                        "default": f.default,
                        "kind": f.kind,
                        "options": [v for v, _ in f.options],
                        "help": f.help,
                    }
                    for f in c.fields
                ],
            }
            for c in commands().values()
        ]
    }


def _list_text() -> str:
    rows = [["Command", "What it computes"], *[[c.name, c.title] for c in commands().values()]]
    return table(rows) + "\n\n`COMMAND --help` lists a command's fields with their defaults."


def _prog() -> str:
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    return "python -m calc" if getattr(spec, "name", "") == "calc.__main__" else PROG


def _say(text: str, stream) -> None:
    try:
        print(text, file=stream)
        stream.flush()
    except BrokenPipeError:  # `trainmem list | head -1`: the reader left; nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())


def _one_line(message: str) -> str:
    return " ".join(message.split())


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (0 result, 2 bad input, 1 engine fault).

    Args:
        argv: The arguments after the program's name (``sys.argv[1:]`` when ``None``).

    Examples:
        >>> main(["will-it-fit", "params=7B", "--json"]) == 0  # doctest: +ELLIPSIS
        {...
        True
        >>> main(["will-it-fit", "--dp", "0"])  # the error goes to standard error
        2
    """
    args = list(sys.argv[1:] if argv is None else argv)
    prog = _prog()
    try:
        inv = parse(args)
        if inv.version:
            _say(f"{prog} {version()} ({DISTRIBUTION})", sys.stdout)
            return 0
        if inv.command is None:
            if inv.help or not inv.pairs:
                _say(main_help(prog, commands().values()), sys.stdout)
                return 0
            raise CalcError("command", "is missing: name one (see `list`), then the inputs")
        if inv.command == "list":
            if inv.pairs or inv.word:
                name, value = inv.pairs[0] if inv.pairs else (inv.word or "", None)
                raise CalcError(name, "is not an input of list (it takes none)", value)
            answer = json.dumps(_list_data(), indent=2, ensure_ascii=False) if inv.json else _list_text()
        else:
            cmds = commands()
            cmd = cmds.get(inv.command)
            if cmd is None:
                names = ", ".join(["list", *cmds])
                raise CalcError("command", f"must be one of {names}", inv.command, code="unknown-name")
            if inv.help:
                _say(command_help(prog, cmd), sys.stdout)
                return 0
            values = bind(cmd.name, cmd.fields, inv.pairs, inv.word)
            answer = json.dumps(cmd.data(values), indent=2, ensure_ascii=False) if inv.json else cmd.text(values)
    except CalcError as err:
        _say(f"error: {_one_line(str(err))}", sys.stderr)
        return 2
    except Exception as err:  # noqa: BLE001 - a fault in the engine, not the input: one line, and say so
        _say(f"error: internal fault ({type(err).__name__}: {_one_line(str(err))}); please report it", sys.stderr)
        return 1
    _say(answer, sys.stdout)
    return 0
