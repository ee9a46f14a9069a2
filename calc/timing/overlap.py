"""What a step's communication leaves on the critical path: each collective's exposed seconds after the overlap
the frameworks do, each rule a named knob with its default and source.

* **TP** (``tp_overlap``, default 0): the share of the tensor-parallel all-gathers and reduce-scatters hidden
  behind the GEMMs they feed. Megatron-LM's ``--tp-comm-overlap`` (Transformer Engine's userbuffers, off by
  default) and torchtitan's AsyncTP split each GEMM to overlap its collective; Wang et al. 2023
  ("Overlap communication with dependent computation via decomposition", ASPLOS) hide most of it. Pass the
  share you measured.
* **TP, Megatron's backward** (``tp_dgrad_overlap``, default: on under the Megatron stack): in backward, each
  column-parallel linear (the QKV projection and the MLP's first matmul, two per layer) starts the collective of its
  input gradient asynchronously and computes its weight gradient meanwhile: the all-reduce of ``dgrad`` without
  sequence parallelism, its reduce-scatter with it (Megatron-LM
  ``megatron/core/tensor_parallel/layers.py``, ``LinearWithGradAccumulationAndAsyncCommunication``: "the tensor
  parallel all reduce of the input gradients can be done asynchronously with the calculation of the weight
  gradients ... In the case of sequence parallelism, the reduce scatter of the input gradients is done
  asynchronously"; ``ColumnParallelLinear`` sets ``allreduce_dgrad`` whenever ``tp > 1`` without sequence
  parallelism: no flag turns it on). Each such call hides up to its weight-gradient GEMM's time, less the
  ``prefetch_interference`` share of what it hides. The forward's collectives, the row-parallel linears' backward
  all-gathers and the recomputed forward's stay exposed. torchtitan's TP (DTensor) issues them synchronously:
  AsyncTP is ``tp_overlap``.
* **TP, Transformer Engine's userbuffers** (``tp_comm_overlap``, default off, as Megatron-LM's
  ``--tp-comm-overlap``; NVIDIA's NeMo recipes turn it on, ``ub_tp_comm_overlap``): with sequence parallelism
  (Megatron-LM requires it), every TP all-gather and reduce-scatter is split into ``tp`` chunks pipelined with the
  GEMM it feeds or follows (Wang et al. 2023, "Overlap communication with dependent computation via decomposition
  in large deep learning models", ASPLOS; Transformer Engine ``transformer_engine/pytorch/module/base.py``,
  ``initialize_ub``): the forward all-gathers with the column-parallel GEMMs (QKV, the MLP's first), the forward
  reduce-scatters with the row-parallel ones (output projection, the MLP's last), in backward the all-gathers of
  the row-parallel output gradients with their input-gradient GEMMs and the input-gradient reduce-scatters with
  the column-parallel weight gradients (the ``dgrad`` overlap above, which it replaces). A call shows its first
  chunk and whatever outlasts its GEMM, plus ``prefetch_interference`` of what it hides.
* **CP and EP**: on the critical path, but for EP under DualPipe (``dualpipe``): DeepSeek-V3 pairs a forward and
  a backward chunk so that "both all-to-all and PP communication can be fully hidden" (DeepSeek-AI 2024,
  arXiv:2412.19437, Sec. 3.2.1). An all-to-all hides under the stage's compute, and the SMs it runs on
  ([`DUALPIPE_COMM_SMS`][calc.timing.overlap.DUALPIPE_COMM_SMS]) slow that compute: that share of what it hides
  shows. What outlasts the compute shows whole.
* **Pipeline p2p** (``p2p_overlap``): Megatron-LM overlaps the interleaved schedule's sends with compute
  (``--overlap-p2p-communication``, on by default with interleaving; Llama 3 runs its sends asynchronously,
  Dubey et al. 2024 Sec. 3.3.2; DualPipe hides them with its all-to-alls): the bandwidth of one send per step
  shows, and every send's NCCL latency (a chunk waits for its input however early it was sent). Plain 1F1B's sends
  are exposed.
* **Data-parallel gradients**: the reduce-scatter (or all-reduce) overlaps the backward it follows except its
  last bucket (``dp_bucket_params``, Megatron-LM's ``max(40M, 1M × dp)``).
* **ZeRO-1/2 parameter all-gather** (``overlap_param_gather``, default off): Megatron-LM's
  ``--overlap-param-gather`` starts each bucket's gather in the next forward, so only the first bucket shows;
  off, the whole gather after the optimizer step is exposed.
* **ZeRO-3 / FSDP parameter all-gathers**: each layer's gather is prefetched during the previous layer's
  forward (or backward) compute (PyTorch FSDP's forward and backward prefetch, Zhao et al. 2023,
  arXiv:2304.11277, Sec. 3.3). What a gather takes beyond that compute shows, plus the first layer's, plus a
  share ``prefetch_interference`` of the hidden part (default
  [`PREFETCH_INTERFERENCE`][calc.timing.overlap.PREFETCH_INTERFERENCE]): the overlap is partial, not all or
  nothing. Each layer's gather is its own collective (one FSDP unit per transformer block, Zhao et al. 2023
  Sec. 3.2.1; torchtitan and DeepSpeed ZeRO-3 gather per block or sub-module), so each pays the collective's
  latency (the ring's ``(n-1)`` hops): a layer's gather takes ``latency + bytes/bandwidth``, not a share of one
  whole-stage gather's single latency.
"""

