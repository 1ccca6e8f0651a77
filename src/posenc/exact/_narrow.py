"""float32 rows the quick way: a cheaper float64 sin/cos with a proven error bound, and the exact row where it is close.

The exact kernel (:func:`~posenc.exact.fill.build_fill`) computes each
value K to within a few float64 ulps and a float32 output stores
``float32(K)``. For a float32 output most of that work only decides bits
that the rounding then drops. Here each row is first computed by a cheaper
evaluation C (a double-double reduction with two words of π/2, Taylor
polynomials to x**15 / x**16 by fused multiply-adds) whose distance to K is
bounded by B. If ``float32(C − B) == float32(C + B)`` (nonzero), every value
in between rounds to that one float32, K included (it lies in between, and
rounding is monotonic): that float32 is stored, and it is ``float32(K)``. A
row where some value fails the test (within B of a float32 rounding
boundary, or rounding to zero) is computed again by the exact kernel. So
every stored bit is the exact kernel's, on every machine; only the time
changes. This is the scheme of :mod:`posenc.exact._jit` (a fast value, a
bound, the exact one where the bound does not decide).

**The bound.** u = 2**−53. The row's position p ≠ 0 qualifies for the
fused product (:data:`~posenc.exact._fused.ROW_FLOOR`: every product below
is in the exact range) and the angle is in the near kernel's range,
``|θ| < 2**40`` (its k = rint(fl(p·w0)·2/π) leaves ``|x| <= 0.786``; the same
k is taken here, so the quadrant is the same). θ = p·(w0 + w1 + w2), the
value the exact kernel computes. Per element:

1. ``h = fl(p·w0)``, ``l = fma(p, w0, −h) = p·w0 − h`` (exact),
   ``m = fl(p·w1)``: ``θ = h + l + m + δ``, ``|δ| <= u|p·w1| + |p·w2|``.
2. ``k = rint(fl(h·2/π))``, ``a0 = fl(k·P0)``, ``b0 = fma(k, P0, −a0)``
   (exact), ``s = fl(h − a0)``, ``t = fl(fl(l − b0) + fl(m − fl(k·P1)))``,
   ``x̃ = fl(s + t)``. With ``A = |p|·max w0 >= |h|/(1 + u)``, ``|k| <= 0.64A
   + 1``: ``|l|, |b0| <= u(A + 1)`` (``|a0| <= |h| + 0.8``), ``|k·P1| <= 2**−53.8(0.64A + 1)``, so
   the three roundings in t cost at most ``6u²(A + 1) + 2.1u|p·w1|``, m's
   ``u|p·w1|``; s's and
   x̃'s at most ``u|s| + u|x̃| <= 2.01u|x̃| + 3u²(A + 1) + 1.1u|p·w1|``; π/2 −
   P0 − P1 < 1.6e−33 and k·P1's rounding add ``(0.64A + 1)·2**−106``.
   Altogether ``|x̃ − (θ − k·π/2)| <= 2.01u|x̃| + α``, ``α = 2**−100(A + 1) +
   |p|·(5u·max|w1| + max|w2|)``.
3. ``z = fl(x̃²)``; ``sin = fma(x̃·z, S(z), x̃)`` with S's coefficients
   −1/3!, 1/5!, …, −1/15! (Taylor's, as doubles), ``cos = fma(z, Q(z), 1)``
   with Q's −1/2!, 1/4!, …, 1/16!, each by Horner with fused multiply-adds. On ``|x̃| <= 0.79``
   the truncations are below ``0.79**17/17! < 2**−53.7`` (relative to x̃: the
   first term left out is x̃**17/17!) and ``0.79**18/18! < 2**−58``; x̃z·S(z)
   is at most 0.11|x̃| and carries a relative error under 12u, z·Q(z) at
   most 0.32 under 12u; the last roundings are u. With ``|x̃| <=
   1.12|sin x̃|`` and ``cos x̃ >= 0.7`` on that range, each of sin and cos of
   x̃ is off by at most 5u of its value, and moving x̃ to the true reduced
   angle adds ``2.01u|x̃| + α`` (|sin′|, |cos′| <= 1): ``|C − S| <= 8u|C| +
   α`` for the true value S.
4. The exact kernel: ``|K − S| <= 4`` float64 ulps of S (posenc's float64
   guarantee, tested against mpmath in tests/exact/test_exact.py) ``<= 8u|S|``,
   and its reduction's absolute error is ~2**−100 per unit of A; this bound
   grants it ``128u|S| + 2**−80(A + 1)``.

So ``|C − K| <= 140u|C| + 2α + 2**−80(A + 1)``, and the kernel takes ``B =
2**−44·|C| + β`` with ``β = 2**−79(A + 1) + 2|p|(2**−50·max|w1| +
max|w2|)``, over twice that bound (2**−44 = 512u): the margin covers the
roundings in computing B, C − B and C + B (each under 2u|C|). About one
value in 2**18 lies within B of a rounding boundary (measured: one row of
256 values in ~1000); its row is then computed exactly.

Only for float32 outputs, positions without a low part, the near kernel and
a CPU with FMA (:func:`~posenc.exact._fused.target_has_fma`); anything else
takes the exact kernel, as does a position of 0 (sin 0 = ±0: the test above
refuses a zero).
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from .core import P0, P1, TWO_OVER_PI

__all__ = ["COS_Q", "REL", "SIN_S", "build_narrow_row", "build_narrow_value", "build_row_beta"]


def _taylor(first: int, last: int) -> np.ndarray:
    """(-1)**(n//2) / n! for n = first, first+2, ..., last, correctly rounded."""
    return np.array([float(Fraction(-1 if (n // 2) % 2 else 1, math.factorial(n)))
                     for n in range(first, last + 1, 2)])


SIN_S = _taylor(3, 15)  # sin x = x + x**3 (c3 + c5 x**2 + ... + c15 x**12)
COS_Q = _taylor(2, 16)  # cos x = 1 + x**2 (c2 + c4 x**2 + ... + c16 x**14)

#: B's relative part: 512u, over 3.6 times the 140u the docstring's bound needs
REL = 2.0**-44


def build_narrow_value(njit: Any, fma: Any) -> Any:
    """``narrow_value(p, w0, w1) -> (k, sin_t, cos_t)``: steps 1-3 for one angle, C = sin, cos of k·π/2 + x̃.

    ``k`` is the quadrant (the exact kernel's), ``sin_t``, ``cos_t`` the
    sine and cosine of the reduced angle x̃, within ``8u|·| + α`` of those of
    θ − k·π/2 (the module's bound).
    """

    @njit(nogil=True, inline="always")
    def poly(c, z):  # pragma: no cover
        acc = c[-1]
        for j in range(c.shape[0] - 2, -1, -1):
            acc = fma(acc, z, c[j])
        return acc

    @njit(nogil=True, inline="always")
    def narrow_value(p, w0, w1):  # pragma: no cover
        h = p * w0
        lo = fma(p, w0, -h)
        k = np.rint(h * TWO_OVER_PI)
        a0 = k * P0
        b0 = fma(k, P0, -a0)
        x = (h - a0) + ((lo - b0) + (p * w1 - k * P1))
        z = x * x
        return k, fma(x * z, poly(SIN_S, z), x), fma(z, poly(COS_Q, z), 1.0)

    return narrow_value


def build_narrow_row(njit: Any, fma: Any) -> Any:
    """``narrow_row(p, w0, w1, beta, kb, sb, cb) -> bool``: one row by the quick evaluation, or False.

    Fills ``kb`` (k, float64), ``sb``, ``cb`` (float32: sin and cos of the
    reduced angle, already the exact kernel's rounding) for
    :func:`~posenc.exact.fill.build_fill`'s store, and returns True; False
    where some value is not decided (then the caller computes the row
    exactly). ``beta``: the row's absolute bound β (:func:`build_row_beta`).
    """
    narrow_value = build_narrow_value(njit, fma)

    @njit(nogil=True, inline="always")
    def narrow_row(p, w0, w1, beta, kb, sb, cb):  # pragma: no cover
        undecided = 0
        for i in range(w0.shape[0]):
            k, sin_t, cos_t = narrow_value(p, w0[i], w1[i])
            bs = fma(abs(sin_t), REL, beta)
            bc = fma(abs(cos_t), REL, beta)
            s_lo, s_hi = np.float32(sin_t - bs), np.float32(sin_t + bs)
            c_lo, c_hi = np.float32(cos_t - bc), np.float32(cos_t + bc)
            undecided += (s_lo != s_hi) | (c_lo != c_hi) | (s_lo == 0.0)  # cos_t >= 0.7: never 0
            kb[i] = k
            sb[i] = s_lo
            cb[i] = c_lo
        return undecided == 0

    return narrow_row


def build_row_beta(njit: Any) -> Any:
    """``row_beta(p, top0, top1, top2) -> β``: the row's absolute bound, from the largest |w0|, |w1|, |w2|."""

    @njit(nogil=True, inline="always")
    def row_beta(p, top0, top1, top2):  # pragma: no cover
        a = abs(p)
        return 2.0**-79 * (a * top0 + 1.0) + 2.0 * a * (2.0**-50 * top1 + top2)

    return row_beta
