"""``python -m calc``: the same calculators on the command line."""

from __future__ import annotations

import json

import pytest

from calc.__main__ import main


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list"]) == 0
    assert "will-it-fit" in capsys.readouterr().out


def test_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["will-it-fit", "params=7.5e9", "zero_stage=1", "dp=64", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["total"] == "31.4 GB"


def test_text(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["will-it-fit", "params=70B"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("Does not fit") and "Total model state\t16 B\t1.12 TB" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["will-it-fit", "params=seven"], "params must be a positive count"),
        (["will-it-fit", "batch=4"], "batch is not an input of will-it-fit"),
        (["will-it-fit", "params"], "inputs are field=value pairs"),
        (["nope"], "calculator must be one of"),
    ],
)
def test_bad_input_exits_2_with_a_message(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main(args) == 2
    assert message in capsys.readouterr().err
