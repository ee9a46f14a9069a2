"""What the harness measures: small Hugging Face configs (random weights, nothing downloaded) and layouts.

Pure data, importable without torch: ``make test`` reads it to re-predict the committed measurements.
Each model config is a ``config.json`` as ``transformers`` would write it, so the engine reads the very
same dictionary (``Architecture.from_hf_config``) that builds the real model.
"""

from __future__ import annotations

from validation.sample import family_keys, gpt2_config, llama_config
from validation.sample import load as _load_sample

__all__ = ["ACTIVATION_CASES", "MODELS", "REFERENCE_LAYERS", "SHARDING_CASES", "STATE_CASES"]

# use_cache=False as a training script sets it: with the cache on, GPT-2 under SDPA saves K and V again
# (the cache's copies), 2 × 2sbh a layer more than the profile counts.
_SMALL = dict(vocab_size=1024, max_position_embeddings=512, tie_word_embeddings=False, use_cache=False)


# name: (model_type, hidden_size, intermediate_size, num_hidden_layers, num_attention_heads, num_key_value_heads);
# the family's own keys: Qwen3 heads of 32, Qwen3-MoE with 8 experts of width 128 (validation.sample.family_keys)
_LLAMA_LIKE: dict[str, tuple[str, int, int, int, int, int]] = {
    "llama-gqa": ("llama", 256, 688, 2, 8, 2),
    "llama-mha": ("llama", 192, 512, 3, 6, 6),
    "mistral": ("mistral", 256, 704, 2, 8, 4),
    "qwen3": ("qwen3", 256, 688, 2, 8, 2),
    "mixtral": ("mixtral", 256, 344, 2, 8, 2),
    "qwen3-moe": ("qwen3_moe", 256, 688, 2, 8, 2),
}

MODELS: dict[str, dict] = {
    # GPT-2's keys (n_embd, n_layer...), 256 wide and 2 layers deep, with one dropout everywhere
    "gpt2": gpt2_config(1024, 256, 8, 512, 0.0),
    "gpt2-dropout": gpt2_config(1024, 256, 8, 512, 0.1),
    **{name: llama_config(shape, family_keys(shape[0], 32, 8, 128), **_SMALL) for name, shape in _LLAMA_LIKE.items()},
}
"""Small configs of real architectures (Hugging Face ``config.json`` keys)."""

ACTIVATION_CASES: list[dict] = [
    dict(model=model, attn=attn, seq_len=seq, micro_batch=batch)
    for model in ("gpt2", "llama-gqa", "llama-mha", "mistral", "qwen3", "mixtral", "qwen3-moe")
    for attn in ("eager", "sdpa")
    for seq, batch in ((128, 2), (256, 1))
] + [dict(model="gpt2-dropout", attn="eager", seq_len=128, micro_batch=2)]
"""Saved-for-backward measurements: each model, both attention implementations, two shapes, bf16; then the
Hypothesis-drawn sample of small models over shapes, vocabularies, position tables and dropout
(``validation/sample.py``, committed as ``validation/sample.json``)."""

_SAMPLE = _load_sample()
MODELS.update(_SAMPLE["models"])
ACTIVATION_CASES += _SAMPLE["cases"]

REFERENCE_LAYERS: list[dict] = [
    # Megatron-style layers (fused norm, fused SwiGLU/GeLU, fused softmax) built from torch ops with the
    # save sets of Megatron-LM's fused kernels; the unfused attention core expands K and V (GQA).
    dict(seq_len=128, micro_batch=2, hidden=256, heads=8, kv_heads=2, ffn_hidden=688, mlp="swiglu"),
    dict(seq_len=128, micro_batch=2, hidden=256, heads=8, kv_heads=8, ffn_hidden=1024, mlp="gelu"),
    dict(seq_len=256, micro_batch=1, hidden=256, heads=8, kv_heads=1, ffn_hidden=688, mlp="swiglu"),
]
"""Reference layers, the issue's GQA repro first (engine once 2,433,024; measured 2,629,632)."""

STATE_CASES: list[dict] = [
    dict(model="llama-gqa", convention=c)
    for c in (
        "fp32-adam-16",
        "bf16-adam-pure-8",
        "fp32-sgd-8",
        "fp32-sgdm-12",
        "fp32-adam-fused-12",
        "bf16-adam-fused-6",
    )
]
"""Model states after a real ``optimizer.step()``, one stock PyTorch recipe per convention."""

SHARDING_CASES: list[dict] = [
    *(
        dict(model="llama-gqa", strategy=s, world=w, convention="fp32-adam-16")
        for s in ("fsdp2", "zero1")
        for w in (2, 4)
    ),
    # FSDP2 mixed precision: fp32 sharded parameters, gradients and Adam moments (16 B/param in all, as
    # mixed-adam-16, in another split: no separate master copy, fp32 gradients), bf16 copies only while gathered
    dict(model="llama-gqa", strategy="fsdp2-mp", world=2, convention="mixed-adam-16"),
]
"""Per-rank model states under gloo: FSDP2 ``fully_shard`` (ZeRO-3) and ``ZeroRedundancyOptimizer`` (ZeRO-1)."""
