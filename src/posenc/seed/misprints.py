"""Every figure the seed misprints, with its true value."""

from __future__ import annotations

from .cells import cases
from .self_test import quiz

__all__ = ["errata"]


def errata() -> list[str]:
    """Every printed figure of the seed that is not its true value, with the true value."""
    out: list[str] = []
    for c in cases():
        out.extend(f"Ex {c.example} ({c.cell}) {e}" for e in c.errata)
    for i, q in enumerate(quiz(), 1):
        out.extend(f"self-test Q{i} {f.erratum}" for f in q.figures if f.erratum)
    return out
