"""Numbers on docs/memory/optimizers.md and the interview's optimizer question: the conventions beyond Adam.

Per-parameter bytes and model-state totals come from ``calc.memory.conventions``; the shape-dependent states
(Adafactor, Shampoo, SOAP) are also counted exactly over a preset's transformer-block matrices with
``matrix_state_bytes``. Names start with ``opt-conv-`` (per convention) or ``opt-exact-`` (per preset).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

from calc import format_bytes, model_state_bytes
from calc.memory.conventions import (
    CONVENTIONS,
    KRONECKER_BYTES_PER_PARAM,
    SHAMPOO_BLOCK,
    SOAP_MAX_DIM,
    matrix_state_bytes,
)
from calc.memory.finetune import linear_shapes
from calc.models.presets import preset

NUMBERS: dict[str, Callable[[], str]] = {}

BEYOND_ADAM: tuple[str, ...] = (
    "mixed-adam-16",
    "mixed-lion-12",
    "mixed-muon-12",
    "mixed-adafactor-8",
    "mixed-adafactor-momentum-12",
    "mixed-shampoo-28",
    "mixed-soap-32",
)
"""The conventions the optimizers page compares, AdamW's first."""

SHAPED: tuple[str, ...] = tuple(n for n in BEYOND_ADAM if CONVENTIONS[n].shape)
"""Those whose second-moment statistics depend on the matrix's shape."""

EXACT_PRESETS: tuple[str, ...] = ("llama2-7b", "llama2-70b")
"""The presets whose block matrices the page counts exactly."""


def _states(name: str) -> int:
    c = CONVENTIONS[name]
    return c.momentum + c.variance


def block_matrices(model: str) -> list[tuple[int, int]]:
    """Every transformer-block weight matrix of a preset, one entry per matrix per layer."""
    arch = preset(model)
    return list(linear_shapes(arch).values()) * arch.num_layers


def exact_state_per_param(name: str, model: str) -> Fraction:
    """Optimizer-state bytes per parameter of a preset's block matrices, each matrix counted exactly."""
    mats = block_matrices(model)
    return Fraction(sum(matrix_state_bytes(name, r, c) for r, c in mats), sum(r * c for r, c in mats))


def _per_param(x: Fraction) -> str:
    return f"{float(x):.2f}" if x >= 1 else f"{float(x):.4f}"


for _name in BEYOND_ADAM:
    NUMBERS[f"opt-conv-{_name}-bpp"] = lambda n=_name: str(CONVENTIONS[n].bytes_per_param)
    NUMBERS[f"opt-conv-{_name}-states"] = lambda n=_name: str(_states(n))
    NUMBERS[f"opt-conv-{_name}-7b"] = lambda n=_name: format_bytes(model_state_bytes("7B", convention=n).total)
    NUMBERS[f"opt-conv-{_name}-70b"] = lambda n=_name: format_bytes(
        model_state_bytes("70B", convention=n).total, digits=3
    )
    for _model in EXACT_PRESETS:
        NUMBERS[f"opt-exact-{_name}-{_model}"] = lambda n=_name, m=_model: _per_param(exact_state_per_param(n, m))


def _llama_share(model: str) -> Fraction:
    """The share of a preset's parameters that are not block matrices (embedding, head, norms)."""
    arch = preset(model)
    return Fraction(arch.param_count - sum(r * c for r, c in block_matrices(model)), arch.param_count)


def _muon_llama(model: str) -> int:
    """Model state of a preset trained with Muon on its block matrices and AdamW on the rest (Liu et al. 2025)."""
    arch = preset(model)
    hidden = sum(r * c for r, c in block_matrices(model))
    return (
        model_state_bytes(hidden, convention="mixed-muon-12").total
        + model_state_bytes(arch.param_count - hidden, convention="mixed-adam-16").total
    )


NUMBERS.update(
    {
        "opt-conv-saving-70b": lambda: format_bytes(
            model_state_bytes("70B").total - model_state_bytes("70B", convention="mixed-muon-12").total
        ),
        "opt-conv-shampoo-over-adam-70b": lambda: format_bytes(
            model_state_bytes("70B", convention="mixed-shampoo-28").total - model_state_bytes("70B").total
        ),
        "opt-shampoo-block": lambda: f"{SHAMPOO_BLOCK:,}",
        "opt-soap-max-dim": lambda: f"{SOAP_MAX_DIM:,}",
        "opt-kronecker-bpp": lambda: str(KRONECKER_BYTES_PER_PARAM),
        "opt-llama2-7b-ffn": lambda: f"{preset('llama2-7b').intermediate_size:,}",
        "opt-llama2-7b-not-blocks": lambda: f"{float(_llama_share('llama2-7b')) * 100:.1f}%",
        "opt-muon-llama2-7b": lambda: format_bytes(_muon_llama("llama2-7b")),
        "opt-adam-llama2-7b": lambda: format_bytes(model_state_bytes(preset("llama2-7b").param_count).total),
        "opt-muon-llama2-7b-bpp": lambda: f"{_muon_llama('llama2-7b') / preset('llama2-7b').param_count:.2f}",
    }
)
