"""Every number the prose prints, each computed by the engine at build time.

Pages write ``[[num NAME]]``; the build hook replaces it with
``<span class="lc-num" data-num="NAME">VALUE</span>``. An unknown name fails the
build. Tests rebuild the site and compare each span with a direct engine call.
"""

from __future__ import annotations

from collections.abc import Callable

from calc import format_bytes, model_state_bytes

__all__ = ["NUMBERS"]


def _gb(n: int, digits: int = 3) -> str:
    return format_bytes(n, digits=digits)


NUMBERS: dict[str, Callable[[], str]] = {
    "state-7b": lambda: _gb(model_state_bytes("7B").total),
    "state-70b": lambda: _gb(model_state_bytes("70B").total, 2),
    "weights-7b-bf16": lambda: _gb(model_state_bytes("7B").weights),
    "state-7b-over-weights": lambda: f"{model_state_bytes('7B').total // model_state_bytes('7B').weights}×",
    "zero1-7.5b-dp64": lambda: _gb(model_state_bytes(7.5e9, zero_stage=1, dp=64).total),
}
"""Named prose numbers: name -> zero-argument function returning the text to print."""
