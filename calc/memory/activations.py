"""Activation memory: the tensors a training step keeps from the forward pass for the backward pass.

The accounting follows Korthikanti et al. 2022, "Reducing Activation Recomputation
in Large Transformer Models" (arXiv:2205.05198): Sec. 4.1 lists, tensor by tensor,
what one GPT layer stores; Table 2 sums it per layer for each kind of
parallelism and recomputation; Sec. 4.2.3 and 4.3 add the pipeline's in-flight
micro-batches and the embedding and output layers. Its assumptions are kept:
activations are 16-bit (2 bytes an element), dropout masks 1 byte an element,
and normalization statistics are ignored unless asked for.

Notation (the paper's): ``s`` sequence length, ``b`` micro-batch size, ``h``
hidden size, ``a`` attention heads, ``t`` tensor-parallel degree, ``p``
pipeline-parallel degree, ``L`` layers, ``v`` vocabulary size.

The modules, one concept each (all public names are re-exported here):

* this one: one layer, tensor by tensor, and Table 2;
* ``calc.memory.activation_stages``: a pipeline stage at its peak (in-flight micro-batches, embedding and
  output layer);
* ``calc.memory.activation_profiles``: what stock Hugging Face transformers saves instead (``implementation``);
* ``calc.memory.activation_megatron``: Megatron-LM's printed estimate.

Three levels:

* [`activation_bytes_per_layer`][calc.memory.activations.activation_bytes_per_layer]: Table 2 itself,
  for the GPT layer (``ffn = 4h``, GeLU, multi-head attention, dropout).
* [`layer_activations`][calc.memory.activations.layer_activations]: the Sec. 4.1 breakdown with
  explicit dimensions (grouped-query attention, SwiGLU, MoE, dropout off,
  context parallelism, FlashAttention), returned tensor by tensor. With GPT
  dimensions it equals Table 2 exactly.
* [`stage_activations`][calc.memory.activations.stage_activations]: the most loaded pipeline stage
  (stage 0) under 1F1B, plain or interleaved, plus the embedding and output-layer terms.

[`megatron_activation_bytes`][calc.memory.activations.megatron_activation_bytes] reproduces the
estimate Megatron-LM prints (``theoretical_memory_usage.py``), for comparison.

Exact integers: every term is computed as an exact fraction of bytes and rounded
**up** to a whole byte (a GPU cannot hold part of a byte, and rounding up never
undercounts). For any layout [`calc.memory.layout`][calc.memory.layout] accepts (``t`` divides
the heads, the KV heads and the MLP width; with sequence parallelism ``t``
divides the sequence; ``cp`` divides the sequence) every per-layer term is
already a whole number and nothing is rounded; only the fp32 logits (when ``t``
does not divide the vocabulary, which frameworks pad) and the interleaved
schedule's embedding mask (``p + (p-1)/v`` micro-batches) can be.

Table 2 (Korthikanti et al. 2022, arXiv:2205.05198), 16-bit activations, as
[`activation_bytes_per_layer`][calc.memory.activations.activation_bytes_per_layer] computes it:

| configuration                                   | bytes per layer               |
|-------------------------------------------------|-------------------------------|
| no parallelism                                  | ``sbh(34 + 5as/h)``           |
| tensor parallel                                 | ``sbh(10 + 24/t + 5as/(ht))`` |
| tensor + sequence parallel                      | ``sbh(34/t + 5as/(ht))``      |
| tensor parallel + selective recompute           | ``sbh(10 + 24/t)``            |
| tensor + sequence parallel + selective recompute| ``sbh(34/t)``                 |
| full recompute                                  | ``2sbh``                      |

``tp=1`` is the no-parallelism row (all rows agree there). *Selective*
recomputation drops the ``5as/h`` term: the attention core (softmax, its
dropout mask and output, ``5as²b`` bytes) is recomputed in the backward pass.
*Full* recomputation keeps only the layer's input: ``2sbh`` (Table 2), or
``2sbh/t`` with sequence parallelism, whose layer input is already split along
the sequence over the ``t`` ranks. Megatron-LM keeps exactly that shard: its
``TransformerConfig.__post_init__`` (``megatron/core/transformer/transformer_config.py``)
refuses ``distribute_saved_activations`` when ``sequence_parallel`` is on, because
the checkpointed input is already distributed.

With ``flash_attention`` the ``5as²b`` term is gone: FlashAttention (Dao et
al. 2022, arXiv:2205.14135, Sec. 3.1) never materializes the ``s × s``
scores; its backward pass recomputes them from Q, K, V and the output (all
already counted) and the softmax statistics it saved, one fp32 log-sum-exp
per head per query: ``4asb/t`` bytes, which is what is kept instead.
(Its dropout is regenerated from a saved random seed: no mask is stored.)

Rounding: the formula is evaluated exactly and rounded up to a whole byte;
whenever ``t`` divides ``a`` and ``h`` the result is exact.
"""

