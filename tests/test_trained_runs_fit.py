"""Runs that trained are not called "does not fit" (issue 17, "Runs that trained are called does not fit").

Each row is a published configuration that ran on the GPU named, read from its source; the engine's
``nvidia-smi`` estimate must be under that GPU's capacity as ``nvidia-smi`` reports it
([`GPU.memory_bytes`][calc.hardware.GPU]).
"""

from __future__ import annotations

import pytest

from calc.hardware import GPUS
from calc.memory.layout import Layout
from calc.memory.overheads import peak_memory
from calc.models.architecture import Architecture
from calc.models.presets import preset
from validation.published.predict import arch_for, layout_for, load

NEMOTRON4_340B = Architecture(
    name="nemotron-4-340b",
    model_type="custom",
    vocab_size=256000,
    hidden_size=18432,
    num_layers=96,
    num_heads=96,
    num_kv_heads=8,
    head_dim=192,
    intermediate_size=73728,
    mlp="gelu",  # squared ReLU: two matrices, as GeLU's
    norm="layernorm",
    position="rope",
    max_position_embeddings=4096,
    tied_embeddings=False,
)
"""Nemotron-4 340B's shapes (Nemotron-4 340B Technical Report, arXiv:2406.11704, Table 1)."""


def _nemotron():
    # NVIDIA/dgxc-benchmarking nemotron4-340b/README.md (8e77d60), H100 table: 256 GPUs, TP8 PP8 VP12 DP4, MBS 1,
    # GBS 64, sequence 4,096; NeMo scripts/performance (8cfedd7): distributed fused Adam, grad_reduce_in_fp32 False,
    # selective recomputation of the core attention, sequence parallelism
    kw = dict(tp=8, pp=8, dp=4, interleave=12, seq_len=4096, micro_batch=1, global_batch=64, recompute="selective")
    kw |= dict(sequence_parallel=True, zero_stage=1, distributed_optimizer=True, flash_attention=True, dropout=False)
    return NEMOTRON4_340B, Layout(**kw), "h100-sxm", {"optimizer": "fused"}


def _llama3_405b():
    # Dubey et al. 2024 (arXiv:2407.21783) Table 4: TP8 PP16 at 8,192 tokens without recomputation, first and last
    # stage one layer short; Meta's FSDP keeps parameters (ZeRO-2 here); timed as 1F1B (V not published)
    kw = dict(tp=8, pp=16, dp=128, seq_len=8192, micro_batch=1, global_batch=2048, recompute="none", zero_stage=2)
    kw |= dict(sequence_parallel=True, flash_attention=True, dropout=False, first_stage_layers=7, last_stage_layers=7)
    return preset("llama3.1-405b"), Layout(**kw), "h100-sxm", {"optimizer": "fused"}


def _torchtitan_8b():
    # torchtitan benchmarks/llama3_h100_202412_torchtitan.md Table 1, FSDP 8, local batch 2 at 8,192 tokens, on the
    # 96 GB H100 (HBM2e) the benchmark ran: the engine's H100 SXM preset with that run's marketed 96 GB
    row = next(r for r in load() if r["id"] == "tt24-8b-fsdp8-mem")
    return arch_for(row), layout_for(row)[0], "h100-sxm", {"capacity": 96 * 10**9}


@pytest.mark.parametrize("run", [_nemotron, _llama3_405b, _torchtitan_8b], ids=lambda f: f.__name__.strip("_"))
def test_a_run_that_trained_fits(run):
    arch, layout, gpu, options = run()
    capacity = options.pop("capacity", GPUS[gpu].memory_bytes)
    peak = peak_memory(arch, layout, gpu=gpu, **options)
    assert peak.nvidia_smi_bytes < capacity, f"{peak.nvidia_smi_bytes / 1e9:.1f} GB of {capacity / 1e9:.1f} GB"
