"""Tests for calc.parallel.pipeline: bubble formulas, schedules as data (measured bubble = formula) and the SVG
drawing."""

from __future__ import annotations

import itertools
import time
import xml.etree.ElementTree as ET
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _helpers import NARAYANAN_TABLE_1
from calc.errors import CalcError
from calc.parallel.pipeline import (
    BUBBLE_CONVENTIONS,
    MAX_SCHEDULE_OPS,
    SCHEDULES,
    bubble_fraction,
    pipeline_schedule,
    schedule_bubble,
    schedule_in_flight,
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


# Narayanan et al. 2021 Table 1's pipelined rows: params, pp, batch, dp = GPUs / (t x p). DERIVED: m = batch / (b x dp)
# micro-batches per pipeline with b = 1 (the paper does not print the micro-batch size); each m is a multiple of p,
# as the interleaved schedule requires.
NARAYANAN_PIPELINED_ROWS = [(r.params, r.p, r.batch, r.gpus // (r.t * r.p)) for r in NARAYANAN_TABLE_1 if r.p > 1]


@pytest.mark.parametrize(("params", "p", "batch", "dp"), NARAYANAN_PIPELINED_ROWS)
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
        ({"p": 8, "m": 16, "schedule": "zb-h2"}, "schedule", "unknown-name"),  # ZB-H2 is not modelled
        ({"p": 7, "m": 16, "schedule": "dualpipe"}, "p", "invalid-value"),  # DualPipe pairs stages from both ends
        ({"p": 8, "m": 14, "schedule": "dualpipe"}, "m", "invalid-value"),  # needs m >= 2p
        ({"p": 8, "m": 17, "schedule": "dualpipe"}, "m", "invalid-value"),  # and m even
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
    # calc.memory.activations.in_flight_chunks states the same counts in closed form; the simulation must agree.
    from calc.memory.activations import in_flight_chunks

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
    paths = root.findall(f"{SVG_NS}path")
    forward = sum(e.get("d").count("M") for e in paths if "pp-F" in e.get("class", "").split())
    backward = sum(e.get("d").count("M") for e in paths if "pp-B" in e.get("class", "").split())
    assert forward == backward == p * m * v  # one sub-path per pass
    assert len(paths) <= p * 2 * v  # ... but one path per stage, kind and chunk
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
        ({"pp": "1024", "num_microbatches": "9"}, False, "Not drawn: 1,024 stages is more than 32"),  # was 4.8 MB
        ({"pp": "8", "num_microbatches": "22", "schedule": "zb-h1"}, True, "<svg"),  # 528 passes of F, B and W
        ({"pp": "8", "num_microbatches": "40", "schedule": "zb-h1"}, True, "⋯ marks"),
        ({"pp": "8", "num_microbatches": "64"}, True, "⋯ marks 50 steady micro-batches elided"),  # 1,024 passes
        ({"pp": "16", "num_microbatches": "64"}, True, "⋯ marks"),
        ({"pp": "16", "num_microbatches": "64", "schedule": "dualpipe"}, False, "even with the steady middle elided"),
        ({"pp": "8", "num_microbatches": "20", "schedule": "zb-h1"}, True, "<svg"),
        ({"pp": "8", "num_microbatches": "16", "schedule": "dualpipe"}, True, "<svg"),
        ({"pp": "1024", "num_microbatches": "2048", "schedule": "dualpipe"}, False, "Not drawn"),
        ({"pp": "64", "num_microbatches": "2"}, False, "Not drawn: 64 stages is more than 32"),
        ({"pp": "1024", "num_microbatches": "1000000"}, False, "Not drawn: 1,024 stages"),
        ({"pp": "32", "num_microbatches": "1000000"}, False, "Not drawn: 64,000,000 passes"),
        ({"pp": "32", "num_microbatches": "8"}, True, "<svg"),  # 512 passes, the most drawn
        ({"pp": "4", "num_microbatches": "64"}, True, "<svg"),
        ({"pp": "4", "num_microbatches": "16", "schedule": "interleaved", "virtual_stages": "4"}, True, "<svg"),
        ({"pp": "4", "num_microbatches": "68", "schedule": "interleaved", "virtual_stages": "1"}, True, "⋯ marks"),
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
    from calc.memory.activations import in_flight_chunks

    live = m if schedule == "gpipe" else in_flight_chunks(p, interleave=v, num_microbatches=m)
    assert live == pipeline_schedule(p, m, schedule, v).peak_in_flight(0) == schedule_in_flight(schedule, p, m, v)


# --- ZB-H1 and DualPipe: the papers' formulas, measured from the simulated schedules ----------------------


@pytest.mark.parametrize(
    ("schedule", "p", "m", "times", "bubble"),
    [
        # Qi et al. 2023 Sec. 2.1: with T_F = T_B = T_W (here 1, input-gradient 1, weight 1) ZB-H1's bubble is
        # (p-1)(T_F + T_B - T_W) = p - 1, a third of 1F1B's (p-1)(T_F + T_B + T_W) = 3 (p - 1).
        ("zb-h1", 4, 8, (1, 2, 1), 3),
        ("1f1b", 4, 8, (1, 2, 1), 9),
        ("zb-h1", 8, 32, (1, 2, 1), 7),
        # DeepSeek-V3 Table 2, ZB1P: (PP-1)(F + B - 2W), B the whole backward.
        ("zb-h1", 8, 32, (2, 4, 1), 7 * (2 + 4 - 2)),
        # DeepSeek-V3 Table 2, DualPipe: (PP/2 - 1)(F&B + B - 3W), F&B = F + B here.
        ("dualpipe", 8, 16, (1, 2, 1), 3 * (3 + 2 - 3)),
        ("dualpipe", 16, 64, (1, 2, 1), 7 * 2),
        ("dualpipe", 2, 4, (1, 2, 1), 0),  # two stages: no bubble at all
        ("dualpipe", 8, 32, (2, 4, 2), 3 * (6 + 4 - 6)),
    ],
)
def test_papers_bubble_formulas_golden(schedule, p, m, times, bubble):
    f, b, w = times
    sched = pipeline_schedule(p, m, schedule, forward_units=f, backward_units=b, weight_units=w)
    assert sched.bubble_units() == bubble
    assert schedule_bubble(schedule, p, m, t_f=f, t_b=b, t_w=w) == bubble


@pytest.mark.parametrize(
    ("schedule", "p", "m", "v", "in_flight"),
    [
        ("gpipe", 4, 8, 1, 8),  # every micro-batch
        ("1f1b", 4, 8, 1, 4),  # Narayanan Sec. 2.2.1: p
        ("zb-h1", 4, 8, 1, 4),  # Qi et al.: ZB-H1 keeps 1F1B's peak, p M_B
        ("zb-h1", 8, 5, 1, 5),  # fewer micro-batches than stages
        ("dualpipe", 8, 16, 1, 9),  # DeepSeek-V3 Table 2: PP + 1
        ("dualpipe", 16, 64, 1, 17),
        ("interleaved", 4, 8, 2, 11),  # vp + p - 1 chunks of L/(pv) layers
    ],
)
def test_in_flight_golden(schedule, p, m, v, in_flight):
    assert schedule_in_flight(schedule, p, m, v) == in_flight
    assert pipeline_schedule(p, m, schedule, v).max_in_flight() == in_flight


_times = st.tuples(st.integers(1, 4), st.integers(2, 8)).flatmap(
    lambda fb: st.tuples(st.just(fb[0]), st.just(fb[1]), st.integers(1, fb[1] - 1))
)


@settings(max_examples=150, deadline=None)
@given(p=st.integers(1, 12), m=st.integers(1, 40), times=_times)
def test_zb_h1_closed_form_equals_simulation(p, m, times):
    # The closed form holds for every p, m and split of the backward, not only Qi et al.'s T_F = T_B = T_W.
    f, b, w = times
    sched = pipeline_schedule(p, m, "zb-h1", forward_units=f, backward_units=b, weight_units=w)
    assert sched.bubble_units() == schedule_bubble("zb-h1", p, m, t_f=f, t_b=b, t_w=w)
    assert sched.bubble() == bubble_fraction(p, m, schedule="zb-h1", forward_units=f, backward_units=b, weight_units=w)
    assert sched.bubble_units() <= pipeline_schedule(p, m, forward_units=f, backward_units=b).bubble_units()
    assert sched.max_in_flight() == sched.peak_in_flight(0) == schedule_in_flight("zb-h1", p, m)


@settings(max_examples=100, deadline=None)
@given(half=st.integers(1, 8), extra=st.integers(0, 12), unit=st.integers(1, 3))
def test_dualpipe_closed_form_equals_simulation(half, extra, unit):
    # DeepSeek's formula is exact for their uniform chunks, F = W = B/2 (any scale).
    p, m = 2 * half, 4 * half + 2 * extra
    sched = pipeline_schedule(p, m, "dualpipe", forward_units=unit, backward_units=2 * unit, weight_units=unit)
    assert sched.bubble_units() == schedule_bubble("dualpipe", p, m, t_f=unit, t_b=2 * unit, t_w=unit)
    assert sched.max_in_flight() == schedule_in_flight("dualpipe", p, m) == p + 1
    zb = pipeline_schedule(p, m, "zb-h1", forward_units=unit, backward_units=2 * unit, weight_units=unit)
    assert sched.bubble_units() <= zb.bubble_units()  # half the stages' worth of bubble


def test_dualpipe_formula_is_an_estimate_for_other_ratios():
    # Outside F = W = B/2 the report's formula is an estimate; the simulation stays within a few pass times.
    for f, b, w in ((1, 3, 1), (2, 5, 2), (3, 4, 2)):
        for p in (4, 8, 16):
            sched = pipeline_schedule(p, 4 * p, "dualpipe", forward_units=f, backward_units=b, weight_units=w)
            estimate = schedule_bubble("dualpipe", p, 4 * p, t_f=f, t_b=b, t_w=w)
            assert abs(sched.bubble_units() - estimate) <= (p // 2 - 1) * (f + b)


@pytest.mark.parametrize("schedule", ["zb-h1", "dualpipe"])
def test_split_schedules_are_consistent(schedule):
    p, m = 4, 8
    sched = pipeline_schedule(p, m, schedule)
    for ops in sched.ops:
        done = {}
        for o in ops:
            done[(o.kind, o.microbatch)] = o.start + o.duration
            if o.kind == "W":
                assert o.start >= done[("B", o.microbatch)]  # weight gradients after the input gradients
        assert {k for k in done if k[0] != "W"} == {(k, j) for k in "BF" for j in range(m)}
        assert len(ops) == len({(o.kind, o.microbatch) for o in ops})  # each pass once
        # A backward is whole, or split into B and W that add up to it (DualPipe splits only some).
        assert all(o.overlapped or o.duration == 2 or ("W", o.microbatch) in done for o in ops if o.kind == "B")
    overlapped = [o for ops in sched.ops for o in ops if o.overlapped]
    assert (len(overlapped) > 0) is (schedule == "dualpipe")


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"t_f": 0}, "t_f"),
        ({"t_b": float("nan")}, "t_b"),
        ({"t_w": 2.0}, "t_w"),  # must be less than t_b
        ({"t_fb": float("inf")}, "t_fb"),
        ({"t_f": 10**400}, "t_f"),  # past a float: an error, not an OverflowError
        ({"t_f": "1"}, "t_f"),
        ({"convention": "half"}, "convention"),
    ],
)
def test_schedule_bubble_errors(kwargs, field):
    with pytest.raises(CalcError) as err:
        schedule_bubble("dualpipe", 8, 16, **kwargs)
    assert err.value.field == field


