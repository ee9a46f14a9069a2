"""Fine-tuning memory: a frozen base with LoRA or QLoRA adapters, against full fine-tuning.

A **frozen** parameter needs no gradient and no optimizer state: only its working copy stays, in
bf16 (2 bytes), or 4-bit NormalFloat (NF4) with its quantization constants under QLoRA. The
**adapters** are trained like any parameter and carry the full mixed-precision Adam state of a
convention of [`calc.memory.model_state`][calc.memory.model_state] (16 bytes per parameter by default).

* **LoRA** (Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models",
  arXiv:2106.09685, Sec. 4.1) adds to a frozen ``W`` of shape ``d_out × d_in`` the product
  ``B·A`` with ``A`` of shape ``r × d_in`` and ``B`` of shape ``d_out × r``: ``r·(d_in + d_out)``
  trainable parameters per adapted matrix.
* **QLoRA** (Dettmers et al. 2023, "QLoRA: Efficient Finetuning of Quantized LLMs",
  arXiv:2305.14314, Sec. 3) stores the frozen linear weights of the transformer layers in NF4,
  4 bits each, with one absmax constant per block of 64 weights; *double quantization* stores
  those constants in 8 bits, with one fp32 constant per block of 256 of them: "reduces the memory
  footprint from 32/64 = 0.5 bits, to 8/64 + 32/(64·256) = 0.127 bits" per parameter.
  bitsandbytes (``functional.quantize_4bit``, ``compress_statistics=True``) subtracts the mean of
  the constants first and keeps it, one fp32 offset per tensor; counted here. The embedding, the
  output layer, norms and biases stay in bf16 (bitsandbytes' ``Linear4bit`` replaces the linear
  layers of the blocks; PEFT and the QLoRA recipe leave ``lm_head`` unquantized). In an MoE layer each
  routed and shared expert's matrices are quantized, one NF4 tensor per matrix per expert (as for the
  per-expert ``nn.Linear`` modules of HF's Mixtral and DeepSeek-V3); the router (``h × E``, a bare
  parameter in DeepSeek-V3) is kept in bf16: a choice, and a tiny share of an MoE model's parameters.

Counted per model (divide by data-parallel replicas yourself: nothing is sharded here). Not
modelled: activations (a frozen layer still saves its inputs for the input gradient the adapters
below it need, so they are about those of full fine-tuning, plus each adapter's ``r``-wide
intermediate), the dequantized bf16 copy of one layer's weights that QLoRA's matmuls materialise
for a moment, paged optimizer states (QLoRA Sec. 3), and fused expert tensors (transformers 5 stores an MoE
layer's experts as one 3-D parameter, which neither ``nn.Linear`` adapters nor ``Linear4bit`` reach: counted here
per expert, as the per-expert modules are).
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.errors import CalcError
from calc.memory.model_state import CONVENTIONS
from calc.models.architecture import Architecture
from calc.units import parse_positive_int

__all__ = [
    "FINETUNE_METHODS",
    "LORA_TARGETS",
    "NF4_BLOCK",
    "NF4_SCALE_BLOCK",
    "FinetuneMemory",
    "NF4Bytes",
    "finetune_memory",
    "layer_linears",
    "linear_shapes",
    "lora_params",
    "nf4_bytes",
]

NF4_BLOCK = 64
"""Weights per NF4 absmax constant: QLoRA's block size of 64 (Dettmers et al. 2023, Sec. 3, "blocksize of 64")."""

NF4_SCALE_BLOCK = 256
"""Absmax constants per fp32 second-level constant under double quantization (Dettmers et al. 2023, Sec. 3:
"8-bit Floats with a blocksize of 256")."""

FINETUNE_METHODS: tuple[str, ...] = ("full", "lora", "qlora")
"""What [`finetune_memory`][calc.memory.finetune.finetune_memory] prices: every parameter trained, a bf16 frozen
base with LoRA adapters, or an NF4 frozen base with LoRA adapters (QLoRA)."""

