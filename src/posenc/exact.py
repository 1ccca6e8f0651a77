"""The extended-precision angle: the one place posenc turns positions into sin/cos.

Why this module exists: the usual ``sin(position * omega)`` in float32 rounds
the angle before the sine sees it. At position 10**6 one float32 ulp of the
angle is 0.06 rad, so the "encoding" is mostly rounding noise; even float64
loses ~10 bits of the reduced angle near 10**7.

Method (all in float64 NumPy, vectorised; no libm, so every platform gives
the same bits):

1. **Frequencies to ~160 bits.** Each ω_i is computed with :mod:`decimal` at
   70 significant digits and stored as an unevaluated sum of three doubles
   ``w0 + w1 + w2`` (a "triple-double").
2. **Exact product.** ``p * w0`` and ``p * w1`` are formed exactly as
   double-double pairs with Dekker's two-product (Veltkamp splitting);
   ``p * w2`` needs only one double.
3. **Reduction mod π/2 in extended precision.** ``k = rint(θ · 2/π)``; then
   ``θ - k·π/2`` with π/2 held as four doubles (~210 bits) and ``k·P_j``
   formed exactly. The first subtraction cancels exactly; the rest is
   summed as a double-double, so the reduced angle ``r`` (``|r| <= π/4``)
   is known to ~2**-100 absolute for every ``|θ| < 2**31``.
4. **Kernel.** sin and cos of ``r_hi + r_lo`` by Taylor polynomials (terms
   to x**21 / x**22, so the truncation is below 2**-66 on ``|x| <= 1``),
   with ``x**2`` formed exactly so ``1 - x**2/2`` keeps every bit; the
   quadrant ``k mod 4`` picks the signs. Error: under 1 float64 ulp.

Rounding that float64 value to float32 therefore lands within 1 float32 ulp
of the true value (the float64 error is ~2**-29 of a float32 ulp).

References: T. J. Dekker, "A floating-point technique for extending the
available precision", Numer. Math. 18 (1971) (two-sum, two-product);
M. Payne and R. Hanek, "Radian reduction for trigonometric functions",
SIGNUM Newsletter 18 (1983) (reduction with a multi-word π).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np

__all__ = [
    "Ladder",
    "decimal_pi",
    "fill_range",
    "fill_sincos",
    "geometric_ladder",
    "sincos",
    "to_triple",
]

_PREC = 70  # decimal digits kept in every high-precision constant (~232 bits)

# π to 120 digits; checked against mpmath in tests/test_exact.py.
_PI_DIGITS = (
    "3.14159265358979323846264338327950288419716939937510"
    "58209749445923078164062862089986280348253421170679"
    "82148086513282306647"
)


def decimal_pi() -> Decimal:
    """π as a :class:`~decimal.Decimal` with 120 significant digits."""
    return Decimal(_PI_DIGITS)


def to_triple(value: Decimal) -> tuple[float, float, float]:
    """Split a Decimal into three doubles whose exact sum is within 2**-159 of it.

    >>> to_triple(Decimal(1) / Decimal(3))[0] == 1 / 3
    True
    """
    with localcontext() as ctx:
        ctx.prec = _PREC
        h = float(value)
        rest = value - Decimal(h)
        m = float(rest)
        rest = rest - Decimal(m)
        return h, m, float(rest)


_SPLITTER = 134217729.0  # 2**27 + 1: Veltkamp's constant for 53-bit doubles


def _split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = _SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def _two_prod(
    a: np.ndarray, ah: np.ndarray, al: np.ndarray, b: np.ndarray, bh: np.ndarray, bl: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Dekker: ``p + e == a * b`` exactly, given the Veltkamp halves of a and b."""
    p = a * b
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def _two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth: ``s + e == a + b`` exactly, for any magnitudes."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def _consts(numerator: Decimal, denominator: int, count: int) -> list[float]:
    parts = []
    with localcontext() as ctx:
        ctx.prec = 130
        rest = numerator / denominator
        for _ in range(count):
            f = float(rest)
            parts.append(f)
            rest = rest - Decimal(f)
    return parts


