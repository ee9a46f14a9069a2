"""What the two re-prediction scripts of ``validation/published/`` share: reading a rows file and the text table.

[`predict`][validation.published.predict] (training runs, ``runs.json``) and
[`serving`][validation.published.serving] (serving measurements, ``serving.json``) read their rows and print their
results the same way; only the verdict words differ, so each passes its own.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["load_rows", "text_table"]


def load_rows(path: Path) -> list[dict[str, Any]]:
    """The ``rows`` list of a published-rows JSON file; every row has an ``id``, unique in the file.

    Examples:
        >>> from validation.published.predict import ROWS
        >>> rows = load_rows(ROWS)
        >>> len({r["id"] for r in rows}) == len(rows)
        True
    """
    return json.loads(path.read_text())["rows"]


def text_table(
    results: list[dict[str, Any]], *, width: int, no_error: str, verdict: Callable[[dict[str, Any]], str]
) -> str:
    """A plain-text table of re-predicted rows: id, kind, error, tolerance and the verdict ``verdict`` words.

    Examples:
        >>> r = {"id": "a", "kind": "memory", "error": 0.05, "tolerance": 0.15}
        >>> print(text_table([r], width=4, no_error="-", verdict=lambda r: "ok"))
        id   kind          error   tol  verdict
        a    memory        +5.0%   15%  ok
    """
    lines = [f"{'id':{width}} {'kind':10} {'error':>8} {'tol':>5}  verdict"]
    for r in results:
        err = no_error if r["error"] is None else f"{r['error']:+.1%}"
        lines.append(f"{r['id']:{width}} {r['kind']:10} {err:>8} {r['tolerance']:>5.0%}  {verdict(r)}")
    return "\n".join(lines)
