"""The calculators: form descriptions plus one pure ``render`` that both the build and the browser call.

Each calculator is a [`Calculator`][calc.widgets.Calculator]: a tuple of
[`Field`][calc.widgets.Field]s (what the reader types) and a ``compute`` function
that turns the typed strings into an HTML fragment of results, raising
[`CalcError`][calc.errors.CalcError] for bad input. The build pre-renders each
calculator's defaults with [`render_calculator`][calc.widgets.render_calculator];
in the browser a Pyodide worker calls [`render`][calc.widgets.render] on every
keystroke. Both run this same code, so the numbers a reader sees before and
after Pyodide boots cannot disagree.

DOM contract (the browser tests and later checks rely on it): the calculator is
``[data-calc=NAME]`` with ``data-state`` in ``prerendered | loading | ready |
error``; each input is an ``input``/``select``/``textarea`` with ``name=FIELD`` and a
visible ``<label>``; results carry ``[data-output=FIELD]``; bad input is
reported in the calculator's ``[role=alert]``. A result that is a number also
carries ``data-value`` (the raw number: bytes as an exact integer, seconds and
ratios as a decimal) and ``data-unit`` (one of ``calc.widgets._html.UNITS``:
``B``, ``s``, ``1``, …), placed before ``data-output``; text results (a model
name, a suggestion) carry neither. ``python -m calc NAME --json`` reads them, so
the command line and the page show the same computation.
An output may also carry ``data-fill=FIELD``: its text is what that field should show (a preset's parameter
count in will-it-fit's Parameters box), for the browser to write into the control after the render.
A select may carry ``data-sets``, JSON ``{option: {field: value}}`` ([`Field.sets`][calc.widgets.Field]): choosing
an option sets those fields, except the ones the reader (or a link) set (a training stack sets its defaults).
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field

from calc import markup
from calc.errors import CalcError

__all__ = [
    "ACCURACY_HREF",
    "ADVANCED_FIELDS",
    "CALCULATOR_MODULES",
    "Calculator",
    "FIELD_GROUPS",
    "Field",
    "GROUP_ORDER",
    "calculators",
    "render",
    "render_calculator",
]

CALCULATOR_MODULES: tuple[str, ...] = (
    "fit",
    "architecture",
    "compute",
    "inference",
    "pipeline",
    "comm",
    "activations",
    "training",
    "planner",
    "finetune",
    "serving",
)
"""Modules of ``calc.widgets`` that each define a ``CALCULATOR``; their names are the registry keys."""


GROUP_ORDER: tuple[str, ...] = (
    "Model",
    "Parallel layout",
    "Batch & sequence",
    "Precision & optimizer",
    "Hardware",
    "Network",
    "Pipeline schedule",
    "Display",
    "Other",
)
"""The order of the form's ``<fieldset>``s; a group not listed here comes just before ``"Display"``, in field order."""

FIELD_GROUPS: dict[str, str] = {
    **dict.fromkeys(
        ("preset", "config", "params", "tokens", "layers", "hidden", "heads", "kv_dims", "expert_params", "top_k"),
        "Model",
    ),
    **dict.fromkeys(
        ("dp", "tp", "pp", "cp", "ep", "zero_stage", "sequence_parallel", "interleave", "virtual_stages", "shard"),
        "Parallel layout",
    ),
    **dict.fromkeys(
        ("micro_batch", "global_batch", "seq_len", "seq", "batch", "num_microbatches", "recompute"),
        "Batch & sequence",
    ),
    **dict.fromkeys(
        (
            "convention",
            "precision",
            "kv_dtype",
            "dtype",
            "low_precision",
            "optimizer",
            "distributed_optimizer",
            "offload_optimizer",
            "offload_params",
            "grad_bytes",
            "flash_attention",
            "dropout",
            "implementation",
            "moe_routing",
            "factor",
            "stack",
            "loss",
        ),
        "Precision & optimizer",
    ),
    **dict.fromkeys(
        (
            "gpu",
            "gpu_memory",
            "gpus",
            "num_gpus",
            "peak_tflops",
            "mfu",
            "matmul_efficiency",
            "reserved_pct",
            "expandable_segments",
            "safety_margin",
        ),
        "Hardware",
    ),
    **dict.fromkeys(
        ("gpus_per_node", "intra", "inter", "intra_efficiency", "inter_efficiency"),
        "Network",
    ),
    **dict.fromkeys(("schedule", "backward_units"), "Pipeline schedule"),
    "unit": "Display",
}
"""The group of each field name the calculators share (a [`Field`][calc.widgets.Field]'s own ``group`` wins)."""

