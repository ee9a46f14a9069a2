"""Pipeline parallelism: the bubble and the in-flight activations of five schedules, in closed form.

With ``p`` pipeline stages and ``m`` micro-batches per step, a GPipe or 1F1B
schedule leaves every stage idle for ``(p-1)`` forward+backward times per step
(Narayanan et al. 2021, arXiv:2104.04473, Sec. 2.2.1). Two conventions turn that
into a fraction, and both are in use, so both are named here:

* ``"ideal"``: bubble time / ideal (busy) time = ``(p-1)/m``, Narayanan's
  ``t_pb / t_id``;
* ``"total"``: bubble time / total step time = ``(p-1)/(m+p-1)``, the share of
  each GPU's step spent idle.

The interleaved schedule (``v`` model chunks per stage, Sec. 2.2.2) divides the
bubble by ``v`` and requires ``m`` to be a multiple of ``p``. Zero-bubble ZB-H1
(Qi et al. 2023, arXiv:2401.10241) splits each backward into its input-gradient
and weight-gradient passes and runs the latter in the bubble; DualPipe
(DeepSeek-V3 report, arXiv:2412.19437, Sec. 3.2.1) feeds micro-batches from both
ends of the pipeline. Their bubbles depend on how long each kind of pass takes,
so [`schedule_bubble`][calc.parallel.pipeline.schedule_bubble] takes the pass times;
[`schedule_in_flight`][calc.parallel.pipeline.schedule_in_flight] gives the activations the
busiest stage holds. Both are closed forms, constant time whatever ``p`` and
``m``: what a step-time model or a layout search calls.

The same schedules are built pass by pass in
[`calc.parallel.pipeline_schedules`][calc.parallel.pipeline_schedules] and drawn by
[`calc.parallel.pipeline_svg`][calc.parallel.pipeline_svg]; the tests check that the bubble and
the in-flight count measured from that data equal the closed forms here.
What is not modelled: communication time (sends are free and instant), passes
of unequal length across stages, and ZB-H2 or the automatic zero-bubble schedules.
"""

from __future__ import annotations

from fractions import Fraction

from calc.errors import CalcError
from calc.parallel.pipeline_schedules import (
    BUBBLE_CONVENTIONS,
    MAX_SCHEDULE_OPS,
    SCHEDULES,
    SPLIT_BACKWARD,
    PipelineOp,
    Schedule,
    Slot,
    check_schedule,
    pipeline_schedule,
)
from calc.parallel.pipeline_svg import schedule_svg
from calc.units import parse_positive_int

__all__ = [
    "BUBBLE_CONVENTIONS",
    "MAX_SCHEDULE_OPS",
    "PipelineOp",
    "SCHEDULES",
    "Schedule",
    "Slot",
    "bubble_fraction",
    "pipeline_schedule",
    "schedule_bubble",
    "schedule_in_flight",
    "schedule_svg",
]

_TIME_CONVENTIONS = ("time", *BUBBLE_CONVENTIONS)


