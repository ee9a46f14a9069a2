"""Per-layer weight and byte counts behind [`step_time`][calc.timing.steptime.step_time]'s compute and overlap:
the matmuls torchtitan's per-op checkpointing re-runs, the element-wise kernels' HBM traffic, the
column-parallel linears under whose weight gradients Megatron-LM hides the backward TP collectives, and the
row-parallel ones that Transformer Engine's userbuffers overlap too.
"""

from __future__ import annotations

from calc.models.architecture import Architecture

__all__: list[str] = []


def _op_recomputed_weights(arch: Architecture, *, moe: bool = False) -> int:
    """Weights of the matmuls torchtitan's per-op selective checkpointing re-runs in one layer's backward.

    ``torchtitan/distributed/activation_checkpoint.py``: the policy saves the outputs of ``_op_sac_save_list``
    (``aten.mm``, the SDPA kernels, ``reduce_scatter_tensor``) except every second ``mm`` of the layer's forward
    (``mm_count % 2 == 0``) and re-runs the rest: of ``wq, wk, wv, wo, w1, w3, w2``, ``wk`` (``h × g·d``), ``wo``
    (``a·d_v × h``) and SwiGLU's ``w3`` (``h × f`` per expert a token uses), as ``calc.memory.activation_layer``
    counts what is saved. The attention kernel is saved (its core is not re-run); the all-gathers re-run under
    tensor parallelism are not charged (``calc.parallel.comm`` counts whole forward passes).

    Examples:
        >>> from calc.models.presets import preset
        >>> _op_recomputed_weights(preset("llama3-8b"))  # wk 4096×1024 + wo 4096² + w3 4096×14336
        79691776
    """
    h = arch.hidden_size
    attention = h * arch.num_kv_heads * arch.head_dim + arch.num_heads * arch.v_head_dim * h
    if arch.mlp != "swiglu":
        return attention
    if moe:
        return attention + h * arch.moe_intermediate_size * (arch.experts_per_token + arch.num_shared_experts)
    return attention + h * arch.intermediate_size


def _elementwise_bytes(s: int, b: int, h: int, a: int, t: int, cp: int, sp: bool, flash: bool) -> int:
    """Stored activation bytes of one layer on one GPU, Korthikanti et al. 2022 Table 2: ``sbh(10 + 24/t +
    5as/(ht))`` with TP, ``sbh(34/t + 5as/(ht))`` with TP and SP; FlashAttention drops the ``5as/h`` scores
    term; context parallelism divides by ``cp``. Used as the element-wise kernels' HBM traffic per pass."""
    scores = 0 if flash else 5 * a * s
    per_token = (34 * h + scores) // t if sp else 10 * h + (24 * h + scores) // t
    return s * b * per_token // cp


def _column_weights(arch: Architecture, *, moe: bool = False) -> tuple[int, int]:
    """Weights of one layer's two column-parallel linears: the attention's input projections (QKV, or latent
    attention's down and up projections: every attention weight but the output projection) and the MLP's first
    matmul (SwiGLU's gate and up, ``2/3`` of the MLP; GeLU's up, ``1/2``; for an MoE layer the shared and ``top_k``
    routed experts a token uses). Megatron-LM's ``ColumnParallelLinear`` layers, whose backward overlaps the input
    gradient's TP collective with this weight gradient (``calc.timing.overlap``).

    Examples:
        >>> from calc.models.presets import preset
        >>> _column_weights(preset("llama3-8b"))  # QKV 4096 x (4096 + 2 x 1024); gate + up 2 x 4096 x 14336
        (25165824, 117440512)
    """
    h = arch.hidden_size
    qkv = arch.attention_params_per_layer - arch.num_heads * arch.v_head_dim * h
    if moe:
        mlp = (arch.num_shared_experts + arch.experts_per_token) * arch.params_per_expert
    else:
        mlp = arch.dense_mlp_params
    first = mlp * 2 // 3 if arch.mlp == "swiglu" else mlp // 2
    return qkv, first


def _row_weights(arch: Architecture, *, moe: bool = False) -> tuple[int, int]:
    """Weights of one layer's two row-parallel linears: the attention's output projection and the MLP's last
    matmul (what `_column_weights` leaves of the MLP). Megatron-LM's ``RowParallelLinear`` layers, whose forward
    reduce-scatter and backward all-gather Transformer Engine's userbuffers overlap with their GEMMs.

    Examples:
        >>> from calc.models.presets import preset
        >>> _row_weights(preset("llama3-8b"))  # wo 4096 x 4096; w2 14336 x 4096
        (16777216, 58720256)
    """
    proj = arch.num_heads * arch.v_head_dim * arch.hidden_size
    if moe:
        mlp = (arch.num_shared_experts + arch.experts_per_token) * arch.params_per_expert
    else:
        mlp = arch.dense_mlp_params
    return proj, mlp - _column_weights(arch, moe=moe)[1]