LORA_TARGETS: dict[str, tuple[str, ...]] = {
    "attention": ("q", "k", "v", "o", "q_a", "q_b", "kv_a", "kv_b"),
    "qv": ("q", "v", "q_b", "kv_b"),
    "all-linear": (
        *("q", "k", "v", "o", "gate", "up", "down", "q_a", "q_b", "kv_a", "kv_b"),
        *("expert_gate", "expert_up", "expert_down", "shared_gate", "shared_up", "shared_down"),
    ),
}
"""Which linear layers of each block get adapters (names of [`layer_linears`][calc.memory.finetune.layer_linears]).

LoRA's paper adapts ``W_q`` and ``W_v`` (Hu et al. 2021, Sec. 7.1); QLoRA adapts "all linear transformer block
layers" (Dettmers et al. 2023, Sec. 4). Under latent attention (MLA) ``attention`` is PEFT's usual set
``q_a_proj``, ``q_b_proj`` (or ``q_proj`` without a query latent), ``kv_a_proj_with_mqa``, ``kv_b_proj`` and
``o_proj``; ``qv`` is the two up-projections that make the per-head queries and values, ``q_b`` (or ``q``) and
``kv_b``. ``all-linear`` adds every MLP matrix, each routed and shared expert's ``gate``, ``up`` and ``down``
included, but not the MoE router: PEFT's ``all-linear`` (``peft.tuners.tuners_utils``,
``_maybe_include_all_linear_layers``) takes every ``nn.Linear`` except the output layer, so it would adapt a
router built as an ``nn.Linear`` (Mixtral's ``gate`` in transformers 4.x) but not DeepSeek-V3's
``DeepseekV3TopkRouter``, a bare weight parameter; we leave every router frozen and unadapted, for one rule
across models (its ``r·(h + E)`` adapter per layer is a small share of the expert adapters)."""


def layer_linears(arch: Architecture, layer: int) -> dict[str, tuple[int, int, int]]:
    """``(d_in, d_out, copies)`` of each linear weight of block ``layer`` (no biases).

    Attention: ``q`` (h → n_h·d), ``k`` and ``v`` (h → n_kv·d), ``o`` (n_h·d_v → h); under latent attention
    (DeepSeek-V2, arXiv:2405.04434, Sec. 2.1) ``q_a`` (h → r_q) and ``q_b`` (r_q → n_h·(d_nope + d_rope)), or
    ``q`` without a query latent, ``kv_a`` (h → r_kv + d_rope), ``kv_b`` (r_kv → n_h·(d_nope + d_v)) and ``o``.
    A dense MLP has ``gate`` and ``up`` (h → f) and ``down`` (f → h), a GeLU MLP no ``gate``. An MoE layer has
    instead a ``router`` (h → E), ``E`` copies of ``expert_gate``, ``expert_up`` and ``expert_down`` (width
    ``moe_intermediate_size``), and with shared experts one ``shared_*`` MLP of their summed width (HF's
    ``DeepseekV3MoE.shared_experts``). The weights sum to the layer's parameters less norms, biases and sinks.

    Examples:
        >>> from calc.models.presets import preset
        >>> v3 = preset("deepseek-v3")
        >>> layer_linears(v3, 3)["expert_down"], layer_linears(v3, 3)["kv_b"]
        ((2048, 7168, 256), (512, 32768, 1))
        >>> "router" in layer_linears(v3, 0)  # the first three layers are dense
        False
    """
    h, nh = arch.hidden_size, arch.num_heads
    if arch.uses_mla:
        qk = arch.qk_nope_head_dim + arch.qk_rope_head_dim
        r_q, r_kv = arch.q_lora_rank, arch.kv_lora_rank
        q = {"q_a": (h, r_q, 1), "q_b": (r_q, nh * qk, 1)} if r_q else {"q": (h, nh * qk, 1)}
        kv = {
            "kv_a": (h, r_kv + arch.qk_rope_head_dim, 1),
            "kv_b": (r_kv, nh * (arch.qk_nope_head_dim + arch.v_head_dim), 1),
        }
        shapes = {**q, **kv}
    else:
        kv_in = arch.num_kv_heads * arch.head_dim
        shapes = {"q": (h, nh * arch.head_dim, 1), "k": (h, kv_in, 1), "v": (h, arch.num_kv_heads * arch.v_head_dim, 1)}
    shapes["o"] = (nh * arch.v_head_dim, h, 1)
    mlps = [("", arch.intermediate_size, 1)]
    if arch.is_moe_layer(layer):
        shapes["router"] = (h, arch.num_experts, 1)
        mlps = [("expert_", arch.moe_intermediate_size, arch.num_experts)]
        if arch.num_shared_experts:
            mlps.append(("shared_", arch.num_shared_experts * arch.moe_intermediate_size, 1))
    for prefix, f, copies in mlps:
        if arch.mlp != "gelu":
            shapes[prefix + "gate"] = (h, f, copies)
        shapes[prefix + "up"] = (h, f, copies)
        shapes[prefix + "down"] = (f, h, copies)
    return shapes


