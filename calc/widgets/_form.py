"""A calculator's form as the build pre-renders it: one control per field, grouped into fieldsets
(for [`render_calculator`][calc.widgets.render_calculator]; the browser worker never needs it)."""

from __future__ import annotations

import json
from typing import Any

from calc import markup

__all__: list[str] = []


def _control(calc_id: str, f: Any, values: dict[str, str]) -> str:
    """One field's label, control and help (``f``: a [`Field`][calc.widgets.Field])."""
    esc = markup.escape
    cid = f"{calc_id}-{f.name}"
    value = values[f.name]
    attrs = f'id="{cid}" name="{esc(f.name)}"'
    if f.help:
        attrs += f' aria-describedby="{cid}-help"'
    if f.enabled_when is not None:
        other, wanted = f.enabled_when
        attrs += f' data-enabled-when="{esc(other)}={esc(wanted)}"'
        if values.get(other) != wanted:
            attrs += " disabled"
    if f.sets:  # the default option restores this embedding's own values (a page's marker may set them)
        own = values.get(f.name) == f.default
        sets = {o: {k: values[k] if own and o == f.default else v for k, v in knobs} for o, knobs in f.sets}
        attrs += f' data-sets="{esc(json.dumps(sets))}"'
    if f.aliases:
        attrs += f' data-aliases="{esc(json.dumps(dict(f.aliases)))}"'
    if f.kind == "select":
        opts = "".join(
            f'<option value="{esc(v)}"{" selected" if v == value else ""}>{esc(label)}</option>'
            for v, label in f.options
        )
        control = f"<select {attrs}>{opts}</select>"
    elif f.kind == "checkbox":
        checked = " checked" if value in ("1", "true", "on") else ""
        control = f'<input type="checkbox" {attrs} value="1"{checked}>'
    elif f.kind == "textarea":
        control = f'<textarea {attrs} rows="6" spellcheck="false">{esc(value)}</textarea>'
    else:
        mode = ' inputmode="decimal"' if f.kind == "number" else ""
        control = f'<input type="text" {attrs} value="{esc(value)}"{mode} autocomplete="off" spellcheck="false">'
    help_ = f'<small id="{cid}-help" class="lc-field__help">{esc(f.help)}</small>' if f.help else ""
    return f'<div class="lc-field lc-field--{f.kind}"><label for="{cid}">{esc(f.label)}</label>{control}{help_}</div>'


def _form(calc_id: str, fields_: tuple[Any, ...], values: dict[str, str], group_order: tuple[str, ...]) -> str:
    """The controls in one ``<fieldset>`` per group (in ``group_order``, [`GROUP_ORDER`][calc.widgets.GROUP_ORDER]),
    each group's folded fields last, in a ``<details data-more>`` (open in the build when one of them is not at
    its default)."""
    esc = markup.escape
    groups: dict[str, list[Any]] = {}
    for f in fields_:
        groups.setdefault(f.fieldset, []).append(f)
    rank = {g: i for i, g in enumerate(group_order)}
    ordered = sorted(groups, key=lambda g: (rank.get(g, rank["Display"] - 0.5), list(groups).index(g)))
    parts = []
    for group in ordered:
        shown = "".join(_control(calc_id, f, values) for f in groups[group] if not f.folded)
        folded = [f for f in groups[group] if f.folded]
        more = ""
        if folded:
            changed = any(values[f.name] != f.default for f in folded)
            inner = "".join(_control(calc_id, f, values) for f in folded)
            more = (
                f'<details class="lc-calc__more" data-more{" open" if changed else ""}>'
                f'<summary>More options: {esc(group.lower())}</summary><div class="lc-calc__fields">{inner}</div>'
                "</details>"
            )
        slug = "-".join("".join(c if c.isalnum() else " " for c in group.lower()).split())
        parts.append(
            f'<fieldset class="lc-calc__group lc-calc__group--{esc(slug)}" data-group="{esc(group)}">'
            f'<legend>{esc(group)}</legend><div class="lc-calc__fields">{shown}</div>{more}</fieldset>'
        )
    return "".join(parts)