def test_schedule_bubble_conventions():
    time = schedule_bubble("1f1b", 8, 32, t_f=0.01, t_b=0.02)
    assert time == pytest.approx(7 * 0.03)
    assert schedule_bubble("1f1b", 8, 32, convention="ideal") == pytest.approx(7 / 32)
    assert schedule_bubble("1f1b", 8, 32, convention="total") == pytest.approx(7 / 39)
    assert schedule_bubble("interleaved", 8, 32, 4, convention="ideal") == pytest.approx(7 / 128)


def _cpu_seconds(build) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.process_time()
        build()
        best = min(best, time.process_time() - start)
    return best


def test_schedule_building_is_linear_in_p():
    # The same number of passes costs the same CPU work whatever p (it was 279 ms at p = 1024 against 57 ms
    # at p = 8 for the same passes): CPU time of this process, as a ratio, never wall time.
    small = pipeline_schedule(8, 1152)
    large = pipeline_schedule(1024, 9)
    assert sum(map(len, small.ops)) == sum(map(len, large.ops)) == 18_432
    assert large.makespan == 3 * (9 + 1024 - 1)
    ratio = _cpu_seconds(lambda: pipeline_schedule(1024, 9)) / _cpu_seconds(lambda: pipeline_schedule(8, 1152))
    assert ratio < 2.5, ratio


