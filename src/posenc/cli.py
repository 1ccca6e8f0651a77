"""The ``posenc`` command (minimal; grows into the full command of issue 3)."""

from __future__ import annotations

import argparse
import sys

from .errors import PosEncError
from .examples import cases, errata


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit status (0 ok, 1 failed check, 2 bad input)."""
    parser = argparse.ArgumentParser(prog="posenc")
    sub = parser.add_subparsers(dest="cmd", required=True)
    for name in ("examples", "tour"):
        sub.add_parser(name)
    args = parser.parse_args(argv)
    try:
        failed = False
        for c in cases():
            print(f"{c.cell}  Ex {c.example}  {c.title}")
            for f in c.figures:
                mark = "" if f.agrees else f"   (seed prints {f.printed}: erratum)"
                print(f"     {f.label:<40} {f.true_text}{mark}")
            for ch in c.checks:
                print(f"   {'✓' if ch.passed else '✗'} {ch.claim}  [{ch.detail}]")
            failed |= not c.passed
        if args.cmd == "tour":
            print("\nErrata in the seed:")
            for e in errata():
                print("  " + e)
    except PosEncError as exc:
        print(f"posenc: error: {exc}", file=sys.stderr)
        return 2
    return 1 if failed else 0