def linear_shapes(arch: Architecture, layer: int = 0) -> dict[str, tuple[int, int]]:
    """``(d_in, d_out)`` of each linear weight of block ``layer`` (no biases; see
    [`layer_linears`][calc.memory.finetune.layer_linears], which also counts an MoE layer's expert copies).

    Examples:
        >>> from calc.models.presets import preset
        >>> linear_shapes(preset("llama2-7b"))["down"]
        (11008, 4096)
        >>> sorted(linear_shapes(preset("gpt2")))
        ['down', 'k', 'o', 'q', 'up', 'v']
        >>> sorted(linear_shapes(preset("mixtral-8x7b")))
        ['expert_down', 'expert_gate', 'expert_up', 'k', 'o', 'q', 'router', 'v']
    """
    return {name: (d_in, d_out) for name, (d_in, d_out, _) in layer_linears(arch, layer).items()}


def _quantized(arch: Architecture) -> list[int]:
    """Element counts of the NF4 tensors: every linear weight of every block, one per expert, the router kept."""
    sizes = []
    for i in range(arch.num_layers):
        for name, (d_in, d_out, copies) in layer_linears(arch, i).items():
            if name != "router":
                sizes += [d_in * d_out] * copies
    return sizes


def _targets(targets: str) -> tuple[str, ...]:
    if targets not in LORA_TARGETS:
        msg = f"must be one of {', '.join(LORA_TARGETS)}"
        raise CalcError("targets", msg, targets, code="unknown-name")
    return LORA_TARGETS[targets]


def lora_params(arch: Architecture, rank: int | str, targets: str = "all-linear") -> int:
    """Trainable LoRA parameters of the whole model: ``r·(d_in + d_out)`` per adapted matrix per layer.

    Hu et al. 2021, Sec. 4.1 (``A ∈ R^{r×k}``, ``B ∈ R^{d×r}``). A target the block lacks (``gate`` in
    a GeLU MLP, ``k`` under latent attention) is skipped; each routed expert gets its own adapters.

    Examples:
        >>> from calc.models.presets import preset
        >>> lora_params(preset("llama2-7b"), 8, "qv")  # 32 layers x 2 matrices x 8 x (4096 + 4096)
        4194304
        >>> lora_params(preset("mixtral-8x7b"), 8, "qv")  # 32 layers x 8 x ((4096 + 4096) + (4096 + 1024))
        3407872
        >>> lora_params(preset("llama2-7b"), 0)
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: rank must be a whole number of at least 1 (got 0)
    """
    r = parse_positive_int(rank, "rank")
    names = _targets(targets)
    total = 0
    for i in range(arch.num_layers):
        shapes = layer_linears(arch, i)
        total += sum(r * (d_in + d_out) * copies for name, (d_in, d_out, copies) in shapes.items() if name in names)
    return total


@dataclass(frozen=True)
class NF4Bytes:
    """Bytes of a set of weight tensors stored in NF4.

    Attributes:
        params: Weights quantized.
        values_bytes: The 4-bit values, two per byte.
        absmax_bytes: One constant per block of 64: 1 byte (double quantization) or 4 (fp32).
        second_level_bytes: Double quantization's fp32 constant per 256 absmax values and its fp32 offset
            per tensor (0 without double quantization).
    """

    params: int
    values_bytes: int
    absmax_bytes: int
    second_level_bytes: int

    @property
    def total(self) -> int:
        """All bytes of the quantized weights.

        Examples:
            >>> nf4_bytes([64 * 256]).total  # 8192 values + 256 absmax + one fp32 constant + one offset
            8456
        """
        return self.values_bytes + self.absmax_bytes + self.second_level_bytes


