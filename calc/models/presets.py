"""Named model configurations, kept as Hugging Face ``config.json``-style data.

Each entry of [`PRESETS`][calc.models.presets.PRESETS] is a plain ``dict`` that
[`Architecture.from_hf_config`][calc.models.architecture.Architecture.from_hf_config]
reads, plus a ``_source`` string saying where the numbers come from (keys
starting with ``_`` are ignored by the reader). Published checkpoints carry the
architecture fields of their ``config.json`` verbatim (token ids, dropout and
initializer settings, ``auto_map`` and ``quantization_config`` are left out;
none of them changes a weight's shape). Paper-only models (GPT-3, the
Megatron-LM evaluation models) are written as ``gpt2``-type configs: learned
positions, LayerNorm, biases, a 4h GELU MLP and a tied output head, the
architecture those papers describe.

Dropout follows the model type's default, as ``transformers`` reads these configs:
the ``gpt2``-type presets train with dropout 0.1 (GPT-2's config.json; Megatron-LM's
default, whose masks Korthikanti et al. 2022 count), every other preset with none
(their config.json says ``attention_dropout: 0.0`` or nothing), so
[`Architecture.dropout`][calc.models.architecture.Architecture] is ``False`` for them.

Examples:
    >>> from calc.models.presets import PRESETS, preset
    >>> PRESETS["llama3-8b"]["num_key_value_heads"]
    8
    >>> preset("gpt2-xl").param_count
    1557611200
    >>> preset("llama2-7b").dropout, preset("megatron-175b").dropout
    (False, True)
    >>> sorted({PRESETS[name]["model_type"] for name in PRESETS if preset(name).dropout})
    ['gpt2']
"""

from __future__ import annotations

from calc.errors import CalcError
from calc.models._preset_data import PRESETS
from calc.models._preset_papers import PAPER_LABELS
from calc.models.architecture import Architecture

__all__ = ["PRESETS", "PRESET_LABELS", "preset"]


PRESET_LABELS: dict[str, str] = {
    "gpt2": "GPT-2 (124M)",
    "gpt2-medium": "GPT-2 Medium (355M)",
    "gpt2-large": "GPT-2 Large (774M)",
    "gpt2-xl": "GPT-2 XL (1.5B)",
    "gpt3-175b": "GPT-3 175B",
    "llama2-7b": "Llama 2 7B",
    "llama2-13b": "Llama 2 13B",
    "llama2-70b": "Llama 2 70B",
    "llama3-8b": "Llama 3 8B",
    "llama3-70b": "Llama 3 70B",
    "llama3.1-405b": "Llama 3.1 405B",
    "llama3.2-1b": "Llama 3.2 1B",
    "llama3.2-3b": "Llama 3.2 3B",
    "mistral-7b": "Mistral 7B (v0.1)",
    "mixtral-8x7b": "Mixtral 8x7B",
    "mixtral-8x22b": "Mixtral 8x22B",
    "qwen2.5-0.5b": "Qwen2.5 0.5B",
    "qwen2.5-7b": "Qwen2.5 7B",
    "qwen2.5-72b": "Qwen2.5 72B",
    "qwen3-8b": "Qwen3 8B",
    "qwen3-30b-a3b": "Qwen3 30B-A3B",
    "qwen3-32b": "Qwen3 32B",
    "qwen3-235b-a22b": "Qwen3 235B-A22B",
    "gemma-7b": "Gemma 7B",
    "gemma3-1b": "Gemma 3 1B",
    "gemma3-27b": "Gemma 3 27B (language model)",
    "gpt-oss-20b": "gpt-oss-20b",
    "gpt-oss-120b": "gpt-oss-120b",
    "phi3-mini": "Phi-3 mini (3.8B)",
    "deepseek-v3": "DeepSeek-V3 (671B)",
    **PAPER_LABELS,
}
"""Display labels by preset slug (every key of [`PRESETS`][calc.models.presets.PRESETS] has one)."""


def preset(name: str) -> Architecture:
    """The [`Architecture`][calc.models.architecture.Architecture] of a named preset.

    Args:
        name: A key of [`PRESETS`][calc.models.presets.PRESETS] (``"llama3-8b"``, ``"deepseek-v3"``...).

    Returns:
        The architecture, named by its slug.

    Raises:
        CalcError: For an unknown name (code ``unknown-name``), listing the known ones.

    Examples:
        >>> preset("llama3.1-405b").param_count
        405853388800
        >>> preset("llama3-7b")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: preset must be one of the ... presets; the closest are llama3-70b, ... (got 'llama3-7b')
        >>> preset("bert")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: preset must be one of the ... presets (deepseek-v3, gemma-7b, ..., qwen3-8b) (got 'bert')
    """
    try:
        config = PRESETS[name]
    except (KeyError, TypeError):
        raise CalcError("preset", _unknown_rule(name), name, code="unknown-name") from None
    return Architecture.from_hf_config(config, name=name)


def _unknown_rule(name: object) -> str:
    """The rule an unknown preset name broke: the closest names when there are some, else the first and last."""
    import difflib  # here: only a misspelt name needs it, and a calculator's first render would pay for it

    known = sorted(PRESETS)
    close = difflib.get_close_matches(name, known, n=3, cutoff=0.6) if isinstance(name, str) else []
    if close:
        return f"must be one of the {len(known)} presets; the closest are {', '.join(close)}"
    return f"must be one of the {len(known)} presets ({known[0]}, {known[1]}, ..., {known[-1]})"