ADVANCED_FIELDS: frozenset[str] = frozenset(
    {
        "backward_units",
        "distributed_optimizer",
        "dropout",
        "expandable_segments",
        "factor",
        "grad_bytes",
        "implementation",
        "inter_efficiency",
        "interleave",
        "intra_efficiency",
        "low_precision",
        "matmul_efficiency",
        "moe_routing",
        "offload_optimizer",
        "offload_params",
        "reserved_pct",
        "safety_margin",
        "shard",
    }
)
"""Rarely changed options, folded in their group's "More options" ``<details>`` (the browser opens it when a
link sets one or the engine finds one invalid)."""


@dataclass(frozen=True)
class Field:
    """One input of a calculator.

    Attributes:
        name: The parameter name (the ``name`` attribute of the HTML control, and the URL key).
        label: The visible label.
        default: The default value, as the reader would type it.
        kind: ``"text"``, ``"number"``, ``"select"``, ``"checkbox"`` or ``"textarea"``.
        options: For selects, ``(value, label)`` pairs.
        help: A short hint shown under the control.
        enabled_when: ``(other_field, value)``: the control is disabled unless that field has that value.
        group: The ``<fieldset>`` the control sits in (one of [`GROUP_ORDER`][calc.widgets.GROUP_ORDER] or a
            calculator's own); blank takes [`FIELD_GROUPS`][calc.widgets.FIELD_GROUPS]' entry for the name.
        advanced: A rarely changed option, folded in its group's "More options" ``<details>``; ``None``
            takes whether the name is in [`ADVANCED_FIELDS`][calc.widgets.ADVANCED_FIELDS].
        sets: For a select, the other fields each option sets in the browser, ``(option, ((field, value), ...))``
            (the ``data-sets`` attribute; the default option sets the embedding's own values); a field the reader
            or a link set is left as it is.
        aliases: For a select, ``((old name, current option), ...)``: an old name given reads as the current one
            (in the browser, ``data-aliases``).
    """

    name: str
    label: str
    default: str
    kind: str = "text"
    options: tuple[tuple[str, str], ...] = ()
    help: str = ""
    enabled_when: tuple[str, str] | None = None
    group: str = ""
    advanced: bool | None = None
    sets: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    aliases: tuple[tuple[str, str], ...] = ()

    def current(self, value: str) -> str:
        """``value``, or the current option an old name stands for.

        Examples:
            >>> Field("c", "C", "a", kind="select", aliases=(("old", "a"),)).current("old")
            'a'
        """
        return dict(self.aliases).get(value, value)

    @property
    def fieldset(self) -> str:
        """The group this field is shown in: its own, else the table's by name, else ``"Other"``.

        Examples:
            >>> Field("tp", "TP", "1").fieldset, Field("tp", "TP", "1", group="Layout").fieldset
            ('Parallel layout', 'Layout')
        """
        return self.group or FIELD_GROUPS.get(self.name, "Other")

    @property
    def folded(self) -> bool:
        """Whether the field is folded away under "More options".

        Examples:
            >>> Field("dropout", "Dropout", "0").folded, Field("dropout", "Dropout", "0", advanced=False).folded
            (True, False)
        """
        return self.name in ADVANCED_FIELDS if self.advanced is None else self.advanced


