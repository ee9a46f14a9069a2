"""Plain-text tables for a terminal: aligned columns, numbers to the right, nothing wrapped."""

from __future__ import annotations

import re
import textwrap
from collections.abc import Sequence

from calc.cli._fragment import Block

__all__ = ["CELL_WIDTH", "LINE_WIDTH", "render_blocks", "table"]

CELL_WIDTH = 36
"""In a table too wide for [`LINE_WIDTH`][calc.cli._text.LINE_WIDTH], a cell longer than this wraps."""

LINE_WIDTH = 100
"""A line of prose longer than this wraps; so do the long cells of a table wider than this."""

_GLUE = re.compile(r"(?<=[0-9]) (?=[A-Za-zµ%×])")
"""The space between a number and its unit, which a wrap never breaks."""

_NUMERIC = re.compile(r"[-+]?[0-9][0-9,.]*(e[-+]?[0-9]+)?(\s*\S{0,8})?")
"""A cell that reads as a number with at most a short unit (``17.5 GB``, ``1,024``, ``3.2e-3 s``)."""


def _numeric_columns(body: Sequence[Sequence[str]], width: int) -> set[int]:
    numeric = set()
    for col in range(1, width):
        cells = [row[col] for row in body if col < len(row) and row[col]]
        if cells and all(_NUMERIC.fullmatch(c) for c in cells):
            numeric.add(col)
    return numeric


def _wrap(cell: str, width: int) -> list[str]:
    lines = textwrap.wrap(_GLUE.sub("\u00a0", cell), width, break_on_hyphens=False)
    return [line.replace("\u00a0", " ") for line in lines] or [""]


def table(rows: Sequence[Sequence[str]], *, header: bool = True, cell_width: int = CELL_WIDTH) -> str:
    """Rows of cells as aligned columns; with ``header`` the first row is underlined.

    Empty columns are dropped; columns whose every cell is a number are right-aligned. When the table
    is wider than [`LINE_WIDTH`][calc.cli._text.LINE_WIDTH], each cell longer than ``cell_width`` wraps
    (never between a number and its unit), and a blank line separates the rows.

    Examples:
        >>> print(table([["Part", "Per GPU"], ["Weights", "14.0 GB"], ["Adam", "112 GB"]]))
        Part     Per GPU
        -------  -------
        Weights  14.0 GB
        Adam      112 GB
        >>> print(table([["a", "one two three " * 9], ["b", "four 4 GB"]], header=False, cell_width=8)[:40])
        a  one two
           three
           one two
           three
    """
    width = max((len(r) for r in rows), default=0)
    grid = [[*r, *[""] * (width - len(r))] for r in rows]
    keep = [c for c in range(width) if any(row[c] for row in grid[1 if header else 0 :])]
    grid = [[row[c] for c in keep] for row in grid]
    if not grid or not keep:
        return ""
    body = grid[1:] if header else grid
    right = _numeric_columns(body, len(keep))
    natural = [max(len(row[c]) for row in grid) for c in range(len(keep))]
    if sum(natural) + 2 * (len(keep) - 1) <= LINE_WIDTH:
        wrapped = [[[cell] for cell in row] for row in grid]
    else:
        wrapped = [[_wrap(cell, cell_width) for cell in row] for row in grid]
    sizes = [max(len(line) for row in wrapped for line in row[c]) for c in range(len(keep))]
    tall = any(len(cell) > 1 for row in wrapped for cell in row)

    def lines(row: Sequence[list[str]]) -> list[str]:
        out = []
        for i in range(max(len(cell) for cell in row)):
            parts = [cell[i] if i < len(cell) else "" for cell in row]
            just = [p.rjust(sizes[c]) if c in right else p.ljust(sizes[c]) for c, p in enumerate(parts)]
            out.append("  ".join(just).rstrip())
        return out

    text: list[str] = []
    for n, row in enumerate(wrapped):
        if tall and n > (1 if header else 0):
            text.append("")
        text += lines(row)
        if header and n == 0:
            text.append("  ".join("-" * s for s in sizes))
    return "\n".join(text)


def render_blocks(blocks: Sequence[Block]) -> str:
    """A fragment's blocks as text: lines as they are, key-value rows and tables aligned, a blank line between.

    Examples:
        >>> print(render_blocks([Block("line", [["Fits."]]), Block("kv", [["GPU memory", "80.0 GB", ""]])]))
        Fits.
        <BLANKLINE>
        GPU memory  80.0 GB
    """
    parts = []
    for block in blocks:
        if block.kind == "line":
            parts.append(textwrap.fill(block.rows[0][0], LINE_WIDTH, break_on_hyphens=False))
        else:
            parts.append(table(block.rows, header=block.kind == "table"))
    return "\n\n".join(p for p in parts if p)
