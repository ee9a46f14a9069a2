"""The "Serving memory" calculator: weights and KV cache per GPU, and how many sequences fit."""

from __future__ import annotations

from fractions import Fraction

from calc.errors import CalcError
from calc.memory.inference import PRECISION_BITS, inference_memory
from calc.units import format_bytes, parse_decimal, parse_positive_int
from calc.widgets import Calculator, Field
from calc.widgets._code import Code, call, gpu_code, model_code, snippet
from calc.widgets._fields import gpu_fields, one_of, select, seq_len_field, unit_field
from calc.widgets._html import byte_formatter, fit_short, formulas, gpu_memory, memory_chart, out, table, verdict
from calc.widgets._model import accept_legacy_model, model_chip, model_fields, read_model
from calc.widgets._parts import NOT_COUNTED, gpu_memory_line, kv, notes

__all__ = ["CALCULATOR"]

_PRECISION_LABELS = {k: f"{k.upper()} ({bits / 8:g} B)" for k, bits in PRECISION_BITS.items()}
"""Each data type the engine knows, with its bytes per element: ``FP32 (4 B)``, ``FP4 (0.5 B)``."""
_MAX_TOKENS = 1 << 24
_MAX_BATCH = 1 << 20
_DEFAULT_TP = "4"
"""The tp field's default; a model whose heads it does not divide is shown at the largest tp below it that does."""


def _reserve(text: str) -> Fraction:
    """The reserved share typed as a percentage (``"10"`` = 10%), exact."""
    rule = "must be a percentage from 0 to below 100"
    value = parse_decimal(
        text.strip().rstrip("%") if len(text) <= 64 else text, "reserved_pct", rule, minimum=0, maximum=100
    )
    if value == 100:
        raise CalcError("reserved_pct", rule, text)
    return value / 100


def _read(v: dict[str, str], arch) -> tuple[int, int, int, str]:
    """Sequence length, batch, tp and the note on a default tp the model's heads refused ("" if none)."""
    for key in ("precision", "kv_dtype"):
        one_of(v, key, PRECISION_BITS)
    seq_len = parse_positive_int(v["seq_len"], "seq_len", maximum=_MAX_TOKENS)
    batch = parse_positive_int(v["batch"], "batch", maximum=_MAX_BATCH)
    tp = parse_positive_int(v["tp"], "tp", maximum=1024)
    if v["tp"] != _DEFAULT_TP or _splits(arch, tp):
        return seq_len, batch, tp, ""  # a tp the reader typed gets the engine's own error
    fit = next(t for t in range(tp, 0, -1) if _splits(arch, t))
    kv = "" if arch.uses_mla else f" and {arch.num_kv_heads} KV heads"
    note = f"tp {tp} (the default) does not split {arch.num_heads} attention heads{kv} evenly: shown at tp {fit}."
    return seq_len, batch, fit, note


def _splits(arch, tp: int) -> bool:
    """Whether ``tp`` divides the attention heads and divides (or is a multiple of) the KV heads (vLLM's rule)."""
    heads, kv_heads = arch.num_heads, arch.num_kv_heads
    return not heads % tp and (arch.uses_mla or not (kv_heads % tp if tp <= kv_heads else tp % kv_heads))


def _verdict_line(m, label: str, v: dict[str, str], seq_len: int, batch: int, tp: int, memory: int, gpu_label, fmt):
    many = f"{gpu_label}s" if gpu_label.endswith(" GPU") else gpu_label  # a custom GPU: "4 × 80.0 GB GPUs"
    where = f"{tp} × {many}" if tp > 1 else f"one {gpu_label}"
    per = " per GPU" if tp > 1 else ""
    if m.fits:
        return (
            f"Fits: {label} at {v['precision']} with {batch:,} × {seq_len:,}-token sequences on {where}; "
            f"up to {m.max_concurrent_sequences:,} such sequences fit."
        )
    if m.max_concurrent_sequences == 0:
        short = m.weights_per_gpu_bytes + m.reserved_per_gpu_bytes - memory
        return f"Does not fit: {label}'s weights at {v['precision']} plus the reserve leave no room on {where}" + (
            f" (short by {fmt(short)}{per} before any KV cache)." if short > 0 else "."
        )
    return (
        f"Does not fit: {batch:,} sequences of {seq_len:,} tokens need {fmt(m.kv_batch_per_gpu_bytes)} of KV "
        f"cache{per}; at most {m.max_concurrent_sequences:,} sequences fit on {where}."
    )


