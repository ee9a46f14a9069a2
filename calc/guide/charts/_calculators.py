"""The memory calculators' line charts: engine numbers for the reader's inputs, as ``[data-chart]`` elements.

Each function computes its series with the engine (model state, activations), builds the spec with
``_lines`` and wraps it with [`chart`][calc.guide.charts.chart], with an accessible name that carries the key
numbers. The time calculators' charts are ``_time``'s, so a calculator loads only the charts it draws.

Examples:
    >>> _powers_of_two(1, 10)
    [1, 2, 4, 8]
"""

from __future__ import annotations

from calc.errors import CalcError
from calc.guide.charts._common import _fmt, chart
from calc.guide.charts._lines import activations_by_sequence, zero_scaling
from calc.memory.activations import activation_bytes_per_layer
from calc.memory.model_state import model_state_bytes

MAX_CHART_GPUS = 1 << 20
"""The ZeRO chart's GPU axis stops at 2^20 GPUs, the most any calculator accepts for ``dp``."""


def _powers_of_two(low: int, high: int) -> list[int]:
    out, x = [], low
    while x <= high:
        out.append(x)
        x *= 2
    return out


def zero_chart(
    params: int,
    *,
    convention: str,
    zero_stage: int,
    dp: int,
    capacity: int,
    gpu_label: str,
    unit: str,
) -> str:
    """The ZeRO chart for the will-it-fit calculator: per-GPU model state for stages 0-3 against dp.

    Each line is [`model_state_bytes`][calc.memory.model_state.model_state_bytes] (ZeRO, Rajbhandari et al.
    2020, Table 1) at dp = 1, 2, 4, ... up to at least 64 and four times the reader's dp (at most
    [`MAX_CHART_GPUS`][calc.guide.charts.MAX_CHART_GPUS]); the reader's stage and dp are marked.

    Examples:
        >>> html_ = zero_chart(7 * 10**9, convention="mixed-adam-16", zero_stage=3, dp=8,
        ...                    capacity=80 * 10**9, gpu_label="H100 SXM 80 GB", unit="GB")
        >>> 'data-chart="zero-scaling"' in html_, "ZeRO-3 on 8 GPUs: 14.0 GB per GPU" in html_
        (True, True)
    """
    top = min(MAX_CHART_GPUS, max(64, 1 << (4 * dp - 1).bit_length()))
    gpus = _powers_of_two(1, top)
    series = {
        f"ZeRO-{k}": [(g, model_state_bytes(params, zero_stage=k, dp=g, convention=convention).total) for g in gpus]
        for k in range(4)
    }
    mine = model_state_bytes(params, zero_stage=zero_stage, dp=dp, convention=convention).total
    you = f"ZeRO-{zero_stage} on {dp:,} GPUs: {_fmt(mine, unit)} per GPU"
    spec = zero_scaling(
        series, (dp, mine, f"you: ZeRO-{zero_stage}, dp {dp:,}"), capacity=(capacity, gpu_label), unit=unit
    )
    label = f"Model state per GPU against GPU count for ZeRO stages 0 to 3, log axes; {you}."
    return chart("zero-scaling", spec, label)


def activations_chart(
    seq_len: int,
    micro_batch: int,
    hidden: int,
    heads: int,
    *,
    tp: int,
    sequence_parallel: bool,
    recompute: str,
    flash_attention: bool,
    unit: str,
) -> str:
    """The activations calculator's chart: bytes per layer against sequence length for each recomputation mode.

    Each line is [`activation_bytes_per_layer`][calc.memory.activations.activation_bytes_per_layer]
    (Korthikanti et al. 2022, Table 2) at s = 512, 1024, ... up to at least 32,768 and four times the
    reader's s, with the reader's other inputs; lengths the layout refuses (``s`` not divisible by ``t``
    under sequence parallelism) are left out. The reader's point is marked.

    Examples:
        >>> html_ = activations_chart(2048, 1, 12288, 96, tp=8, sequence_parallel=False, recompute="none",
        ...                           flash_attention=False, unit="GiB")
        >>> 'data-chart="activations-by-sequence"' in html_
        True
        >>> activations_chart(2048, 1, 4096, 32, tp=1, sequence_parallel=False, recompute="op",
        ...                   flash_attention=True, unit="GiB")
        ''
    """
    kw = dict(tp=tp, sequence_parallel=sequence_parallel, flash_attention=flash_attention)
    top = min(1 << 24, max(32768, 1 << (4 * seq_len - 1).bit_length()))
    names = {"none": "None", "selective": "Selective", "full": "Full"}
    if recompute not in names:  # "op" (torchtitan's per-op policy) has no per-layer formula of this chart's shape
        return ""
    series: dict[str, list[tuple[int, int]]] = {}
    for mode, name in names.items():
        points = []
        for s in _powers_of_two(512, top):
            try:
                points.append((s, activation_bytes_per_layer(s, micro_batch, hidden, heads, recompute=mode, **kw)))
            except CalcError:
                continue
        series[name] = points
    mine = activation_bytes_per_layer(seq_len, micro_batch, hidden, heads, recompute=recompute, **kw)
    you = f"{names[recompute]} recomputation at s = {seq_len:,}: {_fmt(mine, unit)} per layer"
    spec = activations_by_sequence(
        series,
        (seq_len, mine, f"you: {names[recompute].lower()}, s {seq_len:,}"),
        unit=unit,
        title="Activations per layer per GPU against sequence length",
    )
    label = f"Activation bytes per layer against sequence length for each recomputation mode, log axes; {you}."
    return chart("activations-by-sequence", spec, label)
