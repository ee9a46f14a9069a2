"""Copy as code: the engine call and the command line that reproduce a calculator's numbers.

The command line is generated from the calculator's [`Field`][calc.widgets.Field]s and the values on
screen: only the values that differ from the defaults are written (a missing input takes its default),
in field order. The Python is each calculator's own ``python`` function: the public engine call
(``import calc`` then ``calc.model_state_bytes(...)``, ``calc.peak_memory(...)``, ``calc.plan(...)``) with the
reader's inputs, printing ``name = value`` for the page's ``data-output`` numbers, runnable as pasted after
``pip install`` of this site's wheel, the line each copied block opens with ([`WHEEL`][calc.widgets._code.WHEEL]).
[`snippet`][calc.widgets._code.snippet] and [`call`][calc.widgets._code.call] write it;
``tests/test_copy_as_code.py`` runs every snippet and compares what it prints with the page's ``data-value``s.
"""

from __future__ import annotations

import dataclasses
import functools
import shlex
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Protocol

from calc import __version__
from calc.markup import escape
from calc.widgets._html import checked

__all__ = [
    "INSTALL_COMMENT",
    "PROG",
    "WHEEL",
    "call",
    "code_block",
    "command_line",
    "file_name",
    "gpu_code",
    "lit",
    "model_code",
    "python_call",
    "snippet",
]

PROG = "trainmem"
"""The console command the copied line starts with (the same as [`calc.cli.PROG`][calc.cli.PROG]; ``python -m calc``
takes the same arguments). Kept here so that a render in the browser need not import the command line."""


WHEEL = f"assets/llm_train_memory-{__version__}-py3-none-any.whl"
"""The engine's wheel in the site, from the site root: PEP 427's file name for the distribution
``llm-train-memory`` at this version, which ``hooks/site_wheel.py`` builds into the site
(``tests/test_widgets_leftovers.py`` checks that the two agree). Every copy block opens with its ``pip install``
line, the address in a ``<span data-site-address>``: the build writes it absolute from ``site_url``
(``hooks/lc_build.py``), ``site-base.js`` rebases that to where the site is served, and ``calc.mjs`` sets it
after each live render, so what is copied installs from the site the reader is on (issue 19)."""

INSTALL_COMMENT = "# Install the engine once: pip install "
"""The copy blocks' first line, before the wheel's address: a comment in both a shell and Python."""


class _Calculator(Protocol):
    """What this module reads of a [`Calculator`][calc.widgets.Calculator] (not imported: the package imports us)."""

    name: str
    fields: tuple
    python: Callable[[dict[str, str]], str] | None


def _changed(calc: _Calculator, values: dict[str, str]) -> list[tuple[str, str, bool]]:
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


def command_line(calc: _Calculator, values: dict[str, str], prog: str = PROG) -> str:
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


def python_call(calc: _Calculator, values: dict[str, str]) -> str:
    """The Python that computes ``values`` through the public engine and prints the page's numbers.

    Examples:
        >>> from calc.widgets import calculators
        >>> fit = calculators()["will-it-fit"]
        >>> print(python_call(fit, {**fit.defaults, "params": "70B", "zero_stage": "3", "dp": "64"}))
        import calc
        <BLANKLINE>
        state = calc.model_state_bytes("70B", zero_stage=3, dp=64)
        memory = calc.gpu("h100-sxm").memory_bytes
        print("weights =", state.weights)
        print("gradients =", state.gradients)
        print("master =", state.master)
        print("momentum =", state.momentum)
        print("variance =", state.variance)
        print("total =", state.total)
        print("gpu_memory_bytes =", memory)
        print("headroom =", memory - state.total)
    """
    if calc.python is None:
        raise ValueError(f"{calc.name} has no Python snippet")
    return calc.python(values)


