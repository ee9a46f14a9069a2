"""calc: the engine behind the LLM training memory and parallelism reference.

Pure Python, standard library only, exact integer bytes. The same code prints
the numbers in the guide (at build time), runs the in-page calculators (in
Pyodide) and answers on the command line (``python -m calc``).

The engine is laid out by concept, each subpackage on top of the ones before it:

- the foundation: [`errors`][calc.errors] (one ``CalcError`` family), [`units`][calc.units]
  (parsing, GB/GiB formatting) and [`hardware`][calc.hardware] (GPU presets);
- [`calc.models`][calc.models]: what is trained (architectures, Hugging Face configs, presets);
- [`calc.parallel`][calc.parallel]: how it is split and what crosses the wire (collectives,
  interconnects, the network, pipeline schedules);
- [`calc.memory`][calc.memory]: what each GPU holds (model states, activations, layouts, overheads,
  FP8, MoE routing, fine-tuning, inference);
- [`calc.timing`][calc.timing]: how long it takes (FLOPs, step time, the layout planner);
- [`calc.peers`][calc.peers]: other tools' estimators, reproduced;
- the site-facing parts: [`calc.guide`][calc.guide] (charts, exercises), [`calc.widgets`][calc.widgets]
  (the calculators) and ``calc.cli`` (``python -m calc``, see the command line page).

Every public name below is importable from ``calc`` itself, and loads its module on first use
(PEP 562), so ``import calc`` costs almost nothing and a page loads only what its calculators use.
The flat module names of earlier releases (``calc.layout``, ``calc.planner``, ...) still import:
each is an alias of the module's new home.

Examples:
    >>> import calc
    >>> calc.format_bytes(calc.model_state_bytes("7B").total)
    '112 GB'
    >>> calc.format_bytes(calc.model_state_bytes("70B").total, digits=2)
    '1.1 TB'
    >>> calc.preset("llama3-8b").param_count
    8030261248
    >>> import calc.layout, calc.memory.layout
    >>> calc.layout is calc.memory.layout
    True
"""

from __future__ import annotations

import importlib
import importlib.machinery
import sys

