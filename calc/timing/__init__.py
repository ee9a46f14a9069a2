"""How long it takes: FLOPs and utilization (6ND, Megatron's per-iteration FLOPs, MFU), the step time of a
layout, and the planner that searches layouts and ranks them by step time under a memory limit.

Builds on ``calc.memory``, ``calc.parallel`` and ``calc.models``.
"""
