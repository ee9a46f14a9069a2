"""Read a calculator's HTML result fragment back as data and as terminal blocks.

The calculators render one fragment for the page (see the DOM contract in
[`calc.widgets`][calc.widgets]); numbers carry ``data-value``/``data-unit`` beside
``data-output``. This module reads that same fragment, so the command line reports the
computation the page shows instead of computing it a second time.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html.parser import HTMLParser

from calc.widgets._html import UNITS

__all__ = ["Block", "Fragment", "Output", "json_key", "read_fragment"]

_VOID = frozenset({"area", "br", "col", "hr", "img", "input", "link", "meta", "source", "wbr"})
_NOT_TEXT = frozenset({"svg", "script", "style", "template", "noscript", "button", "form"})
"""Elements whose content is never text for a terminal (drawings, code, controls)."""

_LINE_TAGS = frozenset({"p", "li", "h1", "h2", "h3", "h4", "h5", "h6", "figcaption", "summary", "dt", "dd", "pre"})
_INT = re.compile(r"-?[0-9]+")


@dataclass
class Output:
    """One ``[data-output]`` element.

    Attributes:
        name: Its ``data-output`` name.
        text: Its text, as the page shows it.
        value: The raw number from ``data-value`` (``int`` for exact integers), or ``None`` for a text result.
        unit: Its ``data-unit`` (a key of [`UNITS`][calc.widgets._html.UNITS]), or ``""``.
        ok: Its ``data-ok`` as a bool (verdicts), or ``None``.
    """

    name: str
    text: str = ""
    value: int | float | None = None
    unit: str = ""
    ok: bool | None = None


@dataclass
class Block:
    """Something a terminal prints: a line of text, key-value rows or a table.

    Attributes:
        kind: ``"line"``, ``"kv"`` (rows of label, value, note) or ``"table"``.
        rows: The line's one cell, or the rows of cells; a table's first row is its header.
    """

    kind: str
    rows: list[list[str]] = field(default_factory=list)


@dataclass
class Fragment:
    """A result fragment, read.

    Attributes:
        outputs: Every ``[data-output]`` element, in document order.
        blocks: What a terminal shows, in document order.
    """

    outputs: list[Output]
    blocks: list[Block]


def json_key(name: str, unit: str) -> str:
    """The machine-readable key of an output: its name with its unit's suffix, in snake case.

    Examples:
        >>> json_key("total", "B"), json_key("total_bytes", "B"), json_key("dp-grad-time", "s")
        ('total_bytes', 'total_bytes', 'dp_grad_time_s')
        >>> json_key("tokens_per_param", "1"), json_key("days", "days")
        ('tokens_per_param', 'days')
    """
    key = name.replace("-", "_")
    suffix = UNITS.get(unit, "")
    if suffix and key != suffix and not key.endswith("_" + suffix):
        key = f"{key}_{suffix}"
    return key


def _squash(parts: list[str]) -> str:
    return " ".join("".join(parts).split())


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.outputs: list[Output] = []
        self.blocks: list[Block] = []
        self._stack: list[str] = []
        self._not_text = 0  # depth inside svg/script/controls: no text for anyone
        self._hidden: int | None = None  # stack depth of an aria-hidden or chart element: no blocks
        self._open: list[tuple[int, Output, list[str]]] = []
        self._line: tuple[int, list[str], list[str], list[str], bool] | None = None  # depth, label, text, note, kv
        self._part = "text"
        self._part_depth = 0
        self._table: list[list[str]] | None = None
        self._row: list[str] | None = None
        self._cell: list[str] | None = None

    # ---- structure -------------------------------------------------------------------------------------------
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag in _VOID:
            if tag == "br":
                self.handle_data(" · " if self._cell is not None else " ")
            return
        self._stack.append(tag)
        depth = len(self._stack)
        if tag in _NOT_TEXT:
            self._not_text += 1
        hidden = a.get("aria-hidden") == "true" or "data-chart" in a
        if self._hidden is None and hidden:
            self._hidden = depth
        if "data-output" in a:
            raw, ok = a.get("data-value"), a.get("data-ok")
            value = None if raw is None else int(raw) if _INT.fullmatch(raw) else float(raw)
            out = Output(a["data-output"], value=value, unit=a.get("data-unit", ""))
            out.ok = None if ok is None else ok == "yes"
            self._open.append((depth, out, []))
            self.outputs.append(out)
        if self._hidden is not None:
            return
        if tag == "table":
            self._table = []
        elif tag == "tr" and self._table is not None:
            self._row = []
        elif tag in ("td", "th") and self._row is not None:
            self._cell = []
        elif tag in _LINE_TAGS and self._line is None and self._table is None:
            kv = "lc-kv" in a.get("class", "").split()
            self._line = (depth, [], [], [], kv)
            self._part = "text"
        elif self._line is not None and self._line[4] and self._part == "text":
            if tag == "span" and not self._line[1] and not self._line[2]:
                self._part, self._part_depth = "label", depth
            elif tag == "small":
                self._part, self._part_depth = "note", depth

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or tag not in self._stack:
            return
        while self._stack:
            depth = len(self._stack)
            top = self._stack.pop()
            self._close(top, depth)
            if top == tag:
                break

    def _close(self, tag: str, depth: int) -> None:
        if tag in _NOT_TEXT:
            self._not_text -= 1
        while self._open and self._open[-1][0] == depth:
            _, out, parts = self._open.pop()
            out.text = _squash(parts)
        if self._hidden is not None:
            if self._hidden == depth:
                self._hidden = None
            return
        if self._part != "text" and depth == self._part_depth:
            self._part = "text"
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(_squash(self._cell))
            self._cell = None
        elif tag == "tr" and self._row is not None and self._table is not None:
            self._table.append(self._row)
            self._row = None
        elif tag == "table" and self._table is not None:
            if self._table:
                self.blocks.append(Block("table", self._table))
            self._table = None
        elif self._line is not None and depth == self._line[0]:
            _, label, text, note, kv = self._line
            self._line = None
            cells = [_squash(label), _squash(text), _squash(note)]
            if kv and cells[0]:
                if self.blocks and self.blocks[-1].kind == "kv":
                    self.blocks[-1].rows.append(cells)
                else:
                    self.blocks.append(Block("kv", [cells]))
            elif any(cells):
                self.blocks.append(Block("line", [[" ".join(c for c in cells if c)]]))

    # ---- text --------------------------------------------------------------------------------------------------
    def handle_data(self, data: str) -> None:
        if self._not_text:
            return
        for _, _, parts in self._open:
            parts.append(data)
        if self._hidden is not None:
            return
        if self._cell is not None:
            self._cell.append(data)
        elif self._line is not None:
            _, label, text, note, _ = self._line
            {"label": label, "text": text, "note": note}[self._part].append(data)

    def close(self) -> None:
        super().close()
        while self._stack:
            depth = len(self._stack)
            self._close(self._stack.pop(), depth)


def read_fragment(fragment: str) -> Fragment:
    """Read a result fragment into its outputs and the blocks a terminal prints.

    Examples:
        >>> f = read_fragment(
        ...     '<p class="lc-verdict" data-output="verdict" data-ok="yes">Fits.</p>'
        ...     '<p class="lc-kv"><span>Total</span> <span data-value="16" data-unit="B" data-output="t">16 B</span>'
        ...     " <small>all of it</small></p>"
        ... )
        >>> [(o.name, o.value, o.unit, o.ok) for o in f.outputs]
        [('verdict', None, '', True), ('t', 16, 'B', None)]
        >>> [(b.kind, b.rows) for b in f.blocks]
        [('line', [['Fits.']]), ('kv', [['Total', '16 B', 'all of it']])]
    """
    reader = _Reader()
    reader.feed(fragment)
    reader.close()
    return Fragment(reader.outputs, reader.blocks)