_NAMES: dict[str, str] = {
    "CalcError": "calc.errors",
    "ERROR_CODES": "calc.errors",
    "GPU": "calc.hardware",
    "GPUS": "calc.hardware",
    "PEAK_DTYPES": "calc.hardware",
    "gpu": "calc.hardware",
    "ACTIVATION_BYTES": "calc.memory.activations",
    "FP32_BYTES": "calc.memory.activations",
    "IMPLEMENTATIONS": "calc.memory.activations",
    "LayerActivations": "calc.memory.activations",
    "MASK_BYTES": "calc.memory.activations",
    "MLP_KINDS": "calc.memory.activations",
    "NORM_KINDS": "calc.memory.activations",
    "StageActivations": "calc.memory.activations",
    "activation_bytes_per_layer": "calc.memory.activations",
    "held_chunks_peak": "calc.memory.activations",
    "in_flight_chunks": "calc.memory.activations",
    "layer_activations": "calc.memory.activations",
    "megatron_activation_bytes": "calc.memory.activations",
    "stage_activations": "calc.memory.activations",
    "DEFAULT_RESERVED_FRACTION": "calc.memory.inference",
    "InferenceMemory": "calc.memory.inference",
    "PRECISION_BITS": "calc.memory.inference",
    "cached_tokens": "calc.memory.inference",
    "inference_memory": "calc.memory.inference",
    "kv_cache_bytes_per_token": "calc.memory.inference",
    "kv_heads_per_gpu": "calc.memory.inference",
    "max_concurrent_sequences": "calc.memory.inference",
    "mla_kv_cache_bytes_per_token": "calc.memory.inference",
    "model_kv_bytes_per_token": "calc.memory.inference",
    "weight_bytes": "calc.memory.inference",
    "weight_bytes_per_gpu": "calc.memory.inference",
    "Layout": "calc.memory.layout",
    "LayoutMemory": "calc.memory.layout",
    "check_layout": "calc.memory.layout",
    "layout_memory": "calc.memory.layout",
    "LOSS_KINDS": "calc.memory.layout",
    "STACKS": "calc.memory.layout",
    "StagePlan": "calc.memory.layout",
    "split_layers": "calc.memory.layout",
    "stage_layers": "calc.memory.layout",
    "stage_memory": "calc.memory.layout",
    "stage_plan": "calc.memory.layout",
    "COMPONENTS": "calc.memory.model_state",
    "CONVENTIONS": "calc.memory.model_state",
    "CONVENTION_ALIASES": "calc.memory.model_state",
    "Convention": "calc.memory.model_state",
    "ModelState": "calc.memory.model_state",
    "SHARD_MODES": "calc.memory.model_state",
    "Split": "calc.memory.model_state",
    "busiest_shard": "calc.memory.model_state",
    "convention_options": "calc.memory.model_state",
    "model_state_bytes": "calc.memory.model_state",
    "resolve_convention": "calc.memory.model_state",
    "smallest_fitting_layout": "calc.memory.model_state",
    "finetune_memory": "calc.memory.finetune",
    "peak_memory": "calc.memory.overheads",
    "Architecture": "calc.models.architecture",
    "PARAM_KINDS": "calc.models.architecture",
    "HF_MODEL_TYPES": "calc.models.hf_config",
    "MAX_CONFIG_CHARS": "calc.models.hf_config",
    "MAX_CONFIG_DEPTH": "calc.models.hf_config",
    "parse_config_json": "calc.models.hf_config",
    "read_hf_config": "calc.models.hf_config",
    "PRESETS": "calc.models.presets",
    "PRESET_LABELS": "calc.models.presets",
    "preset": "calc.models.presets",
    "ACHIEVED_SHARE": "calc.parallel.comm",
    "COLLECTIVES": "calc.parallel.comm",
    "CollectiveCost": "calc.parallel.comm",
    "CommTerm": "calc.parallel.comm",
    "GROUP_ORDER": "calc.parallel.comm",
    "INTERCONNECTS": "calc.parallel.comm",
    "Interconnect": "calc.parallel.comm",
    "LATENCY": "calc.parallel.comm",
    "Network": "calc.parallel.comm",
    "Placement": "calc.parallel.comm",
    "SCALE_UP_FOR_GPU": "calc.parallel.comm",
    "StepComm": "calc.parallel.comm",
    "algorithm_bandwidth": "calc.parallel.comm",
    "bus_factor": "calc.parallel.comm",
    "collective_bytes_sent": "calc.parallel.comm",
    "collective_cost": "calc.parallel.comm",
    "collective_time_s": "calc.parallel.comm",
    "group_bus_bandwidth": "calc.parallel.comm",
    "group_placement": "calc.parallel.comm",
    "interconnect": "calc.parallel.comm",
    "step_communication": "calc.parallel.comm",
    "BUBBLE_CONVENTIONS": "calc.parallel.pipeline",
    "MAX_SCHEDULE_OPS": "calc.parallel.pipeline",
    "PipelineOp": "calc.parallel.pipeline",
    "SCHEDULES": "calc.parallel.pipeline",
    "Schedule": "calc.parallel.pipeline",
    "Slot": "calc.parallel.pipeline",
    "bubble_fraction": "calc.parallel.pipeline",
    "pipeline_schedule": "calc.parallel.pipeline",
    "schedule_bubble": "calc.parallel.pipeline",
    "schedule_in_flight": "calc.parallel.pipeline",
    "schedule_svg": "calc.parallel.pipeline",
    "Estimate": "calc.peers.estimators",
    "deepspeed_zero2_estimate": "calc.peers.estimators",
    "deepspeed_zero3_estimate": "calc.peers.estimators",
    "RECOMPUTE_MODES": "calc.timing.compute",
    "SECONDS_PER_DAY": "calc.timing.compute",
    "TrainingTime": "calc.timing.compute",
    "Utilization": "calc.timing.compute",
    "flops_6nd": "calc.timing.compute",
    "megatron_flops_per_iteration": "calc.timing.compute",
    "megatron_utilization": "calc.timing.compute",
    "palm_flops_per_token": "calc.timing.compute",
    "training_time": "calc.timing.compute",
    "utilization": "calc.timing.compute",
    "utilization_from_throughput": "calc.timing.compute",
    "plan": "calc.timing.planner",
    "SERVING_MATMUL_EFFICIENCY": "calc.timing.serving",
    "TP_ALLREDUCE_LATENCY_S": "calc.timing.serving",
    "DecodeStep": "calc.timing.serving",
    "PrefillTime": "calc.timing.serving",
    "decode_compute_bound_batch": "calc.timing.serving",
    "decode_step": "calc.timing.serving",
    "kv_transfer_s": "calc.timing.serving",
    "prefill_time": "calc.timing.serving",
    "serving_flops_per_token": "calc.timing.serving",
    "speculative_speedup": "calc.timing.serving",
    "speculative_tokens_per_step": "calc.timing.serving",
    "step_time": "calc.timing.steptime",
    "BYTE_UNITS": "calc.units",
    "MAX_COUNT": "calc.units",
    "format_bytes": "calc.units",
    "format_count": "calc.units",
    "parse_count": "calc.units",
    "parse_positive_int": "calc.units",
    "to_bytes": "calc.units",
}
"""Each public name and the module that defines it."""

