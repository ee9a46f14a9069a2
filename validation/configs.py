"""What the harness measures: small Hugging Face configs (random weights, nothing downloaded) and layouts.

Pure data, importable without torch: ``make test`` reads it to re-predict the committed measurements.
Each model config is a ``config.json`` as ``transformers`` would write it, so the engine reads the very
same dictionary (``Architecture.from_hf_config``) that builds the real model.
"""

from __future__ import annotations

__all__ = ["ACTIVATION_CASES", "MODELS", "REFERENCE_LAYERS", "SHARDING_CASES", "STATE_CASES"]

# use_cache=False as a training script sets it: with the cache on, GPT-2 under SDPA saves K and V again
# (the cache's copies), 2 × 2sbh a layer more than the profile counts.
_SMALL = dict(vocab_size=1024, max_position_embeddings=512, tie_word_embeddings=False, use_cache=False)

MODELS: dict[str, dict] = {
    "gpt2": dict(
        model_type="gpt2",
        vocab_size=1024,
        n_embd=256,
        n_layer=2,
        n_head=8,
        n_positions=512,
        resid_pdrop=0.0,
        embd_pdrop=0.0,
        attn_pdrop=0.0,
        tie_word_embeddings=False,
        use_cache=False,
    ),
    "gpt2-dropout": dict(
        model_type="gpt2",
        vocab_size=1024,
        n_embd=256,
        n_layer=2,
        n_head=8,
        n_positions=512,
        resid_pdrop=0.1,
        embd_pdrop=0.1,
        attn_pdrop=0.1,
        tie_word_embeddings=False,
        use_cache=False,
    ),
    "llama-gqa": dict(
        model_type="llama",
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=2,
        **_SMALL,
    ),
    "llama-mha": dict(
        model_type="llama",
        hidden_size=192,
        intermediate_size=512,
        num_hidden_layers=3,
        num_attention_heads=6,
        num_key_value_heads=6,
        **_SMALL,
    ),
    "mistral": dict(
        model_type="mistral",
        hidden_size=256,
        intermediate_size=704,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=4,
        sliding_window=None,
        **_SMALL,
    ),
    "qwen3": dict(
        model_type="qwen3",
        hidden_size=256,
        intermediate_size=688,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=32,
        **_SMALL,
    ),
    "mixtral": dict(
        model_type="mixtral",
        hidden_size=256,
        intermediate_size=344,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=2,
        num_local_experts=4,
        num_experts_per_tok=2,
        sliding_window=None,
        **_SMALL,
    ),
    "qwen3-moe": dict(
        model_type="qwen3_moe",
        hidden_size=256,
        intermediate_size=688,
        moe_intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=8,
        num_key_value_heads=2,
        head_dim=32,
        num_experts=8,
        num_experts_per_tok=2,
        decoder_sparse_step=1,
        mlp_only_layers=[],
        norm_topk_prob=True,
        **_SMALL,
    ),
}
"""Small configs of real architectures (Hugging Face ``config.json`` keys)."""

ACTIVATION_CASES: list[dict] = [
    dict(model=model, attn=attn, seq_len=seq, micro_batch=batch)
    for model in ("gpt2", "llama-gqa", "llama-mha", "mistral", "qwen3", "mixtral", "qwen3-moe")
    for attn in ("eager", "sdpa")
    for seq, batch in ((128, 2), (256, 1))
] + [dict(model="gpt2-dropout", attn="eager", seq_len=128, micro_batch=2)]
"""Saved-for-backward measurements: each model, both attention implementations, two shapes, bf16."""

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