def _rows(m, arch, v: dict[str, str], seq_len: int, batch: int, fmt) -> list[tuple[str, str, str]]:
    binary = v["unit"] == "GiB"
    per_token = format_bytes(m.kv_bytes_per_token, binary=binary)
    per_token_gpu = format_bytes(m.kv_per_token_per_gpu_bytes, binary=binary)
    return [
        ("Weights", out("weights_bytes", fmt(m.weights_bytes)), out("weights_per_gpu", fmt(m.weights_per_gpu_bytes))),
        (
            "KV cache per token",
            out("kv_per_token", per_token, value=m.kv_bytes_per_token, unit="B"),
            out("kv_per_token_per_gpu", per_token_gpu, value=m.kv_per_token_per_gpu_bytes, unit="B"),
        ),
        (
            f"KV cache per sequence ({m.cached_tokens:,} tokens)"
            if m.cached_tokens == seq_len or not arch.global_attention_layers
            else f"KV cache per sequence ({m.cached_tokens:,} or {seq_len:,} tokens a layer)",
            out("kv_per_sequence", fmt(m.kv_per_sequence_bytes)),
            out("kv_per_sequence_per_gpu", fmt(m.kv_per_sequence_per_gpu_bytes)),
        ),
        (
            f"KV cache for the batch ({batch:,})",
            out("kv_batch", fmt(m.kv_batch_bytes)),
            out("kv_batch_per_gpu", fmt(m.kv_batch_per_gpu_bytes)),
        ),
        ("Reserved (activations, runtime)", "", out("reserved", fmt(m.reserved_per_gpu_bytes))),
        ("<strong>Total</strong>", "", out("total_per_gpu", fmt(m.total_per_gpu_bytes), "strong")),
    ]


def _notes(m, arch, v: dict[str, str], seq_len: int, tp: int) -> list[str]:
    found = []
    if m.cached_tokens < seq_len and arch.global_attention_layers:
        local = arch.num_layers - arch.global_attention_layers
        found.append(
            f"The {arch.sliding_window:,}-token sliding window caps the cache at {m.cached_tokens:,} tokens "
            f"in {local:,} of the {arch.num_layers:,} layers; the other {arch.global_attention_layers:,} attend "
            "to the whole sequence and cache every token."
        )
    elif m.cached_tokens < seq_len:
        found.append(
            f"The {arch.sliding_window:,}-token sliding window caps the cache at {m.cached_tokens:,} tokens "
            "per sequence."
        )
    if arch.uses_mla:
        found.append(
            "Latent attention caches one compressed latent per layer; every tensor-parallel GPU keeps all of it."
        )
    elif m.kv_replicas > 1:
        found.append(
            f"tp={tp} exceeds the {arch.num_kv_heads} KV heads: each head is replicated on "
            f"{m.kv_replicas} GPUs, so the per-GPU cache stops shrinking."
        )
    if seq_len > arch.max_position_embeddings:
        found.append(
            f"{seq_len:,} tokens is longer than the {arch.max_position_embeddings:,} positions the "
            "model is configured for."
        )
    if PRECISION_BITS[v["precision"]] < 8:
        found.append(
            "Quantization scales (e.g. one 16-bit scale per 128 weights, +3%) are "
            + NOT_COUNTED.format("not counted")
            + "."
        )
    return found


def _engine(arch, v: dict[str, str], seq_len: int, batch: int, tp: int, memory: int):
    """The engine's serving memory for the values ``v`` (read by ``_read``) on a GPU of ``memory`` bytes."""
    return inference_memory(
        arch,
        seq_len=seq_len,
        batch=batch,
        precision=v["precision"],
        kv_dtype=v["kv_dtype"],
        tp=tp,
        gpu=None,
        memory_bytes=memory,
        reserved_fraction=_reserve(v["reserved_pct"]),
    )


def _fixes(arch, v: dict[str, str], m, memory: int, fmt) -> str:
    """A "Does not fit"'s diagnosis (issue 19); its module loads only when the answer does not fit."""
    if m.fits:
        return ""
    from calc.widgets._fit_fixes import serving_fixes

    def engine(w: dict[str, str]):
        seq_len, batch, tp, _ = _read(w, arch)
        return _engine(arch, w, seq_len, batch, tp, memory)

    return serving_fixes(arch, v, CALCULATOR.defaults, m, fmt, engine, _splits)


def _compute(v: dict[str, str]) -> str:
    choice = read_model(v)
    arch = choice.arch
    seq_len, batch, tp, tp_note = _read(v, arch)
    fmt = byte_formatter(v["unit"])
    memory, gpu_label = gpu_memory(v)
    m = _engine(arch, v, seq_len, batch, tp, memory)
    segments = [
        ("Weights", m.weights_per_gpu_bytes),
        ("KV cache (batch)", m.kv_batch_per_gpu_bytes),
        ("Reserved", m.reserved_per_gpu_bytes),
    ]
    most = out("max_sequences", f"{m.max_concurrent_sequences:,}", value=m.max_concurrent_sequences)
    return (
        verdict(
            m.fits,
            _verdict_line(m, choice.label, v, seq_len, batch, tp, memory, gpu_label, fmt),
            short=fit_short(m.total_per_gpu_bytes, memory, fmt),
        )
        + _fixes(arch, v, m, memory, fmt)
        + model_chip(choice)
        + memory_chart(segments, memory, gpu_label, v["unit"])
        + table(("", "Whole model", "Per GPU"), _rows(m, arch, v, seq_len, batch, fmt), raw_cells=True)
        + _formulas(arch, m, v, fmt, seq_len, batch, tp, memory)
        + gpu_memory_line(memory, fmt)
        + kv(f"Max concurrent sequences of {seq_len:,} tokens", most)
        + notes(([tp_note] if tp_note else []) + _notes(m, arch, v, seq_len, tp))
    )


