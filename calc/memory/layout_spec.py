"""The [`Layout`][calc.memory.layout.Layout] value: how one training step is spread over GPUs, validated once.

A ``Layout`` checks each of its fields when it is built (ranges, names, the GPU count, the rules
[`check_parallelism`][calc.memory.layout.check_parallelism] can apply without the model);
[`check_layout`][calc.memory.layout.check_layout] adds the rules that need the model. The code that reads a
layout afterwards (the stage plan, the per-GPU memory, the overheads, the step time) does not check again.

The public names are re-exported by [`calc.memory.layout`][calc.memory.layout].
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.errors import CalcError
from calc.memory._activation_args import LAYOUT_RECOMPUTE_MODES
from calc.memory.activations import IMPLEMENTATIONS
from calc.memory.layout_rules import _LAYOUT_NAMES, _bool, check_parallelism
from calc.memory.model_state import SHARD_MODES, resolve_convention
from calc.memory.pipeline_split import _FIRST_ALIAS, _LAST_ALIAS, check_stage_fields, split_layers
from calc.memory.stacks import LOSS_KINDS, stack_defaults
from calc.models.architecture import Architecture
from calc.units import parse_positive_int

__all__ = ["Layout", "check_layout"]

_FOLLOWS_OTHER_FIELDS = frozenset({"loss", "reshard_after_forward"})
"""Stack defaults that depend on other fields (``compile``, ``pp``): left ``None`` and read through
[`Layout.loss_kind`][calc.memory.layout.Layout.loss_kind] and
[`Layout.reshards_after_forward`][calc.memory.layout.Layout.reshards_after_forward], so ``dataclasses.replace``
with another ``pp`` or ``compile`` gets the right one."""


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
        recompute: ``"none"``, ``"selective"`` (Megatron's attention core), ``"op"`` (torchtitan's per-op
            policy: the outputs of every other matmul, of attention and of reduce-scatters are saved) or
            ``"full"`` activation recomputation; ``None``: the stack's.
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
        pipeline_layers: Transformer layers on each stage, first to last (``pp`` entries, or ``pp × interleave``,
            one per virtual stage, when interleaved) adding up to the model's layers; ``None``: the default split
            ([`split_layers`][calc.memory.layout.split_layers]: even where it divides, else torchtitan's).
        decoder_first_pipeline_num_layers: Megatron-LM's name of ``first_stage_layers`` (either may be given).
        decoder_last_pipeline_num_layers: Megatron-LM's name of ``last_stage_layers``.
        shard: How ZeRO-sharded states split over the ranks, for the busiest rank
            ([`busiest_shard`][calc.memory.model_state.busiest_shard]): ``"even"`` (``ceil(Ψ/N)``, the ZeRO
            paper's lower bound, the default), ``"fsdp2"`` (every tensor chunked on dim 0 and padded) or
            ``"whole-tensor"`` (ZeroRedundancyOptimizer's greedy assignment of whole tensors).
        implementation: Whose kernels save the activations, a key of
            [`IMPLEMENTATIONS`][calc.memory.activations.IMPLEMENTATIONS]: ``"megatron"`` (the paper's fused
            accounting, the default), ``"hf-eager"`` or ``"hf-sdpa"`` (stock Hugging Face transformers).
        first_stage_layers: Layers on the first stage (Megatron-LM's ``decoder_first_pipeline_num_layers``);
            the stages not given share the rest evenly.
        last_stage_layers: Layers on the last stage (``decoder_last_pipeline_num_layers``), likewise.
        stack: The training stack whose defaults the knobs left ``None`` take, one of
            [`STACKS`][calc.memory.layout.STACKS]: ``"megatron"`` (the default) or ``"torchtitan"``
            (``calc.memory.stacks`` lists each default and its source).
        loss: How the cross-entropy is computed, one of [`LOSS_KINDS`][calc.memory.layout.LOSS_KINDS]:
            ``"fused"`` (Megatron's), ``"stock"`` (``F.cross_entropy`` on fp32 logits), ``"chunked"``, ``"compiled"``.
        loss_chunk_tokens: Tokens per chunk of the ``"chunked"`` loss; ``None``: the micro-batch's tokens in
            torchtitan's 8 chunks ([`chunk_tokens_for`][calc.memory.layout.chunk_tokens_for]).
        reshard_after_forward: FSDP / ZeRO-3 frees each unit's gathered weights after its forward (``True``) or
            keeps the stage unsharded until the backward (``False``, torchtitan under pipeline parallelism,
            which also accumulates unsharded fp32 gradients over the micro-batches).
        compile: ``torch.compile`` on (the loss defaults to ``"compiled"`` under ``"torchtitan"``).
        account_for_embedding_in_pipeline_split: Megatron-Core's flag: the embedding counts as one layer of the
            pipeline split, so the first virtual stage builds one layer fewer
            ([`split_layers`][calc.memory.layout.split_layers]; Llama 3's placement with the loss flag).
        account_for_loss_in_pipeline_split: Likewise for the output layer and loss on the last virtual stage.

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
    zero_stage: int | None = None
    micro_batch: int = 1
    global_batch: int | None = None
    seq_len: int = 2048
    sequence_parallel: bool = False
    recompute: str | None = None
    flash_attention: bool | None = None
    dropout: bool | None = None
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
    shard: str | None = None
    first_stage_layers: int | None = None
    last_stage_layers: int | None = None
    stack: str = "megatron"
    loss: str | None = None
    loss_chunk_tokens: int | None = None
    reshard_after_forward: bool | None = None
    compile: bool = False
    account_for_embedding_in_pipeline_split: bool = False
    account_for_loss_in_pipeline_split: bool = False

    def __post_init__(self) -> None:
        put = object.__setattr__
        self._apply_stack()
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
        if self.recompute not in LAYOUT_RECOMPUTE_MODES:
            modes = ", ".join(LAYOUT_RECOMPUTE_MODES)
            raise CalcError("recompute", f"must be one of {modes}", self.recompute, code="unknown-name")
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
        _check_layout_parallelism(
            self,
            global_batch=self.global_batch,
            micro_batch=self.micro_batch,
            seq_len=self.seq_len,
            sequence_parallel=self.sequence_parallel,
            cp_load_balance=self.cp_load_balance,
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

    def _apply_stack(self) -> None:
        """Give the knobs left ``None`` the stack's defaults ([`stack_defaults`][calc.memory.layout.stack_defaults])."""
        put = object.__setattr__
        _bool(self.compile, "compile")
        pp = parse_positive_int(self.pp, "pp")
        for name, value in stack_defaults(self.stack, pp=pp, compile=self.compile).items():
            if getattr(self, name) is None and name not in _FOLLOWS_OTHER_FIELDS:
                put(self, name, value)
        if self.loss is not None and self.loss not in LOSS_KINDS:
            raise CalcError("loss", f"must be one of {', '.join(LOSS_KINDS)}", self.loss, code="unknown-name")
        if self.reshard_after_forward is not None:
            _bool(self.reshard_after_forward, "reshard_after_forward")
        if self.loss_chunk_tokens is not None:
            put(self, "loss_chunk_tokens", parse_positive_int(self.loss_chunk_tokens, "loss_chunk_tokens"))

    def _check_stage_fields(self) -> None:
        """Validate the uneven-stage fields on their own (the layer total is checked with the model)."""
        check_stage_fields(self)

    def virtual_stage_layer_counts(self, num_layers: int) -> tuple[int, ...]:
        """Transformer layers on each virtual stage (``pp × interleave`` of them; ``pp`` when not interleaved).

        The rules are [`split_layers`][calc.memory.layout.split_layers]'s: ``pipeline_layers`` as given, the
        first/last stage fixed (Megatron-LM), an even split where it divides, else torchtitan's weighted split.

        Raises:
            CalcError: Naming the field whose counts do not add up or do not split evenly.

        Examples:
            >>> Layout(pp=8, interleave=2).virtual_stage_layer_counts(126)  # torchtitan's 405B run
            (7, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 8, 7)
        """
        return self._split(num_layers)[0]

    def placement(self, num_layers: int) -> str:
        """How the layers were placed on the stages, in words (the rule and the counts).

        Examples:
            >>> Layout(pp=16).placement(61)
            'uneven (torchtitan weighted): 3 + 4×14 + 2'
        """
        return self._split(num_layers)[1]

    def _split(self, num_layers: int) -> tuple[tuple[int, ...], str]:
        first_name = "first_stage_layers" if self.decoder_first_pipeline_num_layers is None else _FIRST_ALIAS
        last_name = "last_stage_layers" if self.decoder_last_pipeline_num_layers is None else _LAST_ALIAS
        return split_layers(
            num_layers,
            self.pp * self.interleave,
            first=self.first_stage_layers or self.decoder_first_pipeline_num_layers,
            last=self.last_stage_layers or self.decoder_last_pipeline_num_layers,
            explicit=self.pipeline_layers,
            names=(first_name, last_name),
            slots=(self.account_for_embedding_in_pipeline_split, self.account_for_loss_in_pipeline_split),
        )

    @property
    def pipeline_slots(self) -> int:
        """Pipeline-split slots the embedding and the loss take (0 to 2; Megatron-Core's ``account_for_*`` flags)."""
        return self.account_for_embedding_in_pipeline_split + self.account_for_loss_in_pipeline_split

    def stage_layer_counts(self, num_layers: int) -> tuple[int, ...]:
        """Transformer layers on each pipeline stage, first to last, for a model of ``num_layers`` layers.

        Any ``pp`` from 1 to the layer count: the sum over each stage's virtual stages
        ([`virtual_stage_layer_counts`][calc.memory.layout.Layout.virtual_stage_layer_counts]; stage ``k``
        holds virtual stages ``k, k + pp, ...``), as [`placement`][calc.memory.layout.Layout.placement] says.

        Raises:
            CalcError: Naming the field whose counts do not add up or do not split evenly.

        Examples:
            >>> Layout(pp=16).stage_layer_counts(126)[:3], Layout(pp=16).stage_layer_counts(126)[-1]
            ((7, 8, 8), 7)
            >>> Layout(pp=4, first_stage_layers=5).stage_layer_counts(32)
            (5, 9, 9, 9)
            >>> Layout(pp=3, pipeline_layers=(10, 12, 10)).stage_layer_counts(32)
            (10, 12, 10)
            >>> Layout(pp=16).stage_layer_counts(61)  # DeepSeek-V3's 61 layers on 16 stages
            (3, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 4, 2)
            >>> Layout(pp=3, pipeline_layers=(10, 12, 11)).stage_layer_counts(32)  # doctest: +ELLIPSIS
            Traceback (most recent call last):
            ...
            calc.errors.CalcError: pipeline_layers must add up to the model's layers (layers=32, sum=33) ...
        """
        virtual = self.virtual_stage_layer_counts(num_layers)
        p = self.pp
        return tuple(sum(virtual[k::p]) for k in range(p))

    @property
    def loss_kind(self) -> str:
        """The loss in use: ``loss``, or the stack's default (under ``"torchtitan"``, ``"compiled"`` with ``compile``).

        Examples:
            >>> titan = Layout(stack="torchtitan")
            >>> Layout().loss_kind, titan.loss_kind, Layout(stack="torchtitan", compile=True).loss_kind
            ('fused', 'stock', 'compiled')
        """
        return self.loss or str(stack_defaults(self.stack, pp=self.pp, compile=self.compile)["loss"])

    @property
    def reshards_after_forward(self) -> bool:
        """Whether FSDP / ZeRO-3 reshards after forward: ``reshard_after_forward``, or the stack's default
        (torchtitan: not under pipeline parallelism).

        Examples:
            >>> titan = Layout(stack="torchtitan")
            >>> Layout(stack="torchtitan", pp=2).reshards_after_forward, titan.reshards_after_forward
            (False, True)
        """
        if self.reshard_after_forward is not None:
            return self.reshard_after_forward
        return bool(stack_defaults(self.stack, pp=self.pp, compile=self.compile)["reshard_after_forward"])

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
    _check_layout_parallelism(layout, layers=arch.num_layers + layout.pipeline_slots, hidden=arch.hidden_size)
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


def _check_layout_parallelism(layout: Layout, **checks: object) -> None:
    """[`check_parallelism`][calc.memory.layout.check_parallelism] on ``layout``'s degrees plus ``checks``."""
    check_parallelism(
        tp=layout.tp,
        pp=layout.pp,
        dp=layout.dp,
        cp=layout.cp,
        virtual_stages=layout.interleave,
        names=_LAYOUT_NAMES,
        **checks,
    )
