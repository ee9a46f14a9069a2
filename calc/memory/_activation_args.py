"""Byte sizes, argument parsing and exact rounding shared by the activation modules (private; the public
names are re-exported by [`calc.memory.activations`][calc.memory.activations]).

Examples:
    >>> _ceil(Fraction(7, 2)), _count(3, "tp")
    (4, 3)
"""

from __future__ import annotations

from fractions import Fraction

from calc.errors import CalcError
from calc.units import parse_positive_int

__all__: list[str] = []

RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "full")
"""Activation-recomputation modes every calculator offers: ``none`` keeps every activation, ``selective``
recomputes the attention core (Korthikanti et al. 2022, Sec. 5), ``full`` keeps only each layer's input
(Narayanan et al. 2021, Sec. 3.5)."""

LAYOUT_RECOMPUTE_MODES: tuple[str, ...] = ("none", "selective", "op", "full")
"""The modes a [`Layout`][calc.memory.layout.Layout] and ``layer_activations`` take: also ``op``, torchtitan's
per-op selective checkpointing (the outputs of every other matmul, of the attention kernel and of reduce-scatters
are saved, all else recomputed: ``torchtitan/distributed/activation_checkpoint.py``, ``_op_sac_save_list`` and
its policy)."""

ACTIVATION_BYTES: int = 2
"""Bytes per stored activation element: 16-bit (fp16/bf16), as Korthikanti et al. 2022 Sec. 4.1 assume."""

MASK_BYTES: int = 1
"""Bytes per dropout-mask element (Korthikanti et al. 2022, Sec. 4.1: "a mask ... of size sbh" bytes)."""

FP32_BYTES: int = 4
"""Bytes per fp32 element: logits for the loss (Korthikanti Sec. 4.3), FlashAttention's log-sum-exp,
normalization statistics."""


def _ceil(x: Fraction | int) -> int:
    """The smallest whole number of bytes that holds ``x`` bytes."""
    x = Fraction(x)
    return -(-x.numerator // x.denominator)


def _recompute(value: object, modes: tuple[str, ...] = RECOMPUTE_MODES) -> str:
    if value not in modes:
        raise CalcError("recompute", f"must be one of {', '.join(modes)}", value, code="unknown-name")
    return str(value)


def _choice(value: object, field: str, options: tuple[str, ...]) -> str:
    if value not in options:
        raise CalcError(field, f"must be one of {', '.join(options)}", value, code="unknown-name")
    return str(value)


def _flag(value: object, field: str) -> bool:
    if not isinstance(value, bool):
        raise CalcError(field, "must be true or false", value)
    return value


def _count(value: object, field: str, minimum: int = 1) -> int:
    return parse_positive_int(value, field, minimum=minimum)


def _counts(values: dict[str, object], *names: str) -> tuple[int, ...]:
    """The arguments ``names`` of ``values`` (a function's ``locals()``), each a positive count, checked in order."""
    return tuple(_count(values[name], name) for name in names)
