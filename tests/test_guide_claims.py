"""Claims the guide makes in words, checked through the engine and against the built pages.

The prose may only say what the engine computes: here each claim of the guide that is easy to get wrong
(data parallelism and activations, the brief's four takeaways) is computed, and the built page is checked to
print the engine's number where it states the claim.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc import model_state_bytes
from calc.memory.layout import Layout, layout_memory
from calc.models.presets import preset

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hooks"))

from numbers_registry import NUMBERS  # the hooks folder is on sys.path, not a package

# (preset, seq_len, micro_batch, extra Layout fields): the data-parallel degree is doubled on each.
DP_CASES = [
    ("llama2-7b", 4096, 1, {}),
    ("llama2-7b", 4096, 1, {"zero_stage": 3}),  # ZeRO shards model state, never activations
    ("llama3-70b", 8192, 1, {"tp": 8, "sequence_parallel": True, "flash_attention": True}),
    ("gpt2-xl", 1024, 8, {"recompute": "selective"}),
    ("mixtral-8x7b", 4096, 2, {"flash_attention": True}),
]


@pytest.mark.parametrize(("slug", "seq", "mb", "extra"), DP_CASES)
@pytest.mark.parametrize("dp", [1, 8, 64])
def test_doubling_dp_leaves_per_gpu_activations_unchanged(slug: str, seq: int, mb: int, extra: dict, dp: int) -> None:
    arch = preset(slug)
    one = layout_memory(arch, Layout(dp=dp, seq_len=seq, micro_batch=mb, **extra))
    two = layout_memory(arch, Layout(dp=2 * dp, seq_len=seq, micro_batch=mb, **extra))
    assert one.activations > 0
    assert two.activations == one.activations
    # …while the micro-batch, which dp does not change, is what activations follow.
    more = layout_memory(arch, Layout(dp=dp, seq_len=seq, micro_batch=2 * mb, **extra))
    assert more.activations > one.activations


@settings(max_examples=40, deadline=None)
@given(dp=st.integers(1, 4096), mb=st.integers(1, 16), zero=st.sampled_from([0, 1, 2, 3]))
def test_dp_never_changes_activations(dp: int, mb: int, zero: int) -> None:
    arch = preset("llama2-7b")
    base = layout_memory(arch, Layout(dp=1, seq_len=2048, micro_batch=mb, zero_stage=zero)).activations
    assert layout_memory(arch, Layout(dp=dp, seq_len=2048, micro_batch=mb, zero_stage=zero)).activations == base


def test_dp_trap_prose_shows_the_unchanged_number(site_pages: dict[str, str]) -> None:
    assert NUMBERS["par-dp-act-7b"]() == NUMBERS["par-dp-act-7b-2x"]()
    page = site_pages["parallelism/data/"]
    for name in ("par-dp-act-7b", "par-dp-act-7b-2x"):
        assert f'data-num="{name}">{NUMBERS[name]()}<' in page
    taxonomy = site_pages["parallelism/"]
    assert "fewer samples" not in taxonomy and "÷ data-parallel degree" not in taxonomy


# The brief's four takeaways, in order, then the ones added after them.
BRIEF_TAKEAWAYS = ["state-16-bytes", "dp-throughput-not-fit", "tune-to-the-interconnect", "zero3-16n-over-g"]


def test_takeaways_keep_the_briefs_four_first(site_pages: dict[str, str]) -> None:
    page = site_pages["takeaways/"]
    ids = re.findall(r'<h2 id="([^"]+)"', page)
    assert ids[: len(BRIEF_TAKEAWAYS)] == BRIEF_TAKEAWAYS
    assert "activations-oom" in ids[len(BRIEF_TAKEAWAYS) :]


def test_first_takeaway_prints_the_weights_only_underestimate(site_pages: dict[str, str]) -> None:
    state = model_state_bytes("7B")
    assert state.total // state.weights == 8  # 16 bytes of state per 2 bytes of bf16 weights
    page = site_pages["takeaways/"]
    first = page.split('id="state-16-bytes"', 1)[1].split('id="dp-throughput-not-fit"', 1)[0]
    assert f'data-num="state-7b-over-weights">{NUMBERS["state-7b-over-weights"]()}<' in first


def test_fourth_takeaway_is_zero3_sixteen_n_over_g(site_pages: dict[str, str]) -> None:
    page = site_pages["takeaways/"]
    fourth = page.split('id="zero3-16n-over-g"', 1)[1].split('id="activations-oom"', 1)[0]
    for name in ("sys-state-70b-dp64-z3", "par-zero-7b-s3-ratio", "sys-70b-z3-bytes"):
        assert f'data-num="{name}">' in fourth
    assert model_state_bytes("70B", zero_stage=3, dp=64).total == model_state_bytes("70B").total // 64


# Every prose number is evaluated in a fresh interpreter with the engine's entry points wrapped, so a cached
# value cannot hide a call: each (model, layout) pair they see must count dropout exactly where the model has it.
_DROPOUT_PROBE = r"""
import importlib, json, pkgutil, sys
sys.path.insert(0, "hooks")
from calc.memory.layout import Layout
from calc.models.architecture import Architecture
from prose_numbers import model_dropout
seen, current = [], [None]
def wrap(fn):
    def wrapped(*args, **kwargs):
        values = list(args) + list(kwargs.values())
        arch = next((v for v in values if isinstance(v, Architecture)), None)
        lay = next((v for v in values if isinstance(v, Layout)), None)
        if arch is not None and lay is not None and lay.dropout != model_dropout(arch):
            seen.append([current[0], arch.name, lay.dropout])
        return fn(*args, **kwargs)
    return wrapped