def _time(value: object, field: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise CalcError(field, "must be a number", type(value).__name__)
    try:
        number = float(value)
    except OverflowError:
        number = float("inf")
    if not 0 < number < float("inf"):
        raise CalcError(field, "must be a positive, finite time", value)
    return number


def _convention(convention: object, allowed: tuple[str, ...]) -> str:
    if convention not in allowed:
        raise CalcError("convention", f"must be one of {', '.join(allowed)}", convention, code="unknown-name")
    return str(convention)


def bubble_fraction(
    p: int,
    m: int,
    *,
    schedule: str = "1f1b",
    v: int = 1,
    convention: str = "ideal",
    forward_units: int = 1,
    backward_units: int = 2,
    weight_units: int | None = None,
) -> Fraction:
    """The pipeline bubble as an exact fraction, in a named convention, with the usual pass times.

    Narayanan et al. 2021 (arXiv:2104.04473), Sec. 2.2.1: for GPipe and 1F1B the
    bubble time is ``t_pb = (p-1)(t_f + t_b)`` against an ideal ``t_id = m(t_f + t_b)``,
    so ``t_pb / t_id = (p-1)/m``. Sec. 2.2.2: with ``v`` model chunks per device
    (interleaved) the bubble shrinks to ``(1/v)(p-1)/m``; the schedule requires
    ``m`` to be a multiple of ``p``. The ``total`` convention divides the same bubble
    by the whole step instead: ``(p-1)/(v·m + p-1)``. These three do not depend on the
    pass times. ZB-H1 and DualPipe do: the whole units default to Qi et al.'s
    ``T_F = T_B = T_W`` (forward 1, backward 2 of which the weight gradients 1), as
    [`pipeline_schedule`][calc.parallel.pipeline_schedules.pipeline_schedule] takes them, and the
    formulas are those of [`schedule_bubble`][calc.parallel.pipeline.schedule_bubble], exactly.

    Args:
        p: Pipeline stages (devices).
        m: Micro-batches per step per pipeline.
        schedule: One of [`SCHEDULES`][calc.parallel.pipeline_schedules.SCHEDULES].
        v: Model chunks per device (only the interleaved schedule takes ``v > 1``).
        convention: ``"ideal"`` (bubble / ideal time) or ``"total"`` (bubble / total time).
        forward_units: Time units of a forward pass.
        backward_units: Time units of a whole backward pass.
        weight_units: ZB-H1 and DualPipe: the weight-gradient part of ``backward_units``
            (default half of it, at least 1).

    Returns:
        The exact fraction.

    Raises:
        CalcError: On bad numbers, an unknown schedule or convention, ``v > 1`` without
            interleaving, an interleaved ``m`` that is not a multiple of ``p``, or a DualPipe
            ``p`` or ``m`` it cannot run.

    Examples:
        >>> bubble_fraction(8, 32)
        Fraction(7, 32)
        >>> bubble_fraction(8, 32, convention="total")
        Fraction(7, 39)
        >>> bubble_fraction(8, 32, schedule="interleaved", v=2)
        Fraction(7, 64)
        >>> bubble_fraction(8, 32, schedule="zb-h1")  # (p-1)(1+2-2) / (3 m): a third of 1F1B's
        Fraction(7, 96)
        >>> bubble_fraction(8, 12, schedule="interleaved", v=2)
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: m must be a multiple of p (= 8) for the interleaved schedule (got 12)
    """
    stages, micro, name, chunks = check_schedule(p, m, schedule, v)
    name_convention = _convention(convention, BUBBLE_CONVENTIONS)
    fwd = parse_positive_int(forward_units, "forward_units")
    bwd = parse_positive_int(backward_units, "backward_units")
    wgt = max(1, bwd // 2) if weight_units is None else parse_positive_int(weight_units, "weight_units")
    if name in SPLIT_BACKWARD and wgt >= bwd:
        raise CalcError("weight_units", f"must be less than backward_units (= {bwd})", wgt)
    idle = Fraction(_bubble_time(name, stages, micro, chunks, fwd, bwd, wgt, fwd + bwd))
    busy = micro * (fwd + bwd)
    return idle / busy if name_convention == "ideal" else idle / (busy + idle)


def _bubble_time(name: str, p: int, m: int, v: int, t_f, t_b, t_w, t_fb):
    if name in ("gpipe", "1f1b", "interleaved"):
        return Fraction(p - 1, v) * (t_f + t_b) if isinstance(t_f, int) else (p - 1) * (t_f + t_b) / v
    if name == "zb-h1":
        return (p - 1) * (t_f + t_b - t_w) - (min(m, p) - 1) * min(t_w, t_f, t_b - t_w)
    return (p // 2 - 1) * (t_fb + t_b - 3 * t_w)


def schedule_bubble(
    schedule: str,
    p: int,
    m: int,
    v: int = 1,
    *,
    t_f: float = 1.0,
    t_b: float = 2.0,
    t_w: float | None = None,
    t_fb: float | None = None,
    convention: str = "time",
) -> float:
    """The bubble of one step: idle time per stage, or that time as a fraction.

    Times are those of one micro-batch on one stage (``L/p`` layers): ``t_f`` its forward,
    ``t_b`` its whole backward (input and weight gradients), ``t_w`` the weight-gradient part of
    ``t_b`` (ZB-H1 and DualPipe run it as a separate pass; default ``t_b/2``), ``t_fb`` DualPipe's
    overlapped forward-and-backward pair (default ``t_f + t_b``: DeepSeek overlaps the pair's
    *communication* with computation, not two computations with each other).

    * GPipe, 1F1B: ``(p-1)(t_f + t_b)``; interleaved: divided by ``v`` (Narayanan et al. 2021,
      arXiv:2104.04473, Sec. 2.2.1-2.2.2).
    * ZB-H1 (Qi et al. 2023, arXiv:2401.10241, Sec. 2.1): with ``T_B = t_b - t_w`` the input-gradient
      pass and ``T_W = t_w``, the bubble is ``(p-1)(T_F + T_B - T_W)`` once ``m >= p`` and
      ``T_W <= min(T_F, T_B)``: DeepSeek-V3's Table 2 writes it ``(PP-1)(F+B-2W)``. In general
      ``(p-1)(T_F + T_B) - (min(m, p) - 1)·min(T_W, T_F, T_B)``: a ``W`` fills a gap only as far as
      it is long, and there are ``min(m, p) - 1`` of them to fill each stage's. Exact for the
      schedule that [`pipeline_schedule`][calc.parallel.pipeline_schedules.pipeline_schedule] builds.
    * DualPipe (DeepSeek-V3 report, arXiv:2412.19437, Sec. 3.2.1, Table 2):
      ``(p/2 - 1)(F&B + B - 3W)``. The simulated schedule matches it exactly when
      ``t_f = t_w = t_b/2`` (the report's uniform chunks); for other ratios it is the report's
      estimate, within a few pass times of the simulation.

    Conventions: ``"time"`` (idle time per stage, in the unit of ``t_f``), ``"ideal"`` (that over
    the busy time ``m(t_f + t_b)``) and ``"total"`` (over busy + idle).

    Args:
        schedule: One of [`SCHEDULES`][calc.parallel.pipeline_schedules.SCHEDULES].
        p: Pipeline stages.
        m: Micro-batches per step.
        v: Model chunks per stage (interleaved only).
        t_f: Forward time of one micro-batch on one stage.
        t_b: Whole backward time of one micro-batch on one stage.
        t_w: Weight-gradient part of ``t_b`` (ZB-H1 and DualPipe only; ``0 < t_w < t_b``).
        t_fb: DualPipe only: time of an overlapped forward-and-backward pair.
        convention: ``"time"``, ``"ideal"`` or ``"total"``.

    Returns:
        Idle time per stage per step, or the fraction.

    Raises:
        CalcError: On the inputs [`check_schedule`][calc.parallel.pipeline_schedules.check_schedule] rejects,
            or a time that is not positive.

    Examples:
        >>> schedule_bubble("1f1b", 8, 32), schedule_bubble("zb-h1", 8, 32)
        (21.0, 7.0)
        >>> schedule_bubble("dualpipe", 8, 32)  # (8/2 - 1)(3 + 2 - 3)
        6.0
        >>> schedule_bubble("zb-h1", 8, 32, convention="ideal")  # 7 / (32 × 3)
        0.07291666666666667
    """
    stages, micro, name, chunks = check_schedule(p, m, schedule, v)
    wanted = _convention(convention, _TIME_CONVENTIONS)
    forward = _time(t_f, "t_f")
    backward = _time(t_b, "t_b")
    weight = backward / 2
    if t_w is not None:
        weight = _time(t_w, "t_w")
        if weight >= backward:
            raise CalcError("t_w", f"must be less than t_b (= {backward:g}): it is the weight-gradient part", weight)
    pair = forward + backward if t_fb is None else _time(t_fb, "t_fb")
    idle = float(_bubble_time(name, stages, micro, chunks, forward, backward, weight, pair))
    busy = micro * (forward + backward)
    if wanted == "time":
        return idle
    return idle / busy if wanted == "ideal" else idle / (busy + idle)


def schedule_in_flight(schedule: str, p: int, m: int, v: int = 1) -> int:
    """Micro-batch chunks whose activations the busiest stage holds at its peak.

    A chunk is one micro-batch through ``L/(p·v)`` layers (``v = 1`` except interleaved;
    DualPipe's two chunks per device are ``L/p`` layers each). Multiply by one such chunk's
    activations for the stage's peak activation memory. The busiest stage is stage 0:

    * GPipe: ``m`` (every micro-batch's forward runs before any backward; Huang et al. 2019);
    * 1F1B and ZB-H1: ``min(p, m)`` (Narayanan et al. 2021, Sec. 2.2.1; Qi et al. 2023 keep
      1F1B's ``p·M_B``, the weight-gradient residue ``M_W`` aside);
    * interleaved: ``min(2(p-1) + (v-1)p + 1, m·v)``, Megatron-LM's warm-up plus one, i.e.
      Korthikanti et al. 2022's factor ``1 + (p-1)/(p·v)`` on ``p·v`` chunks;
    * DualPipe: ``p + 1`` (DeepSeek-V3 report, Table 2, "Activation: PP+1").

    Args:
        schedule: One of [`SCHEDULES`][calc.parallel.pipeline_schedules.SCHEDULES].
        p: Pipeline stages.
        m: Micro-batches per step.
        v: Model chunks per stage (interleaved only).

    Returns:
        The count; it equals [`Schedule.max_in_flight`][calc.parallel.pipeline_schedules.Schedule.max_in_flight]
        of the simulated schedule.

    Raises:
        CalcError: On the inputs [`check_schedule`][calc.parallel.pipeline_schedules.check_schedule] rejects.

    Examples:
        >>> [schedule_in_flight(s, 8, 32, 2 if s == "interleaved" else 1) for s in SCHEDULES]
        [32, 8, 23, 8, 9]
    """
    stages, micro, name, chunks = check_schedule(p, m, schedule, v)
    if name == "gpipe":
        return micro
    if name == "dualpipe":
        return stages + 1
    if name == "interleaved" and chunks > 1:
        return min(2 * (stages - 1) + (chunks - 1) * stages + 1, micro * chunks)
    return min(stages, micro)
