"""Parameter counts: against Hugging Face transformers, published totals and the papers' formulas.

Three kinds of evidence, strongest first:

1. ``tests/data/hf_param_counts.json``: ``sum(p.numel() for p in model.parameters())`` of the model
   ``transformers`` (version recorded in the file) instantiates from each config, on the meta device.
   Measured once outside the suite; the suite never imports transformers or torch.
2. Published totals from shared/reference/reference_numbers.md, Sec. 4 (model cards, papers, keras-hub).
3. The papers' closed forms (GPT-2/3 ``12h^2 + 13h`` per layer; Narayanan et al. 2021 Eq. 2).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from _helpers import LLAMA_7B_CONFIG
from calc.errors import CalcError
from calc.models.architecture import HF_MODEL_TYPES, PARAM_KINDS, Architecture
from calc.models.presets import PRESET_LABELS, PRESETS, preset
from calc.widgets.architecture import CALCULATOR

HF = json.loads((Path(__file__).parent / "data" / "hf_param_counts.json").read_text(encoding="utf-8"))
HF_CASES = HF["cases"]
EXACT = 0
"""Tolerance for counts that must reproduce to the parameter."""


# --------------------------------------------------------------------------- 1. transformers


@pytest.mark.parametrize("case", HF_CASES, ids=[c["id"] for c in HF_CASES])
def test_matches_transformers(case: dict) -> None:
    arch = Architecture.from_hf_config(case["config"])
    assert abs(arch.param_count - case["param_count"]) == EXACT


def test_hf_data_covers_every_model_type_and_preset() -> None:
    assert HF["transformers_version"] == "5.24.0"
    assert {c["config"]["model_type"] for c in HF_CASES} == set(HF_MODEL_TYPES)
    assert {c["preset"] for c in HF_CASES if c["preset"]} == set(PRESETS)
    # At least three hand-picked or random tiny configs per model type besides the presets.
    for model_type in HF_MODEL_TYPES:
        tiny = [c for c in HF_CASES if c["preset"] is None and c["config"]["model_type"] == model_type]
        assert len(tiny) >= 3, model_type


@pytest.mark.parametrize("slug", sorted(PRESETS))
def test_presets_are_the_configs_transformers_counted(slug: str) -> None:
    (case,) = [c for c in HF_CASES if c["preset"] == slug]
    assert {k: v for k, v in PRESETS[slug].items() if k != "_source"} == case["config"]


# --------------------------------------------------------------------------- 2. published totals

# reference_numbers.md Sec. 4, "Published total" column (exact integers) or "Formula total" where the
# source prints only a rounded size (marked "formula").
PUBLISHED_TOTALS = [
    ("gpt2", 124_439_808),  # keras-hub gpt2_presets.py; GPT-2 paper Table 2 prints 117M (the paper's count is off)
    ("gpt2-medium", 354_823_168),  # paper prints 345M
    ("gpt2-large", 774_030_080),  # paper prints 762M
    ("gpt2-xl", 1_557_611_200),  # paper prints 1542M
    ("gpt3-175b", 174_604_259_328),  # formula; Brown et al. Table D.1 prints 174,600M, Table 2.1 "175.0B"
    ("llama2-7b", 6_738_415_616),  # Llama 2 model card; HF safetensors lists 6,738,417,664 (+2,048 inv_freq buffers)
    ("llama2-13b", 13_015_864_320),  # formula
    ("llama2-70b", 68_976_648_192),  # formula
    ("llama3-8b", 8_030_261_248),  # Llama 3 paper; needs vocab 128,256 (the paper's table says 128,000)
    ("llama3-70b", 70_553_706_496),  # formula
    ("llama3.1-405b", 405_853_388_800),  # formula
    ("mistral-7b", 7_241_732_096),  # keras-hub mistral_presets.py
    ("mixtral-8x7b", 46_702_792_704),  # keras-hub mixtral_presets.py; paper abstract rounds to 47B
]


@pytest.mark.parametrize(("slug", "published"), PUBLISHED_TOTALS)
def test_published_totals(slug: str, published: int) -> None:
    assert abs(preset(slug).param_count - published) == EXACT


@pytest.mark.parametrize(
    ("slug", "total", "active"),
    [
        ("mixtral-8x7b", 46_702_792_704, 12_879_925_248),  # 32 layers x 6 idle experts x 3 x 4096 x 14336 less
        ("qwen3-30b-a3b", 30_532_122_624, 3_353_032_704),  # model card: "30.5B total, 3.3B activated"
    ],
)
def test_moe_active(slug: str, total: int, active: int) -> None:
    arch = preset(slug)
    assert (arch.param_count, arch.active_param_count) == (total, active)


def _without_embedding(a: Architecture) -> int:
    return a.param_count - a.embedding_params - a.lm_head_params


# Presets whose sources print only rounded sizes: (slug, what is counted, printed value, its last digit's unit).
# Each must round to what the source prints, to half a unit of its last printed digit.
PRINTED_SIZES = [
    # Llama 3.2 model card "1.23B": truncated, not rounded (1.2358B), so the count lies in [1.23B, 1.24B).
    ("llama3.2-1b", lambda a: a.param_count, 1.235e9, 0.01e9),
    ("llama3.2-3b", lambda a: a.param_count, 3.21e9, 0.01e9),
    ("mixtral-8x22b", lambda a: a.param_count, 141e9, 1e9),  # Mistral AI: "141B total, 39B active"
    ("mixtral-8x22b", lambda a: a.active_param_count, 39e9, 1e9),
    ("qwen3-32b", lambda a: a.param_count, 32.8e9, 0.1e9),  # Qwen3 report, Table 1
    ("qwen3-235b-a22b", lambda a: a.param_count, 235e9, 1e9),  # Qwen3 report, Table 2
    ("qwen3-235b-a22b", lambda a: a.active_param_count, 22e9, 1e9),
    ("gemma3-1b", lambda a: a.embedding_params, 302e6, 1e6),  # Gemma 3 report, Table 1
    ("gemma3-1b", _without_embedding, 698e6, 1e6),
    ("gemma3-27b", _without_embedding, 25_600e6, 1e6),  # the language model; Table 1's vision encoder is apart
    ("gpt-oss-20b", lambda a: a.param_count, 20.91e9, 0.01e9),  # gpt-oss model card, Table 1
    ("gpt-oss-120b", lambda a: a.param_count, 116.83e9, 0.01e9),
    # The model card's "active" counts the unembedding but not the embedding table.
    ("gpt-oss-20b", lambda a: a.active_param_count - a.embedding_params, 3.61e9, 0.01e9),
    ("gpt-oss-120b", lambda a: a.active_param_count - a.embedding_params, 5.13e9, 0.01e9),
]


@pytest.mark.parametrize(("slug", "count", "printed", "unit"), PRINTED_SIZES)
def test_printed_sizes_of_recent_models(slug: str, count, printed: float, unit: float) -> None:
    assert abs(count(preset(slug)) - printed) <= unit / 2


# DeepSeek-V3: the reference doc's formula (from inference/configs/config_671B.json) counts the router's
# e_score_correction_bias (256 per MoE layer, stored in the checkpoint). transformers 5.24 keeps it as a
# buffer, so model.parameters() - and this preset - leave it out: 58 x 256 = 14,848 fewer. The sources also
# disagree above that level: README "671B total, 37B activated"; README_WEIGHTS "36.7B activated" counting
# 0.9B embedding + 0.9B head; HF checkpoint "685B" = 671B + the 14B multi-token-prediction module, which
# transformers does not instantiate (num_nextn_predict_layers).
DEEPSEEK_DOC_TOTAL = 671_026_419_200
DEEPSEEK_DOC_ACTIVE = 37_552_297_472
DEEPSEEK_ROUTER_BIAS = 58 * 256


def test_deepseek_v3_against_transformers_and_doc() -> None:
    arch = preset("deepseek-v3")
    assert arch.param_count == DEEPSEEK_DOC_TOTAL - DEEPSEEK_ROUTER_BIAS  # what transformers instantiates
    assert arch.active_param_count == DEEPSEEK_DOC_ACTIVE - DEEPSEEK_ROUTER_BIAS
    with_bias = dataclasses.replace(arch, router_bias=True)  # the checkpoint's tensors, as the doc counts them
    assert (with_bias.param_count, with_bias.active_param_count) == (DEEPSEEK_DOC_TOTAL, DEEPSEEK_DOC_ACTIVE)
    assert round(with_bias.param_count / 1e9) == 671 and int(with_bias.active_param_count / 1e9) == 37
    # Per layer MLA 187,107,328 incl. the two latent norms (reference doc, Sec. 4 notes).
    assert arch.attention_params_per_layer + 1536 + 512 == 187_107_328
    assert arch.embedding_params == arch.lm_head_params == 926_679_040  # "0.9B embedding + 0.9B head"


# --------------------------------------------------------------------------- 3. the papers' formulas


def _gpt_formula(v: int, n_ctx: int, h: int, layers: int) -> int:
    """GPT-2/GPT-3 (reference doc Sec. 4): Vh + n_ctx h + L(12h^2 + 13h) + 2h."""
    return v * h + n_ctx * h + layers * (12 * h * h + 13 * h) + 2 * h


@pytest.mark.parametrize("slug", [s for s in PRESETS if PRESETS[s]["model_type"] == "gpt2"])
def test_gpt_closed_form(slug: str) -> None:
    c = PRESETS[slug]
    assert preset(slug).param_count == _gpt_formula(c["vocab_size"], c["n_positions"], c["n_embd"], c["n_layer"])


def _llama_formula(a: Architecture) -> int:
    """Llama/Mistral (reference doc Sec. 4): Vh(x2 untied) + L[h n_h d + 2h n_kv d + n_h d h + 3hf + 2h] + h."""
    h, d = a.hidden_size, a.head_dim
    per_layer = h * a.num_heads * d + 2 * h * a.num_kv_heads * d + a.num_heads * d * h + 3 * h * a.intermediate_size
    return a.vocab_size * h * (1 if a.tied_embeddings else 2) + a.num_layers * (per_layer + 2 * h) + h


@pytest.mark.parametrize(
    "slug",
    ["llama2-7b", "llama2-13b", "llama2-70b", "llama3-8b", "llama3-70b", "llama3.1-405b", "mistral-7b", "phi3-mini"],
)
def test_llama_closed_form(slug: str) -> None:
    assert preset(slug).param_count == _llama_formula(preset(slug))


# Narayanan et al. 2021 (arXiv:2104.04473), Table 1: printed size (billions, 1 decimal) per row. Eq. 2,
# P = 12lh^2 (1 + 13/(12h) + (V+s)/(12lh)) with V = 51,200 and s = 2048, omits the final LayerNorm (2h),
# which transformers' GPT-2 has.
NARAYANAN_TABLE_1 = [
    ("narayanan-1.7b", 1.7),
    ("narayanan-3.6b", 3.6),
    ("narayanan-7.5b", 7.5),
    ("narayanan-18.4b", 18.4),  # Eq. 2 gives 18.4498B: rounds down
    ("narayanan-39.1b", 39.1),
    ("narayanan-76.1b", 76.1),
    ("narayanan-145.6b", 145.6),  # GPT-3-like, but 80 layers: not GPT-3 itself
    ("narayanan-310.1b", 310.1),
    ("narayanan-529.6b", 529.6),
    ("narayanan-1t", 1008.0),
]
PRINTED_DECIMAL = 0.05
"""Half a unit of the printed decimal (billions to one place)."""


@pytest.mark.parametrize(("slug", "printed_b"), NARAYANAN_TABLE_1)
def test_narayanan_table_1_eq_2(slug: str, printed_b: float) -> None:
    a = preset(slug)
    h, layers, v, s = a.hidden_size, a.num_layers, a.vocab_size, a.max_position_embeddings
    eq2 = 12 * layers * h * h + 13 * layers * h + (v + s) * h  # Eq. 2 multiplied out, exact
    assert a.param_count - a.final_norm_params == eq2
    assert abs(eq2 / 1e9 - printed_b) <= PRINTED_DECIMAL


@pytest.mark.parametrize(
    ("slug", "narayanan_slug", "printed_b"),
    [
        ("megatron-175b", None, 174.6),  # Narayanan Table 2 names this shape (V = 51,200) "174.6B"
        ("megatron-530b", "narayanan-529.6b", 529.6),  # same shape as Table 1's 529.6B row (MT-NLG)
        ("megatron-1t", "narayanan-1t", 1008.0),
        ("megatron-22b", None, 22.1),  # Korthikanti Table 3 names it "22B"; Eq. 2 gives 22.07B
    ],
)
def test_korthikanti_table_3_models(slug: str, narayanan_slug: str | None, printed_b: float) -> None:
    a = preset(slug)
    assert abs(a.param_count / 1e9 - printed_b) <= PRINTED_DECIMAL
    if narayanan_slug:
        assert a == dataclasses.replace(preset(narayanan_slug), name=slug)


# reference_numbers.md Sec. 6: KV-cache bytes per token = 2 (bf16) x layers x cached elements per layer.
@pytest.mark.parametrize(
    ("slug", "bytes_per_token"),
    [
        ("llama2-70b", 327_680),  # 320 KiB
        ("llama2-7b", 524_288),  # 512 KiB
        ("llama3-8b", 131_072),
        ("mistral-7b", 131_072),  # the 4096-token sliding window caps tokens, not this
        ("deepseek-v3", 70_272),  # MLA: (512 latent + 64 rope key) x 61 layers x 2 B
    ],
)
def test_kv_cache_dims(slug: str, bytes_per_token: int) -> None:
    a = preset(slug)
    assert 2 * a.num_layers * a.kv_cache_dims_per_token() == bytes_per_token


# --------------------------------------------------------------------------- reading config.json


def _llama(**kw: object) -> dict:
    cfg = {
        "model_type": "llama",
        "vocab_size": 100,
        "hidden_size": 64,
        "intermediate_size": 96,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
    }
    cfg.update(kw)
    return {k: v for k, v in cfg.items() if v is not ...}


@pytest.mark.parametrize(
    ("config", "field", "expected"),
    [
        (_llama(), "num_kv_heads", 4),  # llama: absent -> heads
        (_llama(num_key_value_heads=None), "num_kv_heads", 4),  # null -> heads, every model type
        (_llama(model_type="mistral", num_attention_heads=8), "num_kv_heads", 8),  # MistralConfig default 8
        (
            _llama(
                model_type="qwen3_moe",
                num_attention_heads=8,
                num_experts=2,
                num_experts_per_tok=1,
                moe_intermediate_size=8,
            ),
            "num_kv_heads",
            4,
        ),  # Qwen3MoeConfig default 4
        (_llama(model_type="qwen2", num_attention_heads=32), "num_kv_heads", 32),  # Qwen2Config default 32
        (_llama(), "head_dim", 16),  # hidden / heads
        (_llama(model_type="qwen3", num_key_value_heads=2), "head_dim", 128),  # Qwen3Config default, not hidden / heads
        (_llama(model_type="gemma", num_key_value_heads=2), "head_dim", 256),  # GemmaConfig default
        (_llama(model_type="gemma", num_key_value_heads=2), "tied_embeddings", True),  # Gemma ties by default
        # Qwen2 unties by default; Qwen2.5-0.5B says true in its config.json.
        (_llama(model_type="qwen2", num_key_value_heads=2), "tied_embeddings", False),
        (_llama(model_type="qwen2", num_key_value_heads=2), "qkv_bias", True),  # Qwen2: q/k/v bias, no output bias
        (_llama(model_type="qwen2", num_key_value_heads=2), "attn_out_bias", False),
        (_llama(model_type="qwen3", num_key_value_heads=2), "qk_norm", True),
        (_llama(attention_bias=True), "attn_out_bias", True),  # llama's attention_bias covers o_proj too
        (_llama(model_type="mistral", num_key_value_heads=2), "sliding_window", 4096),  # MistralConfig default
        (_llama(model_type="qwen2", num_key_value_heads=2, sliding_window=4096), "sliding_window", 0),  # switched off
        (_llama(model_type="qwen2", num_key_value_heads=2, use_sliding_window=True), "sliding_window", 4096),
        ({"model_type": "gpt2", "vocab_size": 10, "n_embd": 8, "n_layer": 1, "n_head": 2}, "intermediate_size", 32),
        (
            {"model_type": "gpt2", "vocab_size": 10, "n_embd": 8, "n_layer": 1, "n_head": 2},
            "max_position_embeddings",
            1024,
        ),
        (
            {"model_type": "gpt2", "vocab_size": 10, "n_embd": 8, "n_layer": 1, "n_head": 2, "head_dim": 3},
            "head_dim",
            4,
        ),  # GPT-2 ignores head_dim
        (_llama(hidden_size=64.0), "hidden_size", 64),  # a whole float is accepted
        (_llama(num_hidden_layers=100_000), "num_layers", 100_000),  # the cap on pasted configs
    ],
)
def test_hf_defaults(config: dict, field: str, expected: object) -> None:
    assert getattr(Architecture.from_hf_config(config), field) == expected


def test_qwen3_moe_layer_pattern() -> None:
    cfg = _llama(
        model_type="qwen3_moe", num_hidden_layers=6, num_experts=4, moe_intermediate_size=8, num_experts_per_tok=2,
        decoder_sparse_step=2, mlp_only_layers=[3],
    )  # fmt: skip
    a = Architecture.from_hf_config(cfg)
    # transformers: sparse iff i not in mlp_only_layers and (i + 1) % decoder_sparse_step == 0
    assert [a.is_moe_layer(i) for i in range(6)] == [False, True, False, False, False, True]


def test_deepseek_ignores_moe_layer_freq_like_transformers() -> None:
    cfg = dict(PRESETS["deepseek-v3"], moe_layer_freq=2)
    assert Architecture.from_hf_config(cfg).num_moe_layers == 58


def test_underscore_keys_and_name() -> None:
    cfg = _llama(_source="x", _name_or_path="org/model")
    assert Architecture.from_hf_config(cfg).name == "org/model"
    assert Architecture.from_hf_config(cfg, name="mine").name == "mine"
    assert Architecture.from_hf_config(_llama()).name == "llama"


@pytest.mark.parametrize(
    ("config", "field", "code"),
    [
        ({"model_type": "bert"}, "model_type", "unsupported"),
        ({"hidden_size": 4096}, "model_type", "missing-field"),
        (_llama(hidden_size=...), "hidden_size", "missing-field"),
        (_llama(intermediate_size=None), "intermediate_size", "missing-field"),  # null is not a size
        ({"model_type": "gpt2", "vocab_size": 10, "n_layer": 1, "n_head": 2}, "n_embd", "missing-field"),
        (_llama(model_type="mixtral", num_key_value_heads=2), "num_local_experts", "missing-field"),
        (
            _llama(model_type="qwen3_moe", num_key_value_heads=2, num_experts=4),
            "moe_intermediate_size",
            "missing-field",
        ),
        (_llama(hidden_size="4096"), "hidden_size", "invalid-value"),  # strings are not numbers here
        (_llama(num_hidden_layers=True), "num_hidden_layers", "invalid-value"),
        (_llama(num_hidden_layers=0), "num_hidden_layers", "invalid-value"),
        (_llama(num_hidden_layers=100_001), "num_hidden_layers", "invalid-value"),  # keeps per-layer lists small
        (_llama(vocab_size=float("inf")), "vocab_size", "invalid-value"),
        (_llama(tie_word_embeddings="yes"), "tie_word_embeddings", "invalid-value"),
        (_llama(num_key_value_heads=3), "num_kv_heads", "not-divisible"),
        (
            _llama(hidden_size=60, num_attention_heads=8, head_dim=16),
            "num_attention_heads",
            "not-divisible",
        ),  # LlamaConfig refuses it (mistral, qwen3, gemma, phi3 accept it)
        (_llama(model_type="qwen2"), "num_key_value_heads", "missing-field"),  # default 32 does not divide 4
        ({"model_type": "gpt2", "vocab_size": 10, "n_embd": 9, "n_layer": 1, "n_head": 2}, "n_head", "not-divisible"),
        (
            _llama(model_type="mixtral", num_key_value_heads=2, num_local_experts=2, num_experts_per_tok=3),
            "num_experts_per_tok",  # the config's key, not the Architecture field it fills
            "invalid-value",
        ),
        (
            _llama(
                model_type="qwen3_moe",
                num_key_value_heads=2,
                num_experts=4,
                moe_intermediate_size=8,
                num_experts_per_tok=2,
                mlp_only_layers="all",
            ),
            "mlp_only_layers",
            "invalid-value",
        ),
        ([1, 2], "config", "invalid-value"),
    ],
)
def test_hf_errors(config: object, field: str, code: str) -> None:
    with pytest.raises(CalcError) as info:
        Architecture.from_hf_config(config)  # type: ignore[arg-type]
    assert (info.value.field, info.value.code) == (field, code)
    assert field in str(info.value)


def test_unsupported_lists_supported() -> None:
    with pytest.raises(CalcError) as info:
        Architecture.from_hf_config({"model_type": "falcon"})
    assert info.value.code == "unsupported"
    assert ", ".join(HF_MODEL_TYPES) in info.value.message
    assert "gemma3_text" in HF_MODEL_TYPES and "gpt_oss" in HF_MODEL_TYPES


# --------------------------------------------------------------------------- dropout follows the model (issue 18)

_GPT2 = {"model_type": "gpt2", "vocab_size": 10, "n_embd": 8, "n_layer": 1, "n_head": 2}
_PHI3 = _llama(model_type="phi3")


@pytest.mark.parametrize(
    ("config", "dropout"),
    [
        (_GPT2, True),  # GPT2Config: attn_pdrop = resid_pdrop = embd_pdrop = 0.1
        ({**_GPT2, "attn_pdrop": 0.0, "resid_pdrop": 0.0}, True),  # embd_pdrop still 0.1
        ({**_GPT2, "attn_pdrop": 0, "resid_pdrop": 0.0, "embd_pdrop": 0.0}, False),  # all three off
        ({**_GPT2, "attn_pdrop": None, "resid_pdrop": 0.0, "embd_pdrop": 0.0}, True),  # null is the default
        (_llama(), False),  # LlamaConfig: attention_dropout = 0.0, no other dropout
        (_llama(attention_dropout=0.1), True),
        (_llama(model_type="mistral", num_key_value_heads=2, attention_dropout=0.0), False),
        (_PHI3, False),  # Phi3Config: attention_dropout = resid_pdrop = embd_pdrop = 0.0
        ({**_PHI3, "resid_pdrop": 0.1}, True),
        ({**PRESETS["deepseek-v3"], "attention_dropout": 0.05}, True),
    ],
)
def test_dropout_from_the_config(config: dict, dropout: bool) -> None:
    assert Architecture.from_hf_config(config).dropout is dropout


@pytest.mark.parametrize("slug", sorted(PRESETS))
def test_preset_dropout_follows_the_model_type(slug: str) -> None:
    """GPT-2 and the GPT-3 / Megatron-LM shapes (gpt2-type) train with dropout; Llama and the others do not."""
    assert preset(slug).dropout is (PRESETS[slug]["model_type"] == "gpt2")
    assert preset(slug).as_dict()["dropout"] is preset(slug).dropout


@pytest.mark.parametrize(
    ("config", "key"),
    [
        (_llama(attention_dropout="0.1"), "attention_dropout"),
        (_llama(attention_dropout=1.5), "attention_dropout"),
        (_llama(attention_dropout=True), "attention_dropout"),
        ({**_GPT2, "resid_pdrop": -0.1}, "resid_pdrop"),
        ({**_PHI3, "embd_pdrop": [0.1]}, "embd_pdrop"),
    ],
)
def test_bad_dropout_names_the_key(config: dict, key: str) -> None:
    with pytest.raises(CalcError, match=f"^{key} must be a dropout probability from 0 to 1") as info:
        Architecture.from_hf_config(config)
    assert info.value.field == key


def test_dropout_by_hand_defaults_off_and_must_be_a_bool() -> None:
    shape = dict(name="t", model_type="custom", vocab_size=8, hidden_size=8, num_layers=1, num_heads=2,
                 num_kv_heads=2, head_dim=4, intermediate_size=16)  # fmt: skip
    assert Architecture(**shape).dropout is False
    assert Architecture(**shape, dropout=True).dropout is True
    with pytest.raises(CalcError, match="dropout must be true or false"):
        Architecture(**shape, dropout=1)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- presets and helpers


def test_presets_table() -> None:
    assert set(PRESET_LABELS) == set(PRESETS)
    for slug, cfg in PRESETS.items():
        assert isinstance(cfg["_source"], str) and cfg["_source"], slug
        assert preset(slug).name == slug


def test_preset_unknown() -> None:
    with pytest.raises(CalcError) as info:
        preset("llama-9")
    assert (info.value.field, info.value.code) == ("preset", "unknown-name")
    assert "llama3-8b" in info.value.message


@pytest.mark.parametrize("slug", sorted(PRESETS))
def test_breakdowns_add_up(slug: str) -> None:
    a = preset(slug)
    kinds = a.params_by_kind()
    assert tuple(kinds) == PARAM_KINDS
    assert sum(kinds.values()) == a.param_count
    assert sum(a.active_params_by_kind().values()) == a.active_param_count
    layers = a.layer_param_counts()
    assert len(layers) == a.num_layers
    assert a.embedding_params + sum(layers) + a.final_norm_params + a.lm_head_params == a.param_count
    assert a.non_embedding_param_count == a.param_count - a.embedding_params - a.lm_head_params
    assert json.loads(json.dumps(a.as_dict()))["param_count"] == a.param_count


@pytest.mark.parametrize(
    ("slug", "kind", "expected"),
    [
        ("gpt2", "embedding", 50257 * 768 + 1024 * 768),  # tokens + learned positions
        ("gpt2", "lm_head", 0),  # tied
        ("llama3-8b", "lm_head", 128256 * 4096),
        ("mixtral-8x7b", "router", 32 * 4096 * 8),  # no router bias
        ("mixtral-8x7b", "mlp_dense", 0),  # every layer is MoE
        ("deepseek-v3", "mlp_dense", 3 * 3 * 7168 * 18432),  # first_k_dense_replace = 3
        ("deepseek-v3", "experts_shared", 58 * 3 * 7168 * 2048),
        ("qwen3-8b", "norms", 36 * (2 * 4096 + 2 * 128) + 4096),  # incl. q_norm / k_norm
        ("gemma-7b", "norms", 28 * 2 * 3072 + 3072),  # Gemma's RMSNorm has a weight (1 + w)
    ],
)
def test_kinds(slug: str, kind: str, expected: int) -> None:
    assert preset(slug).params_by_kind()[kind] == expected


def test_per_layer_helpers() -> None:
    v3 = preset("deepseek-v3")
    assert v3.expert_params_per_layer == 256 * 3 * 7168 * 2048
    assert v3.mlp_params_per_layer(2) == 3 * 7168 * 18432
    assert v3.mlp_params_per_layer(60) == 256 * 7168 + 257 * 3 * 7168 * 2048
    gpt2 = preset("gpt2")
    assert gpt2.attention_params_per_layer == 4 * 768 * 768 + 4 * 768  # c_attn + c_proj with biases
    assert gpt2.mlp_params_per_layer(0) == 8 * 768 * 768 + 4 * 768 + 768


@pytest.mark.parametrize(
    ("kwargs", "field", "code"),
    [
        ({"mlp": "relu"}, "mlp", "invalid-value"),
        ({"norm": "batchnorm"}, "norm", "invalid-value"),
        ({"position": "alibi"}, "position", "invalid-value"),
        ({"num_kv_heads": 5}, "num_kv_heads", "not-divisible"),
        ({"hidden_size": 0}, "hidden_size", "invalid-value"),
        ({"tied_embeddings": 1}, "tied_embeddings", "invalid-value"),
        ({"experts_per_token": 2}, "num_experts", "invalid-value"),
        ({"num_experts": 4, "experts_per_token": 5, "moe_intermediate_size": 8}, "experts_per_token", "invalid-value"),
        ({"num_experts": 4, "experts_per_token": 1}, "moe_intermediate_size", "invalid-value"),
        (
            {"kv_lora_rank": 8, "qk_rope_head_dim": 4, "qk_nope_head_dim": 4, "v_head_dim": 8, "head_dim": 9},
            "head_dim",
            "invalid-value",
        ),
        ({"q_lora_rank": 8}, "q_lora_rank", "invalid-value"),
        ({"mlp_only_layers": [1]}, "mlp_only_layers", "invalid-value"),
    ],
)
def test_architecture_validation(kwargs: dict, field: str, code: str) -> None:
    base = {
        "name": "t",
        "model_type": "custom",
        "vocab_size": 10,
        "hidden_size": 32,
        "num_layers": 2,
        "num_heads": 4,
        "num_kv_heads": 4,
        "head_dim": 8,
        "intermediate_size": 64,
    }
    with pytest.raises(CalcError) as info:
        Architecture(**{**base, **kwargs})
    assert (info.value.field, info.value.code) == (field, code)


# --------------------------------------------------------------------------- invariants


@st.composite
def architectures(draw: st.DrawFn, moe: bool | None = None, mla: bool | None = None) -> Architecture:
    """Random valid architectures: dense or MoE, standard or latent attention, any norm/MLP/tying."""
    heads = draw(st.integers(1, 16))
    kv = draw(st.sampled_from([d for d in range(1, heads + 1) if heads % d == 0]))
    layers = draw(st.integers(1, 8))
    experts = 0 if moe is False else draw(st.integers(0 if moe is None else 1, 16))
    mla = draw(st.booleans()) if mla is None else mla
    rope, nope = draw(st.integers(1, 16)), draw(st.integers(0, 16))
    kw: dict = {
        "name": "h",
        "model_type": "custom",
        "vocab_size": draw(st.integers(1, 5000)),
        "hidden_size": draw(st.integers(1, 256)),
        "num_layers": layers,
        "num_heads": heads,
        "num_kv_heads": heads if mla else kv,
        "head_dim": rope + nope if mla else draw(st.integers(1, 64)),
        "intermediate_size": draw(st.integers(1, 512)),
        "mlp": draw(st.sampled_from(["gelu", "swiglu"])),
        "norm": draw(st.sampled_from(["layernorm", "rmsnorm"])),
        "position": draw(st.sampled_from(["learned", "rope"])),
        "max_position_embeddings": draw(st.integers(1, 4096)),
        "tied_embeddings": draw(st.booleans()),
        "qkv_bias": draw(st.booleans()),
        "attn_out_bias": draw(st.booleans()),
        "mlp_bias": draw(st.booleans()),
        "qk_norm": draw(st.booleans()),
    }
    if experts:
        kw.update(
            num_experts=experts,
            experts_per_token=draw(st.integers(1, experts)),
            num_shared_experts=draw(st.integers(0, 2)),
            moe_intermediate_size=draw(st.integers(1, 128)),
            first_k_dense=draw(st.integers(0, layers)),
            moe_layer_freq=draw(st.integers(1, 3)),
            router_bias=draw(st.booleans()),
            mlp_only_layers=tuple(draw(st.lists(st.integers(0, layers + 2), max_size=3))),
        )
    if mla:
        kw.update(
            q_lora_rank=draw(st.integers(0, 64)),
            kv_lora_rank=draw(st.integers(1, 64)),
            qk_rope_head_dim=rope,
            qk_nope_head_dim=nope,
            v_head_dim=draw(st.integers(1, 32)),
        )
    return Architecture(**kw)


@settings(max_examples=200, deadline=None)
@given(architectures())
def test_total_at_least_active(a: Architecture) -> None:
    assert a.param_count >= a.active_param_count > 0
    if not a.is_moe or a.experts_per_token == a.num_experts:
        assert a.param_count == a.active_param_count
    assert sum(a.params_by_kind().values()) == a.param_count
    assert sum(a.active_params_by_kind().values()) == a.active_param_count
    # The closed-form layer count and totals agree with walking the layers one by one.
    assert a.num_moe_layers == sum(a.is_moe_layer(i) for i in range(a.num_layers))
    assert a.embedding_params + sum(a.layer_param_counts()) + a.final_norm_params + a.lm_head_params == a.param_count


@settings(max_examples=200, deadline=None)
@given(architectures())
def test_untying_adds_vocab_times_hidden(a: Architecture) -> None:
    tied = dataclasses.replace(a, tied_embeddings=True)
    untied = dataclasses.replace(a, tied_embeddings=False)
    assert untied.param_count - tied.param_count == a.vocab_size * a.hidden_size
    assert untied.active_param_count - tied.active_param_count == a.vocab_size * a.hidden_size


@settings(max_examples=200, deadline=None)
@given(architectures(mla=False), st.data())
def test_fewer_kv_heads_never_adds_params(a: Architecture, data: st.DataObject) -> None:
    fewer = data.draw(st.sampled_from([d for d in range(1, a.num_kv_heads + 1) if a.num_heads % d == 0]))
    gqa = dataclasses.replace(a, num_kv_heads=fewer)
    assert gqa.param_count <= a.param_count
    assert gqa.kv_cache_dims_per_token() <= a.kv_cache_dims_per_token()


@settings(max_examples=200, deadline=None)
@given(architectures(moe=True), st.integers(1, 8))
def test_more_experts_add_total_not_active(a: Architecture, extra: int) -> None:
    assume(a.is_moe)
    more = dataclasses.replace(a, num_experts=a.num_experts + extra)
    assert more.param_count > a.param_count
    # Only the router grows for the active count (h, + 1 with a router bias, per new expert per MoE layer).
    router_growth = a.num_moe_layers * extra * (a.hidden_size + (1 if a.router_bias else 0))
    assert more.active_param_count == a.active_param_count + router_growth


@settings(max_examples=200, deadline=None)
@given(architectures(moe=False))
def test_adding_a_dense_layer_adds_one_layer(a: Architecture) -> None:
    deeper = dataclasses.replace(a, num_layers=a.num_layers + 1)
    assert deeper.param_count - a.param_count == a.layer_param_counts()[0]


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 64),
    st.integers(1, 8),
    st.integers(1, 8),
    st.integers(1, 200),
    st.integers(1, 4),
    st.booleans(),
    st.booleans(),
    st.booleans(),
)
def test_llama_config_matches_closed_form(
    head_dim: int, kv: int, groups: int, inter: int, layers: int, tied: bool, attn_bias: bool, mlp_bias: bool
) -> None:
    heads = kv * groups
    cfg = _llama(
        hidden_size=heads * head_dim,
        num_attention_heads=heads,
        num_key_value_heads=kv,
        intermediate_size=inter,
        num_hidden_layers=layers,
        tie_word_embeddings=tied,
        attention_bias=attn_bias,
        mlp_bias=mlp_bias,
    )
    a = Architecture.from_hf_config(cfg)
    h = heads * head_dim
    biases = layers * ((heads + 2 * kv) * head_dim + h if attn_bias else 0)
    biases += layers * (2 * inter + h if mlp_bias else 0)
    assert a.param_count == _llama_formula(a) + biases


# --------------------------------------------------------------------------- the calculator


def _render(**inputs: str) -> str:
    return CALCULATOR.compute({**CALCULATOR.defaults, **inputs})


def test_calculator_defaults() -> None:
    fragment = _render()
    assert ">8,030,261,248<" in fragment and ">8.03B<" in fragment  # Llama 3 8B
    assert 'data-output="weights_bytes">16.1 GB<' in fragment  # 2 B x 8.03e9


@pytest.mark.parametrize(
    ("inputs", "outputs"),
    [
        (
            {"preset": "mixtral-8x7b"},
            {"total_params": "46.7B", "active_params": "12.9B", "active_params_exact": "12,879,925,248"},
        ),
        ({"preset": "deepseek-v3", "unit": "GiB"}, {"total_params": "671B", "active_params": "37.6B"}),
        ({"preset": "gpt2"}, {"total_params_exact": "124,439,808", "params_embedding": "39,383,808"}),
        # The textarea wins over the preset when it is not empty.
        (
            {"preset": "gpt2", "config": json.dumps(PRESETS["qwen3-30b-a3b"])},
            {"total_params_exact": "30,532,122,624", "active_params": "3.35B"},
        ),
        (
            {"config": json.dumps({**PRESETS["qwen2.5-0.5b"], "_name_or_path": "Qwen/Qwen2.5-0.5B"})},
            {"model": "Qwen/Qwen2.5-0.5B (qwen2)", "total_params_exact": "494,032,768"},
        ),
        ({"config": "   \n  "}, {"total_params_exact": "8,030,261,248"}),  # blank = use the preset
    ],
)
def test_calculator_outputs(inputs: dict, outputs: dict) -> None:
    fragment = _render(**inputs)
    for name, text in outputs.items():
        assert f'data-output="{name}">{text}<' in fragment or f'data-output="{name}" class="strong">{text}<' in (
            fragment
        ), name


@pytest.mark.parametrize(
    ("config", "code", "message"),
    [
        ('{"model_type" "llama"}', "invalid-value", "not valid JSON: Expecting ':' delimiter at line 1, column 15"),
        ('{"model_type": "llama",}', "invalid-value", "at line 1, column"),  # wording differs in Python 3.13+
        ('{\n  "model_type": "llama"\n  "x": 1}', "invalid-value", "line 3, column 3"),
        ("[1, 2]", "invalid-value", "config must be a JSON object"),
        ('{"model_type": "bert"}', "unsupported", "config cannot be read: model_type must be one of deepseek_v3"),
        ('{"model_type": "llama"}', "missing-field", "config cannot be read: hidden_size is required in a llama"),
        ("9" * 5000, "invalid-value", "config is not valid JSON"),  # beyond Python's int digit limit
    ],
)
def test_calculator_config_errors(config: str, code: str, message: str) -> None:
    with pytest.raises(CalcError) as info:
        _render(config=config)
    assert (info.value.field, info.value.code) == ("config", code)
    assert message in info.value.message


def test_calculator_unknown_preset() -> None:
    with pytest.raises(CalcError) as info:
        _render(preset="nope")
    assert info.value.field == "preset"


@pytest.mark.parametrize("garbage", ["", "abc", "-1", "1e999", "NaN", "{}", "null", '{"model_type": 5}', "<script>"])
def test_calculator_garbage_is_a_calc_error(garbage: str) -> None:
    for f in CALCULATOR.fields:
        try:
            fragment = _render(**{f.name: garbage})
        except CalcError as err:
            assert err.field in ("preset", "config", "unit")
        else:
            assert "<script>" not in fragment


def test_v_head_dim_defaults_to_head_dim() -> None:
    a = preset("llama3-8b")
    assert a.v_head_dim == a.head_dim == 128
    narrower = dataclasses.replace(a, head_dim=64, v_head_dim=0)  # 0 = "same as head_dim" again
    assert narrower.v_head_dim == 64
    assert narrower.kv_cache_dims_per_token() == 2 * 8 * 64


def _cfg(**changes: object) -> str:
    return json.dumps({**LLAMA_7B_CONFIG, **changes})


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("[" * 5000, "must nest arrays and objects at most 32 deep"),  # RecursionError / Pyodide stack overflow
        ("{" * 5000, "must nest arrays and objects at most 32 deep"),
        ('{"a": ' * 5000 + "1" + "}" * 5000, "must nest arrays and objects at most 32 deep"),
        ("[" * 33 + "]" * 33, "must nest arrays and objects at most 32 deep"),
        ("[[" * 65_000 + "]]" * 65_000, "must nest arrays and objects at most 32 deep"),
        ("]" * 100 + "[" * 5000, "must nest arrays and objects at most 32 deep"),
        ('{"x": "' + '\\"' * 20000 + "[" * 40, "is not valid JSON"),  # brackets in an unterminated string
        ('{"model_type": "llama", "x": ' + "[" * 40 + "]" * 40 + "}", "must nest arrays and objects at most 32"),
        ("x" * (256 * 1024 + 1), "config must be at most 262,144 characters"),
        (_cfg(pad="x" * 262_000), "config must be at most 262,144 characters"),
        (_cfg(hidden_size=1e300), "hidden_size must be a whole number from 1 to 16,777,216 (got 1e+300)"),
        (_cfg(hidden_size=10**30), "hidden_size must be a whole number from 1 to 16,777,216"),
        (_cfg(vocab_size=-5), "vocab_size must be a whole number from 1 to 16,777,216 (got -5)"),
        (_cfg(num_attention_heads="32"), "num_attention_heads must be a whole number from 1 to 16,777,216"),
        (_cfg(intermediate_size=True), "intermediate_size must be a whole number"),
        (_cfg(num_hidden_layers={"n": 32}), "num_hidden_layers must be a whole number from 1 to 100,000"),
        (_cfg(num_hidden_layers=[32]), "num_hidden_layers must be a whole number from 1 to 100,000"),
        (_cfg(hidden_size=4096.5), "hidden_size must be a whole number from 1 to 16,777,216 (got 4096.5)"),
        (_cfg(max_position_embeddings=2**40), "max_position_embeddings must be a whole number from 1 to 16,777,216"),
        (_cfg(tie_word_embeddings="yes"), "tie_word_embeddings must be true or false"),
        ('{"model_type": "llama", "hidden_size": 1e400}', "hidden_size must be a whole number"),  # json reads inf
        ('{"model_type": "llama", "hidden_size": NaN}', "hidden_size must be a whole number"),
        (_cfg(model_type=["llama"]), "model_type must be one of"),
        (_cfg(model_type="x" * 5000), "model_type must be one of"),
    ],
)
def test_calculator_hostile_configs(config: str, message: str) -> None:
    with pytest.raises(CalcError) as info:
        _render(config=config)
    assert info.value.field == "config"
    assert message in info.value.message, info.value.message
    assert len(info.value.message) < 600


def test_calculator_long_name_is_cut() -> None:
    fragment = _render(config=_cfg(_name_or_path="n" * 5000))
    assert "n" * 80 + "…" in fragment and "n" * 81 not in fragment


def test_calculator_brackets_inside_strings_do_not_count() -> None:
    assert "data-output" in _render(config=_cfg(note='"[{' * 2000 + "\\" * 100))


_GEMMA3_TINY = {
    "model_type": "gemma3_text",
    "vocab_size": 1000,
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 7,
    "num_attention_heads": 4,
}


@pytest.mark.parametrize(
    ("extra", "global_layers"),
    [
        ({}, 1),  # sliding_window_pattern 6 by default: layer 5 of 0..6 is global
        ({"sliding_window_pattern": 2}, 3),  # layers 1, 3, 5
        ({"layer_types": ["full_attention"] * 7}, 7),  # listed types win over the pattern
        ({"layer_types": ["sliding_attention"] * 6 + ["full_attention"]}, 1),
        ({"sliding_window": None}, 0),  # no window: nothing is local, nothing to count
    ],
)
def test_gemma3_global_layers(extra: dict, global_layers: int) -> None:
    assert Architecture.from_hf_config({**_GEMMA3_TINY, **extra}).global_attention_layers == global_layers


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({**_GEMMA3_TINY, "layer_types": ["full_attention"] * 6}, "layer_types"),  # one type per layer
        ({**_GEMMA3_TINY, "layer_types": "full_attention"}, "layer_types"),
        ({**_GEMMA3_TINY, "hidden_size": 66}, "num_attention_heads"),  # Gemma3TextConfig refuses it too
    ],
)
def test_gemma3_bad_configs_name_the_key(config: dict, field: str) -> None:
    with pytest.raises(CalcError) as info:
        Architecture.from_hf_config(config)
    assert info.value.field == field


def test_global_layers_at_most_the_layers() -> None:
    with pytest.raises(CalcError) as info:
        dataclasses.replace(preset("gemma3-1b"), global_attention_layers=27)
    assert info.value.field == "global_attention_layers"
