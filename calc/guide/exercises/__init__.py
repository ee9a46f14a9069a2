"""Exercises: interview-style questions whose answers the engine computes, for any drawn set of numbers.

Each [`Exercise`][calc.guide.exercises.Exercise] maps parameters to a [`Case`][calc.guide.exercises.Case]: the
question text, the answer with its unit and tolerance, a hint and a worked solution with the numbers
substituted. Seed 0 is the default case (the first choice of every parameter); any other seed draws each
parameter from its choices with ``random.Random(f"{id}:{seed}")``, so a seed in a link reproduces the
case on any machine. [`check`][calc.guide.exercises.check] reads what the reader typed (``1.1 TB``,
``1120 GB``, ``37.5%``, ``16``) and says whether it is within the tolerance.

Every formula is the engine's own: model state from ``calc.memory.model_state`` (Rajbhandari et al. 2020,
ZeRO, Sec. 3 and Fig. 1), activations from ``calc.memory.activations`` (Korthikanti et al. 2022, Table 2),
the KV cache from ``calc.memory.inference``, the bubble from ``calc.parallel.pipeline`` (Narayanan et al. 2021,
Sec. 2.2), collectives from ``calc.parallel.collectives`` (NCCL's bus-bandwidth convention) and FLOPs from
``calc.timing.compute`` (Kaplan et al. 2020, Sec. 2.1; PaLM Sec. 4.1). What they do not model (allocator
overhead, the CUDA context, fragmentation, overlap) is not in these answers either.

Examples:
    >>> case = draw("zero3-gpus")
    >>> case.answer_text, case.unit
    ('14 GPUs', 'gpus')
    >>> check("zero3-gpus", 0, "14")["correct"]
    True
    >>> check("zero3-gpus", 0, "12 GPUs")["correct"]
    False
"""

from __future__ import annotations

from calc.guide.exercises._answers import ANSWER_UNITS, MAX_SEED, Case, Exercise, format_answer, parse_answer
from calc.guide.exercises._registry import check, draw, exercises, live

__all__ = [
    "ANSWER_UNITS",
    "MAX_SEED",
    "Case",
    "Exercise",
    "check",
    "draw",
    "exercises",
    "format_answer",
    "live",
    "parse_answer",
]
