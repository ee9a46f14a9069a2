"""The roofline page's closed forms, checked against the step-time model (calc.step_time) they summarise,
and the new performance pages printing them."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

from calc.memory.layout import Layout
from calc.models.presets import preset
from calc.timing.steptime import step_time

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hooks"))

from numbers_registry import NUMBERS
from prose_numbers import performance


def _zero3_step(g: str, seq: int):
    arch = preset("llama2-7b")
    lay = Layout(dp=64, zero_stage=3, seq_len=seq, global_batch=256, flash_attention=True, dropout=False)
    return step_time(arch, lay, gpu=g)


@pytest.mark.parametrize(("key", "g", "intra"), [("h100", "h100-sxm", "nvlink4"), ("b200", "b200", "nvlink5")])
def test_fsdp_gathers_hide_above_c_over_w_tokens(key: str, g: str, intra: str) -> None:
    """Past the threshold the exposed gathers stop shrinking (what is left cannot overlap: the first layer's);
    below it they grow, and at half of it they outlast the compute they were meant to hide behind."""
    threshold = performance.fsdp_min_tokens(g, intra)
    above = 1 << (int(2 * threshold) - 1).bit_length()  # the next power of two past 2 C/W
    below = 1 << (int(threshold / 2).bit_length() - 1)  # the power of two at or under C/(2W)
    floor = _zero3_step(g, above).exposed_s["dp-param-all-gather"]
    assert _zero3_step(g, 2 * above).exposed_s["dp-param-all-gather"] == pytest.approx(floor)
    exposed = _zero3_step(g, below)
    assert exposed.exposed_s["dp-param-all-gather"] > 1.3 * floor
    assert NUMBERS[f"rf-{key}-fsdp-tokens"]() == f"{threshold:,.0f}"


@pytest.mark.parametrize("g", ["h100-sxm", "b200"])
@pytest.mark.parametrize("tp", [2, 4, 8])
def test_tp_share_of_compute_is_bounded_by_the_closed_form(g: str, tp: int) -> None:
    """TP's exposed time over compute is at most (t−1)·4hC/(P·W): the closed form counts matmul FLOPs only."""
    arch = preset(performance.ROOF_MODEL)
    lay = Layout(
        tp=tp, pp=8, seq_len=4096, global_batch=32, sequence_parallel=True, flash_attention=True, dropout=False
    )
    t = step_time(arch, lay, gpu=g)
    share = sum(v for k, v in t.exposed_s.items() if k.startswith("tp")) / t.compute_s
    link = {"h100-sxm": "nvlink4", "b200": "nvlink5"}[g]
    closed = (tp - 1) / (performance.tp_max_degree(g, link) - 1)  # = (t−1)·4hC/(P·W)
    assert 0.5 * closed < share <= closed


def test_pipeline_sends_always_hide_over_a_nic() -> None:
    for g in ("h100-sxm", "b200"):
        assert performance.pp_min_layers(g) < 1


def test_b200_needs_more_tokens_than_h100() -> None:
    assert performance.fsdp_min_tokens("b200", "nvlink5") > performance.fsdp_min_tokens("h100-sxm", "nvlink4")


NEW_PAGES = {
    "systems/roofline/": ["rf-h100-ridge", "rf-b200-ridge", "rf-h100-fsdp-tokens", "rf-b200-tp-nvlink"],
    "systems/inference-performance/": ["ip-8b-b1-ms", "ip-h100-bstar", "ip-spec-tokens", "ip-70b-kv-nic"],
    "systems/scale-up/": ["su-nvl72-gpus", "su-nvls-8", "su-tp-max-nvl72"],
    "memory/optimizers/": ["opt-conv-mixed-muon-12-bpp", "opt-conv-mixed-adam-16-70b", "opt-shampoo-8192"],
    "compute/": ["cc-70b-tokens", "cc-budget-params"],
}


HOST_ONLY = pytest.mark.skipif(sys.platform == "emscripten", reason="reads the built site: host only")


@HOST_ONLY
@pytest.mark.parametrize("page", sorted(NEW_PAGES))
def test_new_pages_print_the_numbers_and_have_exercises(site_pages: dict[str, str], page: str) -> None:
    html = site_pages[page]
    for name in NEW_PAGES[page]:
        assert f'data-num="{name}">{NUMBERS[name]()}<' in html, name
    if page != "systems/scale-up/":
        assert "data-exercise" in html


@HOST_ONLY
def test_further_reading_names_the_three_references(site_pages: dict[str, str]) -> None:
    text = re.sub(r"<[^>]+>", "", site_pages["references/"]).split("Further reading", 1)[1]
    for title in ("Ultra-Scale Playbook", "How to Scale Your Model", "Transformer Math 101"):
        assert title in text
    assert text.count("Best ") >= 3  # what each is best for
