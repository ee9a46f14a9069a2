"""``python -m calc``: the command line, [`calc.cli`][calc.cli] (installed as ``trainmem``)."""

from __future__ import annotations

import sys

from calc.cli import main

__all__ = ["main"]

if __name__ == "__main__":
    sys.exit(main())
