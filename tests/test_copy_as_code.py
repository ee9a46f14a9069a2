"""Copy as code: the generated Python and command line reproduce the page's numbers exactly.

For each calculator, at its defaults and with inputs changed, the results fragment the page shows
(``render``) carries the code. The Python is the public engine call (``import calc``, then
``calc.model_state_bytes(...)``, ``calc.peak_memory(...)``, ``calc.plan(...)``): the test runs it as pasted and
compares every ``name = value`` it prints with the fragment's ``data-value`` of that ``data-output``. The
command (``python -m calc … --json``) is compared number for number too.
"""

from __future__ import annotations

import ast
import contextlib
import html
import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from _helpers import walk_json
from calc.cli._fragment import json_key, read_fragment
from calc.widgets import calculators, render
from calc.widgets._code import INSTALL_COMMENT, PROG, WHEEL, command_line, python_call

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
    ("finetune-memory", {}),
]

PYTHON_CASES = CASES + [
    ("will-it-fit", {"preset": "llama3-8b", "seq_len": "8192", "dp": "8", "zero_stage": "1"}),  # peak with a model
    ("will-it-fit", {"gpu": "custom", "gpu_memory": "24", "unit": "GiB"}),
    ("parameter-count", {"preset": "mixtral-8x7b"}),
    ("training-compute", {"preset": "llama3-70b", "mfu": "38.5", "factor": "8"}),
    ("training-compute", {"gpu": "custom", "peak_tflops": "500", "dtype": "fp8"}),
    ("serving-memory", {"preset": "mistral-7b", "precision": "int4", "kv_dtype": "fp8", "reserved_pct": "12.5"}),
    ("serving-memory", {"gpu": "custom", "gpu_memory": "48", "tp": "8"}),
    ("pipeline-bubble", {"schedule": "interleaved", "num_microbatches": "8"}),
    ("pipeline-bubble", {"schedule": "dualpipe"}),
    ("pipeline-bubble", {"schedule": "zb-h1", "backward_units": "1"}),
    ("communication", {"preset": "mixtral-8x7b", "ep": "8", "intra_efficiency": "80"}),
    ("communication", {"tp": "1", "pp": "1", "dp": "1"}),  # nothing to communicate
    ("communication", {"zero_stage": "3", "cp": "2", "seq": "32768", "recompute": "1"}),
    ("activations", {"implementation": "hf-sdpa", "tp": "1"}),
    ("activations", {"sequence_parallel": "1", "recompute": "selective", "flash_attention": "1"}),
    ("training-memory", {"pp": "4", "tp": "8", "global_batch": "64", "offload_optimizer": "1"}),  # per-stage peaks
    ("training-memory", {"preset": "mixtral-8x7b", "ep": "8", "moe_routing": "dropless", "optimizer": "fused"}),
    ("training-memory", {"low_precision": "fp8-hopper", "gpu": "custom", "gpu_memory": "96"}),
    ("plan", {"preset": "llama3-8b", "gpus": "16", "global_batch": "64", "tp": "2", "recompute": "full"}),
    ("plan", {"preset": "llama3-8b", "gpus": "64", "zero_stage": "3", "safety_margin": "0.2"}),
    ("finetune-memory", {"method": "qlora", "preset": "llama3-70b", "recompute": "full"}),
    ("finetune-memory", {"method": "full", "targets": "qv", "unit": "GiB"}),
]
"""The Python is checked on more inputs than the command (running it is cheap: no process)."""


def _snippet(fragment: str, kind: str) -> str:
    """The snippet of a copy block, after its first line: the ``pip install`` of the site's wheel."""
    found = re.search(rf'data-code="{kind}"><code>(.*?)</code>', fragment, re.DOTALL)
    assert found, f"no {kind} snippet in the results"
    install, _, code = html.unescape(re.sub(r"<[^>]+>", "", found[1])).partition("\n")
    assert install == INSTALL_COMMENT + WHEEL, install
    return code


def _page_numbers(fragment: str) -> dict[str, int | float]:
    return {json_key(o.name, o.unit): o.value for o in read_fragment(fragment).outputs if o.value is not None}


