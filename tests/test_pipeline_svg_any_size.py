"""The pipeline diagram at any size: the steady middle elided, the warm-up and cool-down exact (issue #19).

``elided_schedule`` simulates a short schedule and cuts it where every stage is busy; these tests check,
pass by pass, that what it draws is what the full simulation has, and that the drawing stays bounded.
"""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import pytest

from calc.errors import CalcError
from calc.parallel.pipeline_elision import drawn_passes, elided_schedule
from calc.parallel.pipeline_schedules import pipeline_schedule
from calc.parallel.pipeline_svg import MAX_LABELLED_PASSES, schedule_svg, schedule_text

SVG_NS = "{http://www.w3.org/2000/svg}"


def _real_windows(cuts) -> list[tuple[int, int]]:
    """Each cut's elided span in the real schedule's time."""
    out, done = [], 0
    for c in cuts:
        out.append((c.at + done, c.at + done + c.units))
        done += c.units
    return out


def _visible(full, windows) -> list[tuple]:
    """Every pass of the full schedule, clipped to what lies outside the elided windows."""
    out = []
    for ops in full.ops:
        for op in ops:
            pieces = [(op.start, op.start + op.duration)]
            for lo, hi in windows:
                pieces = [(a, min(b, lo)) for a, b in pieces if a < lo] + [(max(a, hi), b) for a, b in pieces if b > hi]
            out += [(op.stage, a, b, op.kind, op.microbatch, op.chunk, op.overlapped) for a, b in pieces]
    return sorted(out)


# (p, m, schedule, v, units): each row's full schedule is simulated and compared pass by pass.
FAITHFUL = [
    (1, 64, "1f1b", 1, {}),  # one stage: no bubble, all steady
    (2, 64, "1f1b", 1, {"backward_units": 1}),
    (8, 64, "1f1b", 1, {}),  # the issue's p = 8
    (16, 128, "1f1b", 1, {}),
    (1, 64, "gpipe", 1, {}),  # one stage: the forwards and backwards still get a cut each
    (8, 64, "gpipe", 1, {}),  # two cuts: in the forwards, in the backwards
    (16, 100, "gpipe", 1, {"backward_units": 1}),
    (2, 64, "interleaved", 2, {}),
    (8, 64, "interleaved", 2, {}),
    (8, 96, "interleaved", 3, {}),
    (2, 64, "interleaved", 12, {}),
    (4, 96, "interleaved", 12, {}),
    (2, 64, "zb-h1", 1, {}),
    (8, 96, "zb-h1", 1, {"forward_units": 2}),  # W lags B by up to p: the short schedule needs 2p
    (16, 128, "zb-h1", 1, {}),
    (2, 64, "dualpipe", 1, {}),
    (8, 96, "dualpipe", 1, {}),  # two directions: each elides half the micro-batches
    (16, 128, "dualpipe", 1, {"forward_units": 2}),
]


@pytest.mark.parametrize(("p", "m", "schedule", "v", "units"), FAITHFUL)
def test_drawn_passes_are_the_full_schedules(p, m, schedule, v, units):
    elided = elided_schedule(p, m, schedule, v, **units)
    short, cuts, _ = elided
    full = pipeline_schedule(p, m, schedule, v, **units)
    assert cuts, "long enough to be cut"
    assert short.makespan + sum(c.units for c in cuts) == full.makespan  # the time axis is the real one
    got = sorted(d[:7] for d in drawn_passes(elided))
    assert got == _visible(full, _real_windows(cuts))


@pytest.mark.parametrize(("p", "m", "schedule", "v", "units"), FAITHFUL)
def test_cuts_never_hide_the_bubble(p, m, schedule, v, units):
    full = pipeline_schedule(p, m, schedule, v, **units)
    cuts = elided_schedule(p, m, schedule, v, **units).cuts
    for lo, hi in _real_windows(cuts):
        for ops in full.ops:  # every stage is busy through every elided span
            busy = sum(
                min(o.start + o.duration, hi) - max(o.start, lo)
                for o in ops
                if o.start < hi and o.start + o.duration > lo
            )
            overlap = sum(  # an overlapped DualPipe pair occupies its time once
                min(o.start + o.duration, hi) - max(o.start, lo)
                for o, q in itertools.pairwise(ops)
                if o.overlapped and q.overlapped and o.start == q.start and o.start < hi and o.start + o.duration > lo
            )
            assert busy - overlap == hi - lo


