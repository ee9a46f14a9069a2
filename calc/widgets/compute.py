"""The "Training compute" calculator: total FLOPs, days and GPU-hours from parameters, tokens, GPUs and MFU."""

from __future__ import annotations

import math
from fractions import Fraction

from calc.errors import CalcError
from calc.hardware import PEAK_DTYPES
from calc.hardware import gpu as _gpu
from calc.timing.compute import SECONDS_PER_DAY, training_time
from calc.units import format_count, parse_count, parse_decimal, parse_positive_int
from calc.widgets import Calculator, Field
from calc.widgets._code import Code, call, lit, model_code, snippet
from calc.widgets._fields import one_of, select
from calc.widgets._html import GPU_FIELD_OPTIONS, formulas, out, verdict
from calc.widgets._model import CUSTOM, model_chip, model_fields, read_model
from calc.widgets._parts import duration, kv_notes, plural

__all__ = ["CALCULATOR"]

_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


_MFU_MIN, _MFU_MAX = Fraction(1, 100), 100
"""Utilization from 0.01% to 100%: large runs report 38-46% (Llama 3 405B, PaLM); below 0.01% no run trains."""

_PEAK_TFLOPS_MIN, _PEAK_TFLOPS_MAX = Fraction(1, 1000), 10**6
"""Custom peak from 0.001 TFLOP/s (1 GFLOP/s, below any accelerator) to 10^6 TFLOP/s (an exaFLOP/s per GPU,
over 200 times the B200's 4.5 PFLOP/s dense FP8 datasheet peak)."""


def _number(text: str, field: str, low: Fraction, high: int, what: str) -> float:
    """A number typed in a field, from ``low`` to ``high``, read exactly before it becomes a float."""
    rule = f"must be {what} from {float(low):g} to {high:,}"
    return float(
        parse_decimal(text.strip().rstrip("%") if len(text) <= 64 else text, field, rule, minimum=low, maximum=high)
    )


