"""The "Serving time" calculator: time to first token, inter-token latency and throughput of one replica.

Prefill and decode as rooflines ([`calc.timing.serving`][calc.timing.serving]: Pope et al. 2022, Sec. 2-3;
Williams et al. 2009), the batch where decode turns compute-bound, and the KV-cache limit on the batch
([`inference_memory`][calc.memory.inference.inference_memory], Kwon et al. 2023, Sec. 3).
"""

from __future__ import annotations

from calc.errors import CalcError
from calc.hardware import PEAK_DTYPES, gpu
from calc.memory.inference import inference_memory
from calc.timing.serving import decode_compute_bound_batch, decode_step, prefill_time
from calc.units import parse_positive_int
from calc.widgets import Calculator, Field
from calc.widgets._code import Code, call, model_code, snippet
from calc.widgets._fields import degree, one_of, select
from calc.widgets._html import GPU_FIELD_OPTIONS, out, verdict
from calc.widgets._model import model_chip, model_fields, read_model
from calc.widgets._parts import NOT_COUNTED, duration, kv_notes, notes, plural

__all__ = ["CALCULATOR"]

_DTYPE_LABELS = {"bf16": "BF16 (2 B)", "fp16": "FP16 (2 B)", "fp8": "FP8 (1 B)"}
_KV_LABELS = {"bf16": "BF16 (2 B)", "fp16": "FP16 (2 B)", "fp8": "FP8 (1 B)"}
_GPU_OPTIONS = tuple(o for o in GPU_FIELD_OPTIONS if o[0] != "custom")
_MAX_TOKENS = 1 << 24
_MAX_BATCH = 1 << 20


def _read(v: dict[str, str]) -> tuple[str, int, int, int, int]:
    """GPU, tp, batch, prompt and output tokens, each checked."""
    name = one_of(v, "gpu", (g for g, _ in _GPU_OPTIONS))
    for key in ("precision", "kv_dtype"):
        one_of(v, key, PEAK_DTYPES)
    tp = parse_positive_int(v["tp"], "tp", maximum=1024)
    batch = parse_positive_int(v["batch"], "batch", maximum=_MAX_BATCH)
    prompt = parse_positive_int(v["prompt_tokens"], "prompt_tokens", maximum=_MAX_TOKENS)
    output = parse_positive_int(v["output_tokens"], "output_tokens", maximum=_MAX_TOKENS)
    try:
        gpu(name).peak_flops(v["precision"])
    except CalcError as err:  # FP8 on a chip without it: the engine's "dtype" is this form's "precision"
        raise CalcError("precision", err.rule, v["precision"], code=err.code) from None
    return name, tp, batch, prompt, output


