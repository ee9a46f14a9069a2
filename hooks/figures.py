"""Diagrams drawn by the engine at build time, embedded inline so they follow the page's palette.

Pages write ``[[figure NAME]]`` alone on a line. Each entry maps a name to a caption and a
zero-argument function returning SVG markup; the hook wraps it in ``<figure class="lc-diagram">``.
Inline SVG inherits the page's text colour (``currentColor``) in both Material palettes, which an
``<img>`` cannot do.
"""

from __future__ import annotations

from collections.abc import Callable

from calc import pipeline_schedule, schedule_svg

__all__ = ["FIGURES"]


def _schedule(name: str, schedule: str, v: int = 1) -> Callable[[], str]:
    return lambda: schedule_svg(pipeline_schedule(4, 8, schedule, v=v), id_prefix=f"fig-{name}")


FIGURES: dict[str, tuple[str, Callable[[], str]]] = {
    "pp-gpipe": (
        "GPipe, p = 4 stages, m = 8 micro-batches: all forwards, then all backwards (Huang et al. 2019).",
        _schedule("pp-gpipe", "gpipe"),
    ),
    "pp-1f1b": (
        (
            "1F1B, p = 4, m = 8: after a warm-up each stage alternates one forward and one backward, so at most p "
            "micro-batches are in flight (Narayanan et al. 2021, Fig. 4 top)."
        ),
        _schedule("pp-1f1b", "1f1b"),
    ),
    "pp-interleaved": (
        (
            "Interleaved 1F1B, p = 4, m = 8, v = 2 model chunks per stage: shorter passes, a bubble v times smaller "
            "(Narayanan et al. 2021, Fig. 4 bottom)."
        ),
        _schedule("pp-interleaved", "interleaved", v=2),
    ),
    "pp-zb-h1": (
        (
            "ZB-H1, p = 4, m = 8: each backward split into B (input gradient) and W (weight gradient); the W passes "
            "fill 1F1B's drain, a third of its bubble left (Qi et al. 2023, arXiv:2401.10241, Fig. 3 top)."
        ),
        _schedule("pp-zb-h1", "zb-h1"),
    ),
    "pp-dualpipe": (
        (
            "DualPipe, p = 4, m = 8: half the micro-batches enter at each end; every GPU holds stages i and p - 1 - i "
            "(DeepSeek-AI 2024, arXiv:2412.19437, Sec. 3.2.1, Fig. 5)."
        ),
        _schedule("pp-dualpipe", "dualpipe"),
    ),
}
"""Named build-time figures: name -> (caption, function returning SVG)."""
