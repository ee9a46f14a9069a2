"""calc: the engine behind the LLM training memory and parallelism reference.

Pure Python, standard library only, exact integer bytes. The same code prints
the numbers in the guide (at build time), runs the in-page calculators (in
Pyodide) and answers on the command line (``python -m calc``).

The public names are re-exported here from one small module per concept:
[`model_state`][calc.model_state] (weights, gradients, optimizer states under ZeRO),
[`architecture`][calc.architecture] and [`presets`][calc.presets] (parameter counts from
Hugging Face configs), [`activations`][calc.activations], [`layout`][calc.layout] (per-GPU
memory of a parallel layout), [`comm`][calc.comm] (collectives), [`pipeline`][calc.pipeline]
(bubble and schedules), [`compute`][calc.compute] (FLOPs, MFU, time),
[`inference`][calc.inference] (weights and KV cache), [`estimators`][calc.estimators] (DeepSpeed's
estimators, reproduced), [`hardware`][calc.hardware],
[`units`][calc.units] (parsing and GB/GiB formatting) and [`errors`][calc.errors].

The modules built on those are imported from where they live, so that ``import calc`` stays small for
the browser's first render: [`overheads`][calc.overheads] (the per-GPU peak: allocated, reserved,
``nvidia-smi``), [`steptime`][calc.steptime] (step time, MFU), [`planner`][calc.planner] (layout search),
[`fp8`][calc.fp8], [`moe_routing`][calc.moe_routing], [`finetune`][calc.finetune] (LoRA / QLoRA),
[`activation_profiles`][calc.activation_profiles], [`charts`][calc.charts] (Vega-Lite specs) and
[`exercises`][calc.exercises] (the practice questions, checked by the engine).

Examples:
    >>> import calc
    >>> calc.format_bytes(calc.model_state_bytes("7B").total)
    '112 GB'
    >>> calc.format_bytes(calc.model_state_bytes("70B").total, digits=2)
    '1.1 TB'
    >>> calc.preset("llama3-8b").param_count
    8030261248
"""

from __future__ import annotations

from calc.activations import (
    ACTIVATION_BYTES,
    FP32_BYTES,
    IMPLEMENTATIONS,
    MASK_BYTES,
    MLP_KINDS,
    NORM_KINDS,
    LayerActivations,
    StageActivations,
    activation_bytes_per_layer,
    in_flight_chunks,
    layer_activations,
    megatron_activation_bytes,
    stage_activations,
)
from calc.architecture import (
    PARAM_KINDS,
    Architecture,
)
from calc.comm import (
    ACHIEVED_SHARE,
    COLLECTIVES,
    GROUP_ORDER,
    INTERCONNECTS,
    LATENCY,
    SCALE_UP_FOR_GPU,
    CollectiveCost,
    CommTerm,
    Interconnect,
    Network,
    Placement,
    StepComm,
    algorithm_bandwidth,
    bus_factor,
    collective_bytes_sent,
    collective_cost,
    collective_time_s,
    group_bus_bandwidth,
    group_placement,
    interconnect,
    step_communication,
)
from calc.compute import (
    RECOMPUTE_MODES,
    SECONDS_PER_DAY,
    TrainingTime,
    Utilization,
    flops_6nd,
    megatron_flops_per_iteration,
    megatron_utilization,
    palm_flops_per_token,
    training_time,
    utilization,
    utilization_from_throughput,
)
from calc.errors import (
    ERROR_CODES,
    CalcError,
)
from calc.estimators import (
    Estimate,
    deepspeed_zero2_estimate,
    deepspeed_zero3_estimate,
)
from calc.hardware import (
    GPU,
    GPUS,
    PEAK_DTYPES,
    gpu,
)
from calc.hf_config import (
    HF_MODEL_TYPES,
    MAX_CONFIG_CHARS,
    MAX_CONFIG_DEPTH,
    parse_config_json,
    read_hf_config,
)
from calc.inference import (
    DEFAULT_RESERVED_FRACTION,
    PRECISION_BITS,
    InferenceMemory,
    cached_tokens,
    inference_memory,
    kv_cache_bytes_per_token,
    kv_heads_per_gpu,
    max_concurrent_sequences,
    mla_kv_cache_bytes_per_token,
    model_kv_bytes_per_token,
    weight_bytes,
    weight_bytes_per_gpu,
)
from calc.layout import (
    Layout,
    LayoutMemory,
    check_layout,
    layout_memory,
    stage_layers,
    stage_memory,
)
from calc.model_state import (
    COMPONENTS,
    CONVENTION_ALIASES,
    CONVENTIONS,
    SHARD_MODES,
    Convention,
    ModelState,
    Split,
    busiest_shard,
    convention_options,
    model_state_bytes,
    resolve_convention,
    smallest_fitting_layout,
)
from calc.pipeline import (
    BUBBLE_CONVENTIONS,
    MAX_SCHEDULE_OPS,
    SCHEDULES,
    PipelineOp,
    Schedule,
    Slot,
    bubble_fraction,
    pipeline_schedule,
    schedule_bubble,
    schedule_in_flight,
    schedule_svg,
)
from calc.presets import (
    PRESET_LABELS,
    PRESETS,
    preset,
)
from calc.units import (
    BYTE_UNITS,
    MAX_COUNT,
    format_bytes,
    format_count,
    parse_count,
    parse_positive_int,
    to_bytes,
)

