"""The built site: strict build, stable anchors, engine-computed numbers, API coverage, link crawl, no foreign hosts."""

from __future__ import annotations

import html
import re
import sys
import zlib
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest

import calc
from calc import format_bytes, model_state_bytes

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "hooks"))

from numbers_registry import NUMBERS


def _ids(page_html: str) -> set[str]:
    return set(re.findall(r'\sid="([^"]+)"', page_html))


def test_public_anchors_exist(site_pages: dict[str, str]) -> None:
    pages = site_pages
    missing = []
    for line in (ROOT / "tests" / "public_anchors.txt").read_text().splitlines():
        if not line.strip() or line.startswith("# "):
            continue
        path, _, anchor = line.partition("#")
        if path not in pages or anchor not in _ids(pages[path]):
            missing.append(line)
    assert missing == [], f"public anchors that no longer exist: {missing}"


def test_every_heading_has_an_explicit_id() -> None:
    bad = []
    for md in (ROOT / "docs").rglob("*.md"):
        if md.name.startswith("_"):
            continue
        fenced = False
        for n, line in enumerate(md.read_text(encoding="utf-8").splitlines(), 1):
            if line.lstrip().startswith(("```", "~~~")):
                fenced = not fenced
            if not fenced and re.match(r"#{1,6} ", line) and not re.search(r"\{[^}]*#[\w-]+[^}]*\}\s*$", line):
                bad.append(f"{md.relative_to(ROOT)}:{n}: {line}")
    assert bad == [], "headings need an explicit { #id }:\n" + "\n".join(bad)


def test_prose_numbers_come_from_the_engine(site_pages: dict[str, str]) -> None:
    spans = []
    for page, text in site_pages.items():
        for name, inner in re.findall(r'data-num="([^"]+)">(.*?)</span>', text):
            # Markdown's abbr extension may wrap words of a number's text in <abbr>: compare the text.
            spans.append((page, name, html.unescape(re.sub(r"<[^>]+>", "", inner))))
    assert spans, "the home page prints engine numbers"
    for page, name, value in spans:
        assert value == NUMBERS[name](), (page, name)


@pytest.mark.parametrize(
    ("name", "direct"),
    [
        ("state-7b", lambda: format_bytes(model_state_bytes("7B").total)),
        ("state-70b", lambda: format_bytes(model_state_bytes("70B").total, digits=2)),
        ("zero1-7.5b-dp64", lambda: format_bytes(model_state_bytes(7.5e9, zero_stage=1, dp=64).total)),
    ],
)
def test_registry_matches_direct_engine_calls(name: str, direct) -> None:
    assert NUMBERS[name]() == direct()


def test_headline_numbers_on_home_page(built_site: Path) -> None:
    home = (built_site / "index.html").read_text()
    assert 'data-num="state-7b">112 GB<' in home
    assert 'data-num="state-70b">1.1 TB<' in home
    assert 'data-output="total"' in home and ">112 GB<" in home


def _inventory_names(site: Path) -> set[str]:
    raw = (site / "objects.inv").read_bytes()
    body = raw.split(b"\n", 4)[4]
    return {line.split(" ", 1)[0] for line in zlib.decompress(body).decode().splitlines()}


def test_public_api_is_documented(built_site: Path) -> None:
    names = _inventory_names(built_site)
    for public in calc.__all__:
        obj = getattr(calc, public)
        assert f"calc.{public}" in names or any(n.endswith(f".{public}") for n in names), public
        if callable(obj):
            assert obj.__doc__, public


def test_all_is_sorted() -> None:
    assert list(calc.__all__) == sorted(calc.__all__)


def test_no_asset_from_another_host(built_site: Path) -> None:
    """Scripts, styles, images, fonts and workers load only from this site (links to papers are fine)."""
    offenders = []
    for path in built_site.rglob("*"):
        if path.suffix not in (".html", ".css", ".js", ".mjs") or "pyodide" in path.parts:
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix == ".html":
            tags = re.findall(r"<(?:script|link|img|source|iframe)\b[^>]*>", text)
            fetched = [t for t in tags if not re.search(r'rel="(?:canonical|alternate)"', t)]
            refs = [m for t in fetched for m in re.findall(r'(?:src|href)="([^"]+)"', t)]
        elif path.suffix == ".css":
            refs = re.findall(r"url\(['\"]?([^'\")]+)", text)
        else:
            refs = re.findall(r"(?:import|fetch|Worker)\s*\(\s*['\"](https?://[^'\"]+)", text)
        offenders += [f"{path.relative_to(built_site)}: {r}" for r in refs if urlparse(r).scheme in ("http", "https")]
    assert offenders == []


def test_pyodide_and_engine_are_shipped(built_site: Path) -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    from build_runtime import COMPILED_STDLIB, RUNTIME_FILES

    (runtime,) = (built_site / "assets" / "runtime").iterdir()  # one content-hashed folder
    assert re.fullmatch(r"[0-9a-f]{16}", runtime.name), runtime.name
    for name in (*RUNTIME_FILES, COMPILED_STDLIB):
        assert (runtime / name).stat().st_size > 0
    assert not list(built_site.rglob("pyodide-lock.json")), "the lock file's info is inlined into the worker"
    assert (built_site / "assets" / "calc" / "calc.zip").stat().st_size > 0
    assert (built_site / "assets" / "katex" / "katex.min.css").exists()  # the math is typeset at build time:
    assert not (built_site / "assets" / "katex" / "katex.min.js").exists()  # no KaTeX script (hooks/lc_math.py)