from __future__ import annotations

from calc.errors import CalcError
from calc.memory.layout import Layout
from calc.parallel.comm import StepComm

__all__ = ["DUALPIPE_COMM_SMS", "PREFETCH_INTERFERENCE", "TP_OVERLAP", "dgrad_overlap_default", "exposed_communication"]

TP_OVERLAP: float = 0.0
"""Default share of TP communication hidden behind compute: 0, as Megatron-LM's ``--tp-comm-overlap`` is off
unless asked for."""

PREFETCH_INTERFERENCE: float = 0.2
"""Share of an overlapped collective (a prefetched ZeRO-3 / FSDP all-gather, Megatron's asynchronous TP ``dgrad``
collective) that still costs time although it runs under compute.

NCCL's kernels take SMs and HBM bandwidth from the matmuls they overlap (Zhao et al. 2023, PyTorch FSDP,
arXiv:2304.11277, Sec. 3.3 and 7.2: overlapped communication slows the concurrent computation); 0.2 is assumed.
0 is a perfect overlap, 1 none."""


DUALPIPE_COMM_SMS: float = 20 / 132
"""Share of the GPU's SMs DualPipe's communication kernels take: DeepSeek-V3 gives them 20 of an H800's 132
("only 20 SMs are sufficient to fully utilize the bandwidths of IB and NVLink", DeepSeek-AI 2024,
arXiv:2412.19437, Sec. 3.2.2). The compute they run under has the rest, so a hidden second of all-to-all still
costs this share of a second."""


def dgrad_overlap_default(stack: str) -> bool:
    """Whether the training ``stack`` overlaps the TP input-gradient collective with the weight gradient.

    Megatron-LM always does (``ColumnParallelLinear``'s ``allreduce_dgrad``, and the asynchronous reduce-scatter
    under sequence parallelism: module docstring); torchtitan's DTensor TP does not without AsyncTP.

    Examples:
        >>> dgrad_overlap_default("megatron"), dgrad_overlap_default("torchtitan")
        (True, False)
    """
    return stack == "megatron"


