"""Every answer format an exercise accepts (issue 19), read by the engine's checker, and what a reader is told.

A number with a unit is read in that unit; a bare number in the unit the question asks in (``display_unit``):
``37.5`` for a percentage is 37.5 %, so ``0.375`` there is 0.375 %. Times take d/h/min/s. Messages name the
asked unit. The browser only forwards the text to the worker (``exercises.mjs`` parses nothing), so the engine's
tables here are what a reader's typing meets; ``test_exercise_formats_browser.py`` drives one of each on the page.
"""

from __future__ import annotations

import re
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from calc.errors import CalcError
from calc.guide.exercises import ANSWER_UNITS, check, draw, exercises, live, parse_answer
from calc.units import BYTE_UNITS

DAY = 86400

ACCEPTED = [
    # bytes
    ("1.1 TB", "B", "GB", 1_100 * 10**9),
    ("1120 GB", "B", "GB", 1_120 * 10**9),
    ("1120GB", "B", "GB", 1_120 * 10**9),  # no space
    ("1120 gb", "B", "GB", 1_120 * 10**9),  # any case
    ("1120", "B", "GB", 1_120 * 10**9),  # bare: the question's unit
    ("512", "B", "MB", 512 * 10**6),
    ("1 GiB", "B", "GB", 2**30),  # binary units stay binary
    ("1 gib", "B", "GB", 2**30),
    ("1,120 GB", "B", "GB", 1_120 * 10**9),  # thousands separators
    ("1_120 GB", "B", "GB", 1_120 * 10**9),
    ("4096 bytes", "B", "kB", 4096),
    ("131 kB", "B", "kB", 131_000),
    ("1120\u202fGB", "B", "GB", 1_120 * 10**9),  # the narrow no-break space the site prints
    # times: d / h / min / s and their spelled-out forms
    ("12 d", "s", "days", 12 * DAY),
    ("12d", "s", "days", 12 * DAY),
    ("12 days", "s", "days", 12 * DAY),
    ("1 day", "s", "days", DAY),
    ("12", "s", "days", 12 * DAY),  # bare: days, as asked
    ("288 h", "s", "days", 288 * 3600),
    ("288 hours", "s", "days", 288 * 3600),
    ("90 min", "s", "days", 90 * 60),
    ("30 s", "s", "ms", 30),
    ("30 seconds", "s", "ms", 30),
    ("3.9 ms", "s", "ms", Fraction(39, 10_000)),
    ("3.9", "s", "ms", Fraction(39, 10_000)),  # bare: ms, as asked
    ("3.9 MS", "s", "ms", Fraction(39, 10_000)),
    ("250 us", "s", "ms", Fraction(1, 4000)),
    ("250 µs", "s", "ms", Fraction(1, 4000)),
    # ratios: a bare number is in %
    ("37.5%", "ratio", "%", Fraction(3, 8)),
    ("37.5 %", "ratio", "%", Fraction(3, 8)),
    ("37.5 percent", "ratio", "%", Fraction(3, 8)),
    ("37.5", "ratio", "%", Fraction(3, 8)),  # the page says "a bare number in %"
    ("0.375", "ratio", "%", Fraction(3, 800)),  # ... so this is 0.375 %, not three eighths
    # whole numbers of things
    ("16", "gpus", "GPUs", 16),
    ("16 GPUs", "gpus", "GPUs", 16),
    ("16 gpu", "gpus", "GPUs", 16),
    ("56 micro-batches", "gpus", "micro-batches", 56),
    ("56 micro-batch", "gpus", "micro-batches", 56),
    # counts
    ("4.2e22", "count", "FLOP", 42 * 10**21),
    ("42e21", "count", "FLOP", 42 * 10**21),
    ("4.2e22 FLOPs", "count", "FLOP", 42 * 10**21),
    ("4.2e22FLOPs", "count", "FLOP", 42 * 10**21),
    ("1.5B", "count", "tokens", 15 * 10**8),
    ("1.5B tokens", "count", "tokens", 15 * 10**8),
    ("1.5 billion", "count", "parameters", 15 * 10**8),
    ("70 billion parameters", "count", "parameters", 70 * 10**9),
    ("140 k", "count", "tokens", 140_000),
    ("8×", "count", "×", 8),
    ("8x", "count", "×", 8),
    ("8", "count", "×", 8),
    ("295", "count", "FLOP/B", 295),
    ("295 FLOP/B", "count", "FLOP/B", 295),
]


