"""Small HTML builders shared by the calculators. Every value is escaped here."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from math import isfinite
from typing import Self

from calc.errors import CalcError
from calc.hardware import GPUS, gpu
from calc.markup import escape
from calc.units import format_bytes, to_bytes

__all__ = [
    "GPU_FIELD_OPTIONS",
    "GPU_MEMORY_MAX",
    "GPU_MEMORY_MIN",
    "Quantity",
    "SITE_UNIT",
    "UNITS",
    "UNIT_FIELD_OPTIONS",
    "byte_formatter",
    "checked",
    "fit_short",
    "formulas",
    "gpu_memory",
    "gpu_named",
    "memory_chart",
    "on_the_gpu",
    "out",
    "table",
    "verdict",
    "why_list",
]

UNIT_FIELD_OPTIONS: tuple[tuple[str, str], ...] = (
    ("GB", "GB (10⁹ bytes)"),
    ("GiB", "GiB (2³⁰ bytes)"),
)
"""Options of the ``unit`` select every byte-showing calculator offers."""

SITE_UNIT = "GB"
"""The site's default unit: the header's unit switch reads it until the reader picks one (calc.mjs), so every
calculator's ``unit`` field defaults to it and one switch drives them all on a fresh visit."""


UNITS: dict[str, str] = {
    "B": "bytes",
    "s": "s",
    "days": "days",
    "h": "hours",
    "FLOP": "flops",
    "TFLOP/s": "tflops",
    "PF-days": "pf_days",
    "MWh": "mwh",
    "1": "",
}
"""The units a result's ``data-unit`` may name, each with the suffix its machine-readable key carries.

``B`` values are exact integers; every other unit's value is a decimal number (an integer or a float);
``1`` is a pure number (a count or a ratio). ``python -m calc NAME --json`` names each output
``NAME_SUFFIX`` (``total`` in ``B`` is ``total_bytes``; a name already ending in the suffix keeps it)."""


class Quantity(str):
    """Formatted text that remembers the raw number and unit it was formatted from.

    [`byte_formatter`][calc.widgets._html.byte_formatter] returns these, so
    ``out(name, fmt(n))`` carries the exact bytes without the calculator saying so twice. Anything
    built from it (an f-string, a concatenation) is a plain ``str`` again, as text about a number is not
    the number.

    Examples:
        >>> q = Quantity("1.00 GiB", 2**30, "B")
        >>> q, q.value, q.unit, type(f"{q} free") is str
        ('1.00 GiB', 1073741824, 'B', True)
    """

    value: int | float | Fraction
    unit: str

    def __new__(cls, text: str, value: int | float | Fraction, unit: str) -> Self:
        self = super().__new__(cls, text)
        self.value, self.unit = value, unit
        return self


def _raw(value: int | float | Fraction, unit: str) -> str:
    """The ``data-value`` text: exact digits for integers, ``repr`` of the float otherwise."""
    if unit not in UNITS:
        raise ValueError(f"unit {unit!r} is not one of {', '.join(UNITS)}")
    if isinstance(value, bool) or not isinstance(value, int | float | Fraction):
        raise TypeError(f"a raw value must be a number, not {type(value).__name__}")
    if unit == "B" and not isinstance(value, int):
        raise TypeError(f"bytes are exact integers, not {type(value).__name__} ({value!r})")
    if isinstance(value, int):
        return str(value)
    number = float(value)
    if not isfinite(number):
        raise ValueError(f"a raw value must be finite, not {number!r}")
    return repr(number)


GPU_FIELD_OPTIONS: tuple[tuple[str, str], ...] = tuple((g.name, g.label) for g in GPUS.values()) + (
    ("custom", "Custom…"),
)
"""Options of the ``gpu`` select: every preset, then ``custom`` (which enables a ``gpu_memory`` field)."""


GPU_MEMORY_MIN = 10**6
"""The least memory a custom GPU may have: 1 MB.

Below a megabyte no model state of interest fits, and a value that small is a typo (``1e-30``
would otherwise round down to a "0 B GPU" that ``0`` itself is refused as)."""

