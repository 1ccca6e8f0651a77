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

from .angles import fill_sincos, sincos
from .consecutive import fill_range
from .core import DECIMAL_PREC, decimal_context, two_sum
from .ladder import Ladder, decimal_pi, geometric_ladder, ladder_digits, seed_ladder, to_triple

__all__ = [
    "DECIMAL_PREC",
    "Ladder",
    "decimal_context",
    "decimal_pi",
    "fill_range",
    "fill_sincos",
    "geometric_ladder",
    "ladder_digits",
    "seed_ladder",
    "sincos",
    "to_triple",
    "two_sum",
]