@pytest.mark.parametrize(("text", "unit", "display", "expected"), ACCEPTED)
def test_every_format_is_read_exactly(text: str, unit: str, display: str, expected) -> None:
    assert parse_answer(text, unit, display) == expected


REFUSED = [
    ("", "s", "days", "days"),
    ("12 parsecs", "s", "days", "days"),  # the message names the asked unit, never "seconds"
    ("12 parsecs", "B", "GB", "GB"),
    ("5 GB", "gpus", "GPUs", "whole number"),
    ("3 ms", "B", "GB", "GB"),
    ("12 GB", "s", "ms", "ms"),
    ("37.5 GB", "ratio", "%", "%"),
    ("-1", "B", "GB", "must not be negative"),
    ("1 2", "count", "FLOP", "count"),
    ("1.5 B B", "count", "tokens", "count"),
    ("1e999", "count", "FLOP", "count"),
]


@pytest.mark.parametrize(("text", "unit", "display", "named"), REFUSED)
def test_a_refused_answer_says_what_to_type_in_the_asked_unit(text: str, unit: str, display: str, named: str) -> None:
    with pytest.raises(CalcError) as err:
        parse_answer(text, unit, display)
    assert err.value.field == "answer"
    assert named in str(err.value)
    assert "the unit the question names" not in str(err.value)


TIMES = "a time in ns, µs, ms, s, min, h or d (3.9 ms, 5 min, 12 d)"
SAID = [
    # issue 19: "12 weeks" met "answer must be a time with a unit (…) or a bare number in days", lower case and
    # wrong (weeks is a time with a unit): the reader is told which units are read, in the box's own words
    ("training-days", "12 weeks", f"Your answer must be {TIMES} or a bare number in days (got '12 weeks')"),
    ("training-days", "12 fortnights", f"Your answer must be {TIMES} or a bare number in days (got '12 fortnights')"),
    ("training-days", "", f"Your answer must be {TIMES} or a bare number in days: type a number"),
    ("training-days", "-3 d", "Your answer must not be negative (got '-3 d')"),  # was "answer be a number (got '-3')"
    ("training-days", "1e999 d", f"Your answer must be {TIMES} or a bare number in days (got '1e999 d')"),
    ("zero3-gpus", "lots", "Your answer must be a whole number (16, 16 GPUs) (got 'lots')"),
    ("bubble-1f1b", "-37.5 %", "Your answer must not be negative (got '-37.5 %')"),
]


@pytest.mark.parametrize(("exercise", "typed", "said"), SAID)
def test_a_refused_answer_is_told_in_the_readers_words(exercise: str, typed: str, said: str) -> None:
    """What the page shows for an answer it cannot read: led by the box's label, "Your answer", never the field's
    internal name in lower case; the engine's error keeps the field's name for code that matches on it."""
    reply = live({"op": "check", "exercise": exercise, "seed": "0", "answer": typed})
    assert reply["ok"] is False and reply["error"]["field"] == "answer"
    assert reply["error"]["said"] == said
    assert reply["error"]["message"] == "answer" + said.removeprefix("Your answer")


def test_another_refusal_is_told_with_a_capital() -> None:
    reply = live({"op": "case", "exercise": "bubble-1f1b", "seed": "x"})
    assert reply["error"]["said"] == "Seed must be a whole number from 0 to 1000000000 (got 'x')"


