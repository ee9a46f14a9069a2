"""Reading a pasted Hugging Face ``config.json``: bounded parsing, typed keys and per-model defaults.

Two steps, both safe on hostile text:

1. [`parse_config_json`][calc.models.hf_config.parse_config_json] refuses text longer than
   [`MAX_CONFIG_CHARS`][calc.models.hf_config.MAX_CONFIG_CHARS] or nested deeper than
   [`MAX_CONFIG_DEPTH`][calc.models.hf_config.MAX_CONFIG_DEPTH] *before* ``json`` sees it;
2. [`read_hf_config`][calc.models.hf_config.read_hf_config] turns the parsed object into the keyword
   arguments of [`Architecture`][calc.models.architecture.Architecture], reproducing the defaults that
   ``transformers`` (5.24) applies for each model class in [`HF_MODEL_TYPES`][calc.models.hf_config.HF_MODEL_TYPES].

Every bad value is a [`CalcError`][calc.errors.CalcError] naming the config key.

Examples:
    >>> model_type, kwargs = read_hf_config(parse_config_json(
    ...     '{"model_type": "llama", "vocab_size": 32000, "hidden_size": 4096, "intermediate_size": 11008,'
    ...     ' "num_hidden_layers": 32, "num_attention_heads": 32}'))
    >>> model_type, kwargs["hidden_size"], kwargs["num_kv_heads"]
    ('llama', 4096, 32)
"""

from __future__ import annotations

from typing import Any

from calc.errors import CalcError
from calc.models._hf_json import MAX_CONFIG_CHARS, MAX_CONFIG_DEPTH, parse_config_json
from calc.models._hf_readers import _READERS, MAX_CONFIG_INT, _HFReader

__all__ = [
    "HF_MODEL_TYPES",
    "MAX_CONFIG_CHARS",
    "MAX_CONFIG_DEPTH",
    "MAX_CONFIG_INT",
    "parse_config_json",
    "read_hf_config",
]

HF_MODEL_TYPES: tuple[str, ...] = (
    "deepseek_v3",
    "gemma",
    "gemma3_text",
    "gpt2",
    "gpt_oss",
    "llama",
    "mistral",
    "mixtral",
    "phi3",
    "qwen2",
    "qwen3",
    "qwen3_moe",
)
"""Hugging Face ``model_type`` values that [`read_hf_config`][calc.models.hf_config.read_hf_config] (and so
[`Architecture.from_hf_config`][calc.models.architecture.Architecture.from_hf_config]) reads."""


def read_hf_config(config: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """The ``model_type`` of a parsed ``config.json`` and the [`Architecture`][calc.models.architecture.Architecture]
    fields it describes (all but ``name`` and ``model_type``).

    The defaults per model class are those listed under
    [`Architecture.from_hf_config`][calc.models.architecture.Architecture.from_hf_config].

    Args:
        config: The parsed ``config.json``.

    Returns:
        ``(model_type, keyword arguments)``.

    Raises:
        CalcError: ``unsupported`` for a ``model_type`` outside
            [`HF_MODEL_TYPES`][calc.models.hf_config.HF_MODEL_TYPES];
            ``missing-field`` when a shape key is absent; ``invalid-value`` for a value of the wrong type or range.

    Examples:
        >>> read_hf_config({"model_type": "bert"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: model_type must be one of deepseek_v3, gemma, ..., qwen3_moe (got 'bert')
    """
    if not isinstance(config, dict):
        raise CalcError("config", "must be a JSON object (a config.json)", type(config).__name__)
    model_type = config.get("model_type")
    if model_type is None:
        raise CalcError("model_type", f"is required (one of {', '.join(HF_MODEL_TYPES)})", code="missing-field")
    if model_type not in HF_MODEL_TYPES:
        raise CalcError("model_type", f"must be one of {', '.join(HF_MODEL_TYPES)}", model_type, code="unsupported")
    fields = _READERS[model_type](_HFReader(config, model_type))
    _check_top_k(config, fields)
    return model_type, fields


_TOP_K_KEYS = ("num_experts_per_tok", "experts_per_token")
"""Config keys that hold the routed experts per token (the Architecture field ``experts_per_token``)."""


def _check_top_k(config: dict[str, Any], fields: dict[str, Any]) -> None:
    """Refuse a top-k outside 1..experts naming the config's own key (Architecture would name its field)."""
    experts, top_k = fields.get("num_experts", 0), fields.get("experts_per_token", 0)
    if experts and not 1 <= top_k <= experts:
        key = next((k for k in _TOP_K_KEYS if k in config), _TOP_K_KEYS[0])
        raise CalcError(key, f"must be from 1 to the number of experts ({experts})", top_k)