def _numbers(data: object):
    """Every number in a ``--json`` answer (the planner's is a list of layouts, not ``outputs``)."""
    return (v for v in walk_json(data) if isinstance(v, int | float) and not isinstance(v, bool))


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


def _printed(code: str, where: Path | None = None) -> dict[str, int | float]:
    """Run a snippet as pasted (in ``where``, for one that reads a file) and read its ``name = value`` lines."""
    stdout = io.StringIO()
    here = os.getcwd()
    try:
        if where is not None:
            os.chdir(where)
        with contextlib.redirect_stdout(stdout):
            exec(compile(code, "<snippet>", "exec"), {"__name__": "__snippet__"})  # noqa: S102
    finally:
        os.chdir(here)
    printed = {}
    for line in stdout.getvalue().splitlines():
        name, _, value = line.partition(" = ")
        printed[name] = ast.literal_eval(value)
    return printed


def _page_values(fragment: str) -> dict[str, int | float]:
    return {o.name: o.value for o in read_fragment(fragment).outputs if o.value is not None}


@pytest.mark.parametrize(("name", "inputs"), PYTHON_CASES)
def test_python_reproduces_the_page(name: str, inputs: dict[str, str]) -> None:
    """The snippet calls the public engine and prints the page's own numbers, each under its output's name."""
    reply = render(name, inputs)
    assert reply["ok"], reply
    fragment = str(reply["html"])
    code = _snippet(fragment, "python")
    calc = calculators()[name]
    assert code == python_call(calc, {**calc.defaults, **inputs})
    assert "import calc\n" in code and "calc.widgets" not in code and "calc.cli" not in code
    assert not re.search(r"calc\.\w+\._", code), "a private name in the snippet"
    printed = _printed(code)
    page = _page_values(fragment)
    assert printed, "the snippet prints nothing"
    assert {k: v for k, v in printed.items() if page.get(k, "missing") != v} == {}


def test_python_names_only_public_engine_names() -> None:
    """Every ``calc.NAME`` a snippet calls is in ``calc.__all__`` (or a class attribute of one)."""
    import calc as engine

    for name, inputs in PYTHON_CASES:
        code = python_call(calculators()[name], {**calculators()[name].defaults, **inputs})
        used = set(re.findall(r"\bcalc\.(\w+)", code))
        assert used <= set(engine.__all__), (name, sorted(used - set(engine.__all__)))


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
    assert 'calc.model_state_bytes("13B", dp=8)' in python_call(fit, values)


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


def _installed(where: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``python ARGS`` in ``where`` with only the package importable, as after ``pip install``; it must succeed."""
    proc = subprocess.run(
        [sys.executable, *args],
        check=False,
        cwd=where,
        capture_output=True,
        text=True,
        timeout=120,
        env={"PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    return proc


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
    proc = _installed(tmp_path, "-m", "calc", *shlex.split(line)[1:], "--json")
    assert json.loads(proc.stdout)["outputs"] == _page_numbers(fragment)
    code = python_call(calc, values)
    assert "from pathlib import Path\n" in code and 'Path("config.json")' in code
    page = _page_values(fragment)
    assert {k: v for k, v in _printed(code, tmp_path).items() if page.get(k) != v} == {}


@NO_PROCESSES
@pytest.mark.parametrize(("name", "inputs"), [("will-it-fit", {"params": "70B", "dp": "64"}), ("plan", {})])
def test_python_runs_as_pasted_in_a_fresh_interpreter(tmp_path, name: str, inputs: dict[str, str]) -> None:
    """Pasted into ``python`` with only the package importable (as after ``pip install``), it prints the page."""
    fragment = str(render(name, inputs)["html"])
    proc = _installed(tmp_path, "-c", _snippet(fragment, "python"))
    printed = {k: ast.literal_eval(v) for k, _, v in (line.partition(" = ") for line in proc.stdout.splitlines())}
    page = _page_values(fragment)
    assert printed and {k: v for k, v in printed.items() if page.get(k) != v} == {}
