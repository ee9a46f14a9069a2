"""The prose numbers, one module per part of the guide (each exports ``NUMBERS``), and what they share.

Shared here: [`model_dropout`][], the guide's training layout ([`trained_layout`][]), the communication
calculator's defaults ([`COMM_CALCULATOR`][]) and the text formats of a share, a ratio and a duration. A helper that
formats a byte count stays in the module that prints it (the registry makes each module's ``format_bytes`` carry
its bytes to the page).
"""

from __future__ import annotations

from fractions import Fraction

from calc.memory.layout import Layout
from calc.models.architecture import Architecture
from calc.models.presets import preset

__all__ = ["COMM_CALCULATOR", "ms", "model_dropout", "pct", "seconds", "times", "trained_layout"]


def model_dropout(arch: Architecture) -> bool:
    """Whether ``arch`` trains with dropout, so a prose layout counts dropout masks only where the model has them.

    The preset's own [`Architecture.dropout`][calc.models.architecture.Architecture] (read from its ``config.json``):
    GPT-2 and GPT-3 style models (GPT-2, GPT-3, Megatron-LM's and Narayanan et al.'s GPT models) train with dropout
    0.1 (Korthikanti et al. 2022, Sec. 4.1 count its masks); Llama (Touvron et al. 2023, ``attention_dropout: 0.0``),
    Mistral, Qwen, Gemma, DeepSeek and the other presets train without it.

    Examples:
        >>> model_dropout(preset("gpt3-175b")), model_dropout(preset("llama2-7b"))
        (True, False)
    """
    return arch.dropout


def trained_layout(arch: str, **kw: object) -> Layout:
    """The layout the guide's examples train ``arch`` (a preset name) with: FlashAttention, selective recomputation
    and dropout as the model trains ([`model_dropout`][]); ``kw`` gives the rest (degrees, ZeRO, sequence, batch) and
    may override those three.

    Examples:
        >>> lay = trained_layout("llama3-8b", dp=8, zero_stage=1, seq_len=4096)
        >>> lay.flash_attention, lay.recompute, lay.dropout, lay.dp
        (True, 'selective', False, 8)
    """
    base = {"flash_attention": True, "recompute": "selective", "dropout": model_dropout(preset(arch))}
    return Layout(**{**base, **kw})  # type: ignore[arg-type]


COMM_CALCULATOR: dict[str, object] = dict(
    params="70B", layers=80, hidden=8192, kv_dims=2048, seq=4096, micro_batch=1, num_microbatches=16,
    tp=8, pp=4, dp=8, zero_stage=1, sequence_parallel=True,
)  # fmt: skip
"""The communication calculator's defaults (``calc/widgets/comm.py``) as keyword arguments of
[`step_communication`][calc.parallel.comm.step_communication]: a 70B model (80 layers, h = 8192, 8 KV heads of 128),
4,096-token sequences, 16 micro-batches of one, tp 8 x pp 4 x dp 8 with sequence parallelism and ZeRO-1."""


def pct(value: float | Fraction, digits: int = 1) -> str:
    """A share as a percentage.

    Examples:
        >>> pct(Fraction(1, 3)), pct(0.25, 0)
        ('33.3%', '25%')
    """
    return f"{float(value) * 100:.{digits}f}%"


def ms(seconds: float) -> str:
    """A duration in milliseconds: two significant figures below 10 ms, whole milliseconds above.

    Examples:
        >>> ms(0.00123), ms(1.5)
        ('1.2 ms', '1,500 ms')
    """
    milli = seconds * 1000
    return f"{milli:.2g} ms" if milli < 10 else f"{milli:,.0f} ms"


def seconds(value: float) -> str:
    """A duration in seconds to two decimals.

    Examples:
        >>> seconds(1.234)
        '1.23 s'
    """
    return f"{value:.2f} s"


def times(ratio: float | Fraction, digits: int = 2) -> str:
    """A ratio to ``digits`` significant figures.

    Examples:
        >>> times(Fraction(8, 3)), times(12.5, 3)
        ('2.7×', '12.5×')
    """
    return f"{float(ratio):.{digits}g}×"
