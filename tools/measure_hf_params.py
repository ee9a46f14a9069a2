"""Re-measure ``tests/data/hf_param_counts.json`` with real Hugging Face ``transformers`` (not part of the suite).

Every case's ``param_count`` is ``sum(p.numel() for p in model.parameters())`` of the model that
``AutoModelForCausalLM.from_config`` instantiates on the meta device (no weights are allocated or downloaded).
Presets come from ``calc.models.presets.PRESETS`` (without ``_source``); each other case keeps its committed config.
Cases listed in ``EXTRA`` are added when missing. Run it with torch and transformers installed (the validation
environment has both), from the repository root::

    python tools/measure_hf_params.py          # rewrite the file, print what changed
    python tools/measure_hf_params.py --check  # exit 1 if any committed count differs from transformers
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT / "tests" / "data" / "hf_param_counts.json"
sys.path.insert(0, str(ROOT))

# Hand-picked tiny configs for model types that joined after the file was first generated: the class
# defaults (fields left out), biases switched off, odd widths. At least three per model type.
EXTRA: list[dict] = [
    {
        "id": "edge:gemma3-text-defaults",
        "note": "only the required shape fields: the class defaults fill the rest (head_dim 256, 4 KV heads)",
        "config": {
            "model_type": "gemma3_text",
            "vocab_size": 1000,
            "hidden_size": 64,
            "intermediate_size": 96,
            "num_hidden_layers": 3,
            "num_attention_heads": 8,
        },
    },
    {
        "id": "edge:gemma3-text-untied-bias",
        "note": "untied head and attention biases",
        "config": {
            "model_type": "gemma3_text",
            "vocab_size": 777,
            "hidden_size": 48,
            "intermediate_size": 80,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 24,
            "attention_bias": True,
            "tie_word_embeddings": False,
        },
    },
    {
        "id": "edge:gemma3-text-mqa",
        "note": "one KV head, head_dim not hidden/heads",
        "config": {
            "model_type": "gemma3_text",
            "vocab_size": 513,
            "hidden_size": 48,
            "intermediate_size": 72,
            "num_hidden_layers": 4,
            "num_attention_heads": 6,
            "num_key_value_heads": 1,
            "head_dim": 16,
        },
    },
    {
        "id": "edge:gpt-oss-defaults",
        "note": "only the required shape fields: 128 experts top-4, head_dim 64, 8 KV heads, biases on",
        "config": {
            "model_type": "gpt_oss",
            "vocab_size": 1000,
            "hidden_size": 64,
            "intermediate_size": 32,
            "num_hidden_layers": 2,
            "num_attention_heads": 8,
        },
    },
    {
        "id": "edge:gpt-oss-no-attn-bias",
        "note": "attention biases off (the experts and router keep theirs), tied head",
        "config": {
            "model_type": "gpt_oss",
            "vocab_size": 321,
            "hidden_size": 48,
            "intermediate_size": 40,
            "num_hidden_layers": 3,
            "num_attention_heads": 4,
            "num_key_value_heads": 2,
            "head_dim": 12,
            "num_local_experts": 6,
            "num_experts_per_tok": 2,
            "attention_bias": False,
            "tie_word_embeddings": True,
        },
    },
    {
        "id": "edge:gpt-oss-top1",
        "note": "one expert per token",
        "config": {
            "model_type": "gpt_oss",
            "vocab_size": 500,
            "hidden_size": 32,
            "intermediate_size": 24,
            "num_hidden_layers": 2,
            "num_attention_heads": 4,
            "num_key_value_heads": 4,
            "head_dim": 8,
            "num_local_experts": 3,
            "num_experts_per_tok": 1,
        },
    },
]


def _count(config: dict) -> int:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = copy.deepcopy(config)  # transformers rewrites nested dicts such as rope_scaling in place
    model_type = cfg.pop("model_type")
    hf = AutoConfig.for_model(model_type, **cfg)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(hf)
    return sum(p.numel() for p in model.parameters())


def main(argv: list[str] | None = None) -> int:
    import torch
    import transformers

    from calc.models.presets import PRESETS

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only compare; exit 1 on any difference")
    args = parser.parse_args(argv)
    data = json.loads(DATA.read_text(encoding="utf-8"))
    cases = data["cases"]
    by_id = {c["id"]: c for c in cases}
    for slug, config in PRESETS.items():
        clean = {k: v for k, v in config.items() if k != "_source"}
        case_id = f"preset:{slug}"
        if case_id not in by_id:
            case = {"id": case_id, "preset": slug, "note": "published config.json", "model_class": None}
            cases.insert(sum(1 for c in cases if c["preset"]), case)
            by_id[case_id] = case
        by_id[case_id]["config"] = clean
    for extra in EXTRA:
        if extra["id"] not in by_id:
            case = {"id": extra["id"], "preset": None, "note": extra["note"], "model_class": None}
            case["config"] = extra["config"]
            cases.append(case)
            by_id[extra["id"]] = case
    changed = []
    for case in cases:
        measured = _count(case["config"])
        if case.get("param_count") != measured:
            changed.append((case["id"], case.get("param_count"), measured))
            case["param_count"] = measured
        if case.get("model_class") is None:
            case["model_class"] = _model_class(case["config"])
    for case_id, old, new in changed:
        print(f"{case_id}: {old} -> {new}")
    versions = f"torch {torch.__version__}, transformers {transformers.__version__}"
    print(f"{len(cases)} cases, {len(changed)} changed ({versions})")
    if args.check:
        return 1 if changed else 0
    data["transformers_version"] = transformers.__version__
    data["torch_version"] = torch.__version__
    DATA.write_text(_dump(data), encoding="utf-8")
    return 0


def _dump(data: dict) -> str:
    """The file's layout: the header keys one per line, then one case per line (small diffs)."""
    head = {k: v for k, v in data.items() if k != "cases"}
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in head.items()] + [' "cases": [']
    lines += [f"  {json.dumps(c)}," for c in data["cases"]]
    lines[-1] = lines[-1].rstrip(",")
    return "\n".join([*lines, " ]", "}"]) + "\n"


def _model_class(config: dict) -> str:
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = copy.deepcopy(config)
    hf = AutoConfig.for_model(cfg.pop("model_type"), **cfg)
    return AutoModelForCausalLM._model_mapping[type(hf)].__name__


if __name__ == "__main__":
    raise SystemExit(main())