for info in pkgutil.iter_modules(["hooks/prose_numbers"]):
    module = importlib.import_module(f"prose_numbers.{info.name}")
    for name in ("layout_memory", "step_time", "peak_memory", "smallest_fitting_layout", "plan"):
        if hasattr(module, name):
            setattr(module, name, wrap(getattr(module, name)))
import numbers_registry
for name, fn in numbers_registry.NUMBERS.items():
    current[0] = name
    fn()
print(json.dumps(seen))
"""


def test_prose_layouts_count_dropout_only_where_the_model_has_it() -> None:
    import json
    import os
    import subprocess

    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    out = subprocess.run(
        [sys.executable, "-c", _DROPOUT_PROBE], check=False, cwd=root, env=env, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []  # [prose number, model, dropout counted]


def test_llama2_7b_activations_without_dropout_printed(site_pages: dict[str, str]) -> None:
    from calc import format_bytes

    arch = preset("llama2-7b")
    none = layout_memory(arch, Layout(dp=64, zero_stage=3, seq_len=4096, dropout=False)).activations
    flash = layout_memory(arch, Layout(dp=64, zero_stage=3, seq_len=4096, dropout=False, flash_attention=True))
    assert (format_bytes(none), format_bytes(flash.activations)) == ("51.6 GB", "17.3 GB")
    assert (NUMBERS["sys-7b-act-none"](), NUMBERS["sys-7b-act-flash"]()) == ("51.6 GB", "17.3 GB")
    assert NUMBERS["par-dp-act-7b"]() == "51.6 GB"
    for page, names in {
        "parallelism/data/": ("par-dp-act-7b",),
        "takeaways/": ("sys-7b-act-none", "sys-7b-act-flash"),
        "mistakes/": ("sys-7b-act-none", "sys-7b-act-flash"),
        "interview/": ("sys-7b-act-none", "sys-7b-act-flash"),
    }.items():
        for name in names:
            assert f'data-num="{name}">{NUMBERS[name]()}<' in site_pages[page], (page, name)
        assert "104 GB" not in site_pages[page] and "834 GB" not in site_pages[page]


@pytest.mark.parametrize("m", [1, 2, 8])
def test_zero3_traffic_is_three_psi_per_micro_batch(m: int) -> None:
    from calc import collective_bytes_sent, format_bytes
    from calc.parallel.comm import step_communication

    kw = dict(params="70B", layers=80, hidden=8192, seq=4096, dp=64, zero_stage=3)
    one = step_communication(**kw, num_microbatches=1).total_bytes
    psi = 70 * 10**9 * 2  # bf16 weights and gradients
    # all-gather twice (forward, backward) + reduce-scatter: 3 collectives of Ψ each, ring volume (n-1)/n each
    assert one == 3 * collective_bytes_sent("all-gather", psi, 64)
    assert step_communication(**kw, num_microbatches=m).total_bytes == m * one
    assert NUMBERS["sys-70b-z3-bytes"]() == format_bytes(one)


# Pages that state ZeRO-3's traffic: each says per micro-batch, none says per step.
_ZERO3_PAGES = ["interview/", "parallelism/", "communication/", "takeaways/", "parallelism/3d/"]


@pytest.mark.parametrize("page", _ZERO3_PAGES)
def test_zero3_traffic_is_never_called_per_step(site_pages: dict[str, str], page: str) -> None:
    text = re.sub(r"<[^>]+>", "", site_pages[page])
    assert not re.search(r"3\s*(?:\\Psi|Ψ)[\\)$]*\s*(?:per step|elements per step)", text), page
    assert "per step whatever the batch" not in text
    psi3 = r"3\s*(?:\\Psi|Ψ)"
    assert re.search(rf"{psi3}.{{0,60}}micro-batch|micro-batch.{{0,60}}{psi3}", text, re.DOTALL), page


def test_zero3_bytes_are_printed_per_micro_batch(site_pages: dict[str, str]) -> None:
    value = NUMBERS["sys-70b-z3-bytes"]()
    for page in ("interview/", "takeaways/"):
        html = site_pages[page]
        spans = [m.end() for m in re.finditer(rf'data-num="sys-70b-z3-bytes">{re.escape(value)}<', html)]
        assert spans, page
        for end in spans:  # the sentence that prints the bytes says what they are per
            near = re.sub(r"<[^>]+>|\s+", " ", html[max(0, end - 600) : end + 300])
            assert "micro-batch" in near and "per step" not in near, (page, near)


def test_cross_node_all_reduce_names_its_model(site_pages: dict[str, str]) -> None:
    page = site_pages["communication/"]
    for name in ("sys-dp64-peak-busbw", "sys-dp64-busbw", "sys-dp64-hdr-peak-busbw", "sys-dp64-hdr-busbw"):
        assert f'data-num="{name}">{NUMBERS[name]()}<' in page
    assert "Bus bandwidth, peak view" in page and "Bus bandwidth, step-time model" in page
    assert "That is the peak-bandwidth view the\ntables below use" not in page


def test_conventions_figure_is_drawn_from_the_conventions(site_pages: dict[str, str]) -> None:
    from calc.memory.model_state import CONVENTIONS

    page = site_pages["memory/conventions/"]
    figure = page.split('id="figure-mem-conventions"', 1)[1].split("</figure>", 1)[0]
    assert figure.count('class="cv-bar"') == len(CONVENTIONS)
    for c in CONVENTIONS.values():
        assert f">{c.name}<" in figure and f">{c.bytes_per_param} B<" in figure.split(f">{c.name}<", 1)[1]
    assert "bf16-adam-fused-10" not in figure and "predates" not in page and "mem-conventions.svg" not in page


def test_no_table_mixes_gb_and_gib(site_pages: dict[str, str]) -> None:
    """A table's byte counts that follow the GB / GiB switch are printed in one system (fixed-unit ones aside)."""
    mixed = []
    for path, html in site_pages.items():
        for table in re.findall(r"<table>.*?</table>", html, re.DOTALL):
            texts = re.findall(r'<span class="lc-num" data-bytes="\d+"[^>]*>([^<]+)<', table)
            binary = {t.endswith("iB") for t in texts}
            if len(binary) > 1:
                mixed.append((path, texts))
    assert mixed == []