MOVED_MODULES: dict[str, str] = {
    "calc.activation_megatron": "calc.memory.activation_megatron",
    "calc.activation_profiles": "calc.memory.activation_profiles",
    "calc.activation_stages": "calc.memory.activation_stages",
    "calc.activations": "calc.memory.activations",
    "calc.architecture": "calc.models.architecture",
    "calc.charts": "calc.guide.charts",
    "calc.collectives": "calc.parallel.collectives",
    "calc.comm": "calc.parallel.comm",
    "calc.compute": "calc.timing.compute",
    "calc.estimators": "calc.peers.estimators",
    "calc.exercises": "calc.guide.exercises",
    "calc.finetune": "calc.memory.finetune",
    "calc.fp8": "calc.memory.fp8",
    "calc.hf_config": "calc.models.hf_config",
    "calc.inference": "calc.memory.inference",
    "calc.interconnects": "calc.parallel.interconnects",
    "calc.layout": "calc.memory.layout",
    "calc.model_state": "calc.memory.model_state",
    "calc.moe_routing": "calc.memory.moe_routing",
    "calc.network": "calc.parallel.network",
    "calc.overheads": "calc.memory.overheads",
    "calc.pipeline": "calc.parallel.pipeline",
    "calc.pipeline_schedules": "calc.parallel.pipeline_schedules",
    "calc.pipeline_svg": "calc.parallel.pipeline_svg",
    "calc.planner": "calc.timing.planner",
    "calc.presets": "calc.models.presets",
    "calc.steptime": "calc.timing.steptime",
}
"""The flat module names of earlier releases and the module each is now an alias of."""


class _MovedModuleFinder:
    """Imports ``calc.layout`` as ``calc.memory.layout`` itself (the same module object, not a copy).

    A meta path finder and loader by protocol (``find_spec``, ``create_module``, ``exec_module``), not by
    ``importlib.abc``'s base classes: ``importlib.abc`` imports ``importlib.resources`` and with it ``pathlib``,
    ``tempfile``, ``shutil`` and ``random``, which the browser worker would otherwise load for nothing."""

    def find_spec(self, fullname, path, target=None):
        if fullname in MOVED_MODULES:
            return importlib.machinery.ModuleSpec(fullname, self)
        return None

    def create_module(self, spec):
        return importlib.import_module(MOVED_MODULES[spec.name])

    def exec_module(self, module) -> None:
        pass


if not any(isinstance(finder, _MovedModuleFinder) for finder in sys.meta_path):
    sys.meta_path.append(_MovedModuleFinder())


def __getattr__(name: str):
    """Load a public name's module on first use (PEP 562)."""
    module = _NAMES.get(name)
    if module is None:
        if f"calc.{name}" in MOVED_MODULES:
            return importlib.import_module(f"calc.{name}")
        raise AttributeError(f"module 'calc' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


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
    "DecodeStep",
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
    "LOSS_KINDS",
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
    "PrefillTime",
    "RECOMPUTE_MODES",
    "SCALE_UP_FOR_GPU",
    "SCHEDULES",
    "SECONDS_PER_DAY",
    "SERVING_MATMUL_EFFICIENCY",
    "SHARD_MODES",
    "STACKS",
    "Schedule",
    "Slot",
    "Split",
    "StageActivations",
    "StagePlan",
    "StepComm",
    "TP_ALLREDUCE_LATENCY_S",
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
    "decode_compute_bound_batch",
    "decode_step",
    "deepspeed_zero2_estimate",
    "deepspeed_zero3_estimate",
    "finetune_memory",
    "flops_6nd",
    "format_bytes",
    "format_count",
    "gpu",
    "group_bus_bandwidth",
    "group_placement",
    "held_chunks_peak",
    "in_flight_chunks",
    "inference_memory",
    "interconnect",
    "kv_cache_bytes_per_token",
    "kv_heads_per_gpu",
    "kv_transfer_s",
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
    "peak_memory",
    "pipeline_schedule",
    "plan",
    "prefill_time",
    "preset",
    "read_hf_config",
    "resolve_convention",
    "schedule_bubble",
    "schedule_in_flight",
    "schedule_svg",
    "serving_flops_per_token",
    "smallest_fitting_layout",
    "speculative_speedup",
    "speculative_tokens_per_step",
    "split_layers",
    "stage_activations",
    "stage_layers",
    "stage_memory",
    "stage_plan",
    "step_communication",
    "step_time",
    "to_bytes",
    "training_time",
    "utilization",
    "utilization_from_throughput",
    "weight_bytes",
    "weight_bytes_per_gpu",
]

__version__ = "0.1.0"
