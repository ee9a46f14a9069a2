"""Megatron-LM's own activation estimate, reproduced for comparison (re-exported by
[`calc.memory.activations`][calc.memory.activations]).

NVIDIA/Megatron-LM ``megatron/training/theoretical_memory_usage.py`` (the
reference numbers, Sec. 9), "using formula in Table 2" of Korthikanti et al.
2022, first pipeline stage. With sequence parallelism **and** selective
recomputation (``compute_activation_memory``)::

    (sbh(18 + 4f/h)·L + 8sbp + sbhp) × penalty + δ_{p=1}·4sbh(1 + v/h), all / t

where ``8sbp`` are the int64 token ids and ``sbhp`` the embedding dropout of ``p``
micro-batches in flight, and ``penalty`` is ``1 + (p-1)/(pv)`` interleaved, else
``min(1, m/p)`` when ``m`` is known and ``p > 1``. Otherwise
(``compute_activation_memory_without_sp``)::

    (sbh(10 + 24/t)·L + 8sbp + sbhp) × penalty + δ_{p=1}·2(sbv/t + sbh), times 1.05

with no division by ``t`` at the end and no attention-score term (it assumes
the scores are never stored). Megatron reports MB = 2^20 bytes; this returns
bytes, evaluated exactly and rounded up.

**What Megatron-Core saves beyond 34 B per token per hidden unit, and why it is not added.** The
``"megatron"`` stack's layer (``calc.memory.activation_layer``, ``implementation="megatron"``) is Korthikanti's
accounting. Read at NVIDIA/Megatron-LM ``d98e8a6`` and NVIDIA/TransformerEngine ``d0067d0``
(``validation/README.md``, "What Megatron-Core saves beyond 34 B"), one term is missing when the attention core
runs Transformer Engine's flash-attn backend: flash-attn saves its own ``bshd`` output, and ``linear_proj`` saves
the ``sbhd`` copy made from it, so the output projection's input is held twice, ``2·a·d_v/t`` more bytes per token
per layer (``2h/t`` when ``a·d_v = h``). The fused bias-dropout-add adds nothing beyond its one-byte mask. The
term is left out:

* on Hopper and later (H100, H800, H200, B200, GB200) Transformer Engine does not run that backend: its
  ``get_attention_backend`` (``transformer_engine/pytorch/attention/dot_product_attention/utils.py``) disables
  FlashAttention "to give FusedAttention preference on Hopper+" (compute capability 9.0 and up), and cuDNN's
  ``FusedAttention`` takes ``sbhd`` directly;
* the published measurements (``validation/published/runs.json``) do not show it. The four Qwen3-30B-A3B rows
  without recomputation (Megatron-Bridge, H100) are already above the measured peak and would move from about
  +8% to about +11%; the same source's run with the attention core recomputed measured more memory than without,
  where the term would make it less. The Megatron-LM functional-test rows (a 7B GPT) measure within a few hundred MB of
  each other on A100 (where flash-attn runs) and H100 at TP 1, PP 4 (the term would add about 2 GB on A100 alone);
* with recomputation of the attention core (``recompute="selective"``) or of the layer (``"full"``) the copy is
  never saved, so only ``"none"`` would change.

Examples:
    >>> megatron_activation_bytes(2048, 1, 12288, 96, 51200, tp=8, pp=8) // 2**20
    9816
"""

from __future__ import annotations

from fractions import Fraction

from calc.memory._activation_args import _ceil, _count, _counts, _flag, _recompute

__all__ = ["megatron_activation_bytes"]


def megatron_activation_bytes(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    num_layers: int,
    vocab_size: int,
    *,
    ffn_hidden: int | None = None,
    tp: int = 1,
    pp: int = 1,
    interleave: int = 1,
    num_microbatches: int | None = None,
    sequence_parallel: bool = True,
    recompute: str = "selective",
) -> int:
    """The activation estimate Megatron-LM prints at start-up (``theoretical_memory_usage.py``).

    NVIDIA/Megatron-LM ``megatron/training/theoretical_memory_usage.py``, first pipeline stage; its two
    formulas (with and without sequence parallelism and selective recomputation) are written out in
    ``calc.memory.activation_megatron``. Bytes, exact, rounded up.

    Args:
        seq_len: ``--seq-length``.
        micro_batch: ``--micro-batch-size``.
        hidden: ``--hidden-size``.
        num_layers: ``--num-layers``.
        vocab_size: The padded vocabulary size.
        ffn_hidden: ``--ffn-hidden-size`` (default ``4 × hidden``).
        tp: ``--tensor-model-parallel-size``.
        pp: ``--pipeline-model-parallel-size``.
        interleave: ``--num-layers-per-virtual-pipeline-stage`` chunks per stage (1 = not interleaved).
        num_microbatches: Micro-batches per step (``None`` when Megatron does not know it).
        sequence_parallel: ``--sequence-parallel``.
        recompute: ``--recompute-granularity`` (``"none"`` when unset).

    Returns:
        Bytes.

    Raises:
        CalcError: For a non-positive size or an unknown recompute mode.

    Examples:
        >>> # GPT-3 175B shape, tp 8, pp 8, b 1, SP + selective: "activation=9816.02 MB"
        >>> megatron_activation_bytes(2048, 1, 12288, 96, 51200, tp=8, pp=8) / 2**20
        9816.015625
    """
    given = locals()
    s, b, h, n_layers, vocab = _counts(given, "seq_len", "micro_batch", "hidden", "num_layers", "vocab_size")
    f = 4 * h if ffn_hidden is None else _count(ffn_hidden, "ffn_hidden")
    t, p, v = _counts(given, "tp", "pp", "interleave")
    sp = _flag(sequence_parallel, "sequence_parallel")
    mode = _recompute(recompute)
    sbh = s * b * h
    with_sp = sp and mode == "selective"
    per_layer = sbh * (18 + Fraction(4 * f, h)) if with_sp else sbh * (10 + Fraction(24, t))
    total = per_layer * n_layers + 8 * s * b * p + sbh * p
    if v > 1:
        total *= 1 + Fraction(p - 1, p * v)
    elif p > 1 and num_microbatches is not None:
        total *= min(Fraction(1), Fraction(_count(num_microbatches, "num_microbatches"), p))
    if with_sp:
        if p == 1:
            total += sbh * 4 * (1 + Fraction(vocab, h))
        return _ceil(total / t)
    if p == 1:
        total += (Fraction(s * b * vocab, t) + sbh) * 2
    return _ceil(total * Fraction(105, 100))
