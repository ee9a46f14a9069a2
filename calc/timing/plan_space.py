"""Which layouts the planner searches: the ``tp``, ``pp`` and ``cp`` degrees, the interleavings and the layers on
each stage, under the rules of the framework that runs them (behind ``calc.timing.plan_search.candidates``).

* ``CP_LIMITS``: the context-parallel degrees searched by sequence length; below 32K a CP layout is ranked only
  where it pays (``SHORT_CP_GAIN``).
* ``PIPELINE_RULES``: how a framework may split the layers. ``"current"``: Megatron-Core's uneven splits, any
  interleaving that gives every chunk a layer, the embedding and the loss in slots of their own. ``"megatron-2021"``:
  Megatron-LM as Narayanan et al. 2021 ran it (a8d172b, 2021-04-28): ``megatron/model/transformer.py`` asserts
  ``num_layers % pipeline_model_parallel_size == 0`` and, interleaved, layers per stage divisible by layers per
  virtual stage; ``megatron/arguments.py`` asserts ``pipeline_model_parallel_size > 2`` for the interleaved schedule.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from calc.errors import CalcError
from calc.memory.layout import Layout
from calc.timing.steptime import _even_split

if TYPE_CHECKING:
    from calc.timing.plan_search import _Ctx

__all__ = ["CP_LIMITS", "LONG_CP", "PIPELINE_RULES", "SHORT_CP_GAIN", "cp_limit", "share_below_one", "short_cp"]

PIPELINE_RULES: tuple[str, ...] = ("current", "megatron-2021")
"""How the framework may split the layers into stages (module docstring); ``plan(pipeline_rules=...)``."""

CP_LIMITS: tuple[tuple[int, int], ...] = ((32768, 16), (8192, 2))
"""The largest context-parallel degree searched (Megatron-LM only), by the shortest sequence it applies from: up
to 16 from 32K tokens, up to 2 from 8K, none below.