def _sci(value: float) -> str:
    """``8.4e23`` as ``8.40 × 10²³``."""
    mantissa, _, exponent = f"{value:.2e}".partition("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


def _sig3(value: float) -> str:
    """Three significant figures, but never scientific notation and never fewer than the integer digits.

    Examples:
        >>> _sig3(11770.4), _sig3(3.14159), _sig3(5.9e-12)
        ('11,770', '3.14', '0.00000000000590')
    """
    if value >= 100:
        return f"{value:,.0f}"
    if value == 0 or value >= 1e-4:
        return f"{value:.3g}"
    return f"{value:.{2 - math.floor(math.log10(value))}f}"


def _duration(seconds: float) -> str:
    """Seconds as seconds (under a minute), minutes, hours, days or years, three significant figures."""
    if seconds < 60:
        return duration(seconds)
    if seconds < 3600:
        return f"{seconds / 60:.3g} minutes"
    if seconds < 2 * SECONDS_PER_DAY:
        return f"{seconds / 3600:.3g} hours"
    days = seconds / SECONDS_PER_DAY
    text = f"{_sig3(days)} days"
    if days >= 365:
        text += f" ({days / 365.25:.3g} years)"
    return text


def _read(v: dict[str, str], choice) -> tuple[int, int, int, float, int, str]:
    """Parameters (a chosen model's active ones), tokens, GPUs, MFU as a share, FLOPs per parameter-token, dtype."""
    # A chosen model trains its active parameters per token: 6ND counts the weights each token meets.
    params = choice.arch.active_param_count if choice else parse_count(v["params"], "params")
    tokens = parse_count(v["tokens"], "tokens")
    gpus = parse_positive_int(v["num_gpus"], "num_gpus", maximum=10**7)
    mfu = _number(v["mfu"], "mfu", _MFU_MIN, _MFU_MAX, "a percentage") / 100
    factor = parse_positive_int(v["factor"], "factor", minimum=6, maximum=8)
    if factor not in (6, 8):
        raise CalcError("factor", "must be 6 or 8", v["factor"])
    return params, tokens, gpus, mfu, factor, one_of(v, "dtype", PEAK_DTYPES)


def _device(v: dict[str, str], dtype: str) -> tuple[float, str, int]:
    """Peak FLOP/s, label and board power (0: unknown) of the chosen or custom GPU."""
    if v["gpu"] == "custom":
        tflops = _number(v["peak_tflops"], "peak_tflops", _PEAK_TFLOPS_MIN, _PEAK_TFLOPS_MAX, "a number of TFLOP/s")
        peak = tflops * 1e12
        return peak, f"{peak / 1e12:g} TFLOP/s GPU", 0
    device = _gpu(v["gpu"])
    return float(device.peak_flops(dtype)), device.label, device.tdp_watts


def _rows(t, params, tokens, gpus, achieved, peak, factor, dtype, kind, tdp) -> list[tuple[str, str, str]]:
    rows = [
        (
            "Total training FLOPs",
            out("total_flops", _sci(t.total_flops), value=t.total_flops, unit="FLOP"),
            f"{factor} × parameters × tokens"
            + (" (Kaplan's 6ND)" if factor == 6 else " (Narayanan Eq. 4, full recompute)"),
        ),
        (
            "Wall-clock time",
            out("days", f"{_sig3(t.days)} days", value=t.days, unit="days"),
            f"{_sig3(t.seconds / 3600)} hours",
        ),
        (
            "GPU-hours",
            out("gpu_hours", _sig3(t.gpu_hours), value=t.gpu_hours, unit="h"),
            f"{plural(gpus, 'GPU')} × {_sig3(t.seconds / 3600)} hours",
        ),
        (
            "Achieved per GPU",
            out("achieved_tflops", f"{achieved / 1e12:,.1f} TFLOP/s", value=achieved / 1e12, unit="TFLOP/s"),
            f"{kind} × {peak / 1e12:,.1f} TFLOP/s dense {dtype} peak",
        ),
        (
            "PF-days",
            out("pf_days", _sig3(pf_days := t.total_flops / (1e15 * SECONDS_PER_DAY)), value=pf_days, unit="PF-days"),
            "as GPT-3 Table D.1 counts",
        ),
        (
            "Tokens per parameter",
            out("tokens_per_param", _sig3(tokens / params), value=tokens / params),
            "Chinchilla's compute-optimal runs use about 20",
        ),
    ]
    if tdp:
        mwh = t.gpu_hours * tdp / 1e6
        rows.append(
            (
                "GPU energy at board power",
                out("energy_mwh", f"{_sig3(mwh)} MWh", value=mwh, unit="MWh"),
                f"{tdp} W × GPU-hours; an upper bound for the GPUs alone (no host, network or cooling)",
            )
        )
    return rows


def _lines(t, params, tokens, gpus, mfu, achieved, peak, factor) -> list[tuple[str, str]]:
    seconds = t.total_flops / (gpus * achieved)
    return [
        (
            "Total training FLOPs",
            f"{factor} × {params:,} parameters × {plural(tokens, 'token')} = {_sci(t.total_flops)}",
        ),
        ("Achieved per GPU", f"{mfu * 100:.3g}% × {peak / 1e12:,.1f} TFLOP/s = {achieved / 1e12:,.1f} TFLOP/s"),
        (
            "Wall-clock time",
            (
                f"{_sci(t.total_flops)} / ({plural(gpus, 'GPU')} × {achieved / 1e12:,.1f} TFLOP/s) "
                f"= {_sig3(seconds)} s = {_sig3(t.days)} days"
            ),
        ),
        ("GPU-hours", f"{gpus:,} × {_sig3(t.seconds / 3600)} hours = {_sig3(t.gpu_hours)}"),
    ]


def _compute(v: dict[str, str]) -> str:
    choice = read_model(v, allow_custom=True)
    params, tokens, gpus, mfu, factor, dtype = _read(v, choice)
    peak, label, tdp = _device(v, dtype)
    achieved = mfu * peak
    t = training_time(params, tokens, gpus, achieved, flops_per_param_token=factor)
    kind = "MFU" if factor == 6 else "HFU"
    named = f"{choice.label}, " if choice else ""
    active = "active " if choice and choice.arch.is_moe else ""
    line = (
        f"{named}{format_count(params)} {active}parameters on {format_count(tokens)} "
        f"token{'' if tokens == 1 else 's'}: {_sci(t.total_flops)} FLOPs, "
        f"{_duration(t.seconds)} on {gpus:,} × {label} at {mfu * 100:.3g}% {kind}."
    )
    rows = _rows(t, params, tokens, gpus, achieved, peak, factor, dtype, kind, tdp)
    lines = _lines(t, params, tokens, gpus, mfu, achieved, peak, factor)
    source = "Kaplan et al. 2020, Sec. 2.1 (C ≈ 6ND)" if factor == 6 else "Narayanan et al. 2021, Eq. 4 (8ND)"
    return (
        verdict(True, line)
        + model_chip(choice)
        + kv_notes(rows, escaped=False)
        + formulas(lines, source + "; Chowdhery et al. 2022 (PaLM), App. B (MFU)")
    )


def _python(v: dict[str, str]) -> str:
    """[`training_time`][calc.timing.compute.training_time] at the achieved FLOP/s: MFU × the GPU's dense peak."""
    choice = read_model(v, allow_custom=True)
    _params, _tokens, gpus, _mfu, factor, dtype = _read(v, choice)
    body = [f"arch = {model_code(v)}"] if choice else []
    if v["gpu"] == "custom":
        tflops = _number(v["peak_tflops"], "peak_tflops", _PEAK_TFLOPS_MIN, _PEAK_TFLOPS_MAX, "a number of TFLOP/s")
        body.append(f"peak = {tflops!r} * 1e12  # FLOP/s")
    else:
        body.append(f"peak = float(calc.gpu({lit(v['gpu'])}).peak_flops({lit(dtype)}))  # dense FLOP/s")
    percent = _number(v["mfu"], "mfu", _MFU_MIN, _MFU_MAX, "a percentage")
    body.append(f"achieved = {percent!r} / 100 * peak")
    count = Code("arch.active_param_count") if choice else v["params"]
    time = call(
        "training_time", count, v["tokens"], gpus, Code("achieved"), fn=training_time, flops_per_param_token=factor
    )
    prints = [("total_flops", "t.total_flops"), ("days", "t.days"), ("gpu_hours", "t.gpu_hours")]
    return snippet([*body, f"t = {time}"], [*prints, ("achieved_tflops", "achieved / 1e12")])


CALCULATOR = Calculator(
    name="training-compute",
    title="Training compute",
    description="Total FLOPs, wall-clock days and GPU-hours to train a model, "
    "from the 6ND rule and an assumed utilization.",
    fields=(
        *model_fields(CUSTOM, custom="Custom: the parameters below"),
        Field(
            "params",
            "Parameters",
            "70B",
            help="e.g. 7B, 70e9, 405B (active parameters for a MoE); a chosen model gives its active parameters",
            enabled_when=("preset", CUSTOM),
        ),
        Field("tokens", "Training tokens", "2T", help="e.g. 300B, 2T, 15.6T"),
        Field("num_gpus", "GPUs", "2048", kind="number"),
        select("gpu", "GPU", "h100-sxm", GPU_FIELD_OPTIONS),
        Field(
            "peak_tflops",
            "Peak TFLOP/s (custom)",
            "989.4",
            kind="number",
            enabled_when=("gpu", "custom"),
            help="dense, per GPU",
        ),
        select("dtype", "Math precision", "bf16", (("bf16", "BF16 / FP16 peak"), ("fp8", "FP8 peak"))),
        Field("mfu", "Utilization (%)", "40", kind="number", help="Llama 3 405B: 38–43% MFU; PaLM: 46%"),
        select(
            "factor",
            "FLOPs per parameter per token",
            "6",
            (
                ("6", "6: MFU (model FLOPs)"),
                ("8", "8: HFU, full recomputation"),
            ),
            help="6: the utilization is MFU; 8: it is HFU, counting full recomputation's extra forward",
        ),
    ),
    compute=_compute,
    python=_python,
)
"""The training-compute calculator."""
