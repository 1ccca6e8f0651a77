"""Frequencies held to ~160 bits: the :class:`Ladder` every exact computation takes.

Each frequency is computed with :mod:`decimal` at 70 significant digits and
stored as an unevaluated sum of three doubles ``w0 + w1 + w2``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

from ..errors import MAX_ANGLE, MIN_FREQUENCY, PosEncError
from .core import DECIMAL_PREC, PI_DIGITS, split

__all__ = ["Ladder", "decimal_pi", "geometric_ladder", "seed_ladder", "to_triple"]

# π to 120 digits; checked against mpmath in tests/test_exact.py.
def decimal_pi() -> Decimal:
    """π as a :class:`~decimal.Decimal` with 120 significant digits."""
    return Decimal(PI_DIGITS)


def to_triple(value: Decimal) -> tuple[float, float, float]:
    """Split a Decimal into three doubles whose exact sum is within 2**-159 of it.

    >>> to_triple(Decimal(1) / Decimal(3))[0] == 1 / 3
    True
    """
    with localcontext() as ctx:
        ctx.prec = DECIMAL_PREC
        h = float(value)
        rest = value - Decimal(h)
        m = float(rest)
        rest = rest - Decimal(m)
        return h, m, float(rest)


@dataclass(frozen=True, eq=False)
class Ladder:
    """A vector of angular frequencies held to ~160 bits.

    ``w0`` is each frequency rounded to float64; ``w1`` and ``w2`` carry the
    next 106 bits. Build one with :func:`geometric_ladder` or
    :meth:`from_decimals`; :func:`sincos` takes it.

    Attributes:
        w0: float64 ``[n]``, the frequencies correctly rounded.
        w1: float64 ``[n]``, first correction.
        w2: float64 ``[n]``, second correction.
    """

    w0: np.ndarray
    w1: np.ndarray
    w2: np.ndarray

    @classmethod
    def from_decimals(cls, values: Sequence[Decimal]) -> Ladder:
        """Build a ladder from high-precision frequencies (keep >= 50 digits).

        Raises:
            PosEncError: for a frequency outside [2**-960, 2**53), where
                it could not be held to full precision or even one position
                would leave the exact range (:data:`posenc.errors.MAX_ANGLE`).
        """
        lo, hi = Decimal(MIN_FREQUENCY), Decimal(MAX_ANGLE)
        for i, v in enumerate(values):
            if not lo <= v < hi:
                raise PosEncError(
                    f"frequency ω_{i} = {float(v):.6g} is outside [2**-960, 2**53), the range posenc's "
                    "exact path holds to full precision"
                )
        triples = [to_triple(v) for v in values]
        arrays = [np.array([t[j] for t in triples], dtype=np.float64) for j in range(3)]
        for a in arrays:
            a.setflags(write=False)
        return cls(*arrays)

    def __len__(self) -> int:
        return int(self.w0.shape[0])

    @functools.cached_property
    def fastest(self) -> float:
        """The largest frequency (0 for an empty ladder): the one that meets 2**53 first."""
        return float(self.w0.max()) if len(self) else 0.0

    @functools.cached_property
    def splits(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """Veltkamp halves (w0_hi, w0_lo, w1_hi, w1_lo) for exact products, computed once."""
        w0h, w0l = split(self.w0)
        w1h, w1l = split(self.w1)
        return w0h, w0l, w1h, w1l


@functools.lru_cache(maxsize=128)
def geometric_ladder(
    n: int, base: float, denominator: Fraction, scale: Fraction | float = 1
) -> Ladder:
    """ω_k = scale · base**(-k / denominator) for k = 0 … n-1, to ~160 bits.

    The seed's ladder is ``geometric_ladder(d/2, base, Fraction(d, 2))``:
    base**(-2i/d) = base**(-i/(d/2)).
    """
    with localcontext() as ctx:
        ctx.prec = DECIMAL_PREC
        b = Decimal(base)
        den = Decimal(denominator.numerator) / Decimal(denominator.denominator)
        ratio = (-(b.ln()) / den).exp()
        if isinstance(scale, Fraction):
            w = Decimal(scale.numerator) / Decimal(scale.denominator)
        else:
            w = Decimal(scale)
        values = []
        for _ in range(n):
            values.append(+w)
            w = w * ratio
    return Ladder.from_decimals(values)


def seed_ladder(d_model: int, base: float) -> Ladder:
    """The ladder of the seed's formula, ω_i = base**(-2i/d_model), i < d_model/2, to ~160 bits.

    >>> seed_ladder(4, 100.0).w0.tolist()
    [1.0, 0.1]
    """
    n = d_model // 2
    return geometric_ladder(n, base, Fraction(n))
