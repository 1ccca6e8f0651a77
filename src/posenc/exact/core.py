"""The arithmetic of the exact path, written once for NumPy arrays and numba scalars alike.

Everything here is IEEE additions, multiplications, ``rint`` and ``floor``
on float64 — no libm, no fused multiply-add — so it gives the same bits on
every machine, applied elementwise to NumPy arrays (:mod:`.angles`) or
compiled by numba for one element at a time (:func:`posenc.exact.fill.build_fill`, the
optional ``fast`` engine). The numba kernel is assembled from these very
functions, so the two engines cannot drift apart. Its substitutions, on
a CPU with FMA, give the same bits by proof: :func:`two_prod`'s error term
by one fused multiply-add, for the rows where that is Dekker's exact error
(:mod:`posenc.exact._fused`); and float32 values from a quicker evaluation
where its error bound decides the rounding (:mod:`posenc.exact._narrow`). The page's explorer runs a
JavaScript twin of them (``posenc/page/exact.js``): a change here must be made
there too, and tests/page/test_page_exact.py fails until the bits agree again.

References: T. J. Dekker, "A floating-point technique for extending the
available precision", Numer. Math. 18 (1971) (two-sum, two-product,
Veltkamp splitting); M. Payne and R. Hanek, "Radian reduction for
trigonometric functions", SIGNUM Newsletter 18 (1983) (reduction with a
multi-word π).
"""

from __future__ import annotations

import math
from contextlib import AbstractContextManager
from decimal import Context, Decimal, getcontext, localcontext
from fractions import Fraction
from typing import Any

import numpy as np

__all__ = [
    "DECIMAL_PREC",
    "FAST_EPS",
    "NEAR_ANGLE",
    "decimal_context",
    "quadrant",
    "reduce_core",
    "refold",
    "sincos_core",
    "split",
    "turns_core",
    "two_prod",
    "two_sum",
]

#: Decimal digits for every high-precision constant (~232 bits): frequencies,
#: wavelengths, scalings and the words of π/2 are all computed at this precision.
DECIMAL_PREC = 70


def decimal_context(prec: int = DECIMAL_PREC) -> AbstractContextManager[Context]:
    """The one Decimal context of posenc's high-precision constants: :data:`DECIMAL_PREC` digits.

    Whatever the caller's context, ``with decimal_context():`` computes at
    ``prec`` digits and restores it after (a thread's context is its own).

    >>> with decimal_context():
    ...     len(str(Decimal(1) / 3)) - 2
    70
    """
    ctx = getcontext().copy()
    ctx.prec = prec
    return localcontext(ctx)

#: Bound on |fast table path - exact path| in float64 (see posenc.exact.consecutive).
FAST_EPS = 2.0**-48

SPLITTER = 134217729.0  # 2**27 + 1: Veltkamp's constant for 53-bit doubles

# π to 120 digits (the one copy: posenc.exact.decimal_pi); checked against mpmath in tests/test_exact.py.
PI_DIGITS = (
    "3.14159265358979323846264338327950288419716939937510"
    "58209749445923078164062862089986280348253421170679"
    "82148086513282306647"
)


