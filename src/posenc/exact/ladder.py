"""Frequencies held to ~160 bits: the :class:`Ladder` every exact computation takes.

Each frequency is computed with :mod:`decimal` at 70 significant digits and
stored as an unevaluated sum of three doubles ``w0 + w1 + w2``.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from ..errors import MAX_ANGLE, MIN_FREQUENCY, PosEncError
from .core import PI_DIGITS, decimal_context, split

__all__ = ["Ladder", "decimal_pi", "geometric_ladder", "ladder_digits", "seed_ladder", "to_triple"]

# π to 120 digits; checked against mpmath in tests/test_exact.py.
def decimal_pi() -> Decimal:
    """π as a :class:`~decimal.Decimal` with 120 significant digits."""
    return Decimal(PI_DIGITS)


def to_triple(value: Decimal) -> tuple[float, float, float]:
    """Split a Decimal into three doubles whose exact sum is within 2**-159 of it.

    >>> to_triple(Decimal(1) / Decimal(3))[0] == 1 / 3
    True
    """
    with decimal_context():
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

    def __post_init__(self) -> None:
        # Read-only views, whoever built the ladder: numba types a read-only array apart from a writable one,
        # and a ladder of each kind compiled every kernel signature twice (8 s each, cold). The caller's
        # arrays keep their flags; the ladder's words cannot be changed through it.
        for name in ("w0", "w1", "w2"):
            words = getattr(self, name)
            if isinstance(words, np.ndarray) and words.flags.writeable:
                words = words.view()
                words.setflags(write=False)
                object.__setattr__(self, name, words)

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
        return cls(*(np.array([t[j] for t in triples], dtype=np.float64) for j in range(3)))

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


def _decimal(x: Decimal | Fraction | float) -> Decimal:
    """x as a Decimal (a Fraction divided in the current context; a float or Decimal exactly)."""
    return Decimal(x.numerator) / Decimal(x.denominator) if isinstance(x, Fraction) else Decimal(x)


def ladder_digits(
    n: int, base: Decimal | Fraction | float, denominator: Fraction | int, scale: Decimal | Fraction | float = 1
) -> list[Decimal]:
    """ω_k = scale · base**(-k / denominator) for k = 0 … n-1, as :data:`DECIMAL_PREC`-digit Decimals.

    The one place posenc computes a geometric ladder's digits (sinusoid,
    RoPE, its scalings, M-RoPE's per-axis ladders, tensor2tensor's timescales):
    ω_0 = scale, then each rung times base**(-1/denominator); after n rungs
    the relative error is below n·10**-69, far under the 2**-159 a
    :class:`Ladder` keeps.

    >>> [float(w) for w in ladder_digits(3, 100.0, 2)]
    [1.0, 0.1, 0.01]
    """
    with decimal_context():
        b = _decimal(base)
        den = Fraction(denominator)
        ratio = (-(b.ln()) / (Decimal(den.numerator) / Decimal(den.denominator))).exp()
        w = _decimal(scale)
        values = []
        for _ in range(n):
            values.append(+w)
            w = w * ratio
    return values


@functools.lru_cache(maxsize=128)
def geometric_ladder(
    n: int, base: float, denominator: Fraction, scale: Fraction | float = 1
) -> Ladder:
    """ω_k = scale · base**(-k / denominator) for k = 0 … n-1, to ~160 bits (:func:`ladder_digits`).

    The seed's ladder is ``geometric_ladder(d/2, base, Fraction(d, 2))``:
    base**(-2i/d) = base**(-i/(d/2)).
    """
    return Ladder.from_decimals(ladder_digits(n, base, denominator, scale))


def seed_ladder(d_model: int, base: float) -> Ladder:
    """The ladder of the seed's formula, ω_i = base**(-2i/d_model), i < d_model/2, to ~160 bits.

    >>> seed_ladder(4, 100.0).w0.tolist()
    [1.0, 0.1]
    """
    n = d_model // 2
    return geometric_ladder(n, base, Fraction(n))
