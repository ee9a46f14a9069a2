"""FP8 and lower-precision training recipes: which bytes they add, and what stays in high precision.

Low-precision GEMMs do not shrink model state by themselves. Transformer Engine (TE) "by default
stores weights in high precision and quantizes them to low precision before each GEMM", and
"FP8 training does not always reduce memory compared to BF16/FP16" (TE documentation, *Low
precision training → Performance considerations → Memory usage*). What a recipe adds per GEMM
parameter is the **quantized copies** of the weights that TE caches across micro-batches (the
``is_first_microbatch`` weight cache) plus their **scaling factors**:

* each Linear needs its weight with *rowwise* usage in the forward GEMM and *columnwise* usage in
  the input-gradient GEMM (TE, *Handling transposes*, Table 2);
* per-tensor FP8 on **Hopper** cannot read FP8 columnwise, so the columnwise copy is a physical
  transpose: 2 copies of 1 byte; on **Blackwell** one FP8 copy serves both usages: 1 byte;
* **MXFP8** (Blackwell) scales blocks of 32 along a row for rowwise and along a column for
  columnwise, so "rowwise and columnwise MXFP8 tensors are numerically different" and both are
  kept: 2 bytes, plus one E8M0 byte per 32 values in each (TE, *MXFP8*);
* **NVFP4** (Blackwell) stores 4-bit values with one E4M3 scale per 16, rowwise and columnwise.

What stays in high precision (TE, same pages; Micikevicius et al. 2022, arXiv:2209.05433):
the model weights (bf16) and the fp32 master weights and moments in the optimizer, the
gradients the weight-gradient GEMM writes, and every non-GEMM operation: norms, softmax and
attention, activation functions, residual additions, the embedding and (in Megatron-LM and TE
recipes) the output layer and the router.

The temporary peak during the step: the cached copies are rebuilt at the first micro-batch of
each step into the same buffers (TE's weight workspaces are updated in place), so they are alive
throughout, the optimizer step included, and add no second copy; they count in both phases of
[`peak_memory`][calc.memory.overheads.peak_memory] (``low_precision`` argument).

Not modelled: activations saved in low precision (TE saves a GEMM's input quantized for the
weight-gradient GEMM; [`calc.memory.activations`][calc.memory.activations] counts it in 16 bits), and the
per-tensor scaling state (scale, inverse scale, delayed scaling's amax history).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from calc.errors import CalcError
from calc.units import parse_count

__all__ = [
    "HIGH_PRECISION",
    "LOW_PRECISION_RECIPES",
    "LowPrecisionRecipe",
    "LowPrecisionWeights",
    "low_precision_weights",
]

HIGH_PRECISION: tuple[str, ...] = (
    "model weights (bf16) and the optimizer's fp32 master weights and moments",
    "gradients (written by the weight-gradient GEMM in high precision)",
    "norms, softmax and attention, activation functions, residual additions",
    "the embedding, the output layer and MoE routers",
)
"""What every recipe keeps in high precision (Transformer Engine documentation, *Memory usage*)."""


@dataclass(frozen=True)
class LowPrecisionRecipe:
    """One low-precision recipe on one GPU generation.

    Attributes:
        name: Stable identifier (``"fp8-hopper"``).
        label: Short human label.
        value_bits: Bits per stored value (8 for FP8, 4 for FP4).
        copies: Quantized copies of each weight kept for training (rowwise and columnwise usages).
        block: Values per scaling factor (0: one scale per tensor).
        scale_bytes: Bytes per scaling factor.
        source: Where the layout is documented.
    """

    name: str
    label: str
    value_bits: int
    copies: int
    block: int
    scale_bytes: int
    source: str

    @property
    def bytes_per_param(self) -> Fraction:
        """Bytes per GEMM parameter the quantized copies and their scales add (exact).

        Examples:
            >>> names = ("fp8-hopper", "fp8-blackwell", "mxfp8-blackwell", "nvfp4-blackwell")
            >>> [str(LOW_PRECISION_RECIPES[n].bytes_per_param) for n in names]
            ['2', '1', '33/16', '9/8']
        """
        per_copy = Fraction(self.value_bits, 8) + (Fraction(self.scale_bytes, self.block) if self.block else 0)
        return self.copies * per_copy


LOW_PRECISION_RECIPES: dict[str, LowPrecisionRecipe] = {
    r.name: r
    for r in (
        LowPrecisionRecipe(
            "fp8-hopper",
            label="FP8, per-tensor scaling, Hopper (2 B/param: copy + transpose)",
            value_bits=8,
            copies=2,
            block=0,
            scale_bytes=4,
            source="Transformer Engine DelayedScaling / Float8CurrentScaling; Performance considerations: on Hopper "
            "'columnwise tensors need to be physically transposed in memory'",
        ),
        LowPrecisionRecipe(
            "fp8-blackwell",
            label="FP8, per-tensor scaling, Blackwell (1 B/param)",
            value_bits=8,
            copies=1,
            block=0,
            scale_bytes=4,
            source="Transformer Engine Performance considerations: Blackwell 'supports columnwise access natively, so "
            "no transpose is needed'",
        ),
        LowPrecisionRecipe(
            "mxfp8-blackwell",
            label="MXFP8, Blackwell (2 B/param + E8M0 scales)",
            value_bits=8,
            copies=2,
            block=32,
            scale_bytes=1,
            source="Transformer Engine MXFP8: one E8M0 scale per 32 values; rowwise and columnwise tensors are "
            "numerically different and both are quantized",
        ),
        LowPrecisionRecipe(
            "nvfp4-blackwell",
            label="NVFP4, Blackwell (1 B/param + E4M3 scales)",
            value_bits=4,
            copies=2,
            block=16,
            scale_bytes=1,
            source="Transformer Engine NVFP4: 4-bit E2M1 values with one E4M3 scale per 16 (plus one fp32 scale per "
            "tensor), rowwise and columnwise",
        ),
    )
}
"""The recipes, by name. Delayed and current per-tensor scaling lay out the weights alike (delayed
scaling adds a per-tensor amax history of ``amax_history_len`` fp32 values, a few KiB per GEMM)."""


@dataclass(frozen=True)
class LowPrecisionWeights:
    """The quantized weight copies a recipe adds for ``params`` GEMM parameters.

    Attributes:
        recipe: The [`LowPrecisionRecipe`][calc.memory.fp8.LowPrecisionRecipe] name.
        values_bytes: The quantized values of every copy.
        scale_bytes: Their scaling factors (0 for per-tensor scaling, whose scale is a scalar).
        kept_high_precision: What stays in high precision
            ([`HIGH_PRECISION`][calc.memory.fp8.HIGH_PRECISION]).
    """

    recipe: str
    values_bytes: int
    scale_bytes: int
    kept_high_precision: tuple[str, ...] = HIGH_PRECISION

    @property
    def total(self) -> int:
        """Values plus scales, bytes.

        Examples:
            >>> low_precision_weights(10**6, "mxfp8-blackwell").total
            2062500
        """
        return self.values_bytes + self.scale_bytes


def low_precision_weights(params: int | float | str, recipe: str) -> LowPrecisionWeights:
    """Bytes of the quantized weight copies ``recipe`` caches for ``params`` GEMM parameters.

    ``copies × params × value_bits / 8`` values plus ``copies × ceil(params / block) ×
    scale_bytes`` scales (block-scaled recipes only), rounded up per copy.

    Raises:
        CalcError: On an unknown recipe (field ``low_precision``) or a bad parameter count.

    Examples:
        >>> low_precision_weights("7B", "fp8-hopper").total, low_precision_weights("7B", "fp8-blackwell").total
        (14000000000, 7000000000)
        >>> low_precision_weights(1000, "fp4")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: low_precision must be one of fp8-hopper, fp8-blackwell, ... (got 'fp4')
    """
    n = parse_count(params, "params")
    try:
        r = LOW_PRECISION_RECIPES[recipe]
    except (KeyError, TypeError):
        raise CalcError(
            "low_precision", f"must be one of {', '.join(LOW_PRECISION_RECIPES)}", recipe, code="unknown-name"
        ) from None
    values = r.copies * (-(-n * r.value_bits // 8))
    scales = r.copies * (-(-n // r.block)) * r.scale_bytes if r.block else 0
    return LowPrecisionWeights(r.name, values, scales)
