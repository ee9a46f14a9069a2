"""Collectives: the bytes each rank sends and the time at a bus bandwidth (nccl-tests' factors).

For a message of ``S`` bytes over ``n`` ranks, the bytes the busiest rank sends and the
time at a given *bus bandwidth*. The factors are the bus-bandwidth factors of nccl-tests
``doc/PERFORMANCE.md``: a ring all-reduce moves ``2(n-1)/n · S`` per rank; all-gather,
reduce-scatter and all-to-all move ``(n-1)/n · S`` (``S`` the *full*, gathered size);
broadcast, reduce and point-to-point move ``S``.

algbw vs busbw (nccl-tests ``doc/PERFORMANCE.md``): the *algorithm bandwidth* is ``S / t``;
the *bus bandwidth* is ``algbw × factor`` and is what can be compared with a link's peak,
independent of ``n``. So the time of a collective is ``t = S · factor / busbw``, which is also
``bytes sent per rank / busbw``. These functions leave latency out (large messages);
`calc.parallel.network` adds it per link level. Names are re-exported by
[`calc.parallel.comm`][calc.parallel.comm].
"""

from __future__ import annotations

import math
from fractions import Fraction

from calc.errors import CalcError
from calc.memo import memoized
from calc.units import parse_positive_int

__all__ = [
    "COLLECTIVES",
    "algorithm_bandwidth",
    "bus_factor",
    "collective_bytes_sent",
    "collective_time_s",
]

COLLECTIVES: tuple[str, ...] = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "all-to-all",
    "broadcast",
    "reduce",
    "p2p",
)
"""Collective names accepted everywhere in this module (``p2p`` is a send/receive pair)."""


def _collective(name: str) -> str:
    if name not in COLLECTIVES:
        raise CalcError("collective", f"must be one of {', '.join(COLLECTIVES)}", name, code="unknown-name")
    return name


def bus_factor(collective: str, n: int) -> Fraction:
    """The nccl-tests bus-bandwidth factor: ``busbw = algbw × factor``.

    NVIDIA/nccl-tests ``doc/PERFORMANCE.md``, "Summary": AllReduce ``2(n-1)/n``;
    ReduceScatter, AllGather and AlltoAll ``(n-1)/n``; Broadcast and Reduce ``1``.
    Point-to-point is ``1`` (algbw and busbw coincide, same document).
    For a ring it is also the bytes each rank sends per byte of message.

    Args:
        collective: One of [`COLLECTIVES`][calc.parallel.comm.COLLECTIVES].
        n: Ranks in the group.

    Returns:
        The factor as an exact fraction.

    Raises:
        CalcError: For an unknown collective or ``n < 1``.

    Examples:
        >>> bus_factor("all-reduce", 8), bus_factor("all-gather", 8)
        (Fraction(7, 4), Fraction(7, 8))
        >>> float(bus_factor("all-reduce", 8)), float(bus_factor("reduce-scatter", 8))
        (1.75, 0.875)
        >>> bus_factor("broadcast", 8)
        Fraction(1, 1)
    """
    _collective(collective)
    ranks = parse_positive_int(n, "n")
    if collective == "all-reduce":
        return Fraction(2 * (ranks - 1), ranks)
    if collective in ("all-gather", "reduce-scatter", "all-to-all"):
        return Fraction(ranks - 1, ranks)
    return Fraction(1)


