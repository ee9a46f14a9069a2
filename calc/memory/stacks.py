"""Training stacks: the defaults each framework runs with, and the loss's peak under each implementation.

A [`Layout`][calc.memory.layout.Layout]'s ``stack`` sets the defaults of the knobs below; each knob can also be
set alone, and a knob given explicitly wins. Three stacks:

* ``"megatron"`` (Megatron-LM / Megatron-Core, the default and the engine's accounting before stacks existed):
  no recomputation unless asked, dropout on, unfused attention unless ``flash_attention``, plain data
  parallelism (``zero_stage=0``), the vocabulary-parallel fused cross-entropy (``loss="fused"``);
* ``"torchtitan"`` (PyTorch-native FSDP2, ``pytorch/torchtitan``): per-op selective checkpointing
  (``recompute="op"``, torchtitan's ``activation_checkpoint.mode = "selective"`` with
  ``selective_ac_option = "op"`` as its Llama 3 benchmark configs set it), SDPA flash attention, no dropout, FSDP
  (``zero_stage=3``, each tensor chunked on dim 0: ``shard="fsdp2"``), the stock
  ``F.cross_entropy(pred.float(), labels)`` of ``torchtitan/components/loss.py`` (``loss="stock"``, or
  ``"compiled"`` under ``compile``), and ``reshard_after_forward`` off under pipeline parallelism
  (torchtitan's ``fsdp_reshard_after_forward = "default"``: resharded, except with PP).
* ``"deepspeed"`` (DeepSpeed's ZeRO engine around a Hugging Face ``transformers`` model, ``deepspeedai/DeepSpeed``
  at ``edaa722``): ZeRO as configured, whose default is off (``DeepSpeedZeroConfig.stage = 0`` in
  ``deepspeed/runtime/zero/config.py``); no recomputation (DeepSpeed's ``activation_checkpointing`` and
  ``transformers``' ``gradient_checkpointing`` are off by default); SDPA attention (``transformers``' default
  ``attn_implementation``), no dropout (Llama-family configs set ``attention_dropout = 0.0``); the flat parameter
  partition split evenly (``shard="even"``); the stock loss (``transformers``' ``ForCausalLMLoss`` upcasts the
  logits with ``logits.float()``); ZeRO-3 releases each module's gathered parameters after use. ZeRO-1/2/3 also
  allocate a contiguous gradient bucket of ``reduce_bucket_size`` elements
  ([`DEEPSPEED_REDUCE_BUCKET`][calc.memory.stacks.DEEPSPEED_REDUCE_BUCKET]), a named overhead line.

The loss peak per logit (``T`` tokens per context-parallel rank times the vocabulary, per tensor-parallel rank),
[`loss_bytes`][calc.memory.layout.loss_bytes]:

* ``"fused"``: Megatron-LM's ``vocab_parallel_cross_entropy`` keeps the fp32 logits (4 B, saved in place as the
  softmax) and computes the gradient in place, cast back to the compute dtype (2 B): 6 B;
* ``"stock"``: ``log_softmax`` on fp32-upcast logits saves its fp32 output (4 B); the backward holds the fp32
  gradients of ``nll_loss`` and of ``log_softmax`` with it (4 + 4 B): 12 B at the backward's start;
* ``"chunked"``: torchtitan's ``ChunkedLossWrapper`` (``torchtitan/components/loss.py`` at ``b5bcd76``, the loss of
  its ``llama3_8b`` config): the output layer and the stock loss run on one chunk of ``loss_chunk_tokens`` tokens
  at a time (by default the tokens split in ``num_chunks = 8``), each chunk's backward right after its forward, so
  no logits stay; what stays is the fp32 ``GradAccumulator`` of the final hidden states' gradient (4 B per token
  per hidden unit) until the decoder's backward starts. The peak is one chunk's bf16 logits (2 B) with the stock
  loss's 12 B per logit. LitGPT's ``chunked_cross_entropy`` keeps every chunk's logits until the backward and is
  not this kind (``"stock"`` is nearer it);
* ``"compiled"``: ``torch.compile`` fuses the upcast, ``log_softmax`` and ``nll_loss``: the bf16 logits are saved
  (2 B) with two fp32 values per token (the row maximum and the log of the sum of exponentials, 8 B a token), and
  the fused backward writes the bf16 gradient (2 B) beside one fp32 value per token (4 B a token): 4 B per logit.
  Measured, ``validation/compile.json`` (``python -m validation.compile``), torch 2.13 inductor CPU: exact on every
  shape, to the loss's 4 B scalars. On CUDA inductor emits Triton kernels from the same partitioned graph (the
  partitioner decides what is saved before any kernel is chosen); the per-token terms are the CPU kernels' and were
  not measured on a GPU.

``compile`` also changes what a layer saves when nothing checkpoints it; what the engine's per-layer terms leave
out then is said next to the numbers ([`layer_gaps`][calc.memory.stacks.layer_gaps]).

Examples:
    >>> stack_defaults("torchtitan", pp=8)["reshard_after_forward"], stack_defaults("torchtitan", pp=1)["loss"]
    (False, 'stock')
"""

