"""What is trained: [`Architecture`][calc.models.architecture.Architecture] (parameter counts by kind,
from a Hugging Face ``config.json`` or by hand), the config reader and the named presets.

Depends only on the foundation (``calc.errors``, ``calc.units``). Import the modules themselves, or the
public names from ``calc``.
"""
