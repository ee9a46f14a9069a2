"""Bytes-per-parameter conventions: which bytes a parameter costs under a precision and optimizer, named.

Published estimators disagree on which bytes to count (16 in the ZeRO paper, 18 in Megatron-LM, 20 in
DeepSpeed's ZeRO-2 estimator), so each choice is a named [`Convention`][calc.memory.model_state.Convention]
with its source. The public names are re-exported by [`calc.memory.model_state`][calc.memory.model_state].
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.errors import CalcError

__all__ = [
    "COMPONENTS",
    "CONVENTIONS",
    "CONVENTION_ALIASES",
    "Convention",
    "Split",
    "convention_options",
    "resolve_convention",
]

COMPONENTS: tuple[str, ...] = ("weights", "gradients", "master", "momentum", "variance")
"""The model-state components, in the order the calculators list them."""


@dataclass(frozen=True)
class Split:
    """How one framework lays out a convention's bytes: the same total, other components.

    Attributes:
        framework: Short identifier (``"fsdp2"``).
        weights: Bytes per parameter of the persistent weights.
        gradients: Bytes per parameter of the persistent gradients.
        master: Bytes per parameter of a separate fp32 master copy.
        momentum: Bytes per parameter of the first moment.
        variance: Bytes per parameter of the second moment.
        source: Where the framework documents this layout.
        transient: What the framework allocates only while a unit runs (not in the total).
    """

    framework: str
    weights: int
    gradients: int
    master: int
    momentum: int
    variance: int
    source: str
    transient: str = ""

    @property
    def bytes_per_param(self) -> int:
        """Total persistent bytes per parameter of this split.

        Examples:
            >>> CONVENTIONS["mixed-adam-16"].split("fsdp2").bytes_per_param
            16
        """
        return self.weights + self.gradients + self.master + self.momentum + self.variance


@dataclass(frozen=True)
class Convention:
    """Bytes per parameter of each model-state component, with the source that counts them so.

    Attributes:
        name: Stable identifier used in URLs and the API (``"mixed-adam-16"``).
        label: Short human label.
        weights: Bytes per parameter of the working (forward/backward) weights.
        gradients: Bytes per parameter of gradients (all gradient copies the framework keeps).
        master: Bytes per parameter of the fp32 master copy kept by the optimizer (0 when none).
        momentum: Bytes per parameter of the first optimizer moment (Adam's m, SGD's momentum).
        variance: Bytes per parameter of the second optimizer moment (Adam's v).
        source: Where this accounting is published.
        splits: Frameworks that hold the same total in other components
            ([`Split`][calc.memory.model_state.Split]); their totals equal this one's.
    """

    name: str
    label: str
    weights: int
    gradients: int
    master: int
    momentum: int
    variance: int
    source: str
    splits: tuple[Split, ...] = ()

    def split(self, framework: str) -> Split:
        """The [`Split`][calc.memory.model_state.Split] ``framework`` uses for this convention.

        Raises:
            CalcError: When this convention has no split for that framework (field ``split``).

        Examples:
            >>> s = CONVENTIONS["mixed-adam-16"].split("fsdp2")
            >>> (s.weights, s.gradients, s.master, s.momentum, s.variance)
            (4, 4, 0, 4, 4)
        """
        for s in self.splits:
            if s.framework == framework:
                return s
        known = ", ".join(s.framework for s in self.splits) or "none"
        raise CalcError("split", f"must be a framework split of {self.name} ({known})", framework, code="unknown-name")

    @property
    def bytes_per_param(self) -> int:
        """Total bytes per parameter, unsharded.

        Examples:
            >>> CONVENTIONS["mixed-adam-16"].bytes_per_param
            16
        """
        return self.weights + self.gradients + self.master + self.momentum + self.variance


CONVENTIONS: dict[str, Convention] = {
    c.name: c
    for c in (
        Convention(
            "mixed-adam-16",
            "Mixed precision + Adam, 16 B/param (2+2+4+4+4)",
            2,
            2,
            4,
            4,
            4,
            "ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054), Sec. 3.1: 2Ψ + 2Ψ + KΨ with K = 12",
            splits=(
                Split(
                    "fsdp2",
                    4,
                    4,
                    0,
                    4,
                    4,
                    "PyTorch FSDP2 fully_shard with MixedPrecisionPolicy(param_dtype=bfloat16): the sharded "
                    "parameters stay fp32 and are stepped directly ('FSDP does not require any extra memory to "
                    "keep a high-precision copy of the parameters'); the reduced gradient is cast back to the "
                    "sharded parameter's fp32 dtype",
                    "the bf16 all-gathered parameters (2 B/param) and bf16 unsharded gradients of the units "
                    "being run (calc.memory.overheads: zero3_gathered)",
                ),
            ),
        ),
        Convention(
            "mixed-adam-18",
            "Mixed precision + Adam, fp32 gradients, 18 B/param (2+4+4+4+4)",
            2,
            4,
            4,
            4,
            4,
            "Megatron-LM theoretical_memory_usage.py and dist_optimizer.md: bf16 params + fp32 main grads, 18 B/param",
        ),
        Convention(
            "mixed-adam-20",
            "Mixed precision + Adam, fp16 and fp32 gradients, 20 B/param (2+6+4+4+4)",
            2,
            6,
            4,
            4,
            4,
            "DeepSpeed estimate_zero2_model_states_mem_needs at 1 GPU: 2 params16 + 2 grads16 + 4 grads32 "
            "+ 4 params32 + 8 optimizer states; Megatron dist_optimizer.md fp16 row (20)",
        ),
        Convention(
            "fp32-adam-16",
            "fp32 training + Adam, 16 B/param (4+4+0+4+4)",
            4,
            4,
            0,
            4,
            4,
            "Megatron-LM dist_optimizer.md, fp32 params and grads row (16 B/param)",
        ),
        Convention(
            "bf16-adam-12",
            "bf16 weights and gradients + fp32 Adam, no master copy, 12 B/param (2+2+0+4+4)",
            2,
            2,
            0,
            4,
            4,
            "Pure-bf16 training with fp32 optimizer states (Zamirai et al. 2020, arXiv:2010.06192, "
            "'Revisiting BFloat16 Training'); no fp32 master weights",
        ),
        Convention(
            "bf16-adam-fused-6",
            "bf16 weights + stock Adam, step fused into backward, 6 B/param (2+0+0+2+2)",
            2,
            0,
            0,
            2,
            2,
            "PyTorch tutorial 'How to save memory by fusing the optimizer step into the backward pass' "
            "(Tensor.register_post_accumulate_grad_hook: each gradient is applied and freed as it is produced); "
            "with bf16 parameters torch.optim.Adam/AdamW allocate their moments with zeros_like(param), in bf16",
        ),
        Convention(
            "fp32-adam-fused-12",
            "fp32 weights + Adam, step fused into backward, 12 B/param (4+0+0+4+4)",
            4,
            0,
            0,
            4,
            4,
            "PyTorch tutorial 'How to save memory by fusing the optimizer step into the backward pass' "
            "(fp32 vit_l_16 with torch.optim.Adam: 4 B weights + 8 B moments, gradients freed per parameter)",
        ),
        Convention(
            "bf16-adam-pure-8",
            "bf16 everything, Adam moments in bf16, 8 B/param (2+2+0+2+2)",
            2,
            2,
            0,
            2,
            2,
            "torch.optim.Adam/AdamW allocate moments with zeros_like(param), i.e. in the parameters' dtype",
        ),
        Convention(
            "mixed-adam8bit-10",
            "Mixed precision + 8-bit Adam, 10 B/param (2+2+4+1+1)",
            2,
            2,
            4,
            1,
            1,
            "Dettmers et al. 2022, '8-bit Optimizers via Block-wise Quantization' (arXiv:2110.02861): 1-byte moments; "
            "the per-block fp32 scales (one per 2,048 values, about 0.004 B/param) are not counted",
        ),
        Convention(
            "mixed-sgdm-12",
            "Mixed precision + SGD with momentum, 12 B/param (2+2+4+4+0)",
            2,
            2,
            4,
            4,
            0,
            "Micikevicius et al. 2018 (arXiv:1710.03740) fp32 master copy; SGD keeps one momentum buffer",
        ),
        Convention(
            "fp32-sgd-8",
            "fp32 training + plain SGD, 8 B/param (4+4+0+0+0)",
            4,
            4,
            0,
            0,
            0,
            "Plain SGD keeps no optimizer state (torch.optim.SGD with momentum=0)",
        ),
        Convention(
            "fp32-sgdm-12",
            "fp32 training + SGD with momentum, 12 B/param (4+4+0+4+0)",
            4,
            4,
            0,
            4,
            0,
            "torch.optim.SGD with momentum > 0 keeps one momentum_buffer per parameter, created as "
            "clone(grad) in the parameter's dtype (fp32 here); no master copy",
        ),
        Convention(
            "mixed-bf16-states",
            "Mixed precision + Adam, bf16 optimizer moments, 14 B/param (2+4+4+2+2)",
            2,
            4,
            4,
            2,
            2,
            "Megatron-Core precision-aware optimizer (--use-precision-aware-optimizer --exp-avg-dtype bf16 "
            "--exp-avg-sq-dtype bf16, megatron/training/arguments.py; Transformer Engine FusedAdam keeps the "
            "moments in bf16): bf16 params + fp32 main grads + fp32 master + bf16 moments; with the distributed "
            "optimizer 6 + 8/d B/param (NVIDIA's Nemotron-4 340B recipe)",
        ),
    )
}
"""Named bytes-per-parameter conventions. The default, ``mixed-adam-16``, is the ZeRO paper's."""

CONVENTION_ALIASES: dict[str, str] = {"bf16-adam-fused-10": "bf16-adam-fused-6"}
"""Old convention names still accepted (links made before a rename), mapped to the current name.

``bf16-adam-fused-10`` counted fp32 moments (2+0+0+4+4) for bf16 weights, while the recipe it cited
(PyTorch's fused-step tutorial with a stock optimizer) keeps moments in the parameters' dtype: 6 B/param
with bf16 parameters, 12 with fp32 ones (``fp32-adam-fused-12``).
"""


def resolve_convention(name: str) -> Convention:
    """The [`Convention`][calc.memory.model_state.Convention] named ``name`` (an old name in
    [`CONVENTION_ALIASES`][calc.memory.model_state.CONVENTION_ALIASES] gives the current one).

    Raises:
        CalcError: Naming the field ``convention`` when the name is unknown.

    Examples:
        >>> resolve_convention("bf16-adam-fused-10").name
        'bf16-adam-fused-6'
        >>> resolve_convention("adam")  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: convention must be one of bf16-adam-12, ... (got 'adam')
    """
    if isinstance(name, str):
        found = CONVENTIONS.get(CONVENTION_ALIASES.get(name, name))
        if found is not None:
            return found
    raise CalcError("convention", f"must be one of {', '.join(sorted(CONVENTIONS))}", name, code="unknown-name")


def convention_options() -> tuple[tuple[str, str], ...]:
    """``(value, label)`` pairs for a calculator's convention select: every convention, then the old names.

    The old names stay selectable so that links carrying them keep working.

    Examples:
        >>> convention_options()[0]
        ('mixed-adam-16', 'Mixed precision + Adam, 16 B/param (2+2+4+4+4)')
        >>> convention_options()[-1]
        ('bf16-adam-fused-10', 'Old name of bf16-adam-fused-6 (6 B/param)')
    """
    current = tuple((c.name, c.label) for c in CONVENTIONS.values())
    old = tuple(
        (alias, f"Old name of {new} ({CONVENTIONS[new].bytes_per_param} B/param)")
        for alias, new in CONVENTION_ALIASES.items()
    )
    return current + old
