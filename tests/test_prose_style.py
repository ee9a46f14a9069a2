"""The reading text speaks of the subject, not of the project that builds it.

No changelog or tooling sentences (what the site used to say, how its tests or CI run, what its authors could not
find out) and no "the engine" in the guide's pages: a reader cares that a number is computed and where its formula
comes from, not what the code is called. The reference pages (the API and the command line) are about the code and
are not checked; README and ``validation/README.md`` say how to rerun things.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"

EXEMPT = {"reference/api.md", "reference/cli.md"}
"""Pages whose topic is the code itself."""

BANNED: dict[str, str] = {
    r"\bthis site used to\b|\bused to list\b": "a changelog sentence",
    r"\bmake (validate|test|serve|build)\b": "a build command (README says how to run things)",
    r"\bCI\b": "the project's CI",
    r"\ba test (holds|checks|keeps)\b": "the project's tests",
    r"\bwe could not find out\b": "the authors' search, not the subject",
    r"\bthe engine\b|\bengine's\b": "the code's name, where the subject is meant",
}
"""Phrase (regular expression, case-insensitive) -> why it does not belong in the reading text."""

_ALLOWED = re.compile(r"Transformer Engine('s)?", re.IGNORECASE)


def _reading_text(md: str) -> str:
    """The page's prose: fenced code, inline code and link targets removed (a path may name anything)."""
    md = re.sub(r"^(```|~~~).*?^\1", "", md, flags=re.DOTALL | re.MULTILINE)
    md = re.sub(r"`[^`\n]*`", "", md)
    md = re.sub(r"\]\([^)]*\)", "]", md)
    return _ALLOWED.sub("", md)


PAGES = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md") if not p.name.startswith("_"))


@pytest.mark.parametrize("page", [p for p in PAGES if p not in EXEMPT])
def test_reading_text_is_about_the_subject(page: str) -> None:
    text = _reading_text((DOCS / page).read_text(encoding="utf-8"))
    found = []
    for pattern, why in BANNED.items():
        for match in re.finditer(pattern, text, re.IGNORECASE):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{page}: {match.group(0)!r} ({why}), near line {line}")
    assert found == []


@pytest.mark.parametrize(
    ("text", "hits"),
    [
        ("This site used to list a 10-byte row.", 1),
        ("`make validate` rewrites it.", 0),  # inline code is a command shown, not a sentence about the project
        ("make validate rewrites it, and a test holds them to 15%.", 2),
        ("Transformer Engine's attention; the engine models it.", 1),  # the library's name is fine
        ("no CUDA device runs in CI", 1),
        ("the step-time model leaves it out", 0),
    ],
)
def test_the_check_itself(text: str, hits: int) -> None:
    clean = _reading_text(text)
    assert sum(len(re.findall(p, clean, re.IGNORECASE)) for p in BANNED) == hits