from __future__ import annotations

from calc.errors import CalcError

__all__ = [
    "DEEPSPEED_REDUCE_BUCKET",
    "DEFAULT_LOSS_CHUNKS",
    "LOSS_KINDS",
    "STACKS",
    "chunk_tokens_for",
    "layer_gaps",
    "loss_bytes",
    "stack_defaults",
]

STACKS: tuple[str, ...] = ("megatron", "torchtitan", "deepspeed")
"""The training stacks a [`Layout`][calc.memory.layout.Layout] can name (``stack``)."""

LOSS_KINDS: tuple[str, ...] = ("fused", "stock", "chunked", "compiled")
"""How the cross-entropy loss is computed (``Layout.loss``); see ``calc.memory.stacks``."""

DEEPSPEED_REDUCE_BUCKET = 500_000_000
"""Elements of DeepSpeed's contiguous gradient bucket (``reduce_bucket_size``, default ``5e8`` in
``deepspeed/runtime/zero/config.py`` at ``edaa722``), allocated whole, whatever the model's size, when
``contiguous_gradients`` (default ``True``) is on: ZeRO-1/2 (``stage_1_and_2.py``, ``setup_buckets``: one buffer in
the 16-bit dtype from the first gradient until the backward ends, a second one only with ``overlap_comm``, off by
default below stage 3) and ZeRO-3 (``stage3.py``: one buffer, kept for the whole run)."""

DEFAULT_LOSS_CHUNKS = 8
"""Chunks of the ``"chunked"`` loss when ``loss_chunk_tokens`` is not given: torchtitan's
``ChunkedLossWrapper.Config.num_chunks`` (``torchtitan/components/loss.py`` at ``b5bcd76``)."""


