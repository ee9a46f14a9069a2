"""How a run is split and what crosses the wire: collectives and their cost, interconnects, the cluster
network, the communication of a step, and pipeline schedules (their bubble and their drawing).

Builds on the foundation only; ``calc.memory`` and ``calc.timing`` build on it.
"""
