"""Numbers of the training stacks on the memory pages (docs/memory/activations.md, docs/memory/hidden.md): what
torchtitan's and Megatron-LM's defaults keep, the loss's peak per implementation, per-op checkpointing and FSDP
under pipeline parallelism.

Every value is an engine call (or a published measurement read from ``validation/published/runs.json``, beside
the engine's prediction of it). Names start with ``stk-``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import cache

from calc import format_bytes
from calc.memory.activations import layer_activations
from calc.memory.layout import Layout, loss_bytes
from calc.memory.nccl import nvls_bytes
from calc.memory.overhead_items import ALLOCATOR_RESERVE
from calc.memory.overheads import peak_memory
from calc.memory.stacks import DEEPSPEED_REDUCE_BUCKET, DEFAULT_LOSS_CHUNKS
from calc.models.presets import preset
from calc.timing.steptime import step_time

NUMBERS: dict[str, Callable[[], str]] = {}

_LLAMA = "llama3-8b"
_TOKENS = 8192
_TITAN_8B = Layout(stack="torchtitan", dp=8, micro_batch=2, global_batch=16, seq_len=_TOKENS)
"""torchtitan's Llama 3 8B benchmark run: FSDP 8 on 8 H100s, local batch 2, 8,192 tokens (Table 1, FSDP row)."""
_TITAN_405B = Layout(stack="torchtitan", dp=8, tp=8, pp=8, micro_batch=1, global_batch=64, seq_len=_TOKENS,
                     sequence_parallel=True, recompute="full")  # fmt: skip
"""Llama 3.1 405B on FSDP 8 × TP 8 × PP 8, full recomputation, the shape of torchtitan's 3D benchmark run."""


def _pct(x: float, digits: int = 0) -> str:
    return f"{x * 100:.{digits}f}%"


def _signed(x: float) -> str:
    return f"{x * 100:+.1f}%"


def _layer(recompute: str, arch_name: str = _LLAMA, tokens: int = _TOKENS) -> object:
    """One layer of ``arch_name`` at ``tokens`` tokens, FlashAttention, no dropout (the recent-LLM recipe)."""
    a = preset(arch_name)
    return layer_activations(
        tokens, 1, a.hidden_size, a.num_heads, kv_heads=a.num_kv_heads, head_dim=a.head_dim, v_head_dim=a.v_head_dim,
        ffn_hidden=a.intermediate_size, mlp=a.mlp, dropout=False, norm=a.norm, flash_attention=True,
        recompute=recompute,
    )  # fmt: skip


for _mode in ("none", "selective", "op", "full"):
    NUMBERS[f"stk-l8b-{_mode}"] = lambda m=_mode: format_bytes(_layer(m).total)
NUMBERS["stk-l8b-op-share"] = lambda: _pct(_layer("op").total / _layer("none").total)


@cache
def _steps() -> dict[str, object]:
    arch = preset(_LLAMA)
    return {r: step_time(arch, replace(_TITAN_8B, recompute=r), gpu="h100-sxm") for r in ("none", "op", "full")}


def _extra_flops(mode: str) -> str:
    s = _steps()
    return _pct(s[mode].hardware_flops / s["none"].hardware_flops - 1, 1)  # type: ignore[attr-defined]


def _extra_time(mode: str) -> str:
    s = _steps()
    return _pct(s[mode].step_time_s / s["none"].step_time_s - 1, 1)  # type: ignore[attr-defined]


NUMBERS["stk-op-flops"] = lambda: _extra_flops("op")
NUMBERS["stk-full-flops"] = lambda: _extra_flops("full")
NUMBERS["stk-op-step"] = lambda: _extra_time("op")
NUMBERS["stk-full-step"] = lambda: _extra_time("full")


@cache
def _published() -> dict[str, dict]:
    from validation.published.predict import load  # imported here: only this page's numbers need the rows

    return {row["id"]: row for row in load()}


def _measured(row_id: str) -> int:
    from validation.published.predict import predict

    return int(predict(_published()[row_id])["measured"])


