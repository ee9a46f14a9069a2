"""The fields of a training run's stack and precision, declared once: the training stack, the recomputation and
loss it decides, and the bytes-per-parameter convention.

Their options come from the engine's memory modules (``calc.memory.stacks``, ``calc.memory.model_state``), so
they live apart from ``calc.widgets._fields``: only the calculators that take a stack or a
convention (will-it-fit, training memory, the planner) load those modules.
"""

from __future__ import annotations

from collections.abc import Mapping

from calc.memory.activations import LAYOUT_RECOMPUTE_MODES
from calc.memory.model_state import CONVENTION_ALIASES, CONVENTIONS, convention_options
from calc.memory.stacks import LOSS_KINDS, STACKS, stack_defaults
from calc.widgets import Field
from calc.widgets._fields import RECOMPUTE_OPTIONS_OP, one_of, recompute_field

__all__ = [
    "CONVENTION_WORDS",
    "LOSS_OPTIONS",
    "RECOMPUTE_OPTIONS_STACK",
    "STACK_DEFAULT",
    "STACK_OPTIONS",
    "convention_field",
    "convention_labels",
    "loss_field",
    "stack_field",
    "stack_fields",
    "stack_knobs",
]

STACK_OPTIONS: tuple[tuple[str, str], ...] = (
    ("megatron", "Megatron-LM / Megatron-Core"),
    ("torchtitan", "torchtitan (PyTorch FSDP2)"),
    ("deepspeed", "DeepSpeed ZeRO (transformers)"),
)
"""The training stacks (``Layout.stack``, ``calc.memory.stacks``)."""

STACK_DEFAULT = "stack"
"""The ``loss`` (or ``recompute``) value that leaves the knob to the stack (``Layout(loss=None)``)."""

RECOMPUTE_OPTIONS_STACK: tuple[tuple[str, str], ...] = (
    (STACK_DEFAULT, "The stack's default"),
    *RECOMPUTE_OPTIONS_OP,
)
"""The recomputation modes with, first, the stack's own (``Layout(recompute=None)``)."""

RECOMPUTE_STACK_HELP = "by default the stack's (Megatron and DeepSpeed none, torchtitan per-op selective)"
"""What "the stack's default" recomputes, under the select (an option's label stays short enough to read)."""

LOSS_OPTIONS: tuple[tuple[str, str], ...] = (
    (STACK_DEFAULT, "The stack's default"),
    ("fused", "Fused vocab-parallel"),
    ("stock", "Stock F.cross_entropy"),
    ("chunked", "Chunked (torchtitan)"),
    ("compiled", "Compiled (torch.compile)"),
)
"""How the cross-entropy is computed (``Layout.loss``; the bytes per logit are ``calc.memory.stacks``')."""

LOSS_HELP = (
    "by default the stack's (Megatron fused, torchtitan stock compiled with torch.compile, DeepSpeed stock as "
    "transformers computes it); fused is Megatron's "
    "vocab-parallel loss, stock is F.cross_entropy on fp32 logits"
)
"""The loss options in full, under the select."""

CONVENTION_WORDS: dict[str, str] = {
    "mixed-adam-16": "Adam, mixed precision",
    "mixed-adam-18": "Adam, fp32 gradients",
    "mixed-adam-20": "Adam, fp16 + fp32 grads",
    "fp32-adam-16": "fp32 Adam",
    "bf16-adam-12": "Adam, no master copy",
    "bf16-adam-fused-6": "bf16 Adam, fused step",
    "fp32-adam-fused-12": "fp32 Adam, fused step",
    "bf16-adam-pure-8": "pure bf16 Adam",
    "mixed-adam8bit-10": "8-bit Adam",
    "mixed-sgdm-12": "SGD with momentum",
    "fp32-sgd-8": "fp32 plain SGD",
    "fp32-sgdm-12": "fp32 SGD with momentum",
    "mixed-bf16-states": "Adam, bf16 moments",
    "mixed-lion-12": "Lion",
    "mixed-muon-12": "Muon (hidden matrices)",
    "mixed-adafactor-8": "Adafactor, no momentum",
    "mixed-adafactor-momentum-12": "Adafactor + momentum",
    "mixed-shampoo-28": "Shampoo, square blocks",
    "mixed-soap-32": "SOAP, square matrices",
}
"""The convention select's short words for each convention (its full label, with the bytes of each tensor, is
``calc.memory.conventions``'): the option reads ``16 B · Adam, mixed precision``, the bytes from the convention."""

CONVENTION_HELP = (
    "optimizer, then what differs from mixed precision (bf16 weights and gradients, fp32 master copy); "
    "each tensor's bytes are in the results"
)
"""Under the convention select: how to read its short options."""


def _as_typed(value: object) -> str:
    """A knob's value as a field holds it: ``"1"`` / ``"0"`` for a switch, the text otherwise."""
    return ("1" if value else "0") if isinstance(value, bool) else str(value)


