"""Other tools' memory estimators, reproduced exactly, so their published outputs can be checked and compared.

DeepSpeed ships two closed-form estimators of model-state memory (``deepspeed/runtime/zero/stage_1_and_2.py``
and ``stage3.py``, documented in ``docs/code-docs/source/memory.rst``). They count differently from the ZeRO
paper: 18 bytes per parameter of sharded state (fp16 and fp32 gradients, fp32 master weights, Adam's two
moments) plus an unsharded 16-bit copy, a 1.5x buffer factor on CPU, and for ZeRO-3 four bytes per parameter of
the largest layer. They print "GB" that are GiB (``bytes / 2**30``).
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.units import parse_count, parse_positive_int

__all__ = ["Estimate", "deepspeed_zero2_estimate", "deepspeed_zero3_estimate"]


@dataclass(frozen=True)
class Estimate:
    """Bytes per CPU (host) and per GPU, as an estimator reports them.

    Attributes:
        cpu_bytes: Host memory per node.
        gpu_bytes: Device memory per GPU.
    """

    cpu_bytes: int
    gpu_bytes: int


def deepspeed_zero2_estimate(
    total_params: int | float | str,
    *,
    gpus_per_node: int = 1,
    nodes: int = 1,
    cpu_offload: bool = True,
    buffer_factor: float = 1.5,
    before_2024: bool = False,
) -> Estimate:
    """DeepSpeed's ``estimate_zero2_model_states_mem_needs``, term for term.

    Source: deepspeedai/DeepSpeed ``deepspeed/runtime/zero/stage_1_and_2.py`` (commit edaa7221). Without
    offload the GPU holds ``2Ψ + int(18Ψ / N)`` (16-bit weights, plus 2 + 4 bytes of gradients, 4 of fp32
    weights and 8 of Adam states, sharded over the N GPUs). Before PR #5099 (2024-06) the line was
    ``4Ψ + int(16Ψ / N)``, which is what ``memory.rst``'s example output still shows.

    Args:
        total_params: Parameter count Ψ.
        gpus_per_node: GPUs per node.
        nodes: Nodes.
        cpu_offload: Optimizer states offloaded to the CPU (``offload_optimizer=cpu``).
        buffer_factor: DeepSpeed's ``additional_buffer_factor`` on CPU memory.
        before_2024: Use the pre-#5099 no-offload GPU formula.

    Returns:
        The [`Estimate`][calc.estimators.Estimate].

    Examples:
        >>> from calc.units import format_bytes
        >>> e = deepspeed_zero2_estimate(2851e6, gpus_per_node=8, cpu_offload=False)
        >>> format_bytes(e.gpu_bytes, unit="GiB"), format_bytes(e.cpu_bytes, unit="GiB", digits=5)
        ('11.3 GiB', '127.45 GiB')
    """
    n = parse_count(total_params, "total_params")
    per_node = parse_positive_int(gpus_per_node, "gpus_per_node")
    total_gpus = per_node * parse_positive_int(nodes, "nodes")
    if cpu_offload:
        gpu = 2 * n
        cpu = n * max(4 * total_gpus, 16) * buffer_factor
    else:
        gpu = 4 * n + int(16 * n / total_gpus) if before_2024 else 2 * n + int(18 * n / total_gpus)
        cpu = n * 4 * per_node * buffer_factor
    return Estimate(cpu_bytes=int(cpu), gpu_bytes=int(gpu))


def deepspeed_zero3_estimate(
    total_params: int | float | str,
    largest_layer_params: int | float | str,
    *,
    gpus_per_node: int = 1,
    nodes: int = 1,
    cpu_offload: bool = True,
    cpu_offload_params: bool = True,
    zero_init: bool = True,
    buffer_factor: float = 1.5,
) -> Estimate:
    """DeepSpeed's ``estimate_zero3_model_states_mem_needs``, term for term.

    Source: deepspeedai/DeepSpeed ``deepspeed/runtime/zero/stage3.py`` (commit edaa7221). Every case keeps
    ``4 x largest_layer_params`` bytes on the GPU (the gathered fp16 layer and its gradient); without offload
    the GPU also holds ``int(18Ψ / N)``, with optimizer offload only ``int(2Ψ / N)``.

    Args:
        total_params: Parameter count Ψ.
        largest_layer_params: Parameters of the largest single module.
        gpus_per_node: GPUs per node.
        nodes: Nodes.
        cpu_offload: Optimizer states on the CPU (``offload_optimizer=cpu``).
        cpu_offload_params: Parameters on the CPU too (``offload_param=cpu``; needs ``cpu_offload``).
        zero_init: Model built under ``deepspeed.zero.Init`` (sharded at construction).
        buffer_factor: DeepSpeed's ``additional_buffer_factor`` on CPU memory.

    Returns:
        The [`Estimate`][calc.estimators.Estimate].

    Examples:
        >>> from calc.units import format_bytes
        >>> e = deepspeed_zero3_estimate(2851e6, 32e6, gpus_per_node=8, cpu_offload=False, cpu_offload_params=False)
        >>> format_bytes(e.gpu_bytes, unit="GiB"), format_bytes(e.cpu_bytes, unit="GiB")
        ('6.09 GiB', '1.43 GiB')
    """
    n = parse_count(total_params, "total_params")
    largest = parse_count(largest_layer_params, "largest_layer_params")
    per_node = parse_positive_int(gpus_per_node, "gpus_per_node")
    node_count = parse_positive_int(nodes, "nodes")
    total_gpus = per_node * node_count
    gpus_factor = 1 / node_count
    largest_layer_memory = 4 * largest
    if cpu_offload and cpu_offload_params:
        gpu = largest_layer_memory
        per_param = 18 * gpus_factor if zero_init else max(4 * per_node, 18 * gpus_factor)
        cpu = n * per_param * buffer_factor
    elif cpu_offload:
        gpu = largest_layer_memory + int(2 * n / total_gpus)
        per_param = 16 * gpus_factor if zero_init else max(4 * per_node, 16 * gpus_factor)
        cpu = n * per_param * buffer_factor
    else:
        gpu = largest_layer_memory + int(18 * n / total_gpus)
        cpu = largest * 4 * per_node * buffer_factor if zero_init else n * 4 * per_node * buffer_factor
    return Estimate(cpu_bytes=int(cpu), gpu_bytes=int(gpu))