def _predicted(row_id: str) -> int:
    from validation.published.predict import predict

    return int(predict(_published()[row_id])["predicted"])


NUMBERS["stk-tt8b-measured"] = lambda: format_bytes(_measured("tt24-8b-fsdp8-mem"), binary=True)
NUMBERS["stk-tt8b-reserved"] = lambda: format_bytes(
    peak_memory(preset(_LLAMA), _TITAN_8B, expandable_segments=True).reserved_bytes, binary=True
)
NUMBERS["stk-tt8b-error"] = lambda: _signed(_predicted("tt24-8b-fsdp8-mem") / _measured("tt24-8b-fsdp8-mem") - 1)
NUMBERS["stk-tt8b-selective-error"] = lambda: _pct(
    abs(
        peak_memory(preset(_LLAMA), replace(_TITAN_8B, recompute="selective"), expandable_segments=True).reserved_bytes
        / _measured("tt24-8b-fsdp8-mem")
        - 1
    ),
    1,
)

# Megatron-Core's second copy of the attention output (flash-attn backend), left out: calc.memory.activation_megatron.
NUMBERS["stk-flash-copy-l8b"] = lambda: format_bytes(_layer("none").out_proj_input)
NUMBERS["stk-flash-copy-l8b-model"] = lambda: format_bytes(_layer("none").out_proj_input * preset(_LLAMA).num_layers)


def _qwen_copy() -> int:
    """The copy for the Qwen3-30B-A3B rows: every layer on one GPU (no PP, TP 1), 4,096 tokens."""
    return _layer("none", "qwen3-30b-a3b", 4096).out_proj_input * preset("qwen3-30b-a3b").num_layers


_QWEN_NONE = "mbr-qwen3-30b-pr3880-norc-mem"
_QWEN_CORE = "mbr-qwen3-30b-pr3880-coreattn-mem"
NUMBERS["stk-qwen-copy"] = lambda: format_bytes(_qwen_copy())
NUMBERS["stk-qwen-error"] = lambda: _pct(abs(_predicted(_QWEN_NONE) / _measured(_QWEN_NONE) - 1), 1)
NUMBERS["stk-qwen-error-with"] = lambda: _pct(
    abs((_predicted(_QWEN_NONE) + _qwen_copy()) / _measured(_QWEN_NONE) - 1), 1
)
NUMBERS["stk-qwen-core-more"] = lambda: format_bytes(_measured(_QWEN_CORE) - _measured(_QWEN_NONE))
NUMBERS["stk-mlm-gpu-gap"] = lambda: format_bytes(
    abs(_measured("mlm-ft-7b-tp1-pp4-vp8-a100-mem") - _measured("mlm-ft-7b-tp1-pp4-vp8-h100-mem"))
)

# The loss's peak per implementation.
_VOCAB = 128256
"""Llama 3's vocabulary."""


def _per_logit(kind: str) -> str:
    saved, transient, _ = loss_bytes(kind, 1, _VOCAB, 1, 1)
    return f"{(saved + transient) // _VOCAB}"


for _kind in ("fused", "stock", "compiled"):
    NUMBERS[f"stk-loss-{_kind}-b"] = lambda k=_kind: _per_logit(k)
NUMBERS["stk-loss-chunked-b"] = lambda: f"{loss_bytes('chunked', 1, _VOCAB, 1, 1)[1] // _VOCAB}"
NUMBERS["stk-loss-chunked-hidden-b"] = lambda: f"{loss_bytes('chunked', 1, _VOCAB, 1, 1, hidden=1)[0]}"
NUMBERS["stk-loss-chunks"] = lambda: f"{DEFAULT_LOSS_CHUNKS}"
for _kind in ("fused", "stock", "chunked", "compiled"):
    NUMBERS[f"stk-loss-l8b-{_kind}"] = lambda k=_kind: format_bytes(
        sum(loss_bytes(k, _TOKENS, _VOCAB, 1, None, hidden=preset("llama3-8b").hidden_size)[:2])
    )
