"""The model a calculator sizes: a preset *or* a pasted Hugging Face ``config.json``, the same two fields everywhere.

Every calculator that takes a model (parameter count, training and serving memory, communication,
training compute, the planner) declares the pair with [`model_fields`][calc.widgets._model.model_fields]
and reads it with [`read_model`][calc.widgets._model.read_model]: ``preset`` is a select of
[`PRESET_LABELS`][calc.models.presets.PRESET_LABELS], ``config`` a textarea whose text, when not blank, is used
instead of the preset (read by [`parse_config_json`][calc.models.hf_config.parse_config_json] and
[`Architecture.from_hf_config`][calc.models.architecture.Architecture.from_hf_config]). A calculator whose
other fields can describe a model by hand (communication, training compute) adds a ``custom`` choice to
the select; with it and a blank config there is no model and those fields stand.

One error wording for a config that cannot be read: ``config cannot be read: <why>``, where the reason
names the key (``hidden_size is required in a llama config.json``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields

from calc.errors import CalcError
from calc.models.architecture import Architecture
from calc.models.hf_config import HF_MODEL_TYPES, parse_config_json
from calc.models.presets import PRESET_LABELS, preset
from calc.units import format_count
from calc.widgets import Calculator, Field
from calc.widgets._html import out

__all__ = [
    "CONFIG_HELP",
    "CUSTOM",
    "LEGACY_MODEL_FIELD",
    "ModelChoice",
    "accept_legacy_model",
    "model_chip",
    "model_fields",
    "preset_options",
    "read_model",
]

CUSTOM = "custom"
"""The ``preset`` value that means "no model: the fields below describe it" (where a calculator offers it)."""

LEGACY_MODEL_FIELD = "model"
"""The field that held the model before ``preset``/``config`` (serving memory's select, the planner's
textarea). A calculator marked with [`accept_legacy_model`][calc.widgets._model.accept_legacy_model] still
takes it: a value that starts with ``{`` is a config, anything else a preset name; errors name ``model``.
The browser maps it the same way when a link carries it."""

CONFIG_HELP = (
    "Paste or upload a Hugging Face config.json; when not empty it is used instead of the preset. "
    f"Model types: {', '.join(HF_MODEL_TYPES)}."
)
"""The help under every ``config`` textarea."""

PRESET_HELP = "Megatron shapes: Narayanan et al. 2021 (Table 1), Korthikanti et al. 2022 (175B: GPT-3, 530B: MT-NLG)"
"""Under every Model select: the papers its short Megatron labels name."""

_SHORT_CITES = ((" / GPT-3 shape", ""), (" / MT-NLG shape", ""), (" et al. Table 1)", ")"), (" et al.)", ")"))
"""What a preset's menu label leaves out to fit a form column (the papers are in [`PRESET_HELP`][])."""


def preset_options() -> tuple[tuple[str, str], ...]:
    """The Model select's ``(preset, label)`` pairs: [`PRESET_LABELS`][calc.models.presets.PRESET_LABELS] with
    the paper shapes' citations cut to the author ("Megatron 7.5B (Narayanan)"), short enough for a form column.

    Examples:
        >>> dict(preset_options())["narayanan-7.5b"], dict(preset_options())["megatron-175b"]
        ('Megatron 7.5B (Narayanan)', 'Megatron 175B (Korthikanti)')
    """
    pairs = []
    for name, label in PRESET_LABELS.items():
        for long, short in _SHORT_CITES:
            label = label.replace(long, short)
        pairs.append((name, label))
    return tuple(pairs)


_MAX_LABEL_CHARS = 80
_GROUP = "Model"
"""The field group the pair belongs to, where [`Field`][calc.widgets.Field] has groups."""


@dataclass(frozen=True)
class ModelChoice:
    """The model the reader chose.

    Attributes:
        arch: Its architecture.
        label: How results name it (the preset's label, or the config's ``_name_or_path`` and type).
        source: ``"preset"`` or ``"config"``.
    """

    arch: Architecture
    label: str
    source: str


def _grouped(**kwargs: object) -> dict[str, object]:
    """``kwargs`` plus ``group="Model"`` when [`Field`][calc.widgets.Field] takes a group."""
    if "group" in {f.name for f in fields(Field)}:
        kwargs["group"] = _GROUP
    return kwargs


def model_fields(default: str = "llama3-8b", *, custom: str = "") -> tuple[Field, Field]:
    """The ``preset`` select and the ``config`` textarea, for a calculator's ``fields``.

    Args:
        default: The preset chosen by default (``"custom"`` where ``custom`` is given).
        custom: The label of a ``custom`` choice, listed first; empty for none.

    Returns:
        ``(preset_field, config_field)``.

    Examples:
        >>> p, c = model_fields("llama3-70b")
        >>> p.name, p.default, c.name, c.kind
        ('preset', 'llama3-70b', 'config', 'textarea')
        >>> model_fields(CUSTOM, custom="Custom: the fields below")[0].options[0]
        ('custom', 'Custom: the fields below')
    """
    options = ((CUSTOM, custom),) if custom else ()
    options += preset_options()
    if default not in dict(options):
        raise ValueError(f"default preset {default!r} is not a choice")
    return (
        Field("preset", "Model", default, kind="select", options=options, help=PRESET_HELP, **_grouped()),
        Field("config", "config.json (optional)", "", kind="textarea", help=CONFIG_HELP, **_grouped()),
    )


def _label(config: Mapping[str, object], arch: Architecture) -> str:
    name = config.get("_name_or_path")
    if isinstance(name, str) and len(name) > _MAX_LABEL_CHARS:
        name = name[:_MAX_LABEL_CHARS] + "…"
    return f"{name} ({arch.model_type})" if isinstance(name, str) and name else f"pasted {arch.model_type} config"


def accept_legacy_model(calc: Calculator) -> Calculator:
    """Let ``calc`` take ``model`` as an input (old links, pages and scripts), though it shows no such field.

    [`render`][calc.widgets.render] passes on only the inputs a calculator has defaults for; this adds a
    blank default for ``model``, which [`read_model`][calc.widgets._model.read_model] reads before
    ``preset`` and ``config`` when it is not blank.

    Examples:
        >>> from calc.widgets import calculators
        >>> calculators()["serving-memory"].defaults["model"]
        ''
    """
    object.__setattr__(calc, "defaults", {**calc.defaults, LEGACY_MODEL_FIELD: ""})
    return calc


def _legacy(text: str) -> ModelChoice:
    """The model named by the legacy ``model`` input: a config when it looks like JSON, else a preset."""
    if text.startswith("{"):
        try:
            return read_model({"preset": "", "config": text})  # type: ignore[return-value]
        except CalcError as err:
            raise CalcError(LEGACY_MODEL_FIELD, err.rule, err.value, code=err.code) from None
    try:
        return ModelChoice(preset(text), PRESET_LABELS.get(text, text), "preset")
    except CalcError as err:
        raise CalcError(LEGACY_MODEL_FIELD, err.rule, err.value, code=err.code) from None


def read_model(v: Mapping[str, str], *, allow_custom: bool = False) -> ModelChoice | None:
    """The model in a calculator's ``preset`` and ``config`` values; ``None`` for ``custom`` with no config.

    Args:
        v: The calculator's values (``preset``, and ``config`` when it has one; ``model``, the legacy
            input, wins when it is not blank).
        allow_custom: The calculator offers ``custom`` (else it is an unknown preset).

    Returns:
        The pasted config when its text is not blank, else the preset; ``None`` when the preset is
        ``custom`` and no config is pasted.

    Raises:
        CalcError: On ``preset`` for an unknown name; on ``config`` (``config cannot be read: …``,
            naming the key) for text that is not a config the engine reads.

    Examples:
        >>> read_model({"preset": "llama3-8b", "config": ""}).arch.param_count
        8030261248
        >>> read_model({"preset": "custom", "config": "  "}, allow_custom=True) is None
        True
        >>> read_model({"preset": "llama3-8b", "config": '{"model_type": "llama"}'})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: config cannot be read: hidden_size is required in a llama config.json
    """
    legacy = v.get(LEGACY_MODEL_FIELD, "").strip()
    if legacy:
        return _legacy(legacy)
    text = v.get("config", "").strip()
    if not text:
        name = v["preset"]
        if allow_custom and name == CUSTOM:
            return None
        return ModelChoice(preset(name), PRESET_LABELS.get(name, name), "preset")
    config = parse_config_json(text, "config")
    try:
        arch = Architecture.from_hf_config(config, name="pasted config")
    except CalcError as err:
        raise CalcError("config", f"cannot be read: {err.message}", code=err.code) from None
    return ModelChoice(arch, _label(config, arch), "config")


def model_chip(choice: ModelChoice | None) -> str:
    """For a pasted config, one line saying what was read: type · parameters · layers · attention · vocabulary
    (``data-output="model_chip"``, for the page to show by the Model select, issue 19); nothing for a preset.

    Examples:
        >>> config = '{"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2, '
        >>> config += '"num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 1000}'
        >>> chip = model_chip(read_model({"preset": "llama3-8b", "config": config}))
        >>> print(chip[chip.index("From") : -len("</span></p>")])
        From config.json: llama · 202k parameters · 2 layers · GQA, 4 heads / 2 KV · vocabulary 1,000
        >>> model_chip(read_model({"preset": "llama3-8b", "config": ""}))
        ''
    """
    if choice is None or choice.source != "config":
        return ""
    a = choice.arch
    if a.uses_mla:
        attention = f"latent attention, {a.num_heads} heads"
    elif a.num_kv_heads == a.num_heads:
        attention = f"{a.num_heads} heads"
    else:
        attention = f"{'MQA' if a.num_kv_heads == 1 else 'GQA'}, {a.num_heads} heads / {a.num_kv_heads} KV"
    moe = [f"{a.num_experts} experts, top-{a.experts_per_token}"] if a.is_moe else []
    parts = [a.model_type, f"{format_count(a.param_count)} parameters", f"{a.num_layers} layers", attention, *moe]
    text = "From config.json: " + " · ".join([*parts, f"vocabulary {a.vocab_size:,}"])
    return f'<p class="lc-model-chip">{out("model_chip", text)}</p>'
