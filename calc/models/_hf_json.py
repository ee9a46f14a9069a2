"""Bounded parsing of a pasted ``config.json``: size and nesting are checked before ``json`` sees the text.

[`parse_config_json`][calc.models.hf_config.parse_config_json] and its two limits are re-exported by
[`calc.models.hf_config`][calc.models.hf_config], where they are documented and should be imported from.

Examples:
    >>> parse_config_json('{"model_type": "gpt2"}')
    {'model_type': 'gpt2'}
"""

from __future__ import annotations

import json
import re
from itertools import accumulate
from typing import Any

from calc.errors import CalcError

MAX_CONFIG_CHARS = 256 * 1024
"""The longest pasted ``config.json`` read: 262,144 characters.

Decoder configs on the Hugging Face Hub are a few kilobytes (shape keys, a ``rope_scaling`` block,
token ids); even ones carrying long per-dimension RoPE factor lists or label maps stay well under
100 KB. 256 KiB leaves that margin while the size check, the nesting scan and ``json.loads`` of
the largest allowed text stay within a few milliseconds."""

MAX_CONFIG_DEPTH = 32
"""The deepest nesting of arrays and objects a pasted ``config.json`` may have.

Real configs nest three or four levels (``text_config`` -> ``rope_scaling`` -> a list). Python's
``json`` decoder recurses once per level; thousands of ``[`` overflow the C stack of Pyodide (whose
stack is far smaller than CPython's) and kill the whole runtime, so the depth is checked by a scan
that does not recurse, before ``json.loads`` is called."""

_ESCAPE_RE = re.compile(r"\\.", re.DOTALL)
_NOT_BRACKET_RE = re.compile(r"[^\[\]{}]+")
_DEPTH_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _depth(text: str) -> int:
    """How deep ``text``'s arrays and objects nest, as far as a JSON parser would read them.

    Escapes are dropped, then the text between quotes (strings), so brackets inside strings are not
    counted; the depth is the largest running sum of ``+1`` per ``[``/``{`` and ``-1`` per ``]``/``}``.
    Where the sum first goes below zero (or a bracket does not match), a JSON parser stops with a
    syntax error, so the sum is exact everywhere the parser can reach. Everything runs in C
    (``re``, ``str.split``, ``map``, ``accumulate``, ``max``): linear, no recursion, no Python loop.
    """
    outside = "".join(_ESCAPE_RE.sub("", text).split('"')[::2])
    return max(accumulate(map(_DEPTH_STEP.__getitem__, _NOT_BRACKET_RE.sub("", outside))), default=0)


def parse_config_json(text: str, field: str = "config") -> dict[str, Any]:
    """Parse a pasted Hugging Face ``config.json``, bounded in size and depth before ``json`` sees it.

    Args:
        text: What the reader pasted.
        field: The input's name, used in error messages.

    Returns:
        The parsed JSON object.

    Raises:
        CalcError: On ``field`` when the text is longer than
            [`MAX_CONFIG_CHARS`][calc.models.hf_config.MAX_CONFIG_CHARS], nests deeper than
            [`MAX_CONFIG_DEPTH`][calc.models.hf_config.MAX_CONFIG_DEPTH], is not JSON, or is not an object.

    Examples:
        >>> parse_config_json('{"model_type": "llama", "rope_scaling": {"factor": 8.0}}')["rope_scaling"]
        {'factor': 8.0}
        >>> parse_config_json("[" * 5000)
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: config must nest arrays and objects at most 32 deep
        >>> parse_config_json("[1, 2]")
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: config must be a JSON object such as a Hugging Face config.json (got 'list')
    """
    if not isinstance(text, str):
        raise CalcError(field, "must be the text of a config.json", type(text).__name__)
    if len(text) > MAX_CONFIG_CHARS:
        raise CalcError(field, f"must be at most {MAX_CONFIG_CHARS:,} characters", f"{len(text):,} characters")
    if text.count("[") + text.count("{") > MAX_CONFIG_DEPTH and _depth(text) > MAX_CONFIG_DEPTH:
        raise CalcError(field, f"must nest arrays and objects at most {MAX_CONFIG_DEPTH} deep")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as err:
        raise CalcError(field, f"is not valid JSON: {err.msg} at line {err.lineno}, column {err.colno}") from None
    except (ValueError, RecursionError) as err:  # e.g. an integer longer than Python's digit limit
        raise CalcError(field, f"is not valid JSON: {str(err)[:80]}") from None
    if not isinstance(config, dict):
        raise CalcError(field, "must be a JSON object such as a Hugging Face config.json", type(config).__name__)
    return config
