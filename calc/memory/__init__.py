"""What each GPU holds: model states under ZeRO/FSDP, activations (Megatron's fused accounting and the
transformers profiles), the [`Layout`][calc.memory.layout.Layout] of a parallel run and its per-GPU
memory, the overheads that make up the peak (allocator, NCCL, CUDA context), FP8, MoE routing,
fine-tuning and inference.

Builds on ``calc.models`` and the foundation; never imports ``calc.timing`` or the site-facing packages.
"""
