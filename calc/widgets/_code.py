"""Copy as code: the Python call and the command line that reproduce a calculator's numbers.

Both are generated from the calculator's [`Field`][calc.widgets.Field]s and the values on screen, so
they cannot drift from the form: only the values that differ from the calculator's defaults are
written (a missing input takes its default in both the command line and the Python call), in field
order. The Python goes through the same computation as ``trainmem NAME --json``
([`calc.cli.Command.data`][calc.cli.Command]), so the two agree with the page's ``data-value``s number
for number (``tests/test_copy_as_code.py`` runs both).
"""

from __future__ import annotations

import shlex
from html import escape

from calc.widgets import Calculator

__all__ = ["PROG", "code_block", "command_line", "python_call"]

PROG = "trainmem"
"""The console command the copied line starts with (the same as [`calc.cli.PROG`][calc.cli.PROG]; ``python -m calc``
takes the same arguments). Kept here so that a render in the browser need not import the command line."""


def _changed(calc: Calculator, values: dict[str, str]) -> list[tuple[str, str]]:
    return [(f.name, values[f.name]) for f in calc.fields if values.get(f.name, f.default) != f.default]


def command_line(calc: Calculator, values: dict[str, str], prog: str = PROG) -> str:
    """The shell line that computes ``values`` (each ``field=value`` quoted for a POSIX shell).

    Examples:
        >>> from calc.widgets import calculators
        >>> fit = calculators()["will-it-fit"]
        >>> command_line(fit, {**fit.defaults, "params": "70B", "dp": "64"})
        'trainmem will-it-fit params=70B dp=64'
        >>> command_line(fit, {**fit.defaults, "params": "1 T"}, prog="python -m calc")
        "python -m calc will-it-fit 'params=1 T'"
    """
    args = [shlex.quote(f"{name}={value}") for name, value in _changed(calc, values)]
    return " ".join([prog, calc.name, *args])


def python_call(calc: Calculator, values: dict[str, str]) -> str:
    """Python that computes ``values`` through the engine and prints the verdict and the raw numbers.

    Examples:
        >>> from calc.widgets import calculators
        >>> fit = calculators()["will-it-fit"]
        >>> print(python_call(fit, {**fit.defaults, "params": "70B"}))
        from calc.cli import commands
        from calc.widgets import calculators
        <BLANKLINE>
        inputs = {**calculators()["will-it-fit"].defaults, "params": "70B"}
        result = commands()["will-it-fit"].data(inputs)
        print(result["verdict"])
        print(result["outputs"])  # bytes as integers, seconds as floats; units in the keys
    """
    pairs = "".join(f", {_literal(name)}: {_literal(value)}" for name, value in _changed(calc, values))
    key = _literal(calc.name)
    return (
        "from calc.cli import commands\n"
        "from calc.widgets import calculators\n\n"
        f"inputs = {{**calculators()[{key}].defaults{pairs}}}\n"
        f"result = commands()[{key}].data(inputs)\n"
        'print(result["verdict"])\n'
        'print(result["outputs"])  # bytes as integers, seconds as floats; units in the keys'
    )


def _literal(text: str) -> str:
    """A Python string literal, double-quoted where it can be (``repr`` picks single quotes)."""
    body = repr(text)
    if body.startswith("'") and '"' not in text:
        body = '"' + body[1:-1].replace("\\'", "'") + '"'
    return body


def code_block(calc: Calculator, values: dict[str, str]) -> str:
    """The folded "Reproduce these numbers" block under the results: both snippets, each with a copy button.

    The text to copy is the ``<code>`` of ``[data-code=python]`` / ``[data-code=command]``; the buttons carry
    ``data-copy-code`` naming which (the browser copies it; with JavaScript off the code is still there to select).
    Line breaks are written ``&#10;``: a page's raw HTML block must hold no blank line.

    Examples:
        >>> from calc.widgets import calculators
        >>> html_ = code_block(calculators()["will-it-fit"], calculators()["will-it-fit"].defaults)
        >>> 'data-code="command"' in html_ and "trainmem will-it-fit</code>" in html_
        True
    """
    snippets = (
        ("command", "Copy as command", command_line(calc, values)),
        ("python", "Copy as Python", python_call(calc, values)),
    )
    buttons = "".join(
        f'<button type="button" class="md-button lc-code__copy" data-copy-code="{kind}">{label}</button>'
        for kind, label, _ in snippets
    )
    blocks = "".join(
        f'<pre class="lc-code__text" data-code="{kind}"><code>{escape(text).replace(chr(10), "&#10;")}</code></pre>'
        for kind, _, text in snippets
    )
    return (
        f'<details class="lc-code" data-code-block><summary>Reproduce these numbers in Python or a shell</summary>'
        f'<div class="lc-code__buttons">{buttons}<span class="lc-code__note" data-copy-code-note role="status"></span>'
        f"</div>{blocks}</details>"
    )