def test_zero1_with_hidden_gather_is_no_slower_than_zero3() -> None:
    """overlap.md: ZeRO-3 beats ZeRO-1 only while ZeRO-1's parameter all-gather is counted exposed."""
    from prose_numbers import guide2

    z1, z3 = guide2._ov(1), guide2._ov(3)
    assert z1.step_time_s - z1.exposed_s["dp-param-all-gather"] <= z3.step_time_s


def test_data_parallel_trap_names_the_micro_batch(site_pages: dict[str, str]) -> None:
    text = re.sub(r"<[^>]+>|\s+", " ", site_pages["parallelism/data/"])
    assert "At a fixed global batch, more replicas only let you pick a smaller micro-batch" in text


def test_small_slips_stay_fixed(site_pages: dict[str, str]) -> None:
    def text(page: str) -> str:
        return re.sub(r"<[^>]+>|\s+", " ", site_pages[page])

    assert "161B" not in text("parallelism/3d/") and "162.2B" in text("parallelism/3d/")
    assert "| the computation |" not in text("parallelism/3d/") and "Replicated" in text("parallelism/3d/")
    assert "FlashAttention-1 keeps two per row" in text("memory/activations/")
    assert "$m$ model chunks" not in text("memory/activations/")
    assert "2 + 2 per layer per micro-batch, forward and backward" not in text("parallelism/sequence-context/")
    assert "Eq. 2.1" not in text("exercises/")
    assert "a test holds them" not in text("plan/")


def test_mistakes_say_each_mistake_once() -> None:
    """mistakes.md: one paragraph states the mistake and why it is wrong; no second summary repeats it."""
    md = (Path(__file__).resolve().parent.parent / "docs" / "mistakes.md").read_text(encoding="utf-8")
    assert "In short" not in md and "lc-print-summary" not in md
    sections = re.split(r"^## .*$", md, flags=re.MULTILINE)[1:]
    assert len(sections) >= 8
    for body in sections:
        first = body.strip().split("\n\n", 1)[0]
        assert first.startswith("**The mistake.**") and "**Why it is wrong.**" in first
        assert body.count("**Why it is wrong.**") == 1
