"""Per-GPU training memory for a parallel layout: model states plus activations, stage by stage.

A [`Layout`][calc.memory.layout.Layout] says how a step is spread over GPUs: data
parallelism ``dp`` (with a ZeRO stage), tensor parallelism ``tp`` (optionally with
sequence parallelism), pipeline parallelism ``pp`` (1F1B, optionally interleaved),
context parallelism ``cp`` and expert parallelism ``ep``; plus the batch, sequence,
recomputation and offload settings. With an
[`Architecture`][calc.models.architecture.Architecture] it gives what one GPU holds:

* **Model states** (weights, gradients, fp32 master weights, Adam's two moments) of the
  parameters the GPU's pipeline stage holds: its transformer layers, the embedding on
  stage 0, the final norm and output head on the last stage. Tensor parallelism splits
  the matrices (Shoeybi et al. 2019, arXiv:1909.08053, Sec. 3; the embedding and head
  by vocabulary) but replicates the norms, routers and learned position embeddings;
  routed experts are split over ``ep`` and ``tp``. ZeRO (Rajbhandari et al. 2020,
  arXiv:1910.02054, Sec. 5) then shards components over the data-parallel ranks, as
  [`model_state_bytes`][calc.memory.model_state.model_state_bytes] does, with the bytes per
  parameter of a [`Convention`][calc.memory.model_state.Convention].
* **Activations** of the stage's layers for its in-flight micro-batches, plus the
  embedding and output-layer terms ([`calc.memory.activations`][calc.memory.activations]).

Every pipeline stage is evaluated and the most loaded one reported. That is stage 0
(the embedding and ``p`` in-flight micro-batches, Korthikanti et al. 2022 Sec. 4.2.3)
unless the last stage's fp32 logits outweigh it (full recomputation with a large
vocabulary) or MoE layers make a later stage heavier in parameters.

Not modelled: temporary buffers (ZeRO-3's gathered layer, communication buckets,
the cross-entropy's transient copies), allocator fragmentation and the CUDA context.
Latent attention (DeepSeek) is counted as multi-head attention with its query/key
and value head sizes (the small latent projections' inputs are left out); MoE
layers assume balanced routing. Framework restrictions beyond divisibility are not
enforced (DeepSpeed, for one, does not combine ZeRO-2/3 with pipeline parallelism).

The modules, one concept each (every public name is re-exported here, where it has always been imported from):

* ``calc.memory.layout_spec``: the [`Layout`][calc.memory.layout.Layout] value, validated once where it is
  built, and [`check_layout`][calc.memory.layout.check_layout], the rules that need the model;
* ``calc.memory.layout_rules``: [`check_parallelism`][calc.memory.layout.check_parallelism], the divisibility
  rules every calculator that takes a layout applies;
* ``calc.memory.stage_plan``: the [`StagePlan`][calc.memory.layout.StagePlan], each stage's layers, parameters
  and in-flight micro-batches, computed once;
* ``calc.memory.per_gpu``: [`LayoutMemory`][calc.memory.layout.LayoutMemory] and the per-GPU memory of one
  stage, of every stage and of the most loaded one.
"""

from __future__ import annotations

from calc.memory.layout_rules import check_parallelism
from calc.memory.layout_spec import Layout, check_layout
from calc.memory.per_gpu import LayoutMemory, layout_memory, layout_stages, stage_memory
from calc.memory.pipeline_split import split_layers
from calc.memory.stacks import LOSS_KINDS, STACKS, chunk_tokens_for, loss_bytes, stack_defaults
from calc.memory.stage_plan import StagePlan, stage_layers, stage_plan

__all__ = [
    "LOSS_KINDS",
    "Layout",
    "LayoutMemory",
    "STACKS",
    "StagePlan",
    "check_layout",
    "check_parallelism",
    "chunk_tokens_for",
    "layout_memory",
    "layout_stages",
    "loss_bytes",
    "stage_layers",
    "stage_memory",
    "split_layers",
    "stack_defaults",
    "stage_plan",
]