@memoized()  # a plan asks for the same few dozen sizes tens of thousands of times
def collective_bytes_sent(collective: str, size_bytes: int, n: int) -> int:
    """Bytes the busiest rank sends for one collective on a message of ``size_bytes``.

    Ring algorithms (nccl-tests ``doc/PERFORMANCE.md``): all-reduce sends
    ``2(n-1)/n · S``, all-gather and reduce-scatter ``(n-1)/n · S`` where ``S`` is the
    full (gathered, or pre-scatter) size, all-to-all ``(n-1)/n · S`` where ``S`` is
    one rank's whole send buffer (``1/n`` of it stays local). A pipelined broadcast
    or reduce makes every rank but one forward the full ``S``; a point-to-point send
    moves ``S``. With ``n = 1`` nothing is sent.

    Rounding: the exact value ``factor · S`` is rounded **up** to a whole byte, so
    per-rank bytes times ranks never undercount the traffic.

    Args:
        collective: One of [`COLLECTIVES`][calc.parallel.comm.COLLECTIVES].
        size_bytes: ``S``, the message size in bytes (an ``int`` ≥ 0).
        n: Ranks in the group.

    Returns:
        Bytes sent by the busiest rank.

    Raises:
        CalcError: For an unknown collective, a negative size or ``n < 1``.

    Examples:
        >>> collective_bytes_sent("all-reduce", 1_000, 8)
        1750
        >>> collective_bytes_sent("all-gather", 1_000, 3)   # 2/3 of 1000, rounded up
        667
        >>> collective_bytes_sent("p2p", 1_000, 2), collective_bytes_sent("all-reduce", 1_000, 1)
        (1000, 0)
    """
    factor = bus_factor(collective, n)
    size = _size(size_bytes)
    if n == 1:
        return 0
    return -(-factor.numerator * size // factor.denominator)  # ceil, in integers


def _size(size_bytes: object) -> int:
    if isinstance(size_bytes, bool) or not isinstance(size_bytes, int) or size_bytes < 0:
        raise CalcError("size_bytes", "must be a whole number of bytes, 0 or more", size_bytes)
    return size_bytes


def _positive(value: object, field: str, rule: str) -> Fraction:
    """``value`` as an exact ``Fraction`` when it is a finite number greater than 0; anything else raises ``rule``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)):
        raise CalcError(field, rule, value)
    if isinstance(value, float) and not math.isfinite(value):
        raise CalcError(field, rule, value)
    frac = Fraction(value)
    if frac <= 0:
        raise CalcError(field, rule, value)
    return frac


def _efficiency(value: object, field: str) -> Fraction:
    rule = "must be a number greater than 0 and at most 1"
    frac = _positive(value, field, rule)
    if frac > 1:
        raise CalcError(field, rule, value)
    return frac


def _bandwidth(value: object, field: str) -> Fraction:
    return _positive(value, field, "must be a positive number of bytes per second")


def collective_time_s(
    collective: str,
    size_bytes: int,
    n: int,
    bus_bytes_per_s: float,
    *,
    efficiency: float = 1.0,
) -> float:
    """Time of one collective: ``t = S · factor / (busbw · efficiency)``.

    nccl-tests ``doc/PERFORMANCE.md``: with per-rank bandwidth ``B`` an all-reduce
    takes ``(S/B) · 2(n-1)/n``, reduce-scatter and all-gather ``(S/B) · (n-1)/n``,
    broadcast and reduce ``S/B``. ``bus_bytes_per_s`` is that ``B``: for one link
    type, the per-GPU, per-direction peak of [`Interconnect`][calc.parallel.comm.Interconnect].
    The constant per-call latency is ignored (large-message regime).

    Args:
        collective: One of [`COLLECTIVES`][calc.parallel.comm.COLLECTIVES].
        size_bytes: ``S`` in bytes.
        n: Ranks in the group.
        bus_bytes_per_s: Bus bandwidth ``B`` in bytes/s (10^9 B/s = 1 GB/s, as nccl-tests prints).
        efficiency: Achieved busbw as a fraction of ``bus_bytes_per_s`` (default 1: the peak).

    Returns:
        Seconds, as a ``float`` (0.0 when ``n = 1``).

    Raises:
        CalcError: On an unknown collective or a non-positive size, bandwidth or efficiency.

    Examples:
        >>> round(collective_time_s("all-reduce", 10**9, 8, 300 * 10**9), 6)   # 1 GB on 8 A100s, NVLink3 peak
        0.005833
        >>> round(collective_time_s("all-reduce", 10**9, 8, 300 * 10**9, efficiency=0.8), 6)
        0.007292
    """
    factor = bus_factor(collective, n)
    size = _size(size_bytes)
    bw = _bandwidth(bus_bytes_per_s, "bus_bytes_per_s")
    eff = _efficiency(efficiency, "efficiency")
    if n == 1:
        return 0.0
    return float(factor * size / (bw * eff))


def algorithm_bandwidth(collective: str, n: int, bus_bytes_per_s: float) -> float:
    """The algorithm bandwidth ``algbw = S / t = busbw / factor`` (nccl-tests ``doc/PERFORMANCE.md``).

    Dividing a message size by algbw gives the time directly; algbw falls as
    ``n`` grows while busbw stays comparable with the link peak.

    Args:
        collective: One of [`COLLECTIVES`][calc.parallel.comm.COLLECTIVES].
        n: Ranks in the group (at least 2).
        bus_bytes_per_s: The bus bandwidth in bytes/s.

    Returns:
        Bytes/s of message per second.

    Raises:
        CalcError: On an unknown collective, ``n < 2`` or a non-positive bandwidth.

    Examples:
        >>> algorithm_bandwidth("all-reduce", 8, 175 * 10**9) / 1e9
        100.0
    """
    ranks = parse_positive_int(n, "n", minimum=2)
    factor = bus_factor(collective, ranks)
    return float(_bandwidth(bus_bytes_per_s, "bus_bytes_per_s") / factor)
