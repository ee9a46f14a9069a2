"""The calculators' shared contract: every field labelled, defaults render, bad input comes back as data."""

from __future__ import annotations

import html
import json
import re

import pytest

from calc import format_bytes, model_state_bytes
from calc.widgets import calculators, render, render_calculator

NAMES = sorted(calculators())


@pytest.mark.parametrize("name", NAMES)
def test_defaults_render(name: str) -> None:
    result = render(name)
    assert result["ok"], result
    assert 'data-output="' in result["html"]


@pytest.mark.parametrize("name", NAMES)
def test_dom_contract(name: str) -> None:
    page = render_calculator(name)
    assert f'data-calc="{name}"' in page and 'data-state="prerendered"' in page
    assert 'role="alert"' in page
    assert "\n\n" not in page  # a blank line would end the raw HTML block in Markdown
    for f in calculators()[name].fields:
        cid = f"{name}-{f.name}"
        assert re.search(rf'<(input|select|textarea)[^>]*id="{cid}" name="{f.name}"', page), f.name
        assert f'<label for="{cid}">' in page, f.name
    defaults = json.loads(html.unescape(re.search(r'data-defaults="([^"]*)"', page)[1]))
    assert defaults == calculators()[name].defaults


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("garbage", ["", "abc", "-1", "1e999", "NaN", "inf", "9" * 5000, "1/0", "<script>"])
def test_garbage_in_any_field_is_data_not_exception(name: str, garbage: str) -> None:
    for f in calculators()[name].fields:
        result = render(name, {f.name: garbage})
        assert result["ok"] in (True, False)
        if not result["ok"]:
            err = result["error"]
            assert err["field"] and err["message"]  # plain text: the page shows it with textContent
        else:
            assert "<script>" not in result["html"]


def test_unknown_calculator() -> None:
    assert render("nope")["error"]["field"] == "calculator"


@pytest.mark.parametrize(
    ("inputs", "total"),
    [
        ({}, model_state_bytes("7B").total),
        ({"params": "70B", "zero_stage": "3", "dp": "64"}, model_state_bytes("70B", zero_stage=3, dp=64).total),
        ({"params": "7.5e9", "zero_stage": "1", "dp": "64"}, model_state_bytes(7.5e9, zero_stage=1, dp=64).total),
        ({"convention": "mixed-adam-18"}, model_state_bytes("7B", convention="mixed-adam-18").total),
    ],
)
def test_will_it_fit_total(inputs: dict, total: int) -> None:
    fragment = render("will-it-fit", inputs)["html"]
    assert f'data-output="total">{format_bytes(total)}<' in fragment


@pytest.mark.parametrize(
    ("inputs", "ok", "suggestion"),
    [
        ({"params": "7B"}, "no", "ZeRO-1 with dp ≥ 2"),
        ({"params": "1B"}, "yes", "ZeRO-0 with any dp"),
        ({"params": "70B"}, "no", "ZeRO-3 with dp ≥ 14"),
        ({"params": "70B", "gpu": "mi300x"}, "no", "ZeRO-2 with dp ≥ 19"),  # 140 GB + 980 GB / 19 <= 192 GB
    ],
)
def test_will_it_fit_verdict(inputs: dict, ok: str, suggestion: str) -> None:
    fragment = render("will-it-fit", inputs)["html"]
    assert f'data-ok="{ok}"' in fragment
    assert suggestion in fragment
