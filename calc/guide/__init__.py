"""The guide's own pieces built on the engine: Vega-Lite chart specs and the practice exercises (each
answer computed, and each reader's answer checked, by the engine).

Site-facing: nothing in the engine packages imports it.
"""
