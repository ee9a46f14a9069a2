"""A subcommand of ``trainmem``: what it is called, its fields and the two ways it answers (text and data), and
the subcommand of each calculator, which reads the page's own fragment back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from calc.cli._fragment import json_key, read_fragment
from calc.cli._text import render_blocks
from calc.widgets import Calculator, Field

__all__ = ["Command", "calculator_command"]


@dataclass(frozen=True)
class Command:
    """One subcommand.

    Attributes:
        name: What is typed after the program's name.
        title: One line for ``list`` and ``--help``.
        fields: The inputs (their names, defaults, options and help), as calculators declare them.
        text: Maps every field's value (defaults filled in) to the result for a terminal; raises
            [`CalcError`][calc.errors.CalcError] on bad input.
        data: The same to plain data for ``--json``: numbers as numbers, units in the keys.
        description: A sentence for ``--help``.
    """

    name: str
    title: str
    fields: tuple[Field, ...]
    text: Callable[[dict[str, str]], str]
    data: Callable[[dict[str, str]], dict[str, object]]
    description: str = ""


def _calculator_data(calc: Calculator, values: dict[str, str]) -> dict[str, object]:
    verdict = None
    outputs: dict[str, int | float] = {}
    units: dict[str, str] = {}
    texts: dict[str, str] = {}
    for out in read_fragment(calc.compute(values)).outputs:
        if out.name == "verdict" and out.ok is not None:
            verdict = {"ok": out.ok, "text": out.text}
        elif out.value is None:
            texts[out.name] = out.text
        else:
            key = json_key(out.name, out.unit)
            if key in outputs and outputs[key] != out.value:
                raise RuntimeError(f"{calc.name}: outputs {key!r} disagree ({outputs[key]!r}, {out.value!r})")
            outputs[key], units[key] = out.value, out.unit
    data = {"command": calc.name, "inputs": values, "verdict": verdict}
    return {**data, "outputs": outputs, "units": units, "text": texts}


def calculator_command(calc: Calculator) -> Command:
    """The subcommand of a calculator: its name, fields and computation, read back from its fragment.

    Examples:
        >>> from calc.widgets import calculators
        >>> cmd = calculator_command(calculators()["will-it-fit"])
        >>> data = cmd.data({**calculators()["will-it-fit"].defaults, "params": "70B"})
        >>> data["outputs"]["weights_bytes"], data["verdict"]["ok"]
        (140000000000, False)
    """
    return Command(
        calc.name,
        calc.title,
        calc.fields,
        lambda values: render_blocks(read_fragment(calc.compute(values)).blocks),
        lambda values: _calculator_data(calc, values),
        calc.description,
    )
