"""What a worked case is made of: the figures its source printed, and its checked claims.

A :class:`Printed` number is the source's text beside the value posenc
computes for it; a :class:`Check` is one "Verify" claim run against the
library. Where a printed number is not the true value to its printed digits,
it is an *erratum*: the source's text is kept, the true value shown beside it.
The seed's cases (:mod:`posenc.seed.cells`) and every family's worked cases
are built from these.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from ..errors import PosEncError, show_value

__all__ = ["Case", "CaseSet", "Check", "Printed", "check"]


@dataclass(frozen=True)
class Printed:
    """One number printed in the seed, against the value posenc computes.

    Attributes:
        label: what it is, e.g. ``"sin(1000)"``.
        printed: the seed's text for it, e.g. ``"0.82688"``.
        value: posenc's value (float64, exact to 1 ulp).
    """

    label: str
    printed: str
    value: float

    @property
    def decimals(self) -> int:
        """Digits after the point in the printed figure."""
        exp = Decimal(self.printed).as_tuple().exponent
        return max(0, -int(exp))

    @property
    def agrees(self) -> bool:
        """True when the value, rounded to the printed digits, is the printed figure."""
        step = Decimal(1).scaleb(-self.decimals)
        return abs(Decimal(self.value) - Decimal(self.printed)) <= step / 2

    @property
    def true_text(self) -> str:
        """The value written with as many digits as the seed used."""
        return f"{self.value:.{self.decimals}f}"

    @property
    def cited(self) -> str:
        """The true value as an answer quotes it, a misprint marked: ``60611; the seed misprints it as 60650``."""
        return self.true_text if self.agrees else f"{self.true_text}; the seed misprints it as {self.printed}"

    @property
    def erratum(self) -> str | None:
        """``None``, or a sentence naming the seed's wrong figure and the true one."""
        if self.agrees:
            return None
        return f"{self.label}: the seed prints {self.printed}, the true value is {self.true_text}"


@dataclass(frozen=True)
class Check:
    """One "Verify" claim of the seed, checked against the library."""

    claim: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Case:
    """A worked case: a cell of a scenario matrix, its printed figures and its checks."""

    cell: str
    example: int
    title: str
    tricky: str
    figures: tuple[Printed, ...]
    checks: tuple[Check, ...]

    @property
    def passed(self) -> bool:
        """Every check of the library holds (errata in the seed's text do not count)."""
        return all(c.passed for c in self.checks)

    @property
    def errata(self) -> tuple[str, ...]:
        return tuple(e for e in (f.erratum for f in self.figures) if e)


def check(claim: str, passed: bool | np.bool_, detail: str) -> Check:
    """A :class:`Check` from a claim, whether it held, and the numbers behind it."""
    return Check(claim, bool(passed), detail)


class CaseSet:
    """A set of worked cases by cell name (any letter case), each computed when asked for.

    >>> demo = CaseSet("cell", {"A": lambda: Case("A", 1, "t", "", (), ())})
    >>> demo.cells, demo.case("a").cell
    (('A',), 'A')
    """

    def __init__(self, what: str, builders: dict[str, Callable[[], Case]]) -> None:
        self.what = what
        self._builders = dict(builders)
        self.cells: tuple[str, ...] = tuple(builders)

    def _key(self, cell: object) -> str:
        key = cell.upper() if isinstance(cell, str) else None
        if key not in self._builders:
            raise PosEncError(f"{self.what} must be one of {', '.join(self.cells)}, got {show_value(cell)}")
        return str(key)

    def case(self, cell: str) -> Case:
        """Compute one case by name."""
        return self._builders[self._key(cell)]()

    def cases(self, cells: list[str] | tuple[str, ...] | None = None) -> list[Case]:
        """Compute the cases named (all by default), every name validated before any work."""
        keys = [self._key(k) for k in (cells or self.cells)]
        return [self._builders[k]() for k in keys]
