"""The pieces of a result the calculators share: labelled values, notes, GPU memory and headroom.

Tables, verdicts, formulas and charts are in [`calc.widgets._html`][calc.widgets._html]; these are the lines
around them, written once so that every calculator words and marks them alike (the ``data-output`` names stay
each calculator's own).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from calc.markup import escape
from calc.units import format_seconds
from calc.widgets._html import out

__all__ = [
    "MODEL_STATE_LABELS",
    "NOT_COUNTED",
    "duration",
    "gpu_memory_line",
    "headroom",
    "kv",
    "kv_notes",
    "model_state_labels",
    "notes",
    "plural",
]

MODEL_STATE_LABELS: dict[str, str] = {
    "weights": "Weights",
    "gradients": "Gradients",
    "master": "fp32 master weights",
    "momentum": "Adam momentum",
    "variance": "Adam variance",
}
"""The model states' rows, named alike in every calculator (``calc.memory.model_state.COMPONENTS``), for Adam;
[`model_state_labels`][calc.widgets._parts.model_state_labels] names the optimizer states of the others."""

_OPTIMIZER_STATES = (
    ("adafactor", "Adafactor momentum", "Adafactor factored second moment"),
    ("shampoo", "Shampoo momentum", "Shampoo preconditioners (Kronecker factors, inverse roots)"),
    ("soap", "SOAP momentum", "SOAP second moment and preconditioners (Kronecker factors, eigenvectors)"),
    ("lion", "Lion momentum", "Second moment (Lion keeps none)"),
    ("muon", "Muon momentum", "Second moment (Muon keeps none)"),
    ("sgd", "SGD momentum", "Second moment (SGD keeps none)"),
)
"""``(optimizer in the convention's name, first-moment row, second-moment row)``: what each optimizer keeps in the
``momentum`` and ``variance`` components (``calc.memory.conventions.Convention``); a name with none is Adam."""


def model_state_labels(convention: str) -> dict[str, str]:
    """The model states' row labels for a bytes-per-parameter convention: its optimizer's own state names.

    Examples:
        >>> model_state_labels("mixed-adam-16")["momentum"], model_state_labels("mixed-lion-12")["variance"]
        ('Adam momentum', 'Second moment (Lion keeps none)')
        >>> model_state_labels("fp32-sgdm-12")["momentum"]
        'SGD momentum'
    """
    words = convention.split("-")
    for optimizer, first, second in _OPTIMIZER_STATES:
        if any(w.startswith(optimizer) for w in words):
            return {**MODEL_STATE_LABELS, "momentum": first, "variance": second}
    return dict(MODEL_STATE_LABELS)


NOT_COUNTED = '<a class="lc-calc__not-counted" data-site-href="accuracy/#not-modelled">{}</a>'
"""A link to the accuracy page's list of what is not modelled (the build and calc.mjs set its ``href``)."""


def kv(label: str, value: str) -> str:
    """One labelled result line: ``label`` is HTML (escape plain text first), ``value`` an ``out(...)``.

    Examples:
        >>> kv("GPU memory", '<span data-output="x">1</span>')
        '<p class="lc-kv"><span>GPU memory</span> <span data-output="x">1</span></p>'
    """
    return f'<p class="lc-kv"><span>{label}</span> {value}</p>'


def kv_notes(rows: Iterable[tuple[str, str, str]], *, escaped: bool = True) -> str:
    """Labelled result lines with a note each: ``(label, value html, note)``; ``escaped`` escapes label and note.

    Examples:
        >>> kv_notes([("A & B", "1", "x < y")])
        '<p class="lc-kv"><span>A &amp; B</span> 1 <small>x &lt; y</small></p>'
    """
    esc: Callable[[str], str] = escape if escaped else str
    return "".join(
        f'<p class="lc-kv"><span>{esc(k)}</span> {value} <small>{esc(n)}</small></p>' for k, value, n in rows
    )


def notes(lines: Iterable[str]) -> str:
    """Small print under a result, one paragraph a line (each already HTML).

    Examples:
        >>> notes(["one", "two"])
        '<p><small>one</small></p><p><small>two</small></p>'
    """
    return "".join(f"<p><small>{n}</small></p>" for n in lines)


def gpu_memory_line(memory: int, fmt: Callable[[int], str]) -> str:
    """The GPU's memory as the result line ``gpu_memory_bytes``."""
    return kv("GPU memory", out("gpu_memory_bytes", fmt(memory)))


def headroom(memory: int, used: int, fmt: Callable[[int], str]) -> str:
    """What is left of ``memory`` once ``used`` is in it, as ``headroom`` (negative bytes when it does not fit).

    Examples:
        >>> from calc.widgets._html import byte_formatter
        >>> headroom(10**9, 2 * 10**9, byte_formatter("GB"))
        '<span data-value="-1000000000" data-unit="B" data-output="headroom">none (short by 1.00 GB)</span>'
    """
    room = fmt(memory - used) if used <= memory else f"none (short by {fmt(used - memory)})"
    return out("headroom", room, value=memory - used, unit="B")


def plural(n: int, word: str, many: str = "") -> str:
    """``n`` and the word, singular for one: ``1 GPU``, ``8 GPUs``, ``1 micro-batch``.

    Examples:
        >>> plural(1, "GPU"), plural(1024, "GPU"), plural(1, "micro-batch"), plural(2, "batch", "batches")
        ('1 GPU', '1,024 GPUs', '1 micro-batch', '2 batches')
    """
    return f"{n:,} {word if n == 1 else many or word + 's'}"


def duration(seconds: float) -> str:
    """Seconds in the unit that reads best, three significant figures, never in exponent notation
    ([`format_seconds`][calc.units.format_seconds]).

    Examples:
        >>> duration(0), duration(2.5e-6), duration(0.0421), duration(3.14159), duration(11770.0)
        ('0 s', '2.5 µs', '42.1 ms', '3.14 s', '11,770 s')
    """
    return format_seconds(seconds)