def share(value: object, field: str) -> float:
    """A share from 0 to 1, or a [`CalcError`][calc.errors.CalcError] naming ``field``.

    Examples:
        >>> share(0.5, "tp_overlap")
        0.5
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise CalcError(field, "must be a number from 0 to 1", value)
    return float(value)


def exposed_communication(
    step: StepComm,
    layout: Layout,
    t_mb: float,
    layers_ps: int,
    *,
    bucket_params: int,
    tp_overlap: float = TP_OVERLAP,
    overlap_param_gather: bool = False,
    p2p_overlap: bool | None = None,
    prefetch_interference: float = PREFETCH_INTERFERENCE,
    wgrad_s: tuple[float, float] | None = None,
    userbuffers: tuple[tuple[float, float], tuple[float, float]] | None = None,
    dualpipe: bool = False,
) -> dict[str, tuple[float, str]]:
    """Exposed seconds of each collective of ``step`` and why (the rules in the module docstring).

    ``t_mb`` is the busiest stage's compute per micro-batch (forward and backward) and ``layers_ps`` its layers.
    ``wgrad_s``: one layer's weight-gradient GEMM seconds per micro-batch for its two column-parallel linears
    (QKV, the MLP's first matmul), under which Megatron hides the backward TP ``dgrad`` collectives; ``None``:
    nothing hidden there. ``userbuffers``: Transformer Engine's TP overlap is on, with one layer's column- and
    row-parallel GEMM seconds per micro-batch (each pair as ``wgrad_s``). ``dualpipe``: the schedule is DualPipe.

    Examples:
        >>> from calc.parallel.comm import step_communication
        >>> lay = Layout(dp=8, tp=8, zero_stage=1, global_batch=64, seq_len=4096, sequence_parallel=True)
        >>> st = step_communication(params="8B", layers=32, hidden=4096, seq=4096, dp=8, tp=8, zero_stage=1,
        ...                         sequence_parallel=True, num_microbatches=8)
        >>> full = exposed_communication(st, lay, 0.1, 32, bucket_params=40_000_000)
        >>> half = exposed_communication(st, lay, 0.1, 32, bucket_params=40_000_000, tp_overlap=0.5)
        >>> round(half["tp-all-gather"][0] / full["tp-all-gather"][0], 6)
        0.5
    """
    tp_hidden = share(tp_overlap, "tp_overlap")
    kappa = share(prefetch_interference, "prefetch_interference")
    p2p = (layout.interleave > 1 or dualpipe) if p2p_overlap is None else bool(p2p_overlap)
    m = layout.num_microbatches or 1
    out: dict[str, tuple[float, str]] = {}
    backward_last = t_mb * 2 / 3
    for term in step.terms:
        name, t = term.name, term.time_s
        one = t / max(1, term.calls)
        if term.group == "tp":
            if userbuffers is not None and layout.sequence_parallel and layout.tp > 1:
                hidden, why = _ub_hidden(term, layout, userbuffers, kappa)
            else:
                hidden, why = _dgrad_hidden(term, layout, wgrad_s, kappa)
            why = f"on the critical path of every layer{why}, {tp_hidden:.0%} of the rest hidden (tp_overlap)"
            out[name] = ((t - hidden) * (1 - tp_hidden), why)
        elif term.group == "cp":
            out[name] = (t, "on the critical path of every attention layer")
        elif term.group == "ep":
            out[name] = _ep_exposed(t, m * t_mb, dualpipe)
        elif term.group == "pp":
            # Overlapped, each send still waits its NCCL latency before the next chunk can start; the bandwidth of
            # all but one send hides under compute.
            hidden = (term.latency_s + (t - term.latency_s) / max(1, term.calls), "overlapped except the latency")
            out[name] = hidden if p2p else (t, "exposed")
        elif name.endswith(("grad-all-reduce", "grad-reduce-scatter")):
            params = max(1, term.message_bytes // 2)
            bucket = min(1.0, max(bucket_params, 1_000_000 * layout.dp) / params)
            # Each call overlaps the backward it follows (the last micro-batch's, or, under ZeRO-2, its own
            # micro-batch's) except its last bucket.
            exposed = term.calls * (one * bucket + max(0.0, one * (1 - bucket) - backward_last))
            out[name] = (exposed, "overlapped with the backward pass except the last bucket")
        elif name.endswith("param-all-gather") and layout.effective_zero_stage == 3:
            fwd, bwd = min(m, term.calls), max(0, term.calls - m)
            lat = term.latency_s / max(1, term.calls)
            gathered = _prefetched(fwd, bwd, one, t_mb, layers_ps, kappa, lat)
            out[name] = (gathered, "one gather per layer, prefetched a layer ahead, partly hidden")
        elif name.endswith("param-all-gather") and overlap_param_gather:
            params = max(1, term.message_bytes // 2)
            bucket = min(1.0, max(bucket_params, 1_000_000 * layout.dp) / params)
            out[name] = (t * bucket, "overlapped with the next forward except the first bucket (overlap_param_gather)")
        else:
            out[name] = (t, "after the optimizer step, exposed")
    return out


def _ep_exposed(t: float, compute_s: float, dualpipe: bool) -> tuple[float, str]:
    """Exposed seconds of ``t`` seconds of EP all-to-all, and why: all of it, or under DualPipe what outlasts the
    stage's ``compute_s`` plus [`DUALPIPE_COMM_SMS`][calc.timing.overlap.DUALPIPE_COMM_SMS] of what hides.

    Examples:
        >>> _ep_exposed(2.0, 10.0, False)[0], round(_ep_exposed(2.0, 10.0, True)[0], 4)
        (2.0, 0.303)
        >>> round(_ep_exposed(12.0, 10.0, True)[0], 4)  # 2 s outlast the compute; the 10 s under it cost 20/132
        3.5152
    """
    if not dualpipe:
        return t, "on the critical path of every MoE layer"
    hidden = min(t, compute_s)
    why = "under DualPipe's paired forward and backward chunks, less the 20 of 132 SMs it takes (DeepSeek-V3)"
    return t - hidden + hidden * DUALPIPE_COMM_SMS, why


def _dgrad_hidden(term: object, layout: Layout, wgrad_s: tuple[float, float] | None, kappa: float) -> tuple[float, str]:
    """Seconds of a TP term hidden under the column-parallel weight gradients (Megatron's asynchronous ``dgrad``
    all-reduce, or reduce-scatter under sequence parallelism), and the words for it.

    Two of the term's calls per layer and micro-batch are backward ``dgrad`` collectives (the term counts
    ``2 × (forward passes + 1)``: Narayanan et al. 2021 Sec. 3.2, Korthikanti et al. 2022 Sec. 4.2.2); each hides
    up to its weight-gradient GEMM, less ``kappa`` of what it hides.

    Examples:
        >>> from types import SimpleNamespace as NS
        >>> term = NS(name="tp-all-reduce", time_s=4.0, calls=4, latency_s=0.0)
        >>> lay = NS(recompute="none", sequence_parallel=False)
        >>> _dgrad_hidden(term, lay, (0.5, 2.0), 0.0)[0]  # one call 1 s: 0.5 s under QKV's, 1 s under FC1's
        1.5
    """
    name = term.name  # type: ignore[attr-defined]
    dgrad = "tp-reduce-scatter" if layout.sequence_parallel else "tp-all-reduce"
    if wgrad_s is None or name != dgrad:
        return 0.0, ""
    one = term.time_s / max(1, term.calls)  # type: ignore[attr-defined]
    passes = 2 if layout.recompute == "full" else 1  # forward passes: full recomputation runs a second
    pairs = term.calls / (2 * (passes + 1))  # type: ignore[attr-defined]  # (layer, micro-batch) pairs
    hidden = pairs * sum(min(one, w) for w in wgrad_s) * (1 - kappa)
    hidden = min(hidden, term.time_s)  # type: ignore[attr-defined]
    return hidden, ", the backward dgrad calls under the weight gradients (Megatron's async TP)"


def _ub_hidden(
    term: object, layout: Layout, gemms: tuple[tuple[float, float], tuple[float, float]], kappa: float
) -> tuple[float, str]:
    """Seconds of a TP term hidden by Transformer Engine's userbuffers overlap, and the words for it.

    Per layer and micro-batch the term counts ``2 × (forward passes + 1)`` calls (as `_dgrad_hidden`). The
    all-gathers: each forward pass's two under the column-parallel GEMMs, the backward's two under the
    row-parallel input-gradient GEMMs (the row-parallel sizes); the reduce-scatters the other way round. A call of
    ``one`` seconds split into ``tp`` chunks hides ``min(one × (1 - 1/tp), gemm)``, less ``kappa`` of it.

    Examples:
        >>> from types import SimpleNamespace as NS
        >>> term = NS(name="tp-all-gather", time_s=8.0, calls=4, latency_s=0.0)
        >>> lay = NS(recompute="none", tp=2)
        >>> _ub_hidden(term, lay, ((3.0, 3.0), (0.5, 0.5)), 0.0)[0]  # 2 s calls: 1 s each under QKV, FC1; 0.5 each
        3.0
    """
    one = term.time_s / max(1, term.calls)  # type: ignore[attr-defined]
    passes = 2 if layout.recompute == "full" else 1
    pairs = term.calls / (2 * (passes + 1))  # type: ignore[attr-defined]
    col, row = gemms
    fwd, bwd = (col, row) if term.name.endswith("all-gather") else (row, col)  # type: ignore[attr-defined]
    chunked = one * (1 - 1 / layout.tp)
    per_pair = passes * sum(min(chunked, g) for g in fwd) + sum(min(chunked, g) for g in bwd)
    hidden = min(pairs * per_pair * (1 - kappa), term.time_s)  # type: ignore[attr-defined]
    return hidden, ", each call pipelined with its GEMM in tp chunks (Transformer Engine's userbuffers)"


def _prefetched(
    fwd: int, bwd: int, one: float, t_mb: float, layers_ps: int, kappa: float, latency: float = 0.0
) -> float:
    """ZeRO-3 gathers of one stage: ``fwd`` forward and ``bwd`` backward passes (none when parameters are not
    resharded after forward), each of ``layers_ps`` per-layer gathers, prefetched under the previous layer's
    compute (a forward layer ``t_mb / 3 / layers``, a backward layer twice that).

    ``one`` is one pass's gather of the whole stage as a single collective, ``latency`` that collective's latency:
    a layer's own gather moves ``(one - latency) / layers`` seconds of bytes and pays the latency again (FSDP
    gathers each unit separately, Zhao et al. 2023, arXiv:2304.11277, Sec. 3.2.1).

    Examples:
        >>> round(_prefetched(1, 0, 1.0, 30.0, 10, 0.0), 6)  # hidden under compute but the first layer's gather
        0.1
        >>> round(_prefetched(1, 0, 1.0, 30.0, 10, 0.0, latency=0.05), 6)  # each of the 10 gathers pays 0.05 s
        0.145
    """
    layers = max(1, layers_ps)
    gather = (one - latency) / layers + latency
    total = 0.0
    for calls, compute in ((fwd, t_mb / (3 * layers)), (bwd, 2 * t_mb / (3 * layers))):
        hidden = min(gather, compute)
        total += calls * (gather + (layers - 1) * (gather - hidden + kappa * hidden))
    return total
