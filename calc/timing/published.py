"""Published training runs of the preset models, as the planner shows them beside its own ranking.

Each entry is a throughput row of ``validation/published/runs.json`` (same ``id``): who ran the model, on how many
GPUs, with which degrees, and what they measured, with the source. ``tests/test_published_table.py`` checks every
entry against its row, and that every throughput row of a preset model is here.
"""

from __future__ import annotations

from typing import NamedTuple

__all__ = ["PUBLISHED_RUNS", "PublishedRun", "published_runs"]


class PublishedRun(NamedTuple):
    """One published run: ``hardware`` as the source describes it, ``gpu`` the preset the engine times it on,
    ``stack`` the training stack the engine times it with (``calc.memory.stacks``),
    ``degrees`` ``(tp, pp, dp, cp, interleave)`` (interleave 0: not published), ``run`` the source's name for it,
    ``dtype`` the matmul precision the engine times it in (``fp8``: the row's FP8 linear layers)."""

    id: str
    preset: str
    who: str
    source: str
    hardware: str
    gpu: str
    stack: str
    gpus: int
    seq_len: int
    global_batch: int
    degrees: tuple[int, int, int, int, int]
    measured: str
    run: str
    dtype: str = "bf16"


_DGX_H100 = "DGX H100 (H100 SXM 80 GB, 700 W)"
"""NVIDIA's DGX Cloud Benchmarking hardware, as its READMEs name it."""

_SOURCES: tuple[tuple[str, str, str], ...] = (
    ("torchtitan", "torchtitan, Table 1", "H100 SXM 96 GB HBM2e (Grand Teton)"),
    ("torchtitan", "torchtitan, Table 3", "H100 SXM 96 GB HBM2e (Grand Teton)"),
    ("torchtitan", "torchtitan, Table 2", "H100 SXM 96 GB HBM2e (Grand Teton)"),
    ("torchtitan", "torchtitan, Table 4", "H100 SXM 96 GB HBM2e (Grand Teton)"),
    ("torchtitan", "torchtitan, Table 5", "H100 SXM 96 GB HBM2e (Grand Teton)"),
    ("torchtitan", "torchtitan, Table 6", "H100 SXM 96 GB HBM2e (Grand Teton)"),
    ("Trainy", "Trainy on WhiteFiber, Results table", "H200 SXM 141 GB"),
    ("torchtitan", "torchtitan, Llama 3 8B 200M-Token Evidence", "NVIDIA Blackwell"),
    ("Meta", "Dubey et al. 2024, Table 4 (Sec. 3.3.2)", "H100 80 GB (700 W)"),
    ("NVIDIA", "Narayanan et al. 2021, Table 1", "A100 80 GB (DGX A100)"),
    ("NVIDIA", "Korthikanti et al. 2022, Tables 3 and 5", "A100 80 GB (Selene)"),
    ("NVIDIA", "Korthikanti et al. 2022, Sec. 6.3", "A100 80 GB (Selene)"),
    ("Microsoft and NVIDIA", "Chowdhery et al. 2022, Table 3 and Appendix B", "A100 80 GB (Selene)"),
    ("NVIDIA", "NVIDIA DGX Cloud Benchmarking, README_8b.md, Expected Performance, Llama 3.1 8b BF16", _DGX_H100),
    ("NVIDIA", "NVIDIA DGX Cloud Benchmarking, README_70b.md, Expected Performance, Llama 3.1 70b BF16", _DGX_H100),
    ("NVIDIA", "NVIDIA DGX Cloud Benchmarking, README_405b.md, Expected Performance, Llama 3.1 405b BF16", _DGX_H100),
    ("NVIDIA", "NVIDIA DGX Cloud Benchmarking, README_8b.md, Expected Performance, Llama 3.1 8b FP8", _DGX_H100),
    ("NVIDIA", "NVIDIA DGX Cloud Benchmarking, README_70b.md, Expected Performance, Llama 3.1 70b FP8", _DGX_H100),
    ("NVIDIA", "NVIDIA DGX Cloud Benchmarking, README_405b.md, Expected Performance, Llama 3.1 405b FP8", _DGX_H100),
)
"""``(who ran it, where it is published, on what hardware)`` of the entries below, by index."""

