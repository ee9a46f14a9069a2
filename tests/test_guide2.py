"""The second edition's "deeper" pages: each claim the prose makes in words is computed here through the engine,
and the built pages print the registry's numbers where they make it (hooks/prose_numbers/guide2.py)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from calc.finetune import finetune_memory
from calc.hardware import gpu
from calc.layout import layout_memory
from calc.overheads import peak_memory
from calc.presets import preset
from calc.steptime import step_time

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "hooks"))

from numbers_registry import NUMBERS  # the hooks folder is on sys.path, not a package
from prose_numbers import guide2

CAPACITY = gpu("h100-sxm").memory_bytes


def test_overlap_off_is_the_raw_collective() -> None:
    """The "overlap off" numbers are the engine's own: one bucket the size of the model leaves the whole
    reduce-scatter exposed, and that equals the raw term guide2 rebuilds from calc.comm."""
    arch = preset(guide2.OVERLAP_ARCH)
    whole = step_time(arch, guide2.overlap_layout(1), dp_bucket_params=arch.param_count)
    raw = guide2.raw_terms(1)["dp-grad-reduce-scatter"]
    assert whole.exposed_s["dp-grad-reduce-scatter"] == pytest.approx(raw, rel=1e-12)
    bucketed = step_time(arch, guide2.overlap_layout(1))
    assert bucketed.exposed_s["dp-grad-reduce-scatter"] < raw / 10 < raw
    assert bucketed.step_time_s < whole.step_time_s


def test_zero3_prefetch_hides_most_of_the_gathers() -> None:
    t = step_time(preset(guide2.OVERLAP_ARCH), guide2.overlap_layout(3))
    raw = guide2.raw_terms(3)
    assert t.exposed_s["dp-param-all-gather"] < raw["dp-param-all-gather"] / 10
    off = t.compute_s + t.bubble_s + sum(raw.values())
    assert t.step_time_s < off
    assert NUMBERS["g2-ov-z3-saved"]() == f"{(1 - t.step_time_s / off) * 100:.1f}%"


def test_tp_exposed_time_and_the_mfu_ceiling() -> None:
    t = step_time(preset(guide2.TP_ARCH), guide2.TP_LAYOUT)
    tp = sum(v for k, v in t.exposed_s.items() if k.startswith("tp-"))
    assert 0 < tp < t.step_time_s
    assert NUMBERS["g2-ov-tp-exposed"]() == f"{tp:.2f} s"
    assert t.mfu < t.mfu * t.step_time_s / (t.step_time_s - tp) < 1


def test_newer_schedules_shorten_the_step() -> None:
    arch, lay = preset(guide2.TP_ARCH), guide2.TP_LAYOUT
    one, zb, dual = (step_time(arch, lay, schedule=s) for s in ("1f1b", "zb-h1", "dualpipe"))
    assert dual.bubble_s < zb.bubble_s < one.bubble_s
    assert dual.step_time_s < zb.step_time_s < one.step_time_s


def test_hidden_example_tensors_fit_the_process_does_not() -> None:
    """hidden.md: "The tensors fit in 80 GB; the process does not", and expandable_segments brings it back."""
    arch, lay = preset(guide2.HIDDEN_ARCH), guide2.HIDDEN_LAYOUT
    p = peak_memory(arch, lay)
    assert p.memory.total <= CAPACITY < p.nvidia_smi_bytes
    assert p.memory.total < p.allocated_bytes < p.reserved_bytes < p.nvidia_smi_bytes
    assert peak_memory(arch, lay, expandable_segments=True).nvidia_smi_bytes <= CAPACITY


@pytest.mark.parametrize("recipe", ["fp8-hopper", "fp8-blackwell", "mxfp8-blackwell", "nvfp4-blackwell"])
def test_fp8_makes_the_example_larger(recipe: str) -> None:
    """fp8.md: "Turning FP8 on makes it larger"; Hopper's transposed copy costs more than Blackwell's one copy."""
    arch, lay = preset(guide2.HIDDEN_ARCH), guide2.HIDDEN_LAYOUT
    assert peak_memory(arch, lay, low_precision=recipe).allocated_bytes > peak_memory(arch, lay).allocated_bytes
    hopper = peak_memory(arch, lay, low_precision="fp8-hopper").allocated_bytes
    assert peak_memory(arch, lay, low_precision="fp8-blackwell").allocated_bytes < hopper


def test_moe_fits_balanced_not_at_the_worst_case() -> None:
    """moe-practice.md: fits balanced, not at the worst case of a 1.25 capacity factor."""
    arch, lay = preset(guide2.MOE_ARCH), guide2.MOE_LAYOUT
    peaks = {r: peak_memory(arch, lay, moe_routing=r).nvidia_smi_bytes for r in ("balanced", "capacity-1.25")}
    assert peaks["balanced"] <= CAPACITY < peaks["capacity-1.25"]
    assert NUMBERS["g2-moe-experts-ep8"]() == NUMBERS["g2-moe-experts-ep4-etp2"]()  # the product decides


def test_offload_transfer_is_cheap_activation_offload_is_not() -> None:
    assert guide2.offload_pcie_bytes() / guide2._PCIE < guide2._off_compute() / 10
    assert guide2._act_offload_bytes() / guide2._PCIE > guide2._off_compute()
    on = layout_memory(preset(guide2.OFFLOAD_ARCH), guide2.offload_layout(True))
    off = layout_memory(preset(guide2.OFFLOAD_ARCH), guide2.offload_layout(False))
    assert on.total < off.total and on.cpu_offload > 0 == off.cpu_offload


def test_only_qlora_fits_a_70b_model_state_on_one_gpu() -> None:
    arch = preset("llama3-70b")
    assert finetune_memory(arch, "qlora").total <= CAPACITY < finetune_memory(arch, "lora").total
    assert NUMBERS["g2-ft-dq-bits"]() == "0.127 bits"  # Dettmers et al. 2023, Sec. 3


def test_the_curve() -> None:
    """activations.md#curve: each doubling of cp doubles the length that fits; full recomputation stops early
    because the whole peak (logits, model states) does not shrink; selective and FlashAttention nearly agree."""
    fit = {case: guide2.longest_fitting(case) for case in guide2.CURVE_CASES}
    assert fit["cp2"] == 2 * fit["flash"] and fit["cp4"] == 2 * fit["cp2"] and fit["cp8"] == 2 * fit["cp4"]
    assert fit["none"] < fit["selective"] <= fit["full"] < fit["full-cp8"]
    acts, fits = guide2.curve_point("full", 16384)
    assert not fits and acts < CAPACITY // 10
    a, _ = guide2.curve_point("selective", 16384)
    b, _ = guide2.curve_point("flash", 16384)
    assert abs(a - b) / a < 0.01
    # Quadratic without recomputation, linear with it.
    assert guide2.curve_point("none", 8192)[0] > 3 * guide2.curve_point("none", 4096)[0]
    assert guide2.curve_point("selective", 8192)[0] == pytest.approx(2 * guide2.curve_point("selective", 4096)[0], 0.01)


def test_the_kernels_decide_what_is_saved() -> None:
    """measuring.md: the same model saves least under Megatron-LM's kernels, then SDPA, then eager attention."""
    arch = preset(guide2.MEASURE_ARCH)
    saved = {i: layout_memory(arch, guide2.measure_layout(i)).activations for i in ("megatron", "hf-sdpa", "hf-eager")}
    assert saved["megatron"] < saved["hf-sdpa"] < saved["hf-eager"]


