"""Positions to sin/cos: extended-precision reduction mod π/2 and a polynomial kernel.

See :mod:`posenc.exact` for the method and its error bound.
"""

from __future__ import annotations

import math
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

import numpy as np

from .._threads import default_threads, run_spans, spans
from . import _jit
from .arith import split, two_prod, two_sum
from .ladder import Ladder, decimal_pi

__all__ = ["fill_sincos", "sincos"]

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
_PH = [np.float64(split(np.float64(x))[0]) for x in _HALF_PI]
_PL = [np.float64(split(np.float64(x))[1]) for x in _HALF_PI]
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


def _reduce(
    p: np.ndarray, plo: np.ndarray | None, lad: Ladder
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """θ = (p + plo)·ω reduced: θ = k·π/2 + (r_hi + r_lo), |r| <= ~π/4.

    ``p`` and ``plo`` are ``[m, 1]``; results are ``[m, n]``.
    """
    w0h, w0l, w1h, w1l = lad.splits
    ph, pl = split(p)
    h0, l0 = two_prod(p, ph, pl, lad.w0, w0h, w0l)
    h1, l1 = two_prod(p, ph, pl, lad.w1, w1h, w1l)
    k = np.rint(h0 * _TWO_OVER_PI)
    kh, kl = split(k)
    a0, b0 = two_prod(k, kh, kl, _P[0], _PH[0], _PL[0])
    a1, b1 = two_prod(k, kh, kl, _P[1], _PH[1], _PL[1])
    # h0 and k·P0 agree in their leading bits, so this subtraction is where
    # the cancellation happens; two_sum keeps it exact.
    s, e = two_sum(h0, -a0)
    small = (l1 - b1) + (p * lad.w2 - k * _P[2]) - k * _P[3]
    mids = [l0, -b0, h1, -a1]
    if plo is not None:
        qh, ql = split(plo)
        c0, d0 = two_prod(plo, qh, ql, lad.w0, w0h, w0l)
        mids.append(c0)
        small = small + d0 + plo * lad.w1
    for t in mids:
        s, err = two_sum(s, t)
        e = e + err
    r_hi, r_lo = two_sum(s, e + small)
    # Above |θ| ~ 2**50 the rounded product θ·2/π can pick a neighbouring k;
    # move those (rare) elements back into range.
    far = np.abs(r_hi) > 0.8
    if far.any():
        k2 = np.rint(r_hi[far] * _TWO_OVER_PI)
        x, y = r_hi[far], r_lo[far]
        k2h, k2l = split(k2)
        t0, u0 = two_prod(k2, k2h, k2l, _P[0], _PH[0], _PL[0])
        x, err = two_sum(x, -t0)
        y = y + err - u0 - k2 * _P[1]
        r_hi[far], r_lo[far] = two_sum(x, y)
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
    xh, xl = split(x)
    zh, zl = two_prod(x, xh, xl, x, xh, xl)  # x**2 exactly
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
    *,
    block: int = _CHUNK,
    engine: str = "auto",
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
        block: elements (positions × frequencies) computed at a time by the
            NumPy engine; its peak extra memory is about 220 bytes per element.
        engine: ``"auto"`` (numba when installed — the ``fast`` extra — and
            the destinations are float32/float64, else NumPy), ``"numpy"`` or
            ``"numba"``. Both engines perform the same IEEE operations in the
            same order and give the same bits.
    """
    m = positions.shape[0]
    n = len(ladder)
    if engine not in ("auto", "numpy", "numba"):
        raise ValueError(f"engine must be 'auto', 'numpy' or 'numba', got {engine!r}")
    if m == 0 or n == 0:
        return
    if engine != "numpy" and sin_out.dtype in _JIT_DTYPES and cos_out.dtype in _JIT_DTYPES:
        kern = _jit.exact_kernel()
        if kern is not None:
            _fill_jit(kern, positions, ladder, sin_out, cos_out, positions_lo)
            return
    if engine == "numba":
        raise ValueError("engine='numba' needs numba and float32/float64 outputs: pip install 'posenc[fast]'")
    rows = max(1, block // n)
    for a in range(0, m, rows):
        b = min(m, a + rows)
        p = positions[a:b, None]
        plo = None if positions_lo is None else positions_lo[a:b, None]
        k, x, y = _reduce(p, plo, ladder)
        s, c = _kernel(k, x, y)
        sin_out[a:b] = s
        cos_out[a:b] = c


_JIT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _fill_jit(
    kern: Any, positions: np.ndarray, ladder: Ladder, sin_out: np.ndarray, cos_out: np.ndarray,
    positions_lo: np.ndarray | None,
) -> None:
    p = np.ascontiguousarray(positions, dtype=np.float64)
    lo = p if positions_lo is None else np.ascontiguousarray(positions_lo, dtype=np.float64)
    w0h, w0l, w1h, w1l = ladder.splits
    m, n = p.shape[0], len(ladder)
    parts = default_threads() if m * n >= 1 << 15 else 1

    def work(a: int, z: int) -> None:
        kern(p, lo, positions_lo is not None, ladder.w0, ladder.w1, ladder.w2, w0h, w0l, w1h, w1l,
             sin_out, cos_out, a, z)

    run_spans(spans(m, parts), work)


def sincos(
    positions: np.ndarray, ladder: Ladder, positions_lo: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of ``positions[..., None] * ω``, float64 ``[..., n]``.

    Positions must already be validated (see :func:`posenc.errors.check_positions`).

    >>> from fractions import Fraction
    >>> from posenc.exact import geometric_ladder
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