@dataclass(frozen=True)
class Calculator:
    """A calculator: its fields and the pure function from typed values to an HTML fragment.

    Attributes:
        name: Registry key and ``data-calc`` value (``"will-it-fit"``).
        title: Heading shown above the form.
        fields: The inputs, in display order.
        compute: Maps ``{field: typed string}`` to an HTML fragment containing ``[data-output]`` elements;
            raises [`CalcError`][calc.errors.CalcError] on bad input.
        description: One sentence under the title.
        python: Maps the same values to the Python that computes the shown numbers with the public engine
            (``import calc`` …), offered as "Copy as Python" (written by ``calc.widgets._code``).
    """

    name: str
    title: str
    fields: tuple[Field, ...]
    compute: Callable[[dict[str, str]], str]
    description: str = ""
    python: Callable[[dict[str, str]], str] | None = None
    defaults: dict[str, str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "defaults", {f.name: f.default for f in self.fields})

    def implied(self, values: Mapping[str, str], given: Collection[str]) -> dict[str, str]:
        """``values`` with the fields a ``given`` option sets ([`Field.sets`][calc.widgets.Field]: a stack's
        recompute, ZeRO stage, shard) filled in where not ``given``, as the page does when the option is picked.

        Examples:
            >>> calc, v = calculators()["training-memory"], calculators()["training-memory"].defaults
            >>> [calc.implied({**v, "stack": "torchtitan"}, given)["zero_stage"] for given in (["stack"], v)]
            ['3', '1']
        """
        out = dict(values)
        for f in self.fields:
            if f.sets and f.name in given:
                out |= {k: v for k, v in dict(f.sets).get(out[f.name], ()) if k not in given}
        return out


_REGISTRY: dict[str, Calculator] = {}
_LOADED: dict[str, Calculator] = {}  # imported one at a time by render(); the full registry is built on demand

_MODULE_OF: dict[str, str] = {
    "activations": "activations",
    "communication": "comm",
    "finetune-memory": "finetune",
    "parameter-count": "architecture",
    "pipeline-bubble": "pipeline",
    "plan": "planner",
    "serving-memory": "inference",
    "serving-time": "serving",
    "training-compute": "compute",
    "training-memory": "training",
    "will-it-fit": "fit",
}
"""Which module defines each calculator, so that [`render`][calc.widgets.render] imports only that one (the
browser's first answer waits on no other calculator's code). A calculator missing here is still found, by
importing every module; ``tests/test_boot.py`` checks that this table agrees with the modules."""


def calculators() -> dict[str, Calculator]:
    """All calculators by name, imported on first use.

    Examples:
        >>> "will-it-fit" in calculators()
        True
    """
    if not _REGISTRY:
        for module in CALCULATOR_MODULES:
            calc = importlib.import_module(f"calc.widgets.{module}").CALCULATOR
            _REGISTRY[calc.name] = calc
    return _REGISTRY


def _lookup(name: str) -> Calculator:
    found = _LOADED.get(name)
    if found is not None:
        return found
    module = _MODULE_OF.get(name) if isinstance(name, str) else None
    if module in CALCULATOR_MODULES:
        calc = importlib.import_module(f"calc.widgets.{module}").CALCULATOR
        if calc.name == name:
            _LOADED[name] = calc
            return calc
    try:
        return calculators()[name]
    except KeyError:
        known = ", ".join(sorted(calculators()))
        raise CalcError("calculator", f"must be one of {known}", name, code="unknown-name") from None


def _merge(calc: Calculator, inputs: Mapping[str, object] | None) -> dict[str, str]:
    values = dict(calc.defaults)
    for key, value in (inputs or {}).items():
        if key in values:
            try:
                values[key] = "" if value is None else str(value)
            except ValueError:  # an int past Python's digit limit for str()
                raise CalcError(key, "must be text of at most a few thousand digits", type(value).__name__) from None
    values |= {f.name: f.current(values[f.name]) for f in calc.fields if f.aliases}  # old option names
    return calc.implied(values, {key for key in inputs or {} if key in values})


def _results(calc: Calculator, values: dict[str, str]) -> str:
    """The results fragment: the calculator's own, then the code that reproduces it (``calc.widgets._code``)."""
    from calc.widgets._code import code_block

    return calc.compute(values) + code_block(calc, values)


