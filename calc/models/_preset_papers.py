"""The paper-only presets: the GPT models of Korthikanti et al. 2022 (Table 3) and Narayanan et al. 2021 (Table 1).

Neither paper published a checkpoint; each row is written as a ``gpt2``-type ``config.json`` (learned positions,
LayerNorm, biases, a 4h GELU MLP, a tied head: the architecture both papers describe) with the table's heads,
hidden size and layers, vocabulary 51,200 and sequence 2,048 (Korthikanti et al. Sec. 6).

Examples:
    >>> PAPER_PRESETS["narayanan-1t"]["n_layer"], PAPER_LABELS["megatron-22b"]
    (128, 'Megatron 22B (Korthikanti et al.)')
"""

from __future__ import annotations

from typing import Any

from calc.models._preset_builders import _gpt2

_KORTHIKANTI = (
    "Korthikanti et al. 2022 (arXiv:2205.05198), Table 3: {heads} heads, hidden {hidden}, {layers} layers; "
    "GPT architecture, vocab 51200, sequence 2048 (Sec. 6)"
)
_NARAYANAN = (
    "Narayanan et al. 2021 (arXiv:2104.04473), Table 1 ({params}B row): {heads} heads, hidden {hidden}, "
    "{layers} layers; GPT architecture, vocab 51200, sequence 2048"
)

_NARAYANAN_ROWS: tuple[tuple[str, str, int, int, int], ...] = (
    ("narayanan-1.7b", "1.7", 24, 2304, 24),
    ("narayanan-3.6b", "3.6", 32, 3072, 30),
    ("narayanan-7.5b", "7.5", 32, 4096, 36),
    ("narayanan-18.4b", "18.4", 48, 6144, 40),
    ("narayanan-39.1b", "39.1", 64, 8192, 48),
    ("narayanan-76.1b", "76.1", 80, 10240, 60),
    ("narayanan-145.6b", "145.6", 96, 12288, 80),
    ("narayanan-310.1b", "310.1", 128, 16384, 96),
    ("narayanan-529.6b", "529.6", 128, 20480, 105),
    ("narayanan-1t", "1008.0", 160, 25600, 128),
)
"""Narayanan et al.'s Table 1 rows: slug, billions of parameters as printed, heads, hidden size, layers."""

PAPER_PRESETS: dict[str, dict[str, Any]] = {
    "megatron-22b": _gpt2(
        6144, 48, 64, vocab=51200, ctx=2048, source=_KORTHIKANTI.format(heads=64, hidden=6144, layers=48)
    ),
    "megatron-175b": _gpt2(
        12288, 96, 96, vocab=51200, ctx=2048, source=_KORTHIKANTI.format(heads=96, hidden=12288, layers=96)
    ),
    "megatron-530b": _gpt2(
        20480, 105, 128, vocab=51200, ctx=2048, source=_KORTHIKANTI.format(heads=128, hidden=20480, layers=105)
    ),
    "megatron-1t": _gpt2(
        25600, 128, 160, vocab=51200, ctx=2048, source=_KORTHIKANTI.format(heads=160, hidden=25600, layers=128)
    ),
}
"""Korthikanti et al.'s four models, then Narayanan et al.'s ten (added below), by slug."""

for _slug, _params, _heads, _hidden, _layers in _NARAYANAN_ROWS:
    PAPER_PRESETS[_slug] = _gpt2(
        _hidden,
        _layers,
        _heads,
        vocab=51200,
        ctx=2048,
        source=_NARAYANAN.format(params=_params, heads=_heads, hidden=_hidden, layers=_layers),
    )


PAPER_LABELS: dict[str, str] = {
    "megatron-22b": "Megatron 22B (Korthikanti et al.)",
    "megatron-175b": "Megatron 175B / GPT-3 shape (Korthikanti et al.)",
    "megatron-530b": "Megatron 530B / MT-NLG shape (Korthikanti et al.)",
    "megatron-1t": "Megatron 1T (Korthikanti et al.)",
    **{
        slug: f"Megatron {'1T' if slug.endswith('-1t') else params + 'B'} (Narayanan et al. Table 1)"
        for slug, params, *_ in _NARAYANAN_ROWS
    },
}
"""Display labels of the paper-only presets."""