def _bare(value: Fraction, unit: str, display: str) -> str:
    """The answer as a bare number in the question's unit, to 6 significant figures."""
    per = {"B": BYTE_UNITS.get(display), "ratio": Fraction(1, 100)}.get(unit)
    if unit == "s":
        per = parse_answer("1", "s", display)
    return f"{float(value / (per or 1)):.6g}"


@pytest.mark.parametrize("exercise", list(exercises()))
def test_every_exercise_takes_its_answer_bare_in_its_unit_and_with_the_unit(exercise: str) -> None:
    case = draw(exercise)
    bare = _bare(case.answer, case.unit, case.display_unit)
    assert check(exercise, 0, bare)["correct"], (bare, case.display_unit)
    assert check(exercise, 0, case.answer_text.split(" (")[0])["correct"]
    if case.unit == "s":  # any time unit: the same time in seconds and in days
        assert check(exercise, 0, f"{float(case.answer):.6g} s")["correct"]
        assert check(exercise, 0, f"{float(case.answer) / DAY:.6g} d")["correct"]


@pytest.mark.parametrize("exercise", list(exercises()))
def test_a_wrong_answer_is_told_in_the_asked_unit(exercise: str) -> None:
    case = draw(exercise)
    wrong = _bare(case.answer * 3, case.unit, case.display_unit)
    reply = check(exercise, 0, wrong)
    assert not reply["correct"]
    message = reply["message"]
    assert "not exactly of" not in message and "exactly" not in message
    assert message.startswith(f"Not quite: {wrong} is ") and message.endswith(" Try the hint.")
    assert case.display_unit in message  # the typed number read back in the question's unit
    assert ("within" in message) == bool(case.tolerance)


MESSAGES = [
    ("zero3-gpus", "12", "Not quite: 12 is 12 GPUs, not the answer. Try the hint."),
    ("zero3-gpus", "12 GPUs", "Not quite: 12 GPUs is not the answer. Try the hint."),
    ("zero3-gpus", "14", "Right: 14 GPUs (exactly)."),
    ("bubble-1f1b", "37.5", "Right: 37.5 % (within 1 %)."),
    ("bubble-1f1b", "0.375", "Not quite: 0.375 is 0.375 %, not within 1 % of the answer. Try the hint."),
    ("model-state-total", "0.014 TB", "Not quite: 0.014 TB is 14 GB, not within 2 % of the answer. Try the hint."),
    ("model-state-total", "112", "Right: 112 GB (within 2 %)."),
]


@pytest.mark.parametrize(("exercise", "typed", "message"), MESSAGES)
def test_messages(exercise: str, typed: str, message: str) -> None:
    assert check(exercise, 0, typed)["message"] == message


def test_training_days_takes_days_hours_and_seconds() -> None:
    case = draw("training-days")
    days = float(case.answer) / DAY
    for typed in (f"{days:.4g} d", f"{days:.4g}d", f"{days:.4g}", f"{days * 24:.5g} h", f"{days * 1440:.6g} min"):
        assert check("training-days", 0, typed)["correct"], typed


def test_every_kind_of_answer_is_in_the_table() -> None:
    assert {unit for _, unit, _, _ in ACCEPTED} == set(ANSWER_UNITS)
    assert {case.unit for case in map(draw, exercises())} <= set(ANSWER_UNITS)


@pytest.mark.skipif(sys.platform == "emscripten", reason="reads the hooks and the stylesheet: host only")
def test_the_answer_box_takes_letters_at_16_px() -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hooks"))
    from lc_exercises import render_exercise

    box = re.search(r"<input [^>]*name=\"answer\"[^>]*>", render_exercise(draw("training-days")))
    assert box and "inputmode" not in box[0] and 'type="text"' in box[0]  # no decimal keypad: units have letters
    css = (Path(__file__).resolve().parent.parent / "docs/assets/stylesheets/theme.css").read_text()
    sizes = re.findall(r"\.lc-exercise__form input \{[^}]*font-size: max\((\d+)px", css)
    assert sizes and int(sizes[-1]) >= 16  # iOS zooms into a box under 16 px
