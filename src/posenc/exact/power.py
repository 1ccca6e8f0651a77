"""Correctly rounded powers z**t (z, t rational) from a double-double exponent: no libm.

The xPos factors ζ^(Δ/scale_base) are exp(x) with x = Δ·ln ζ / scale_base.
``np.exp`` gives different last bits on different CPUs (NumPy dispatches it
to AVX-512, AVX2 or baseline kernels), so posenc computes exp itself, with
the IEEE additions and multiplications of :mod:`.core` only:

1. **Reduction.** ``N = rint(x·128/ln 2)``, ``r = x − N·(ln 2/128)`` with
   ln 2/128 held as three words (two of 35 bits, so ``N·C0`` and ``N·C1``
   are exact for ``|N| < 2**18``; ``x_hi − N·C0`` is exact by Sterbenz's
   lemma). ``|r| <= 0.00271``, known to ~2**-93 absolute.
2. **Kernel.** ``exp(r) = 1 + r + r²/2 + r³·P(r)``, P the Taylor series to
   r**6/9! (truncation below 2**-106), with r² formed exactly; the leading
   terms are summed as a double-double (error below 2**-78).
3. **Table.** ``exp(x) = 2**m · 2**(j/128) · exp(r)`` with ``N = 128·m + j``
   and the 128 values 2**(j/128) as double-doubles computed with
   :mod:`decimal`. The result ``hi + lo`` is within ``EXP_EPS = 2**-72``
   (relative, with a margin of 2**6 over the bound above) of the true exp.
4. **Rounding test.** The nearest float of the output dtype (float64,
   float32 or float16: one rounding, no double rounding) is decided unless
   ``hi + lo`` lies within the error bound of a midpoint between two of its
   floats: about one value in 2**18 for float64. Those few are recomputed
   exactly (:func:`nearest_power`): z**t in :mod:`decimal` with ever more
   digits (Ziv's strategy) and the decision made in :class:`fractions.Fraction`;
   when the value may be a midpoint itself (z**t can be rational), the tie
   is tested exactly, ``z**a == M**b`` for t = a/b, and broken to even.

References: P. T. P. Tang, "Table-driven implementation of the exponential
function in IEEE floating-point arithmetic", ACM TOMS 15 (1989) (the 2**(j/N)
table and the two-word reduction); A. Ziv, "Fast evaluation of elementary
mathematical functions with correctly rounded last bit", ACM TOMS 17 (1991)
(the rounding test and its exact fallback).
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np

from .core import DECIMAL_PREC, split, two_prod, two_sum

__all__ = ["EXP_EPS", "exp_dd", "log_float32", "nearest_log", "nearest_power", "round_checked"]

#: Bound on the relative error of :func:`exp_dd` (hi + lo against the true exp(x_hi + x_lo)).
EXP_EPS = 2.0**-72

_STEPS = 128  # table entries: 2**(j/128)
_LIMIT = 1000.0  # |x| beyond it: exp is 0 or inf in float64 (and N stays below 2**18)


def _constants() -> tuple[float, float, float, float, np.ndarray, np.ndarray]:
    with localcontext() as ctx:
        ctx.prec = DECIMAL_PREC
        ln2 = Decimal(2).ln()
        c = ln2 / _STEPS
        words = []
        rest = c
        for bits in (35, 35):
            e = math.frexp(float(rest))[1] - 1  # 2**e <= rest < 2**(e+1)
            w = math.ldexp(float(round(rest * Decimal(2) ** (bits - 1 - e))), e - bits + 1)  # ``bits`` bits, exact
            words.append(w)
            rest -= Decimal(w)
        words.append(float(rest))
        table = [Decimal(2) ** (Decimal(j) / _STEPS) for j in range(_STEPS)]
        hi = np.array([float(t) for t in table])
        lo = np.array([float(t - Decimal(float(t))) for t in table])
        inv = float(_STEPS / ln2)
    return words[0], words[1], words[2], inv, hi, lo


C0, C1, C2, INV_C, T_HI, T_LO = _constants()
# exp(r) - 1 - r - r²/2 = r³·(1/3! + r/4! + … + r**6/9!), correctly rounded coefficients
P_C = np.array([float(Fraction(1, math.factorial(n))) for n in range(3, 10)])


def _horner(z: Any) -> Any:
    acc = P_C[-1] * z + P_C[-2]
    for j in range(P_C.shape[0] - 3, -1, -1):
        acc = acc * z + P_C[j]
    return acc


def exp_dd(x_hi: np.ndarray, x_lo: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """exp(x_hi + x_lo) as a double-double (hi, lo), within :data:`EXP_EPS` relative.

    ``|x_lo| <= 2**-50·|x_hi|``. The bound holds for results above 2**-960;
    below, the final scaling rounds the low word to a multiple of the
    smallest subnormal (see :func:`round_checked`). Beyond float64's normal
    range the result is (0, 0) or (inf, 0): a value that would be subnormal
    is flushed to 0.
    """
    xh = np.clip(x_hi, -_LIMIT, _LIMIT)
    xl = np.where(np.abs(x_hi) <= _LIMIT, x_lo, 0.0)
    n = np.rint(xh * INV_C)
    r1 = xh - n * C0  # exact: n·C0 has <= 53 bits and is within a factor 2 of xh (Sterbenz)
    s, e = two_sum(r1, -(n * C1))  # n·C1 exact
    rh, rl = two_sum(s, e + (xl - n * C2))
    rhh, rhl = split(rh)
    z, zl = two_prod(rh, rhh, rhl, rh, rhh, rhl)  # rh² exactly
    tail = rl + (0.5 * zl + rh * rl) + rh * z * _horner(rh)
    s, e = two_sum(rh, 0.5 * z)
    qh, ql = two_sum(s, e + tail)  # exp(r) - 1
    j = (n - _STEPS * np.floor(n / _STEPS)).astype(np.intp)
    m = ((n - j) / _STEPS).astype(np.intc)  # |m| < 2**11: ldexp's int on every platform
    th, tl = T_HI[j], T_LO[j]
    thh, thl = split(th)
    qhh, qhl = split(qh)
    p, pe = two_prod(th, thh, thl, qh, qhh, qhl)
    s, e = two_sum(th, p)
    hi, lo = two_sum(s, e + (pe + tl + tl * qh + th * ql))
    with np.errstate(over="ignore", under="ignore"):
        hi = np.ldexp(hi, m)
        lo = np.ldexp(lo, m)
    normal = np.abs(hi) >= np.finfo(np.float64).tiny
    return np.where(normal, hi, 0.0), np.where(normal & np.isfinite(hi), lo, 0.0)


def round_checked(hi: np.ndarray, lo: np.ndarray, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
    """The nearest ``dtype`` value to ``hi + lo`` (> 0, within EXP_EPS), and where that cannot be decided.

    Returns ``(y, hard)``: y float64 (values of ``dtype``), ``hard`` a bool
    mask of the entries whose true value may lie on the other side of a
    midpoint; recompute those exactly.

    Float64 results below 2**-960 stay decided correctly although the low
    word was rounded to a multiple g of the smallest subnormal: before that
    rounding |lo| <= half an ulp of hi (a multiple of g), and rounding is
    monotone, so a low word that reaches the midpoint is flagged, and one
    below it is below it by g or more, which exceeds the error bound.
    """
    dt = np.dtype(dtype)
    with np.errstate(all="ignore"):  # inf and 0 (out of range) pass through unchanged
        y = hi.astype(dt)
        yd = y.astype(np.float64)
        d = (hi - yd) + lo  # hi - yd exact (Sterbenz); the sum rounds by <= 2**-53·|d|
        nb = np.nextafter(y, np.where(d >= 0, np.inf, -np.inf).astype(dt))
        margin = 0.5 * np.abs(nb.astype(np.float64) - yd) - np.abs(d)
        tol = EXP_EPS * np.abs(hi) + 2.0**-52 * np.abs(d)
        live = np.isfinite(yd) & (hi > 0)
        out = np.where(live & (margin < 0), nb.astype(np.float64), yd)
        hard = live & (np.abs(margin) <= tol)
    return out, hard


def _nearest(v: Fraction, bits: int, emin: int) -> tuple[int, Fraction, Fraction]:
    """(n, unit, mid): v > 0 lies in [n·unit, (n+1)·unit] of a ``bits``-bit format, mid the midpoint."""
    e = v.numerator.bit_length() - v.denominator.bit_length()
    if Fraction(2) ** e > v:
        e -= 1
    unit = Fraction(2) ** (max(e, emin) - bits + 1)
    n = math.floor(v / unit)
    return n, unit, (n + Fraction(1, 2)) * unit


def _is_power(z: Fraction, t: Fraction, m: Fraction) -> bool | None:
    """Whether z**t == m exactly (t = a/b: z**a == m**b); None when the integers would be too large."""
    a, b = t.numerator, t.denominator
    size = abs(a) * max(z.numerator.bit_length(), z.denominator.bit_length()) + b * max(
        m.numerator.bit_length(), m.denominator.bit_length())
    if size > 4_000_000:
        return None
    return z**a == m**b


def _decide(value: Any, scale: float, dtype: Any, tie: Any = None) -> float:
    """The nearest ``dtype`` value to ``value(digits)`` (a Decimal > 0 within ``scale·10**(1-digits)`` relative).

    Ziv's loop: more digits until no midpoint lies within the error bound;
    ``tie(m)`` (True, False or None: unknown) says whether the value is the
    midpoint ``m`` itself, then broken to even.
    """
    fi = np.finfo(np.dtype(dtype))
    bits, emin = fi.nmant + 1, fi.minexp
    digits = 40
    while True:
        with localcontext() as ctx:
            ctx.prec = digits
            fv = Fraction(value(digits))
        bound = Fraction(Decimal(scale) * Decimal(10) ** (1 - digits))
        n, unit, mid = _nearest(fv, bits, emin)
        if abs(fv - mid) > bound * fv:
            return float((n if fv < mid else n + 1) * unit)
        exact = tie(mid) if tie is not None else False
        if exact:
            return float((n if n % 2 == 0 else n + 1) * unit)
        if exact is None and digits > 5000:  # pragma: no cover - needs a value within 10**-5000 of a midpoint
            raise ArithmeticError("cannot decide a rounding within 10**-5000")
        digits *= 2


def nearest_power(z: Fraction, t: Fraction, dtype: Any) -> float:
    """z**t (z > 0, t rational) rounded to the nearest ``dtype`` value, ties to even: exact, slow (~0.1 ms).

    >>> nearest_power(Fraction(3, 4), Fraction(34), np.float64) == float(Fraction(3, 4) ** 34)
    True
    """
    # a loose bound on |ln num|, |ln den| and |t·ln z|: each of ln, ln, −, /, ·, exp rounds by <= 10**(1-digits)
    # relative, and exp turns the exponent's absolute error into relative error
    size = (abs(float(t)) + 1.0) * (0.7 * (z.numerator.bit_length() + z.denominator.bit_length()) + 1.0) + 3.0

    def value(digits: int) -> Decimal:
        return ((Decimal(z.numerator).ln() - Decimal(z.denominator).ln())
                * (Decimal(t.numerator) / Decimal(t.denominator))).exp()

    return _decide(value, 6 * size, dtype, lambda m: _is_power(z, t, m))


def nearest_log(x: Fraction, dtype: Any) -> float:
    """ln x (x >= 1) rounded to the nearest ``dtype`` value: exact (ln of a rational other than 1 is never a tie).

    >>> nearest_log(Fraction(2), np.float32) == float(np.float32(0.6931472))
    True
    """
    if x == 1:
        return 0.0
    if x < 1:
        raise ValueError(f"nearest_log needs x >= 1, got {x}")
    # ln num and ln den to 10**(1-p) relative, p = digits + 2·(den's digits): their difference, ln x >= 1/(2·den),
    # is then within (ln num + ln den + 1)·10**(1-digits) relative
    size = 0.7 * (x.numerator.bit_length() + x.denominator.bit_length()) + 3.0

    def value(digits: int) -> Decimal:
        with localcontext() as ctx:
            ctx.prec = digits + 2 * len(str(x.denominator))  # the cancellation of ln num − ln den
            return Decimal(x.numerator).ln() - Decimal(x.denominator).ln()

    return _decide(value, size, dtype)


def log_float32(x: np.ndarray) -> np.ndarray:
    """ln x, correctly rounded to float32, for float32 ``x >= 1`` (any shape): no libm in the result.

    ``np.log`` in float64 gives a first guess; each guess y is then proved
    (or moved by one float32) by comparing x with posenc's exp of the
    float32 midpoints around y, and the rare values too close to a midpoint
    to prove are decided by :func:`nearest_log`. So the bits do not depend
    on the machine's log.
    """
    flat = np.ascontiguousarray(x, dtype=np.float32).reshape(-1)
    x64 = flat.astype(np.float64)
    y = np.log(x64).astype(np.float32)  # a guess only
    done = x64 == 1.0  # ln 1 = 0 exactly
    y[done] = 0.0
    margin = 2.0**-50  # covers EXP_EPS and the low word
    for _ in range(4):
        y64 = y.astype(np.float64)
        below = (y64 + np.nextafter(y, np.float32(-np.inf)).astype(np.float64)) * 0.5  # exact in float64
        above = (y64 + np.nextafter(y, np.float32(np.inf)).astype(np.float64)) * 0.5
        e_lo = exp_dd(below, np.zeros_like(below))[0]
        e_hi = exp_dd(above, np.zeros_like(above))[0]
        ok = (e_lo * (1 + margin) < x64) & (x64 < e_hi * (1 - margin))
        up = x64 > e_hi * (1 + margin)
        down = x64 < e_lo * (1 - margin)
        done |= ok
        y = np.where(~done & up, np.nextafter(y, np.float32(np.inf)), y)
        y = np.where(~done & down, np.nextafter(y, np.float32(-np.inf)), y)
        if done.all():
            break
    for i in np.nonzero(~done)[0]:
        y[i] = nearest_log(Fraction(float(x64[i])), np.float32)
    return y.reshape(np.shape(x))
