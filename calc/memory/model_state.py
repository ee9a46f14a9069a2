"""Model-state memory: weights, gradients and optimizer states, per GPU, under ZeRO.

The bytes each parameter costs depend on precision and optimizer; these are
named *conventions*, because published estimators disagree on which bytes to
count (16 in the ZeRO paper, 18 in Megatron-LM, 20 in DeepSpeed's ZeRO-2
estimator). ZeRO sharding follows Rajbhandari et al. 2020 (arXiv:1910.02054),
Sec. 5.1-5.3: stage 1 shards the optimizer states (fp32 master weights,
momentum, variance) over the data-parallel ranks, stage 2 also the gradients,
stage 3 also the weights.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, fields

from calc.errors import CalcError
from calc.memory.conventions import (
    COMPONENTS,
    CONVENTION_ALIASES,
    CONVENTIONS,
    Convention,
    Split,
    convention_options,
    resolve_convention,
)
from calc.units import parse_count, parse_positive_int

__all__ = [
    "COMPONENTS",
    "CONVENTIONS",
    "CONVENTION_ALIASES",
    "Convention",
    "ModelState",
    "SHARD_MODES",
    "Split",
    "busiest_shard",
    "convention_options",
    "model_state_bytes",
    "resolve_convention",
    "smallest_fitting_layout",
]


@dataclass(frozen=True)
class ModelState:
    """Per-GPU bytes of model state, by component. All fields are exact integer bytes.

    Attributes:
        weights: Working weights held by this GPU.
        gradients: Gradients held by this GPU.
        master: fp32 master weights held by this GPU.
        momentum: First optimizer moment held by this GPU.
        variance: Second optimizer moment held by this GPU.
    """

    weights: int
    gradients: int
    master: int
    momentum: int
    variance: int

    @property
    def total(self) -> int:
        """Sum of all components, in bytes per GPU."""
        return sum(getattr(self, f.name) for f in fields(self))

    def as_dict(self) -> dict[str, int]:
        """The components and the total as a plain ``dict`` (for JSON and the CLI).

        Examples:
            >>> model_state_bytes(1000).as_dict()["total"]
            16000
        """
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["total"] = self.total
        return out


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


SHARD_MODES: tuple[str, ...] = ("even", "fsdp2", "whole-tensor")
"""How sharded states are split over ranks, for the busiest rank's share
([`busiest_shard`][calc.memory.model_state.busiest_shard])."""


def busiest_shard(tensors: Sequence[tuple[int, int]], ranks: int, mode: str = "even") -> int:
    """Elements the busiest of ``ranks`` ranks holds when ``tensors`` are sharded as ``mode`` does.

    * ``"even"``: the ZeRO paper's ``ceil(Ψ / N_d)`` (Rajbhandari et al. 2020, Sec. 5), a lower bound.
    * ``"fsdp2"``: PyTorch FSDP2 (``fully_shard``) chunks every tensor on dim 0 with
      ``torch.chunk`` and pads each rank's chunk to the first one's size
      (``torch/distributed/fsdp/_fully_shard/_fsdp_param.py``: ``padded_sharded_param_size =
      chunks[0].size()``), so the busiest rank holds ``Σ ceil(d0 / N) × numel / d0``.
    * ``"whole-tensor"``: ``torch.distributed.optim.ZeroRedundancyOptimizer`` keeps whole
      tensors: sorted by size, largest first, each goes to the rank with the smallest total so far
      (``_partition_parameters``, ties to the lowest rank); the busiest rank's total.

    Args:
        tensors: ``(dim0, numel)`` of each tensor.
        ranks: The ranks sharing them.
        mode: One of [`SHARD_MODES`][calc.memory.model_state.SHARD_MODES].

    Raises:
        CalcError: On an unknown mode (field ``shard``) or a bad rank count.

    Examples:
        >>> t = [(10, 100), (3, 3), (1, 7)]  # 110 elements
        >>> busiest_shard(t, 4), busiest_shard(t, 4, "fsdp2"), busiest_shard(t, 4, "whole-tensor")
        (28, 38, 100)
    """
    n = parse_positive_int(ranks, "ranks")
    if mode not in SHARD_MODES:
        raise CalcError("shard", f"must be one of {', '.join(SHARD_MODES)}", mode, code="unknown-name")
    if mode == "even" or n == 1:
        return _ceil_div(sum(numel for _, numel in tensors), n)
    if mode == "fsdp2":
        return sum(_ceil_div(d0, n) * (numel // d0) for d0, numel in tensors if d0)
    sizes = sorted((numel for _, numel in tensors), reverse=True)
    if n >= len(sizes):
        return sizes[0] if sizes else 0
    heap = [(0, r) for r in range(n)]
    for size in sizes:
        total, rank = heapq.heappop(heap)
        heapq.heappush(heap, (total + size, rank))
    return max(total for total, _ in heap)


def model_state_bytes(
    params: int | float | str,
    *,
    zero_stage: int = 0,
    dp: int = 1,
    convention: str = "mixed-adam-16",
    split: str | None = None,
) -> ModelState:
    """Model-state bytes per GPU for ``params`` parameters under a ZeRO stage.

    ZeRO (Rajbhandari et al. 2020, arXiv:1910.02054), Sec. 5.1-5.3 and Table 1:
    with N_d data-parallel ranks, stage 1 (P_os) stores ``4Ψ + 12Ψ/N_d`` bytes,
    stage 2 (P_os+g) ``2Ψ + 14Ψ/N_d`` and stage 3 (P_os+g+p) ``16Ψ/N_d``, for the
    16 B/param convention. A sharded component holds ``ceil(Ψ / N_d)`` elements
    per rank, so the per-GPU bytes times ``dp`` never undercount the whole.

    Args:
        params: Parameter count Ψ (``7e9``, ``"7B"``...).
        zero_stage: 0 (plain data parallel), 1, 2 or 3.
        dp: Data-parallel degree N_d, the number of ranks the states are sharded over.
        convention: A key of [`CONVENTIONS`][calc.memory.model_state.CONVENTIONS] (or an old name).
        split: A framework whose [`Split`][calc.memory.model_state.Split] of the convention to use
            (``"fsdp2"`` for ``mixed-adam-16``); ``None`` uses the convention's own components.

    Returns:
        The per-GPU [`ModelState`][calc.memory.model_state.ModelState].

    Raises:
        CalcError: On a bad parameter count, stage, degree or convention.

    Examples:
        >>> model_state_bytes(7.5e9, zero_stage=1, dp=64).total
        31406250000
        >>> from calc.units import format_bytes
        >>> format_bytes(model_state_bytes(7.5e9, zero_stage=1, dp=64).total)
        '31.4 GB'
        >>> format_bytes(model_state_bytes("7B").total)
        '112 GB'
        >>> model_state_bytes("7B", zero_stage=4)
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: zero_stage must be a whole number from 0 to 3 (got 4)
        >>> s = model_state_bytes(1000, zero_stage=3, dp=4, split="fsdp2")  # FSDP2 bf16 mixed precision
        >>> s.weights, s.gradients, s.master, s.total
        (1000, 1000, 0, 4000)
    """
    n = parse_count(params, "params")
    stage = parse_positive_int(zero_stage, "zero_stage", minimum=0, maximum=3)
    ranks = parse_positive_int(dp, "dp")
    conv = resolve_convention(convention)
    if split is not None:
        conv = conv.split(split)
    shard = _ceil_div(n, ranks)
    sharded = {
        "master": stage >= 1,
        "momentum": stage >= 1,
        "variance": stage >= 1,
        "gradients": stage >= 2,
        "weights": stage >= 3,
    }
    return ModelState(**{name: (shard if sharded[name] else n) * getattr(conv, name) for name in COMPONENTS})


def smallest_fitting_layout(
    params: int | float | str,
    memory_bytes: int,
    *,
    convention: str = "mixed-adam-16",
    max_dp: int = 1 << 20,
) -> tuple[int, int] | None:
    """The lowest ZeRO stage, and for it the smallest ``dp``, whose model state fits in ``memory_bytes``.

    Stages are tried in order 0, 1, 2, 3 (cheapest communication first, ZeRO Sec. 7);
    for each, per-GPU memory only falls as ``dp`` grows, so the smallest fitting
    degree is found by bisection.

    Args:
        params: Parameter count.
        memory_bytes: Bytes available per GPU for model state.
        convention: A key of [`CONVENTIONS`][calc.memory.model_state.CONVENTIONS].
        max_dp: The largest data-parallel degree considered.

    Returns:
        ``(zero_stage, dp)``, or ``None`` when nothing up to ``max_dp`` fits.

    Examples:
        >>> smallest_fitting_layout("7B", 80 * 10**9)
        (1, 2)
        >>> smallest_fitting_layout("70B", 80 * 10**9)
        (3, 14)
    """

    def fits(stage: int, ranks: int) -> bool:
        return model_state_bytes(params, zero_stage=stage, dp=ranks, convention=convention).total <= memory_bytes

    for stage in range(4):
        if not fits(stage, max_dp):
            continue
        lo, hi = 1, max_dp
        while lo < hi:
            mid = (lo + hi) // 2
            if fits(stage, mid):
                hi = mid
            else:
                lo = mid + 1
        return stage, lo
    return None
