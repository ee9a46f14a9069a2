"""Why a training layout does not fit, and the cheapest changes that make it fit (issue 19).

The training-memory calculator's "Does not fit" names the biggest part of the busiest GPU's memory (model
states, activations, the output layer's logits and loss, or the overheads) with the engine's bytes, and offers
up to [`SHOWN`][calc.widgets._memory_fixes.SHOWN] changes that fit, fewest GPUs first, each a link that opens the
calculator with the reader's inputs and the change ([`calc.widgets._diagnosis`][]): a higher ZeRO stage over the
smallest data-parallel degree, a smaller micro-batch, full recomputation, tensor parallelism with sequence
parallelism up to a node, more pipeline stages; when none alone fits, ZeRO-3 with full recomputation (and tp)
over the smallest dp.

The search is arithmetic first. The busiest GPU's peak is split into the parts each change scales
([`peak_parts`][calc.widgets._memory_parts.peak_parts]): each model-state component (ZeRO shards it over the
data-parallel ranks from its stage on, Rajbhandari et al. 2020 Sec. 5, so it scales exactly as ``1/dp``),
the activations and logits (linear in the micro-batch's tokens, ``1/tp`` with sequence parallelism, Korthikanti
et al. 2022 Sec. 4), the backward- and step-phase transients, the allocator's reserve (a fraction of what is
allocated) and what lives outside it. From those parts each change's peak is predicted with no engine call;
the engine is called only for a change predicted to fit (at most [`CALLS`][calc.widgets._memory_fixes.CALLS]
calls and [`WORK`][calc.widgets._memory_fixes.WORK] a diagnosis), and a change is offered only where the engine
says it fits.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction

from calc.errors import CalcError
from calc.memory.layout import Layout
from calc.memory.overheads import PeakMemory
from calc.widgets._diagnosis import TRAINING_MEMORY, carried, diagnosis, handoff, handoff_href
from calc.widgets._memory_parts import Parts, biggest_part, gathered_bytes, peak_parts, zero_parts

__all__ = ["CALLS", "CALL_COST", "SHOWN", "WORK", "memory_fixes"]

Peak = Callable[[dict[str, str]], tuple[Layout, PeakMemory]]
"""The layout a calculator's values describe and its busiest GPU's peak (raises ``CalcError`` on values that are
not a layout)."""

SHOWN = 4
"""At most this many changes are offered."""

CALLS = 8
"""At most this many engine calls a diagnosis makes, each to confirm a change predicted to fit."""

CALL_COST = 10
"""The fixed work of one engine call, in units of one pipeline stage's (``_cost``)."""

WORK = 480
"""The most work a diagnosis asks of the engine, in units of one pipeline stage's (about 35 µs of CPython, so about
17 ms): all ``CALLS`` on short pipelines, fewer on long ones or where each call places thousands of tensors, so the
render stays within ``tests/test_render_limits.py``'s ceiling."""

_TENSORS_PER_LAYER = 10
"""About how many tensors a dense layer has (attention's projections, the MLP's, the norms)."""

_TENSORS_PER_UNIT = 16
"""Tensors placed per unit of work when ZeRO shards by tensor (measured in CPython under FSDP2: GPT-OSS 120B's 14
thousand tensors take about 26 ms, some 750 units; DeepSeek-V3's 47 thousand about 22 ms)."""

_MAX_DP = 1 << 20
"""The calculator's largest dp."""

_MAX_TP = 8
"""Tensor parallelism is tried up to a node of eight GPUs (NVLink), where Megatron-LM keeps it (Narayanan et al.
2021, Sec. 3.2)."""

_ORDER = ("zero", "micro_batch", "recompute", "tp", "cp", "pp", "together")
"""Between changes on as many GPUs, the cheaper first."""


