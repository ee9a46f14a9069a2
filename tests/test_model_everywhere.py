"""Your model, everywhere (issue 10): every calculator that takes a model takes a preset or a pasted config.json.

The same two fields (``preset``, ``config``, from ``calc.widgets._model``) in the parameter counter, training
and serving memory, communication, training compute and the planner; a pasted config gives exactly the
numbers of the equivalent preset; a config that cannot be read names the key at fault, in one wording; the
legacy ``model`` input (serving memory's select, the planner's textarea) still works.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

from calc.cli._fragment import read_fragment
from calc.models.presets import PRESETS
from calc.widgets import calculators, render
from calc.widgets._model import CONFIG_HELP, CUSTOM, read_model

MODEL_CALCULATORS = (
    "parameter-count",
    "training-memory",
    "serving-memory",
    "communication",
    "training-compute",
    "plan",
)
"""Every calculator that takes a model."""

LAYOUTS: dict[str, dict[str, str]] = {
    "communication": {"tp": "1", "pp": "1", "dp": "8"},  # divides every preset's heads and layers
    "plan": {"gpus": "64", "global_batch": "256", "seq_len": "4096"},  # a small search
}
"""Inputs besides the model, where a calculator's defaults do not suit every preset."""

PRESET_CASES = ("llama3-8b", "mixtral-8x7b", "deepseek-v3", "gemma3-27b", "qwen3-30b-a3b", "gpt-oss-20b")
"""Dense, MoE, latent attention, sliding window, Qwen3 MoE and gpt-oss: each path of the config reader."""

LABEL_OUTPUTS = {"model", "verdict"}
"""Outputs that name the model (a preset by its label, a config by its type), so differ by design."""


def _numbers(name: str, inputs: dict[str, str]) -> dict[str, object]:
    result = render(name, inputs)
    assert result["ok"], (name, inputs.get("preset"), result.get("error"))
    return {o.name: (o.value, o.text) for o in read_fragment(result["html"]).outputs if o.name not in LABEL_OUTPUTS}


def _cases() -> list[tuple[str, str]]:
    return [
        (name, p) for name in MODEL_CALCULATORS for p in PRESET_CASES if name != "plan" or p in ("llama3-8b", "gpt2")
    ]


@pytest.mark.parametrize("name", MODEL_CALCULATORS)
def test_every_model_calculator_has_the_same_two_fields(name: str) -> None:
    by_name = {f.name: f for f in calculators()[name].fields}
    preset, config = by_name["preset"], by_name["config"]
    assert preset.kind == "select" and preset.label == "Model"
    assert {v for v, _ in preset.options} - {CUSTOM} == set(PRESETS)
    assert config.kind == "textarea" and config.default == "" and config.help == CONFIG_HELP
    names = [f.name for f in calculators()[name].fields]
    assert names.index("config") == names.index("preset") + 1  # side by side, in the model group


@pytest.mark.parametrize(("name", "preset"), _cases(), ids=[f"{n}:{p}" for n, p in _cases()])
def test_pasted_config_gives_the_presets_numbers(name: str, preset: str) -> None:
    extra = LAYOUTS.get(name, {})
    by_preset = _numbers(name, {**extra, "preset": preset})
    by_config = _numbers(name, {**extra, "preset": "gpt2", "config": json.dumps(PRESETS[preset])})
    chip = by_config.pop("model_chip", None)  # only a pasted config gets the summary chip, naming its source
    assert chip is None or chip[1].startswith("From config.json: ")
    assert by_preset and by_config == by_preset


@pytest.mark.parametrize("name", MODEL_CALCULATORS)
def test_a_preset_changes_the_numbers(name: str) -> None:
    extra = LAYOUTS.get(name, {})
    assert _numbers(name, {**extra, "preset": "llama3-8b"}) != _numbers(name, {**extra, "preset": "mixtral-8x7b"})


BAD_CONFIGS = [
    ({k: v for k, v in PRESETS["llama3-8b"].items() if k != "hidden_size"}, "hidden_size is required"),
    ({**PRESETS["llama3-8b"], "num_attention_heads": "x"}, "num_attention_heads must be a whole number"),
    ({**PRESETS["llama3-8b"], "model_type": "bert"}, "model_type"),
    ({**PRESETS["mixtral-8x7b"], "num_experts_per_tok": 9}, "num_experts_per_tok"),  # top-9 of 8 experts
]
"""Configs the engine cannot read, and the key each message must name."""


@pytest.mark.parametrize("name", MODEL_CALCULATORS)
@pytest.mark.parametrize(("config", "key"), BAD_CONFIGS, ids=["hidden_size", "heads", "model_type", "top_k"])
def test_bad_config_names_the_key(name: str, config: dict, key: str) -> None:
    result = render(name, {**LAYOUTS.get(name, {}), "config": json.dumps(config)})
    assert result["ok"] is False
    error = result["error"]
    assert error["field"] == "config"
    assert error["message"].startswith("config cannot be read: ") and key in error["message"], error


