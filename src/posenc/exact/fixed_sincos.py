"""The 32-bit exact sin/cos, written once over an array namespace (NumPy, ``jax.numpy``).

The method and its error bound are in :mod:`posenc.exact.fixed`. Every
operation is on uint32 (wrapping adds, multiplies of 16-bit limbs that cannot
overflow, shifts, selects) or int32, so each backend computes the same bits;
the only things a backend supplies are its namespace, a count of leading
zeros and a bitcast to float32 (:class:`Ops`).

A 64-bit fixed-point number is a pair ``(h, l)`` of uint32 arrays, or its
four 16-bit limbs (:data:`Limbs`) where it enters several products.

The code is straight-line and scalar-shaped on purpose: XLA's CPU backend
compiles one fused loop of it at roughly linear cost in its operations, and
the other forms measured (jax 0.10.2, CPU) were slower to compile and to run:
limbs along an array axis took 4x the compile time and 80x the run time of a
Horner sum; the sine's and cosine's sums stacked on an axis took 1.8x the
compile time of the rows and 3x their run time in a ``fori_loop``, and
hundreds of times their run time unrolled (XLA evaluates a stacked value
again for every slot that reads it). What is cut is work: a number's limbs
split once, a constant's zero limbs (and a bracket's, known from its bound)
never multiplied, a square's cross products formed once, and a Horner
bracket's carries and subtraction taken in one pass (:func:`_less_high`).
Every form computes the value :func:`mulhi` defines, so the bits do not
depend on the grouping.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .fixed import COS_COEFFS, PI_4, SIN_COEFFS

__all__ = ["NUMPY_OPS", "Limbs", "Ops", "Pair", "columns", "limbs", "mulhi", "mulhi_limbs", "plus_high", "round_f32",
           "shift_up", "shift_up_once", "sincos_bits", "sincos_f32", "square_hi"]

M16 = 0xFFFF
Pair = tuple[Any, Any]
#: A 64-bit number's four 16-bit limbs, least significant first (each a uint32 array, or a Python int).
Limbs = tuple[Any, Any, Any, Any]


@dataclass(frozen=True)
class Ops:
    """What a backend lends the algorithm: its namespace, clz on uint32 and a uint32 -> float32 bitcast."""

    xp: Any
    clz: Callable[[Any], Any]
    to_f32: Callable[[Any], Any]
    bits: Callable[[Any], Any]

    def u32(self, a: Any) -> Any:
        return a.astype(self.xp.uint32)


def _np_clz(x: Any) -> Any:
    # frexp of the exact float64 gives the bit length e (x = m·2**e, m in [0.5, 1)); 0 gives 0
    _, e = np.frexp(np.asarray(x, dtype=np.uint32).astype(np.float64))
    return (32 - e).astype(np.uint32)


NUMPY_OPS = Ops(
    np, _np_clz, lambda b: np.asarray(b, dtype=np.uint32).view(np.float32),
    lambda t: np.asarray(t, dtype=np.float32).view(np.uint32),
)


def sub64(o: Ops, a: Pair, b: Pair) -> Pair:
    """(a − b) mod 2**64 (a may be a pair of Python ints: a constant)."""
    h, lo = (o.xp.asarray(v, dtype=o.xp.uint32) if isinstance(v, int) else v for v in a)  # jax reads a Python
    return h - b[0] - o.u32(lo < b[1]), lo - b[1]  # int as an int32: 2**31 and above would overflow it


def _zero(v: Any) -> bool:
    return isinstance(v, int) and v == 0


def _plus(a: Any, b: Any) -> Any:
    """a + b, with no operation where either is a known 0 (a column's first term, a constant's zero limb)."""
    return b if _zero(a) else a if _zero(b) else a + b


def limbs(v: Pair) -> Limbs:
    """The 16-bit limbs of a 64-bit pair, least significant first (Python ints for a constant pair)."""
    return v[1] & M16, v[1] >> 16, v[0] & M16, v[0] >> 16


def mulhi(a: Pair, b: Pair) -> Pair:
    """floor(a·b / 2**64), less at most 6 units (the limb products below 2**48 are left out).

    Exactly: with a_i, b_j the 16-bit limbs, the sum V of a_i·b_j·2**(16(i + j) − 48)
    over i + j >= 3, then floor(V / 2**16) mod 2**64. Every form below computes that
    value, however it groups the sum (:func:`mulhi_limbs`, :func:`square_hi`).
    """
    return mulhi_limbs(limbs(a), limbs(b))


def mulhi_limbs(x: Limbs, y: Limbs) -> Pair:
    """:func:`mulhi` of two numbers given as limbs: a number's limbs split once serve every product it enters
    (t in the Horner sums), and a Python-int 0 limb (a constant's, or one known zero) adds no operation."""
    return _carried(columns(x, y))


def columns(x: Limbs, y: Limbs) -> list[Any]:
    """The column sums of :func:`mulhi`, its value before the carries: columns 3 … 7 of 16 bits, each below
    2**19 (:func:`_carried`, :func:`plus_high`)."""
    col: list[Any] = [0, 0, 0, 0, 0]
    for i in range(4):
        for j in range(max(0, 3 - i), 4):
            if _zero(x[i]) or _zero(y[j]):
                continue
            p = x[i] * y[j]
            col[i + j - 3] = _plus(col[i + j - 3], p & M16)
            col[i + j - 2] = _plus(col[i + j - 2], p >> 16)
    return col


def square_hi(x: Limbs) -> Pair:
    """:func:`mulhi` of a number by itself, from its limbs: a_i·a_j (i != j) formed once and counted twice."""
    col: list[Any] = [0, 0, 0, 0, 0]
    for i in range(4):
        for j in range(max(i, 3 - i), 4):
            p = x[i] * x[j]
            lo, hi = p & M16, p >> 16
            if i != j:  # < 2**17 each: the columns stay below 2**20
                lo, hi = lo << 1, hi << 1
            col[i + j - 3] = _plus(col[i + j - 3], lo)
            col[i + j - 2] = _plus(col[i + j - 2], hi)
    return _carried(col)


def _carried(col: list[Any]) -> Pair:
    """The 64 bits above column 3 of the column sums (columns 3 … 7), the carries propagated."""
    c4 = _plus(col[1], col[0] >> 16)
    c5 = _plus(col[2], c4 >> 16)
    c6 = _plus(col[3], c5 >> 16)
    c7 = _plus(col[4], c6 >> 16)
    return ((c7 & M16) << 16) | (c6 & M16), ((c5 & M16) << 16) | (c4 & M16)


def _less_high(c: tuple[int, int], col: list[Any]) -> Limbs:
    """The limbs of (c − m) mod 2**64, m the :func:`mulhi` of the column sums ``col``, c a constant.

    m = R + (col_0 >> 16), R = Σ col_k·2**(16(k − 1)) over k >= 1, so each limb
    of c − m is c_k − col_(k+1) plus the carry from below, one column at a time:
    the carries of m and of the subtraction in one pass, never m itself. A
    column's value is kept positive by 2**20 added (a whole number of limbs;
    every col_k < 2**19), the carry it adds (16) taken from the next constant.
    """
    return _with_high(c, col, -1)


def plus_high(c: tuple[int, int], col: list[Any]) -> Limbs:
    """The limbs of (c + m) mod 2**64, m the :func:`mulhi` of the column sums ``col`` (:func:`_less_high`'s
    pass, adding)."""
    return _with_high(c, col, 1)


def _with_high(c: tuple[int, int], col: list[Any], sign: int) -> Limbs:
    k = limbs(c)
    bias, debt = (0, 0) if sign > 0 else (1 << 20, 16)
    first = (k[0] + bias) + col[1] + (col[0] >> 16) if sign > 0 else (k[0] + bias) - col[1] - (col[0] >> 16)
    e = first
    out = [e & M16]
    for j in (1, 2, 3):
        base = k[j] + bias - debt
        e = _plus(base + col[j + 1] if sign > 0 else base - col[j + 1], e >> 16)
        out.append(e & M16)
    return out[0], out[1], out[2], out[3]


def mulhi_narrow(a: Pair, b: Pair, b_limbs: int) -> Pair:
    """:func:`mulhi` for a b whose top 16-bit limbs are known zero (b < 2**(16·b_limbs)), less at most 7 units.

    Horner's inner brackets are small (acc_k <= c_k, the Taylor coefficients):
    b_limbs = 2 (b < 2**32) takes the high word of a_hi·b_lo, which counts
    the high half of a_2·b_0 besides :func:`mulhi`'s products; b_limbs = 3
    leaves out the products of b's zero limb. Only the limb products below
    2**48 are dropped, as in :func:`mulhi`.
    """
    x, y = limbs(a), limbs(b)
    if b_limbs <= 2:
        return 0 * a[0], _high_word(x, y)
    return mulhi_limbs(x, (y[0], y[1], y[2], 0))


def _high_word(x: Limbs, y: Limbs) -> Any:
    """:func:`mulhi_narrow` for b < 2**32: the high word of a_hi·b_lo, from its four 16-bit products
    (a_lo·b_lo < 2**64 units drops out: < 1). The high word of the result is 0. A Python-int 0 limb of b
    (b < 2**16) drops its products."""
    def times(u: Any, v: Any) -> Any:
        return 0 if _zero(u) or _zero(v) else u * v

    ll, lh, hl, hh = times(x[2], y[0]), times(x[2], y[1]), times(x[3], y[0]), times(x[3], y[1])
    mid = _plus(_plus(ll >> 16, lh & M16), hl & M16)
    return _plus(_plus(_plus(hh, lh >> 16), hl >> 16), mid >> 16)


def _limbs(value: tuple[int, int]) -> int:
    """How many 16-bit limbs a Q0.64 value at most ``value`` needs (1 … 4): what bounds a Horner bracket."""
    return max(1, ((value[0] << 32 | value[1]).bit_length() + 15) // 16)


def _fold(o: Ops, f: tuple[Any, Any, Any, Any]) -> tuple[Any, Any, tuple[Any, Any, Any, Any]]:
    """(quadrant, half, y): f = (quadrant + g)/4, y = g or 1 − g (half), y in [0, 1/2] as Q0.128."""
    xp = o.xp
    q = f[0] >> 30
    g = ((f[0] << 2) | (f[1] >> 30), (f[1] << 2) | (f[2] >> 30), (f[2] << 2) | (f[3] >> 30), f[3] << 2)
    half = g[0] >> 31
    # 1 − g: the two's complement of the 128-bit word (g > 0 whenever half is set); the complement as a xor
    # (torch.compile traces no ~ on posenc.torch's uint32 wrapper)
    ones = xp.asarray(0xFFFFFFFF, dtype=xp.uint32)
    n3 = (g[3] ^ ones) + 1
    b3 = o.u32(n3 == 0)
    n2 = (g[2] ^ ones) + b3
    b2 = b3 & o.u32(n2 == 0)
    n1 = (g[1] ^ ones) + b2
    b1 = b2 & o.u32(n1 == 0)
    n0 = (g[0] ^ ones) + b1
    flip = half == 1
    y = tuple(xp.where(flip, n, w) for n, w in zip((n0, n1, n2, n3), g, strict=True))
    return q, half, y


def _normalise(o: Ops, y: tuple[Any, Any, Any, Any]) -> tuple[Pair, Any]:
    """(mantissa, lz): the 64 bits of y from its leading one on, and the leading zeros (128 for y = 0)."""
    xp = o.xp
    z = [o.clz(w) for w in y]
    lz = xp.where(y[0] != 0, z[0], 32 + xp.where(y[1] != 0, z[1], 32 + xp.where(y[2] != 0, z[2], 32 + z[3])))
    word = lz >> 5
    b = lz & 31
    zero = xp.zeros_like(y[0])
    a, c, d = y[0], y[1], y[2]
    for k, ws in enumerate(((y[1], y[2], y[3]), (y[2], y[3], zero), (y[3], zero, zero))):
        a = xp.where(word == k + 1, ws[0], a)
        c = xp.where(word == k + 1, ws[1], c)
        d = xp.where(word == k + 1, ws[2], d)
    r = (32 - b) & 31  # a shift by 32 is undefined: b = 0 takes the words as they are
    keep = b == 0
    hi = xp.where(keep, a, (a << b) | (c >> r))
    lo = xp.where(keep, c, (c << b) | (d >> r))
    return (hi, lo), lz


def _horner(t: Limbs, coeffs: tuple[tuple[int, int], ...], o: Ops) -> Pair:
    """t·(c1 − t·(c2 − … t·c_n)), t given by its limbs; every bracket is positive (the Taylor terms decrease).

    The bracket acc_k = c_k − mulhi(t, acc_(k+1)) is bounded by c_k, so its limbs
    past the bound are 0 and their products are left out. While the bound is
    below 2**32 a step is :func:`mulhi_narrow`'s one word (the bracket kept as
    a pair); once wider, the bracket is kept as limbs (:func:`_less_high`).
    """
    y: Limbs = limbs(coeffs[-1])  # a constant (Python ints) until the first product
    bound = coeffs[-1]  # acc <= the coefficient it starts from (the bracket only shrinks it)
    for c in reversed(coeffs[:-1]):
        n = _limbs(bound)
        y = (y[0], y[1] if n > 1 else 0, y[2] if n > 2 else 0, y[3] if n > 3 else 0)  # limbs past the bound: 0
        if n <= 2:
            y = limbs(sub64(o, c, (0, _high_word(t, y))))
        else:
            y = _less_high(c, columns(t, y))
        bound = c
    return mulhi_limbs(t, y)


def sincos_bits(o: Ops, f: tuple[Any, Any, Any, Any]) -> tuple[Pair, Any, Pair, Any, Any, Any]:
    """sin and cos of 2π·f, unrounded: (sin_m, sin_e, cos_m, cos_e, quadrant, swap).

    Each magnitude is ``(h·2**32 + l)·2**(e − 64)`` of sin and cos of the folded
    angle x; ``swap`` says they trade places, and the quadrant gives the signs.
    """
    q, half, y = _fold(o, f)
    ym, lz = _normalise(o, y)
    # t = (2y)**2 from y's top 64 bits (y < 1/2, so 2y fits); saturate the one value y = 1/2
    two_y = ((y[0] << 1) | (y[1] >> 31), (y[1] << 1) | (y[2] >> 31))
    at_half = (y[0] >> 31) == 1  # y = 1/2 exactly (a phase of 1/8 + k/4): 2y = 1 does not fit Q0.64
    ones = o.xp.asarray(0xFFFFFFFF, dtype=o.xp.uint32)
    two_y = (o.xp.where(at_half, ones, two_y[0]), o.xp.where(at_half, ones, two_y[1]))
    sq = limbs(square_hi(limbs(two_y)))  # split once: every Horner step of both sums multiplies by it
    d_s = _horner(sq, SIN_COEFFS, o)
    d_c = _horner(sq, COS_COEFFS, o)
    x = mulhi_limbs(limbs(ym), limbs(PI_4))  # x = (π/4)·2y = mantissa·2**(1 − lz) … times π/4
    sin_m = sub64(o, x, mulhi(x, d_s))
    sin_e = o.u32(1 - lz.astype(o.xp.int32))
    # cos = 1 − D_c held as Q1.63 (so 1 itself fits): 2**63 − D_c/2, exponent 1
    cos_m = sub64(o, (1 << 31, 0), (d_c[0] >> 1, (d_c[1] >> 1) | (d_c[0] << 31)))
    cos_e = o.xp.ones_like(sin_e)
    return sin_m, sin_e, cos_m, cos_e, q, half ^ (q & 1)


def scale(m: Pair, e: Any, factor: tuple[int, int, int] | None, o: Ops) -> tuple[Pair, Any]:
    """(m, e) times a static factor (:func:`posenc.exact.fixed.scale_words`), m first normalised.

    m is a sine or cosine of :func:`sincos_bits`, in [2**62, 2**64) or 0
    (:func:`shift_up_once`); so is the product (the factor's mantissa is
    2**63, whose product is exact, or at least 2**63 + 2**11, whose product
    is at least 2**62 + 2**10 less :func:`mulhi`'s 6 units).
    """
    if factor is None:
        return m, e
    m, s = shift_up_once(o, m)
    return mulhi_limbs(limbs(m), limbs(factor[:2])), e - s + (factor[2] % (1 << 32))  # wraps like the rest


def shift_up(o: Ops, m: Pair) -> tuple[Pair, Any]:
    """m shifted left until its top bit is set, and the shift (m != 0)."""
    xp = o.xp
    s = xp.where(m[0] != 0, o.clz(m[0]), 32 + o.clz(m[1]))
    big = s >= 32
    b = s & 31
    r = (32 - b) & 31
    hi = xp.where(b == 0, m[0], (m[0] << b) | (m[1] >> r))
    lo = m[1] << b
    return (xp.where(big, lo, hi), xp.where(big, 0, lo)), s


def shift_up_once(o: Ops, m: Pair) -> tuple[Pair, Any]:
    """:func:`shift_up` for m in [2**62, 2**64) or 0: the shift is 0 or 1 (1 for m = 0, which stays 0).

    The sines and cosines of :func:`sincos_bits` are there: cos x >= cos(π/4)
    is 2**63 − D_c/2 >= 0.70·2**63, and sin x = x·(1 − D_s) with D_s <= 0.1
    and x = (π/4)·y's normalised mantissa >= 0.78·2**63 (tests/exact/test_fixed.py
    checks it over a battery). No count of leading zeros: one bit tested.
    """
    s = 1 - (m[0] >> 31)
    return ((m[0] << s) | ((m[1] >> 31) & s), m[1] << s), s


def round_f32(o: Ops, m: Pair, e: Any, odd: bool = False, high: bool = False) -> Any:
    """The float32 bits nearest (ties to even) to (h·2**32 + l)·2**(e − 64); 0 for m = 0 (normal range only).

    ``odd=True`` rounds to odd instead: the 24 leading bits, the last one set
    when any bit below is. That value, rounded to nearest-even into a format
    of at most 22 bits (float16, bfloat16: a plain cast), is the 64-bit value
    rounded once into it (Boldo and Melquiond, "Emulation of FMA and correctly
    rounded sums: proved algorithms using rounding to odd", IEEE Trans.
    Computers 57 (2008)), where a float32 rounded to nearest first could land
    on the format's midpoint and round a second time the wrong way.

    ``high=True``: m is in [2**62, 2**64) or 0 (:func:`shift_up_once`).
    """
    xp = o.xp
    (h, l), s = shift_up_once(o, m) if high else shift_up(o, m)
    zero = h == 0  # the shifted m has its top bit set unless m = 0
    if odd:
        top = (h >> 8) | o.u32(((h & 0xFF) | l) != 0)
        bits = ((e + 126 - s) << 23) | (top & 0x7FFFFF)
        return xp.where(zero, 0, bits)
    top = h >> 8
    rb = (h >> 7) & 1
    sticky = o.u32(((h & 0x7F) | l) != 0)
    top = top + (rb & (sticky | (top & 1)))
    carry = top >> 24
    top = xp.where(carry == 1, top >> 1, top)
    # the value is top·2**(e − s − 24 + carry); its float32 exponent field is (e − s − 1 + carry) + 127
    field = e + 126 - s + carry
    bits = (field << 23) | (top & 0x7FFFFF)
    return xp.where(zero, 0, bits)


def sincos_f32(o: Ops, phase: tuple[Any, Any, Any, Any], factor: tuple[int, int, int] | None = None,
               odd: bool = False) -> tuple[Any, Any]:
    """sin and cos of 2π·phase (times ``factor``) in float32, correctly rounded (see :data:`~.fixed.ERROR_BOUND`).

    Args:
        o: the backend.
        phase: four uint32 words ``[..., n]`` (:mod:`posenc.exact.fixed_phase`).
        factor: a static multiplier (an attention factor,
            :func:`~posenc.exact.fixed.scale_words`), or None.
        odd: float32 rounded to odd (:func:`round_f32`), for a cast to
            float16 or bfloat16 that then rounds the value once.

    Returns:
        (sin, cos), float32 ``[..., n]`` each.
    """
    sin_m, sin_e, cos_m, cos_e, q, swap = sincos_bits(o, phase)
    sb = round_f32(o, *scale(sin_m, sin_e, factor, o), odd, high=True)
    cb = round_f32(o, *scale(cos_m, cos_e, factor, o), odd, high=True)
    sw = swap == 1
    s_mag, c_mag = o.xp.where(sw, cb, sb), o.xp.where(sw, sb, cb)
    # an exact zero (sin kπ, cos of an odd multiple of π/2: dyadic bands) is +0, whatever the quadrant
    sin = s_mag | (o.u32((q >= 2) & (s_mag != 0)) << 31)
    cos = c_mag | (o.u32(((q == 1) | (q == 2)) & (c_mag != 0)) << 31)
    return o.to_f32(sin), o.to_f32(cos)
