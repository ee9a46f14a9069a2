"""Numbers on the home page."""

from __future__ import annotations

from collections.abc import Callable

from calc import format_bytes, model_state_bytes

NUMBERS: dict[str, Callable[[], str]] = {
    "state-7b": lambda: format_bytes(model_state_bytes("7B").total),
    "state-70b": lambda: format_bytes(model_state_bytes("70B").total, digits=2),
    "weights-7b-bf16": lambda: format_bytes(model_state_bytes("7B").weights),
    "state-7b-over-weights": lambda: f"{model_state_bytes('7B').total // model_state_bytes('7B').weights}×",
    "zero1-7.5b-dp64": lambda: format_bytes(model_state_bytes(7.5e9, zero_stage=1, dp=64).total),
}