def test_schedule_text_alternative():
    from calc.parallel.pipeline_svg import schedule_text

    lines = schedule_text(pipeline_schedule(4, 8, "dualpipe"))
    assert len(lines) == 4 and lines[0].startswith("Stage 1: F1")
    assert any("&" in line for line in lines)  # the overlapped pairs
    assert "W" in lines[0]


@pytest.mark.parametrize("schedule", ["zb-h1", "dualpipe"])
def test_widget_new_schedules(schedule):
    fragment = _widget(schedule=schedule)
    assert 'data-output="schedule"' in fragment and "<svg" in fragment
    assert 'data-output="schedule_text"' in fragment
    assert 'data-output="in_flight">' in fragment
    ideal = bubble_fraction(4, 8, schedule=schedule)
    assert f'data-output="bubble_ideal">{float(ideal) * 100:.3g}% ({ideal})<' in fragment
    assert ideal < bubble_fraction(4, 8)  # both beat 1F1B


def test_widget_dualpipe_errors_name_the_field():
    with pytest.raises(CalcError) as err:
        _widget(schedule="dualpipe", pp="3", num_microbatches="8")
    assert err.value.field == "pp"
    with pytest.raises(CalcError) as err:
        _widget(schedule="dualpipe", num_microbatches="6")
    assert err.value.field == "num_microbatches"