__all__ = [
    "ACHIEVED_SHARE",
    "ACTIVATION_BYTES",
    "Architecture",
    "BUBBLE_CONVENTIONS",
    "BYTE_UNITS",
    "COLLECTIVES",
    "COMPONENTS",
    "CONVENTIONS",
    "CONVENTION_ALIASES",
    "CalcError",
    "CollectiveCost",
    "CommTerm",
    "Convention",
    "DEFAULT_RESERVED_FRACTION",
    "ERROR_CODES",
    "Estimate",
    "FP32_BYTES",
    "GPU",
    "GPUS",
    "GROUP_ORDER",
    "HF_MODEL_TYPES",
    "IMPLEMENTATIONS",
    "INTERCONNECTS",
    "InferenceMemory",
    "Interconnect",
    "LATENCY",
    "LayerActivations",
    "Layout",
    "LayoutMemory",
    "MASK_BYTES",
    "MAX_CONFIG_CHARS",
    "MAX_CONFIG_DEPTH",
    "MAX_COUNT",
    "MAX_SCHEDULE_OPS",
    "MLP_KINDS",
    "ModelState",
    "NORM_KINDS",
    "Network",
    "PARAM_KINDS",
    "PEAK_DTYPES",
    "PRECISION_BITS",
    "PRESETS",
    "PRESET_LABELS",
    "PipelineOp",
    "Placement",
    "RECOMPUTE_MODES",
    "SCALE_UP_FOR_GPU",
    "SCHEDULES",
    "SECONDS_PER_DAY",
    "SHARD_MODES",
    "Schedule",
    "Slot",
    "Split",
    "StageActivations",
    "StepComm",
    "TrainingTime",
    "Utilization",
    "activation_bytes_per_layer",
    "algorithm_bandwidth",
    "bubble_fraction",
    "bus_factor",
    "busiest_shard",
    "cached_tokens",
    "check_layout",
    "collective_bytes_sent",
    "collective_cost",
    "collective_time_s",
    "convention_options",
    "deepspeed_zero2_estimate",
    "deepspeed_zero3_estimate",
    "flops_6nd",
    "format_bytes",
    "format_count",
    "gpu",
    "group_bus_bandwidth",
    "group_placement",
    "in_flight_chunks",
    "inference_memory",
    "interconnect",
    "kv_cache_bytes_per_token",
    "kv_heads_per_gpu",
    "layer_activations",
    "layout_memory",
    "max_concurrent_sequences",
    "megatron_activation_bytes",
    "megatron_flops_per_iteration",
    "megatron_utilization",
    "mla_kv_cache_bytes_per_token",
    "model_kv_bytes_per_token",
    "model_state_bytes",
    "palm_flops_per_token",
    "parse_config_json",
    "parse_count",
    "parse_positive_int",
    "pipeline_schedule",
    "preset",
    "read_hf_config",
    "resolve_convention",
    "schedule_bubble",
    "schedule_in_flight",
    "schedule_svg",
    "smallest_fitting_layout",
    "stage_activations",
    "stage_layers",
    "stage_memory",
    "step_communication",
    "to_bytes",
    "training_time",
    "utilization",
    "utilization_from_throughput",
    "weight_bytes",
    "weight_bytes_per_gpu",
]

__version__ = "0.1.0"
