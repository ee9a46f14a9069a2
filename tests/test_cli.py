"""The command line (``trainmem`` / ``python -m calc``): every calculator, human tables and ``--json`` numbers.

The examples on the CLI page (docs/reference/cli.md) are run here and must print what the page shows;
``TRAINMEM_UPDATE_DOCS=1 pytest tests/test_cli.py -k docs`` rewrites them from the engine.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import shlex
import sys
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _helpers import run_captured
from calc.cli import DISTRIBUTION, commands, main, version
from calc.cli._args import FLAGS
from calc.cli._fragment import json_key, read_fragment
from calc.memory.model_state import model_state_bytes
from calc.widgets import calculators
from calc.widgets._html import UNITS

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs" / "reference" / "cli.md"
CALCULATORS = sorted(calculators())
PAGE_SHAPED = [name for name in CALCULATORS if name != "plan"]
"""Commands whose --json is the page's outputs; ``plan`` prints the planner's layouts and rejections instead."""
COMMANDS = sorted(commands())

_FORMATTED = re.compile(r"[~≈<>]?[-+]?[0-9][0-9,.]*\s*(%|×|[kMGTPE]i?B|B|s|ms|µs|days?|hours?)?")
"""Text that is only a formatted number: it must have come with a raw ``data-value``."""


def _run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _json(capsys: pytest.CaptureFixture[str], *args: str) -> dict:
    code, out, err = _run(capsys, *args, "--json")
    assert (code, err) == (0, ""), err
    return json.loads(out)


# ---- every command, with its defaults ---------------------------------------------------------------------------


@pytest.mark.parametrize("name", COMMANDS)
def test_human_output_is_a_table_with_every_number(capsys: pytest.CaptureFixture[str], name: str) -> None:
    code, out, err = _run(capsys, name)
    assert (code, err) == (0, "")
    assert out.strip() and not re.search(r"</?[a-z][^>]*>", out), "no HTML left in a terminal"
    if name in calculators():
        values = calculators()[name].defaults
        for o in read_fragment(calculators()[name].compute(dict(values))).outputs:
            if o.value is not None:
                assert o.text in out, (o.name, o.text)  # every number the page shows, as the page shows it
    assert "-  -" in out or "  " in out  # columns, aligned with two spaces


@pytest.mark.parametrize("name", PAGE_SHAPED)
def test_json_outputs_are_numbers_with_the_unit_in_the_key(capsys: pytest.CaptureFixture[str], name: str) -> None:
    data = _json(capsys, name)
    fields = {f.name: f.default for f in calculators()[name].fields}  # defaults also hold legacy inputs (model)
    assert data["command"] == name and data["inputs"] == fields
    assert data["outputs"], "every calculator has numbers"
    assert set(data["units"]) == set(data["outputs"])
    for key, value in data["outputs"].items():
        unit = data["units"][key]
        assert type(value) in (int, float), (key, value)  # a number, never "17.5 GB"
        assert key == json_key(key, unit), key  # the unit's suffix is in the key
        if unit == "B":
            assert type(value) is int, key  # exact integer bytes
    for key, text in data["text"].items():
        assert not _FORMATTED.fullmatch(text), f"{name}: {key}={text!r} is a number without data-value"
    if data["verdict"] is not None:
        assert isinstance(data["verdict"]["ok"], bool) and data["verdict"]["text"]


@pytest.mark.parametrize("name", CALCULATORS)
def test_every_numeric_result_on_the_page_carries_data_value(name: str) -> None:
    fragment = calculators()[name].compute(dict(calculators()[name].defaults))
    for o in read_fragment(fragment).outputs:
        if o.value is None and o.ok is None:
            assert not _FORMATTED.fullmatch(o.text), f"{name}: [data-output={o.name}] {o.text!r} has no data-value"
        if o.value is not None:
            assert o.unit in UNITS


def test_plan_is_a_command_when_the_planner_is_there(capsys: pytest.CaptureFixture[str]) -> None:
    if not (ROOT / "calc" / "widgets" / "planner.py").exists():
        pytest.skip("the planner's calculator is not there yet")
    assert "plan" in commands()
    data = _json(capsys, "plan", "llama3-8b", "gpus=64", "seq_len=4096", "global_batch=256", "tp=")
    assert data["command"] == "plan" and data["inputs"]["tp"] == "any"  # blank searches, as "any" does
    assert data["layouts"] and isinstance(data["rejected"], list)
    for layout in data["layouts"]:  # the planner's contract: integer degrees, numbers (not strings), breakdowns
        for key in ("dp", "tp", "pp", "cp", "ep", "zero_stage", "micro_batch", "interleave", "memory_bytes"):
            assert type(layout[key]) is int, key
        for key in ("step_time_s", "tflops_per_gpu", "mfu"):
            assert type(layout[key]) is float, key
        assert isinstance(layout["recompute"], str) and layout["memory"] and layout["time"]
        assert layout["dp"] * layout["tp"] * layout["pp"] * layout["cp"] == 64
    times = [x["step_time_s"] for x in data["layouts"]]
    assert times == sorted(times)  # best first
    assert all(r["reason"] for r in data["rejected"])


@pytest.mark.parametrize(("args", "field"), [(["tp=abc"], "tp"), (["gpus=0"], "gpus"), (["preset=llama-9"], "preset")])
def test_plan_bad_input_exits_2_naming_the_field(capsys: pytest.CaptureFixture[str], args: list, field: str) -> None:
    code, out, err = _run(capsys, "plan", *args, "--json")
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and field in err


# ---- --json anywhere, the same answer ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["--json", "will-it-fit", "params=70B", "zero_stage=3", "dp=64"],  # first
        ["will-it-fit", "params=70B", "--json", "zero_stage=3", "dp=64"],  # middle
        ["will-it-fit", "params=70B", "zero_stage=3", "dp=64", "--json"],  # last
        ["will-it-fit", "--params", "70B", "--zero-stage=3", "--dp", "64", "--json"],  # option spelling
        ["params=70B", "will-it-fit", "--json", "zero_stage=3", "dp=64"],  # the command after an input
        ["will-it-fit", "70B", "zero_stage=3", "dp=64", "--json"],  # the first field given bare
    ],
)
def test_json_anywhere_gives_the_same_numbers(capsys: pytest.CaptureFixture[str], args: list[str]) -> None:
    code, out, err = _run(capsys, *args)
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["outputs"]["total_bytes"] == model_state_bytes(70e9, zero_stage=3, dp=64).total
    assert data["inputs"]["dp"] == "64"


def test_json_numbers_are_the_engines(capsys: pytest.CaptureFixture[str]) -> None:
    state = model_state_bytes(7.5e9, zero_stage=1, dp=64)
    data = _json(capsys, "will-it-fit", "params=7.5e9", "zero_stage=1", "dp=64")
    assert data["outputs"]["total_bytes"] == state.total
    assert data["outputs"]["weights_bytes"] == state.weights
    assert data["outputs"]["headroom_bytes"] == data["outputs"]["gpu_memory_bytes"] - state.total
    comm = _json(capsys, "communication")
    assert isinstance(comm["outputs"]["total_time_s"], float) and comm["units"]["total_time_s"] == "s"
    terms = [v for k, v in comm["outputs"].items() if k.endswith("_bytes") and k != "total_bytes"]
    assert terms and comm["outputs"]["total_bytes"] == sum(terms)  # each collective's bytes, and their total


def _call(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@settings(max_examples=40, deadline=None)
@given(params=st.integers(10**6, 10**13), stage=st.integers(0, 3), dp=st.integers(1, 1 << 20))
def test_json_is_the_engine_and_the_table_shows_it(params: int, stage: int, dp: int) -> None:
    args = ("will-it-fit", f"params={params}", f"zero_stage={stage}", f"dp={dp}")
    code, out, err = _call(*args, "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    state = model_state_bytes(params, zero_stage=stage, dp=dp)
    assert data["outputs"]["total_bytes"] == state.total
    assert data["verdict"]["ok"] == (state.total <= data["outputs"]["gpu_memory_bytes"])
    code, text, _ = _call(*args)
    assert code == 0 and " ".join(text.split()).startswith(" ".join(data["verdict"]["text"].split()))


def test_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(capsys, "list")
    assert code == 0 and all(name in out for name in COMMANDS)
    data = _json(capsys, "list")
    listed = {c["name"]: c for c in data["commands"]}
    assert sorted(listed) == COMMANDS
    for name, calc in calculators().items():
        assert {f["name"]: f["default"] for f in listed[name]["fields"]} == {f.name: f.default for f in calc.fields}


def test_version_is_pyprojects(capsys: pytest.CaptureFixture[str]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == DISTRIBUTION and version() == project["version"]
    assert _run(capsys, "--version") == (0, f"trainmem {project['version']} ({DISTRIBUTION})\n", "")


# ---- help --------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", COMMANDS)
def test_help_lists_every_field_with_its_default(capsys: pytest.CaptureFixture[str], name: str) -> None:
    for args in ([name, "--help"], ["-h", name], [name, "x=1", "--help"]):
        code, out, err = _run(capsys, *args)
        assert (code, err) == (0, "") and out.startswith(f"usage: trainmem {name} ")
        for f in commands()[name].fields:
            assert re.search(rf"^  {re.escape(f.name)}=", out, re.MULTILINE), f.name
            if f.kind != "textarea":
                assert f"  {f.name}={f.default} " in out or f"  {f.name}={f.default}\n" in out, f.name
            if f.help:
                assert " ".join(f.help.split()[:2]) in " ".join(out.split()), f.name


def test_no_arguments_or_help_prints_the_commands(capsys: pytest.CaptureFixture[str]) -> None:
    for args in ([], ["--help"]):
        code, out, err = _run(capsys, *args)
        assert (code, err) == (0, "") and out.startswith("usage: trainmem COMMAND")
        assert all(f"  {name} " in out for name in COMMANDS)


def test_no_field_is_named_like_a_flag_or_spelled_with_a_hyphen() -> None:
    for cmd in commands().values():
        for f in cmd.fields:
            assert f"--{f.name}" not in FLAGS and "-" not in f.name and f.name.isidentifier(), (cmd.name, f.name)


# ---- bad input: exit 2, one line naming the field ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["will-it-fit", "params=seven"], "params"),
        (["will-it-fit", "dp=0"], "dp"),
        (["will-it-fit", "zero_stage=4"], "zero_stage"),  # not one of the select's options
        (["will-it-fit", "unit=MB"], "unit"),
        (["will-it-fit", "batch=4"], "batch"),  # not an input of this calculator
        (["will-it-fit", "params"], "params"),  # a field without a value
        (["will-it-fit", "70B", "dp"], "dp"),
        (["will-it-fit", "70B", "80B"], "inputs"),  # one bare value only: the first field's
        (["will-it-fit", "70B", "params=7B"], "params"),  # the bare value is params, given twice
        (["will-it-fit", "-x"], "inputs"),
        (["will-it-fit", "--params"], "params"),
        (["will-it-fit", "--params", "--json"], "params"),
        (["will-it-fit", "params=7B", "params=8B"], "params"),  # given twice
        (["activations", "sequence_parallel=maybe"], "sequence_parallel"),
        (["parameter-count", "config=@/nonexistent/config.json"], "config"),
        (["parameter-count", "config={not json"], "config"),
        (["training-memory", "tp=3"], "tp"),
        (["communication", "params=1e400"], "params"),
        (["nope"], "command"),
        (["params=7B"], "command"),  # no command at all
        (["list", "params=7B"], "params"),
    ],
)
def test_bad_input_exits_2_with_one_line_naming_the_field(
    capsys: pytest.CaptureFixture[str], args: list[str], field: str
) -> None:
    for argv in (args, [*args, "--json"]):
        code, out, err = _run(capsys, *argv)
        assert (code, out) == (2, "")
        assert err.count("\n") == 1 and err.startswith(f"error: {field} "), err
        assert "Traceback" not in err and "usage:" not in err


@pytest.mark.parametrize(
    ("name", "field"), [(c, f.name) for c in CALCULATORS for f in calculators()[c].fields if f.kind != "checkbox"]
)
def test_junk_in_any_field_is_one_line_naming_it(capsys: pytest.CaptureFixture[str], name: str, field: str) -> None:
    code, out, err = _run(capsys, name, f"{field}=x!")
    if code == 0:  # a field the others leave unused (a custom GPU's memory with a preset GPU chosen)
        assert calculators()[name].fields[[f.name for f in calculators()[name].fields].index(field)].enabled_when
        return
    assert (code, out) == (2, "") and err.startswith(f"error: {field} ") and err.count("\n") == 1, err


def test_checkbox_spellings(capsys: pytest.CaptureFixture[str]) -> None:
    on = _json(capsys, "activations", "--sequence-parallel")["outputs"]
    assert on == _json(capsys, "activations", "sequence_parallel=yes")["outputs"]
    assert on != _json(capsys, "activations", "sequence_parallel=off")["outputs"]


def test_a_config_file_is_read_with_at(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from calc.models.presets import PRESETS, preset

    config = tmp_path / "config.json"
    config.write_text(json.dumps(PRESETS["llama3-8b"]), encoding="utf-8")
    data = _json(capsys, "parameter-count", f"config=@{config}")
    assert data["outputs"]["total_params"] == preset("llama3-8b").param_count
    assert data["inputs"]["config"] == config.read_text()  # the file's text, not its name


@pytest.mark.skipif(sys.platform == "emscripten", reason="no processes under Pyodide")
def test_python_dash_m_calc(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = run_captured(
        [sys.executable, "-m", "calc", "will-it-fit", "--json", "params=70B"], cwd=tmp_path, env=env, timeout=120
    )
    assert proc.returncode == 0 and json.loads(proc.stdout)["outputs"]["total_bytes"] == model_state_bytes(70e9).total
    bad = run_captured([sys.executable, "-m", "calc", "will-it-fit", "dp=-1"], cwd=tmp_path, env=env, timeout=120)
    assert bad.returncode == 2 and bad.stdout == "" and bad.stderr.count("\n") == 1 and "dp" in bad.stderr


# ---- the CLI page's examples run -------------------------------------------------------------------------------


def _transcripts(text: str) -> list[tuple[str, list[str]]]:
    """``$ trainmem …`` lines of the page's ``console`` blocks, each with the lines it shows after it."""
    found = []
    for block in re.findall(r"^```console\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
        current: tuple[str, list[str]] | None = None
        for line in block.splitlines():
            if line.startswith("$ "):
                current = (line[2:], [])
                found.append(current)
            elif current is not None:
                current[1].append(line)
    return found


def _shown(capsys: pytest.CaptureFixture[str], command: str) -> list[str]:
    words = shlex.split(command)
    assert words[0] == "trainmem", f"the page's examples run trainmem: {command!r}"
    code, out, err = _run(capsys, *words[1:])
    lines = (out + err).rstrip("\n").splitlines()
    return [*lines, *([f"[exit status {code}]"] if code else [])]


def test_docs_examples_print_what_the_page_shows(capsys: pytest.CaptureFixture[str]) -> None:
    text = DOCS.read_text(encoding="utf-8")
    examples = [(cmd, shown) for cmd, shown in _transcripts(text) if cmd.startswith("trainmem")]
    assert len(examples) >= 4, "the page shows the command at work"
    if os.environ.get("TRAINMEM_UPDATE_DOCS"):
        for cmd, shown in examples:
            old = "\n".join([f"$ {cmd}", *shown]) + "\n"
            text = text.replace(old, "\n".join([f"$ {cmd}", *_shown(capsys, cmd)]) + "\n", 1)
        DOCS.write_text(text, encoding="utf-8")
        examples = [(cmd, shown) for cmd, shown in _transcripts(text) if cmd.startswith("trainmem")]
    for cmd, shown in examples:
        assert [line.rstrip() for line in shown] == _shown(capsys, cmd), (
            f"{DOCS.relative_to(ROOT)}: `{cmd}` prints something else now; "
            "rerun with TRAINMEM_UPDATE_DOCS=1 to take the engine's output"
        )