def render(
    name: str, inputs: Mapping[str, object] | None = None, partial: Callable[[str], object] | None = None
) -> dict[str, object]:
    """Compute a calculator's result fragment; bad input comes back as data, never as an exception.

    This is the one entry point the browser worker calls.

    Args:
        name: The calculator's name.
        inputs: Typed values by field name; missing fields take their defaults, unknown keys are ignored.
        partial: Called with a first results fragment before the full one by a calculator that searches (the
            planner's best layout so far, ``calc.widgets._partial``); the others never call it.

    Returns:
        ``{"ok": True, "html": fragment}`` or ``{"ok": False, "error": {"field", "message", "code", "label",
        "said"}}``: ``message`` names the field as typed on the command line (``params must be …``); ``label`` is
        the field's visible label and ``said`` the same message in the reader's words, led by that label
        (``Parameters must be …``), for the page.

    Examples:
        >>> render("will-it-fit", {"params": "7B"})["ok"]
        True
        >>> err = render("will-it-fit", {"params": "lots"})["error"]
        >>> err["field"], err["label"], err["said"][:31]
        ('params', 'Parameters', 'Parameters must be a positive c')
    """
    from calc.widgets._partial import PARTIAL  # here: a calculator's import stays as small as it was

    calc = None
    token = PARTIAL.set(partial)
    try:
        calc = _lookup(name)
        return {"ok": True, "html": _results(calc, _merge(calc, inputs))}
    except CalcError as err:
        return {"ok": False, "error": {**err.to_dict(), **_in_words(calc, err)}}
    finally:
        PARTIAL.reset(token)


def _in_words(calc: Calculator | None, err: CalcError) -> dict[str, str]:
    """The field's label and the message led by it rather than by the field's name (issue 19)."""
    label = next((f.label for f in calc.fields if f.name == err.field), err.field) if calc else err.field
    label = label.removesuffix(" (optional)").removesuffix(" (custom)")
    said = err.message
    if label != err.field and said.startswith(err.field + " "):
        said = label + said[len(err.field) :]
    return {"label": label, "said": said}


ACCURACY_HREF = "lc-site:accuracy/"
"""Where every calculator's footer links (the "How accurate is this?" page, ``docs/accuracy.md``), as a
site-root address the build rewrites relative to each page."""


def render_calculator(name: str, inputs: Mapping[str, object] | None = None, *, calc_id: str | None = None) -> str:
    """The whole calculator as HTML, its results pre-rendered, for the build to embed in a page.

    Args:
        name: The calculator's name.
        inputs: Values overriding the defaults for this embedding (a page can show the same
            calculator with other numbers).
        calc_id: A page-unique id (defaults to ``name``); it prefixes element ids and URL keys.

    Returns:
        An HTML string with no blank lines.

    Raises:
        CalcError: When the name is unknown or the values given are invalid: a page must never
            ship an error as its pre-rendered state.

    Examples:
        >>> html_ = render_calculator("will-it-fit")
        >>> 'data-calc="will-it-fit"' in html_ and 'data-state="prerendered"' in html_
        True
    """
    from calc.widgets._form import _form  # the build's: the worker never renders a form

    calc = _lookup(name)
    cid = calc_id or name
    values = _merge(calc, inputs)
    results = _results(calc, values)
    esc = markup.escape
    controls = _form(cid, calc.fields, values, GROUP_ORDER)
    defaults = esc(json.dumps(values, sort_keys=True))
    desc = f'<p class="lc-calc__desc">{esc(calc.description)}</p>' if calc.description else ""
    return (
        f'<div class="lc-calc" id="calc-{esc(cid)}" data-calc="{esc(calc.name)}" data-calc-id="{esc(cid)}" '
        f'data-state="prerendered" data-defaults="{defaults}">'
        f'<p class="lc-calc__title"><strong>{esc(calc.title)}</strong></p>{desc}'
        f'<noscript><p class="lc-calc__noscript" data-noscript>JavaScript is off, so the numbers shown are the '
        f"build-time defaults (a shared link's values are not applied, and editing the inputs changes nothing). "
        f"Live calculation needs JavaScript.</p></noscript>"
        f'<div class="lc-calc__body"><form class="lc-calc__form" novalidate autocomplete="off">{controls}</form>'
        f'<div class="lc-calc__answer"><div class="lc-calc__alert" id="calc-{esc(cid)}-alert" role="alert" data-alert>'
        f'</div><div class="lc-calc__results" data-results aria-live="polite">{results}</div></div></div>'
        f'<div class="lc-calc__footer"><span class="lc-calc__status" data-status>'
        f"Pre-rendered at build time by the same Python engine.</span>"
        # What the numbers do not count, and how far they are from measured runs: the accuracy page
        # (the build's hooks/lc_accuracy.py turns the lc-site: address into the page-relative link).
        f'<a class="lc-calc__accuracy" href="{ACCURACY_HREF}">How accurate is this?</a>'
        f'<button type="button" class="md-button lc-calc__link" data-copy-link>Copy link to these numbers</button>'
        f"</div></div>"
    )
