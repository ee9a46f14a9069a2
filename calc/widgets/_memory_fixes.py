"""Why a training layout does not fit, and the cheapest changes that make it fit (issue 19).

The training-memory calculator's "Does not fit" names the biggest part of the busiest GPU's memory (model
states, activations, the output layer's logits and loss, or the overheads) with its bytes, and tries, with the
engine, one change at a time: a higher ZeRO stage over the smallest data-parallel degree that shards the model
states enough, full recomputation, tensor parallelism (with sequence parallelism), pipeline parallelism. When no
single change fits, ZeRO with full recomputation together. Each change that fits is a link that opens the
calculator with the reader's inputs and the change (the shared mechanism of [`calc.widgets._diagnosis`][]).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

from calc.errors import CalcError
from calc.memory.overheads import PeakMemory
from calc.widgets._diagnosis import TRAINING_MEMORY, diagnosis, handoff, handoff_href

__all__ = ["biggest_part", "memory_fixes"]

Peak = Callable[[dict[str, str]], int]
"""The ``nvidia-smi`` bytes of the busiest GPU for a calculator's values (raises ``CalcError`` on bad ones)."""

_MAX_DP = 1 << 20
_MAX_TP = 8
"""Tensor parallelism is tried up to a node of eight GPUs (NVLink), where Megatron-LM keeps it (Narayanan et al.
2021, Sec. 3.2)."""

_SHOWN = 4
"""At most this many changes are offered, cheapest first."""


def biggest_part(p: PeakMemory) -> tuple[str, int]:
    """The largest of the four parts of a peak, in words, and its bytes.

    Examples:
        >>> from calc.memory.layout import Layout
        >>> from calc.memory.overheads import peak_memory
        >>> from calc.models.presets import preset
        >>> biggest_part(peak_memory(preset("llama3.1-405b"), Layout(dp=8, seq_len=4096)))[0]
        'model states (weights, gradients and optimizer states)'
    """
    m = p.memory
    parts = {
        "model states (weights, gradients and optimizer states)": m.total - m.activations - m.logits,
        "activations": m.activations,
        "the output layer's fp32 logits and loss": m.logits,
        "overheads (transient buffers, allocator reserve, CUDA context and NCCL buffers)": p.nvidia_smi_bytes - m.total,
    }
    name = max(parts, key=lambda k: parts[k])
    return name, parts[name]


def _fits(peak: Peak, v: Mapping[str, str], change: Mapping[str, str], memory: int) -> int | None:
    """The peak with ``change`` applied, when it fits in ``memory``; ``None`` when it does not or is not a layout."""
    try:
        got = peak({**v, **change})
    except CalcError:
        return None
    return got if got <= memory else None


def _zero(peak: Peak, v: Mapping[str, str], memory: int, base: Mapping[str, str], lowest: int = 0):
    """The ZeRO stage and the smallest dp (the reader's times a power of two) that fit with ``base``, fewest GPUs
    first, then the lowest stage (from ``lowest``). The peak only falls as dp grows (only model states are
    sharded), so the power is bisected; ``None`` when none fits."""
    stage, dp = int(v["zero_stage"]), int(v["dp"])
    best = None
    for s in range(max(stage, lowest), 4):
        top = (_MAX_DP // dp).bit_length() - 1 if best is None else (int(best[0]["dp"]) // dp).bit_length() - 2
        if top < 0 or _fits(peak, v, {**base, "zero_stage": str(s), "dp": str(dp << top)}, memory) is None:
            continue
        lo, hi = 0, top
        while lo < hi:
            mid = (lo + hi) // 2
            if _fits(peak, v, {**base, "zero_stage": str(s), "dp": str(dp << mid)}, memory) is None:
                lo = mid + 1
            else:
                hi = mid
        change = {**base, "zero_stage": str(s), "dp": str(dp << lo)}
        best = (change, _fits(peak, v, change, memory))
    return best


def _doublings(start: int, limit: int) -> list[int]:
    """``start`` times 2, 4, … up to ``limit``."""
    return [start << k for k in range(1, limit.bit_length() + 1) if start << k <= limit]


def _words(change: Mapping[str, str], v: Mapping[str, str]) -> str:
    """A change in the form's words: "ZeRO-3 over dp 256, full recomputation, tp 8 with sequence parallelism"."""
    said = []
    if "zero_stage" in change:
        over = "" if change["dp"] == v["dp"] else f" over dp {int(change['dp']):,}"
        said.append(f"ZeRO-{change['zero_stage']}{over}")
    if "recompute" in change:
        said.append(f"{change['recompute']} recomputation")
    if "tp" in change:
        said.append(f"tp {change['tp']} with sequence parallelism")
    if "pp" in change:
        said.append(f"pp {change['pp']}")
    return ", ".join(said)


def _singles(arch, v: Mapping[str, str]) -> Iterator[dict[str, str]]:
    """The single changes worth trying beside ZeRO, cheapest first: recomputation, then tp, then pp."""
    if v["recompute"] != "full":
        yield {"recompute": "full"}
    for t in _doublings(int(v["tp"]), _MAX_TP):
        yield {"tp": str(t), "sequence_parallel": "1"}
    for q in _doublings(int(v["pp"]), arch.num_layers):
        yield {"pp": str(q)}


def _candidates(arch, peak: Peak, v: Mapping[str, str], memory: int) -> Iterator[tuple[dict, int]]:
    """``(change, peak)`` for each single change that fits (the smallest tp and pp); when none does, the first
    that fits of full recomputation, tp up to a node and pp, added one after another, under ZeRO over a larger dp."""
    found = False
    zero = _zero(peak, v, memory, {})
    if zero is not None:
        found = True
        yield zero
    kinds = set()
    for change in _singles(arch, v):
        kind = next(iter(change))
        got = None if kind in kinds else _fits(peak, v, change, memory)
        if got is not None:
            kinds.add(kind)
            found = True
            yield change, got
    if found:
        return
    base: dict[str, str] = {}
    for change in _singles(arch, v):
        if _fits(peak, v, {**base, **change}, 1 << 62) is None:
            continue  # not a layout (tp must divide the heads, pp the layers)
        base |= change
        both = _zero(peak, v, memory, base, lowest=3)
        if both is not None:
            yield both
            return


def memory_fixes(arch, v: Mapping[str, str], p: PeakMemory, memory: int, fmt, peak: Peak, carried: dict) -> str:
    """The diagnosis of a peak over ``memory``: its biggest part and the changes that fit, each a link.

    Args:
        arch: The model.
        v: The calculator's values.
        p: The busiest GPU's peak.
        memory: The GPU's memory in bytes.
        fmt: The byte formatter.
        peak: The busiest GPU's ``nvidia-smi`` bytes for other values.
        carried: The inputs every link carries (the reader's, where not the calculator's defaults).

    Returns:
        The ``lc-diagnosis`` paragraph; empty when the peak fits.
    """
    if p.nvidia_smi_bytes <= memory:
        return ""
    name, part = biggest_part(p)
    text = f"The biggest part is {name}: {fmt(part)} of the {fmt(p.nvidia_smi_bytes)} on this GPU."
    page, calc, anchor = TRAINING_MEMORY
    links = [
        handoff(handoff_href(page, calc, {**carried, **change}, anchor), f"{_words(change, v)} ({fmt(got)})")
        for change, got in list(_candidates(arch, peak, v, memory))[:_SHOWN]
    ]
    if not links:
        text += " No ZeRO stage, recomputation, tp up to a node or pp makes it fit, alone or together."
    return diagnosis(text, links, lead="Changes that fit:")
