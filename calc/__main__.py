"""Command line: ``python -m calc``. Every calculator of the site, with the same inputs.

Examples (shell)::

    python -m calc list
    python -m calc will-it-fit params=70B zero_stage=3 dp=64
    python -m calc will-it-fit params=70B --json
"""

from __future__ import annotations

import argparse
import html
import json
import re
import sys

from calc.errors import CalcError
from calc.widgets import calculators, render

__all__ = ["main"]


def _text(fragment: str) -> str:
    """Turn a result fragment into plain text lines for a terminal."""
    fragment = re.sub(r'<div class="lc-bar".*?</div></div>', "", fragment)
    fragment = re.sub(r"</(p|tr|li|h\d)>", "\n", fragment)
    fragment = re.sub(r"</t[dh]>", "\t", fragment)
    fragment = re.sub(r"<[^>]+>", "", fragment)
    lines = (html.unescape(line).strip() for line in fragment.splitlines())
    return "\n".join(line for line in lines if line)


def _outputs(fragment: str) -> dict[str, str]:
    pairs = re.findall(r'data-output="([^"]+)"[^>]*>(.*?)</', fragment)
    return {k: html.unescape(v) for k, v in pairs}


def main(argv: list[str] | None = None) -> int:
    """Run the CLI; returns the process exit status (2 for bad input)."""
    parser = argparse.ArgumentParser(prog="python -m calc", description=__doc__.splitlines()[0])
    parser.add_argument("calculator", help="a calculator name, or 'list'")
    parser.add_argument("inputs", nargs="*", metavar="field=value", help="inputs; missing ones take the defaults")
    parser.add_argument("--json", action="store_true", help="print the named outputs as JSON")
    args = parser.parse_args(argv)
    if args.calculator == "list":
        for name, c in sorted(calculators().items()):
            fields = " ".join(f"{f.name}={f.default}" for f in c.fields)
            print(f"{name}: {c.title}\n    {fields}")
        return 0
    inputs: dict[str, str] = {}
    for item in args.inputs:
        key, sep, value = item.partition("=")
        if not sep:
            print(f"error: inputs are field=value pairs (got {item!r})", file=sys.stderr)
            return 2
        inputs[key] = value
    try:
        known = calculators()[args.calculator].defaults if args.calculator in calculators() else {}
        unknown = sorted(set(inputs) - set(known)) if known else []
        if unknown:
            raise CalcError(unknown[0], f"is not an input of {args.calculator} (inputs: {', '.join(known)})")
    except CalcError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    result = render(args.calculator, inputs)
    if not result["ok"]:
        print(f"error: {result['error']['message']}", file=sys.stderr)
        return 2
    fragment = str(result["html"])
    print(json.dumps(_outputs(fragment), indent=2) if args.json else _text(fragment))
    return 0


if __name__ == "__main__":
    sys.exit(main())