CP 2 at 8K is NVIDIA's tuned H100 practice (``llama3.1/llama3.1_{8b,70b,405b}.yaml`` at NVIDIA/dgxc-benchmarking
1b9bb6b, rows ``dgxc25-*`` of ``validation/published``): for Llama 3.1 405B on 576 and 2,304 GPUs the engine times
it well over 5% faster than the best layout without CP. Llama 3 did not split 8K (Dubey et al. 2024, Table 4: TP8
PP16 DP128 on 16,384 GPUs), where CP 2 would save less (``tests/test_planner.py`` holds both). Below ``LONG_CP``
tokens a CP layout is therefore ranked
only where it beats the fastest layout without CP by more than [`SHORT_CP_GAIN`][]; searched up to 16 at 8K, the
planner traded TP for CP 4 to 16, which no published 8K run uses."""

LONG_CP: int = 32768
"""From this many tokens, context parallelism is ranked like any other degree (Llama 3 at 128K: CP 16)."""

SHORT_CP_GAIN: float = 0.05
"""Below ``LONG_CP`` tokens, the share of the step a CP layout must save over the fastest layout without CP to be
ranked (``plan(short_cp_gain=...)``). 5% is issue 21's band within which a published layout counts as the
planner's equal: a smaller gain is inside the engine's error on published runs (``validation/published``), and
does not pay for another process group and the ring-attention code path (Meta's choice at 8K, Table 4)."""


def share_below_one(value: object, name: str) -> float:
    """``value`` as a share from 0 up to, not including, 1 (``safety_margin``, ``short_cp_gain``); else the error.

    Examples:
        >>> share_below_one(0.05, "short_cp_gain")
        0.05
        >>> share_below_one("lots", "short_cp_gain")
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: short_cp_gain must be a number from 0 to below 1 (got 'lots')
    """
    try:
        share = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        share = math.nan
    if isinstance(value, bool) or not 0 <= share < 1:
        raise CalcError(name, "must be a number from 0 to below 1", value)
    return share


def short_cp(seq_len: int, cp: int) -> bool:
    """Whether a ``cp``-way split of ``seq_len`` tokens is ranked only where it pays (``SHORT_CP_GAIN``).

    Examples:
        >>> short_cp(8192, 2), short_cp(8192, 1), short_cp(131072, 16)
        (True, False, False)
    """
    return cp > 1 and seq_len < LONG_CP


def cp_limit(seq_len: int) -> int:
    """The largest CP degree the planner searches at ``seq_len`` (`CP_LIMITS`).

    Examples:
        >>> cp_limit(4096), cp_limit(8192), cp_limit(131072)
        (1, 2, 16)
    """
    return next((cp for start, cp in CP_LIMITS if seq_len >= start), 1)


def _divisors(n: int) -> list[int]:
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted(set(small + [n // d for d in small]))


def _search_space(x: _Ctx) -> tuple[list[int], list[int], list[int]]:
    """The ``tp``, ``pp`` and ``cp`` degrees searched (module docstring, step 1); what is left out is counted."""
    arch, pins = x.arch, x.pins
    divs = _divisors(x.n)
    if pins["tp"]:
        tps = [pins["tp"]]
    else:
        tps = [t for t in divs if t <= x.gpn or x.allow_tp_across_nodes]
        if len(divs) > len(tps):
            x.pruned[f"tp beyond the {x.gpn}-GPU NVLink domain"] += len(divs) - len(tps)
    heads = [t for t in tps if arch.num_heads % t == 0 and (arch.uses_mla or arch.num_kv_heads % t == 0)]
    if len(tps) > len(heads):
        x.pruned["tp does not divide the attention or KV heads"] += len(tps) - len(heads)
    if x.impl != "megatron" and not pins["tp"]:  # calc.memory.activation_layer refuses the rest for these
        x.pruned[f"tp > 1: the {x.impl} profiles are stock transformers on one GPU"] += len(heads) - (1 in heads)
        heads = [t for t in heads if t == 1]
    pps = [pins["pp"]] if pins["pp"] else [p for p in divs if p <= arch.num_layers]
    if x.pipeline_rules == "megatron-2021" and not pins["pp"]:
        even = [p for p in pps if arch.num_layers % p == 0]
        x.pruned["pp does not divide the layers (Megatron-LM's 2021 rules)"] += len(pps) - len(even)
        pps = even
    if pins["cp"]:
        cps = [pins["cp"]]
    else:
        most = cp_limit(x.s) if x.impl == "megatron" else 1
        cps = [c for c in divs if c == 1 or (c <= most and x.s % (2 * c) == 0)]
    return heads, pps, cps


def _slot_flags(on: bool) -> dict[str, bool]:
    """Megatron-Core's embedding and loss slots, on for a split of more virtual stages than layers."""
    return {"account_for_embedding_in_pipeline_split": on, "account_for_loss_in_pipeline_split": on}


def _interleaves(x: _Ctx, p: int, m: int) -> list[int]:
    """Model chunks per stage searched: 1 up to ``layers / pp`` (every chunk at least one layer), when the
    micro-batches are a multiple of ``pp`` (Megatron-LM's interleaved schedule needs it). Under Megatron-LM, one
    more where ``pp`` divides ``layers + 2``: one layer per virtual stage with the embedding and the loss each in a
    slot of their own (``account_for_*_in_pipeline_split``, Llama 3 405B's 16 × 8 chunks), the only split of
    ``pp × v`` above the layers; any smaller ``v`` the slots allow splits as the weighted rule already does. Under
    ``pipeline_rules="megatron-2021"``: only on more than 2 stages and with ``v`` dividing the layers per stage."""
    if x.pins["interleave"]:
        return [x.pins["interleave"]]
    if p == 1:
        return [1]
    if m % p:
        x.pruned["interleaving needs the micro-batches a multiple of pp"] += 1
        return [1]
    layers = x.arch.num_layers
    if x.pipeline_rules == "megatron-2021":
        if p <= 2:
            x.pruned["interleaving needs more than 2 stages (Megatron-LM's 2021 rules)"] += 1
            return [1]
        return [v for v in range(1, layers // p + 1) if (layers // p) % v == 0]
    slotted = [(layers + 2) // p] if x.stack == "megatron" and (layers + 2) % p == 0 and p * 2 <= layers + 2 else []
    return list(range(1, layers // p + 1)) + [v for v in slotted if p * v > layers]


def _counts(x: _Ctx, p: int, v: int) -> tuple[int, ...]:
    """Layers per stage as the layout's rules place them (``calc.memory.layout``), else as even as they go."""
    key = (p, v)
    if key not in x.splits:
        try:
            slots = _slot_flags(p * v > x.arch.num_layers)
            counts = Layout(pp=p, interleave=v, **slots).stage_layer_counts(x.arch.num_layers)
        except CalcError:
            counts = ()
        ok = len(counts) == p and sum(counts) == x.arch.num_layers
        x.splits[key] = tuple(counts) if ok else _even_split(x.arch.num_layers, p)
    return x.splits[key]