@dataclass
class _Search:
    """A search's inputs, the engine's answers so far and the work and calls it has left."""

    arch: object
    values: Mapping[str, str]
    memory: int
    peak: Peak
    left: int = WORK
    calls: int = CALLS
    cut: bool = False
    seen: dict = field(default_factory=dict)

    def run(self, change: Mapping[str, str]) -> tuple[Layout, PeakMemory] | None:
        """The layout with ``change`` and the engine's peak; ``None`` when it is not a layout or no work is left."""
        values = {**self.values, **change}
        key = tuple(sorted((k, x) for k, x in values.items() if self.values.get(k) != x))
        if key not in self.seen:
            cost = _cost(self.arch, values)
            if cost > self.left or not self.calls:
                self.cut = True
                return None
            self.left, self.calls = self.left - cost, self.calls - 1
            try:
                self.seen[key] = self.peak(values)
            except CalcError:
                self.seen[key] = None
        return self.seen[key]

    def fits(self, change: Mapping[str, str]) -> PeakMemory | None:
        """The engine's peak with ``change`` when it fits, else ``None``."""
        got = self.run(change)
        return got[1] if got is not None and got[1].nvidia_smi_bytes <= self.memory else None


def _cost(arch, values: Mapping[str, str]) -> int:
    """The work of one engine call in units of one pipeline stage's: a fixed part, each stage evaluated (six times
    as much under full or per-op recomputation, where each stage sizes the recomputed layer), and where ZeRO shards
    whole tensors or FSDP2's chunks (``shard``), one unit per ``_TENSORS_PER_UNIT`` tensors placed one by one."""
    stages = int(values["pp"]) if values["pp"].isdigit() else 1
    cost = CALL_COST + stages * (6 if values["recompute"] not in ("none", "selective") else 1)
    if values["shard"] != "even" and values["zero_stage"] != "0":
        cost += arch.num_layers * (_TENSORS_PER_LAYER + 3 * arch.num_experts) // _TENSORS_PER_UNIT
    return cost


Found = tuple[str, dict[str, str], PeakMemory]
"""A change that fits: its kind (one of ``_ORDER``), the fields it sets and the engine's peak with it."""


def _first_fit(s: _Search, kind: str, tries: list[tuple[dict[str, str], Parts, Parts]]) -> Found | None:
    """The first of ``tries`` (changes, cheapest first, each with an optimistic and a pessimistic prediction) the
    engine says fits: calls start at the first whose optimistic prediction fits and stop one past the first whose
    pessimistic prediction fits."""
    low = [i for i, t in enumerate(tries) if t[1].nvidia_smi_bytes <= s.memory]
    if not low:
        return None
    high = next((i for i, t in enumerate(tries) if t[2].nvidia_smi_bytes <= s.memory), len(tries))
    for change, _, _ in tries[low[0] : max(low[0], high) + 2]:
        got = s.fits(change)
        if got is not None:
            return kind, change, got
    return None