def _cases() -> list[tuple[int, int, str, int]]:
    """p in {1, 2, 8, 16}, m up to 1024, v in {1, 2, 12}, every schedule where its rules allow."""
    out = []
    for p in (1, 2, 8, 16):
        for m in (1, 2, 16, 32, 100, 1024):
            out += [(p, m, s, 1) for s in ("1f1b", "gpipe", "zb-h1")]
            out += [(p, m, "interleaved", v) for v in (2, 12) if m % p == 0]
            if p % 2 == 0 and m % 2 == 0 and m >= 2 * p:
                out.append((p, m, "dualpipe", 1))
    return out


def _elements(root) -> int:
    return sum(1 for _ in root.iter())


@pytest.mark.parametrize(("p", "m", "schedule", "v"), _cases())
def test_any_size_is_drawn_bounded(p, m, schedule, v):
    elided = elided_schedule(p, m, schedule, v)
    svg = schedule_svg(elided, id_prefix="t")
    root = ET.fromstring(svg)  # well-formed
    short, cuts, _ = elided
    drawn = len(drawn_passes(elided))
    labelled = drawn <= MAX_LABELLED_PASSES
    # rows: a label, one idle rect per segment, one path per kind and chunk shade; labels; a group per cut
    bound = p * (1 + (len(cuts) + 1) + 3 * 4) + (drawn if labelled else 0) + 6 * len(cuts) + 8
    assert _elements(root) <= bound
    assert ("⋯" in svg) == bool(cuts)  # the ellipsis only where something is elided
    if m == 1024:
        assert cuts and short.m < 100  # a long schedule is drawn from a short one
    if not cuts:
        assert short.m == m and drawn == sum(map(len, pipeline_schedule(p, m, schedule, v).ops))  # drawn whole
    texts = [t.text for t in root.iter(f"{SVG_NS}text")]
    desc = root.find(f"{SVG_NS}desc").text
    if labelled:
        assert "1" in texts and str(m) in texts  # the first and last micro-batches are drawn, numbered
    if cuts:
        assert f"Micro-batches 1 to {m:,}" in desc
        assert f"{cuts[0].microbatches:,} micro-batches" in desc  # how many are elided, said
        total = short.makespan + sum(c.units for c in cuts)
        assert f"over {total:,} time units" in desc and f"({total} units" in " ".join(texts)


@pytest.mark.parametrize(
    ("p", "schedule", "v"), [(8, "1f1b", 1), (16, "gpipe", 1), (16, "interleaved", 12), (16, "dualpipe", 1)]
)
def test_size_does_not_grow_with_m(p, schedule, v):
    sizes = {m: schedule_svg(elided_schedule(p, m, schedule, v)) for m in (256, 1024, 1_000_000)}
    counts = {m: _elements(ET.fromstring(svg)) for m, svg in sizes.items()}
    assert len(set(counts.values())) == 1  # the same drawing, other numbers
    assert max(map(len, sizes.values())) - min(map(len, sizes.values())) < 0.1 * len(sizes[256])


def test_short_schedules_are_the_full_drawing():
    elided = elided_schedule(4, 8, "interleaved", 2)
    assert schedule_svg(elided) == schedule_svg(pipeline_schedule(4, 8, "interleaved", 2))
    assert schedule_text(elided) == schedule_text(pipeline_schedule(4, 8, "interleaved", 2))


def test_the_issue_size_is_drawn_with_its_ends():
    svg = schedule_svg(elided_schedule(8, 32))  # p = 8, m = 32: "Not drawn: 1,024 passes" before
    texts = [t.text for t in ET.fromstring(svg).iter(f"{SVG_NS}text")]
    assert "⋯" in texts and "Stage 8" in texts and "32" in texts and "1" in texts


def test_text_alternative_names_the_cut():
    lines = schedule_text(elided_schedule(4, 1000, "gpipe"))
    assert len(lines) == 4
    assert lines[0].startswith("Stage 1: F1 F2") and lines[0].endswith("B1000")
    assert lines[0].count("micro-batches") == 2  # GPipe: one cut in the forwards, one in the backwards
    assert "(idle" in lines[0]  # the bubble is there


def test_too_many_chunks_to_draw_names_p():
    with pytest.raises(CalcError, match="too large to draw"):
        elided_schedule(64, 1024, "interleaved", 12)
