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
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from fractions import Fraction

from calc.errors import CalcError
from calc.memory.activation_profiles import hf_model_terms
from calc.memory.activations import IMPLEMENTATIONS, LayerActivations, layer_activations, stage_activations
from calc.memory.model_state import COMPONENTS, CONVENTIONS, SHARD_MODES, Convention, busiest_shard, resolve_convention
from calc.models.architecture import Architecture
from calc.timing.compute import RECOMPUTE_MODES
from calc.units import parse_positive_int

__all__ = [
    "Layout",
    "LayoutMemory",
    "check_layout",
    "check_parallelism",
    "layout_memory",
    "layout_stages",
    "stage_layers",
    "stage_memory",
]


def check_parallelism(
    *,
    tp: int = 1,
    pp: int = 1,
    dp: int = 1,
    cp: int = 1,
    ep: int = 1,
    virtual_stages: int = 1,
    layers: int | None = None,
    hidden: int | None = None,
    seq_len: int | None = None,
    num_microbatches: int | None = None,
    global_batch: int | None = None,
    micro_batch: int = 1,
    sequence_parallel: bool = False,
    cp_load_balance: bool = True,
    names: Mapping[str, str] | None = None,
) -> None:
    """Raise unless a parallel layout is possible: the one check every calculator taking a layout runs.

    The communication, training-memory, activations and pipeline-bubble calculators each pass the
    numbers they have (``None`` for what they do not take), so the same layout fails the same way
    everywhere. Rules, in this order (Megatron-LM's argument checks; Narayanan et al. 2021,
    arXiv:2104.04473, Sec. 2.2.2 for interleaving; Korthikanti et al. 2022 Sec. 4.2.2 for sequence
    parallelism):

    1. ``virtual_stages`` above 1 needs ``pp`` of at least 2 (``unsupported``);
    2. ``global_batch`` is a multiple of ``dp × micro_batch``;
    3. ``pp`` divides ``layers``, and ``pp × virtual_stages`` does when interleaved; without
       interleaving ``pp`` may instead divide ``layers + 2``, the first and last stages holding one
       layer fewer to make room for the embedding and the loss, as Llama 3 405B trains (126 layers on
       16 stages, Dubey et al. 2024, arXiv:2407.21783, Sec. 3.3.2);
    4. interleaved, the micro-batches per pipeline (``num_microbatches``, or
       ``global_batch / (dp × micro_batch)``) are a multiple of ``pp``;
    5. ``tp`` divides ``hidden`` (the heads are split over ``tp`` and ``hidden = heads × head_dim``);
    6. ``cp`` divides ``seq_len``, ``2 × cp`` does under load-balanced ring attention, and ``tp``
       divides ``seq_len / cp`` under sequence parallelism;
    7. ``ep`` divides ``dp × cp`` (expert parallelism reuses the data- and context-parallel ranks).

    Args:
        tp: Tensor-parallel degree.
        pp: Pipeline-parallel degree.
        dp: Data-parallel degree.
        cp: Context-parallel degree.
        ep: Expert-parallel degree.
        virtual_stages: Model chunks per pipeline stage (interleaving; 1 = none).
        layers: Transformer layers, if known.
        hidden: Hidden size, if known.
        seq_len: Tokens per sequence, if known.
        num_microbatches: Micro-batches per step per pipeline, if given directly.
        global_batch: Sequences per step, if given (the micro-batch count follows from it).
        micro_batch: Sequences per micro-batch.
        sequence_parallel: Megatron-LM sequence parallelism.
        cp_load_balance: Load-balanced ring attention (``2 × cp`` chunks per sequence).
        names: The calculator's field names for these arguments, where they differ (the training
            calculator's ``interleave``, the communication calculator's ``seq``); errors and their
            messages use them.

    Raises:
        CalcError: Naming the field at fault (code ``not-divisible`` or ``unsupported``).

    Examples:
        >>> check_parallelism(tp=8, pp=4, layers=80, hidden=8192, virtual_stages=2, num_microbatches=16)
        >>> check_parallelism(pp=3, layers=80)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: pp must divide the layers, or the layers + 2 with the first and last ... (got 3)
        >>> check_parallelism(pp=16, layers=126)  # Llama 3 405B: 7 + 14 × 8 + 7 layers
        >>> check_parallelism(pp=4, virtual_stages=2, num_microbatches=3, names={"virtual_stages": "interleave"})
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: num_microbatches must be a multiple of pp (pp=4) for the interleaved schedule (got 3)
    """
    name = dict(names or {})

    def n(key: str) -> str:
        return name.get(key, key)

    v = virtual_stages
    if v > 1 and pp < 2:
        raise CalcError(
            n("virtual_stages"),
            "needs pp of at least 2 (it splits each pipeline stage into chunks)",
            v,
            code="unsupported",
        )
    if global_batch is not None and global_batch % (dp * micro_batch):
        raise CalcError(
            n("global_batch"),
            f"must be a multiple of {n('dp')} × {n('micro_batch')} ({n('dp')}={dp}, {n('micro_batch')}={micro_batch})",
            global_batch,
            code="not-divisible",
        )
    if layers is not None:
        if v > 1 and layers % (pp * v):
            raise CalcError(
                n("pp"),
                f"× {n('virtual_stages')} must divide the layers (layers={layers}, {n('virtual_stages')}={v})",
                pp,
                code="not-divisible",
            )
        if layers % pp and not (v == 1 and pp >= 3 and (layers + 2) % pp == 0):
            raise CalcError(
                n("pp"),
                f"must divide the layers, or the layers + 2 with the first and last stages one "
                f"layer short (layers={layers})",
                pp,
                code="not-divisible",
            )
    if v > 1:
        if global_batch is not None:
            m = global_batch // (dp * micro_batch)
            if m % pp:
                raise CalcError(
                    n("global_batch"),
                    f"must give a multiple of {n('pp')} ({n('pp')}={pp}) micro-batches "
                    f"per pipeline for the interleaved schedule (global_batch / ({n('dp')} × "
                    f"{n('micro_batch')}) = {m})",
                    global_batch,
                    code="not-divisible",
                )
        elif num_microbatches is not None and num_microbatches % pp:
            raise CalcError(
                n("num_microbatches"),
                f"must be a multiple of {n('pp')} ({n('pp')}={pp}) for the interleaved schedule",
                num_microbatches,
                code="not-divisible",
            )
    if hidden is not None and hidden % tp:
        raise CalcError(n("tp"), f"must divide the hidden size (hidden={hidden})", tp, code="not-divisible")
    if seq_len is not None:
        seq = n("seq_len")
        if seq_len % cp:
            raise CalcError(n("cp"), f"must divide {seq} ({seq}={seq_len})", cp, code="not-divisible")
        if cp > 1 and cp_load_balance and seq_len % (2 * cp):
            raise CalcError(
                n("cp"),
                f"× 2 must divide {seq} for load-balanced ring attention ({seq}={seq_len})",
                cp,
                code="not-divisible",
            )
        if sequence_parallel and (seq_len // cp) % tp:
            raise CalcError(
                n("tp"),
                f"must divide {seq} / {n('cp')} under sequence parallelism ({seq}={seq_len}, {n('cp')}={cp})",
                tp,
                code="not-divisible",
            )
    if (dp * cp) % ep:
        raise CalcError(
            n("ep"),
            f"must divide {n('dp')} × {n('cp')} (={dp * cp}); expert parallelism reuses the "
            "data- and context-parallel ranks",
            ep,
            code="not-divisible",
        )


def _bool(value: object, field: str) -> bool:
    if isinstance(value, bool):
        return value
    raise CalcError(field, "must be true or false", value)


_LAYOUT_NAMES = {"virtual_stages": "interleave"}
"""[`Layout`][calc.memory.layout.Layout]'s names for [`check_parallelism`][calc.memory.layout.check_parallelism]'s
arguments."""


def _ceil_div(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Layout:
    """How one training step is spread over GPUs, and what each GPU keeps.

    Construction validates each field on its own (ranges, names, the GPU count);
    the rules that need the model (divisibility by heads, layers, experts...) are in
    [`check_layout`][calc.memory.layout.check_layout].

    Attributes:
        dp: Data-parallel degree (replicas of the model, not counting ``cp``). ``None``
            derives it from ``gpus`` (``gpus / (tp × pp × cp)``), or 1.
        tp: Tensor-parallel degree.
        pp: Pipeline-parallel degree (stages).
        cp: Context-parallel degree (ranks sharing each sequence, ring attention).
        ep: Expert-parallel degree (ranks the routed experts are split over; carved out of
            ``dp × cp``, as in Megatron-LM).
        zero_stage: 0 (plain data parallelism), 1 (optimizer states sharded), 2 (+ gradients),
            3 (+ weights).
        micro_batch: Sequences per micro-batch per model replica.
        global_batch: Sequences per optimizer step; ``None`` assumes at least ``pp``
            micro-batches per pipeline (the steady state, the worst case for memory).
        seq_len: Tokens per sequence.
        sequence_parallel: Megatron-LM sequence parallelism over the ``tp`` ranks.
        recompute: ``"none"``, ``"selective"`` or ``"full"`` activation recomputation.
        flash_attention: Fused FlashAttention (no ``s²`` attention scores kept).
        dropout: Dropout in the layers and after the embedding (the Korthikanti et al. accounting
            assumes it; most recent LLMs train without it).
        convention: Bytes per parameter, a key of [`CONVENTIONS`][calc.memory.model_state.CONVENTIONS].
        distributed_optimizer: Megatron-LM's distributed optimizer: the optimizer states (fp32
            master, both moments) sharded over the data-parallel ranks, i.e. ZeRO-1 at least;
            with ``mixed-adam-18`` that is the ``6 + 12/d`` bytes per parameter of Megatron's
            ``dist_optimizer.md``.
        offload_optimizer: ZeRO-Offload (Ren et al. 2021, arXiv:2101.06840, Sec. 4): gradients and
            optimizer states live in CPU memory; needs ZeRO stage 1 or more.
        offload_params: ZeRO-Infinity parameter offload (Rajbhandari et al. 2021, arXiv:2104.07857):
            the weights also live in CPU memory; needs ZeRO stage 3.
        interleave: Model chunks per pipeline stage (the interleaved 1F1B schedule; 1 = plain).
        zero_over_cp: Shard ZeRO / distributed-optimizer states over ``dp × cp`` ranks, as Megatron-LM
            does (its data-parallel group "with context parallel"); ``False`` shards over ``dp`` only.
        cp_load_balance: Load-balanced ring attention (each rank takes two of ``2 × cp`` chunks, as
            Megatron-LM / Transformer Engine do), which needs ``2 × cp`` to divide the sequence.
        gpus: The total GPU count, if given: it must equal ``dp × tp × pp × cp``. After construction
            it always holds that product.
        pipeline_layers: Transformer layers on each pipeline stage, first to last (``pp`` entries that
            add up to the model's layers), for uneven stages; ``None`` splits evenly.
        decoder_first_pipeline_num_layers: Layers on the first stage, as Megatron-LM's flag of that
            name; the stages not given share the rest evenly.
        decoder_last_pipeline_num_layers: Layers on the last stage, likewise. With none of the three,
            a ``pp`` that divides the layers + 2 (not the layers) puts one layer fewer on the first and
            last stages, as Llama 3 405B trains (126 layers on 16 stages: 7 + 14 × 8 + 7).
        shard: How ZeRO-sharded states split over the ranks, for the busiest rank
            ([`busiest_shard`][calc.memory.model_state.busiest_shard]): ``"even"`` (``ceil(Ψ/N)``, the ZeRO
            paper's lower bound, the default), ``"fsdp2"`` (every tensor chunked on dim 0 and padded) or
            ``"whole-tensor"`` (ZeroRedundancyOptimizer's greedy assignment of whole tensors).
        implementation: Whose kernels save the activations, a key of
            [`IMPLEMENTATIONS`][calc.memory.activations.IMPLEMENTATIONS]: ``"megatron"`` (the paper's fused
            accounting, the default), ``"hf-eager"`` or ``"hf-sdpa"`` (stock Hugging Face transformers).

    Examples:
        >>> Layout(tp=8, pp=8, gpus=512).dp
        8
        >>> Layout(tp=8, gpus=100)
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: gpus must be a multiple of tp × pp × cp (=8) (got 100)
    """

    dp: int | None = None
    tp: int = 1
    pp: int = 1
    cp: int = 1
    ep: int = 1
    zero_stage: int = 0
    micro_batch: int = 1
    global_batch: int | None = None
    seq_len: int = 2048
    sequence_parallel: bool = False
    recompute: str = "none"
    flash_attention: bool = False
    dropout: bool = True
    convention: str = "mixed-adam-16"
    distributed_optimizer: bool = False
    offload_optimizer: bool = False
    offload_params: bool = False
    interleave: int = 1
    zero_over_cp: bool = True
    cp_load_balance: bool = True
    gpus: int | None = None
    pipeline_layers: tuple[int, ...] | None = None
    decoder_first_pipeline_num_layers: int | None = None
    decoder_last_pipeline_num_layers: int | None = None
    implementation: str = "megatron"
    shard: str = "even"

    def __post_init__(self) -> None:
        put = object.__setattr__
        self._check_stage_fields()
        for name in ("tp", "pp", "cp", "ep", "micro_batch", "seq_len", "interleave"):
            put(self, name, parse_positive_int(getattr(self, name), name))
        put(self, "zero_stage", parse_positive_int(self.zero_stage, "zero_stage", minimum=0, maximum=3))
        for name in (
            "sequence_parallel",
            "flash_attention",
            "dropout",
            "distributed_optimizer",
            "offload_optimizer",
            "offload_params",
            "zero_over_cp",
            "cp_load_balance",
        ):
            _bool(getattr(self, name), name)
        if self.recompute not in RECOMPUTE_MODES:
            raise CalcError(
                "recompute", f"must be one of {', '.join(RECOMPUTE_MODES)}", self.recompute, code="unknown-name"
            )
        if self.implementation not in IMPLEMENTATIONS:
            raise CalcError(
                "implementation",
                f"must be one of {', '.join(IMPLEMENTATIONS)}",
                self.implementation,
                code="unknown-name",
            )
        put(self, "convention", resolve_convention(self.convention).name)  # an old name gives the current one
        if self.shard not in SHARD_MODES:
            raise CalcError("shard", f"must be one of {', '.join(SHARD_MODES)}", self.shard, code="unknown-name")
        model = self.tp * self.pp * self.cp
        if self.gpus is not None:
            gpus = parse_positive_int(self.gpus, "gpus")
            if self.dp is None:
                if gpus % model:
                    raise CalcError(
                        "gpus", f"must be a multiple of tp × pp × cp (={model})", gpus, code="not-divisible"
                    )
                put(self, "dp", gpus // model)
            else:
                put(self, "dp", parse_positive_int(self.dp, "dp"))
                if gpus != self.dp * model:
                    raise CalcError(
                        "gpus", f"must equal dp × tp × pp × cp (={self.dp * model})", gpus, code="not-divisible"
                    )
        else:
            put(self, "dp", 1 if self.dp is None else parse_positive_int(self.dp, "dp"))
        put(self, "gpus", self.dp * model)
        if self.global_batch is not None:
            put(self, "global_batch", parse_positive_int(self.global_batch, "global_batch"))
        check_parallelism(
            tp=self.tp,
            pp=self.pp,
            dp=self.dp,
            cp=self.cp,
            virtual_stages=self.interleave,
            global_batch=self.global_batch,
            micro_batch=self.micro_batch,
            seq_len=self.seq_len,
            sequence_parallel=self.sequence_parallel,
            cp_load_balance=self.cp_load_balance,
            names=_LAYOUT_NAMES,
        )
        if self.offload_params and self.zero_stage < 3:
            raise CalcError(
                "offload_params",
                "needs zero_stage 3 (parameters are offloaded as ZeRO-3 shards)",
                self.offload_params,
                code="unsupported",
            )
        if self.offload_optimizer and self.zero_stage < 1 and not self.distributed_optimizer:
            raise CalcError(
                "offload_optimizer",
                "needs zero_stage of at least 1 (ZeRO-Offload)",
                self.offload_optimizer,
                code="unsupported",
            )

    def _check_stage_fields(self) -> None:
        """Validate the uneven-stage fields on their own (the layer total is checked with the model)."""
        put = object.__setattr__
        explicit = self.pipeline_layers
        ends = ("decoder_first_pipeline_num_layers", "decoder_last_pipeline_num_layers")
        pp = parse_positive_int(self.pp, "pp")
        if explicit is not None:
            if isinstance(explicit, str) or not isinstance(explicit, (tuple, list)):
                raise CalcError("pipeline_layers", "must be a list of layer counts, one per stage", explicit)
            counts = tuple(parse_positive_int(n, "pipeline_layers") for n in explicit)
            if len(counts) != pp:
                raise CalcError(
                    "pipeline_layers",
                    f"must give one layer count per stage (pp={pp})",
                    len(counts),
                    code="not-divisible",
                )
            put(self, "pipeline_layers", counts)
            for name in ends:
                if getattr(self, name) is not None:
                    raise CalcError(
                        name, "cannot be given with pipeline_layers (which sets every stage)", getattr(self, name)
                    )
        for name in ends:
            if getattr(self, name) is not None:
                put(self, name, parse_positive_int(getattr(self, name), name))
                if pp < 2:
                    raise CalcError(name, "needs pp of at least 2", getattr(self, name), code="unsupported")
        uneven = explicit is not None or any(getattr(self, n) is not None for n in ends)
        if uneven and parse_positive_int(self.interleave, "interleave") > 1:
            raise CalcError(
                "interleave",
                "must be 1 with uneven pipeline stages (only plain 1F1B is modelled with them)",
                self.interleave,
                code="unsupported",
            )

    def stage_layer_counts(self, num_layers: int) -> tuple[int, ...]:
        """Transformer layers on each pipeline stage, first to last, for a model of ``num_layers`` layers.

        Explicit ``pipeline_layers`` are used as given; Megatron-LM's
        ``decoder_first_pipeline_num_layers`` / ``decoder_last_pipeline_num_layers`` fix the first
        and last stages and share the rest evenly over the stages between (Megatron-LM
        ``TransformerConfig``, which requires that remainder to divide evenly); with neither, an even
        split, or, when ``pp`` divides ``num_layers + 2`` instead, one layer fewer on the first and
        last stages (Dubey et al. 2024, arXiv:2407.21783, Sec. 3.3.2).

        Raises:
            CalcError: Naming the field whose counts do not add up or do not split evenly.

        Examples:
            >>> Layout(pp=16).stage_layer_counts(126)[:3], Layout(pp=16).stage_layer_counts(126)[-1]
            ((7, 8, 8), 7)
            >>> Layout(pp=4, decoder_first_pipeline_num_layers=5).stage_layer_counts(32)
            (5, 9, 9, 9)
            >>> Layout(pp=3, pipeline_layers=(10, 12, 10)).stage_layer_counts(32)
            (10, 12, 10)
            >>> Layout(pp=3, pipeline_layers=(10, 12, 11)).stage_layer_counts(32)  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            calc.errors.CalcError: pipeline_layers must add up to the model's layers (layers=32, sum=33) ...
        """
        p = self.pp
        if self.pipeline_layers is not None:
            total = sum(self.pipeline_layers)
            if total != num_layers:
                raise CalcError(
                    "pipeline_layers",
                    f"must add up to the model's layers (layers={num_layers}, sum={total})",
                    self.pipeline_layers,
                    code="not-divisible",
                )
            return self.pipeline_layers
        first, last = self.decoder_first_pipeline_num_layers, self.decoder_last_pipeline_num_layers
        if first is None and last is None:
            if num_layers % p == 0 or self.interleave > 1:
                return (num_layers // p,) * p
            if p >= 3 and (num_layers + 2) % p == 0:
                mid = (num_layers + 2) // p
                return (mid - 1,) + (mid,) * (p - 2) + (mid - 1,)
            return (num_layers // p,) * p  # check_parallelism reports the layout
        fixed = [n for n in (first, last) if n is not None]
        field = "decoder_last_pipeline_num_layers" if first is None else "decoder_first_pipeline_num_layers"
        rest, middle = num_layers - sum(fixed), p - len(fixed)
        if rest < middle or (middle == 0 and rest) or (middle and rest % middle):
            stages = f"{middle} other stage" + ("s" if middle != 1 else "")
            raise CalcError(
                field,
                f"must leave a whole number of layers, at least 1, for each of the {stages} "
                f"(layers={num_layers}, left={rest})",
                first if first is not None else last,
                code="not-divisible",
            )
        each = rest // middle if middle else 0
        head = () if first is None else (first,)
        tail = () if last is None else (last,)
        return head + (each,) * middle + tail

    @property
    def num_microbatches(self) -> int | None:
        """Micro-batches per step per pipeline, ``global_batch / (dp × micro_batch)`` (``None`` if unknown).

        Examples:
            >>> Layout(dp=4, micro_batch=2, global_batch=64).num_microbatches
            8
        """
        if self.global_batch is None:
            return None
        return self.global_batch // (self.dp * self.micro_batch)

    @property
    def effective_zero_stage(self) -> int:
        """The ZeRO stage in force: at least 1 with the distributed optimizer.

        Examples:
            >>> Layout(distributed_optimizer=True).effective_zero_stage
            1
        """
        return max(self.zero_stage, 1) if self.distributed_optimizer else self.zero_stage

    @property
    def zero_ranks(self) -> int:
        """Ranks the ZeRO-sharded states are split over: ``dp × cp`` (or ``dp`` without ``zero_over_cp``).

        Examples:
            >>> Layout(dp=4, cp=2).zero_ranks, Layout(dp=4, cp=2, zero_over_cp=False).zero_ranks
            (8, 4)
        """
        return self.dp * self.cp if self.zero_over_cp else self.dp


def check_layout(arch: Architecture, layout: Layout) -> None:
    """Raise unless ``layout`` can run ``arch``: every divisibility rule the frameworks enforce.

    Rules (Megatron-LM's argument checks; Narayanan et al. 2021 Sec. 2.2.2 for interleaving):
    ``tp`` divides the attention heads, the KV heads (not under latent attention) and the MLP
    widths; ``pp`` divides the layers (``pp × interleave`` when interleaved); ``ep`` is 1 for a
    dense model, divides the experts and divides ``dp × cp``; the sequence rules (``cp``, ``2 × cp``,
    ``tp`` under sequence parallelism) and the batch and GPU-count rules are checked when the
    [`Layout`][calc.memory.layout.Layout] is built.

    Args:
        arch: The model.
        layout: The layout.

    Raises:
        CalcError: Naming the field and the rule that failed (code ``not-divisible`` or ``unsupported``).

    Examples:
        >>> from calc.models.presets import preset
        >>> check_layout(preset("llama3-8b"), Layout(tp=16))
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: tp must divide the KV heads (kv_heads=8) (got 16)
    """
    t = layout.tp
    if arch.num_heads % t:
        raise CalcError("tp", f"must divide the attention heads (heads={arch.num_heads})", t, code="not-divisible")
    if not arch.uses_mla and arch.num_kv_heads % t:
        raise CalcError("tp", f"must divide the KV heads (kv_heads={arch.num_kv_heads})", t, code="not-divisible")
    if arch.num_moe_layers < arch.num_layers and arch.intermediate_size % t:
        raise CalcError(
            "tp", f"must divide the MLP width (intermediate_size={arch.intermediate_size})", t, code="not-divisible"
        )
    if arch.is_moe and arch.moe_intermediate_size % t:
        raise CalcError(
            "tp",
            f"must divide the expert MLP width (moe_intermediate_size={arch.moe_intermediate_size})",
            t,
            code="not-divisible",
        )
    uneven = layout.pipeline_layers is not None or (
        layout.decoder_first_pipeline_num_layers is not None or layout.decoder_last_pipeline_num_layers is not None
    )
    check_parallelism(
        tp=layout.tp,
        pp=layout.pp,
        dp=layout.dp,
        cp=layout.cp,
        virtual_stages=layout.interleave,
        layers=None if uneven else arch.num_layers,
        hidden=arch.hidden_size,
        names=_LAYOUT_NAMES,
    )
    layout.stage_layer_counts(arch.num_layers)  # raises when the given counts do not fit the model
    e = layout.ep
    if e > 1:
        if not arch.is_moe:
            raise CalcError("ep", "must be 1 for a dense model (num_experts=0)", e, code="unsupported")
        if arch.num_experts % e:
            raise CalcError("ep", f"must divide the experts (experts={arch.num_experts})", e, code="not-divisible")
        if (layout.dp * layout.cp) % e:
            raise CalcError(
                "ep",
                f"must divide dp × cp (={layout.dp * layout.cp}); expert parallelism reuses "
                "the data- and context-parallel ranks",
                e,
                code="not-divisible",
            )


def stage_layers(
    num_layers: int, pp: int, interleave: int, stage: int, counts: tuple[int, ...] | None = None
) -> list[int]:
    """Indices of the transformer layers pipeline stage ``stage`` holds.

    Plain 1F1B gives each stage one contiguous block of ``L/p`` layers (or of ``counts[stage]``
    layers when the stages are uneven, [`Layout.stage_layer_counts`][calc.memory.layout.Layout.stage_layer_counts]);
    interleaved, the layers are cut into ``p × v`` chunks and stage ``k`` holds chunks ``k, k + p,
    k + 2p...`` (Narayanan et al. 2021, Sec. 2.2.2).

    Examples:
        >>> stage_layers(8, 2, 1, 0), stage_layers(8, 2, 2, 0), stage_layers(8, 2, 2, 1)
        ([0, 1, 2, 3], [0, 1, 4, 5], [2, 3, 6, 7])
        >>> stage_layers(10, 3, 1, 1, counts=(3, 4, 3))
        [3, 4, 5, 6]
    """
    if counts is not None and interleave == 1:
        start = sum(counts[:stage])
        return list(range(start, start + counts[stage]))
    chunk = num_layers // (pp * interleave)
    return [(c * pp + stage) * chunk + j for c in range(interleave) for j in range(chunk)]


@dataclass(frozen=True)
class LayoutMemory:
    """What one GPU of a pipeline stage holds during training, in bytes (and a few counts).

    Attributes:
        stage: The pipeline stage (0 to ``pp - 1``) these numbers are for.
        layers: Transformer layers the stage holds.
        params: Parameters the GPU holds a copy or shard of before ZeRO sharding (its stage's
            parameters after tensor and expert parallelism).
        weights: Working weights on the GPU.
        gradients: Gradients on the GPU.
        master: fp32 master weights on the GPU.
        momentum: First Adam moment on the GPU.
        variance: Second Adam moment on the GPU.
        activations: Activations of the stage's layers for the in-flight micro-batches, plus the
            embedding dropout mask on stage 0.
        logits: Output-layer activations (last stage only): final-norm input, output-projection input,
            fp32 logits for the loss.
        cpu_offload: Bytes this GPU's rank keeps in CPU memory (offloaded states); not in ``total``.
        in_flight: Micro-batch chunks in flight on the stage (a count).
        num_microbatches: Micro-batches per step per pipeline (0 when the layout does not say).
        saved_activations: Every byte saved for backward on the GPU under the layout's
            ``implementation``: its layers for the in-flight micro-batches, the embedding side
            (token ids, positions, dropout mask), the final norm, the output layer's input and the
            loss's fp32 logits (``activations + logits``).
    """

    stage: int
    layers: int
    params: int
    weights: int
    gradients: int
    master: int
    momentum: int
    variance: int
    activations: int
    logits: int
    cpu_offload: int
    in_flight: int
    num_microbatches: int
    saved_activations: int = 0

    @property
    def model_state(self) -> int:
        """Model-state bytes on the GPU (weights, gradients, master, both moments).

        Examples:
            >>> from calc.models.presets import preset
            >>> layout_memory(preset("gpt2"), Layout(seq_len=1024)).model_state
            1991036928
        """
        return sum(getattr(self, name) for name in COMPONENTS)

    @property
    def total(self) -> int:
        """All bytes on the GPU: model states, activations and logits."""
        return self.model_state + self.activations + self.logits

    def as_dict(self) -> dict[str, int]:
        """Fields plus ``model_state`` and ``total`` as a plain ``dict``.

        Examples:
            >>> from calc.models.presets import preset
            >>> d = layout_memory(preset("gpt2"), Layout(seq_len=1024)).as_dict()
            >>> d["total"] == d["model_state"] + d["activations"] + d["logits"]
            True
        """
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["model_state"] = self.model_state
        out["total"] = self.total
        return out


def _stage_params(arch: Architecture, layout: Layout, layers: list[int], stage: int) -> tuple[int, int]:
    """(dense params, routed-expert params) one GPU of ``stage`` holds, after TP and EP."""
    t, p = layout.tp, layout.pp
    split = replicated = experts = 0
    for i in layers:
        replicated += arch.norm_params_per_layer
        split += arch.attention_params_per_layer
        if arch.is_moe_layer(i):
            replicated += arch.router_params_per_layer
            split += arch.shared_expert_params_per_layer
            experts += arch.expert_params_per_layer
        else:
            split += arch.dense_mlp_params
    if stage == 0:
        tokens = arch.vocab_size * arch.hidden_size
        split += tokens  # vocabulary-parallel embedding
        replicated += arch.embedding_params - tokens  # learned positions are not split
    if stage == p - 1:
        replicated += arch.final_norm_params
        if arch.tied_embeddings:
            if p > 1:  # the last stage keeps its own copy of the tied matrix for the output layer
                split += arch.vocab_size * arch.hidden_size
        else:
            split += arch.lm_head_params
    return _ceil_div(split, t) + replicated, _ceil_div(experts, layout.ep * t)


def _layer_kinds(arch: Architecture, layout: Layout) -> dict[bool, LayerActivations]:
    """Per-layer activations for a dense layer and (if any) an MoE layer."""
    common = dict(
        kv_heads=arch.num_kv_heads,
        head_dim=arch.head_dim,
        v_head_dim=arch.v_head_dim,
        mlp=arch.mlp,
        dropout=layout.dropout,
        norm=arch.norm,
        tp=layout.tp,
        sequence_parallel=layout.sequence_parallel,
        cp=layout.cp,
        recompute=layout.recompute,
        flash_attention=layout.flash_attention,
        implementation=layout.implementation,
        qk_norm=arch.qk_norm,
        num_experts=arch.num_experts,
    )
    args = (layout.seq_len, layout.micro_batch, arch.hidden_size, arch.num_heads)
    kinds = {False: layer_activations(*args, ffn_hidden=arch.intermediate_size, **common)}
    if arch.is_moe:
        kinds[True] = layer_activations(
            *args,
            ffn_hidden=arch.moe_intermediate_size,
            experts_per_token=arch.experts_per_token,
            shared_experts=arch.num_shared_experts,
            router_weight_bytes=2 if arch.model_type == "qwen3_moe" else 4,  # HF profiles only
            **common,
        )
    return kinds


def _stage_tensors(arch: Architecture, layout: Layout, layers: list[int], stage: int) -> tuple[list, list]:
    """``(dim0, numel)`` of each tensor one GPU of ``stage`` holds after TP and EP: (dense, routed experts).

    Hugging Face module shapes: ``q/k/v_proj`` ``(heads × head_dim / tp, hidden)``, ``o_proj`` ``(hidden,
    heads × v_head_dim / tp)``, gate/up ``(ffn / tp, hidden)``, down ``(hidden, ffn / tp)``, one set per
    expert, the router ``(experts, hidden)``, the embedding and head ``(vocab / tp, hidden)``, learned
    positions ``(positions, hidden)``; norms and biases as their own 1-D tensors (GPT-2's ``Conv1D`` stores
    its matrices transposed, which this does not distinguish). Latent attention is one
    ``(hidden, ·)`` matrix per layer. What is left over (rounding under ``tp``) is one more 1-D tensor, so
    the totals equal [`stage_memory`][calc.memory.layout.stage_memory]'s parameter counts exactly; if the shapes
    overshoot them (an architecture this sketch does not know), the vectors and then the matrices give way
    to one flat tensor.
    """
    t, h = layout.tp, arch.hidden_size
    mats: tuple[list[tuple[int, int]], list[tuple[int, int]]] = ([], [])
    vecs: tuple[list[tuple[int, int]], list[tuple[int, int]]] = ([], [])

    def norm(dim: int, n: int = 1) -> None:
        vecs[0].extend([(dim, dim)] * (n * (2 if arch.norm == "layernorm" else 1)))

    def mlp(width: int, part: int, bias: bool) -> None:
        w = width // t
        mats[part].extend([(w, w * h)] * (1 if arch.mlp == "gelu" else 2) + [(h, h * w)])
        if bias:
            vecs[part].extend([(w, w)] * (1 if arch.mlp == "gelu" else 2) + [(h, h)])

    for i in layers:
        norm(h, 4 if arch.sandwich_norm else 2)
        if arch.qk_norm:
            norm(arch.head_dim, 2)
        if arch.uses_mla:
            mats[0].append((h, h * (arch.attention_params_per_layer // t // h)))
        else:
            q, kv = arch.num_heads * arch.head_dim // t, arch.num_kv_heads * arch.head_dim // t
            v, o = arch.num_kv_heads * arch.v_head_dim // t, arch.num_heads * arch.v_head_dim // t
            mats[0].extend([(q, q * h), (kv, kv * h), (v, v * h), (h, h * o)])
            if arch.qkv_bias:
                vecs[0].extend([(q, q), (kv, kv), (v, v)])
            if arch.attn_out_bias:
                vecs[0].append((h // t, h // t))
        if arch.is_moe_layer(i):
            mats[0].append((arch.num_experts, arch.num_experts * h))
            for _ in range(arch.num_shared_experts):
                mlp(arch.moe_intermediate_size, 0, arch.expert_bias)
            for _ in range(arch.num_experts // layout.ep):
                mlp(arch.moe_intermediate_size, 1, arch.expert_bias)
        else:
            mlp(arch.intermediate_size, 0, arch.mlp_bias)
    rows = arch.vocab_size // t
    if stage == 0:
        mats[0].append((rows, rows * h))  # the embedding
        if arch.position == "learned":
            mats[0].append((arch.max_position_embeddings, arch.max_position_embeddings * h))
    if stage == layout.pp - 1:
        norm(h)  # the final norm
        if layout.pp > 1 or not arch.tied_embeddings:
            mats[0].append((rows, rows * h))  # the output layer (its own copy when tied across stages)
    out = []
    for want, m, vec in zip(_stage_params(arch, layout, layers, stage), mats, vecs, strict=True):
        for got in (m + vec, list(m), []):
            rest = want - sum(n for _, n in got)
            if rest >= 0:
                out.append(got + ([(rest, rest)] if rest else []))
                break
    return out[0], out[1]


def _state(params: int, ranks: int, stage: int, conv: Convention, shard: int | None = None) -> dict[str, int]:
    """Bytes of each component for ``params`` parameters, sharded over ``ranks`` from ZeRO ``stage`` on.

    ``shard`` is the busiest rank's element count when it is not the even ``ceil(params / ranks)``.
    """
    shard = _ceil_div(params, ranks) if shard is None else shard
    sharded_from = {"master": 1, "momentum": 1, "variance": 1, "gradients": 2, "weights": 3}
    return {name: (shard if stage >= sharded_from[name] else params) * getattr(conv, name) for name in COMPONENTS}


def stage_memory(arch: Architecture, layout: Layout, stage: int = 0) -> LayoutMemory:
    """Memory of one GPU of pipeline stage ``stage``.

    Model states: the stage's dense parameters after tensor parallelism (matrices ``/tp``,
    norms, routers and position embeddings replicated; Megatron-LM's
    ``theoretical_memory_usage.py`` counts the most loaded shard the same way) and its
    routed experts ``/(ep × tp)`` (expert tensor parallelism equal to ``tp``). ZeRO stage
    ``z`` then shards the optimizer states (``z ≥ 1``), gradients (``z ≥ 2``) and weights
    (``z = 3``) over [`zero_ranks`][calc.memory.layout.Layout.zero_ranks] for the dense part and
    ``zero_ranks / ep`` for the experts (their data-parallel group is ``ep`` times smaller),
    each shard ``ceil(params / ranks)`` (ZeRO, Rajbhandari et al. 2020, Sec. 5). Offloaded
    components move to ``cpu_offload``: ZeRO-Offload keeps gradients and optimizer states
    on the CPU and only the 16-bit weights on the GPU (Ren et al. 2021, Sec. 4.1; DeepSpeed's
    estimator, reference numbers Sec. 8, likewise keeps ``2Ψ`` on the GPU).

    Activations: [`layer_activations`][calc.memory.activations.layer_activations] for each of the
    stage's layers (dense or MoE), combined by
    [`stage_activations`][calc.memory.activations.stage_activations] with the in-flight micro-batches.

    Args:
        arch: The model.
        layout: The layout.
        stage: The pipeline stage, from 0 to ``pp - 1``.

    Returns:
        The stage's [`LayoutMemory`][calc.memory.layout.LayoutMemory].

    Raises:
        CalcError: When the layout cannot run the model ([`check_layout`][calc.memory.layout.check_layout])
            or the stage is outside the pipeline.

    Examples:
        >>> from calc.models.presets import preset
        >>> m = stage_memory(preset("megatron-175b"), Layout(tp=8, pp=8, recompute="selective",
        ...                  sequence_parallel=True), stage=7)
        >>> m.in_flight, m.logits > 0
        (1, True)
    """
    check_layout(arch, layout)
    k = parse_positive_int(stage, "stage", minimum=0, maximum=layout.pp - 1)
    return _stage_memory(arch, layout, k, _layer_kinds(arch, layout))


def _stage_memory(arch: Architecture, layout: Layout, k: int, kinds: dict[bool, LayerActivations]) -> LayoutMemory:
    """[`stage_memory`][calc.memory.layout.stage_memory] for a checked layout, with the per-layer activations given."""
    counts = layout.stage_layer_counts(arch.num_layers)
    layers = stage_layers(arch.num_layers, layout.pp, layout.interleave, k, counts)
    dense, experts = _stage_params(arch, layout, layers, k)
    conv = CONVENTIONS[layout.convention]
    zstage = layout.effective_zero_stage
    ranks = layout.zero_ranks
    expert_ranks = max(1, ranks // layout.ep)
    dense_shard = expert_shard = None
    if layout.shard != "even" and zstage >= 1:
        dense_tensors, expert_tensors = _stage_tensors(arch, layout, layers, k)
        dense_shard = busiest_shard(dense_tensors, ranks, layout.shard)
        expert_shard = busiest_shard(expert_tensors, expert_ranks, layout.shard)
    gpu = _state(dense, ranks, zstage, conv, dense_shard)
    if experts:
        for name, value in _state(experts, expert_ranks, zstage, conv, expert_shard).items():
            gpu[name] += value
    offloaded = set()
    if layout.offload_optimizer:
        offloaded |= {"gradients", "master", "momentum", "variance"}
    if layout.offload_params:
        offloaded.add("weights")
    cpu = sum(gpu[name] for name in offloaded)
    for name in offloaded:
        gpu[name] = 0
    per_layer = [kinds[arch.is_moe_layer(i)].total for i in layers]
    acts = stage_activations(
        per_layer,
        num_layers=len(layers) * layout.pp,  # only the stage's own layers count; this makes any split even
        seq_len=layout.seq_len,
        micro_batch=layout.micro_batch,
        hidden=arch.hidden_size,
        vocab_size=arch.vocab_size,
        pp=layout.pp,
        interleave=layout.interleave,
        num_microbatches=layout.num_microbatches,
        tp=layout.tp,
        sequence_parallel=layout.sequence_parallel,
        cp=layout.cp,
        dropout=layout.dropout,
        stage=k,
    )
    activations = acts.layers + acts.embedding_dropout
    logits = acts.final_norm_input + acts.output_input + acts.logits
    if layout.implementation != "megatron":
        activations, logits = _hf_extras(arch, layout, acts.layers, acts.in_flight, k)
    return LayoutMemory(
        stage=k,
        layers=len(layers),
        params=dense + experts,
        **gpu,
        activations=activations,
        logits=logits,
        cpu_offload=cpu,
        in_flight=acts.in_flight,
        num_microbatches=layout.num_microbatches or 0,
        saved_activations=activations + logits,
    )


def _hf_extras(arch: Architecture, layout: Layout, layer_bytes: int, in_flight: int, k: int) -> tuple[int, int]:
    """(activations, logits) under a Hugging Face implementation: the layers plus the embedding side on
    stage 0 (per in-flight micro-batch), the final norm, output input and loss on the last stage
    (``calc.memory.activation_profiles.hf_model_terms``)."""
    terms = hf_model_terms(
        tokens=layout.seq_len * layout.micro_batch,
        seq_len=layout.seq_len,
        hidden=arch.hidden_size,
        head_dim=arch.head_dim,
        vocab_size=arch.vocab_size,
        norm=arch.norm,
        position=arch.position,
        dropout=layout.dropout,
    )
    first = terms["embedding"] * Fraction(in_flight, layout.interleave) if k == 0 else 0
    last = terms["final_norm"] + terms["output_input"] + terms["loss"] if k == layout.pp - 1 else 0
    return layer_bytes + math.ceil(first), math.ceil(last)


def layout_memory(arch: Architecture, layout: Layout) -> LayoutMemory:
    """Memory of the most loaded GPU: every pipeline stage evaluated, the largest ``total`` kept.

    Ties go to the earlier stage, so a pipeline whose stages weigh the same reports
    stage 0 (Korthikanti et al. 2022, Sec. 4.2.3: the first stage holds the embedding
    and ``p`` micro-batches in flight).

    Args:
        arch: The model.
        layout: The layout.

    Returns:
        The [`LayoutMemory`][calc.memory.layout.LayoutMemory] of the heaviest stage.

    Raises:
        CalcError: When the layout cannot run the model ([`check_layout`][calc.memory.layout.check_layout]).

    Examples:
        >>> from calc.models.presets import preset
        >>> from calc.units import format_bytes
        >>> m = layout_memory(preset("llama3-8b"), Layout(dp=8, zero_stage=1, seq_len=8192,
        ...                   flash_attention=True, dropout=False, recompute="selective"))
        >>> m.stage, format_bytes(m.model_state), format_bytes(m.activations + m.logits)
        (0, '44.2 GB', '40.8 GB')
    """
    best = None
    for m in layout_stages(arch, layout):
        if best is None or m.total > best.total:
            best = m
    assert best is not None  # pp >= 1
    return best


def layout_stages(arch: Architecture, layout: Layout) -> tuple[LayoutMemory, ...]:
    """Memory of one GPU of every pipeline stage, first to last.

    Args:
        arch: The model.
        layout: The layout.

    Returns:
        One [`LayoutMemory`][calc.memory.layout.LayoutMemory] per stage;
        [`layout_memory`][calc.memory.layout.layout_memory] is the one with the largest ``total``.

    Raises:
        CalcError: When the layout cannot run the model ([`check_layout`][calc.memory.layout.check_layout]).

    Examples:
        >>> from calc.models.presets import preset
        >>> stages = layout_stages(preset("llama3.1-405b"), Layout(tp=8, pp=16, seq_len=8192))
        >>> [m.layers for m in stages][:3], stages[-1].layers
        ([7, 8, 8], 7)
    """
    check_layout(arch, layout)
    kinds = _layer_kinds(arch, layout)
    return tuple(_stage_memory(arch, layout, k, kinds) for k in range(layout.pp))