_TORCHTITAN = ("torchtitan", "Trainy")
"""Who ran torchtitan (every other source ran Megatron-LM, or Meta's own stack that the engine times as it)."""


def _r(
    id_: str,
    preset: str,
    source: int,
    gpu: str,
    gpus: int,
    seq: int,
    batch: int,
    degrees: tuple[int, ...],
    *more: str,
    dtype: str = "bf16",
) -> PublishedRun:
    who, where, hardware = _SOURCES[source]
    stack = "torchtitan" if who in _TORCHTITAN else "megatron"
    return PublishedRun(id_, preset, who, where, hardware, gpu, stack, gpus, seq, batch, degrees, *more, dtype)  # type: ignore[arg-type]


# fmt: off
PUBLISHED_RUNS: tuple[PublishedRun, ...] = (
    _r('tt24-8b-fsdp8-tps', 'llama3-8b', 0, 'h100-sxm', 8, 8192, 16, (1, 1, 8, 1, 1),
       '5,762 tokens/s per GPU', 'FSDP'),
    _r('tt24-8b-fsdp8-compile-tps', 'llama3-8b', 0, 'h100-sxm', 8, 8192, 16, (1, 1, 8, 1, 1),
       '6,667 tokens/s per GPU', 'FSDP + torch.compile'),
    _r('tt24-8b-fsdp8-compile-fp8-tps', 'llama3-8b', 0, 'h100-sxm', 8, 8192, 16, (1, 1, 8, 1, 1),
       '8,532 tokens/s per GPU', 'FSDP + torch.compile + Float8', dtype='fp8'),
    _r('tt24-8b-fsdp128-tps', 'llama3-8b', 1, 'h100-sxm', 128, 8192, 256, (1, 1, 128, 1, 1),
       '5,605 tokens/s per GPU', 'FSDP'),
    _r('tt24-8b-fsdp128-compile-tps', 'llama3-8b', 1, 'h100-sxm', 128, 8192, 256, (1, 1, 128, 1, 1),
       '6,514 tokens/s per GPU', 'FSDP + torch.compile'),
    _r('tt24-8b-fsdp128-compile-fp8-tps', 'llama3-8b', 1, 'h100-sxm', 128, 8192, 256, (1, 1, 128, 1, 1),
       '8,380 tokens/s per GPU', 'FSDP + torch.compile + Float8', dtype='fp8'),
    _r('tt24-8b-fsdp8-cp1-tps', 'llama3-8b', 2, 'h100-sxm', 8, 32768, 8, (1, 1, 8, 1, 1),
       '3,890 tokens/s per GPU', 'FSDP 8, CP 1', dtype='fp8'),
    _r('tt24-8b-fsdp4-cp2-tps', 'llama3-8b', 2, 'h100-sxm', 8, 65536, 4, (1, 1, 4, 2, 1),
       '2,540 tokens/s per GPU', 'FSDP 4, CP 2', dtype='fp8'),
    _r('tt24-8b-fsdp2-cp4-tps', 'llama3-8b', 2, 'h100-sxm', 8, 131072, 2, (1, 1, 2, 4, 1),
       '1,071 tokens/s per GPU', 'FSDP 2, CP 4', dtype='fp8'),
    _r('tt24-8b-fsdp1-cp8-tps', 'llama3-8b', 2, 'h100-sxm', 8, 262144, 1, (1, 1, 1, 8, 1),
       '548 tokens/s per GPU', 'FSDP 1, CP 8', dtype='fp8'),
    _r('tt24-70b-2d-tps', 'llama3-70b', 3, 'h100-sxm', 256, 8192, 512, (8, 1, 32, 1, 1),
       '829 tokens/s per GPU', '2D', dtype='fp8'),
    _r('tt24-70b-2d-asynctp-tps', 'llama3-70b', 3, 'h100-sxm', 256, 8192, 512, (8, 1, 32, 1, 1),
       '876 tokens/s per GPU', '2D + AsyncTP', dtype='fp8'),
    _r('tt24-405b-3d-1f1b-tps', 'llama3.1-405b', 4, 'h100-sxm', 512, 8192, 256, (8, 8, 8, 1, 1),
       '100 tokens/s per GPU', '1F1B', dtype='fp8'),
    _r('tt24-405b-3d-interleaved-tps', 'llama3.1-405b', 4, 'h100-sxm', 512, 8192, 256, (8, 8, 8, 1, 2),
       '128 tokens/s per GPU', 'Interleaved 1F1B', dtype='fp8'),
    _r('tt24-405b-4d-fsdp8-cp1-tps', 'llama3.1-405b', 5, 'h100-sxm', 512, 32768, 64, (8, 8, 8, 1, 1),
       '76 tokens/s per GPU', 'FSDP 8, CP 1', dtype='fp8'),
    _r('tt24-405b-4d-fsdp4-cp2-tps', 'llama3.1-405b', 5, 'h100-sxm', 512, 65536, 32, (8, 8, 4, 2, 1),
       '47 tokens/s per GPU', 'FSDP 4, CP 2', dtype='fp8'),
    _r('tt24-405b-4d-fsdp2-cp4-tps', 'llama3.1-405b', 5, 'h100-sxm', 512, 131072, 16, (8, 8, 2, 4, 1),
       '31 tokens/s per GPU', 'FSDP 2, CP 4', dtype='fp8'),
    _r('tt24-405b-4d-fsdp1-cp8-tps', 'llama3.1-405b', 5, 'h100-sxm', 512, 262144, 8, (8, 8, 1, 8, 1),
       '16 tokens/s per GPU', 'FSDP 1, CP 8', dtype='fp8'),
    _r('trainy25-8b-h200-fsdp32-tps', 'llama3-8b', 6, 'h200', 32, 8192, 64, (1, 1, 32, 1, 1),
       '10,938 tokens/s per GPU', 'NUM_NODES 4', dtype='fp8'),
    _r('trainy25-8b-h200-fsdp64-tps', 'llama3-8b', 6, 'h200', 64, 8192, 128, (1, 1, 64, 1, 1),
       '10,753 tokens/s per GPU', 'NUM_NODES 8', dtype='fp8'),
    _r('tt26-8b-gb200-fsdp4-nvfp4-tps', 'llama3-8b', 7, 'gb200', 4, 2048, 128, (1, 1, 4, 1, 1),
       '30,040 tokens/s per GPU', 'NVFP4 (bf16 tail)', dtype='fp8'),
    _r('tt26-8b-gb200-fsdp4-mxfp8-tps', 'llama3-8b', 7, 'gb200', 4, 2048, 128, (1, 1, 4, 1, 1),
       '28,084 tokens/s per GPU', 'MXFP8', dtype='fp8'),
    _r('tt26-8b-gb200-fsdp4-bf16-tps', 'llama3-8b', 7, 'gb200', 4, 2048, 128, (1, 1, 4, 1, 1),
       '21,919 tokens/s per GPU', 'BF16'),
    _r('llama3-405b-8k-8192', 'llama3.1-405b', 8, 'h100-sxm', 8192, 8192, 2048, (8, 16, 64, 1, 0),
       '430 TFLOP/s per GPU', '8192 GPUs, seq 8192'),
    _r('llama3-405b-8k-16384', 'llama3.1-405b', 8, 'h100-sxm', 16384, 8192, 2048, (8, 16, 128, 1, 0),
       '400 TFLOP/s per GPU', '16384 GPUs, seq 8192'),
    _r('llama3-405b-128k-16384', 'llama3.1-405b', 8, 'h100-sxm', 16384, 131072, 128, (8, 16, 8, 16, 0),
       '380 TFLOP/s per GPU', '16384 GPUs, seq 131072'),
    _r('narayanan21-1.7b', 'narayanan-1.7b', 9, 'a100-80', 32, 2048, 512, (1, 1, 32, 1, 0),
       '137 TFLOP/s per GPU', '1.7b'),
    _r('narayanan21-3.6b', 'narayanan-3.6b', 9, 'a100-80', 64, 2048, 512, (2, 1, 32, 1, 0),
       '138 TFLOP/s per GPU', '3.6b'),
    _r('narayanan21-7.5b', 'narayanan-7.5b', 9, 'a100-80', 128, 2048, 512, (4, 1, 32, 1, 0),
       '142 TFLOP/s per GPU', '7.5b'),
    _r('narayanan21-18.4b', 'narayanan-18.4b', 9, 'a100-80', 256, 2048, 1024, (8, 1, 32, 1, 0),
       '135 TFLOP/s per GPU', '18.4b'),
    _r('narayanan21-39.1b', 'narayanan-39.1b', 9, 'a100-80', 512, 2048, 1536, (8, 2, 32, 1, 0),
       '138 TFLOP/s per GPU', '39.1b'),
    _r('narayanan21-76.1b', 'narayanan-76.1b', 9, 'a100-80', 1024, 2048, 1792, (8, 4, 32, 1, 0),
       '140 TFLOP/s per GPU', '76.1b'),
    _r('narayanan21-145.6b', 'narayanan-145.6b', 9, 'a100-80', 1536, 2048, 2304, (8, 8, 24, 1, 0),
       '148 TFLOP/s per GPU', '145.6b'),
    _r('narayanan21-310.1b', 'narayanan-310.1b', 9, 'a100-80', 1920, 2048, 2160, (8, 16, 15, 1, 0),
       '155 TFLOP/s per GPU', '310.1b'),
    _r('narayanan21-529.6b', 'narayanan-529.6b', 9, 'a100-80', 2520, 2048, 2520, (8, 35, 9, 1, 0),
       '163 TFLOP/s per GPU', '529.6b'),
    _r('narayanan21-1t', 'narayanan-1t', 9, 'a100-80', 3072, 2048, 3072, (8, 64, 6, 1, 0),
       '163 TFLOP/s per GPU', '1t'),
    _r('korthikanti22-22b-present', 'megatron-22b', 10, 'a100-80', 8, 2048, 4, (8, 1, 1, 1, 1),
       '1.10 s per step', '22b, present work'),
    _r('korthikanti22-22b-full', 'megatron-22b', 10, 'a100-80', 8, 2048, 4, (8, 1, 1, 1, 1),
       '1.42 s per step', '22b, full recompute'),
    _r('korthikanti22-175b-present', 'megatron-175b', 10, 'a100-80', 64, 2048, 64, (8, 8, 1, 1, 3),
       '13.75 s per step', '175b, present work'),
    _r('korthikanti22-175b-full', 'megatron-175b', 10, 'a100-80', 64, 2048, 64, (8, 8, 1, 1, 3),
       '18.13 s per step', '175b, full recompute'),
    _r('korthikanti22-530b-present', 'megatron-530b', 10, 'a100-80', 280, 2048, 280, (8, 35, 1, 1, 3),
       '37.83 s per step', '530b, present work'),
    _r('korthikanti22-530b-full', 'megatron-530b', 10, 'a100-80', 280, 2048, 280, (8, 35, 1, 1, 3),
       '49.05 s per step', '530b, full recompute'),
    _r('korthikanti22-1t-present', 'megatron-1t', 10, 'a100-80', 512, 2048, 512, (8, 64, 1, 1, 1),
       '71.49 s per step', '1t, present work'),
    _r('korthikanti22-1t-full', 'megatron-1t', 10, 'a100-80', 512, 2048, 512, (8, 64, 1, 1, 1),
       '94.42 s per step', '1t, full recompute'),
    _r('korthikanti22-530b-2240gpus', 'megatron-530b', 11, 'a100-80', 2240, 2048, 2240, (8, 35, 8, 1, 3),
       '39.15 s per step', '530B at 8-way DP'),
    _r('mtnlg-530b-2240gpus', 'megatron-530b', 12, 'a100-80', 2240, 2048, 1920, (8, 35, 8, 1, 1),
       '65,430 tokens/s', 'MT-NLG 530B, 2240 A100'),
    _r('dgxc25-llama3.1-8b-h100-8', 'llama3-8b', 13, 'h100-sxm', 8, 8192, 128, (1, 1, 4, 2, 1),
       '12.78 s per step', 'Throughput on 8x H100 GPUs (GBS=128): 12.78 s'),
    _r('dgxc25-llama3.1-8b-h100-128', 'llama3-8b', 13, 'h100-sxm', 128, 8192, 2048, (1, 1, 64, 2, 1),
       '13.16 s per step', 'Throughput on 128x H100 GPUs (GBS=2048): 13.16 s'),
    _r('dgxc25-llama3.1-70b-h100-64', 'llama3-70b', 14, 'h100-sxm', 64, 8192, 128, (4, 4, 2, 2, 5),
       '14.61 s per step', 'Throughput on 64x H100 GPUs (GBS=128): 14.61 s'),
    _r('dgxc25-llama3.1-70b-h100-1024', 'llama3-70b', 14, 'h100-sxm', 1024, 8192, 2048, (4, 4, 32, 2, 5),
       '14.86 s per step', 'Throughput on 1024x H100 GPUs (GBS=2048): 14.86 s'),
    _r('dgxc25-llama3.1-405b-h100-576', 'llama3.1-405b', 15, 'h100-sxm', 576, 8192, 252, (8, 9, 4, 2, 7),
       '17.50 s per step', 'Throughput on 576x H100 GPUs (GBS=252): 17.50 s'),
    _r('dgxc25-llama3.1-405b-h100-2304', 'llama3.1-405b', 15, 'h100-sxm', 2304, 8192, 1008, (8, 9, 16, 2, 7),
       '17.70 s per step', 'Throughput on 2304x H100 GPUs (GBS=1008): 17.70 s'),
    _r('dgxc25-llama3.1-8b-h100-fp8-8', 'llama3-8b', 16, 'h100-sxm', 8, 8192, 128, (1, 1, 4, 2, 1),
       '9.44 s per step', 'Throughput on 8x H100 GPUs (GBS=128): 9.44 s', dtype='fp8'),
    _r('dgxc25-llama3.1-8b-h100-fp8-128', 'llama3-8b', 16, 'h100-sxm', 128, 8192, 2048, (1, 1, 64, 2, 1),
       '9.73 s per step', 'Throughput on 128x H100 GPUs (GBS=2048): 9.73 s', dtype='fp8'),
    _r('dgxc25-llama3.1-70b-h100-fp8-64', 'llama3-70b', 17, 'h100-sxm', 64, 8192, 128, (4, 4, 2, 2, 5),
       '10.46 s per step', 'Throughput on 64x H100 GPUs (GBS=128): 10.46 s', dtype='fp8'),
    _r('dgxc25-llama3.1-70b-h100-fp8-1024', 'llama3-70b', 17, 'h100-sxm', 1024, 8192, 2048, (4, 4, 32, 2, 5),
       '10.83 s per step', 'Throughput on 1024x H100 GPUs (GBS=2048): 10.83 s', dtype='fp8'),
    _r('dgxc25-llama3.1-405b-h100-fp8-576', 'llama3.1-405b', 18, 'h100-sxm', 576, 8192, 252, (8, 9, 4, 2, 7),
       '11.00 s per step', 'Throughput on 576x H100 GPUs (GBS=252): 11.00 s', dtype='fp8'),
    _r('dgxc25-llama3.1-405b-h100-fp8-2304', 'llama3.1-405b', 18, 'h100-sxm', 2304, 8192, 1008, (8, 9, 16, 2, 7),
       '11.20 s per step', 'Throughput on 2304x H100 GPUs (GBS=1008): 11.20 s', dtype='fp8'),
)
# fmt: on
"""Every published throughput run of a preset model, in ``runs.json``'s order."""


def published_runs(preset: str) -> tuple[PublishedRun, ...]:
    """The published runs of ``preset``.

    Examples:
        >>> [(r.who, r.gpus, r.degrees[:3]) for r in published_runs("llama3.1-405b") if r.who == "Meta"][:2]
        [('Meta', 8192, (8, 16, 64)), ('Meta', 16384, (8, 16, 128))]
        >>> published_runs("gpt2")
        ()
    """
    return tuple(r for r in PUBLISHED_RUNS if r.preset == preset)