def _engine(arch, v: dict[str, str]):
    name, tp, batch, prompt, output = _read(v)
    kw = dict(gpu=name, tp=tp, dtype=v["precision"])
    m = inference_memory(
        arch, seq_len=prompt + output, batch=batch, precision=v["precision"], kv_dtype=v["kv_dtype"], tp=tp, gpu=name
    )
    p = prefill_time(arch, prompt, batch=batch, **kw)
    d = decode_step(arch, batch=batch, context=prompt + output // 2, kv_dtype=v["kv_dtype"], **kw)
    knee = decode_compute_bound_batch(arch, gpu=name, dtype=v["precision"])
    return m, p, d, knee


def _rows(m, p, d, knee: int, v: dict[str, str]) -> list[tuple[str, str, str]]:
    """The result lines: the times, the throughputs, the compute-bound batch and the KV-cache limit."""
    _, tp, batch, prompt, output = _read(v)
    latency = p.time_s + output * d.time_s
    return [
        (
            "Time to first token",
            out("ttft", duration(p.time_s), value=p.time_s, unit="s"),
            (f"prefill of the {batch:,} prompts" if batch > 1 else "prefill of the prompt")
            + f" of {prompt:,} tokens in one pass ("
            + ("compute" if p.compute_s >= p.memory_s else "memory")
            + "-bound), queueing aside",
        ),
        (
            "Inter-token latency",
            out("itl", duration(d.time_s), value=d.time_s, unit="s"),
            f"one decode step at {prompt + output // 2:,} cached tokens a sequence (mid-output): "
            f"{d.bound}-bound" + (f", {duration(d.tp_s)} of it tensor-parallel all-reduces" if tp > 1 else ""),
        ),
        (
            "Request latency",
            out("request_latency", duration(latency), value=latency, unit="s"),
            f"first token + {output:,} decode steps",
        ),
        (
            "Output tokens/s, batch",
            out("tokens_per_s", f"{d.tokens_per_s:,.0f}", value=d.tokens_per_s),
            "batch / inter-token latency",
        ),
        (
            "Output tokens/s per GPU",
            out("tokens_per_s_per_gpu", f"{d.tokens_per_s / tp:,.0f}", value=d.tokens_per_s / tp),
            f"over the {tp} GPU{'s' if tp > 1 else ''} of the replica",
        ),
        (
            "Batch where decode turns compute-bound",
            out("compute_bound_batch", f"{knee:,}", value=knee),
            "weights only: the GPU's ridge point × bytes per parameter / 2; long contexts need more",
        ),
        (
            f"Most sequences the KV cache holds ({prompt + output:,} tokens)",
            out("max_batch", f"{m.max_concurrent_sequences:,}", value=m.max_concurrent_sequences),
            "beside the weights, 10% reserved, on each GPU",
        ),
    ]


def _compute(v: dict[str, str]) -> str:
    choice = read_model(v)
    arch = choice.arch
    m, p, d, knee = _engine(arch, v)
    _, tp, batch, prompt, output = _read(v)
    where = f"{tp} × {gpu(v['gpu']).label}" if tp > 1 else f"one {gpu(v['gpu']).label}"
    line = (
        f"{choice.label} on {where}, {plural(batch, 'sequence')}: first token after {duration(p.time_s)}, "
        f"then one every {duration(d.time_s)} ({d.bound}-bound); {d.tokens_per_s:,.0f} tokens/s for the batch."
    )
    warn = []
    if batch > m.max_concurrent_sequences:
        warn.append(
            f"{plural(batch, 'sequence')} {'does' if batch == 1 else 'do'} not fit: the KV cache holds "
            f"{m.max_concurrent_sequences:,} of "
            f"{prompt + output:,} tokens on {where}."
        )
    warn.append(
        "Kernel launches, scheduling, queueing and paged-attention waste are "
        + NOT_COUNTED.format("not modelled")
        + ": measured latencies run higher, most of all at small batches."
    )
    rows = _rows(m, p, d, knee, v)
    return verdict(batch <= m.max_concurrent_sequences, line) + model_chip(choice) + kv_notes(rows) + notes(warn)


def _python(v: dict[str, str]) -> str:
    """[`prefill_time`][calc.timing.serving.prefill_time], [`decode_step`][calc.timing.serving.decode_step],
    [`decode_compute_bound_batch`][calc.timing.serving.decode_compute_bound_batch] and
    [`inference_memory`][calc.memory.inference.inference_memory]."""
    name, tp, batch, prompt, output = _read(v)
    kw = dict(gpu=name, tp=tp, dtype=v["precision"])
    arch = Code("arch")
    body = [
        f"arch = {model_code(v)}",
        "p = " + call("prefill_time", arch, prompt, fn=prefill_time, batch=batch, **kw),
        "d = "
        + call(
            "decode_step",
            arch,
            fn=decode_step,
            batch=batch,
            context=prompt + output // 2,
            kv_dtype=v["kv_dtype"],
            **kw,
        ),
        "m = "
        + call(
            "inference_memory",
            arch,
            fn=inference_memory,
            seq_len=prompt + output,
            batch=batch,
            precision=v["precision"],
            kv_dtype=v["kv_dtype"],
            tp=tp,
            gpu=name,
        ),
    ]
    knee = call("decode_compute_bound_batch", arch, fn=decode_compute_bound_batch, gpu=name, dtype=v["precision"])
    prints = [
        ("ttft", "p.time_s"),
        ("itl", "d.time_s"),
        ("request_latency", f"p.time_s + {output} * d.time_s"),
        ("tokens_per_s", "d.tokens_per_s"),
        ("tokens_per_s_per_gpu", f"d.tokens_per_s / {tp}"),
        ("compute_bound_batch", knee),
        ("max_batch", "m.max_concurrent_sequences"),
    ]
    return snippet(body, prints)


CALCULATOR = Calculator(
    name="serving-time",
    title="Serving time",
    description="Time to first token, inter-token latency and tokens/s of one serving replica, the batch where "
    "decode turns compute-bound and how many sequences the KV cache holds.",
    fields=(
        *model_fields("llama3-8b"),
        select("gpu", "GPU", "h100-sxm", _GPU_OPTIONS),
        degree("tp", "1", "GPUs of one replica; must divide the attention heads", label="Tensor-parallel GPUs"),
        select("precision", "Weights and math", "bf16", tuple(_DTYPE_LABELS.items())),
        select("kv_dtype", "KV cache", "bf16", tuple(_KV_LABELS.items())),
        Field("batch", "Concurrent sequences", "16", kind="number", help="sequences decoded together"),
        Field("prompt_tokens", "Prompt tokens", "1024", kind="number", group="Batch & sequence"),
        Field("output_tokens", "Output tokens", "256", kind="number", group="Batch & sequence"),
    ),
    compute=_compute,
    python=_python,
)
"""The serving-time calculator."""