NUMBERS["stk-loss-logits"] = lambda: f"{_TOKENS * _VOCAB:,}"

# FSDP under pipeline parallelism.


@cache
def _pp_peaks() -> tuple[object, object]:
    arch = preset("llama3.1-405b")
    kept = peak_memory(arch, _TITAN_405B, expandable_segments=True)
    resharded = peak_memory(arch, replace(_TITAN_405B, reshard_after_forward=True), expandable_segments=True)
    return kept, resharded


def _pp_item(name: str) -> int:
    return next(o.bytes for o in _pp_peaks()[0].overheads if o.name == name)  # type: ignore[attr-defined]


NUMBERS["stk-pp-params"] = lambda: format_bytes(_pp_item("fsdp_unsharded_params"))
NUMBERS["stk-pp-grads"] = lambda: format_bytes(_pp_item("fsdp_unsharded_grads"))
NUMBERS["stk-pp-kept"] = lambda: format_bytes(_pp_peaks()[0].reserved_bytes)  # type: ignore[attr-defined]
NUMBERS["stk-pp-resharded"] = lambda: format_bytes(_pp_peaks()[1].reserved_bytes)  # type: ignore[attr-defined]
NUMBERS["stk-pp-layers"] = lambda: f"{max(_TITAN_405B.stage_layer_counts(preset('llama3.1-405b').num_layers))}"

# The allocator reserve per stack.
for _stack in ("megatron", "torchtitan", "deepspeed"):
    NUMBERS[f"stk-reserve-{_stack}"] = lambda s=_stack: _pct(
        ALLOCATOR_RESERVE[s][False][0] / ALLOCATOR_RESERVE[s][False][1], 1
    )

# DeepSpeed's contiguous gradient bucket (calc.memory.stacks.DEEPSPEED_REDUCE_BUCKET), on Llama 3 8B at ZeRO-2.


_DS_DP, _DS_SEQ = 8, 4096
"""The DeepSpeed example: Llama 3 8B, ZeRO-2 over ``_DS_DP`` GPUs, ``_DS_SEQ`` tokens a micro-batch."""


@cache
def _ds_bucket() -> tuple[int, int]:
    """(the bucket's bytes, the allocated peak it sits in) in the DeepSpeed example."""
    peak = peak_memory(preset("llama3-8b"), Layout(stack="deepspeed", zero_stage=2, dp=_DS_DP, seq_len=_DS_SEQ))
    bucket = next(o.bytes for o in peak.overheads if o.name == "deepspeed_bucket")
    return bucket, peak.allocated_bytes


NUMBERS["stk-ds-bucket-elements"] = lambda: f"{DEEPSPEED_REDUCE_BUCKET:,}"
NUMBERS["stk-ds-bucket"] = lambda: format_bytes(_ds_bucket()[0])
NUMBERS["stk-ds-dp"] = lambda: f"{_DS_DP}"
NUMBERS["stk-ds-seq"] = lambda: f"{_DS_SEQ:,}"
NUMBERS["stk-ds-bucket-share"] = lambda: _pct(_ds_bucket()[0] / _ds_bucket()[1], 1)

# NCCL's NVLS and tree buffers (calc.memory.nccl), on the hidden-memory page's 3D example: Llama 3 70B at t 8, p 4,
# d 8 on H100 SXM.


@cache
def _nccl_3d() -> dict[str, int]:
    layout = Layout(tp=8, pp=4, dp=8, seq_len=4096, flash_attention=True, dropout=False)
    peak = peak_memory(preset("llama3-70b"), layout, gpu="h100-sxm")
    return {o.name: o.bytes for o in peak.overheads}


NUMBERS["stk-nvls-tp8"] = lambda: format_bytes(nvls_bytes(8))
NUMBERS["stk-3d-nvls"] = lambda: format_bytes(_nccl_3d()["nccl_nvls"])
NUMBERS["stk-3d-tree"] = lambda: format_bytes(_nccl_3d()["nccl_tree"])
