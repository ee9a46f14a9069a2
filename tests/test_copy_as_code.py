"""Copy as code: the generated Python and command line reproduce the page's numbers exactly.

For each calculator, at its defaults and with inputs changed, the results fragment the page shows
(``render``) carries the code; the test runs the Python and the command (``python -m calc … --json``)
and compares every number with the fragment's ``data-value``s.
"""

from __future__ import annotations

import html
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from calc.cli._fragment import json_key, read_fragment
from calc.widgets import calculators, render
from calc.widgets._code import PROG, command_line, python_call

ROOT = Path(__file__).resolve().parent.parent

CASES = [
    ("will-it-fit", {}),
    ("will-it-fit", {"params": "70B", "zero_stage": "3", "dp": "64", "unit": "GiB"}),
    ("will-it-fit", {"params": "1.5 T"}),  # a space: the command quotes it
    ("parameter-count", {}),
    ("training-compute", {}),
    ("serving-memory", {"seq_len": "32768", "batch": "4"}),
    ("pipeline-bubble", {"pp": "8", "num_microbatches": "32"}),
    ("communication", {}),
    ("activations", {"seq_len": "8192", "recompute": "full"}),
    ("training-memory", {}),
    ("training-memory", {"tp": "2", "zero_stage": "1", "dp": "8", "dropout": "1"}),  # a folded field
    ("plan", {}),
]


def _snippet(fragment: str, kind: str) -> str:
    found = re.search(rf'data-code="{kind}"><code>(.*?)</code>', fragment, re.DOTALL)
    assert found, f"no {kind} snippet in the results"
    return html.unescape(found[1])


def _page_numbers(fragment: str) -> dict[str, int | float]:
    return {json_key(o.name, o.unit): o.value for o in read_fragment(fragment).outputs if o.value is not None}


def _numbers(data: object):
    """Every number in a ``--json`` answer (the planner's is a list of layouts, not ``outputs``)."""
    if isinstance(data, dict):
        for v in data.values():
            yield from _numbers(v)
    elif isinstance(data, list):
        for v in data:
            yield from _numbers(v)
    elif isinstance(data, int | float) and not isinstance(data, bool):
        yield data


def _agrees(result: dict, fragment: str) -> None:
    """The page's numbers are the command's: ``outputs`` equal them, or (the planner) each is among its numbers."""
    page = _page_numbers(fragment)
    assert page, "no numbers on the page to compare"
    if "outputs" in result:
        assert result["outputs"] == page
    else:
        found = set(_numbers(result))
        assert not [(k, v) for k, v in page.items() if v not in found]


def test_prog_is_the_console_command() -> None:
    from calc.cli import PROG as CLI_PROG

    assert PROG == CLI_PROG


@pytest.mark.parametrize(("name", "inputs"), CASES)
def test_python_reproduces_the_page(name: str, inputs: dict[str, str]) -> None:
    if inputs and any(k not in calculators()[name].defaults for k in inputs):
        pytest.skip(f"{name} has no field among {sorted(inputs)}")
    reply = render(name, inputs)
    assert reply["ok"], reply
    fragment = str(reply["html"])
    code = _snippet(fragment, "python")
    calc = calculators()[name]
    assert code == python_call(calc, {**calc.defaults, **inputs})
    scope: dict[str, object] = {}
    exec(compile(code.replace("print(", "(lambda *a: None)("), f"<{name}>", "exec"), scope)  # noqa: S102
    _agrees(scope["result"], fragment)


NO_PROCESSES = pytest.mark.skipif(sys.platform == "emscripten", reason="no processes under Pyodide")


@NO_PROCESSES
@pytest.mark.parametrize(("name", "inputs"), CASES)
def test_command_reproduces_the_page(name: str, inputs: dict[str, str]) -> None:
    if inputs and any(k not in calculators()[name].defaults for k in inputs):
        pytest.skip(f"{name} has no field among {sorted(inputs)}")
    fragment = str(render(name, inputs)["html"])
    line = _snippet(fragment, "command")
    argv = shlex.split(line)
    assert argv[:2] == [PROG, name]
    assert len(argv) == 2 + sum(1 for k, v in inputs.items() if v != calculators()[name].defaults[k])
    proc = subprocess.run(
        [sys.executable, "-m", "calc", *argv[1:], "--json"],
        check=False,
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    _agrees(json.loads(proc.stdout), fragment)


def test_only_changed_values_are_written_in_field_order() -> None:
    fit = calculators()["will-it-fit"]
    values = {**fit.defaults, "dp": "8", "params": "13B", "unit": fit.defaults["unit"]}
    assert command_line(fit, values) == "trainmem will-it-fit params=13B dp=8"
    assert '"params": "13B", "dp": "8"}' in python_call(fit, values)


@pytest.mark.parametrize(
    ("value", "quoted"),
    [
        ("70B", "params=70B"),
        ("1 T", "'params=1 T'"),
        ("it's", "'params=it'\"'\"'s'"),  # a quote inside: the shell sees one word
        ("$(rm -rf /)", "'params=$(rm -rf /)'"),  # never expanded
    ],
)
def test_command_quotes_for_the_shell(value: str, quoted: str) -> None:
    fit = calculators()["will-it-fit"]
    line = command_line(fit, {**fit.defaults, "params": value})
    assert line == f"trainmem will-it-fit {quoted}"
    assert shlex.split(line)[2] == f"params={value}"


@NO_PROCESSES
def test_a_pasted_config_is_read_from_its_file(tmp_path) -> None:
    """A pasted config.json is not repeated inline: both snippets read config.json, which the reader saves."""
    calc = calculators()["parameter-count"]
    config = '{"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,\n'
    config += ' "num_attention_heads": 4, "vocab_size": 1000}'
    values = {**calc.defaults, "config": config}
    fragment = str(render("parameter-count", {"config": config})["html"])
    assert "config.json" in fragment and fragment.count("hidden_size") <= 1  # only the page's own echo, if any
    (tmp_path / "config.json").write_text(config, encoding="utf-8")
    line = command_line(calc, values)
    assert line == "trainmem parameter-count config=@config.json"
    proc = subprocess.run(
        [sys.executable, "-m", "calc", *shlex.split(line)[1:], "--json"],
        check=False,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["outputs"] == _page_numbers(fragment)
    code = python_call(calc, values)
    assert "from pathlib import Path\n" in code
    scope: dict[str, object] = {}
    import os

    here = os.getcwd()
    os.chdir(tmp_path)
    try:
        exec(compile(code.replace("print(", "(lambda *a: None)("), "<config>", "exec"), scope)  # noqa: S102
    finally:
        os.chdir(here)
    assert scope["result"]["outputs"] == _page_numbers(fragment)