def nf4_bytes(tensor_sizes: list[int] | tuple[int, ...], *, double_quant: bool = True) -> NF4Bytes:
    """NF4 storage of tensors of the given element counts (Dettmers et al. 2023, Sec. 3).

    Per tensor of ``n`` weights: ``ceil(n/2)`` bytes of values, ``ceil(n/64)`` absmax constants (1 byte
    each with double quantization, else 4), and with double quantization ``4·ceil(ceil(n/64)/256)`` bytes
    of second-level constants plus a 4-byte offset.

    Examples:
        >>> b = nf4_bytes([4096 * 4096])
        >>> b.values_bytes, b.absmax_bytes, b.second_level_bytes
        (8388608, 262144, 4100)
        >>> round(8 * (b.absmax_bytes + b.second_level_bytes) / b.params, 3)  # the paper's 0.127 bits
        0.127
        >>> round(8 * nf4_bytes([4096 * 4096], double_quant=False).absmax_bytes / b.params, 3)  # 32/64
        0.5
    """
    values = absmax = second = total = 0
    for i, size in enumerate(tensor_sizes):
        n = parse_positive_int(size, f"tensor_sizes[{i}]")
        blocks = -(-n // NF4_BLOCK)
        total += n
        values += -(-n // 2)
        if double_quant:
            absmax += blocks
            second += 4 * -(-blocks // NF4_SCALE_BLOCK) + 4
        else:
            absmax += 4 * blocks
    return NF4Bytes(params=total, values_bytes=values, absmax_bytes=absmax, second_level_bytes=second)


@dataclass(frozen=True)
class FinetuneMemory:
    """Model-state bytes of a fine-tuning run, for the whole model (one replica).

    Attributes:
        method: ``"full"``, ``"lora"`` or ``"qlora"``.
        base_params: Parameters of the base model.
        trainable_params: Parameters trained (all of them for ``full``, the adapters otherwise).
        frozen_bf16_bytes: Frozen parameters kept in bf16, 2 bytes each, no gradient and no optimizer state.
        frozen_nf4: The NF4 part of the frozen base (QLoRA), or ``None``.
        trainable_bytes: The trained parameters' weights, gradients, master copy and moments.
    """

    method: str
    base_params: int
    trainable_params: int
    frozen_bf16_bytes: int
    frozen_nf4: NF4Bytes | None
    trainable_bytes: int

    @property
    def frozen_bytes(self) -> int:
        """Everything the frozen base takes."""
        return self.frozen_bf16_bytes + (self.frozen_nf4.total if self.frozen_nf4 else 0)

    @property
    def total(self) -> int:
        """Frozen base plus trained state, bytes.

        Examples:
            >>> from calc.models.presets import preset
            >>> m = finetune_memory(preset("llama2-7b"), "full")
            >>> m.total == 16 * m.base_params
            True
        """
        return self.frozen_bytes + self.trainable_bytes


def finetune_memory(
    arch: Architecture,
    method: str = "lora",
    *,
    rank: int | str = 16,
    targets: str = "all-linear",
    convention: str = "mixed-adam-16",
    double_quant: bool = True,
) -> FinetuneMemory:
    """Model-state bytes of full fine-tuning, LoRA or QLoRA (see the module docstring for the sources).

    ``full``: every parameter at the convention's bytes (16 for ``mixed-adam-16``). ``lora``: the base
    frozen in bf16 (2 bytes per parameter), the adapters at the convention's bytes. ``qlora``: the blocks'
    linear weights in NF4 ([`nf4_bytes`][calc.memory.finetune.nf4_bytes], one tensor per matrix per layer and per
    expert), the rest of the base (routers included) in bf16, the adapters at the convention's bytes.

    Args:
        arch: Any model: dense or MoE, standard or latent attention.
        method: A name in [`FINETUNE_METHODS`][calc.memory.finetune.FINETUNE_METHODS].
        rank: LoRA rank ``r``.
        targets: A key of [`LORA_TARGETS`][calc.memory.finetune.LORA_TARGETS].
        convention: Bytes per trained parameter, a key of [`CONVENTIONS`][calc.memory.model_state.CONVENTIONS].
        double_quant: QLoRA's double quantization of the absmax constants.

    Raises:
        CalcError: On an unknown method, target set or convention, or a rank below 1.

    Examples:
        >>> from calc.models.presets import preset
        >>> from calc.units import format_bytes
        >>> arch = preset("llama2-7b")
        >>> [format_bytes(finetune_memory(arch, m).total) for m in FINETUNE_METHODS]
        ['108 GB', '14.1 GB', '4.51 GB']
        >>> finetune_memory(arch, "prefix")
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: method must be one of full, lora, qlora (got 'prefix')
    """
    if method not in FINETUNE_METHODS:
        raise CalcError("method", f"must be one of {', '.join(FINETUNE_METHODS)}", method, code="unknown-name")
    if convention not in CONVENTIONS:
        raise CalcError(
            "convention", "must be a key of calc.memory.model_state.CONVENTIONS", convention, code="unknown-name"
        )
    per_param = CONVENTIONS[convention].bytes_per_param
    n = arch.param_count
    if method == "full":
        return FinetuneMemory(method, n, n, 0, None, per_param * n)
    adapters = lora_params(arch, rank, targets)
    nf4 = None
    bf16_params = n
    if method == "qlora":
        nf4 = nf4_bytes(_quantized(arch), double_quant=double_quant)
        bf16_params = n - nf4.params
    return FinetuneMemory(method, n, adapters, 2 * bf16_params, nf4, per_param * adapters)