# π/2 as four doubles (~210 bits), and its Veltkamp halves for exact k·P.
_HALF_PI = _consts(decimal_pi(), 2, 4)
_P = [np.float64(x) for x in _HALF_PI]
_PH = [np.float64(_split(np.float64(x))[0]) for x in _HALF_PI]
_PL = [np.float64(_split(np.float64(x))[1]) for x in _HALF_PI]
_TWO_OVER_PI = np.float64(2.0 / math.pi)


def _taylor(first: int, last: int) -> list[np.float64]:
    """(-1)**j / n! for n = first, first+2, ..., last, correctly rounded."""
    out = []
    for n in range(first, last + 1, 2):
        sign = -1 if (n // 2) % 2 else 1
        out.append(np.float64(float(Fraction(sign, math.factorial(n)))))
    return out


_SIN_C = _taylor(3, 21)  # sin x = x + x**3 (c3 + c5 x**2 + ... + c21 x**18)
_COS_C = _taylor(4, 22)  # cos x = 1 - x**2/2 + x**4 (c4 + ... + c22 x**18)


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
        """Build a ladder from high-precision frequencies (keep >= 50 digits)."""
        triples = [to_triple(v) for v in values]
        arrays = [np.array([t[j] for t in triples], dtype=np.float64) for j in range(3)]
        for a in arrays:
            a.setflags(write=False)
        return cls(*arrays)

    def __len__(self) -> int:
        return int(self.w0.shape[0])

    @functools.cached_property
    def _splits(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        w0h, w0l = _split(self.w0)
        w1h, w1l = _split(self.w1)
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
        ctx.prec = _PREC
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


def _reduce(
    p: np.ndarray, plo: np.ndarray | None, lad: Ladder
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """θ = (p + plo)·ω reduced: θ = k·π/2 + (r_hi + r_lo), |r| <= ~π/4.

    ``p`` and ``plo`` are ``[m, 1]``; results are ``[m, n]``.
    """
    w0h, w0l, w1h, w1l = lad._splits
    ph, pl = _split(p)
    h0, l0 = _two_prod(p, ph, pl, lad.w0, w0h, w0l)
    h1, l1 = _two_prod(p, ph, pl, lad.w1, w1h, w1l)
    k = np.rint(h0 * _TWO_OVER_PI)
    kh, kl = _split(k)
    a0, b0 = _two_prod(k, kh, kl, _P[0], _PH[0], _PL[0])
    a1, b1 = _two_prod(k, kh, kl, _P[1], _PH[1], _PL[1])
    # h0 and k·P0 agree in their leading bits, so this subtraction is where
    # the cancellation happens; two_sum keeps it exact.
    s, e = _two_sum(h0, -a0)
    small = (l1 - b1) + (p * lad.w2 - k * _P[2]) - k * _P[3]
    mids = [l0, -b0, h1, -a1]
    if plo is not None:
        qh, ql = _split(plo)
        c0, d0 = _two_prod(plo, qh, ql, lad.w0, w0h, w0l)
        mids.append(c0)
        small = small + d0 + plo * lad.w1
    for t in mids:
        s, err = _two_sum(s, t)
        e = e + err
    r_hi, r_lo = _two_sum(s, e + small)
    # Above |θ| ~ 2**50 the rounded product θ·2/π can pick a neighbouring k;
    # move those (rare) elements back into range.
    far = np.abs(r_hi) > 0.8
    if far.any():
        k2 = np.rint(r_hi[far] * _TWO_OVER_PI)
        x, y = r_hi[far], r_lo[far]
        k2h, k2l = _split(k2)
        t0, u0 = _two_prod(k2, k2h, k2l, _P[0], _PH[0], _PL[0])
        x, err = _two_sum(x, -t0)
        y = y + err - u0 - k2 * _P[1]
        r_hi[far], r_lo[far] = _two_sum(x, y)
        k = np.broadcast_to(k, r_hi.shape).copy()
        k[far] += k2
    return k, r_hi, r_lo


def _horner(coeffs: list[np.float64], z: np.ndarray) -> np.ndarray:
    acc = coeffs[-1] * z + coeffs[-2]
    for c in coeffs[-3::-1]:
        acc = acc * z + c
    return acc


def _kernel(
    k: np.ndarray, x: np.ndarray, y: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of k·π/2 + (x + y), |x + y| <= 1, to under 1 float64 ulp."""
    xh, xl = _split(x)
    zh, zl = _two_prod(x, xh, xl, x, xh, xl)  # x**2 exactly
    poly = _horner(_SIN_C, zh)
    hz = 0.5 * zh
    sin_r = x + (x * zh * poly + y * (1.0 - hz))
    poly = _horner(_COS_C, zh)
    w = 1.0 - hz
    # (1 - w) - hz recovers the rounding error of 1 - hz exactly (Sterbenz).
    cos_r = w + ((((1.0 - w) - hz) - 0.5 * zl) + (zh * zh * poly - x * y))
    q = (k - 4.0 * np.floor(k * 0.25)).astype(np.int8)
    odd = (q & 1).astype(bool)
    s = np.where(odd, cos_r, sin_r)
    c = np.where(odd, sin_r, cos_r)
    np.negative(s, out=s, where=q >= 2)
    np.negative(c, out=c, where=(q == 1) | (q == 2))
    return s, c


_CHUNK = 16384  # elements per block: keeps the ~30 temporaries in L2


def fill_sincos(
    positions: np.ndarray,
    ladder: Ladder,
    sin_out: np.ndarray,
    cos_out: np.ndarray,
    positions_lo: np.ndarray | None = None,
) -> None:
    """Write sin/cos(p·ω_i) into ``sin_out``/``cos_out``, both ``[m, n]``.

    Args:
        positions: float64 ``[m]``, validated (finite, ``|p| < 2**53``).
        ladder: the frequencies ``[n]``.
        sin_out: ``[m, n]`` array of any float dtype (a strided view is fine);
            each value is rounded once, from the float64 result.
        cos_out: like ``sin_out``.
        positions_lo: optional float64 ``[m]``; the position is then the
            unevaluated sum ``positions + positions_lo`` (used for exact
            differences ``p - q``).
    """
    m = positions.shape[0]
    n = len(ladder)
    if m == 0 or n == 0:
        return
    rows = max(1, _CHUNK // n)
    for a in range(0, m, rows):
        b = min(m, a + rows)
        p = positions[a:b, None]
        plo = None if positions_lo is None else positions_lo[a:b, None]
        k, x, y = _reduce(p, plo, ladder)
        s, c = _kernel(k, x, y)
        sin_out[a:b] = s
        cos_out[a:b] = c


def fill_range(
    start: int, length: int, ladder: Ladder, sin_out: np.ndarray, cos_out: np.ndarray
) -> None:
    """Write sin/cos for the consecutive positions ``start … start+length-1``.

    The entry point for whole tables (the torch caches use it too): the same
    guarantee as :func:`fill_sincos`, and the place where a faster method for
    consecutive positions lives.

    Args:
        start: first position (an integer, validated by the caller).
        length: number of rows.
        ladder: the frequencies ``[n]``.
        sin_out: ``[length, n]`` destination of any float dtype (views allowed).
        cos_out: like ``sin_out``.
    """
    fill_sincos(np.arange(start, start + length, dtype=np.float64), ladder, sin_out, cos_out)


def sincos(
    positions: np.ndarray, ladder: Ladder, positions_lo: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of ``positions[..., None] * ω``, float64 ``[..., n]``.

    Positions must already be validated (see :func:`posenc.errors.check_positions`).

    >>> lad = geometric_ladder(2, 10000.0, Fraction(2))
    >>> s, c = sincos(np.array([1000.0]), lad)
    >>> [round(float(v), 5) for v in (s[0, 0], c[0, 0], s[0, 1], c[0, 1])]
    [0.82688, 0.56238, -0.54402, -0.83907]
    """
    flat = np.ascontiguousarray(positions, dtype=np.float64).reshape(-1)
    lo = None
    if positions_lo is not None:
        lo = np.ascontiguousarray(positions_lo, dtype=np.float64).reshape(-1)
    n = len(ladder)
    s = np.empty((flat.shape[0], n))
    c = np.empty((flat.shape[0], n))
    fill_sincos(flat, ladder, s, c, lo)
    shape = (*np.shape(positions), n)
    return s.reshape(shape), c.reshape(shape)
