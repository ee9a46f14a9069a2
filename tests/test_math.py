"""Math typeset at build time (issue 20, ``hooks/lc_math.py``): every formula rendered, no inline style, no script."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hooks"))

pytestmark = pytest.mark.skipif(sys.platform == "emscripten", reason="builds pages and runs Node: host only")

_ELEMENT = re.compile(r'<(span|div) class="arithmatex"([^>]*)>(.*?)</\1>', re.DOTALL)


def test_every_formula_is_typeset_in_the_built_pages(built_site: Path) -> None:
    css = (built_site / "assets" / "stylesheets" / "katex-ssr.css").read_text()
    defined = set(re.findall(r"\.(ks-[0-9a-f]{8})\{", css))
    formulas = 0
    for page in built_site.rglob("*.html"):
        text = page.read_text(encoding="utf-8")
        for _, attrs, body in _ELEMENT.findall(text):
            formulas += 1
            where = page.relative_to(built_site).as_posix()
            assert 'data-typeset="build"' in attrs and body.startswith('<span class="katex'), where
            assert " style=" not in body, where  # the policy refuses inline styles: each is a class
            assert set(re.findall(r"\bks-[0-9a-f]{8}\b", body)) <= defined, where
            assert "\\(" not in body.split("<annotation", 1)[0], where  # no raw TeX left outside MathML's annotation
    assert formulas > 100


def test_tex_katex_cannot_parse_fails_the_build(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from mkdocs.exceptions import PluginError

    import lc_math

    monkeypatch.setattr(lc_math, "CACHE", tmp_path / "cache")
    (tmp_path / "page.html").write_text('<p><span class="arithmatex">\\(\\frac{1\\)</span></p>')
    with pytest.raises(PluginError, match=r"frac\{1"):
        lc_math.on_post_build({"site_dir": str(tmp_path)})


def test_formulas_are_rendered_and_their_styles_become_classes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import lc_math

    monkeypatch.setattr(lc_math, "CACHE", tmp_path / "cache")
    page = tmp_path / "page.html"
    page.write_text('<p><span class="arithmatex">\\(\\frac{a}{b}\\)</span> and <div class="arithmatex">\\[x^2\\]</div>')
    lc_math.on_post_build({"site_dir": str(tmp_path)})
    text = page.read_text()
    assert len(json.loads(next((tmp_path / "cache").iterdir()).read_text())) == 2  # cached for the next build
    assert text.count('data-typeset="build"') == 2 and " style=" not in text
    assert 'class="katex-display"' in text  # the div is display math
    css = (tmp_path / lc_math.STYLESHEET).read_text()
    assert all(f".{c}{{" in css for c in set(re.findall(r"\bks-[0-9a-f]{8}\b", text)))
