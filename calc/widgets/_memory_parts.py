"""A training peak split into the parts each change to its layout scales (issue 19's diagnosis).

[`peak_parts`][calc.widgets._memory_parts.peak_parts] splits the busiest GPU's peak
([`PeakMemory`][calc.memory.overheads.PeakMemory]) into each model-state component, the activations and logits,
the backward- and step-phase transients, the allocator's reserve (a fraction of what is allocated) and what lives
outside PyTorch's allocator; [`Parts.nvidia_smi_bytes`][calc.widgets._memory_parts.Parts] adds them up as
[`peak_memory`][calc.memory.overheads.peak_memory] does. [`zero_parts`][calc.widgets._memory_parts.zero_parts]
reshards the model states under another ZeRO stage over more ranks: ZeRO shards each component over the
data-parallel ranks from its stage on (Rajbhandari et al. 2020, Sec. 5), so each scales exactly as ``1/dp``.
``calc.widgets._memory_fixes`` predicts each change's peak from these parts before it asks the engine.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction

from calc.memory.layout import Layout
from calc.memory.overheads import PeakMemory

__all__ = ["PER_TOKEN", "SHARDED_FROM", "Parts", "biggest_part", "gathered_bytes", "peak_parts", "zero_parts"]

SHARDED_FROM = {"master": 1, "momentum": 1, "variance": 1, "gradients": 2, "weights": 3}
"""The ZeRO stage from which each model-state component is sharded over the data-parallel ranks (Rajbhandari et
al. 2020, Sec. 5.1-5.3; ``calc.memory.per_gpu``)."""

PER_TOKEN = frozenset({"loss_logits", "recomputed_layer", "moe_routing_imbalance"})
"""The backward-phase overheads that grow with the micro-batch's tokens on the GPU (``calc.memory.overhead_items``);
the others (ZeRO-3's gathered layers, FSDP's unsharded stage) grow with the parameters."""


@dataclass(frozen=True)
class Parts:
    """A peak split into what each change scales.

    Attributes:
        state: Bytes of each model-state component (``weights``, ``gradients``, ``master``, ``momentum``,
            ``variance``).
        activations: Activations kept for the backward.
        logits: The output layer's kept tensors (fp32 logits for the loss).
        per_token: Backward-phase transients that grow with the tokens (the loss's, the recomputed layer's).
        per_param: Other backward-phase transients (ZeRO-3's gathered layers).
        step: Step-phase transients (the foreach optimizer's moment-sized temporary).
        always: Allocated the whole step (quantized weight copies).
        reserve: Reserved over allocated (the caching allocator's share).
        outside: Outside PyTorch's allocator (CUDA context, NCCL buffers).
    """

    state: Mapping[str, int]
    activations: int
    logits: int
    per_token: int
    per_param: int
    step: int
    always: int
    reserve: Fraction
    outside: int

    @property
    def nvidia_smi_bytes(self) -> int:
        """The peak these parts make, as [`peak_memory`][calc.memory.overheads.peak_memory] adds them up."""
        backward = self.activations + self.logits + self.per_token + self.per_param
        allocated = sum(self.state.values()) + self.always + max(backward, self.step)
        return _ceil_times(allocated, self.reserve) + self.outside

    def scaled(self, state: Fraction, tokens: Fraction, activations: Fraction | None = None) -> Parts:
        """Model states (and what grows with them) times ``state``; activations (or ``activations``), logits and
        the per-token transients times ``tokens``."""
        acts = tokens if activations is None else activations
        return Parts(
            state={k: _ceil_times(x, state) for k, x in self.state.items()},
            activations=_ceil_times(self.activations, acts),
            logits=_ceil_times(self.logits, tokens),
            per_token=_ceil_times(self.per_token, tokens),
            per_param=_ceil_times(self.per_param, state),
            step=_ceil_times(self.step, state),
            always=self.always,
            reserve=self.reserve,
            outside=self.outside,
        )


def _ceil_times(x: int, f: Fraction) -> int:
    """``math.ceil(x * f)`` for whole bytes ``x``, in integers (a diagnosis scales some 20 parts per render; Fraction
    arithmetic made up a quarter of training-memory's render).

    Examples:
        >>> _ceil_times(10, Fraction(1, 3)), _ceil_times(9, Fraction(1, 3)), _ceil_times(7, Fraction(0))
        (4, 3, 0)
    """
    return -(-x * f.numerator // f.denominator)


def peak_parts(p: PeakMemory) -> Parts:
    """The parts of a peak each change scales; they add up to its ``nvidia-smi`` bytes.

    Examples:
        >>> from calc.memory.overheads import peak_memory
        >>> from calc.models.presets import preset
        >>> p = peak_memory(preset("llama3-8b"), Layout(dp=8, zero_stage=3, seq_len=4096))
        >>> peak_parts(p).nvidia_smi_bytes == p.nvidia_smi_bytes
        True
    """
    m = p.memory

    def phase(name: str, per_token: bool | None = None) -> int:
        return sum(
            o.bytes
            for o in p.overheads
            if o.counted_in == "allocated" and o.phase == name and per_token in (None, o.name in PER_TOKEN)
        )

    return Parts(
        state={k: getattr(m, k) for k in SHARDED_FROM},
        activations=m.activations,
        logits=m.logits,
        per_token=phase("backward", True),
        per_param=phase("backward", False),
        step=phase("step"),
        always=phase("always"),
        reserve=Fraction(p.reserved_bytes, p.allocated_bytes) if p.allocated_bytes else Fraction(1),
        outside=p.nvidia_smi_bytes - p.reserved_bytes,
    )


def biggest_part(p: PeakMemory) -> tuple[str, int]:
    """The largest of the four parts of a peak (``model states``, ``activations``, ``logits``, ``overheads``) and
    its bytes.

    Examples:
        >>> from calc.memory.overheads import peak_memory
        >>> from calc.models.presets import preset
        >>> biggest_part(peak_memory(preset("llama3.1-405b"), Layout(dp=8, seq_len=4096)))[0]
        'model states'
    """
    m = p.memory
    parts = {
        "model states": m.model_state,
        "activations": m.activations,
        "logits": m.logits,
        "overheads": p.nvidia_smi_bytes - m.total,
    }
    name = max(parts, key=lambda k: parts[k])
    return name, parts[name]


def zero_parts(parts: Parts, layout: Layout, stage: int, times: int, gathered: int) -> Parts:
    """``parts`` (of a peak on ``layout``) under ZeRO ``stage`` over ``times`` the layout's data-parallel ranks: each
    component sharded from its stage on is ``1/ranks`` of the whole (the step's temporary is one sharded moment), and
    ZeRO-3 adds ``gathered`` (its gathered layers) where it was not already counted.

    Examples:
        >>> from calc.memory.overheads import peak_memory
        >>> from calc.models.presets import preset
        >>> layout = Layout(dp=8, zero_stage=0, seq_len=4096)
        >>> parts = peak_parts(peak_memory(preset("llama3-8b"), layout))
        >>> z3 = zero_parts(parts, layout, 3, 2, 0)
        >>> z3.state["weights"] * 16 == parts.state["weights"], z3.state["master"] * 16 == parts.state["master"]
        (True, True)
    """
    z0, r0 = layout.effective_zero_stage, layout.zero_ranks
    state = {}
    for k, x in parts.state.items():
        whole = x * r0 if z0 >= SHARDED_FROM[k] else x
        state[k] = -(-whole // (r0 * times)) if stage >= SHARDED_FROM[k] else whole
    new = stage == 3 and r0 * times > 1 and not (z0 == 3 and r0 > 1)
    step = state["momentum"] if parts.step else 0
    return replace(parts, state=state, step=step, per_param=parts.per_param + (gathered if new else 0))


def gathered_bytes(arch, p: PeakMemory, layout: Layout) -> int:
    """ZeRO-3's gathered units on the GPU of peak ``p``, estimated: three of the largest unit (a layer, or the
    embedding on the first and last stages), as ``calc.memory.overhead_items`` counts them.

    Examples:
        >>> from calc.memory.overheads import peak_memory
        >>> from calc.models.presets import preset
        >>> layout = Layout(dp=8, zero_stage=3, seq_len=4096)
        >>> p = peak_memory(preset("llama3-8b"), layout)
        >>> engine = next(o.bytes for o in p.overheads if o.name == "zero3_gathered")
        >>> abs(gathered_bytes(preset("llama3-8b"), p, layout) - engine) <= engine // 100
        True
    """
    m = p.memory
    whole = m.weights * (layout.zero_ranks if layout.effective_zero_stage == 3 else 1)
    per_param = Fraction(whole, m.params) if m.params else Fraction(0)
    unit = Fraction(whole, max(m.layers, 1))
    if m.stage in (0, layout.pp - 1):
        unit = max(unit, arch.vocab_size * arch.hidden_size // layout.tp * per_param)
    return math.ceil(3 * unit)
