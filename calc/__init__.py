"""calc: the engine behind the LLM training memory and parallelism reference.

Pure Python, standard library only, exact integer bytes. The same code prints
the numbers in the guide (at build time), runs the in-page calculators (in
Pyodide) and answers on the command line (``python -m calc``).

Examples:
    >>> import calc
    >>> calc.format_bytes(calc.model_state_bytes("7B").total)
    '112 GB'
    >>> calc.format_bytes(calc.model_state_bytes("70B").total, digits=2)
    '1.1 TB'
"""

from __future__ import annotations

from calc.errors import CalcError
from calc.hardware import GPU, GPUS, gpu
from calc.model_state import (
    COMPONENTS,
    CONVENTIONS,
    Convention,
    ModelState,
    model_state_bytes,
    smallest_fitting_layout,
)
from calc.units import BYTE_UNITS, format_bytes, format_count, parse_count, parse_positive_int, to_bytes

__all__ = [
    "BYTE_UNITS",
    "COMPONENTS",
    "CONVENTIONS",
    "CalcError",
    "Convention",
    "GPU",
    "GPUS",
    "ModelState",
    "format_bytes",
    "format_count",
    "gpu",
    "model_state_bytes",
    "parse_count",
    "parse_positive_int",
    "smallest_fitting_layout",
    "to_bytes",
]

__version__ = "0.1.0"
