"""The prose numbers, one module per part of the guide (each exports ``NUMBERS``), and what they share."""

from __future__ import annotations

from calc.models.architecture import Architecture

__all__ = ["model_dropout"]


def model_dropout(arch: Architecture) -> bool:
    """Whether ``arch`` trains with dropout, so a prose layout counts dropout masks only where the model has them.

    The preset's own [`Architecture.dropout`][calc.models.architecture.Architecture] (read from its ``config.json``):
    GPT-2 and GPT-3 style models (GPT-2, GPT-3, Megatron-LM's and Narayanan et al.'s GPT models) train with dropout
    0.1 (Korthikanti et al. 2022, Sec. 4.1 count its masks); Llama (Touvron et al. 2023, ``attention_dropout: 0.0``),
    Mistral, Qwen, Gemma, DeepSeek and the other presets train without it.

    Examples:
        >>> from calc.models.presets import preset
        >>> model_dropout(preset("gpt3-175b")), model_dropout(preset("llama2-7b"))
        (True, False)
    """
    return arch.dropout
