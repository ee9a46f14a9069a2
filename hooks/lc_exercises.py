"""MkDocs hook: pre-render ``[[exercise ID]]`` markers with ``calc.guide.exercises`` (question, hint, worked answer).

A marker stands alone on a line. The build writes the exercise's default case (seed 0) into the page, so
with JavaScript off the question and a static worked solution are there; ``assets/javascripts/exercises.mjs``
then checks answers and draws new cases live through the page's Pyodide worker.

DOM contract (``tests/test_browser_exercises.py`` relies on it): the exercise is
``[data-exercise=ID][data-seed=N]`` with ``data-state`` in ``prerendered | loading | ready | error``,
``data-seq`` (incremented on every check or new draw) and ``data-answered`` (the ``data-seq`` whose reply is
shown); ``data-verdict`` is ``right | wrong | invalid`` after a check. Inside: ``[data-question]``,
``form`` (``hidden`` until the engine runs) with ``input[name=answer]``, ``button[type=submit]`` and
``[data-new-numbers]``; ``[data-feedback]`` (``role=status``); ``details[data-hint]`` and
``details[data-solution]`` with ``[data-steps]`` and ``[data-answer]``.

On ``exercises.md`` every registered exercise must appear exactly once; an unknown id fails the build.
"""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "hooks"))

from calc.errors import CalcError
from calc.guide.exercises import Case, draw, exercises
from placeholders import Placeholders

PAGE = "exercises.md"
_LINE = re.compile(r"^\[\[exercise (?P<id>[^\]\s]*)\]\]\s*$", re.MULTILINE)
_ANY = re.compile(r"\[\[exercise\b[^\]]*\]\]")
_held = Placeholders("LCEXERCISEPLACEHOLDER", "exercise")


def render_exercise(case: Case) -> str:
    """The pre-rendered HTML of one case (no inline script or style: the CSP allows neither)."""
    e = html.escape
    ex = case.exercise
    steps = "".join(f"<li>{e(step)}</li>" for step in case.steps)
    return (
        f'<div class="lc-exercise" data-exercise="{e(ex)}" data-seed="{case.seed}" data-state="prerendered" '
        f'data-seq="0">'
        f'<p class="lc-exercise__question" data-question>{e(case.question)}</p>'
        f'<p class="lc-exercise__meta">Checked <span data-tolerance>{e(case.tolerance_text)}</span>; '
        f"type a unit or a bare number in <span data-display-unit>{e(case.display_unit)}</span>.</p>"
        f'<form class="lc-exercise__form" data-exercise-form hidden>'
        f'<label for="ex-{e(ex)}-answer">Your answer</label> '
        f'<input id="ex-{e(ex)}-answer" name="answer" type="text" autocomplete="off" autocapitalize="off" '
        f'spellcheck="false" aria-describedby="ex-{e(ex)}-feedback"> '
        f'<button type="submit" class="md-button" disabled>Check</button> '
        f'<button type="button" class="md-button" data-new-numbers disabled>New numbers</button>'
        f"</form>"
        f'<p class="lc-exercise__feedback" id="ex-{e(ex)}-feedback" role="status" data-feedback></p>'
        f'<details class="lc-exercise__hint" data-hint><summary>Hint</summary>'
        f"<p data-hint-text>{e(case.hint)}</p></details>"
        f'<details class="lc-exercise__solution" data-solution><summary>Worked solution</summary>'
        f"<ol data-steps>{steps}</ol><p>Answer: <strong data-answer>{e(case.answer_text)}</strong></p></details>"
        f"</div>"
    )


def on_page_markdown(markdown: str, page, config, files) -> str:
    src = page.file.src_uri
    _held.begin(src)
    seen: list[str] = []

    def marker(match: re.Match) -> str:
        ex = match["id"]
        try:
            case = draw(ex, 0)
        except CalcError as err:
            raise PluginError(f"{src}: exercise marker {match[0]!r}: {err}") from None
        seen.append(ex)
        return _held.hold(src, render_exercise(case))

    out = _held.check(src, _LINE.sub(marker, markdown), _ANY)
    if src == PAGE:
        missing = [ex for ex in exercises() if ex not in seen]
        doubled = sorted({ex for ex in seen if seen.count(ex) > 1})
        if missing or doubled:
            raise PluginError(f"{src}: every exercise exactly once; missing {missing}, repeated {doubled}")
    return out


def on_page_content(content: str, page, config, files) -> str:
    return _held.fill(page.file.src_uri, content)
