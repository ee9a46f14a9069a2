"""Why a fine-tuning run or a served model does not fit one GPU, and the cheapest changes that make it fit (issue 19).

The fine-tuning and serving-memory calculators' "Does not fit" names the biggest part of the GPU's memory with the
engine's bytes and offers up to [`SHOWN`][calc.widgets._fit_fixes.SHOWN] changes, cheapest first, each a link that
opens the same calculator with the reader's inputs and the change ([`calc.widgets._diagnosis`][]).

Each change's total is first predicted from the parts of the reader's answer (activations and logits are linear
in the micro-batch and, with FlashAttention, in the sequence, Korthikanti et al. 2022, Table 2; a KV cache is linear
in its tokens and bits and split over the tensor-parallel GPUs, Kwon et al. 2023, Sec. 3; weights are linear in
their bits and ``1/tp``, Pope et al. 2022, Sec. 3). The engine is then asked, with the changed inputs, only about a
change predicted to fit (at most [`CALLS`][calc.widgets._fit_fixes.CALLS] calls a diagnosis), and a change is
offered only where the engine says it fits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from calc.errors import CalcError
from calc.hardware import gpu
from calc.memory.inference import PRECISION_BITS
from calc.memory.model_state import CONVENTIONS
from calc.units import parse_positive_int
from calc.widgets._diagnosis import Target, carried, diagnosis, handoff, handoff_href

__all__ = ["CALLS", "FINETUNE_MEMORY", "SERVING_MEMORY", "SHOWN", "finetune_fixes", "serving_fixes"]

SHOWN = 3
"""At most this many changes are offered."""

CALLS = 6
"""At most this many engine calls a diagnosis makes, each to confirm a change predicted to fit."""

FINETUNE_MEMORY = Target("memory/finetuning/", "finetune-memory", "calculator")
"""The fine-tuning page's one ``[[calc finetune-memory]]``, which sets no input."""

SERVING_MEMORY = Target(
    "memory/inference/",
    "serving-memory",
    "sequences-fit",
    {"preset": "llama2-70b", "seq_len": "4096", "batch": "8", "tp": "4"},
)
"""The inference-memory page's one ``[[calc serving-memory …]]``, with its marker's inputs as
``docs/memory/inference.md`` writes them (``tests/test_widgets_diagnosis_more.py`` reads the page)."""

_MAX_TP = 8
"""Tensor parallelism is tried up to a node of eight GPUs, over NVLink (Pope et al. 2022, Sec. 3.1)."""

_MIN_SEQ = 128
"""The shortest sequence or context a change offers."""


@dataclass
class _Asker:
    """The engine, asked with the reader's values and a change, at most ``calls`` times."""

    values: Mapping[str, str]
    engine: Callable[[dict[str, str]], object]
    size: Callable[[object], int]
    memory: int
    calls: int = CALLS
    seen: dict = field(default_factory=dict)

    def ask(self, change: Mapping[str, str]) -> object | None:
        """The engine's answer with ``change``; ``None`` when it refuses the values or no call is left."""
        key = tuple(sorted(change.items()))
        if key not in self.seen:
            if not self.calls:
                return None
            self.calls -= 1
            try:
                self.seen[key] = self.engine({**self.values, **change})
            except CalcError:
                self.seen[key] = None
        return self.seen[key]

    def fits(self, change: Mapping[str, str]) -> int | None:
        """The engine's total with ``change`` when it fits, else ``None``."""
        got = self.ask(change)
        return None if got is None or self.size(got) > self.memory else self.size(got)


def _halvings(start: int, share, floor: int = 1) -> int | None:
    """The largest of ``start`` / 2, / 4, … (down to ``floor``) whose ``share(n)`` is true."""
    n = start >> 1
    while n >= floor:
        if share(n):
            return n
        n >>= 1
    return None


def _first(ask: _Asker, changes: list[dict[str, str]]) -> tuple[dict[str, str], int] | None:
    """The first of ``changes`` the engine says fits."""
    for change in changes:
        got = ask.fits(change)
        if got is not None:
            return change, got
    return None


def _link(target: Target, values, defaults, change: Mapping[str, str], words: str, total: int, fmt) -> str:
    """A change as a link to ``target`` with the reader's inputs and the change, its GPUs (a ``tp`` it sets) and
    its total in brackets; a link with nothing to carry opens the page's calculator as it is."""
    inputs = carried({**values, **change}, defaults, target)
    href = handoff_href(target.page, target.calc, inputs, target.anchor) if inputs else f"{target.page}#{target.anchor}"
    gpus = f"{int(change['tp']):,} GPUs, " if "tp" in change else ""
    return handoff(href, f"{words} ({gpus}{fmt(total)})")


