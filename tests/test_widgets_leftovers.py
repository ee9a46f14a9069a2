"""Issue #17's leftovers: every preset on every calculator's defaults, old convention names, state labels."""

from __future__ import annotations

import contextlib
import html
import io
import json
import re
from pathlib import Path

import pytest

from calc.cli import main
from calc.memory.model_state import CONVENTION_ALIASES
from calc.models.presets import PRESETS
from calc.widgets import calculators, render, render_calculator

FAST = ("will-it-fit", "parameter-count", "training-compute", "serving-memory", "communication", "training-memory")
"""The calculators with a model menu that render in milliseconds (the planner searches: a handful below)."""


@pytest.mark.parametrize("name", FAST)
def test_every_preset_renders_on_the_defaults(name: str) -> None:
    failed = {p: r["error"]["message"] for p in PRESETS if not (r := render(name, {"preset": p}))["ok"]}
    assert not failed


@pytest.mark.parametrize("preset", ["gpt2-xl", "qwen2.5-0.5b", "deepseek-v3"])
def test_the_planner_renders_a_few_presets_on_its_defaults(preset: str) -> None:
    r = render("plan", {"preset": preset})
    assert r["ok"], r


@pytest.mark.parametrize(
    ("preset", "shown"),
    [
        ("gpt2-xl", 1),  # 25 heads: 4, 3, 2 do not divide them
        ("qwen2.5-0.5b", 2),  # 14 heads, 2 KV heads
    ],
)
def test_a_default_tp_the_heads_refuse_is_lowered_and_said(preset: str, shown: int) -> None:
    fragment = render("serving-memory", {"preset": preset})["html"]
    assert f"shown at tp {shown}." in fragment
    call = re.search(r"inference_memory\([^)]*\)", fragment)[0]  # the copied code computes what the page shows
    assert (f"tp={shown}" in call) if shown > 1 else ("tp=" not in call)
    typed = render("serving-memory", {"preset": preset, "tp": "3"})
    assert typed["error"]["code"] == "not-divisible"


def test_a_default_tp_that_divides_the_heads_says_nothing() -> None:
    fragment = render("serving-memory", {"preset": "llama3-70b"})["html"]
    assert "(the default)" not in fragment
    assert re.search(r"tp=4\b", fragment)


OLD, NEW = next(iter(CONVENTION_ALIASES.items()))


def _numbers(fragment: str) -> dict[str, str]:
    return dict(re.findall(r'data-value="([^"]*)"[^>]*data-output="([^"]*)"', fragment)[::-1])


@pytest.mark.parametrize("name", ["training-memory", "will-it-fit", "plan"])
def test_an_old_convention_name_gives_the_current_ones_numbers(name: str) -> None:
    old, new = render(name, {"convention": OLD}), render(name, {"convention": NEW})
    assert old["ok"], old
    assert old["html"] == new["html"]  # the copied code names the current convention too


def test_the_command_line_takes_an_old_convention_name() -> None:
    def run(conv: str) -> dict:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["training-memory", f"convention={conv}", "--json"]) == 0
        return json.loads(out.getvalue())

    old, new = run(OLD), run(NEW)
    assert old["inputs"]["convention"] == NEW
    assert old == new


def test_the_select_carries_its_old_names_for_links() -> None:
    form = render_calculator("training-memory")
    assert f'data-aliases="{html.escape(json.dumps({OLD: NEW}))}"' in form


@pytest.mark.parametrize(
    ("convention", "first", "second"),
    [
        ("mixed-adam-16", "Adam momentum", "Adam variance"),
        ("mixed-adam8bit-10", "Adam momentum", "Adam variance"),  # 8-bit Adam keeps Adam's two moments
        ("mixed-lion-12", "Lion momentum", "Second moment (Lion keeps none)"),
        ("mixed-muon-12", "Muon momentum", "Second moment (Muon keeps none)"),
        ("mixed-adafactor-8", "Adafactor momentum", "Adafactor factored second moment"),
        ("mixed-shampoo-28", "Shampoo momentum", "Shampoo preconditioners"),
        ("mixed-soap-32", "SOAP momentum", "SOAP second moment and preconditioners"),
        ("fp32-sgdm-12", "SGD momentum", "Second moment (SGD keeps none)"),
    ],
)
@pytest.mark.parametrize("name", ["training-memory", "will-it-fit"])
def test_the_optimizer_states_are_named_for_the_convention(name: str, convention: str, first: str, second: str) -> None:
    fragment = html.unescape(render(name, {"convention": convention})["html"])
    assert f"<td>{first}" in fragment
    assert f"<td>{second}" in fragment
    assert ("Adam momentum" in fragment) == (first == "Adam momentum")


def test_the_copy_block_says_what_to_install_and_links_the_install_section() -> None:
    fragment = render("will-it-fit")["html"]
    note = re.search(r'</div><p class="lc-code__note">(.*?)</p>', fragment)[1]
    assert "pip install" in note
    target = re.search(r'data-site-href="reference/cli/#(\w+)"', note)[1]
    page = (Path(__file__).parents[1] / "docs/reference/cli.md").read_text(encoding="utf-8")
    assert f"{{ #{target} }}" in page


def _cli_json(*args: str) -> dict:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main([*args, "--json"]) == 0
    return json.loads(out.getvalue())


STACK_SET = {"recompute": "op", "zero_stage": "3", "shard": "fsdp2"}
"""What the stack select sets on the page when torchtitan is picked (training-memory's ``Field.sets``)."""

MEGATRON_SET = {"recompute": "selective", "zero_stage": "1", "shard": "even"}


def test_a_stack_alone_takes_the_fields_it_implies_as_the_page_does() -> None:
    alone = render("training-memory", {"stack": "torchtitan"})["html"]
    assert alone == render("training-memory", {"stack": "torchtitan", **STACK_SET})["html"]
    assert alone != render("training-memory", {"stack": "torchtitan", **MEGATRON_SET})["html"]
    cli = _cli_json("training-memory", "--stack", "torchtitan")
    assert {k: cli["inputs"][k] for k in STACK_SET} == STACK_SET
    assert cli == _cli_json("training-memory", "stack=torchtitan", *(f"{k}={v}" for k, v in STACK_SET.items()))


def test_a_field_given_beside_the_stack_keeps_its_value() -> None:
    given = {"stack": "torchtitan", "zero_stage": "1"}
    cli = _cli_json("training-memory", *(f"{k}={v}" for k, v in given.items()))
    assert (cli["inputs"]["zero_stage"], cli["inputs"]["recompute"]) == ("1", "op")
    page = render("training-memory", {**given, "recompute": "op", "shard": "fsdp2"})["html"]
    assert render("training-memory", given)["html"] == page


def test_inputs_that_set_every_field_are_untouched() -> None:
    every = {**calculators()["training-memory"].defaults, "stack": "torchtitan"}
    assert calculators()["training-memory"].implied(every, set(every)) == every