from __future__ import annotations

from fractions import Fraction

from calc.memory._activation_args import (
    ACTIVATION_BYTES,
    FP32_BYTES,
    LAYOUT_RECOMPUTE_MODES,
    MASK_BYTES,
    RECOMPUTE_MODES,
    _ceil,
    _counts,
    _flag,
    _recompute,
)
from calc.memory.activation_layer import IMPLEMENTATIONS, MLP_KINDS, NORM_KINDS, LayerActivations, layer_activations
from calc.memory.activation_megatron import megatron_activation_bytes
from calc.memory.activation_stages import StageActivations, held_chunks_peak, in_flight_chunks, stage_activations

__all__ = [
    "ACTIVATION_BYTES",
    "FP32_BYTES",
    "IMPLEMENTATIONS",
    "LAYOUT_RECOMPUTE_MODES",
    "LayerActivations",
    "MASK_BYTES",
    "MLP_KINDS",
    "NORM_KINDS",
    "RECOMPUTE_MODES",
    "StageActivations",
    "activation_bytes_per_layer",
    "held_chunks_peak",
    "in_flight_chunks",
    "layer_activations",
    "megatron_activation_bytes",
    "stage_activations",
]


def activation_bytes_per_layer(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    *,
    tp: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
    flash_attention: bool = False,
) -> int:
    """Activation bytes one GPT transformer layer stores on one GPU: Table 2 of Korthikanti et al.

    Korthikanti et al. 2022 (arXiv:2205.05198), Table 2, 16-bit activations, evaluated exactly and rounded
    up to a whole byte; the table, the recomputation rows and the FlashAttention row are written out
    under "Table 2" in [`calc.memory.activations`][calc.memory.activations].

    Args:
        seq_len: Sequence length ``s``.
        micro_batch: Micro-batch size ``b``.
        hidden: Hidden size ``h``.
        heads: Attention heads ``a``.
        tp: Tensor-parallel degree ``t``.
        sequence_parallel: Shard the layer norms' and dropouts' activations over the
            tensor-parallel ranks along the sequence (Korthikanti Sec. 4.2.2).
        recompute: ``"none"``, ``"selective"`` or ``"full"``.
        flash_attention: The attention core is a fused FlashAttention kernel.

    Returns:
        Bytes of activations one layer holds on one GPU for one micro-batch.

    Raises:
        CalcError: For a non-positive size or an unknown recompute mode.

    Examples:
        >>> mib = 2**20
        >>> # 175B (GPT-3): s=2048, b=1, h=12288, a=96, t=8; Korthikanti Table 3 config
        >>> activation_bytes_per_layer(2048, 1, 12288, 96, tp=8) / mib
        552.0
        >>> activation_bytes_per_layer(2048, 1, 12288, 96, tp=8, sequence_parallel=True,
        ...                            recompute="selective") / mib
        102.0
        >>> activation_bytes_per_layer(2048, 1, 12288, 96, recompute="full") / mib
        48.0
        >>> activation_bytes_per_layer(2048, 1, 12288, 96, tp=8, sequence_parallel=True, recompute="full") / mib
        6.0
        >>> activation_bytes_per_layer(2048, 1, 12288, 96, recompute="some")
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: recompute must be one of none, selective, full (got 'some')
    """
    s, b, h, a, t = _counts(locals(), "seq_len", "micro_batch", "hidden", "heads", "tp")
    sp = _flag(sequence_parallel, "sequence_parallel")
    mode = _recompute(recompute)
    flash = _flag(flash_attention, "flash_attention")
    sbh = s * b * h
    if mode == "full":
        return _ceil(Fraction(2 * sbh, t if sp else 1))
    linear = Fraction(34 * sbh, t) if sp else 10 * sbh + Fraction(24 * sbh, t)
    if mode == "selective":
        core = Fraction(0)
    elif flash:
        core = Fraction(FP32_BYTES * a * s * b, t)
    else:
        core = Fraction(5 * a * s * s * b, t)
    return _ceil(linear + core)
