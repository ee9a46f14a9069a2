"""Training compute: FLOP counts, model and hardware FLOPs utilization (MFU/HFU), time to train.

Three published ways to count training FLOPs, from the coarsest to the most detailed:

* **6ND** (Kaplan et al. 2020, arXiv:2001.08361, Sec. 2.1): 2 FLOPs per parameter per
  token forward, 4 backward; attention's sequence-length term is dropped.
* **PaLM's 6N + 12LHQT per token** (Chowdhery et al. 2022, arXiv:2204.02311, Appendix B):
  6ND plus the attention matmuls (QK^T and attention-times-V).
* **Megatron-LM's per-iteration count** (Narayanan et al. 2021, arXiv:2104.04473, Eq. 3;
  Korthikanti et al. 2022, arXiv:2205.05198, Eq. 7 and 8): the GPT layer's matmuls,
  attention and the logit layer, counted with or without activation recomputation.

*Model* FLOPs count the work the model needs (no recomputation); *hardware* FLOPs
add what recomputation re-does. MFU and HFU divide each by the time taken and by
the GPUs' dense peak (Korthikanti Sec. 6.3; Chowdhery Sec. 4.1). FLOP counts are
exact ``int``\\s; utilizations, rates and times are ``float``\\s.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from calc.errors import CalcError
from calc.memory._activation_args import RECOMPUTE_MODES
from calc.units import parse_count, parse_positive_int

__all__ = [
    "RECOMPUTE_MODES",
    "SECONDS_PER_DAY",
    "TrainingTime",
    "Utilization",
    "flops_6nd",
    "megatron_flops_per_iteration",
    "megatron_utilization",
    "palm_flops_per_token",
    "training_time",
    "utilization",
    "utilization_from_throughput",
]


SECONDS_PER_DAY: int = 86_400
"""Seconds in a day, for the day counts Narayanan et al. 2021 Sec. 5.1 print (34 days, 84 days)."""


def _positive_float(value: object, field: str) -> float:
    """Read a positive, finite real number (``int``, ``float`` or text such as ``"989.4e12"``)."""
    rule = "must be a positive number"
    if isinstance(value, bool):
        raise CalcError(field, rule, value)
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip().replace(",", "").replace("_", ""))
        except ValueError:
            raise CalcError(field, rule, value) from None
    else:
        raise CalcError(field, rule, value)
    if not math.isfinite(number) or number <= 0:
        raise CalcError(field, rule, value)
    return number


def flops_6nd(params: int | float | str, tokens: int | float | str) -> int:
    """Training FLOPs by the 6ND rule: 6 x parameters x tokens.

    Kaplan et al. 2020 (arXiv:2001.08361), Sec. 2.1: "C ~ 6N floating point operators per
    training token" (2N forward, 4N backward), with N the non-embedding parameters. Used with
    the total parameter count by GPT-3 (Brown et al. 2020, Table D.1), Chinchilla (Hoffmann et
    al. 2022, Table 3) and Llama 3 (arXiv:2407.21783, Sec. 3.3.2). The attention term
    (``2 n_layer n_ctx d_model`` per token forward) is left out; see
    [`palm_flops_per_token`][calc.timing.compute.palm_flops_per_token] to include it.

    Args:
        params: Parameter count (``7e9``, ``"7B"``...).
        tokens: Training tokens (``"300B"``, ``"15.6T"``...).

    Returns:
        FLOPs, exact.

    Raises:
        CalcError: When either count is not a positive whole number.

    Examples:
        >>> flops_6nd("174.6B", "300B")  # GPT-3, Table D.1 prints 3.14E+23
        314280000000000000000000
        >>> f"{flops_6nd('405.85B', '15.6T'):.2e}"  # Llama 3 405B: 3.8e25
        '3.80e+25'
    """
    return 6 * parse_count(params, "params") * parse_count(tokens, "tokens")


def _whole(**values: object) -> list[int]:
    """Each value as a whole number of at least 1, checked in order; an error names the value's keyword."""
    return [parse_positive_int(value, name) for name, value in values.items()]