_FT_WORDS = {
    "frozen_bf16": "the frozen base in bf16",
    "frozen_nf4": "the frozen base in NF4",
    "trained": "the trained parameters' weights, gradients and Adam states",
    "activations": "activations",
    "logits": "the output layer's logits",
    "cuda_context": "the CUDA context",
}
_RECOMPUTE = {"none": "no", "selective": "selective", "full": "full"}
_FT_METHODS = {"full": "full fine-tuning", "lora": "LoRA", "qlora": "QLoRA"}


def _finetune_changes(v: Mapping[str, str], parts, memory: int, ask: _Asker) -> list[tuple[dict, int, str]]:
    """Each change that fits, cheapest first: a smaller micro-batch, full recomputation, LoRA then QLoRA, a shorter
    sequence; when none does, QLoRA with full recomputation (and a micro-batch of one)."""
    sizes = {key: n for key, _, n, _ in parts}
    grows = sizes.get("activations", 0) + sizes.get("logits", 0)  # linear in micro-batch × tokens
    fixed = sum(sizes.values()) - grows
    micro, seq = parse_positive_int(v["micro_batch"], "micro_batch"), parse_positive_int(v["seq_len"], "seq_len")
    method = v["method"]
    found = []
    b = _halvings(micro, lambda n: fixed + grows * n // micro <= memory)
    if b is not None:
        got = _first(ask, [{"micro_batch": str(b)}] + ([{"micro_batch": str(b >> 1)}] if b > 1 else []))
        found += [(*got, f"micro-batch {int(got[0]['micro_batch']):,}")] if got else []
    if v["recompute"] != "full" and fixed < memory:
        got = ask.fits({"recompute": "full"})
        found += [({"recompute": "full"}, got, "full recomputation")] if got else []
    base = _base_bf16(sizes)
    floor = {"lora": base, "qlora": base // 4}  # the frozen base in bf16; in NF4 at best half a byte a parameter
    methods = list(_FT_METHODS)[list(_FT_METHODS).index(method) + 1 :] if method in _FT_METHODS else []
    methods = [m for m in methods if grows + sizes.get("cuda_context", 0) + floor[m] <= memory]
    if methods:
        got = _first(ask, [{"method": m} for m in methods])
        found += [(*got, f"{_FT_METHODS[got[0]['method']]} instead of {_FT_METHODS[method]}")] if got else []
    s = _halvings(seq, lambda n: fixed + grows * n // seq <= memory, _MIN_SEQ)
    if s is not None and len(found) < SHOWN:
        got = ask.fits({"seq_len": str(s)})
        found += [({"seq_len": str(s)}, got, f"sequence {s:,} tokens")] if got else []
    if not found:
        qlora = method == "qlora" or sizes.get("cuda_context", 0) + floor["qlora"] <= memory
        found += _finetune_together(ask, method, v["recompute"], micro) if qlora else []
    return found[:SHOWN]


def _base_bf16(sizes: Mapping[str, int]) -> int:
    """The base model's bytes in bf16, from the parts: LoRA's frozen base, or full fine-tuning's trained state at
    mixed-precision Adam's bytes a parameter (Rajbhandari et al. 2020, Sec. 3.1), over a bf16 weight's two."""
    if "frozen_bf16" in sizes:
        return sizes["frozen_bf16"]
    if "frozen_nf4" in sizes:
        return 0  # already QLoRA: no method is smaller
    return sizes.get("trained", 0) * 2 // CONVENTIONS["mixed-adam-16"].bytes_per_param


def _finetune_together(ask: _Asker, method: str, recompute: str, micro: int) -> list[tuple[dict, int, str]]:
    """QLoRA with full recomputation (whichever the reader has not), then with a micro-batch of one too."""
    both = ({"method": "qlora"} if method != "qlora" else {}) | ({"recompute": "full"} if recompute != "full" else {})
    tries = ([both] if both else []) + ([{**both, "micro_batch": "1"}] if micro > 1 else [])
    got = _first(ask, tries)
    if got is None:
        return []
    said = {"method": "QLoRA", "recompute": "full recomputation", "micro_batch": "micro-batch 1"}
    return [(*got, ", ".join(said[k] for k in said if k in got[0]))]


def finetune_fixes(v: Mapping[str, str], defaults: Mapping[str, str], parts, memory: int, fmt, total) -> str:
    """The diagnosis of a fine-tuning run over ``memory``: its biggest part and up to ``SHOWN`` changes that fit.

    Args:
        v: The calculator's values.
        defaults: The calculator's defaults (a link carries what differs from the page it opens).
        parts: ``(output, label, bytes, formula)`` of each part of the GPU's memory, as the calculator shows them.
        memory: The GPU's memory in bytes.
        fmt: The byte formatter.
        total: The calculator's engine: the GPU's total bytes for other values.

    Returns:
        The ``lc-diagnosis`` paragraph; empty when the total fits.

    Examples:
        >>> from calc.units import format_bytes
        >>> from calc.widgets.finetune import CALCULATOR, _engine
        >>> from calc.widgets._model import read_model
        >>> v = {**CALCULATOR.defaults, "method": "full", "preset": "llama3-70b"}
        >>> def total(w):
        ...     return sum(n for _, _, n, _ in _engine(read_model(w), w)[2])
        >>> parts = _engine(read_model(v), v)[2]
        >>> said = finetune_fixes(v, CALCULATOR.defaults, parts, 80 * 10**9, format_bytes, total)
        >>> said.startswith('<p class="lc-diagnosis"><span data-output="diagnosis">The biggest part is the trained')
        True
        >>> "QLoRA, full recomputation (" in said
        True
    """
    sizes = {key: n for key, _, n, _ in parts}
    whole = sum(sizes.values())
    if whole <= memory:
        return ""
    key = max(sizes, key=sizes.get)
    why = _FT_WORDS[key]
    if key in ("activations", "logits"):
        micro, seq = parse_positive_int(v["micro_batch"], "micro_batch"), parse_positive_int(v["seq_len"], "seq_len")
        why += (
            f" ({_RECOMPUTE.get(v['recompute'], v['recompute'])} recomputation, micro-batch {micro:,} × {seq:,} tokens)"
        )
    elif key == "trained":
        why += f" ({_FT_METHODS.get(v['method'], v['method'])})"
    text = f"The biggest part is {why}: {fmt(sizes[key])} of the {fmt(whole)} on this GPU."
    ask = _Asker(v, total, int, memory)
    found = _finetune_changes(v, parts, memory, ask)
    links = [_link(FINETUNE_MEMORY, v, defaults, c, words, got, fmt) for c, got, words in found]
    if not links:
        text += " No smaller micro-batch, full recomputation, LoRA, QLoRA or shorter sequence makes it fit."
    return diagnosis(text, links, lead="Changes that fit:")


def _eight_bit(name: str) -> str:
    """The 8-bit weight type to offer on GPU ``name``: fp8 where it has FP8 tensor cores, else int8."""
    if name == "custom":
        return "int8"
    try:
        return "fp8" if gpu(name).fp8_flops else "int8"
    except CalcError:
        return "int8"


def _serving_changes(arch, v: Mapping[str, str], m, ask: _Asker, splits) -> list[tuple[dict, int, str]]:
    """Each change that fits, cheapest first: an fp8 KV cache, fewer sequences, 8- then 4-bit weights, tp up to a
    node, a shorter context; when none does, tp up to a node with lower-precision weights (and fewer sequences)."""
    memory, weights, kv = m.gpu_memory_bytes, m.weights_per_gpu_bytes, m.kv_batch_per_gpu_bytes
    rest = m.reserved_per_gpu_bytes
    bits, kv_bits = PRECISION_BITS[v["precision"]], PRECISION_BITS[v["kv_dtype"]]
    found = []
    if kv and kv_bits > 8 and weights + kv * 8 // kv_bits + rest <= memory:
        got = ask.fits({"kv_dtype": "fp8"})
        found += [({"kv_dtype": "fp8"}, got, "an fp8 KV cache")] if got else []
    if 0 < m.max_concurrent_sequences < m.batch:
        n = m.max_concurrent_sequences
        got = ask.fits({"batch": str(n)})
        found += [({"batch": str(n)}, got, f"{n:,} concurrent sequence{'s' if n > 1 else ''}")] if got else []
    lower = [p for p, b in ((_eight_bit(v["gpu"]), 8), ("int4", 4)) if b < bits]
    tries = [{"precision": p} for p in lower if weights * PRECISION_BITS[p] // bits + kv + rest <= memory]
    got = _first(ask, tries[:2])
    found += [(*got, f"{got[0]['precision']} weights")] if got else []
    sizes = [t for t in (m.tp << k for k in range(1, 4)) if t <= _MAX_TP and splits(arch, t)]
    tries = [{"tp": t} for t in sizes if (weights + kv) * m.tp // t + rest <= memory]
    got = _first(ask, [{"tp": str(t["tp"])} for t in tries[:2]]) if len(found) < SHOWN else None
    found += [(*got, f"tp {got[0]['tp']}")] if got else []
    if kv and len(found) < SHOWN:
        seq = parse_positive_int(v["seq_len"], "seq_len")
        s = _halvings(seq, lambda n: weights + kv * n // seq + rest <= memory, _MIN_SEQ)
        got = ask.fits({"seq_len": str(s)}) if s is not None else None
        found += [({"seq_len": str(s)}, got, f"context {s:,} tokens")] if got else []
    if not found and sizes:
        found += _serving_together(ask, sizes[-1], lower)
    return found[:SHOWN]


def _serving_together(ask: _Asker, tp: int, lower: list[str]) -> list[tuple[dict, int, str]]:
    """tp ``tp`` with 8-bit, else 4-bit weights; else with the 4-bit weights and as many sequences as then fit."""
    got = None
    for p in lower or [None]:
        change = {"tp": str(tp)} | ({"precision": p} if p else {})
        words = f"tp {tp}" + (f", {p} weights" if p else "")
        got = ask.ask(change)
        if got is not None and got.fits:
            return [(change, got.total_per_gpu_bytes, words)]
    if got is None or not got.max_concurrent_sequences:
        return []
    n = got.max_concurrent_sequences
    total = ask.fits({**change, "batch": str(n)})
    words += f", {n:,} concurrent sequence{'s' if n > 1 else ''}"
    return [({**change, "batch": str(n)}, total, words)] if total else []


def serving_fixes(arch, v: Mapping[str, str], defaults: Mapping[str, str], m, fmt, engine, splits) -> str:
    """The diagnosis of a served model over its GPUs' memory: its biggest part and up to ``SHOWN`` changes that fit.

    Args:
        arch: The model.
        v: The calculator's values.
        defaults: The calculator's defaults (a link carries what differs from the page it opens).
        m: The engine's [`InferenceMemory`][calc.memory.inference.InferenceMemory] with ``v``.
        fmt: The byte formatter.
        engine: The calculator's engine: its ``InferenceMemory`` for other values.
        splits: Whether a tp splits the model's heads as the calculator requires.

    Returns:
        The ``lc-diagnosis`` paragraph; empty when it fits.

    Examples:
        >>> from calc.models.presets import preset
        >>> from calc.units import format_bytes
        >>> from calc.widgets.inference import CALCULATOR, _engine, _splits
        >>> arch, v = preset("llama3-70b"), {**CALCULATOR.defaults, "tp": "1"}
        >>> def engine(w):
        ...     return _engine(arch, w, 8192, 16, int(w["tp"]), 80 * 10**9)
        >>> said = serving_fixes(arch, v, CALCULATOR.defaults, engine(v), format_bytes, engine, _splits)
        >>> said.startswith('<p class="lc-diagnosis"><span data-output="diagnosis">The biggest part is the weights')
        True
        >>> "tp 4 (4 GPUs, " in said
        True
    """
    if m.fits:
        return ""
    sizes = {
        "weights": m.weights_per_gpu_bytes,
        "kv": m.kv_batch_per_gpu_bytes,
        "reserve": m.reserved_per_gpu_bytes,
    }
    key = max(sizes, key=sizes.get)
    seq = parse_positive_int(v["seq_len"], "seq_len")
    why = {
        "weights": f"the weights ({v['precision']}" + (f", split over tp {m.tp})" if m.tp > 1 else ")"),
        "kv": f"the KV cache ({v['kv_dtype']}, {m.batch:,} sequences of {seq:,} tokens)",
        "reserve": f"the reserve ({100 * m.reserved_per_gpu_bytes / m.gpu_memory_bytes:.3g}% of the GPU's memory)",
    }[key]
    where = "each GPU" if m.tp > 1 else "this GPU"
    text = f"The biggest part is {why}: {fmt(sizes[key])} of the {fmt(m.total_per_gpu_bytes)} on {where}."
    ask = _Asker(v, engine, lambda got: got.total_per_gpu_bytes, m.gpu_memory_bytes)
    found = _serving_changes(arch, v, m, ask, splits)
    links = [_link(SERVING_MEMORY, v, defaults, c, words, got, fmt) for c, got, words in found]
    if not links:
        text += (
            f" No fp8 KV cache, fewer sequences, lower-precision weights, tp up to {_MAX_TP} or shorter context "
            "makes it fit."
        )
    return diagnosis(text, links, lead="Changes that fit:")