PAGES = {
    "parallelism/overlap/": ["g2-ov-z1-rs-raw", "g2-ov-z3-saved", "g2-ov-tp-share"],
    "memory/hidden/": ["g2-hid-smi", "g2-hid-reserved-exp"],
    "memory/measuring/": ["g2-hid-allocated", "g2-meas-hf-eager"],
    "memory/fp8/": ["g2-fp8-fp8-hopper-allocated", "g2-fp8-speedup"],
    "parallelism/moe-practice/": ["g2-moe-peak-c125", "g2-moe-act-dropless"],
    "memory/offload/": ["g2-off-pcie-time", "g2-off-act-share"],
    "memory/finetuning/": ["g2-ft-qlora", "g2-ft-dq-bits"],
    "memory/activations/": ["g2-curve-cp8-max", "g2-curve-full-16k-peak"],
    "parallelism/pipeline/": ["g2-pp-70b-zb-step", "g2-pp-p8m32-inflight-dualpipe"],
}


@pytest.mark.parametrize("page", sorted(PAGES))
def test_pages_print_the_engine_numbers(site_pages: dict[str, str], page: str) -> None:
    html = site_pages[page]
    for name in PAGES[page]:
        assert f'data-num="{name}">{NUMBERS[name]()}<' in html, name


def test_the_accuracy_page_is_linked(site_pages: dict[str, str]) -> None:
    assert 'href="../../accuracy/' in site_pages["memory/measuring/"]
