"""The planner calculator's page lists every layout the search set aside, grouped by reason, with counts."""

from __future__ import annotations

import re
from html import unescape

from calc.widgets import calculators, render
from calc.widgets.planner import plan_result


def _outputs(fragment: str, prefix: str) -> dict[str, str]:
    found = re.findall(rf'data-output="({prefix}\d+)">([^<]*)<', fragment)
    return {name: unescape(text) for name, text in found}


def test_the_planner_lists_its_rejected_layouts_by_reason_with_counts() -> None:
    fields = {**calculators()["plan"].defaults, "preset": "llama3.1-405b", "gpus": "16384"}
    _, result = plan_result(fields)
    groups = result["rejected_by_reason"]
    assert len(groups) >= 2 and all(g["count"] > 0 for g in groups)
    fragment = str(render("plan", fields)["html"])
    reasons, counts = _outputs(fragment, "rejected-reason-"), _outputs(fragment, "rejected-")
    shown = [(reasons[f"rejected-reason-{i}"], counts[f"rejected-{i}"]) for i in range(1, len(groups) + 1)]
    want = sorted(groups, key=lambda g: -g["count"])  # most first
    assert shown == [(g["reason"], f"{g['count']:,}") for g in want]
    assert f'data-output="rejected-reason-{len(groups) + 1}"' not in fragment
    assert "Layouts set aside, by reason" in fragment
