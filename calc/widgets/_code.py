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
from calc.widgets._html import checked

__all__ = ["PROG", "code_block", "command_line", "file_name", "python_call"]

PROG = "trainmem"
"""The console command the copied line starts with (the same as [`calc.cli.PROG`][calc.cli.PROG]; ``python -m calc``
takes the same arguments). Kept here so that a render in the browser need not import the command line."""


def _changed(calc: Calculator, values: dict[str, str]) -> list[tuple[str, str, bool]]:
    """``(field, value, from_file)`` for each value off its default; a pasted text (a textarea: a whole
    ``config.json``) is read from a file named after the field rather than repeated inline."""
    changed = []
    for f in calc.fields:
        value, default = values.get(f.name, f.default), f.default
        if f.kind == "checkbox":  # as the engine reads it: on or off, whatever the browser sent
            value, default = ("1" if checked(value) else "0"), ("1" if checked(default) else "0")
        if value != default:
            changed.append((f.name, value, f.kind == "textarea"))
    return changed


def file_name(field: str) -> str:
    """The file a pasted text is read from in the copied code: ``config`` is ``config.json``.

    Examples:
        >>> file_name("config"), file_name("notes")
        ('config.json', 'notes.txt')
    """
    return f"{field}.json" if field == "config" else f"{field}.txt"


def command_line(calc: Calculator, values: dict[str, str], prog: str = PROG) -> str:
    """The shell line that computes ``values`` (each ``field=value`` quoted for a POSIX shell).

    A pasted text is read from its file (``config=@config.json``, see [`file_name`][calc.widgets._code.file_name]):
    the reader saves what they pasted there.

    Examples:
        >>> from calc.widgets import calculators
        >>> fit = calculators()["will-it-fit"]
        >>> command_line(fit, {**fit.defaults, "params": "70B", "dp": "64"})
        'trainmem will-it-fit params=70B dp=64'
        >>> command_line(fit, {**fit.defaults, "params": "1 T"}, prog="python -m calc")
        "python -m calc will-it-fit 'params=1 T'"
    """
    args = [
        shlex.quote(f"{name}=@{file_name(name)}" if paste else f"{name}={value}")
        for name, value, paste in _changed(calc, values)
    ]
    return " ".join([prog, calc.name, *args])


def python_call(calc: Calculator, values: dict[str, str]) -> str:
    """Python that computes ``values`` through the engine and prints the verdict and the raw numbers.

    Examples:
        >>> from calc.widgets import calculators
        >>> fit = calculators()["will-it-fit"]
        >>> print(python_call(fit, {**fit.defaults, "params": "70B"}))
        import json
        <BLANKLINE>
        from calc.cli import commands
        from calc.widgets import calculators
        <BLANKLINE>
        inputs = {**calculators()["will-it-fit"].defaults, "params": "70B"}
        result = commands()["will-it-fit"].data(inputs)  # what `trainmem will-it-fit --json` prints
        print(json.dumps(result, indent=2))  # bytes as integers, seconds as floats; units in the keys
    """
    changed = _changed(calc, values)
    pairs = "".join(
        f", {_literal(name)}: Path({_literal(file_name(name))}).read_text()"
        if paste
        else f", {_literal(name)}: {_literal(value)}"
        for name, value, paste in changed
    )
    key = _literal(calc.name)
    imports = "import json\n" + ("from pathlib import Path\n" if any(paste for *_, paste in changed) else "")
    return (
        f"{imports}\nfrom calc.cli import commands\n"
        "from calc.widgets import calculators\n\n"
        f"inputs = {{**calculators()[{key}].defaults{pairs}}}\n"
        f"result = commands()[{key}].data(inputs)  # what `{PROG} {calc.name} --json` prints\n"
        "print(json.dumps(result, indent=2))  # bytes as integers, seconds as floats; units in the keys"
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
    files = [file_name(name) for name, _, paste in _changed(calc, values) if paste]
    saved = (
        f'<p class="lc-code__note">Save what you pasted as {", ".join(files)} beside where you run these.</p>'
        if files
        else ""
    )
    return (
        f'<details class="lc-code" data-code-block><summary>Reproduce these numbers in Python or a shell</summary>'
        f'<div class="lc-code__buttons">{buttons}<span class="lc-code__note" data-copy-code-note role="status"></span>'
        f"</div>{saved}{blocks}</details>"
    )
