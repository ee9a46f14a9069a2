"""Activations of a pipeline stage at its peak: the micro-batches in flight and the embedding and output layers.

Korthikanti et al. 2022 (arXiv:2205.05198), Sec. 4.2.3 and 4.3, with the 1F1B schedules of Narayanan et al.
2021 (arXiv:2104.04473, Sec. 2.2). The names are re-exported by [`calc.memory.activations`][calc.memory.activations].
The terms:

* **Layers**: the stage holds its ``L/p`` layers for each of the micro-batches in flight
  ([`in_flight_chunks`][calc.memory.activations.in_flight_chunks]). On stage 0 that is ``L``
  layers' worth under 1F1B once ``m ≥ p`` (Eq. 5, 6), ``L(1 + (p-1)/(pv))`` interleaved.
* **Embedding** (stage 0): the dropout mask on the embedding output, ``sbh`` bytes per
  in-flight micro-batch (``sbhp/t`` in the paper, which assumes sequence parallelism;
  without it the mask is not divided by ``t``). Interleaved, it is scaled like the layers
  (``p + (p-1)/v`` micro-batches), as Megatron-LM's estimate does.
* **Output layer** (last stage, so stage 0 only when ``p = 1``), for the one micro-batch
  there: final-norm input ``2sbh``, output-projection input ``2sbh`` (both ``/t`` with
  sequence parallelism) and the fp32 logits the cross-entropy loss keeps, ``4sbv/t``
  (vocabulary-parallel). On stage 0 the extras are
  ``(sbhL/t)(p/L + δ_{p=1}(4/L)(1 + v/h))``.

Everything is divided by ``cp`` (each context-parallel rank holds ``s/cp`` tokens).
The paper says these extras are under 0.01% of the total for the 22B model; with its
own configuration they come to about 0.57% (see the reference numbers, Sec. 2).

Examples:
    >>> in_flight_chunks(4), stage_activations(10, num_layers=4, seq_len=1, micro_batch=1, hidden=8,
    ...                                          vocab_size=16, pp=4, dropout=False).total
    (4, 40)
    >>> # 22B, Korthikanti Table 3: TP+SP+selective (34sbh/t) on 48 layers: Eq. 6 = 9.5625 GiB
    >>> from calc.memory.activations import activation_bytes_per_layer
    >>> per_layer = activation_bytes_per_layer(2048, 4, 6144, 64, tp=8, sequence_parallel=True,
    ...                                        recompute="selective")
    >>> st = stage_activations(per_layer, num_layers=48, seq_len=2048, micro_batch=4, hidden=6144,
    ...                        vocab_size=51200, tp=8, sequence_parallel=True)
    >>> st.layers / 2**30, round(st.extras / st.layers, 4)
    (9.5625, 0.0235)
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from fractions import Fraction
from functools import lru_cache
from itertools import accumulate

from calc.errors import CalcError
from calc.memory._activation_args import ACTIVATION_BYTES, FP32_BYTES, MASK_BYTES, _ceil, _count, _counts, _flag
from calc.units import parse_positive_int

__all__ = ["StageActivations", "held_chunks_peak", "in_flight_chunks", "stage_activations"]


def _check_pipeline(num_layers: int, pp: int, interleave: int) -> None:
    """Raise unless the layers split evenly into ``pp × interleave`` chunks."""
    if interleave > 1 and pp < 2:
        raise CalcError(
            "interleave",
            "needs pp of at least 2 (it splits each pipeline stage into chunks)",
            interleave,
            code="unsupported",
        )
    if interleave > 1 and num_layers % (pp * interleave):
        raise CalcError(
            "pp",
            f"× interleave must divide the layers (layers={num_layers}, interleave={interleave})",
            pp,
            code="not-divisible",
        )
    if num_layers % pp:
        raise CalcError("pp", f"must divide the layers (layers={num_layers})", pp, code="not-divisible")


def in_flight_chunks(pp: int, *, interleave: int = 1, num_microbatches: int | None = None, stage: int = 0) -> int:
    """Micro-batch chunks whose activations a pipeline stage holds at its peak under 1F1B.

    A *chunk* is one micro-batch through one of the stage's ``interleave`` model
    chunks (``L/(p·v)`` layers each). Under the 1F1B schedule (Narayanan et al.
    2021, arXiv:2104.04473, Sec. 2.2.1) stage ``k`` runs ``p - k - 1`` warm-up
    forwards and one more before its first backward: ``min(p - k, m)``
    micro-batches in flight. Stage 0 thus holds ``p`` micro-batches of ``L/p``
    layers, ``L`` layers' worth once ``m ≥ p`` (Korthikanti et al. 2022, Sec. 4.2.3).
    Interleaved (Narayanan Sec. 2.2.2, as Megatron-LM schedules it), stage ``k`` runs
    ``2(p-k-1) + (v-1)p`` warm-up chunk-forwards plus one, at most the ``mv``
    there are; for stage 0 that is ``vp + p - 1`` chunks of ``L/(pv)`` layers,
    Korthikanti's ``L(1 + (p-1)/(pv))``.

    Args:
        pp: Pipeline-parallel degree ``p``.
        interleave: Model chunks per stage ``v`` (1 = plain 1F1B).
        num_microbatches: Micro-batches per step per pipeline ``m``; ``None`` means
            "at least ``p``" (the steady state the paper assumes).
        stage: The pipeline stage ``k``, from 0 to ``p - 1``.

    Returns:
        The number of chunk activations the stage holds at once.

    Raises:
        CalcError: For a non-positive degree or micro-batch count, or a stage outside the pipeline.

    Examples:
        >>> in_flight_chunks(8), in_flight_chunks(8, num_microbatches=3), in_flight_chunks(8, stage=7)
        (8, 3, 1)
        >>> in_flight_chunks(8, interleave=3)  # 24 + 7: factor 31/24 = 1 + 7/24
        31
    """
    p = _count(pp, "pp")
    v = _count(interleave, "interleave")
    k = _stage(stage, p)
    chunks = 2 * (p - k - 1) + (v - 1) * p + 1 if v > 1 else p - k
    if num_microbatches is not None:
        chunks = min(chunks, _count(num_microbatches, "num_microbatches") * v)
    return chunks


def held_chunks_peak(
    pp: int, interleave: int, num_microbatches: int | None, stage: int, chunks: tuple[int, ...]
) -> int:
    """The most a stage holds at once when its model chunks differ: the peak of the chunks' sizes summed
    over Megatron-LM's interleaved order of forwards and backwards (a forward adds its chunk, a backward frees it).

    With equal chunks this is [`in_flight_chunks`][calc.memory.activations.in_flight_chunks] times one chunk;
    with uneven virtual stages (Llama 3's embedding-only first chunk, Dubey et al. 2024 Sec. 3.3.2) it is what
    the schedule really holds, not the stage's average. The order repeats every ``p·v`` passes after the
    warm-up, so at most ``4p`` micro-batches are walked (``None``: the steady state of many).

    Args:
        pp: Pipeline-parallel degree ``p``.
        interleave: Model chunks per stage ``v``.
        num_microbatches: Micro-batches per step per pipeline, or ``None``.
        stage: The pipeline stage.
        chunks: Bytes of each of the stage's ``v`` chunks for one micro-batch, first chunk first.

    Examples:
        >>> held_chunks_peak(4, 2, 8, 0, (10, 10)) == in_flight_chunks(4, interleave=2, num_microbatches=8) * 10
        True
        >>> held_chunks_peak(4, 2, 8, 0, (0, 10))  # the embedding-only first chunk holds nothing
        40
    """
    m = 4 * pp if num_microbatches is None else min(num_microbatches, 4 * pp)
    return _held_peak(pp, interleave, m, stage, tuple(chunks))


@lru_cache(maxsize=512)
def _held_peak(p: int, v: int, m: int, k: int, chunks: tuple[int, ...]) -> int:
    signed = chunks + tuple(-c for c in chunks)  # a forward of chunk i adds chunks[i], its backward takes it back
    return max(accumulate((signed[e] for e in _chunk_events(p, v, m, k)), initial=0))


@lru_cache(maxsize=512)  # the planner sizes the same schedule for every layout that shares its p, v and m
def _chunk_events(p: int, v: int, m: int, k: int) -> tuple[int, ...]:
    """Stage ``k``'s interleaved passes in order, each as its chunk ``i`` (a forward) or ``v + i`` (a backward)."""
    from calc.parallel.pipeline_orders import stage_order  # calc.parallel sits below calc.memory

    order = stage_order(p, m, "interleaved", v, k)
    return tuple(c if kind == "F" else v + c for task in order for kind, _, c, _ in task)


def _stage(stage: object, pp: int) -> int:
    return parse_positive_int(stage, "stage", minimum=0, maximum=pp - 1)


@dataclass(frozen=True)
class StageActivations:
    """Activation bytes on one GPU of a pipeline stage at its peak, by source.

    Attributes:
        layers: The stage's transformer layers times the micro-batches in flight.
        embedding_dropout: Dropout mask on the embedding output, ``sbh`` per in-flight micro-batch
            (stage 0 only).
        final_norm_input: Input of the final norm, ``2sbh`` (last stage only; stage 0 when ``p = 1``).
        output_input: Input of the output projection, ``2sbh`` (last stage only).
        logits: fp32 logits kept for the cross-entropy loss, ``4sbv/t`` (last stage only).
        in_flight: Chunk activations held, from [`in_flight_chunks`][calc.memory.activations.in_flight_chunks]
            (a count, not bytes; not part of ``total``).
    """

    layers: int
    embedding_dropout: int
    final_norm_input: int
    output_input: int
    logits: int
    in_flight: int

    @property
    def extras(self) -> int:
        """Bytes outside the transformer layers (embedding and output layer).

        Examples:
            >>> stage_activations(100, num_layers=2, seq_len=1, micro_batch=1, hidden=8,
            ...                   vocab_size=16).extras
            104
        """
        return self.embedding_dropout + self.final_norm_input + self.output_input + self.logits

    @property
    def total(self) -> int:
        """All activation bytes on the GPU."""
        return self.layers + self.extras

    def as_dict(self) -> dict[str, int]:
        """The terms, ``extras`` and ``total`` as a plain ``dict``.

        Examples:
            >>> sorted(stage_activations(100, num_layers=2, seq_len=1, micro_batch=1, hidden=8,
            ...                          vocab_size=16).as_dict())[:3]
            ['embedding_dropout', 'extras', 'final_norm_input']
        """
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["extras"] = self.extras
        out["total"] = self.total
        return out


def _stage_layer_bytes(layer_bytes: int | Sequence[int], per_stage: int) -> int:
    """The stage's layers for one micro-batch: one layer's bytes times ``per_stage``, or the listed layers' sum."""
    if isinstance(layer_bytes, int) and not isinstance(layer_bytes, bool):
        return _count(layer_bytes, "layer_bytes", minimum=0) * per_stage
    if isinstance(layer_bytes, Sequence) and not isinstance(layer_bytes, str):
        if len(layer_bytes) != per_stage:
            raise CalcError("layer_bytes", f"must list the {per_stage} layers of a stage", len(layer_bytes))
        return sum(_count(x, "layer_bytes", minimum=0) for x in layer_bytes)
    raise CalcError("layer_bytes", "must be a whole number of bytes or a list of them", layer_bytes)


def stage_activations(
    layer_bytes: int | Sequence[int],
    *,
    num_layers: int,
    seq_len: int,
    micro_batch: int,
    hidden: int,
    vocab_size: int,
    pp: int = 1,
    interleave: int = 1,
    num_microbatches: int | None = None,
    tp: int = 1,
    sequence_parallel: bool = False,
    cp: int = 1,
    dropout: bool = True,
    stage: int = 0,
) -> StageActivations:
    """Activation bytes on a GPU of one pipeline stage (by default stage 0, the most loaded) at its peak.

    Korthikanti et al. 2022 (arXiv:2205.05198), Sec. 4.2.3 and 4.3: the stage's layers for its in-flight
    micro-batches, the embedding dropout (stage 0), the output layer's inputs and fp32 logits (last stage),
    all divided by ``cp``; each term is written out in ``calc.memory.activation_stages``.

    Args:
        layer_bytes: Bytes one layer holds for one micro-batch (e.g. from
            [`activation_bytes_per_layer`][calc.memory.activations.activation_bytes_per_layer]), or a list
            with one entry per layer of the stage (``num_layers / pp`` entries) when layers differ.
        num_layers: Transformer layers of the whole model ``L``.
        seq_len: Sequence length ``s``.
        micro_batch: Micro-batch size ``b``.
        hidden: Hidden size ``h``.
        vocab_size: Vocabulary size ``v`` (as padded by the framework, if it pads).
        pp: Pipeline-parallel degree ``p``.
        interleave: Model chunks per stage (1 = plain 1F1B).
        num_microbatches: Micro-batches per step per pipeline (``None``: at least ``p``).
        tp: Tensor-parallel degree ``t``.
        sequence_parallel: Sequence parallelism (divides the ``h``-sized extras by ``t``).
        cp: Context-parallel degree.
        dropout: Dropout on (the embedding dropout mask exists).
        stage: The pipeline stage, from 0 to ``pp - 1``.

    Returns:
        The [`StageActivations`][calc.memory.activations.StageActivations].

    Raises:
        CalcError: When ``pp`` (or ``pp × interleave``) does not divide the layers, a list of
            layer bytes has the wrong length, or the stage is outside the pipeline.

    Examples:
        >>> stage_activations([10, 20], num_layers=4, seq_len=1, micro_batch=1, hidden=8, vocab_size=16,
        ...                   pp=2, dropout=False, stage=1).layers  # one micro-batch in flight on the last stage
        30
    """
    given = locals()
    n_layers, s, b, h, vocab, p, v, t = _counts(
        given, "num_layers", "seq_len", "micro_batch", "hidden", "vocab_size", "pp", "interleave", "tp"
    )
    sp = _flag(sequence_parallel, "sequence_parallel")
    c = _count(cp, "cp")
    drop = _flag(dropout, "dropout")
    k = _stage(stage, p)
    _check_pipeline(n_layers, p, v)
    stage_layers = _stage_layer_bytes(layer_bytes, n_layers // p)
    return _stage_extras(stage_layers, p, v, num_microbatches, k, Fraction(s * b, c), h, vocab, t, sp, drop)


def _stage_extras(
    stage_layers: int,
    p: int,
    v: int,
    num_microbatches: int | None,
    k: int,
    tokens: Fraction,
    h: int,
    vocab: int,
    t: int,
    sp: bool,
    drop: bool,
    chunk_bytes: tuple[int, ...] | None = None,
) -> StageActivations:
    """[`stage_activations`][calc.memory.activations.stage_activations] for checked arguments: ``stage_layers``
    is the bytes of the stage's layers for one micro-batch (any split), ``tokens`` per context-parallel rank;
    ``chunk_bytes``, when the stage's ``v`` chunks differ, gives each (``held_chunks_peak``)."""
    chunks = in_flight_chunks(p, interleave=v, num_microbatches=num_microbatches, stage=k)
    microbatches = Fraction(chunks, v)  # micro-batches' worth of the whole stage in flight
    rep = t if sp else 1
    first, last = k == 0, k == p - 1
    layers = _ceil(stage_layers * microbatches)
    if v > 1 and chunk_bytes is not None and len(set(chunk_bytes)) > 1:
        layers = held_chunks_peak(p, v, num_microbatches, k, chunk_bytes)
    return StageActivations(
        layers=layers,
        embedding_dropout=_ceil(MASK_BYTES * tokens * h * microbatches / rep) if drop and first else 0,
        final_norm_input=_ceil(ACTIVATION_BYTES * tokens * h / rep) if last else 0,
        output_input=_ceil(ACTIVATION_BYTES * tokens * h / rep) if last else 0,
        logits=_ceil(FP32_BYTES * tokens * vocab / t) if last else 0,
        in_flight=chunks,
    )
