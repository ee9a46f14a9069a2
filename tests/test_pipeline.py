"""Tests for calc.pipeline: bubble formulas, schedules as data (measured bubble = formula) and the SVG drawing."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.pipeline import (
    BUBBLE_CONVENTIONS,
    MAX_SCHEDULE_OPS,
    SCHEDULES,
    bubble_fraction,
    pipeline_schedule,
    schedule_svg,
)

SVG_NS = "{http://www.w3.org/2000/svg}"


# --- formulas ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("p", "m", "schedule", "v", "convention", "expected"),
    [
        (4, 8, "1f1b", 1, "ideal", Fraction(3, 8)),  # Narayanan Sec. 2.2.1: (p-1)/m
        (4, 8, "gpipe", 1, "ideal", Fraction(3, 8)),  # GPipe has the same bubble as 1F1B
        (4, 8, "1f1b", 1, "total", Fraction(3, 11)),  # (p-1)/(m+p-1)
        (4, 8, "interleaved", 2, "ideal", Fraction(3, 16)),  # Sec. 2.2.2: (1/v)(p-1)/m
        (4, 8, "interleaved", 2, "total", Fraction(3, 19)),  # (p-1)/(vm+p-1)
        (4, 8, "interleaved", 1, "ideal", Fraction(3, 8)),  # v = 1 is plain 1F1B
        (1, 5, "1f1b", 1, "ideal", Fraction(0)),  # no pipeline, no bubble
        (8, 1, "gpipe", 1, "ideal", Fraction(7)),  # one micro-batch: mostly idle
        (8, 1, "gpipe", 1, "total", Fraction(7, 8)),
    ],
)
def test_bubble_table(p, m, schedule, v, convention, expected):
    assert bubble_fraction(p, m, schedule=schedule, v=v, convention=convention) == expected


# Narayanan et al. 2021 Table 1, DERIVED: m = batch / (b x dp) micro-batches per pipeline with b = 1 (the paper
# does not print the micro-batch size); each m is a multiple of p, as the interleaved schedule requires.
NARAYANAN_TABLE_1 = [
    # params, pp, batch, dp
    ("39.1B", 2, 1536, 32),
    ("76.1B", 4, 1792, 32),
    ("145.6B", 8, 2304, 24),
    ("310.1B", 16, 2160, 15),
    ("529.6B", 35, 2520, 9),
    ("1008B", 64, 3072, 6),
]


@pytest.mark.parametrize(("params", "p", "batch", "dp"), NARAYANAN_TABLE_1)
def test_narayanan_table1_bubbles(params, p, batch, dp):
    m = batch // dp
    assert m * dp == batch and m % p == 0
    assert bubble_fraction(p, m) == Fraction(p - 1, m)
    for v in (2, 3, 4):
        assert bubble_fraction(p, m, schedule="interleaved", v=v) == Fraction(p - 1, v * m)


def test_1t_model_bubble_golden():
    # 1T row: p = 64, m = 3072 / 6 = 512 -> 63/512 = 12.3% of ideal time with 1F1B.
    assert bubble_fraction(64, 512) == Fraction(63, 512)
    assert f"{float(bubble_fraction(64, 512)):.1%}" == "12.3%"


@pytest.mark.parametrize(
    ("kwargs", "field", "code"),
    [
        ({"p": 8, "m": 12, "schedule": "interleaved", "v": 2}, "m", "not-divisible"),  # Narayanan: m multiple of p
        ({"p": 8, "m": 16, "schedule": "1f1b", "v": 2}, "v", "invalid-value"),
        ({"p": 8, "m": 16, "schedule": "gpipe", "v": 3}, "v", "invalid-value"),
        ({"p": 8, "m": 16, "schedule": "zb-h1"}, "schedule", "unknown-name"),
        ({"p": 8, "m": 16, "convention": "bubble"}, "convention", "unknown-name"),
        ({"p": 0, "m": 16}, "p", "invalid-value"),
        ({"p": 8, "m": 0}, "m", "invalid-value"),
        ({"p": 8, "m": 8, "schedule": "interleaved", "v": 0}, "v", "invalid-value"),
    ],
)
def test_bubble_errors(kwargs, field, code):
    with pytest.raises(CalcError) as err:
        bubble_fraction(**kwargs)
    assert (err.value.field, err.value.code) == (field, code)


@settings(max_examples=200, deadline=None)
@given(p=st.integers(1, 128), m=st.integers(1, 4096), v=st.integers(1, 8))
def test_bubble_invariants(p, m, v):
    ideal = bubble_fraction(p, m)
    total = bubble_fraction(p, m, convention="total")
    assert total == ideal / (1 + ideal)  # bubble/total = bubble/(ideal + bubble)
    assert 0 <= total < 1
    assert bubble_fraction(p, m + 1) <= ideal  # more micro-batches, smaller bubble
    mi = m * p  # a multiple of p, as interleaving requires
    assert bubble_fraction(p, mi, schedule="interleaved", v=v) <= bubble_fraction(p, mi)  # never increases
    assert bubble_fraction(p, mi, schedule="interleaved", v=v) * v == bubble_fraction(p, mi)


# --- schedules as data ------------------------------------------------------------------------

_cases = st.one_of(
    st.tuples(st.sampled_from(["gpipe", "1f1b"]), st.integers(1, 8), st.integers(1, 20), st.just(1)),
    st.integers(1, 6).flatmap(
        lambda p: st.tuples(
            st.just("interleaved"), st.just(p), st.integers(1, 5).map(lambda k: k * p), st.integers(1, 4)
        )
    ),
)


@settings(max_examples=200, deadline=None)
@given(case=_cases, backward_units=st.integers(1, 3))
def test_measured_bubble_equals_formula(case, backward_units):
    name, p, m, v = case
    sched = pipeline_schedule(p, m, name, v, backward_units=backward_units)
    for convention in BUBBLE_CONVENTIONS:
        assert sched.bubble(convention) == bubble_fraction(p, m, schedule=name, v=v, convention=convention)
    # Every stage idles the same time, (p-1)(1 + backward_units) units: Narayanan's t_pb = (p-1)(t_f + t_b).
    assert {sched.idle_units(i) for i in range(p)} == {(p - 1) * (1 + backward_units)}


@settings(max_examples=100, deadline=None)
@given(case=_cases, backward_units=st.integers(1, 3))
def test_schedule_is_consistent(case, backward_units):
    name, p, m, v = case
    sched = pipeline_schedule(p, m, name, v, backward_units=backward_units)
    finish = {}
    for stage, ops in enumerate(sched.ops):
        assert sorted((o.kind, o.microbatch, o.chunk) for o in ops) == sorted(
            (k, j, c) for k in "BF" for j in range(m) for c in range(v)
        )
        for a, b in itertools.pairwise(ops):
            assert a.start + a.duration <= b.start  # one pass at a time
        for o in ops:
            assert o.duration == (1 if o.kind == "F" else backward_units)
            finish[(o.kind, o.microbatch, o.chunk * p + stage)] = (o.start, o.start + o.duration)
    last = p * v - 1
    for (kind, mb, g), (start, _) in finish.items():
        if kind == "F" and g > 0:
            assert start >= finish[("F", mb, g - 1)][1]  # input activations have arrived
        if kind == "B":
            assert start >= finish[("B", mb, g + 1)][1] if g < last else start >= finish[("F", mb, g)][1]
    slots = sched.stages
    assert all(len(row) == sched.makespan for row in slots)
    assert all(s.time == t for row in slots for t, s in enumerate(row))
    busy = sum(1 for row in slots for s in row if s.kind != "idle")
    assert busy == p * sched.busy_units


def test_1f1b_slots_golden():
    # p = 2, m = 2, forward = backward = 1 unit: the two-stage 1F1B pattern.
    rows = ["".join(s.kind[0] for s in row) for row in pipeline_schedule(2, 2, backward_units=1).stages]
    assert rows == ["FFiBiB", "iFBFBi"]
    first = pipeline_schedule(2, 2, backward_units=1).stages[0][0]
    assert (first.time, first.kind, first.microbatch, first.chunk) == (0, "F", 0, 0)
    idle = pipeline_schedule(2, 2, backward_units=1).stages[1][0]
    assert (idle.kind, idle.microbatch, idle.chunk) == ("idle", None, None)


@pytest.mark.parametrize(
    ("p", "m", "stage", "expected"),
    [
        (4, 8, 0, 4),  # Narayanan Sec. 2.2.1: 1F1B keeps at most p micro-batches in flight
        (4, 8, 3, 1),  # the last stage runs each backward right after its forward
        (8, 3, 0, 3),  # fewer micro-batches than stages
    ],
)
def test_1f1b_in_flight(p, m, stage, expected):
    assert pipeline_schedule(p, m).peak_in_flight(stage) == expected
    assert pipeline_schedule(p, m, "gpipe").peak_in_flight(stage) == m  # GPipe stashes every micro-batch


@pytest.mark.parametrize(("p", "v"), [(2, 2), (4, 2), (4, 3), (8, 2), (8, 4)])
def test_interleaved_in_flight_matches_korthikanti(p, v):
    # Korthikanti et al. 2022 Sec. 4.2.3: interleaving multiplies stage 0's activation memory by 1 + (p-1)/(p v),
    # i.e. p (1 + (p-1)/(p v)) micro-batches of L/p layers = that many x v chunks of L/(p v) layers.
    sched = pipeline_schedule(p, 4 * p, "interleaved", v)
    assert Fraction(sched.peak_in_flight(0), v) == p * (1 + Fraction(p - 1, p * v))


def test_in_flight_agrees_with_activations_module():
    # calc.activations.in_flight_chunks states the same counts in closed form; the simulation must agree.
    from calc.activations import in_flight_chunks

    for name, v in (("1f1b", 1), ("interleaved", 2), ("interleaved", 3)):
        for p in (1, 2, 3, 4, 8):
            for m in (p, 2 * p, 3 * p):
                sched = pipeline_schedule(p, m, name, v)
                for stage in range(p):
                    assert sched.peak_in_flight(stage) == in_flight_chunks(
                        p, interleave=v, num_microbatches=m, stage=stage
                    )


def test_schedule_as_dict():
    data = pipeline_schedule(4, 8, "interleaved", 2).as_dict()
    assert (data["p"], data["m"], data["v"], data["schedule"]) == (4, 8, 2, "interleaved")
    assert data["bubble_ideal"] == 3 / 16
    assert len(data["ops"]) == 4 and all(len(row) == 2 * 8 * 2 for row in data["ops"])


def test_schedule_size_limit():
    p = 16
    m = MAX_SCHEDULE_OPS // (2 * p)
    assert pipeline_schedule(p, m).makespan > 0
    with pytest.raises(CalcError) as err:
        pipeline_schedule(p, m + 1)
    assert err.value.field == "m"
    # The formula itself has no limit.
    assert bubble_fraction(p, 10**9) == Fraction(p - 1, 10**9)


@pytest.mark.parametrize("schedule", SCHEDULES)
def test_schedule_rejects_what_the_formula_rejects(schedule):
    with pytest.raises(CalcError):
        pipeline_schedule(4, 6, schedule, 2)  # v = 2 needs interleaving; interleaving needs 4 | 6


# --- SVG --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("p", "m", "schedule", "v"), [(4, 8, "1f1b", 1), (4, 8, "interleaved", 2), (3, 5, "gpipe", 1)])
def test_svg_structure(p, m, schedule, v):
    svg = schedule_svg(pipeline_schedule(p, m, schedule, v), id_prefix="fig1")
    root = ET.fromstring(svg)  # well-formed XML
    assert root.tag == f"{SVG_NS}svg"
    assert root.get("viewBox", "").startswith("0 0 ")
    assert root.get("role") == "img" and root.get("aria-labelledby") == "fig1-title fig1-desc"
    assert root.find(f"{SVG_NS}title").get("id") == "fig1-title"
    assert "bubble" in root.find(f"{SVG_NS}desc").text.lower()
    rects = root.findall(f"{SVG_NS}rect")
    forward = [r for r in rects if "pp-F" in r.get("class", "").split()]
    backward = [r for r in rects if "pp-B" in r.get("class", "").split()]
    assert len(forward) == len(backward) == p * m * v
    labels = {t.text for t in root.findall(f"{SVG_NS}text")}
    assert {str(j) for j in range(1, m + 1)} <= labels  # micro-batches numbered from 1, as in the paper's figures
    assert f"Stage {p}" in labels


def test_svg_is_theme_neutral_and_self_contained():
    svg = schedule_svg(pipeline_schedule(4, 8))
    assert "currentColor" in svg
    assert "@import" not in svg and "url(" not in svg and "<image" not in svg
    assert svg.count("http") == 1  # only the SVG namespace
    assert "<script" not in svg


def test_svg_escapes_title():
    svg = schedule_svg(pipeline_schedule(2, 2), title='p=2 & m=2 <"quoted">', id_prefix='a"b')
    root = ET.fromstring(svg)
    assert root.find(f"{SVG_NS}title").text == 'p=2 & m=2 <"quoted">'


# --- the calculator (calc/widgets/pipeline.py) -------------------------------------------------------


def _widget(**inputs: str) -> str:
    from calc.widgets.pipeline import CALCULATOR

    return CALCULATOR.compute({**CALCULATOR.defaults, **inputs})


def test_widget_defaults():
    fragment = _widget()
    assert 'data-output="bubble_ideal">37.5% (3/8)<' in fragment  # p = 4, m = 8: (p-1)/m
    assert 'data-output="bubble_total">27.3% (3/11)<' in fragment
    assert 'data-output="in_flight">4<' in fragment
    assert 'data-output="schedule"' in fragment and "<svg" in fragment


def test_widget_interleaved_and_limits():
    assert 'data-output="bubble_ideal">18.8% (3/16)<' in _widget(schedule="interleaved", virtual_stages="2")
    assert "<svg" not in _widget(pp="64", num_microbatches="512")  # too large to draw, bubble still shown
    assert 'data-output="bubble_ideal">12.3% (63/512)<' in _widget(pp="64", num_microbatches="512")
    # v is ignored (the box is disabled) unless the schedule is interleaved.
    assert _widget(virtual_stages="7") == _widget()


@pytest.mark.parametrize(
    ("inputs", "field", "code"),
    [
        ({"schedule": "interleaved", "num_microbatches": "6"}, "num_microbatches", "not-divisible"),
        ({"pp": "0"}, "pp", "invalid-value"),
        ({"schedule": "chimera"}, "schedule", "unknown-name"),
        ({"backward_units": "3"}, "backward_units", "invalid-value"),
        ({"schedule": "interleaved", "virtual_stages": "65"}, "virtual_stages", "invalid-value"),
    ],
)
def test_widget_errors_name_the_field(inputs, field, code):
    with pytest.raises(CalcError) as err:
        _widget(**inputs)
    assert (err.value.field, err.value.code) == (field, code)


@pytest.mark.parametrize("garbage", ["", "abc", "-1", "1e999", "NaN", "9" * 5000, "<script>"])
def test_widget_garbage_is_an_error_not_a_crash(garbage):
    from calc.widgets.pipeline import CALCULATOR

    for f in CALCULATOR.fields:
        try:
            assert "<script>" not in _widget(**{f.name: garbage})
        except CalcError as err:
            assert err.field == f.name


@pytest.mark.parametrize(
    ("inputs", "drawn", "reason"),
    [
        ({"pp": "1024", "num_microbatches": "9"}, False, "Not drawn: 18,432 passes is more than 512"),  # was 4.8 MB
        ({"pp": "64", "num_microbatches": "2"}, False, "Not drawn: 64 stages is more than 32"),
        ({"pp": "1024", "num_microbatches": "1000000"}, False, "Not drawn: 2,048,000,000 passes"),
        ({"pp": "32", "num_microbatches": "8"}, True, "<svg"),  # 512 passes, the most drawn
        ({"pp": "4", "num_microbatches": "64"}, True, "<svg"),
        ({"pp": "4", "num_microbatches": "16", "schedule": "interleaved", "virtual_stages": "4"}, True, "<svg"),
        ({"pp": "4", "num_microbatches": "68", "schedule": "interleaved", "virtual_stages": "1"}, False, "Not drawn"),
    ],
)
def test_widget_draws_only_readable_schedules(inputs: dict, drawn: bool, reason: str) -> None:
    fragment = _widget(**inputs)
    assert reason in fragment and ("<svg" in fragment) is drawn
    assert len(fragment.encode()) < 200_000


@pytest.mark.parametrize(
    ("p", "m", "schedule", "v"),
    [
        (4, 8, "1f1b", 1),
        (8, 3, "1f1b", 1),
        (4, 8, "gpipe", 1),
        (4, 8, "interleaved", 2),
        (4, 4, "interleaved", 3),
        (2, 2, "interleaved", 4),
        (8, 16, "interleaved", 2),
        (1, 5, "1f1b", 1),
    ],
)
def test_in_flight_without_drawing_matches_the_schedule(p: int, m: int, schedule: str, v: int) -> None:
    """When the schedule is not drawn the calculator uses the closed form; it equals the simulated peak."""
    from calc.activations import in_flight_chunks

    live = m if schedule == "gpipe" else in_flight_chunks(p, interleave=v, num_microbatches=m)
    assert live == pipeline_schedule(p, m, schedule, v).peak_in_flight(0)
