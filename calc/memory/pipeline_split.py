"""How a model's transformer layers are placed on pipeline stages: any ``pp`` from 1 to the layer count.

Four rules, each the one a framework uses:

* **even**: ``L / (p·v)`` layers on every (virtual) stage, when that divides (Megatron-LM's default;
  Narayanan et al. 2021, arXiv:2104.04473, Sec. 2.2.2 for the ``v`` chunks of the interleaved schedule);
* **weighted** (torchtitan's ``generate_llm_fqn_per_model_part`` in
  ``torchtitan/distributed/pipeline_parallel.py``, its default ``pipeline_parallel_first_stage_less_layers``
  = ``pipeline_parallel_last_stage_less_layers`` = 1): the embedding and the output layer each count as one
  layer; the ``L + 2`` effective layers are split as evenly as they go over the ``S = p·v`` virtual stages
  (the first ``(L + 2) mod S`` get one more), then the first stage gives one up for the embedding and the
  last one for the output layer. Llama 3 405B's 126 layers on 16 stages come out 7 + 8×14 + 7, as Meta
  trained them (Dubey et al. 2024, arXiv:2407.21783, Sec. 3.3.2) and as torchtitan runs them on
  ``pp = 8``, ``v = 2``. Where this would leave a stage without a layer (``pp`` close to ``L``), the
  layers go as evenly as they can, the extra ones on the stages after the first;
* **first / last**: Megatron-LM's ``decoder_first_pipeline_num_layers`` /
  ``decoder_last_pipeline_num_layers`` (``first_stage_layers`` / ``last_stage_layers`` here) fix the first
  and last stages and share the rest evenly (Megatron-Core's ``TransformerConfig`` requires the rest to
  divide evenly);
* **embedding and loss slots** (Megatron-Core's ``account_for_embedding_in_pipeline_split`` and
  ``account_for_loss_in_pipeline_split``, ``get_num_layers_to_build`` in
  ``megatron/core/transformer/transformer_block.py``): the embedding and/or the loss count as one layer each,
  the ``L + slots`` must divide evenly over the ``p·v`` virtual stages, and the first (last) virtual stage
  builds one layer fewer, none when each virtual stage holds one. Llama 3 405B's 126 layers on
  ``p = 16``, ``v = 8`` come out 0 + 1×126 + 0: "the first model chunk on the first stage has only the
  embedding, and the last model chunk on the last stage has only output projection and loss" (Dubey et al.
  2024, Sec. 3.3.2);
* **explicit**: ``pipeline_layers``, one count per stage, or per virtual stage when interleaved (Megatron-Core's
  ``pipeline_model_parallel_layout``, torchtitan's ``module_fqns_per_model_part``).

Interleaved, pipeline stage ``k`` holds virtual stages ``k, k + p, k + 2p, ...`` (the looped schedule of
Narayanan et al. Sec. 2.2.2 and of torchtitan's ``pipeline_module_split``). The public names are re-exported
by [`calc.memory.layout`][calc.memory.layout].

Examples:
    >>> split_layers(126, 16)
    ((7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7), 'uneven (torchtitan weighted): 7 + 8×14 + 7')
    >>> split_layers(61, 16)[1]
    'uneven (torchtitan weighted): 3 + 4×14 + 2'
    >>> split_layers(32, 4)[1]
    'even: 8×4'
    >>> split_layers(126, 128, slots=(True, True))[1]
    'the embedding and the loss as one layer each (Megatron-LM account_for_*_in_pipeline_split): 0 + 1×126 + 0'
"""

from __future__ import annotations

from calc.errors import CalcError
from calc.memo import memoized
from calc.memory.layout_rules import _bool
from calc.units import parse_positive_int

__all__ = ["describe_counts", "split_layers"]

FIRST_FIELD = "first_stage_layers"
LAST_FIELD = "last_stage_layers"
_FIRST_ALIAS = "decoder_first_pipeline_num_layers"
_LAST_ALIAS = "decoder_last_pipeline_num_layers"


