"""Bytes-per-parameter conventions: which bytes a parameter costs under a precision and optimizer, named.

Published estimators disagree on which bytes to count (16 in the ZeRO paper, 18 in Megatron-LM, 20 in
DeepSpeed's ZeRO-2 estimator), so each choice is a named [`Convention`][calc.memory.model_state.Convention]
with its source. The public names are re-exported by [`calc.memory.model_state`][calc.memory.model_state].

Optimizers beyond Adam (Lion, Muon, Adafactor, Shampoo, SOAP) are conventions too. Where a state depends on a
matrix's shape (Adafactor's row and column statistics, Shampoo's and SOAP's Kronecker factors), the convention's
integer bytes per parameter are those of square blocks (named assumptions below), and ``matrix_state_bytes``
counts one matrix of any shape exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.errors import CalcError
from calc.units import parse_positive_int

__all__ = [
    "COMPONENTS",
    "CONVENTIONS",
    "CONVENTION_ALIASES",
    "Convention",
    "KRONECKER_BYTES_PER_PARAM",
    "SHAMPOO_BLOCK",
    "SOAP_MAX_DIM",
    "Split",
    "convention_options",
    "matrix_state_bytes",
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
        momentum: Bytes per parameter of the first optimizer moment (Adam's m, SGD's, Lion's or Muon's momentum).
        variance: Bytes per parameter of the second-moment statistics (Adam's v; Adafactor's factored v;
            Shampoo's and SOAP's Kronecker factors, their inverse roots or eigenvectors, and SOAP's v).
        source: Where this accounting is published.
        splits: Frameworks that hold the same total in other components
            ([`Split`][calc.memory.model_state.Split]); their totals equal this one's.
        shape: How the second-moment statistics of a matrix depend on its shape: ``""`` elementwise (the
            bytes per parameter hold for any shape), ``"factored"`` (Adafactor: one value per row and per
            column), ``"kronecker"`` (Shampoo: two factors and their inverse roots per block) or
            ``"eigenbasis"`` (SOAP: two factors and their eigenvectors per matrix, then Adam's v).
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
    shape: str = ""

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
        Convention(
            "mixed-lion-12",
            "Mixed precision + Lion, 12 B/param (2+2+4+4+0)",
            2,
            2,
            4,
            4,
            0,
            "Chen et al. 2023, 'Symbolic Discovery of Optimization Algorithms' (arXiv:2302.06675), Program 1: "
            "Lion keeps only the momentum (one fp32 state), updated after the sign step",
        ),
        Convention(
            "mixed-muon-12",
            "Mixed precision + Muon (hidden matrices), 12 B/param (2+2+4+4+0)",
            2,
            2,
            4,
            4,
            0,
            "Jordan et al. 2024, 'Muon: An optimizer for hidden layers in neural networks' (one momentum buffer "
            "per 2-D weight, orthogonalized by Newton-Schulz); Liu et al. 2025, 'Muon is Scalable for LLM "
            "Training' (arXiv:2502.16982), Sec. 2 and Alg. 1 (Distributed Muon gathers each whole matrix "
            "before orthogonalizing). Embeddings, output head, norms and biases stay on AdamW (mixed-adam-16)",
        ),
        Convention(
            "mixed-adafactor-8",
            "Mixed precision + Adafactor without momentum, 8 B/param (2+2+4+0+0, factored v)",
            2,
            2,
            4,
            0,
            0,
            "Shazeer and Stern 2018, 'Adafactor' (arXiv:1804.04235), Sec. 3 and Alg. 4, beta1 = 0 (Sec. 4): an "
            "n x m matrix keeps n + m fp32 row and column statistics, 4(n + m)/(nm) B/param (0.002 at "
            "4096 x 4096), not counted in the integer total; matrix_state_bytes counts them",
            shape="factored",
        ),
        Convention(
            "mixed-adafactor-momentum-12",
            "Mixed precision + Adafactor with momentum, 12 B/param (2+2+4+4+0, factored v)",
            2,
            2,
            4,
            4,
            0,
            "Shazeer and Stern 2018 (arXiv:1804.04235), Alg. 4 with beta1 > 0: one full fp32 first moment "
            "beside the factored second moment (n + m values per n x m matrix, not counted in the total)",
            shape="factored",
        ),
        Convention(
            "mixed-shampoo-28",
            "Mixed precision + Shampoo, square blocks, 28 B/param (2+2+4+4+16)",
            2,
            2,
            4,
            4,
            16,
            "Gupta, Koren and Singer 2018, 'Shampoo' (arXiv:1802.09568), Alg. 1: L (m x m) and R (n x n) "
            "statistics and their inverse 4th roots per m x n matrix; Shi et al. 2023, 'A Distributed "
            "Data-Parallel PyTorch Implementation of Distributed Shampoo' (arXiv:2309.06497): fp32 factors, "
            "blocks of at most max_preconditioner_dim = 1024, betas = (0.9, 1.0) keep one first moment. Square "
            "b x b blocks hold 4 b^2 fp32 values per b^2 parameters, 16 B/param; grafting's diagonal state "
            "(4 B/param with Adam or AdaGrad grafting) is not counted",
            shape="kronecker",
        ),
        Convention(
            "mixed-soap-32",
            "Mixed precision + SOAP, square matrices, 32 B/param (2+2+4+4+4+16)",
            2,
            2,
            4,
            4,
            20,
            "Vyas et al. 2024, 'SOAP: Improving and Stabilizing Shampoo using Adam' (arXiv:2409.11321): "
            "Adam's m and v (v in the eigenbasis) plus, per dimension of at most max_precond_dim = 10000 "
            "(github.com/nikhilvyas/SOAP soap.py), the fp32 factor L or R and its eigenvectors Q: for an n x n "
            "matrix 4 n^2 fp32 values per n^2 parameters, 16 B/param beside v's 4",
            shape="eigenbasis",
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


SHAMPOO_BLOCK = 1024
"""The largest block side Shampoo preconditions (Shi et al. 2023, arXiv:2309.06497, Sec. 3.2, and
``DistributedShampoo(max_preconditioner_dim=1024)``, its default): an m x n matrix is cut into blocks of at most
this side, the last block of each dimension shorter."""

SOAP_MAX_DIM = 10000
"""The largest dimension SOAP keeps a factor for (``SOAP(max_precond_dim=10000)``, the default of the paper's code,
github.com/nikhilvyas/SOAP): a longer dimension is left unrotated and keeps no factor."""

KRONECKER_BYTES_PER_PARAM = 16
"""Bytes per parameter of Shampoo's or SOAP's per-matrix state for square blocks: four fp32 b x b matrices (the two
factors and their inverse roots, or their eigenvectors) per b x b block of parameters, whatever b is. Part of the
``variance`` of ``mixed-shampoo-28`` and ``mixed-soap-32``."""

_FACTOR_BYTES = 4  # fp32 statistics, as in all five papers' code


def _blocks(dim: int, side: int) -> list[int]:
    return [side] * (dim // side) + ([dim % side] if dim % side else [])


def matrix_state_bytes(convention: str, rows: int, cols: int) -> int:
    """Exact optimizer-state bytes (``momentum`` + ``variance``) of one ``rows x cols`` weight matrix.

    Elementwise states cost their bytes per parameter; the shaped ones are counted from the shape:

    * ``factored`` (Adafactor, Shazeer and Stern 2018, Sec. 3): ``rows + cols`` fp32 statistics.
    * ``kronecker`` (Shampoo, Gupta et al. 2018, Alg. 1, blocked as Shi et al. 2023): per block ``r x c`` of at
      most ``SHAMPOO_BLOCK`` a side, ``L`` (r x r), ``R`` (c x c) and their
      inverse roots, ``2 (r² + c²)`` fp32 values.
    * ``eigenbasis`` (SOAP, Vyas et al. 2024): Adam's ``v`` (4 B/param) plus, for each dimension ``d`` of at
      most ``SOAP_MAX_DIM``, its factor and eigenvectors, ``2 d²`` fp32.

    For square blocks this equals the convention's ``(momentum + variance) × rows × cols``.

    Raises:
        CalcError: On an unknown convention or a dimension that is not a positive whole number.

    Examples:
        >>> matrix_state_bytes("mixed-adam-16", 4, 6)  # m and v, 8 B each of 24 parameters
        192
        >>> matrix_state_bytes("mixed-adafactor-8", 4, 6)  # 4 + 6 fp32 statistics
        40
        >>> matrix_state_bytes("mixed-shampoo-28", 4, 6)  # momentum 4 x 24 + L, R and roots 2 (16 + 36) x 4
        512
        >>> matrix_state_bytes("mixed-shampoo-28", 2048, 1024) == 20 * 2048 * 1024  # two square blocks
        True
    """
    conv = resolve_convention(convention)
    r, c = parse_positive_int(rows, "rows"), parse_positive_int(cols, "cols")
    params = r * c
    if conv.shape == "factored":
        return conv.momentum * params + _FACTOR_BYTES * (r + c)
    if conv.shape == "kronecker":
        rs, cs = _blocks(r, SHAMPOO_BLOCK), _blocks(c, SHAMPOO_BLOCK)
        squares = len(cs) * sum(b * b for b in rs) + len(rs) * sum(b * b for b in cs)
        elementwise = conv.momentum + conv.variance - KRONECKER_BYTES_PER_PARAM
        return elementwise * params + 2 * _FACTOR_BYTES * squares
    if conv.shape == "eigenbasis":
        squares = sum(d * d for d in (r, c) if d <= SOAP_MAX_DIM)
        elementwise = conv.momentum + conv.variance - KRONECKER_BYTES_PER_PARAM
        return elementwise * params + 2 * _FACTOR_BYTES * squares
    return (conv.momentum + conv.variance) * params


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
    """``(value, label)`` pairs for a calculator's convention select: every convention, in table order.

    Old names ([`CONVENTION_ALIASES`][calc.memory.model_state.CONVENTION_ALIASES]) are not listed: a reader
    chooses among current conventions only, while [`resolve_convention`][calc.memory.model_state.resolve_convention]
    still accepts an old name typed or linked.

    Examples:
        >>> convention_options()[0]
        ('mixed-adam-16', 'Mixed precision + Adam, 16 B/param (2+2+4+4+4)')
        >>> "bf16-adam-fused-10" in dict(convention_options())
        False
    """
    return tuple((c.name, c.label) for c in CONVENTIONS.values())