def _formulas(arch, m, v: dict[str, str], fmt, seq_len: int, batch: int, tp: int, memory: int) -> str:
    """Each row's arithmetic with the reader's numbers; a line is shown only where it is the engine's own."""
    bits = PRECISION_BITS[v["precision"]]
    kv_bits = PRECISION_BITS[v["kv_dtype"]]
    n = arch.param_count
    lines = []
    if m.weights_bytes == n * bits // 8:
        lines.append(("Weights", f"{bits} bits / 8 × {n:,} parameters = {fmt(m.weights_bytes)}"))
    if m.weights_per_gpu_bytes == -(-m.weights_bytes // tp):
        lines.append(("Weights per GPU", f"{fmt(m.weights_bytes)} / tp {tp} = {fmt(m.weights_per_gpu_bytes)}"))
    per_token = 2 * arch.num_layers * arch.num_kv_heads * arch.head_dim * kv_bits // 8
    if not arch.uses_mla and m.kv_bytes_per_token == per_token:
        lines.append(
            (
                "KV cache per token",
                (
                    f"2 (K, V) × {arch.num_layers} layers × {arch.num_kv_heads} KV heads × {arch.head_dim} head dim "
                    f"× {kv_bits} bits / 8 = {m.kv_bytes_per_token:,} B"
                ),
            )
        )
    if m.kv_per_sequence_bytes == m.kv_bytes_per_token * m.cached_tokens:
        lines.append(
            (
                "KV cache per sequence",
                f"{m.kv_bytes_per_token:,} B × {m.cached_tokens:,} tokens = {fmt(m.kv_per_sequence_bytes)}",
            )
        )
    if m.kv_batch_bytes == m.kv_per_sequence_bytes * batch:
        lines.append(
            ("KV cache for the batch", f"{fmt(m.kv_per_sequence_bytes)} × {batch:,} = {fmt(m.kv_batch_bytes)}")
        )
    lines.append(
        (
            "Total per GPU",
            (
                f"{fmt(m.weights_per_gpu_bytes)} + {fmt(m.kv_batch_per_gpu_bytes)} + "
                f"{fmt(m.reserved_per_gpu_bytes)} reserved = {fmt(m.total_per_gpu_bytes)} of {fmt(memory)}"
            ),
        )
    )
    return formulas(
        lines,
        "Kwon et al. 2023 (vLLM), Sec. 3 (KV cache per token: K and V per layer and KV head); Ainslie et al. 2023 "
        "(GQA) for the KV heads; calc.memory.inference.inference_memory",
    )


def _python(v: dict[str, str]) -> str:
    """[`inference_memory`][calc.memory.inference.inference_memory] on the chosen GPU's memory."""
    seq_len, batch, tp, _ = _read(v, read_model(v).arch)
    kw = dict(seq_len=seq_len, batch=batch, precision=v["precision"], kv_dtype=v["kv_dtype"], tp=tp, gpu=None)
    m = call(
        "inference_memory",
        Code("arch"),
        fn=inference_memory,
        **kw,
        memory_bytes=Code("memory"),
        reserved_fraction=_reserve(v["reserved_pct"]),
    )
    prints = [
        ("weights_per_gpu", "m.weights_per_gpu_bytes"),
        ("kv_batch_per_gpu", "m.kv_batch_per_gpu_bytes"),
        ("reserved", "m.reserved_per_gpu_bytes"),
        ("total_per_gpu", "m.total_per_gpu_bytes"),
        ("max_sequences", "m.max_concurrent_sequences"),
    ]
    return snippet([f"arch = {model_code(v)}", f"memory = {gpu_code(v)}", f"m = {m}"], prints)


CALCULATOR = accept_legacy_model(
    Calculator(
        name="serving-memory",
        title="Serving memory",
        description="Weights and KV cache per GPU when serving a model with tensor parallelism, "
        "and how many sequences of a given length fit.",
        fields=(
            *model_fields("llama3-70b"),
            select("precision", "Weights", "bf16", tuple(_PRECISION_LABELS.items())),
            select("kv_dtype", "KV cache", "bf16", tuple((k, label) for k, label in _PRECISION_LABELS.items())),
            seq_len_field("8192", "Context length (tokens)", help="prompt + generated tokens"),
            Field("batch", "Concurrent sequences", "16", kind="number"),
            Field("tp", "Tensor-parallel GPUs", _DEFAULT_TP, kind="number", help="must divide the attention heads"),
            *gpu_fields(),
            Field(
                "reserved_pct",
                "Reserved (%)",
                "10",
                kind="number",
                help="held back for activations and the runtime; vLLM's default leaves 10%",
            ),
            unit_field(),
        ),
        compute=_compute,
        python=_python,
    )
)
"""The serving-memory calculator."""