def split(a: Any) -> tuple[Any, Any]:
    """Veltkamp: ``hi + lo == a`` with each half holding at most 26 bits."""
    t = SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def two_prod(a: Any, ah: Any, al: Any, b: Any, bh: Any, bl: Any) -> tuple[Any, Any]:
    """Dekker: ``p + e == a * b`` exactly, given the Veltkamp halves of a and b."""
    p = a * b
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    """Knuth: ``s + e == a + b`` exactly, for any magnitudes."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def _words(numerator: Decimal, denominator: int, count: int) -> list[float]:
    parts = []
    with decimal_context():
        rest = numerator / denominator
        for _ in range(count):
            f = float(rest)
            parts.append(f)
            rest = rest - Decimal(f)
    return parts


# π/2 as four doubles (~210 bits), with the Veltkamp halves of the first two for exact k·P.
HALF_PI = _words(Decimal(PI_DIGITS), 2, 4)
P0, P1, P2, P3 = HALF_PI
P0H, P0L = split(P0)
P1H, P1L = split(P1)
TWO_OVER_PI = 2.0 / math.pi


def _taylor(first: int, last: int) -> np.ndarray:
    """(-1)**j / n! for n = first, first+2, ..., last, correctly rounded."""
    out = [float(Fraction(-1 if (n // 2) % 2 else 1, math.factorial(n))) for n in range(first, last + 1, 2)]
    return np.array(out, dtype=np.float64)


SIN_C = _taylor(3, 21)  # sin x = x + x**3 (c3 + c5 x**2 + ... + c21 x**18): truncation < 2**-66 on |x| <= 1
COS_C = _taylor(4, 22)  # cos x = 1 - x**2/2 + x**4 (c4 + ... + c22 x**18)


def horner(c: np.ndarray, z: Any) -> Any:
    """c[0] + c[1] z + … + c[-1] z**(len-1)."""
    acc = c[-1] * z + c[-2]
    for j in range(c.shape[0] - 3, -1, -1):
        acc = acc * z + c[j]
    return acc


def reduce_core(
    p: Any, ph: Any, pl: Any, plo: Any, qh: Any, ql: Any, has_lo: bool,
    w0: Any, w1: Any, w2: Any, w0h: Any, w0l: Any, w1h: Any, w1l: Any,
) -> tuple[Any, Any, Any]:
    """θ = (p + plo)·(w0 + w1 + w2) = k·π/2 + (x + y), |x| <= ~π/4 below |θ| ~ 2**50.

    ``ph, pl`` (and ``qh, ql``) are the Veltkamp halves of p (and plo), ``w0h …``
    those of the ladder's words.
    """
    h0, l0 = two_prod(p, ph, pl, w0, w0h, w0l)
    h1, l1 = two_prod(p, ph, pl, w1, w1h, w1l)
    k = np.rint(h0 * TWO_OVER_PI)
    kh, kl = split(k)
    a0, b0 = two_prod(k, kh, kl, P0, P0H, P0L)
    a1, b1 = two_prod(k, kh, kl, P1, P1H, P1L)
    # h0 and k·P0 agree in their leading bits: the cancellation happens here, and two_sum keeps it exact
    s, e = two_sum(h0, -a0)
    small = (l1 - b1) + (p * w2 - k * P2) - k * P3
    s, err = two_sum(s, l0)
    e = e + err
    s, err = two_sum(s, -b0)
    e = e + err
    s, err = two_sum(s, h1)
    e = e + err
    s, err = two_sum(s, -a1)
    e = e + err
    if has_lo:
        c0, d0 = two_prod(plo, qh, ql, w0, w0h, w0l)
        small = small + d0 + plo * w1
        s, err = two_sum(s, c0)
        e = e + err
    x, y = two_sum(s, e + small)
    return k, x, y


def refold(x: Any, y: Any) -> tuple[Any, Any, Any]:
    """For |x| > 0.8 (θ·2/π rounded to a neighbouring k above |θ| ~ 2**50): (k2, x', y') with x' back in range."""
    k2 = np.rint(x * TWO_OVER_PI)
    k2h, k2l = split(k2)
    t0, u0 = two_prod(k2, k2h, k2l, P0, P0H, P0L)
    x, err = two_sum(x, -t0)
    y = y + err - u0 - k2 * P1
    x, y = two_sum(x, y)
    return k2, x, y


def turns_core(hi: Any, lo: Any) -> tuple[Any, Any, Any]:
    """A phase of ``hi + lo`` turns (``|lo| <= ulp(hi)``) as ``(q, f, g)``: hi + lo = n + q/4 + (f + g) exactly.

    n is an integer (dropped: whole turns), q ∈ {0, 1, 2, 3} the quarter
    turns and ``|f + g| <= 1/8`` (to a rounding), ``|g| <= ulp(f)/2``. Every
    step is exact, whatever the magnitude: ``hi − rint(hi)`` (``hi`` within
    1/2 of an integer that is a multiple of its ulp, or Sterbenz below 1),
    the renormalising two-sum, and ``r − k/4`` (``|r − k/4| <= 1/8 <= |r|``
    and k/4 a multiple of ulp(r)). So a phase that is a multiple of 1/4
    gives f = g = 0 exactly, and sin/cos of 2π·(f + g) never meets an
    angle past π/4 (see :func:`quadrant` for the turn back).
    """
    r, e = two_sum(hi - np.rint(hi), lo)
    k = np.rint(4.0 * r)
    f, g = two_sum(r - 0.25 * k, e)
    return k - 4.0 * np.floor(k * 0.25), f, g


def quadrant(k: Any, s: Any, c: Any) -> tuple[Any, Any]:
    """sin and cos of k·π/2 + t from ``s``, ``c`` = sin t, cos t (k a whole float): a swap and signs, exact.

    >>> quadrant(np.array([0.0, 1.0, 2.0, -1.0]), np.array([0.6] * 4), np.array([0.8] * 4))
    (array([ 0.6,  0.8, -0.6, -0.8]), array([ 0.8, -0.6, -0.8,  0.6]))
    """
    q = k - 4.0 * np.floor(k * 0.25)
    odd = (q == 1.0) | (q == 3.0)
    s, c = np.where(odd, c, s), np.where(odd, s, c)
    return np.where(q >= 2.0, -s, s), np.where((q == 1.0) | (q == 2.0), -c, c)


def sincos_core(x: Any, y: Any) -> tuple[Any, Any]:
    """sin and cos of x + y (|x + y| <= 1, |y| <= ulp(x)), to under 1 float64 ulp."""
    xh, xl = split(x)
    zh, zl = two_prod(x, xh, xl, x, xh, xl)  # x**2 exactly
    poly = horner(SIN_C, zh)
    hz = 0.5 * zh
    sin_r = x + (x * zh * poly + y * (1.0 - hz))
    poly = horner(COS_C, zh)
    w = 1.0 - hz
    # (1 - w) - hz recovers the rounding error of 1 - hz exactly (Sterbenz)
    cos_r = w + ((((1.0 - w) - hz) - 0.5 * zl) + (zh * zh * poly - x * y))
    return sin_r, cos_r


#: Below this |θ| the reduction's x stays under 0.8, so :func:`refold` never runs
#: (:func:`posenc.exact.fill.build_fill` compiles a kernel without it for them).
NEAR_ANGLE = 2.0**40
