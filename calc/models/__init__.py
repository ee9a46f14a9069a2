"""What is trained: [`Architecture`][calc.models.architecture.Architecture] (parameter counts by kind,
from a Hugging Face ``config.json`` or by hand), the config reader and the named presets.

- [`architecture`][calc.models.architecture]: the shapes, validated on construction (its parameter counts
  by component come from ``_param_counts``);
- [`hf_config`][calc.models.hf_config]: a pasted ``config.json`` read safely (``_hf_json`` bounds the text,
  ``_hf_readers`` holds one reader per ``model_type`` with ``transformers``' defaults);
- [`presets`][calc.models.presets]: the named models and their labels (the configs are data: ``_preset_data``
  for the published checkpoints, built with ``_preset_builders``, and ``_preset_papers`` for the papers' shapes).

Depends only on the foundation (``calc.errors``, ``calc.units``). Import the public modules, or the
public names from ``calc``; the ``_`` modules are their parts.
"""