def megatron_flops_per_iteration(
    batch: int | str,
    seq_len: int | str,
    layers: int | str,
    hidden: int | str,
    vocab: int | str,
    *,
    recompute: str = "full",
) -> int:
    """FLOPs of one training iteration of a GPT model, as Megatron-LM counts them.

    Per layer, the forward pass costs ``24Bsh^2 + 4Bs^2h`` (the QKV, projection and 4h-MLP
    matmuls, then QK^T and attention-times-V); the backward pass twice that; the logit
    layer ``6BshV`` in all. Recomputation re-runs forward work:

    * ``"none"``: ``72Bslh^2 (1 + s/(6h) + V/(12lh))`` - Korthikanti et al. 2022
      (arXiv:2205.05198), Eq. 7: the *model* FLOPs, the numerator of MFU.
    * ``"selective"``: ``72Bslh^2 (1 + s/(3h) + V/(12lh))`` - Korthikanti Eq. 8: only the
      attention core (the ``s^2`` term) is recomputed; the numerator of HFU.
    * ``"full"``: ``96Bslh^2 (1 + s/(6h) + V/(16lh))`` - Narayanan et al. 2021
      (arXiv:2104.04473), Eq. 3: every layer's forward pass is run twice.

    All three expand to integers (for example Eq. 3 is ``96Bslh^2 + 16Bs^2lh + 6BshV``), so the
    result is exact. Eq. 8 adds ``12Bs^2lh`` to Eq. 7, three times the forward cost of the
    attention core (``4Bs^2lh``); it is used as printed, because Korthikanti Table 5's HFU column
    follows it (22B: 43.8% from Eq. 8, printed 43.7%; a single forward re-run would give 42.4%).
    So selective recomputation counts more FLOPs than full recomputation once ``s > 3h``. The formulas
    assume multi-head attention, a 4h GeLU MLP and a vocabulary
    projection; they ignore layer norms, biases, softmax and element-wise work.

    Args:
        batch: Sequences per iteration (the global batch, B).
        seq_len: Sequence length s.
        layers: Transformer layers l.
        hidden: Hidden size h.
        vocab: Vocabulary size V (Megatron pads it, e.g. 51,200).
        recompute: One of [`RECOMPUTE_MODES`][calc.timing.compute.RECOMPUTE_MODES].

    Returns:
        FLOPs per iteration, exact.

    Raises:
        CalcError: For a non-positive size or an unknown recompute mode.

    Examples:
        >>> megatron_flops_per_iteration(512, 2048, 24, 2304, 51200)  # Narayanan Table 1, 1.7B row
        15466830067924992
        >>> megatron_flops_per_iteration(4, 2048, 48, 6144, 51200, recompute="none")
        1143560812363776
    """
    b, s, l, h, v = _whole(batch=batch, seq_len=seq_len, layers=layers, hidden=hidden, vocab=vocab)
    logits = 6 * b * s * h * v
    if recompute == "none":
        return 72 * b * s * l * h * h + 12 * b * s * s * l * h + logits
    if recompute == "selective":
        return 72 * b * s * l * h * h + 24 * b * s * s * l * h + logits
    if recompute == "full":
        return 96 * b * s * l * h * h + 16 * b * s * s * l * h + logits
    raise CalcError("recompute", f"must be one of {', '.join(RECOMPUTE_MODES)}", recompute, code="unknown-name")


def palm_flops_per_token(
    params: int | float | str,
    layers: int | str,
    heads: int | str,
    head_dim: int | str,
    seq_len: int | str,
    *,
    attention: bool = True,
) -> int:
    """Training FLOPs per token, PaLM's way: ``6N + 12LHQT``.

    Chowdhery et al. 2022 (arXiv:2204.02311), Appendix B: the matmuls cost 6N per token; the
    attention matmuls add ``6LH(2QT)`` = ``12LHQT``, with L layers, H heads, Q head dimension
    and T sequence length. With ``attention=False`` this is 6N, the "MFU without attention"
    PaLM also prints (45.7% vs 46.2% for PaLM 540B).

    Args:
        params: Parameter count N.
        layers: Layers L.
        heads: Attention heads H.
        head_dim: Head dimension Q.
        seq_len: Sequence length T.
        attention: Include the ``12LHQT`` term.

    Returns:
        FLOPs per token, exact.

    Raises:
        CalcError: For a non-positive input.

    Examples:
        >>> palm_flops_per_token("540.35B", 118, 48, 256, 2048)  # PaLM 540B, Appendix B
        3277734806784
        >>> palm_flops_per_token("540.35B", 118, 48, 256, 2048, attention=False)
        3242100000000
    """
    n = parse_count(params, "params")
    if not attention:
        return 6 * n
    l, h, q, t = _whole(layers=layers, heads=heads, head_dim=head_dim, seq_len=seq_len)
    return 6 * n + 12 * l * h * q * t