def chunk_tokens_for(tokens: int, chunk_tokens: int | None) -> int:
    """Tokens in one chunk of the ``"chunked"`` loss: ``chunk_tokens`` when given, else ``tokens`` split in
    ``DEFAULT_LOSS_CHUNKS`` (rounded up), never more than ``tokens``.

    Examples:
        >>> chunk_tokens_for(65536, None), chunk_tokens_for(8192, 512), chunk_tokens_for(100, 4096)
        (8192, 512, 100)
    """
    return min(tokens, chunk_tokens or -(-tokens // DEFAULT_LOSS_CHUNKS))


def stack_defaults(stack: str, *, pp: int, compile: bool = False) -> dict[str, object]:
    """The defaults ``stack`` gives the knobs left unset (``None``) on a layout of ``pp`` pipeline stages.

    Raises:
        CalcError: For an unknown stack (code ``unknown-name``).

    Examples:
        >>> [stack_defaults(s, pp=1)["recompute"] for s in STACKS], stack_defaults("deepspeed", pp=1)["loss"]
        (['none', 'op', 'none'], 'stock')
    """
    if stack not in STACKS:
        raise CalcError("stack", f"must be one of {', '.join(STACKS)}", stack, code="unknown-name")
    titan = stack == "torchtitan"  # each knob: torchtitan's default if titan else Megatron-LM's
    if stack == "deepspeed":
        return {
            "recompute": "none",
            "flash_attention": True,
            "dropout": False,
            "zero_stage": 0,
            "shard": "even",
            "loss": "stock",
            "reshard_after_forward": True,
        }
    return {
        "recompute": "op" if titan else "none",
        "flash_attention": titan,
        "dropout": not titan,
        "zero_stage": 3 if titan else 0,
        "shard": "fsdp2" if titan else "even",
        "loss": ("compiled" if compile else "stock") if titan else "fused",
        "reshard_after_forward": pp == 1 if titan else True,
    }


def loss_bytes(
    loss: str, tokens: int, vocab: int, tp: int, chunk_tokens: int | None, *, hidden: int = 0
) -> tuple[int, int, str]:
    """(saved bytes, backward transient bytes, formula) of the loss on the last stage, per GPU.

    ``tokens`` is the micro-batch's tokens on one context-parallel rank; the vocabulary is split over ``tp``
    (Megatron-LM's vocabulary-parallel output layer); ``hidden`` is the model's hidden size (the ``"chunked"``
    loss's gradient accumulator is ``tokens × hidden``).

    Examples:
        >>> loss_bytes("fused", 10, 100, 1, None)[:2], loss_bytes("stock", 10, 100, 1, None)[:2]
        ((4000, 2000), (4000, 8000))
        >>> loss_bytes("chunked", 10, 100, 1, 5, hidden=8)[:2], loss_bytes("compiled", 10, 100, 1, None)[:2]
        ((320, 7000), (2080, 2040))
    """
    logits = -(-tokens * vocab // tp)
    if loss == "fused":
        return 4 * logits, 2 * logits, "4 B fp32 logits saved + 2 B gradient in the compute dtype, per logit"
    if loss == "stock":
        return 4 * logits, 8 * logits, "4 B fp32 log_softmax output saved + 2 × 4 B fp32 gradients, per logit"
    if loss == "chunked":  # torchtitan ChunkedLossWrapper: forward and backward one chunk at a time
        chunk = -(-chunk_tokens_for(tokens, chunk_tokens) * vocab // tp)
        formula = "4 B fp32 hidden-state gradient per token per hidden unit kept; one chunk's 2 B logits + 12 B loss"
        return 4 * tokens * hidden, 14 * chunk, formula
    if loss == "compiled":  # measured: validation/compile.json (torch 2.13 inductor CPU)
        formula = "2 B logits + 2 × 4 B per token (max, log-sum-exp) saved; 2 B gradient + 4 B per token"
        return 2 * logits + 8 * tokens, 2 * logits + 4 * tokens, formula
    raise CalcError("loss", f"must be one of {', '.join(LOSS_KINDS)}", loss, code="unknown-name")


def layer_gaps(stack: str, *, recompute: str, compile: bool, gqa: bool) -> tuple[str, ...]:
    """What a layer of ``stack`` saves beyond the engine's per-layer terms, in words, for ``not_modelled``.

    Measured, ``validation/compile.json`` (``python -m validation.compile``: a torchtitan Llama block at
    ``6404b93``, bf16, no checkpointing, torch 2.13 on CPU, eager and under ``torch.compile``). Compiled, the block
    saves exactly the engine's terms (``tests/test_compile.py``) plus the two norms' fp32 reciprocal RMS (8 B a
    token) and, under grouped-query attention, K and V at every query head: torchtitan's ``repeat_kv`` runs before
    SDPA, which saves its inputs. Eager, it also keeps the SiLU's output (2 B per token per MLP unit) and the
    RMSNorms' fp32 upcasts (12 B per token per hidden unit more), which inductor fuses away; the CPU build runs
    the composite ``rms_norm``, so on a GPU the norms' share was not measured. Megatron-LM saves what Korthikanti
    et al. count, and a checkpoint (``"op"``, ``"full"``) decides what a layer keeps whether compiled or not: no
    gap then.

    Examples:
        >>> layer_gaps("torchtitan", recompute="op", compile=False, gqa=True)
        ()
        >>> len(layer_gaps("torchtitan", recompute="none", compile=False, gqa=True))
        2
    """
    if stack != "torchtitan" or recompute not in ("none", "selective"):
        return ()
    gaps = []
    if not compile:
        gaps.append(
            "eager PyTorch's SiLU output (2 B per token per MLP unit) and RMSNorm's fp32 upcasts (12 B per token per "
            "hidden unit), which torch.compile fuses away (measured on CPU: validation/compile.json)"
        )
    if gqa and recompute == "none":
        gaps.append("torchtitan's repeat_kv: SDPA saves K and V expanded to every query head, counted at the KV heads")
    return tuple(gaps)