def check_stage_fields(layout: object) -> None:
    """Validate a [`Layout`][calc.memory.layout.Layout]'s uneven-stage fields on their own, in place.

    Megatron-LM's names (``decoder_first_pipeline_num_layers``, ``decoder_last_pipeline_num_layers``) and
    the short ones (``first_stage_layers``, ``last_stage_layers``) are one field each: either may be given
    (both only with the same value), and errors name the one given. The layer total is checked with the model.
    """
    put = object.__setattr__
    pp = parse_positive_int(layout.pp, "pp")
    v = parse_positive_int(layout.interleave, "interleave")
    for short, long in ((FIRST_FIELD, _FIRST_ALIAS), (LAST_FIELD, _LAST_ALIAS)):
        a, b = getattr(layout, short), getattr(layout, long)
        name = long if b is not None else short
        if a is not None and b is not None and a != b:
            raise CalcError(short, f"must equal {long} when both are given ({long}={b})", a)
        value = a if a is not None else b
        if value is None:
            continue
        value = parse_positive_int(value, name)
        if pp < 2:
            raise CalcError(name, "needs pp of at least 2", value, code="unsupported")
        if v > 1:
            rule = "cannot be given with interleave (give pipeline_layers per virtual stage)"
            raise CalcError(name, rule, value, code="unsupported")
        if layout.pipeline_layers is not None:
            raise CalcError(name, "cannot be given with pipeline_layers (which sets every stage)", value)
        put(layout, name, value)
    _check_slots(layout)
    explicit = layout.pipeline_layers
    if explicit is not None:
        if isinstance(explicit, str) or not isinstance(explicit, (tuple, list)):
            raise CalcError("pipeline_layers", "must be a list of layer counts, one per stage", explicit)
        counts = tuple(parse_positive_int(n, "pipeline_layers") for n in explicit)
        if len(counts) != pp * v:
            per = f"stage (pp={pp})" if v == 1 else f"virtual stage (pp × interleave = {pp * v})"
            rule = f"must give one layer count per {per}"
            raise CalcError("pipeline_layers", rule, len(counts), code="not-divisible")
        put(layout, "pipeline_layers", counts)


SLOT_FIELDS = ("account_for_embedding_in_pipeline_split", "account_for_loss_in_pipeline_split")
"""Megatron-Core's ``TransformerConfig`` flags that count the embedding / the loss as a layer of the split."""


def _check_slots(layout: object) -> None:
    """The slot flags are booleans, and (as in Megatron-Core) exclusive with fixed first/last stages."""
    for name in SLOT_FIELDS:
        if not _bool(getattr(layout, name), name):
            continue
        for other in (FIRST_FIELD, LAST_FIELD, "pipeline_layers"):
            if getattr(layout, other) is not None:
                rule = f"cannot be given with {other} (Megatron-Core refuses the two together)"
                raise CalcError(name, rule, True, code="unsupported")


def describe_counts(counts: tuple[int, ...]) -> str:
    """Layer counts with runs folded: ``7 + 8×14 + 7``.

    Examples:
        >>> describe_counts((7, 8, 8, 7)), describe_counts((5,))
        ('7 + 8×2 + 7', '5')
    """
    parts: list[str] = []
    i = 0
    while i < len(counts):
        j = i
        while j + 1 < len(counts) and counts[j + 1] == counts[i]:
            j += 1
        run = j - i + 1
        parts.append(f"{counts[i]}×{run}" if run > 1 else str(counts[i]))
        i = j + 1
    return " + ".join(parts)


def _weighted(num_layers: int, stages: int) -> tuple[int, ...] | None:
    """torchtitan's split with the embedding and output weighed as one layer each; None if a stage gets none."""
    if stages == 1:
        return (num_layers,)
    per, extra = divmod(num_layers + 2, stages)
    counts = [per + (1 if i < extra else 0) for i in range(stages)]
    counts[0] -= 1
    counts[-1] -= 1
    return tuple(counts) if min(counts) >= 1 else None


def _spread(num_layers: int, stages: int) -> tuple[int, ...]:
    """As even as it goes, the extra layers on the stages after the first."""
    base, extra = divmod(num_layers, stages)
    return tuple(base + (1 if 1 <= i <= extra else 0) for i in range(stages))