def utilization(
    flops_per_step: int | float | str,
    step_time_s: int | float | str,
    num_gpus: int | str,
    peak_flops: int | float | str,
) -> float:
    """FLOPs utilization: achieved FLOP/s over the GPUs' combined peak.

    ``flops_per_step / (step_time_s x num_gpus x peak_flops)``. Pass *model* FLOPs (no
    recomputation) for MFU, *hardware* FLOPs (with it) for HFU: Korthikanti et al. 2022
    (arXiv:2205.05198), Sec. 6.3 and Table 5; Chowdhery et al. 2022 (arXiv:2204.02311), Sec. 4.1.

    The value is not clamped: above 1 means the inputs are impossible on that hardware
    (a step faster than peak allows, or the wrong peak); the calculators say so.

    Args:
        flops_per_step: FLOPs of one step (or of the whole run, with its total time).
        step_time_s: Seconds per step.
        num_gpus: GPUs that shared the step.
        peak_flops: Dense peak of one GPU, FLOP/s (e.g. ``GPU.bf16_flops``).

    Returns:
        The utilization as a fraction (0.5 = 50%).

    Raises:
        CalcError: For a non-positive input.

    Examples:
        >>> round(utilization(1_143_560_812_363_776, 1.10, 8, 312e12), 4)  # Korthikanti Table 5, 22B MFU
        0.4165
    """
    flops = _positive_float(flops_per_step, "flops_per_step")
    seconds = _positive_float(step_time_s, "step_time_s")
    gpus = parse_positive_int(num_gpus, "num_gpus")
    peak = _positive_float(peak_flops, "peak_flops")
    return flops / (seconds * gpus * peak)


def utilization_from_throughput(
    tokens_per_s: int | float | str,
    flops_per_token: int | float | str,
    num_gpus: int | str,
    peak_flops: int | float | str,
) -> float:
    """FLOPs utilization from a token throughput: ``tokens/s x FLOPs/token / (GPUs x peak)``.

    PaLM's definition (Chowdhery et al. 2022, arXiv:2204.02311, Sec. 4.1): "the ratio of the
    observed throughput (tokens-per-second) relative to the theoretical maximum throughput of a
    system operating at peak FLOPs", the maximum being ``P / (6N + 12LHQT)``.

    Args:
        tokens_per_s: Observed training throughput of the whole job.
        flops_per_token: Model FLOPs per token (MFU) or hardware FLOPs per token (HFU).
        num_gpus: Accelerators in the job.
        peak_flops: Dense peak of one accelerator, FLOP/s.

    Returns:
        The utilization as a fraction.

    Raises:
        CalcError: For a non-positive input.

    Examples:
        >>> round(utilization_from_throughput(238.3e3, 3_277_731_760_128, 6144, 275e12), 4)  # PaLM 540B
        0.4623
    """
    rate = _positive_float(tokens_per_s, "tokens_per_s")
    per_token = _positive_float(flops_per_token, "flops_per_token")
    gpus = parse_positive_int(num_gpus, "num_gpus")
    peak = _positive_float(peak_flops, "peak_flops")
    return rate * per_token / (gpus * peak)


@dataclass(frozen=True)
class Utilization:
    """MFU and HFU of one measured Megatron-style iteration.

    Attributes:
        model_flops: FLOPs per iteration without recomputation (Korthikanti Eq. 7).
        hardware_flops: FLOPs per iteration actually executed, recomputation included.
        mfu: Model FLOPs utilization, a fraction.
        hfu: Hardware FLOPs utilization, a fraction.
        model_flops_per_gpu_s: Achieved model FLOP/s per GPU (the "TFLOP/s per GPU" papers print,
            times 10^12, when they count model FLOPs).
    """

    model_flops: int
    hardware_flops: int
    mfu: float
    hfu: float
    model_flops_per_gpu_s: float

    def as_dict(self) -> dict[str, float]:
        """The fields as a plain ``dict``.

        Examples:
            >>> megatron_utilization(4, 2048, 48, 6144, 51200, step_time_s=1.1, num_gpus=8,
            ...                      peak_flops=312e12).as_dict()["hardware_flops"]
            1202934440263680
        """
        return asdict(self)


