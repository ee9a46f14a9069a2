"""Diagrams drawn by the engine at build time, embedded inline so they follow the page's palette.

Pages write ``[[figure NAME]]`` alone on a line. Each entry maps a name to a caption and a
zero-argument function returning SVG markup; the hook wraps it in ``<figure class="lc-diagram">``.
Inline SVG inherits the page's text colour (``currentColor``) in both Material palettes, which an
``<img>`` cannot do.
"""

from __future__ import annotations

import html
from collections.abc import Callable

from calc import pipeline_schedule, schedule_svg
from calc.memory.model_state import CONVENTIONS

__all__ = ["FIGURES"]


def _schedule(name: str, schedule: str, v: int = 1) -> Callable[[], str]:
    return lambda: schedule_svg(pipeline_schedule(4, 8, schedule, v=v), id_prefix=f"fig-{name}")


_FONT = 'system-ui, -apple-system, "Segoe UI", Roboto, sans-serif'
_FONT_PX = 11
"""The diagrams' text size: drawn at their natural size (calc.css), never under 11 px on any screen (issue 19)."""
_CHAR_PX = 7
"""A generous width of one character at ``_FONT_PX``, for room beside a label."""
_PARTS: dict[str, tuple[str, str]] = {
    "weights": ("weights", "#3b82f6"),
    "gradients": ("gradients", "#16a34a"),
    "master": ("fp32 master", "#7c3aed"),
    "momentum": ("1st moment m", "#d97706"),
    "variance": ("2nd moment v", "#dc2626"),
}
"""Each field of a convention, bottom of the stack first: its label and its colour."""


def conventions_svg() -> str:
    """Stacked bars of bytes per parameter, one per convention of ``calc.memory.model_state.CONVENTIONS``.

    Every bar and every segment is read from the convention itself (weights, gradients, master, momentum,
    variance), so the figure has exactly the rows the table beside it has.

    Examples:
        >>> svg = conventions_svg()
        >>> svg.count('class="cv-bar"') == len(CONVENTIONS), "mixed-adam-16" in svg, ">16 B<" in svg
        (True, True, True)
    """
    unit, row_h, gap, top = 13, 18, 6, 40  # unit: px per byte, so the widest bar fits a laptop's column
    label_w = 12 + _CHAR_PX * max(len(c.name) for c in CONVENTIONS.values())  # the longest name fits left of the bars
    widest = max(c.bytes_per_param for c in CONVENTIONS.values())
    width = label_w + widest * unit + 44
    height = top + len(CONVENTIONS) * (row_h + gap) + 4
    desc = "; ".join(
        f"{c.name}: "
        + " + ".join(f"{label} {getattr(c, f)}" for f, (label, _) in _PARTS.items() if getattr(c, f))
        + f" = {c.bytes_per_param} bytes"
        for c in CONVENTIONS.values()
    )
    parts = [
        (
            f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
            'role="img" aria-labelledby="cv-title cv-desc" class="cv-figure">'
        ),
        '<title id="cv-title">Bytes per parameter of model state, by convention</title>',
        f'<desc id="cv-desc">{html.escape(desc)}.</desc>',
        (
            f"<style>.cv-figure text{{fill:currentColor;font-family:{_FONT};font-size:{_FONT_PX}px}}"
            ".cv-seg{stroke:currentColor;stroke-opacity:.5;stroke-width:.6}</style>"
        ),
    ]
    x = label_w
    for label, colour in _PARTS.values():  # the legend, one swatch per kind of tensor
        parts.append(f'<rect class="cv-seg" x="{x}" y="8" width="10" height="10" fill="{colour}"/>')
        parts.append(f'<text x="{x + 13}" y="17">{html.escape(label)}</text>')
        x += 16 + _CHAR_PX * len(label)
    for i, c in enumerate(CONVENTIONS.values()):
        y = top + i * (row_h + gap)
        parts.append(f'<text x="{label_w - 6}" y="{y + 13}" text-anchor="end">{html.escape(c.name)}</text>')
        parts.append('<g class="cv-bar">')
        x = label_w
        for field, (label, colour) in _PARTS.items():
            n = getattr(c, field)
            if n:
                parts.append(
                    f'<rect class="cv-seg" x="{x}" y="{y}" width="{n * unit}" height="{row_h}" fill="{colour}">'
                    f"<title>{html.escape(label)}: {n} B</title></rect>"
                )
                x += n * unit
        parts.append(f'<text x="{x + 5}" y="{y + 13}">{c.bytes_per_param} B</text></g>')
    parts.append("</svg>")
    return "".join(parts)


FIGURES: dict[str, tuple[str, Callable[[], str]]] = {
    "mem-conventions": (
        (
            "Bytes per parameter of model state under each named convention: weights, gradients, fp32 master copy and "
            "the optimizer's two moments (sources in the table below)."
        ),
        conventions_svg,
    ),
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
