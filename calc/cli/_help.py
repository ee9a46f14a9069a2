"""The help texts: ``--help`` for the program and for each command, built from the commands' fields."""

from __future__ import annotations

import textwrap
from collections.abc import Iterable

from calc.cli._command import Command
from calc.cli._text import table
from calc.widgets import Field

__all__ = ["command_help", "main_help"]


def _field_help(f: Field) -> str:
    parts = [f.label + (f": {f.help}" if f.help else "")]
    if f.kind == "select":
        parts.append("one of " + ", ".join(v for v, _ in f.options))
    elif f.kind == "checkbox":
        parts.append("on or off (1/0); --" + f.name + " alone turns it on")
    elif f.kind == "textarea":
        parts.append(f"text, or {f.name}=@FILE to read a file (@- for standard input)")
    if f.enabled_when is not None:
        parts.append(f"used when {f.enabled_when[0]}={f.enabled_when[1]}")
    return "; ".join(parts)


def _wrap(left: str, right: str, width: int = 28) -> list[str]:
    body = textwrap.wrap(right, 100 - width) or [""]
    if len(left) + 2 > width:
        lines = [f"  {left}", *(" " * width + line for line in body)]
    else:
        lines = [f"  {left}".ljust(width) + body[0], *(" " * width + line for line in body[1:])]
    return lines


_FLAG_HELP = (
    ("--json", "print plain data: numbers as numbers, the unit in each key (total_bytes, step_time_s)"),
    ("-h, --help", "show this help"),
    ("--version", "print the version"),
)


def command_help(prog: str, cmd: Command) -> str:
    """``COMMAND --help``: the usage line, the title, then every field with its default, options and hint."""
    lines = [f"usage: {prog} {cmd.name} [FIELD=VALUE ...] [--json]", "", cmd.title]
    lines += textwrap.wrap(cmd.description, 100)
    head = "fields (FIELD=VALUE, --FIELD=VALUE or --FIELD VALUE; a field not given takes its default"
    if cmd.fields:
        head += f"; {cmd.fields[0].name} may also come bare, right after {cmd.name}"
    lines += ["", *textwrap.wrap(head + "):", 100)]
    for f in cmd.fields:
        default = f.default if f.kind != "textarea" else (f.default[:20] + "…" if len(f.default) > 20 else f.default)
        lines += _wrap(f"{f.name}={default}" if default else f"{f.name}=", _field_help(f))
    lines += ["", "options:"]
    for flag, text in _FLAG_HELP:
        lines += _wrap(flag, text)
    lines += [
        "",
        "--json prints {command, inputs, verdict: {ok, text}, outputs, units, text}: outputs are numbers whose",
        "key ends in their unit (_bytes, _s, ...), units maps each key to its unit, text holds worded results.",
    ]
    return "\n".join(lines)


def main_help(prog: str, cmds: Iterable[Command]) -> str:
    """``--help`` (or no arguments at all): the usage line, the commands and the options."""
    rows = [["list", "every command and its fields"]] + [[c.name, c.title] for c in cmds]
    lines = [
        f"usage: {prog} COMMAND [FIELD=VALUE ...] [--json]",
        "",
        "LLM training memory and parallelism: the calculators of the site, on the command line.",
        "",
        "commands:",
        textwrap.indent(table(rows, header=False), "  "),
        "",
        "options:",
    ]
    for flag, text in _FLAG_HELP:
        lines += _wrap(flag, text)
    lines += [
        "",
        f"`{prog} COMMAND --help` lists a command's fields with their defaults. Exit status: 0 with a result,",
        "2 for bad input (one line naming the field), 1 for a fault in the engine.",
        "",
        f"example: {prog} will-it-fit params=70B zero_stage=3 dp=64",
    ]
    return "\n".join(lines)