def lit(value: object) -> str:
    """A Python literal for a value in a snippet: numbers as numbers, text double-quoted.

    Examples:
        >>> lit("7B"), lit(64), lit(True), lit(0.5), lit(None)
        ('"7B"', '64', 'True', '0.5', 'None')
    """
    if isinstance(value, str):
        return _literal(value)
    if value is None or isinstance(value, bool | int | float):
        return repr(value)
    if isinstance(value, Fraction):
        return f"Fraction({_decimal(value)})"
    raise TypeError(f"no literal for {type(value).__name__}")


def _decimal(value: Fraction) -> str:
    """A fraction as ``Fraction`` reads it back: ``"0.783"`` where it is a finite decimal, else ``"1/3"``.

    Examples:
        >>> _decimal(Fraction(783, 1000)), _decimal(Fraction(1, 3)), _decimal(Fraction(24, 25))
        ('"0.783"', '"1/3"', '"0.96"')
    """
    d = value.denominator
    twos = fives = 0
    while d % 2 == 0:
        d, twos = d // 2, twos + 1
    while d % 5 == 0:
        d, fives = d // 5, fives + 1
    if d != 1:
        return f'"{value.numerator}/{value.denominator}"'
    places = max(twos, fives)
    digits = str(abs(value.numerator) * 10**places // value.denominator).rjust(places + 1, "0")
    sign = "-" if value < 0 else ""
    text = f"{digits[:-places]}.{digits[-places:]}" if places else digits
    return f'"{sign}{text}"'


def call(name: str, *args: object, fn: Callable | None = None, **kwargs: object) -> str:
    """``calc.NAME(args, key=value, ...)``; a keyword equal to ``fn``'s default is left out. An argument that is
    already code is passed as a [`Code`][calc.widgets._code.Code]. Long calls break one argument a line.

    Examples:
        >>> import calc
        >>> call("model_state_bytes", "7B", fn=calc.model_state_bytes, zero_stage=3, dp=1)
        'calc.model_state_bytes("7B", zero_stage=3)'
        >>> call("Layout", fn=calc.Layout)
        'calc.Layout()'
    """
    defaults = _defaults(fn) if fn is not None else {}
    parts = [_code(a) for a in args]
    parts += [f"{k}={_code(v)}" for k, v in kwargs.items() if k not in defaults or _differs(v, defaults[k])]
    one_line = f"calc.{name}({', '.join(parts)})"
    if len(one_line) <= 100:
        return one_line
    return f"calc.{name}(\n" + "".join(f"    {p},\n" for p in parts) + ")"


@functools.cache
def _defaults(fn: Callable) -> dict[str, object]:
    """``fn``'s keyword defaults, read once from the function (or a dataclass's fields) without ``inspect``, which
    would load a dozen modules more into the browser's runtime."""
    if isinstance(fn, type) and dataclasses.is_dataclass(fn):
        return {f.name: f.default for f in dataclasses.fields(fn) if f.default is not dataclasses.MISSING}
    fn = getattr(fn, "__wrapped__", fn)
    code, positional = fn.__code__, fn.__defaults__ or ()
    names = code.co_varnames[: code.co_argcount]
    return {**dict(zip(names[len(names) - len(positional) :], positional, strict=True)), **(fn.__kwdefaults__ or {})}


class Code(str):
    """Text that is already Python (``arch``, ``calc.preset("llama3-8b")``), written into a call as it is."""


def _code(value: object) -> str:
    return str(value) if isinstance(value, Code) else lit(value)


def _differs(value: object, default: object) -> bool:
    return isinstance(value, Code) or type(value) is not type(default) or value != default


def model_code(values: dict[str, str]) -> Code:
    """The engine expression for the model in ``preset``/``config`` (or the legacy ``model``) values.

    Examples:
        >>> model_code({"preset": "llama3-8b", "config": ""})
        'calc.preset("llama3-8b")'
        >>> model_code({"preset": "llama3-8b", "config": "{...}"})
        'calc.Architecture.from_hf_config(calc.parse_config_json(Path("config.json").read_text()))'
    """
    legacy = values.get("model", "").strip()
    text = values.get("config", "").strip()
    if (legacy and not legacy.startswith("{")) or not (legacy or text):
        return Code(f"calc.preset({lit(legacy or values['preset'])})")
    return Code('calc.Architecture.from_hf_config(calc.parse_config_json(Path("config.json").read_text()))')


def gpu_code(values: dict[str, str]) -> Code:
    """The engine expression for the chosen GPU's memory in bytes (a preset's, or the custom amount).

    Examples:
        >>> gpu_code({"gpu": "h200", "unit": "GB"}), gpu_code({"gpu": "custom", "gpu_memory": "24", "unit": "GiB"})
        ('calc.gpu("h200").memory_bytes', 'calc.to_bytes("24", "GiB", "gpu_memory")')
    """
    if values["gpu"] == "custom":
        return Code(f'calc.to_bytes({lit(values["gpu_memory"])}, {lit(values["unit"])}, "gpu_memory")')
    return Code(f"calc.gpu({lit(values['gpu'])}).memory_bytes")


def snippet(body: Sequence[str], prints: Sequence[tuple[str, str]]) -> str:
    """A whole snippet: the imports it needs, ``body`` (assignments), then ``print("name =", expr)`` per output.

    Each printed name is the page's ``data-output`` name, so the reader (and the test) can match them.

    Examples:
        >>> print(snippet(['arch = calc.preset("llama3-8b")'], [("total_params", "arch.param_count")]))
        import calc
        <BLANKLINE>
        arch = calc.preset("llama3-8b")
        print("total_params =", arch.param_count)
    """
    text = "\n".join([*body, *(f"print({lit(name + ' =')}, {expr})" for name, expr in prints)])
    stdlib = [f"from {m} import {n}" for m, n in (("fractions", "Fraction"), ("pathlib", "Path")) if f"{n}(" in text]
    return "\n".join([*stdlib, *([""] if stdlib else []), "import calc", "", text])


def _literal(text: str) -> str:
    """A Python string literal, double-quoted where it can be (``repr`` picks single quotes)."""
    body = repr(text)
    if body.startswith("'") and '"' not in text:
        body = '"' + body[1:-1].replace("\\'", "'") + '"'
    return body


_INSTALL = (
    '<p class="lc-code__note">Both open with the <code>pip install</code> of '
    '<a data-site-href="reference/cli/#install">this site\'s wheel</a> they run on.</p>'
)
"""What the snippets need first: the engine, installed from the wheel this site ships (the build and calc.mjs
address the link from the page it is on)."""

_INSTALL_LINE = f'{escape(INSTALL_COMMENT)}<span data-site-address="{WHEEL}">{WHEEL}</span>&#10;'
"""Each block's first line: [`INSTALL_COMMENT`][calc.widgets._code.INSTALL_COMMENT] and the wheel's address."""


def code_block(calc: _Calculator, values: dict[str, str]) -> str:
    """The folded "Reproduce these numbers" block under the results: both snippets, each with a copy button and
    each opening with the line that installs the engine ([`WHEEL`][calc.widgets._code.WHEEL]).

    The text to copy is the ``<code>`` of ``[data-code=python]`` / ``[data-code=command]``; the buttons carry
    ``data-copy-code`` naming which (the browser copies it; with JavaScript off the code is still there to select).
    Line breaks are written ``&#10;``: a page's raw HTML block must hold no blank line.

    Examples:
        >>> from calc.widgets import calculators
        >>> html_ = code_block(calculators()["will-it-fit"], calculators()["will-it-fit"].defaults)
        >>> 'data-code="command"' in html_ and "trainmem will-it-fit</code>" in html_
        True
        >>> html_.count(f'<code># Install the engine once: pip install <span data-site-address="{WHEEL}">')
        2
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
        f'<pre class="lc-code__text" data-code="{kind}"><code>{_INSTALL_LINE}{escape(text).replace(chr(10), "&#10;")}'
        "</code></pre>"
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
        f"</div>{_INSTALL}{saved}{blocks}</details>"
    )