GPU_MEMORY_MAX = 100 * 10**12
"""The most memory a custom GPU may have: 100 TB.

The largest single accelerators ship 288 GB of HBM (AMD MI355X, NVIDIA B300 datasheets); 100 TB is
over 300 times that, room for any foreseeable part and for "what if" questions, while a ``1e400``
typo is still refused."""

_GPU_MEMORY_RULE = "must be an amount of memory from 1 MB to 100 TB, typed in the chosen unit"


def gpu_memory(values: dict[str, str]) -> tuple[int, str]:
    """Bytes and a label for the GPU chosen in ``values`` (``gpu``, ``gpu_memory``, ``unit`` fields).

    A preset gives its datasheet capacity; ``custom`` reads ``gpu_memory`` in the chosen unit,
    which must come to between [`GPU_MEMORY_MIN`][calc.widgets._html.GPU_MEMORY_MIN] (1 MB) and
    [`GPU_MEMORY_MAX`][calc.widgets._html.GPU_MEMORY_MAX] (100 TB); anything else (``0``,
    ``1e-30``, ``1e400``, text) raises the one rule.

    Examples:
        >>> gpu_memory({"gpu": "h200", "gpu_memory": "", "unit": "GB"})
        (150754820096, 'H200 SXM 141 GB')
        >>> gpu_memory({"gpu": "custom", "gpu_memory": "24", "unit": "GiB"})
        (25769803776, '24.0 GiB GPU')
        >>> gpu_memory({"gpu": "custom", "gpu_memory": "1e-30", "unit": "GB"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: gpu_memory must be an amount of memory from 1 MB to 100 TB, ... (got '1e-30')
    """
    if values["gpu"] == "custom":
        unit = values["unit"]
        if unit not in ("GB", "GiB"):
            raise CalcError("unit", "must be GB or GiB", unit, code="unknown-name")
        text = values["gpu_memory"]
        try:
            memory = to_bytes(text, unit, "gpu_memory")
        except CalcError:
            raise CalcError("gpu_memory", _GPU_MEMORY_RULE, text) from None
        if not GPU_MEMORY_MIN <= memory <= GPU_MEMORY_MAX:
            raise CalcError("gpu_memory", _GPU_MEMORY_RULE, text)
        return memory, f"{format_bytes(memory, binary=unit == 'GiB')} GPU"
    chosen = gpu(values["gpu"])
    return chosen.memory_bytes, chosen.label


def byte_formatter(unit: str):
    """A formatter for bytes in the reader's chosen system (``"GB"`` = SI, ``"GiB"`` = binary).

    Its text for integer bytes is a [`Quantity`][calc.widgets._html.Quantity] carrying them, so
    [`out`][calc.widgets._html.out] emits the exact bytes as ``data-value``.

    Examples:
        >>> byte_formatter("GiB")(2**30)
        '1.00 GiB'
    """
    if unit not in ("GB", "GiB"):
        raise CalcError("unit", "must be GB or GiB", unit, code="unknown-name")
    binary = unit == "GiB"

    def fmt(n: int) -> str:
        text = format_bytes(n, binary=binary)
        return Quantity(text, n, "B") if isinstance(n, int) and not isinstance(n, bool) else text

    return fmt


def checked(value: str) -> bool:
    """Read a checkbox value as sent by the browser (``"1"``/``"true"``/``"on"``) or the build."""
    return value.strip().lower() in ("1", "true", "on", "yes")


def out(
    name: str,
    text: str,
    tag: str = "span",
    cls: str = "",
    *,
    value: int | float | Fraction | None = None,
    unit: str = "1",
) -> str:
    """An element carrying ``data-output=name``: the DOM contract for a result.

    A number also carries its raw ``data-value`` and ``data-unit`` (one of
    [`UNITS`][calc.widgets._html.UNITS]), given as ``value``/``unit`` or by ``text`` being a
    [`Quantity`][calc.widgets._html.Quantity]; the browser and ``python -m calc --json`` read them, so the
    number is computed once. They come before ``data-output`` so ``data-output="x">text<`` still matches.

    Examples:
        >>> out("total", byte_formatter("GB")(1234))
        '<span data-value="1234" data-unit="B" data-output="total">1.23 kB</span>'
        >>> out("ratio", "0.5", value=0.5)
        '<span data-value="0.5" data-unit="1" data-output="ratio">0.5</span>'
        >>> out("model", "Llama 3")
        '<span data-output="model">Llama 3</span>'
    """
    if value is None and isinstance(text, Quantity):
        value, unit = text.value, text.unit
    raw = f' data-value="{_raw(value, unit)}" data-unit="{escape(unit)}"' if value is not None else ""
    klass = f' class="{escape(cls)}"' if cls else ""
    return f'<{tag}{raw} data-output="{escape(name)}"{klass}>{escape(text)}</{tag}>'


