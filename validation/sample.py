"""A Hypothesis-drawn sample of small models and shapes for the transformers activation profiles (issue 17, item 6).

The harness's hand-picked cases all run 256 tokens per micro-batch. This sample varies what those keep fixed:
the family (GPT-2, Llama with and without GQA, Mistral, Qwen3, Mixtral, Qwen3-MoE), the sequence length
(64 to 2,048), the batch (1 to 4), the vocabulary and the position table (``n_positions`` /
``max_position_embeddings``), dropout on and off, eager and SDPA. Every model is tiny (hidden 64, two layers), so
the sample measures in seconds.

The draw is derandomized with a fixed seed, and its result is committed as ``validation/sample.json`` (pure data:
``make test`` needs neither torch nor Hypothesis to re-predict it); ``tests/test_validation.py`` checks that the
file is what this module draws with the pinned Hypothesis. ``python -m validation.sample`` rewrites it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

__all__ = ["SAMPLE", "SAMPLE_SIZE", "draw", "family_keys", "gpt2_config", "llama_config", "load"]

SAMPLE = Path(__file__).with_name("sample.json")
"""The committed draw: ``{"hypothesis": version, "models": {name: config.json}, "cases": [activation case, ...]}``."""

SAMPLE_SIZE = 80
"""Configurations drawn (the measuring time of ``make validate`` grows with it: a few seconds each)."""

_SEQ = (64, 128, 256, 512, 1024, 2048)
_VOCAB = (128, 1000, 1024, 4099)


def gpt2_config(vocab: int, width: int, heads: int, positions: int, dropout: float) -> dict:
    """GPT-2's ``config.json`` keys (``n_embd``, ``n_layer``...), two layers deep, with one dropout everywhere.

    Examples:
        >>> gpt2_config(1024, 256, 8, 512, 0.1)["n_embd"], gpt2_config(128, 64, 4, 65, 0.0)["attn_pdrop"]
        (256, 0.0)
    """
    drops = dict(resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout)
    sizes = dict(vocab_size=vocab, n_embd=width, n_layer=2, n_head=heads, n_positions=positions)
    return dict(model_type="gpt2", **sizes, **drops, tie_word_embeddings=False, use_cache=False)


def family_keys(family: str, head_dim: int, moe_experts: int, moe_ffn: int) -> dict:
    """The keys of a Llama-like ``family``'s ``config.json`` beyond Llama's: Mistral's window off, Qwen3's head size,
    the MoE families' experts (Mixtral 4 of them, Qwen3-MoE ``moe_experts`` of width ``moe_ffn``), top-2 routing.

    Examples:
        >>> family_keys("qwen3", 32, 8, 128), family_keys("qwen3_moe", 16, 4, 32)["num_experts"]
        ({'head_dim': 32}, 4)
    """
    return {
        "llama": {},
        "mistral": dict(sliding_window=None),
        "qwen3": dict(head_dim=head_dim),
        "mixtral": dict(num_local_experts=4, num_experts_per_tok=2, sliding_window=None),
        "qwen3_moe": dict(
            moe_intermediate_size=moe_ffn,
            head_dim=head_dim,
            num_experts=moe_experts,
            num_experts_per_tok=2,
            decoder_sparse_step=1,
            mlp_only_layers=[],
            norm_topk_prob=True,
        ),
    }[family]


def llama_config(shape: tuple[str, int, int, int, int, int], own: dict, **rest: object) -> dict:
    """A Llama-like ``config.json``: ``shape`` is (model_type, hidden_size, intermediate_size, num_hidden_layers,
    num_attention_heads, num_key_value_heads), then the family's ``own`` keys, then ``rest``.

    Examples:
        >>> llama_config(("llama", 64, 176, 2, 4, 2), {}, use_cache=False)["num_key_value_heads"]
        2
    """
    family, hidden, ffn, layers, heads, kv_heads = shape
    return dict(
        model_type=family, hidden_size=hidden, intermediate_size=ffn, num_hidden_layers=layers,
        num_attention_heads=heads, num_key_value_heads=kv_heads, **own, **rest,
    )  # fmt: skip


def _config(family: str, vocab: int, positions: int, dropout: float, kv_heads: int) -> dict:
    """A small ``config.json`` of ``family`` (Hugging Face keys), two layers, hidden 64, four query heads."""
    if family == "gpt2":
        return gpt2_config(vocab, 64, 4, positions, dropout)
    shape = (family, 64, 96 if family == "mixtral" else 176, 2, 4, kv_heads)
    tail = dict(vocab_size=vocab, max_position_embeddings=positions, attention_dropout=dropout)
    return llama_config(shape, family_keys(family, 16, 4, 32), **tail, tie_word_embeddings=False, use_cache=False)


def draw(n: int = SAMPLE_SIZE) -> dict:
    """The derandomized Hypothesis draw of ``n`` configurations (fewer if some repeat).

    Examples:
        >>> d = draw(3)
        >>> len(d["cases"]) <= 3, sorted(d["cases"][0])
        (True, ['attn', 'micro_batch', 'model', 'seq_len'])
    """
    from hypothesis import HealthCheck, Phase, given, seed, settings
    from hypothesis import strategies as st

    drawn: list[tuple] = []
    family = st.sampled_from(("gpt2", "gpt2", "llama", "mistral", "qwen3", "mixtral", "qwen3_moe"))

    @seed(17)
    @settings(
        max_examples=n,
        derandomize=True,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(
        family,
        st.sampled_from(_SEQ),
        st.sampled_from((1, 2, 3, 4)),
        st.sampled_from(_VOCAB),
        st.sampled_from((0, 1, 2)),  # n_positions: the sequence, +1, or 4,096
        st.booleans(),  # dropout
        st.sampled_from(("eager", "sdpa")),
        st.sampled_from((1, 2, 4)),  # KV heads
    )
    def collect(fam: str, s: int, b: int, v: int, pos: int, drop: bool, attn: str, g: int) -> None:
        s = min(s, 2048 // b)  # at most 2,048 tokens: eager's scores are a s^2 b per layer
        positions = (s, s + 1, 4096)[pos]
        drawn.append((fam, s, b, v, positions, 0.1 if drop else 0.0, attn, 4 if fam == "gpt2" else g))

    collect()
    models: dict[str, dict] = {}
    cases: list[dict] = []
    for fam, s, b, v, positions, drop, attn, g in dict.fromkeys(drawn):
        name = f"{fam}-v{v}-p{positions}-g{g}" + ("-dropout" if drop else "")
        models[name] = _config(fam, v, positions, drop, g)
        cases.append(dict(model=name, attn=attn, seq_len=s, micro_batch=b))
    return {"models": models, "cases": cases}


def load() -> dict:
    """The committed draw (``validation/sample.json``); empty when the file is absent."""
    if not SAMPLE.exists():
        return {"models": {}, "cases": []}
    return json.loads(SAMPLE.read_text())


def main() -> int:
    """Rewrite ``validation/sample.json`` from a fresh draw (with the Hypothesis version that drew it)."""
    import hypothesis

    SAMPLE.write_text(json.dumps({"hypothesis": hypothesis.__version__, **draw()}, indent=1, sort_keys=True) + "\n")
    print(f"wrote {SAMPLE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
