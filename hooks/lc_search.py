"""MkDocs hook: keep the search index small and its previews readable.

* **The API page is indexed by its headings and first sentences.** mkdocstrings' object bodies (signatures,
  docstrings, examples) were half of ``search_index.json``, which every page downloads: after the search plugin
  wrote the index, each API entry keeps its title and the first sentence of its text ([`summary`][]), so a
  search for ``model_state_bytes`` still finds it. The page's front matter also weights it down
  (``search: boost``), so the guide ranks first.
* **No raw LaTeX in previews.** The math is typeset after the index is written (``lc_math``), so Material
  indexes the TeX as written and previews showed ``\\(12h^2\\)``; [`latex_to_text`][] turns each formula into
  plain text (``12h²``).

Registered after ``lc_build`` and before ``lc_compress`` in ``mkdocs.yml`` (hooks run after the plugins, so the
index exists when ``on_post_build`` runs here, and is compressed after).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from mkdocs.exceptions import PluginError

API_PAGE = "reference/api/"
SUMMARY_CHARS = 160
"""An API entry keeps this much of its first sentence in the index."""
_MATH = re.compile(r"\\\((?P<inline>.+?)\\\)|\\\[(?P<display>.+?)\\\]|\$\$(?P<dollars>.+?)\$\$", re.DOTALL)
_SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "lambda": "λ", "mu": "μ",
    "phi": "φ", "pi": "π", "psi": "ψ", "sigma": "σ", "tau": "τ", "theta": "θ", "Delta": "Δ", "Phi": "Φ",
    "Psi": "Ψ", "Sigma": "Σ", "times": "×", "cdot": "·", "cdots": "⋯", "ldots": "…", "dots": "…",
    "approx": "≈", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "ne": "≠", "neq": "≠", "to": "→",
    "rightarrow": "→", "infty": "∞", "sum": "∑", "prod": "∏", "lceil": "⌈", "rceil": "⌉", "lfloor": "⌊",
    "rfloor": "⌋", "in": "∈", "pm": "±", "div": "÷", "quad": " ", "qquad": " ", "left": "", "right": "",
}  # fmt: skip
_SUP = str.maketrans("0123456789+-=()n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿ")
_SUB = str.maketrans("0123456789+-=()", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎")
_BRACED = r"\{((?:[^{}]|\{[^{}]*\})*)\}"
"""A ``{…}`` group, one level of nested braces allowed."""
_FRAC = re.compile(r"\\[dt]?frac\s*" + _BRACED + r"\s*" + _BRACED)


def _script(body: str, table: dict[int, int], mark: str) -> str:
    body = body.strip()
    mapped = body.translate(table)
    return (
        mapped if all(ord(c) in table.values() for c in mapped) else f"{mark}{body if len(body) == 1 else f'({body})'}"
    )


def latex_to_text(tex: str) -> str:
    """A readable plain-text form of a LaTeX formula, for search previews (not a typesetter).

    Examples:
        >>> latex_to_text(r"12h^2 + 13h"), latex_to_text(r"2^{30}"), latex_to_text(r"\\Psi \\times 16")
        ('12h² + 13h', '2³⁰', 'Ψ × 16')
        >>> latex_to_text(r"\\frac{2 \\Psi}{N_d}"), latex_to_text(r"\\text{bytes} \\approx 10^{9}")
        ('(2 Ψ)/(N_d)', 'bytes ≈ 10⁹')
        >>> latex_to_text(r"x^{ab} \\, y_{i+1} \\mathbf{W}")
        'x^(ab) y_(i+1) W'
    """
    out = tex
    for _ in range(4):  # nested fractions, outermost first
        out = _FRAC.sub(lambda m: f"({m[1]})/({m[2]})", out)
    out = re.sub(r"\\(?:text|mathrm|mathbf|mathit|operatorname|textbf|textit|mathsf|mathtt)\s*\{([^{}]*)\}", r"\1", out)
    out = re.sub(r"\\sqrt\s*\{([^{}]*)\}", r"√(\1)", out)
    out = re.sub(r"\\[,;:! ]", " ", out)
    out = re.sub(r"\\([A-Za-z]+)", lambda m: _SYMBOLS.get(m[1], m[1]), out)
    out = re.sub(r"\^\s*(?:\{([^{}]*)\}|(\S))", lambda m: _script(m[1] or m[2], _SUP, "^"), out)
    out = re.sub(r"_\s*\{([^{}]*)\}", lambda m: _script(m[1], _SUB, "_"), out)
    out = out.replace("{", "").replace("}", "").replace("\\", "")
    return re.sub(r"\s+", " ", out).strip()


def plain_math(text: str) -> str:
    """``text`` with every ``\\(…\\)``, ``\\[…\\]`` and ``$$…$$`` formula in it replaced by [`latex_to_text`][].

    Examples:
        >>> plain_math(r"about \\(16\\Psi\\) bytes, or \\[M = 2^{30}\\]")
        'about 16Ψ bytes, or M = 2³⁰'
    """
    return _MATH.sub(lambda m: latex_to_text(m["inline"] or m["display"] or m["dollars"]), text)


def summary(text: str, limit: int = SUMMARY_CHARS) -> str:
    """The first sentence of an indexed text, at most ``limit`` characters (cut at a word).

    Examples:
        >>> summary("<pre><code>f(x: int)</code></pre> <p>Bytes of model state per GPU. More.</p><ul><li>x</li></ul>")
        '<p>Bytes of model state per GPU.</p>'
        >>> summary("<p>" + "word " * 50 + "</p>", limit=20)
        '<p>word word word word …</p>'
    """
    prose = re.sub(r"<pre>.*?</pre>", " ", text, flags=re.DOTALL)  # the signature and examples: code, not prose
    plain = html.unescape(re.sub(r"<[^>]+>", "", prose)).strip()
    first = re.split(r"(?<=[.!?])\s", plain, maxsplit=1)[0]
    if len(first) > limit:
        first = first[:limit].rsplit(" ", 1)[0] + " …"
    return f"<p>{html.escape(first, quote=False)}</p>" if first else ""


def on_post_build(config) -> None:
    index = Path(config["site_dir"]) / "search" / "search_index.json"
    if not index.is_file():
        raise PluginError(f"lc_search: {index} is missing (is the search plugin configured?)")
    data = json.loads(index.read_text(encoding="utf-8"))
    for doc in data["docs"]:
        doc["title"], doc["text"] = plain_math(doc["title"]), plain_math(doc["text"])
        if doc["location"].startswith(API_PAGE):
            doc["text"] = summary(doc["text"])
    index.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")), encoding="utf-8")