@memoized()  # a plan asks for the same few splits thousands of times
def split_layers(
    num_layers: int,
    stages: int,
    *,
    first: int | None = None,
    last: int | None = None,
    explicit: tuple[int, ...] | None = None,
    weighted: bool = False,
    names: tuple[str, str] = (FIRST_FIELD, LAST_FIELD),
    slots: tuple[bool, bool] = (False, False),
) -> tuple[tuple[int, ...], str]:
    """Layers on each of ``stages`` (virtual) stages, first to last, and how they were placed.

    Args:
        num_layers: The model's transformer layers ``L``.
        stages: Virtual stages ``p × v`` (``p`` when not interleaved).
        first: Layers on the first stage (Megatron-LM's ``decoder_first_pipeline_num_layers``).
        last: Layers on the last stage (``decoder_last_pipeline_num_layers``).
        explicit: One count per virtual stage (``pipeline_layers``).
        weighted: Always use torchtitan's weighted split, even where ``stages`` divides ``L``.
        names: The field names of ``first`` and ``last`` in errors and in the placement.
        slots: Whether the embedding and the loss each count as one layer (Megatron-LM's
            ``account_for_embedding_in_pipeline_split``, ``account_for_loss_in_pipeline_split``).

    Returns:
        The counts and the placement, in words.

    Raises:
        CalcError: When there are more stages than layers, or the given counts do not add up.

    Examples:
        >>> split_layers(32, 4, first=5)
        ((5, 9, 9, 9), 'first_stage_layers=5, the rest even: 5 + 9×3')
        >>> split_layers(32, 4, weighted=True)[1]
        'uneven (torchtitan weighted): 8 + 9 + 8 + 7'
    """
    if any(slots):
        return _slotted(num_layers, stages, *slots)
    if stages > num_layers:
        raise CalcError(
            "pp", f"× interleave must be at most the layers (layers={num_layers})", stages, code="not-divisible"
        )
    if explicit is not None:
        if sum(explicit) != num_layers:
            raise CalcError(
                "pipeline_layers",
                f"must add up to the model's layers (layers={num_layers}, sum={sum(explicit)})",
                explicit,
                code="not-divisible",
            )
        return tuple(explicit), f"pipeline_layers as given: {describe_counts(tuple(explicit))}"
    if first is not None or last is not None:
        return _first_last(num_layers, stages, first, last, names)
    if num_layers % stages == 0 and not weighted:
        counts = (num_layers // stages,) * stages
        return counts, f"even: {describe_counts(counts)}"
    counts = _weighted(num_layers, stages)
    if counts is not None:
        return counts, f"uneven (torchtitan weighted): {describe_counts(counts)}"
    counts = _spread(num_layers, stages)
    return counts, f"uneven (as even as it goes, the extra layers after the first stage): {describe_counts(counts)}"


def _slotted(num_layers: int, stages: int, embedding: bool, loss: bool) -> tuple[tuple[int, ...], str]:
    """Megatron-Core's rule with the embedding and/or loss as a layer: ``L + slots`` evenly over the stages."""
    total = num_layers + embedding + loss
    what = " and the loss" if embedding and loss else ("" if embedding else "the loss")
    what = ("the embedding" + what) if embedding else what
    if total % stages:
        raise CalcError(
            "pp",
            f"× interleave must divide the layers plus {what} (account_for_*_in_pipeline_split: "
            f"layers + {embedding + loss} = {total})",
            stages,
            code="not-divisible",
        )
    counts = [total // stages] * stages
    counts[0] -= embedding
    counts[-1] -= loss  # never below 0: each stage gets at least one of the L + slots >= stages
    each = "one layer each" if embedding and loss else "one layer"
    rule = f"{what} as {each} (Megatron-LM account_for_*_in_pipeline_split)"
    return tuple(counts), f"{rule}: {describe_counts(tuple(counts))}"


def _first_last(
    num_layers: int, stages: int, first: int | None, last: int | None, names: tuple[str, str]
) -> tuple[tuple[int, ...], str]:
    """Megatron-LM's rule: the first and/or last stage fixed, the rest shared evenly."""
    fixed = [n for n in (first, last) if n is not None]
    field = names[1] if first is None else names[0]
    rest, middle = num_layers - sum(fixed), stages - len(fixed)
    if rest < middle or (middle == 0 and rest) or (middle and rest % middle):
        others = f"{middle} other stage" + ("s" if middle != 1 else "")
        raise CalcError(
            field,
            f"must leave a whole number of layers, at least 1, for each of the {others} "
            f"(layers={num_layers}, left={rest})",
            first if first is not None else last,
            code="not-divisible",
        )
    each = rest // middle if middle else 0
    counts = (() if first is None else (first,)) + (each,) * middle + (() if last is None else (last,))
    given = ", ".join(f"{name}={n}" for name, n in zip(names, (first, last), strict=True) if n is not None)
    return counts, f"{given}, the rest even: {describe_counts(counts)}"