def _zero(s: _Search, p: PeakMemory, layout: Layout, base: dict[str, str], lowest: int = 0) -> Found | None:
    """The ZeRO stage (from ``lowest``) and the smallest dp (the layout's times a power of two) predicted to fit
    with ``base``, fewest GPUs first, then the lowest stage; confirmed by the engine, doubling dp at most twice."""
    parts, gathered = peak_parts(p), gathered_bytes(s.arch, p, layout)
    z0, dp0 = layout.effective_zero_stage, layout.dp
    best = None
    for stage in range(max(z0, lowest), 4):
        for j in range((_MAX_DP // dp0).bit_length()):
            if best is not None and j >= best[0]:
                break
            if j == 0 and stage == z0 and not base:
                continue  # the reader's layout
            if zero_parts(parts, layout, stage, 1 << j, gathered).nvidia_smi_bytes <= s.memory:
                best = (j, stage)
                break
    if best is None:
        return None
    j, stage = best
    for dp in (dp0 << k for k in range(j, j + 3) if dp0 << k <= _MAX_DP):
        change = {**base, "zero_stage": str(stage)} | ({"dp": str(dp)} if dp != dp0 else {})
        got = s.run(change)
        if got is None:
            return None
        if got[1].nvidia_smi_bytes <= s.memory:
            return "zero" if not base else "together", change, got[1]
    return None


def _doublings(start: int, limit: int) -> list[int]:
    """``start`` times 2, 4, … up to ``limit``."""
    return [start << k for k in range(1, limit.bit_length() + 1) if start << k <= limit]


def _micro_batch(s: _Search, parts: Parts, layout: Layout) -> Found | None:
    """The largest smaller micro-batch that fits (activations, logits and the loss are linear in it)."""
    b0 = layout.micro_batch
    sizes = sorted({b0 >> k for k in range(1, b0.bit_length())}, reverse=True)
    tries = [({"micro_batch": str(b)}, parts.scaled(Fraction(1), Fraction(b, b0))) for b in sizes]
    return _first_fit(s, "micro_batch", [(c, q, q) for c, q in tries])


def _tp_sizes(arch, layout: Layout) -> list[int]:
    """The tensor-parallel degrees past the layout's, up to a node, that divide the heads and KV heads (Megatron-LM's
    kernels only: Hugging Face's take no tp)."""
    if layout.implementation != "megatron":
        return []
    return [t for t in _doublings(layout.tp, _MAX_TP) if arch.num_heads % t == 0 and arch.num_kv_heads % t == 0]


def _tp(s: _Search, parts: Parts, layout: Layout) -> Found | None:
    """The smallest tp up to a node, with sequence parallelism, that fits: model states, activations and logits
    are ``1/tp`` with it (Korthikanti et al. 2022, Sec. 4.2.2). Without sequence parallelism before, the first
    doubling is asked of the engine and the larger ones are predicted from its answer."""
    sizes = _tp_sizes(s.arch, layout)
    if not sizes or parts.scaled(Fraction(layout.tp, sizes[-1]), Fraction(0)).nvidia_smi_bytes > s.memory:
        return None
    tp0 = layout.tp
    if not layout.sequence_parallel:
        first = {"tp": str(sizes[0]), "sequence_parallel": "1"}
        got = s.run(first)
        if got is None or got[1].nvidia_smi_bytes <= s.memory:
            return None if got is None else ("tp", first, got[1])
        parts, tp0, sizes = peak_parts(got[1]), sizes[0], sizes[1:]
    tries = []
    for t in sizes:
        q = parts.scaled(Fraction(tp0, t), Fraction(tp0, t))
        tries.append(({"tp": str(t), "sequence_parallel": "1"}, q, q))
    return _first_fit(s, "tp", tries)


def _cp(s: _Search, parts: Parts, layout: Layout, base: dict[str, str]) -> Found | None:
    """The smallest cp (context parallelism, ring attention) that fits with ``base``: it splits every sequence,
    so the activations, logits and loss are ``1/cp``, and ZeRO shards over ``dp × cp`` ranks (Megatron-LM's
    data-parallel group with context parallel)."""
    if layout.implementation != "megatron":
        return None
    tries = []
    for c in _doublings(layout.cp, 1024):
        if layout.seq_len % (2 * c):
            break
        f = Fraction(layout.cp, c)
        ranks = c // layout.cp if layout.zero_over_cp else 1
        q = zero_parts(parts, layout, layout.effective_zero_stage, ranks, 0).scaled(Fraction(1), f)
        tries.append(({**base, "cp": str(c)}, q, q))
    return _first_fit(s, "cp" if not base else "together", tries)


def _pp(s: _Search, p: PeakMemory, parts: Parts, layout: Layout) -> Found | None:
    """The smallest pp that fits: the layers' model states split over the stages (not the embedding's); the first
    stage keeps ``pp`` micro-batches in flight under 1F1B, so its activations stay unless the global batch has
    fewer (Narayanan et al. 2021, Sec. 2.2; Korthikanti et al. 2022, Sec. 4.2.3)."""
    m = p.memory
    if m.layers <= 1:
        return None
    head = Fraction(0)  # the share of the stage's parameters pp does not split: the embedding or output layer
    if m.stage in (0, layout.pp - 1) and m.params:
        head = min(Fraction(1), Fraction(s.arch.vocab_size * s.arch.hidden_size // layout.tp, m.params))
    tries = []
    for q in _doublings(layout.pp, s.arch.num_layers // layout.interleave):
        f = Fraction(layout.pp, q)
        acts = f if layout.num_microbatches is not None else Fraction(1)
        low = replace(parts.scaled(f, Fraction(1), acts), logits=0)
        tries.append(({"pp": str(q)}, low, parts.scaled(head + (1 - head) * f, Fraction(1))))
    return _first_fit(s, "pp", tries)


def _singles(s: _Search, p: PeakMemory, layout: Layout) -> list[Found]:
    """Each kind of single change that fits (the smallest of its kind), as the engine confirms them."""
    parts = peak_parts(p)
    found = [_zero(s, p, layout, {})]
    if layout.micro_batch > 1:
        found.append(_micro_batch(s, parts, layout))
    if layout.recompute != "full":  # at least one layer's activations stay, for one micro-batch, while recomputed
        layer = parts.activations // max(1, p.memory.layers * p.memory.in_flight)
        low = replace(parts, activations=0, per_token=parts.per_token + layer)
        found.append(_first_fit(s, "recompute", [({"recompute": "full"}, low, parts)]))
    found += [_tp(s, parts, layout), _cp(s, parts, layout, {}), _pp(s, p, parts, layout)]
    return [f for f in found if f is not None]


def _dominated(change: Mapping[str, str], found: list[Found], layout: Layout) -> bool:
    """Whether another change found does part of ``change`` on no more GPUs (``change`` then only costs more)."""
    return any(
        f[1] != change and f[1].items() <= change.items() and _gpus(layout, f[1]) <= _gpus(layout, change)
        for f in found
    )


def _together(s: _Search, p: PeakMemory, layout: Layout, singles: list[Found]) -> list[Found]:
    """When no single change fits on the reader's GPUs: ZeRO-3 with full recomputation, then with tp up to a node
    (sequence parallelism on) too, each asked of the engine once at the reader's dp, then over the smallest dp, or
    else the smallest cp, that fits; none on more GPUs than a single change needs. A combination that could not fit
    with no model states and no activations is not asked."""
    zero = {"zero_stage": "3"} if layout.zero_ranks > 1 else {}  # over one rank, ZeRO shards nothing
    bases = [zero | ({"recompute": "full"} if layout.recompute != "full" else {})]
    sizes = _tp_sizes(s.arch, layout)
    if sizes:
        bases.append({**bases[0], "tp": str(sizes[-1]), "sequence_parallel": "1"})
    parts, none = peak_parts(p), Fraction(0)
    fewest = min((_gpus(layout, f[1]) for f in singles), default=_MAX_DP * _MAX_TP)
    found = []
    for base in bases:
        floor = parts.scaled(none, Fraction(layout.tp, int(base.get("tp", layout.tp))), none)
        if (
            all(s.values.get(k) == x for k, x in base.items())
            or floor.nvidia_smi_bytes > s.memory
            or _gpus(layout, base) > fewest
        ):
            continue
        got = s.run(base)
        if got is not None and got[1].nvidia_smi_bytes <= s.memory:
            found.append(("together", base, got[1]))
        elif got is not None:
            there = _zero(s, got[1], got[0], base, lowest=3) or _cp(s, peak_parts(got[1]), got[0], base)
            found += [there] if there is not None else []
    return [f for f in found if _gpus(layout, f[1]) <= fewest]


_RECOMPUTE = {"none": "no", "selective": "selective", "op": "per-op selective", "full": "full"}
"""The recomputation modes in words."""


def _words(change: Mapping[str, str]) -> str:
    """A change in the form's words: "ZeRO-3 over dp 256, full recomputation, tp 8 with sequence parallelism"."""
    said = []
    if "zero_stage" in change:
        said.append(f"ZeRO-{change['zero_stage']}" + (f" over dp {int(change['dp']):,}" if "dp" in change else ""))
    if "micro_batch" in change:
        said.append(f"micro-batch {int(change['micro_batch']):,}")
    if "recompute" in change:
        said.append(f"{_RECOMPUTE[change['recompute']]} recomputation")
    if "tp" in change:
        said.append(f"tp {change['tp']} with sequence parallelism")
    if "cp" in change:
        said.append(f"cp {int(change['cp']):,}")
    if "pp" in change:
        said.append(f"pp {change['pp']}")
    return ", ".join(said)


def _gpus(layout: Layout, change: Mapping[str, str]) -> int:
    """The GPUs of the layout with ``change``."""
    return math.prod(int(change.get(k, getattr(layout, k))) for k in ("dp", "tp", "pp", "cp"))


def _why(name: str, layout: Layout, arch) -> str:
    """The biggest part in words, with what makes it that size."""
    if name == "model states":
        return (
            f"model states (weights, gradients and optimizer states, ZeRO-{layout.effective_zero_stage} over "
            f"dp {layout.dp:,})"
        )
    tokens = f"micro-batch {layout.micro_batch:,} × {layout.seq_len:,} tokens"
    if name == "activations":
        return f"activations ({_RECOMPUTE[layout.recompute]} recomputation, {tokens})"
    if name == "logits":
        return f"the output layer's fp32 logits and loss (vocabulary {arch.vocab_size:,}, {tokens})"
    return "overheads (transient buffers, allocator reserve, CUDA context and NCCL buffers)"


def memory_fixes(
    arch,
    values: Mapping[str, str],
    defaults: Mapping[str, str],
    layout: Layout,
    p: PeakMemory,
    memory: int,
    fmt,
    peak: Peak,
) -> str:
    """The diagnosis of a peak over ``memory``: its biggest part and up to ``SHOWN`` changes that fit, each a link.

    Args:
        arch: The model.
        values: The calculator's values.
        defaults: The calculator's defaults (a link carries what differs from the page it opens).
        layout: The layout ``values`` describe.
        p: The busiest GPU's peak with ``values``.
        memory: The GPU's memory in bytes.
        fmt: The byte formatter.
        peak: The layout and the busiest GPU's peak for other values.

    Returns:
        The ``lc-diagnosis`` paragraph; empty when the peak fits.

    Examples:
        >>> from calc.models.presets import preset
        >>> from calc.units import format_bytes
        >>> from calc.widgets.training import CALCULATOR, _layout, _peak
        >>> arch, v = preset("llama3-8b"), {**CALCULATOR.defaults, "zero_stage": "0"}
        >>> def peak(w):
        ...     return _layout(w), _peak(arch, _layout(w), w)[0]
        >>> layout, p = peak(v)
        >>> html_ = memory_fixes(arch, v, CALCULATOR.defaults, layout, p, 80 * 10**9, format_bytes, peak)
        >>> html_.startswith('<p class="lc-diagnosis"><span data-output="diagnosis">The biggest part is model st')
        True
        >>> "ZeRO-1 (8 GPUs, " in html_
        True
    """
    if p.nvidia_smi_bytes <= memory:
        return ""
    s = _Search(arch, values, memory, peak)
    name, part = biggest_part(p)
    text = f"The biggest part is {_why(name, layout, arch)}: {fmt(part)} of the {fmt(p.nvidia_smi_bytes)} on this GPU."
    found = _singles(s, p, layout)
    if all(_gpus(layout, f[1]) > layout.gpus for f in found):
        found += _together(s, p, layout, found)
    found = [f for f in found if not _dominated(f[1], found, layout)]
    found.sort(key=lambda f: (_gpus(layout, f[1]), _ORDER.index(f[0])))
    links = [_link(change, got, values, defaults, _gpus(layout, change), fmt) for _, change, got in found[:SHOWN]]
    if not links and s.cut:
        text += (
            " Checking each change on this layout (a long pipeline, or ZeRO placing each of many tensors) takes too "
            "long for a live answer, so none is offered."
        )
    elif not links:
        text += (
            f" No ZeRO stage over up to {_MAX_DP:,} data-parallel ranks, smaller micro-batch, full recomputation, "
            f"tp up to {_MAX_TP}, cp or more pipeline stages makes it fit, alone or with ZeRO-3 and full "
            "recomputation."
        )
    return diagnosis(text, links, lead="Changes that fit:")


def _link(change: Mapping[str, str], got: PeakMemory, values: Mapping[str, str], defaults, gpus: int, fmt) -> str:
    """A change as a link to the training-memory calculator with the reader's inputs and the change."""
    t = TRAINING_MEMORY
    href = handoff_href(t.page, t.calc, carried({**values, **change}, defaults, t), t.anchor)
    return handoff(href, f"{_words(change)} ({gpus:,} GPU{'s' if gpus > 1 else ''}, {fmt(got.nvidia_smi_bytes)})")