def megatron_utilization(
    batch: int | str,
    seq_len: int | str,
    layers: int | str,
    hidden: int | str,
    vocab: int | str,
    *,
    step_time_s: int | float | str,
    num_gpus: int | str,
    peak_flops: int | float | str,
    recompute: str = "selective",
) -> Utilization:
    """MFU and HFU of a GPT training iteration from its shape, its time and the GPUs' peak.

    Korthikanti et al. 2022 (arXiv:2205.05198), Sec. 6.3 and Table 5: MFU divides the model
    FLOPs of Eq. 7 by time x GPUs x peak; HFU divides the FLOPs the hardware ran, which for
    selective recomputation is Eq. 8 (for full recomputation, Narayanan Eq. 3).

    Args:
        batch: Global batch in sequences.
        seq_len: Sequence length.
        layers: Transformer layers.
        hidden: Hidden size.
        vocab: Vocabulary size.
        step_time_s: Measured seconds per iteration.
        num_gpus: GPUs in the job.
        peak_flops: Dense peak of one GPU, FLOP/s.
        recompute: The recomputation the run used (sets the HFU numerator).

    Returns:
        A [`Utilization`][calc.timing.compute.Utilization].

    Raises:
        CalcError: For a non-positive input or an unknown recompute mode.

    Examples:
        >>> u = megatron_utilization(64, 2048, 96, 12288, 51200, step_time_s=13.75, num_gpus=64,
        ...                          peak_flops=312e12)  # Korthikanti Table 5, 175B: 51.4% / 52.8%
        >>> round(u.mfu * 100, 1), round(u.hfu * 100, 1)
        (51.4, 52.8)
    """
    model = megatron_flops_per_iteration(batch, seq_len, layers, hidden, vocab, recompute="none")
    hardware = megatron_flops_per_iteration(batch, seq_len, layers, hidden, vocab, recompute=recompute)
    mfu = utilization(model, step_time_s, num_gpus, peak_flops)
    hfu = utilization(hardware, step_time_s, num_gpus, peak_flops)
    per_gpu = model / (_positive_float(step_time_s, "step_time_s") * parse_positive_int(num_gpus, "num_gpus"))
    return Utilization(model, hardware, mfu, hfu, per_gpu)


@dataclass(frozen=True)
class TrainingTime:
    """Time to train, from a FLOP count and an achieved per-GPU rate.

    Attributes:
        total_flops: FLOPs the run executes (factor x parameters x tokens), exact.
        seconds: Wall-clock seconds.
        gpu_hours: GPU-hours (seconds x GPUs / 3600).
    """

    total_flops: int
    seconds: float
    gpu_hours: float

    @property
    def days(self) -> float:
        """Wall-clock days."""
        return self.seconds / SECONDS_PER_DAY

    def as_dict(self) -> dict[str, float]:
        """The fields and ``days`` as a plain ``dict``.

        Examples:
            >>> sorted(training_time("7B", "2T", 1024, 400e12).as_dict())
            ['days', 'gpu_hours', 'seconds', 'total_flops']
        """
        out = asdict(self)
        out["days"] = self.days
        return out


def training_time(
    params: int | float | str,
    tokens: int | float | str,
    num_gpus: int | str,
    flops_per_gpu_s: int | float | str,
    *,
    flops_per_param_token: int | str = 6,
) -> TrainingTime:
    """Time and GPU-hours to train ``params`` parameters on ``tokens`` tokens.

    Narayanan et al. 2021 (arXiv:2104.04473), Eq. 4: time ~ ``8TP / (nX)`` with T tokens,
    P parameters, n GPUs and X the achieved FLOP/s per GPU. The factor 8 is 2 (forward) + 4
    (backward) + 2 (forward again, for full activation recomputation), matching an X that
    counts hardware FLOPs. Without recomputation, or with X = MFU x peak (model FLOPs), the
    factor is 6 (Kaplan's 6ND). The factor is an explicit argument because the two readings
    differ by a third.

    Args:
        params: Parameters P.
        tokens: Training tokens T.
        num_gpus: GPUs n.
        flops_per_gpu_s: Achieved FLOP/s per GPU, X (e.g. ``0.4 * GPU.bf16_flops``).
        flops_per_param_token: FLOPs per parameter per token: 6 (model FLOPs) or 8 (with full
            recomputation, as in Eq. 4).

    Returns:
        A [`TrainingTime`][calc.timing.compute.TrainingTime].

    Raises:
        CalcError: For a non-positive input.

    Examples:
        >>> round(training_time("175B", "300B", 1024, 140e12, flops_per_param_token=8).days)  # GPT-3: 34 days
        34
        >>> round(training_time("1008B", "450B", 3072, 163e12, flops_per_param_token=8).days)  # 1T: 84 days
        84
    """
    factor = parse_positive_int(flops_per_param_token, "flops_per_param_token")
    total = factor * parse_count(params, "params") * parse_count(tokens, "tokens")
    gpus = parse_positive_int(num_gpus, "num_gpus")
    rate = _positive_float(flops_per_gpu_s, "flops_per_gpu_s")
    seconds = total / (gpus * rate)
    return TrainingTime(total, seconds, seconds * gpus / 3600)
