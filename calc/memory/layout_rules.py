"""The divisibility rules a parallel layout must meet, checked the same way by every calculator that takes one.

Rules, in the order [`check_parallelism`][calc.memory.layout.check_parallelism] applies them (Megatron-LM's
argument checks; Narayanan et al. 2021, arXiv:2104.04473, Sec. 2.2.2 for interleaving; Korthikanti et al.
2022, arXiv:2205.05198, Sec. 4.2.2 for sequence parallelism):

1. ``virtual_stages`` above 1 needs ``pp`` of at least 2 (``unsupported``);
2. ``global_batch`` is a multiple of ``dp × micro_batch``;
3. ``pp × virtual_stages`` is at most ``layers`` (one layer per stage at least): any split runs, as
   Megatron-Core's uneven stages and pipeline layouts and torchtitan's weighted split do; how the layers
   are placed is [`split_layers`][calc.memory.layout.split_layers]'s (Llama 3 405B's 126 layers on 16
   stages: 7 + 8×14 + 7, Dubey et al. 2024, arXiv:2407.21783, Sec. 3.3.2);
4. interleaved, the micro-batches per pipeline (``num_microbatches``, or
   ``global_batch / (dp × micro_batch)``) are a multiple of ``pp``;
5. ``tp`` divides ``hidden`` (the heads are split over ``tp`` and ``hidden = heads × head_dim``);
6. ``cp`` divides ``seq_len``, ``2 × cp`` does under load-balanced ring attention, and ``tp``
   divides ``seq_len / cp`` under sequence parallelism;
7. ``ep`` divides ``dp × cp`` (expert parallelism reuses the data- and context-parallel ranks).

The public names are re-exported by [`calc.memory.layout`][calc.memory.layout].
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from calc.errors import CalcError

__all__ = ["check_parallelism"]


def check_parallelism(
    *,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    cp: int = 1,
    ep: int = 1,
    virtual_stages: int = 1,
    layers: int | None = None,
    hidden: int | None = None,
    seq_len: int | None = None,
    num_microbatches: int | None = None,
    global_batch: int | None = None,
    micro_batch: int = 1,
    sequence_parallel: bool = False,
    cp_load_balance: bool = True,
    names: Mapping[str, str] | None = None,
) -> None:
    """Raise unless a parallel layout is possible: the one check every calculator taking a layout runs.

    The communication, training-memory, activations and pipeline-bubble calculators each pass the
    numbers they have (``None`` for what they do not take), so the same layout fails the same way
    everywhere. The rules and their sources are listed in ``calc.memory.layout_rules``.

    Args:
        tp: Tensor-parallel degree.
        pp: Pipeline-parallel degree.
        dp: Data-parallel degree.
        cp: Context-parallel degree.
        ep: Expert-parallel degree.
        virtual_stages: Model chunks per pipeline stage (interleaving; 1 = none).
        layers: Transformer layers, if known.
        hidden: Hidden size, if known.
        seq_len: Tokens per sequence, if known.
        num_microbatches: Micro-batches per step per pipeline, if given directly.
        global_batch: Sequences per step, if given (the micro-batch count follows from it).
        micro_batch: Sequences per micro-batch.
        sequence_parallel: Megatron-LM sequence parallelism.
        cp_load_balance: Load-balanced ring attention (``2 × cp`` chunks per sequence).
        names: The calculator's field names for these arguments, where they differ (the training
            calculator's ``interleave``, the communication calculator's ``seq``); errors and their
            messages use them.

    Raises:
        CalcError: Naming the field at fault (code ``not-divisible`` or ``unsupported``).

    Examples:
        >>> check_parallelism(tp=8, pp=4, layers=80, hidden=8192, virtual_stages=2, num_microbatches=16)
        >>> check_parallelism(pp=3, layers=80)  # 27 + 27 + 26: any split runs
        >>> check_parallelism(pp=16, layers=126)  # Llama 3 405B: 7 + 8 × 14 + 7 layers
        >>> check_parallelism(pp=8, virtual_stages=2, layers=12)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: pp must leave at least one layer per stage: pp × virtual_stages must be at most ...
        >>> check_parallelism(pp=4, virtual_stages=2, num_microbatches=3, names={"virtual_stages": "interleave"})
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: num_microbatches must be a multiple of pp (pp=4) for the interleaved schedule (got 3)
    """
    name = dict(names or {})

    def n(key: str) -> str:
        return name.get(key, key)

    _check_pipeline(n, pp, virtual_stages, layers, dp, micro_batch, global_batch, num_microbatches)
    if hidden is not None and hidden % tp:
        raise CalcError(n("tp"), f"must divide the hidden size (hidden={hidden})", tp, code="not-divisible")
    if seq_len is not None:
        _check_sequence(n, seq_len, tp, cp, sequence_parallel, cp_load_balance)
    if (dp * cp) % ep:
        raise CalcError(
            n("ep"),
            f"must divide {n('dp')} × {n('cp')} (={dp * cp}); expert parallelism reuses the "
            "data- and context-parallel ranks",
            ep,
            code="not-divisible",
        )


def _check_pipeline(
    n: Callable[[str], str],
    pp: int,
    v: int,
    layers: int | None,
    dp: int,
    micro_batch: int,
    global_batch: int | None,
    num_microbatches: int | None,
) -> None:
    """Rules 1 to 4: interleaving, the global batch, the layers over the stages, the interleaved micro-batches."""
    if v > 1 and pp < 2:
        raise CalcError(
            n("virtual_stages"),
            "needs pp of at least 2 (it splits each pipeline stage into chunks)",
            v,
            code="unsupported",
        )
    if global_batch is not None and global_batch % (dp * micro_batch):
        raise CalcError(
            n("global_batch"),
            f"must be a multiple of {n('dp')} × {n('micro_batch')} ({n('dp')}={dp}, {n('micro_batch')}={micro_batch})",
            global_batch,
            code="not-divisible",
        )
    if layers is not None and pp * v > layers:
        what = f"{n('pp')} × {n('virtual_stages')}" if v > 1 else n("pp")
        raise CalcError(
            n("pp"),
            f"must leave at least one layer per stage: {what} must be at most the layers (layers={layers})",
            pp,
            code="not-divisible",
        )
    if v > 1:
        _check_interleaved_microbatches(n, pp, dp, micro_batch, global_batch, num_microbatches)


def _check_interleaved_microbatches(
    n: Callable[[str], str], pp: int, dp: int, micro_batch: int, global_batch: int | None, num_microbatches: int | None
) -> None:
    """Rule 4: the interleaved schedule runs the micro-batches in groups of ``pp``."""
    if global_batch is not None:
        m = global_batch // (dp * micro_batch)
        if m % pp:
            raise CalcError(
                n("global_batch"),
                f"must give a multiple of {n('pp')} ({n('pp')}={pp}) micro-batches "
                f"per pipeline for the interleaved schedule (global_batch / ({n('dp')} × "
                f"{n('micro_batch')}) = {m})",
                global_batch,
                code="not-divisible",
            )
    elif num_microbatches is not None and num_microbatches % pp:
        raise CalcError(
            n("num_microbatches"),
            f"must be a multiple of {n('pp')} ({n('pp')}={pp}) for the interleaved schedule",
            num_microbatches,
            code="not-divisible",
        )


def _check_sequence(n: Callable[[str], str], seq_len: int, tp: int, cp: int, sp: bool, balance: bool) -> None:
    """Rule 6: the sequence over the context-parallel ranks (and the tensor-parallel ones under SP)."""
    seq = n("seq_len")
    if seq_len % cp:
        raise CalcError(n("cp"), f"must divide {seq} ({seq}={seq_len})", cp, code="not-divisible")
    if cp > 1 and balance and seq_len % (2 * cp):
        raise CalcError(
            n("cp"),
            f"× 2 must divide {seq} for load-balanced ring attention ({seq}={seq_len})",
            cp,
            code="not-divisible",
        )
    if sp and (seq_len // cp) % tp:
        raise CalcError(
            n("tp"),
            f"must divide {seq} / {n('cp')} under sequence parallelism ({seq}={seq_len}, {n('cp')}={cp})",
            tp,
            code="not-divisible",
        )


def _bool(value: object, field: str) -> bool:
    if isinstance(value, bool):
        return value
    raise CalcError(field, "must be true or false", value)


_LAYOUT_NAMES = {"virtual_stages": "interleave"}
"""[`Layout`][calc.memory.layout.Layout]'s names for [`check_parallelism`][calc.memory.layout.check_parallelism]'s
arguments."""
