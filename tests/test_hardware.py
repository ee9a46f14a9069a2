"""calc.hardware: capacities as the device exposes them (issue 17 item 1), each sourced; GB200 NVL72."""

from __future__ import annotations

import pytest

from calc.hardware import GPUS, gpu

# What nvidia-smi (rocm-smi for the MI300X) prints as the total, in MiB; each preset's source names the log.
EXPOSED_MIB = [
    ("a100-40", 40_960),
    ("a100-80", 81_920),
    ("h100-sxm", 81_559),
    ("h100-pcie", 81_559),
    ("h200", 143_771),
    ("b200", 183_359),
    ("gb200", 189_471),
    ("mi300x", 196_592),  # 206,141,652,992 B of "VRAM Total Memory"
]


@pytest.mark.parametrize(("name", "mib"), EXPOSED_MIB)
def test_capacity_is_what_the_device_exposes(name, mib):
    g = gpu(name)
    assert g.memory_bytes == mib * 2**20
    assert f"{mib:,} MiB" in g.source  # the source names the reading it took


def test_every_preset_is_in_the_table():
    assert {name for name, _ in EXPOSED_MIB} == set(GPUS)


def test_labels_keep_the_marketed_name():
    assert gpu("h100-sxm").label == "H100 SXM 80 GB"
    assert gpu("a100-80").label == "A100 80 GB"
    # The marketed "80 GB" is neither 10^9 B nor 2^30 B: an H100 exposes 85.5 x 10^9 B, 79.6 GiB.
    assert 80 * 10**9 < gpu("h100-sxm").memory_bytes < 80 * 2**30


def test_gb200_is_a_b200_class_gpu_in_a_72_gpu_nvlink_domain():
    gb, b = gpu("gb200"), gpu("b200")
    assert gb.scaleup_gpus == 72 and gb.gpus_per_node == 4
    assert gb.scaleup_bytes_per_s == b.scaleup_bytes_per_s
    assert gb.peak_flops("bf16") > b.peak_flops("bf16") and gb.memory_bytes > b.memory_bytes