def stack_field(own: Mapping[str, str] | None = None, **kw: object) -> Field:
    """The ``stack`` select: whose defaults the knobs left to the stack take (``"megatron"``, today's accounting).

    With ``own``, the calculator's fields for the knobs a stack decides (``{field: this calculator's default}``),
    choosing a stack sets those fields in the browser ([`Field.sets`][calc.widgets.Field]): Megatron-LM back to
    the calculator's defaults, any other stack to its own
    ([`stack_defaults`][calc.memory.stacks.stack_defaults]); a field the reader set stays.

    Examples:
        >>> stack_field().default, stack_field().options[1][0]
        ('megatron', 'torchtitan')
        >>> dict(stack_field({"recompute": "selective", "zero_stage": "1"}).sets)["torchtitan"]
        (('recompute', 'op'), ('zero_stage', '3'))
    """
    sets = tuple(
        (
            stack,
            tuple(
                (name, value if stack == "megatron" else _as_typed(stack_defaults(stack, pp=1)[name]))
                for name, value in (own or {}).items()
            ),
        )
        for stack in STACKS
    )
    return Field(
        "stack", "Training stack", "megatron", kind="select", options=STACK_OPTIONS, sets=sets if own else (), **kw
    )


def stack_fields(
    recompute: str, own: Mapping[str, str] | None = None, stack_help: str = "", **kw: object
) -> tuple[Field, Field, Field]:
    """The recomputation, the training stack and the loss, declared alike in every calculator that takes a stack.

    ``recompute`` is the recomputation's default: ``"stack"`` offers the stack's own first
    (``RECOMPUTE_OPTIONS_STACK``), a mode is the calculator's own default (``RECOMPUTE_OPTIONS_OP``); ``own`` is
    [`stack_field`][calc.widgets._stack_fields.stack_field]'s; ``kw`` (a group, ``advanced``) goes to all three.

    Examples:
        >>> [(f.name, f.default) for f in stack_fields("stack")]
        [('recompute', 'stack'), ('stack', 'megatron'), ('loss', 'stack')]
    """
    options = RECOMPUTE_OPTIONS_STACK if recompute == STACK_DEFAULT else RECOMPUTE_OPTIONS_OP
    help_ = {"help": stack_help} if stack_help else {}
    recompute_help = {"help": RECOMPUTE_STACK_HELP} if recompute == STACK_DEFAULT else {}
    return (
        recompute_field(recompute, options, **recompute_help, **kw),
        stack_field(own, **help_, **kw),
        loss_field(**kw),
    )


def stack_knobs(values: Mapping[str, str], names: tuple[str, ...] = ("loss",)) -> dict[str, str]:
    """The [`Layout`][calc.memory.layout.Layout]'s ``stack`` and the ``names`` knobs a calculator leaves to it
    (``loss``; ``recompute`` where it offers the stack's), each checked and given only when not the default
    (Megatron-LM; the stack's), so "Copy as Python" names only what the reader chose.

    Examples:
        >>> stack_knobs({"stack": "torchtitan", "loss": "stack"}), stack_knobs({"stack": "megatron", "loss": "stock"})
        ({'stack': 'torchtitan'}, {'loss': 'stock'})
    """
    stack = one_of(values, "stack", STACKS)
    knobs = {} if stack == "megatron" else {"stack": stack}
    for name in names:
        modes = LOSS_KINDS if name == "loss" else LAYOUT_RECOMPUTE_MODES
        if one_of(values, name, (STACK_DEFAULT, *modes)) != STACK_DEFAULT:
            knobs[name] = values[name]
    return knobs


def loss_field(**kw: object) -> Field:
    """The ``loss`` select, the stack's by default.

    Examples:
        >>> loss_field().default
        'stack'
    """
    return Field("loss", "Loss", STACK_DEFAULT, kind="select", options=LOSS_OPTIONS, help=LOSS_HELP, **kw)


def convention_labels() -> tuple[tuple[str, str], ...]:
    """The convention select's options, short enough for a form column: the bytes per parameter and a few words
    ([`CONVENTION_WORDS`][calc.widgets._stack_fields.CONVENTION_WORDS]; a convention without words keeps its full
    label).

    Examples:
        >>> convention_labels()[0]
        ('mixed-adam-16', '16 B · Adam, mixed precision')
    """
    return tuple(
        (
            name,
            f"{CONVENTIONS[name].bytes_per_param} B · {CONVENTION_WORDS[name]}" if name in CONVENTION_WORDS else label,
        )
        for name, label in convention_options()
    )


def convention_field(label: str = "Bytes per parameter", options: tuple[tuple[str, str], ...] | None = None) -> Field:
    """The bytes-per-parameter ``convention`` select (16 as in ZeRO, 18 as in Megatron-LM, ...)."""
    help_ = "" if options else CONVENTION_HELP
    options = options or convention_labels()
    known = {v for v, _ in options}
    aliases = tuple((old, new) for old, new in CONVENTION_ALIASES.items() if new in known)
    return Field("convention", label, "mixed-adam-16", kind="select", options=options, aliases=aliases, help=help_)