def test_glossary_matches_the_tooltips() -> None:
    """One glossary: every abbreviation's tooltip is the start of its glossary entry."""
    abbreviations = dict(
        re.findall(r"^\*\[([^\]]+)\]: (.+)$", (ROOT / "docs" / "_abbreviations.md").read_text(), re.MULTILINE)
    )
    glossary = (ROOT / "docs" / "glossary.md").read_text()
    entries = {}
    for term, body in re.findall(
        r"^(\S[^\n]*?) \{ #g-[\w-]+ \}\n:   (.+?)(?=\n\n|\Z)", glossary, re.MULTILINE | re.DOTALL
    ):
        for name in term.split(", "):
            entries[name] = " ".join(body.split())
    missing = [a for a in abbreviations if a not in entries]
    assert missing == [], f"abbreviations without a glossary entry: {missing}"
    for name, tooltip in abbreviations.items():
        assert entries[name].startswith(tooltip.rstrip(".")), name


def test_diagrams_follow_the_palette_toggle(built_site: Path, site_pages: dict[str, str]) -> None:
    """Each diagram image is served as a light/dark pair that Material swaps with its palette toggle."""
    images = re.findall(r'<img[^>]+src="([^"]*assets/diagrams/[^"]+)"', "".join(site_pages.values()))
    assert images
    light = {i for i in images if i.endswith(".svg#only-light")}
    dark = {i for i in images if i.endswith("-dark.svg#only-dark")}
    assert len(light) + len(dark) == len(images) and {i.replace(".svg#only-light", "") for i in light} == {
        i.replace("-dark.svg#only-dark", "") for i in dark
    }
    for svg in (built_site / "assets" / "diagrams").glob("*.svg"):
        assert "prefers-color-scheme" not in svg.read_text(), svg.name


class _Links(HTMLParser):
    """Every ``href``/``src`` of a page (with its tag) and every ``id``/``name`` it defines."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.refs: list[tuple[str, str, str]] = []  # (tag, attribute, value)
        self.anchors: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("href", "src"):
                self.refs.append((tag, name, value))
            elif name == "id" or (name == "name" and tag == "a"):
                self.anchors.add(value)


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _site_url(built_site: Path) -> str:
    """The build's ``site_url``: the home page's canonical link."""
    return re.search(r'<link rel="canonical" href="([^"]+)"', (built_site / "index.html").read_text()).group(1)


CRAWLED: dict[str, int] = {}
"""What the link crawl saw (pages, internal links, fragments, external links), for the report."""


def test_link_crawl(built_site: Path) -> None:
    """Every internal ``href``/``src`` of every built HTML page resolves to a file of the site and every
    ``#fragment`` to an id (or ``<a name>``) of the target page. External URLs appear only as ``<a href>``
    (a link the reader may follow), never as something the page itself would request."""
    base = "http://site.invalid/"  # pages are addressed as they are served: docs/x/y.md at /x/y/
    site_url = _site_url(built_site)
    parsed: dict[Path, _Links] = {}

    def page(path: Path) -> _Links:
        if path not in parsed:
            parsed[path] = _parse(path)
        return parsed[path]

    pages = sorted(built_site.rglob("*.html"))
    broken, external, requested_elsewhere = [], set(), []
    internal = fragments = 0
    for html_path in pages:
        rel = html_path.relative_to(built_site).as_posix()
        url = base + (rel.removesuffix("index.html") if rel.endswith("index.html") else rel)
        for tag, attr, value in page(html_path).refs:
            ref = value.strip()
            if ref.startswith(site_url):  # absolute links to the site itself (canonical): internal
                ref = "/" + ref[len(site_url) :]
            target = urlparse(urljoin(url, ref))
            if target.scheme in ("data", "mailto", "blob", "javascript"):
                continue
            if target.netloc != "site.invalid":
                external.add(value)
                if not (tag == "a" and attr == "href"):
                    requested_elsewhere.append(f"{rel}: <{tag} {attr}={value!r}>")
                continue
            internal += 1
            file = built_site / unquote(target.path).lstrip("/")
            if target.path.endswith("/"):
                file = file / "index.html"
            if not file.is_file():
                broken.append(f"{rel}: {value} (no {file.relative_to(built_site)})")
                continue
            if target.fragment and file.suffix == ".html":
                fragments += 1
                if unquote(target.fragment) not in page(file).anchors:
                    broken.append(f"{rel}: {value} (no id {target.fragment!r} in {file.relative_to(built_site)})")
    CRAWLED.update(pages=len(pages), internal=internal, fragments=fragments, external=len(external))
    print(f"link crawl: {CRAWLED}; external links: {sorted(external)}")
    assert len(pages) > 20 and internal > 1000 and fragments > 100, CRAWLED
    assert broken == [], "broken internal links:\n" + "\n".join(broken)
    assert requested_elsewhere == [], "the page would fetch from another host:\n" + "\n".join(requested_elsewhere)


def test_sitemap_lists_every_page(built_site: Path, site_pages: dict[str, str]) -> None:
    """The sitemap, which instant navigation reads to decide which links it may swap in, lists every page."""
    site_url = _site_url(built_site)
    locs = re.findall(r"<loc>([^<]+)</loc>", (built_site / "sitemap.xml").read_text())
    assert all(loc.startswith(site_url) for loc in locs)
    assert sorted(loc[len(site_url) :] for loc in locs) == sorted(site_pages)
