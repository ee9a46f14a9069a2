"""The fields the calculators share, declared once, and the checks that read them.

A calculator lists only what is its own; everything else comes from here: the layout degrees
(``dp``, ``tp``, ``pp``, ``cp``, ``ep``), the ZeRO stage, the micro-batch and sequence length, recomputation,
the GPU (with its custom memory) and the display unit. Each factory takes
the few things calculators word differently (a label, a default, a hint), so the form and its field names and
defaults stay what readers' links rely on. The model pair (``preset``/``config``) is
[`model_fields`][calc.widgets._model.model_fields]; the training stack, its loss and the bytes-per-parameter
convention are ``calc.widgets._stack_fields``' (they need the engine's memory modules, which most calculators
do not load).

The readers ([`one_of`][calc.widgets._fields.one_of], [`whole_numbers`][calc.widgets._fields.whole_numbers])
raise [`CalcError`][calc.errors.CalcError] naming the field, the rule and the value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from calc.errors import CalcError
from calc.units import parse_positive_int
from calc.widgets import Field
from calc.widgets._html import GPU_FIELD_OPTIONS, SITE_UNIT, UNIT_FIELD_OPTIONS

__all__ = [
    "DEGREE_LABELS",
    "PARALLELISMS",
    "RECOMPUTE_OPTIONS",
    "RECOMPUTE_OPTIONS_OP",
    "ZERO_OPTIONS",
    "checkbox",
    "degree",
    "gpu_fields",
    "micro_batch_field",
    "one_of",
    "recompute_field",
    "select",
    "seq_len_field",
    "unit_field",
    "whole_numbers",
    "zero_field",
]

PARALLELISMS: dict[str, str] = {
    "dp": "Data parallel",
    "tp": "Tensor parallel",
    "pp": "Pipeline parallel",
    "cp": "Context parallel",
    "ep": "Expert parallel",
}
"""Each layout degree's parallelism, in words."""

DEGREE_LABELS: dict[str, str] = {name: f"{words} ({name})" for name, words in PARALLELISMS.items()}
"""The label of each layout degree where a calculator names it in full: ``Data parallel (dp)``."""

ZERO_OPTIONS: tuple[tuple[str, str], ...] = (
    ("0", "0: nothing sharded"),
    ("1", "1: optimizer states"),
    ("2", "2: + gradients"),
    ("3", "3: + weights"),
)
"""The ZeRO stages and what each shards (Rajbhandari et al. 2020, Sec. 5.1-5.3: P_os, P_os+g, P_os+g+p)."""

RECOMPUTE_OPTIONS: tuple[tuple[str, str], ...] = (("none", "None"), ("selective", "Selective"), ("full", "Full"))
"""Activation recomputation (Korthikanti et al. 2022, Sec. 5: selective recomputes the attention core)."""

RECOMPUTE_OPTIONS_OP: tuple[tuple[str, str], ...] = (
    *RECOMPUTE_OPTIONS[:2],
    ("op", "Per-op selective (torchtitan)"),
    RECOMPUTE_OPTIONS[2],
)
"""The recomputation modes a [`Layout`][calc.memory.layout.Layout] takes: also ``op``, torchtitan's per-op
selective checkpointing (``torchtitan/distributed/activation_checkpoint.py``)."""


def degree(name: str, default: str, help: str = "", *, label: str = "", **kw: object) -> Field:
    """A layout degree typed as a whole number.

    Examples:
        >>> f = degree("tp", "8", "divides the heads")
        >>> f.name, f.label, f.default, f.kind, f.help
        ('tp', 'Tensor parallel (tp)', '8', 'number', 'divides the heads')
    """
    return Field(name, label or DEGREE_LABELS[name], default, kind="number", help=help, **kw)


def zero_field(default: str, options: tuple[tuple[str, str], ...] = ZERO_OPTIONS, **kw: object) -> Field:
    """The ``zero_stage`` select (a calculator may word the stages for what it shows).

    Examples:
        >>> zero_field("1").options[3]
        ('3', '3: + weights')
    """
    return Field("zero_stage", "ZeRO stage", default, kind="select", options=options, **kw)


def micro_batch_field(default: str = "1", label: str = "Micro-batch (sequences)", **kw: object) -> Field:
    """The ``micro_batch`` field: sequences per micro-batch on one GPU."""
    return Field("micro_batch", label, default, kind="number", **kw)


def seq_len_field(default: str, label: str = "Sequence length", *, name: str = "seq_len", **kw: object) -> Field:
    """The sequence-length field (``seq_len``; the communication calculator's is ``seq``)."""
    return Field(name, label, default, kind="number", **kw)


def recompute_field(
    default: str, options: tuple[tuple[str, str], ...] = RECOMPUTE_OPTIONS, label: str = "Recomputation", **kw: object
) -> Field:
    """The ``recompute`` select."""
    return Field("recompute", label, default, kind="select", options=options, **kw)


def checkbox(name: str, label: str, default: str = "0") -> Field:
    """An on/off option (``"1"`` or ``"0"``)."""
    return Field(name, label, default, kind="checkbox")


def gpu_fields(default: str = "h100-sxm") -> tuple[Field, Field]:
    """The ``gpu`` select (every preset, then custom) and the ``gpu_memory`` field that custom enables.

    Examples:
        >>> gpu, memory = gpu_fields()
        >>> gpu.options[-1], memory.enabled_when
        (('custom', 'Custom…'), ('gpu', 'custom'))
    """
    return (
        Field("gpu", "GPU", default, kind="select", options=GPU_FIELD_OPTIONS),
        Field("gpu_memory", "GPU memory (custom)", "80", kind="number", enabled_when=("gpu", "custom")),
    )


def unit_field() -> Field:
    """The ``unit`` select: GB (10^9 bytes) or GiB (2^30 bytes), defaulting to the site's unit (``SITE_UNIT``).

    Examples:
        >>> unit_field().default
        'GB'
    """
    return Field("unit", "Units", SITE_UNIT, kind="select", options=UNIT_FIELD_OPTIONS)


def one_of(values: Mapping[str, str], name: str, known: Iterable[str]) -> str:
    """The value of a choice field, which must be one of ``known``.

    Examples:
        >>> one_of({"recompute": "full"}, "recompute", ("none", "full"))
        'full'
        >>> one_of({"recompute": "some"}, "recompute", ("none", "full"))
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: recompute must be one of none, full (got 'some')
    """
    value, known = values[name], tuple(known)
    if value not in known:
        raise CalcError(name, f"must be one of {', '.join(known)}", value, code="unknown-name")
    return value


def whole_numbers(values: Mapping[str, str], bounds: Iterable[tuple[str, int]]) -> dict[str, int]:
    """Each ``(field, maximum)`` read as a whole number from 1 to its maximum.

    Examples:
        >>> whole_numbers({"tp": "8", "pp": "2"}, (("tp", 1024), ("pp", 1024)))
        {'tp': 8, 'pp': 2}
    """
    return {name: parse_positive_int(values[name], name, maximum=maximum) for name, maximum in bounds}


def select(name: str, label: str, default: str, options: tuple[tuple[str, str], ...], **kw: object) -> Field:
    """A choice among ``options``, ``(value, label)`` pairs.

    Examples:
        >>> select("dtype", "Math precision", "bf16", (("bf16", "BF16"), ("fp8", "FP8"))).kind
        'select'
    """
    return Field(name, label, default, kind="select", options=options, **kw)