@pytest.mark.parametrize("name", MODEL_CALCULATORS)
@pytest.mark.parametrize(("text", "rule"), [("not json", "JSON"), ("[1, 2]", "JSON object"), ("{" * 40, "deep")])
def test_config_that_is_not_a_json_object_is_said(name: str, text: str, rule: str) -> None:
    error = render(name, {"config": text})["error"]
    assert error["field"] == "config" and error["message"].startswith("config ") and rule in error["message"]


@pytest.mark.parametrize("name", MODEL_CALCULATORS)
def test_unknown_preset_names_the_preset_field(name: str) -> None:
    error = render(name, {"preset": "llama3-7b"})["error"]
    assert error["field"] == "preset" and "llama3-70b" in error["message"]  # the closest names


@pytest.mark.parametrize(
    ("name", "legacy", "inputs"),
    [
        ("serving-memory", "llama2-70b", {"preset": "llama2-70b"}),
        ("plan", "llama3-8b", {"preset": "llama3-8b"}),
        ("plan", json.dumps(PRESETS["llama3-8b"]), {"config": json.dumps(PRESETS["llama3-8b"])}),
    ],
    ids=["serving-preset", "plan-preset", "plan-config"],
)
def test_legacy_model_input_still_works(name: str, legacy: str, inputs: dict[str, str]) -> None:
    extra = LAYOUTS.get(name, {})
    assert _numbers(name, {**extra, "model": legacy}) == _numbers(name, {**extra, **inputs})


@pytest.mark.parametrize(("name", "value"), [("serving-memory", "llama-9"), ("plan", '{"model_type": "llama"}')])
def test_legacy_model_errors_name_model(name: str, value: str) -> None:
    assert render(name, {"model": value})["error"]["field"] == "model"


@pytest.mark.parametrize("name", ["communication", "training-compute"])
def test_custom_keeps_the_raw_fields(name: str) -> None:
    assert calculators()[name].defaults["preset"] == CUSTOM  # old links with params=… mean what they meant
    assert render(name, {"params": "7B"}) == render(name, {"preset": CUSTOM, "params": "7B"})
    assert render(name, {"params": "7B"}) != render(name, {"params": "70B"})


@pytest.mark.parametrize("preset", ["llama3-70b", "mixtral-8x7b", "deepseek-v3"])
def test_communication_model_is_its_shape_typed_by_hand(preset: str) -> None:
    """Choosing a model is the same as typing its parameters, layers, hidden size, K+V width and experts."""
    arch = read_model({"preset": preset}).arch
    kv = arch.num_heads * (arch.qk_nope_head_dim + arch.qk_rope_head_dim + arch.v_head_dim)
    typed = {
        "params": str(arch.param_count),
        "layers": str(arch.num_layers),
        "hidden": str(arch.hidden_size),
        "kv_dims": str(kv if arch.uses_mla else 2 * arch.num_kv_heads * arch.head_dim),
        "expert_params": str(arch.params_by_kind()["experts_routed"]),
        "top_k": str(arch.experts_per_token or 2),
        "cp": "2",  # context parallelism reads kv_dims
        "tp": "1",
        "pp": "1",
        "dp": "8",
    }
    chosen = {k: typed[k] for k in ("cp", "tp", "pp", "dp")}
    assert _numbers("communication", {**chosen, "preset": preset}) == _numbers("communication", typed)


@pytest.mark.parametrize(("preset", "tokens"), [("llama3-70b", "15T"), ("deepseek-v3", "14.8T")])
def test_training_compute_counts_active_parameters(preset: str, tokens: str) -> None:
    """6ND with N the parameters a token meets (Kaplan et al. 2020, Sec. 2.1): active ones for a MoE."""
    arch = read_model({"preset": preset}).arch
    flops = {
        o.name: o.value
        for o in read_fragment(render("training-compute", {"preset": preset, "tokens": tokens})["html"]).outputs
    }
    n_tokens = {"15T": 15 * 10**12, "14.8T": 148 * 10**11}[tokens]
    assert flops["total_flops"] == pytest.approx(6 * arch.active_param_count * n_tokens, rel=1e-12)


@pytest.mark.parametrize("preset", sorted(PRESETS))
def test_pasted_config_is_the_presets_architecture_dropout_included(preset: str) -> None:
    """Every field, dropout too (issue 18: a preset without dropout never counts masks, pasted or chosen)."""
    chosen = read_model({"preset": preset}).arch
    pasted = read_model({"preset": "gpt2", "config": json.dumps(PRESETS[preset])}).arch
    assert dataclasses.replace(pasted, name=chosen.name) == chosen
    assert chosen.dropout is (PRESETS[preset]["model_type"] == "gpt2")
