"""A Hypothesis-drawn sample of small models and shapes for the transformers activation profiles (issue 17, item 6).

The harness's hand-picked cases all run 256 tokens per micro-batch. This sample varies what those keep fixed:
the family (GPT-2, Llama with and without GQA, Mistral, Qwen3, Mixtral, Qwen3-MoE), the sequence length
(64 to 1,024), the batch (1 to 4), the vocabulary and the position table (``n_positions`` /
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

__all__ = ["SAMPLE", "SAMPLE_SIZE", "draw", "load"]

SAMPLE = Path(__file__).with_name("sample.json")
"""The committed draw: ``{"hypothesis": version, "models": {name: config.json}, "cases": [activation case, ...]}``."""

SAMPLE_SIZE = 64
"""Configurations drawn (the measuring time of ``make validate`` grows with it: a few seconds each)."""

_SEQ = (64, 128, 256, 512, 1024)
_VOCAB = (128, 1000, 1024, 4099)


def _config(family: str, vocab: int, positions: int, dropout: float, kv_heads: int) -> dict:
    """A small ``config.json`` of ``family`` (Hugging Face keys), two layers, hidden 64, four query heads."""
    if family == "gpt2":
        drops = dict(resid_pdrop=dropout, embd_pdrop=dropout, attn_pdrop=dropout)
        sizes = dict(vocab_size=vocab, n_embd=64, n_layer=2, n_head=4, n_positions=positions)
        return dict(model_type="gpt2", **sizes, **drops, tie_word_embeddings=False, use_cache=False)
    own: dict = {
        "llama": {},
        "mistral": dict(sliding_window=None),
        "qwen3": dict(head_dim=16),
        "mixtral": dict(num_local_experts=4, num_experts_per_tok=2, sliding_window=None),
        "qwen3_moe": dict(
            moe_intermediate_size=32,
            head_dim=16,
            num_experts=4,
            num_experts_per_tok=2,
            decoder_sparse_step=1,
            mlp_only_layers=[],
            norm_topk_prob=True,
        ),
    }[family]
    return dict(
        model_type=family,
        hidden_size=64,
        intermediate_size=96 if family == "mixtral" else 176,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=kv_heads,
        **own,
        vocab_size=vocab,
        max_position_embeddings=positions,
        attention_dropout=dropout,
        tie_word_embeddings=False,
        use_cache=False,
    )


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
        st.sampled_from((1, 2, 4)),
        st.sampled_from(_VOCAB),
        st.sampled_from((0, 1, 2)),  # n_positions: the sequence, +1, or 4,096
        st.booleans(),  # dropout
        st.sampled_from(("eager", "sdpa")),
        st.sampled_from((1, 2, 4)),  # KV heads
    )
    def collect(fam: str, s: int, b: int, v: int, pos: int, drop: bool, attn: str, g: int) -> None:
        s = min(s, 1024 // b)  # at most 1,024 tokens: eager's scores are a s^2 b per layer
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