def table(head: Sequence[str], rows: Iterable[Sequence[str]], *, raw_cells: bool = False) -> str:
    """A plain table; cells are escaped unless ``raw_cells`` (for cells built with [`out`][calc.widgets._html.out])."""
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{c if raw_cells else escape(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="lc-table"><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>'


def formulas(lines: Sequence[tuple[str, str]], source: str = "", name: str = "formulas") -> str:
    """A breakdown's formulas with the reader's numbers, folded under the table, with where they come from.

    Each line is ``(label, math)``, ``math`` being the formula with the values substituted
    (``"2 B × 7.00e9 = 14.0 GB"``); ``source`` names the paper, table or equation. Everything is escaped;
    ``data-formulas=name`` marks the block (the command line prints it as lines).

    Examples:
        >>> html_ = formulas([("Weights", "2 B × 7.00e9 = 14.0 GB")], "ZeRO, Sec. 3")
        >>> html_.startswith('<details class="lc-formulas" data-formulas="formulas"><summary>')
        True
        >>> "<li>Weights: 2 B × 7.00e9 = 14.0 GB</li>" in html_ and "Source: ZeRO, Sec. 3" in html_
        True
    """
    items = "".join(f"<li>{escape(label)}: {escape(math)}</li>" for label, math in lines)
    cite = f'<p class="lc-formulas__source">Source: {escape(source)}</p>' if source else ""
    return (
        f'<details class="lc-formulas" data-formulas="{escape(name)}"><summary>How each line is computed, '
        f"with your numbers</summary><ul>{items}</ul>{cite}</details>"
    )


def why_list(items: Sequence[tuple[str, str]], summary: str = "Why and sources") -> str:
    """The "why" of a table's rows, folded under it: one closed ``<details class="lc-why">`` with a line per row,
    ``(row label, explanation)``, so the table stays one line a row (issue 19: an overhead table with a citation
    inline in every row was about 1,500 px tall). Everything is escaped; the text stays in the page, a summary
    away from the keyboard.

    Examples:
        >>> html_ = why_list([("CUDA context", "constant. Source: PyTorch docs.")])
        >>> html_.startswith('<details class="lc-why"><summary>Why and sources</summary><ul><li>')
        True
        >>> "<strong>CUDA context</strong>: constant. Source: PyTorch docs.</li>" in html_
        True
    """
    lines = "".join(f"<li><strong>{escape(label)}</strong>: {escape(text)}</li>" for label, text in items)
    return f'<details class="lc-why"><summary>{escape(summary)}</summary><ul>{lines}</ul></details>'


def verdict(ok: bool, text: str, name: str = "verdict", short: str = "") -> str:
    """A one-line verdict, styled as good or bad, with ``data-output=name`` and ``data-ok``.

    ``short``, when given, is its numbers first in a few words (``data-short``): the phone's sticky one-line
    verdict (calc.mjs) shows it instead of the whole line, which a phone cuts before its numbers.

    Examples:
        >>> verdict(True, "Fits: 1 of 2.", short="Fits: 1 of 2")  # doctest: +NORMALIZE_WHITESPACE
        '<p class="lc-verdict lc-verdict--yes" data-output="verdict" data-ok="yes"
        data-short="Fits: 1 of 2">Fits: 1 of 2.</p>'
    """
    state = "yes" if ok else "no"
    brief = f' data-short="{escape(short)}"' if short else ""
    return (
        f'<p class="lc-verdict lc-verdict--{state}" data-output="{escape(name)}" data-ok="{state}"{brief}>'
        f"{escape(text)}</p>"
    )


def fit_short(used: int, memory: int, fmt: Callable[[int], str]) -> str:
    """A memory verdict's numbers first, for the sticky one-line verdict: ``Fits: 17.5 GB of 85.5 GB``.

    Examples:
        >>> fmt = byte_formatter("GB")
        >>> fit_short(17_500_000_000, 80 * 10**9, fmt), fit_short(96 * 10**9, 80 * 10**9, fmt)
        ('Fits: 17.5 GB of 80.0 GB', 'Does not fit: 96.0 GB of 80.0 GB')
    """
    return f"{'Fits' if used <= memory else 'Does not fit'}: {fmt(used)} of {fmt(memory)}"


def gpu_named(label: str, memory: int, fmt: Callable[[int], str]) -> str:
    """The GPU as a verdict names it: ``the H100 SXM 80 GB (85.5 GB)``, but ``the 96.0 GB GPU`` for a custom one
    (whose label already is its memory).

    Examples:
        >>> fmt = byte_formatter("GB")
        >>> gpu_named("96.0 GB GPU", 96 * 10**9, fmt), gpu_named("B200", 180 * 10**9, fmt)
        ('the 96.0 GB GPU', 'the B200 (180 GB)')
    """
    return f"the {label}" if label == f"{fmt(memory)} GPU" else f"the {label} ({fmt(memory)})"


def on_the_gpu(label: str, memory: int, fmt: Callable[[int], str], where: str = "") -> str:
    """Where a verdict that has just said the capacity (``of 80.0 GB``) puts its bytes: ``each GPU of the H100 SXM
    80 GB``, ``the H100 SXM 80 GB``; a custom GPU, whose label is that capacity, is not said twice: ``each GPU``,
    ``the GPU`` (issue 19: "69.6 GB of 80.0 GB on each GPU of the 80.0 GB GPU").

    Examples:
        >>> fmt = byte_formatter("GB")
        >>> on_the_gpu("80.0 GB GPU", 80 * 10**9, fmt, "each GPU"), on_the_gpu("80.0 GB GPU", 80 * 10**9, fmt)
        ('each GPU', 'the GPU')
        >>> on_the_gpu("H100 SXM 80 GB", 85520809984, fmt, "each GPU"), on_the_gpu("B200", 180 * 10**9, fmt)
        ('each GPU of the H100 SXM 80 GB', 'the B200')
    """
    if label == f"{fmt(memory)} GPU":  # a custom GPU (calc.widgets._html.gpu_memory)
        return where or "the GPU"
    return f"{where} of the {label}" if where else f"the {label}"


def memory_chart(segments: Sequence[tuple[str, int]], capacity: int, gpu_label: str, unit: str) -> str:
    """The memory-breakdown chart: ``segments`` ``(label, bytes)`` stacked against the GPU's labelled capacity.

    A [`calc.guide.charts.memory_breakdown`][calc.guide.charts.memory_breakdown] spec in a
    [`calc.guide.charts.chart`][calc.guide.charts.chart] element; the build pre-renders it to SVG, the browser renders
    it live. Its accessible name states the total and the capacity; the breakdown table beside it
    holds every number.

    Examples:
        >>> html_ = memory_chart([("Weights", 2 * 10**9)], 8 * 10**9, "Custom 8 GB", "GB")
        >>> 'data-chart="memory-breakdown"' in html_ and "2.00 GB of the Custom 8 GB (8.00 GB)" in html_
        True
    """
    from calc.guide.charts import chart, memory_breakdown  # here: a calculator that draws no bars loads no chart

    fmt = byte_formatter(unit)
    total = sum(n for _, n in segments)
    parts = ", ".join(f"{label} {fmt(n)}" for label, n in segments if n > 0)
    label = f"Memory per GPU: {fmt(total)} of {gpu_named(gpu_label, capacity, fmt)}: {parts}."
    spec = memory_breakdown(segments, capacity, gpu_label, unit=unit)
    return chart("memory-breakdown", spec, label)
