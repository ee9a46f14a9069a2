"""MoE routing imbalance: how many tokens an expert-parallel rank's experts receive, as a range.

The activations of an MoE layer's routed experts grow with the tokens routed to them, and the
router decides that at run time. Balanced routing (every expert receives ``T·k/E`` of ``T``
tokens routed to ``k`` of ``E`` experts) is the lower end of the range, never a promise:

* with a **capacity factor** ``C`` (GShard, Lepikhin et al. 2020, arXiv:2006.16668, Sec. 2.2;
  Switch Transformer, Fedus et al. 2021, arXiv:2101.03961, Sec. 2.2: "expert capacity =
  tokens per batch / number of experts × capacity factor"), an expert takes at most ``C`` times
  its balanced share and drops the rest, so the worst case is ``C × balanced``;
* **dropless** (Megatron-LM's default, ``--moe-expert-capacity-factor`` unset; MegaBlocks,
  Gale et al. 2022, arXiv:2211.15841), nothing caps an expert: in the worst case every token of
  the expert-parallel group picks this rank's experts, at most ``min(k, E/ep)`` of them each.

[`expert_layer_activation_range`][calc.memory.moe_routing.expert_layer_activation_range] applies the
range to the routed-expert part of a layer's activations from
[`layer_activations`][calc.memory.activations.layer_activations].
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from calc.errors import CalcError
from calc.memory.activations import LayerActivations
from calc.memory.layout import Layout, layout_stages
from calc.memory.per_gpu import _layer_kinds
from calc.memory.stage_plan import stage_plan
from calc.models.architecture import Architecture
from calc.units import parse_positive_int

__all__ = [
    "ActivationRange",
    "TokenRange",
    "activation_range",
    "expert_layer_activation_range",
    "expert_tokens",
    "stage_activation_ranges",
]


@dataclass(frozen=True)
class TokenRange:
    """Token-expert assignments one expert-parallel rank processes in one MoE layer, for one micro-batch.

    Attributes:
        balanced: Under perfectly balanced routing (the lower end).
        worst: Under the worst routing the capacity rule allows (the upper end).
        capacity_factor: The capacity factor, or ``None`` when dropless.
    """

    balanced: int
    worst: int
    capacity_factor: Fraction | None

    @property
    def ratio(self) -> Fraction:
        """``worst / balanced``: how much larger the expert activations can get than balanced.

        Examples:
            >>> expert_tokens(4096, 8, 2, ep=8, capacity_factor=1.25).ratio
            Fraction(5, 4)
        """
        return Fraction(self.worst, self.balanced) if self.balanced else Fraction(1)


def _capacity(value: float | int | str | None) -> Fraction | None:
    if value is None:
        return None
    try:
        c = Fraction(str(value).strip())
    except (ValueError, ZeroDivisionError):
        raise CalcError("capacity_factor", "must be a number of at least 1, or none (dropless)", value) from None
    if c < 1 or c > 1024:
        raise CalcError("capacity_factor", "must be from 1 to 1024, or none (dropless)", value)
    return c


def expert_tokens(
    tokens: int,
    experts: int,
    experts_per_token: int,
    *,
    ep: int = 1,
    capacity_factor: float | int | str | None = None,
) -> TokenRange:
    """The range of token-expert assignments one expert-parallel rank processes.

    Each of the ``ep`` ranks dispatches its ``tokens`` (``T``) to ``k`` of ``E`` experts and holds
    ``E/ep`` of them. Balanced, each rank receives ``T·k`` assignments. With a capacity factor
    ``C`` each expert accepts at most ``ceil(C·T·ep·k/E)`` (GShard / Switch), so the rank at most
    ``E/ep`` times that; dropless, at most ``T·ep·min(k, E/ep)`` (every token of the group, each
    choosing as many of this rank's experts as it can).

    Args:
        tokens: Tokens per micro-batch on each rank (after context-parallel splitting).
        experts: Routed experts ``E``.
        experts_per_token: Experts each token is routed to, ``k``.
        ep: Expert-parallel degree (divides ``E``).
        capacity_factor: ``C`` (at least 1), or ``None`` for dropless routing.

    Raises:
        CalcError: Naming the field at fault.

    Examples:
        >>> r = expert_tokens(4096, 8, 2, ep=8)  # Mixtral, dropless: every token could pick this expert
        >>> r.balanced, r.worst
        (8192, 32768)
        >>> expert_tokens(4096, 256, 8, ep=64, capacity_factor=1).worst  # DeepSeek-V3-like, no slack
        32768
    """
    t = parse_positive_int(tokens, "tokens")
    e = parse_positive_int(experts, "experts")
    k = parse_positive_int(experts_per_token, "experts_per_token", maximum=e)
    ranks = parse_positive_int(ep, "ep")
    if e % ranks:
        raise CalcError("ep", f"must divide the experts (experts={e})", ranks, code="not-divisible")
    c = _capacity(capacity_factor)
    balanced = t * k
    local = e // ranks
    dropless = t * ranks * min(k, local)
    if c is None:
        return TokenRange(balanced, dropless, None)
    per_expert = -(-(c * t * ranks * k).numerator // ((c * t * ranks * k).denominator * e))
    return TokenRange(balanced, min(dropless, local * per_expert), c)


def expert_layer_activation_range(
    layer: LayerActivations,
    tokens: TokenRange,
    *,
    experts_per_token: int,
    shared_experts: int = 0,
) -> tuple[int, int]:
    """``(balanced, worst)`` activation bytes of one MoE layer on one GPU, for one micro-batch.

    The routed experts' share of the MLP terms (hidden, activation output and unfused
    intermediates, in proportion ``k / (k + shared)``) scales with the routed tokens, so it is
    multiplied by [`TokenRange.ratio`][calc.memory.moe_routing.TokenRange.ratio] for the worst case;
    attention, norms, the router and the shared experts do not change. The dispatched copies of
    the MLP input (``mlp_input``) are kept at their balanced size (not modelled: they grow too).

    Examples:
        >>> from calc.memory.activations import layer_activations
        >>> layer = layer_activations(4096, 1, 4096, 32, kv_heads=8, ffn_hidden=14336, mlp="swiglu",
        ...                           experts_per_token=2, dropout=False, flash_attention=True)
        >>> low, high = expert_layer_activation_range(layer, expert_tokens(4096, 8, 2, ep=8),
        ...                                           experts_per_token=2)
        >>> low == layer.total, high > low
        (True, True)
    """
    k = parse_positive_int(experts_per_token, "experts_per_token")
    shared = parse_positive_int(shared_experts, "shared_experts", minimum=0)
    routed = Fraction(k, k + shared) * (layer.mlp_hidden + layer.mlp_activation_output + layer.mlp_intermediates)
    extra = routed * (tokens.ratio - 1)
    return layer.total, layer.total + -(-extra.numerator // extra.denominator)


@dataclass(frozen=True)
class ActivationRange:
    """Activation bytes of the busiest GPU under balanced and worst-case routing.

    Attributes:
        stage: The pipeline stage of the GPU with the largest worst case.
        balanced: Its activations (``LayoutMemory.activations``) under balanced routing.
        worst: The same under the worst routing the capacity rule allows.
        tokens: The per-layer [`TokenRange`][calc.memory.moe_routing.TokenRange] of one micro-batch.
    """

    stage: int
    balanced: int
    worst: int
    tokens: TokenRange


def activation_range(
    arch: Architecture, layout: Layout, *, capacity_factor: float | int | str | None = None
) -> ActivationRange:
    """Per-GPU activations of an MoE model as a range: balanced routing to the worst case.

    Each MoE layer of a stage adds its
    [`expert_layer_activation_range`][calc.memory.moe_routing.expert_layer_activation_range]
    excess, times the micro-batches in flight on the stage (as
    [`stage_activations`][calc.memory.activations.stage_activations] counts them); every stage is
    evaluated ([`stage_activation_ranges`][calc.memory.moe_routing.stage_activation_ranges]) and the one
    with the largest worst case reported. A dense model's range is one number.

    Raises:
        CalcError: When the layout cannot run the model, or on a bad capacity factor.

    Examples:
        >>> from calc.models.presets import preset
        >>> r = activation_range(preset("mixtral-8x7b"), Layout(dp=8, ep=8, seq_len=4096, flash_attention=True,
        ...                      dropout=False))
        >>> r.tokens.balanced, r.tokens.worst, r.worst > r.balanced
        (8192, 32768, True)
        >>> r = activation_range(preset("llama3-8b"), Layout(seq_len=1024))
        >>> r.balanced == r.worst
        True
    """
    ranges = stage_activation_ranges(arch, layout, capacity_factor=capacity_factor)
    best = ranges[0]
    for r in ranges[1:]:
        if r.worst > best.worst:
            best = r
    return best


def stage_activation_ranges(
    arch: Architecture, layout: Layout, *, capacity_factor: float | int | str | None = None
) -> tuple[ActivationRange, ...]:
    """[`activation_range`][calc.memory.moe_routing.activation_range] of every pipeline stage, first to last.

    Examples:
        >>> from calc.models.presets import preset
        >>> arch, one_rank = preset("mixtral-8x7b"), Layout(pp=2, seq_len=512)  # ep=1: a rank holds every expert
        >>> [r.worst > r.balanced for r in stage_activation_ranges(arch, one_rank)]
        [False, False]
        >>> [r.worst > r.balanced for r in stage_activation_ranges(arch, Layout(pp=2, dp=2, ep=2, seq_len=512))]
        [True, True]
    """
    _capacity(capacity_factor)  # validate before the layout work
    stages = layout_stages(arch, layout)
    if not arch.is_moe:
        return tuple(ActivationRange(m.stage, m.activations, m.activations, TokenRange(0, 0, None)) for m in stages)
    tokens = -(-layout.seq_len // layout.cp) * layout.micro_batch
    per_token = arch.experts_per_token
    r = expert_tokens(tokens, arch.num_experts, per_token, ep=layout.ep, capacity_factor=capacity_factor)
    moe = _layer_kinds(arch, layout)[True]
    low, high = expert_layer_activation_range(
        moe, r, experts_per_token=per_token, shared_experts=arch.num_shared_experts
    )
    plan = stage_plan(arch, layout)
    out = []
    for m in stages:
        moe_layers = sum(arch.is_moe_layer(i) for i in plan.layers[m.stage])
        extra = Fraction((high - low) * moe_layers * m.in_flight, layout.interleave)
        out.append(ActivationRange(m.stage, m.activations, m.activations + -(-extra.numerator // extra.denominator), r))
    return tuple(out)
