"""The 32-bit exact sin/cos, written once over an array namespace (NumPy, ``jax.numpy``).

The method and its error bound are in :mod:`posenc.exact.fixed`. Every
operation is on uint32 (wrapping adds, multiplies of 16-bit limbs that cannot
overflow, shifts, selects) or int32, so each backend computes the same bits;
the only things a backend supplies are its namespace, a count of leading
zeros and a bitcast to float32 (:class:`Ops`).

A 64-bit fixed-point number is a pair ``(h, l)`` of uint32 arrays.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .fixed import COS_COEFFS, PI_4, SIN_COEFFS

__all__ = ["NUMPY_OPS", "Ops", "Pair", "mulhi", "round_f32", "shift_up", "sincos_bits", "sincos_f32"]

M16 = 0xFFFF
Pair = tuple[Any, Any]


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
    return a[0] - b[0] - o.u32(a[1] < b[1]), a[1] - b[1]


def mulhi(a: Pair, b: Pair) -> Pair:
    """floor(a·b / 2**64), less at most 6 units (the limb products below 2**48 are left out)."""
    return _mulhi_limbs(a, b, 4)


def _mulhi_limbs(a: Pair, b: Pair, b_limbs: int) -> Pair:
    """The column sums of :func:`mulhi` over b's lowest ``b_limbs`` (3 or 4) 16-bit limbs."""
    x = (a[1] & M16, a[1] >> 16, a[0] & M16, a[0] >> 16)
    y = (b[1] & M16, b[1] >> 16, b[0] & M16) + ((b[0] >> 16,) if b_limbs == 4 else ())
    col = [0, 0, 0, 0, 0]  # columns 3 … 7 of 16 bits, each sum < 2**19
    for i in range(4):
        for j in range(max(0, 3 - i), b_limbs):
            p = x[i] * y[j]
            col[i + j - 3] = col[i + j - 3] + (p & M16)
            col[i + j - 2] = col[i + j - 2] + (p >> 16)
    c4 = col[1] + (col[0] >> 16)
    c5 = col[2] + (c4 >> 16)
    c6 = col[3] + (c5 >> 16)
    c7 = col[4] + (c6 >> 16)
    return ((c7 & M16) << 16) | (c6 & M16), ((c5 & M16) << 16) | (c4 & M16)


def mulhi_narrow(a: Pair, b: Pair, b_limbs: int) -> Pair:
    """:func:`mulhi` for a b whose top 16-bit limbs are known zero (b < 2**(16·b_limbs)), less at most 7 units.

    Horner's inner brackets are small (acc_k <= c_k, the Taylor coefficients):
    b_limbs = 2 (b < 2**32) takes the one product a_hi·b_lo; b_limbs = 3
    leaves out the products of b's zero limb. Only the limb products below
    2**48 are dropped, as in :func:`mulhi`.
    """
    if b_limbs <= 2:
        ah, bl = a[0], b[1]
        x0, x1, y0, y1 = ah & M16, ah >> 16, bl & M16, bl >> 16
        # the high word of ah·bl, from its four 16-bit products (a_lo·b_lo < 2**64 units drops out: < 1)
        ll, lh, hl = x0 * y0, x0 * y1, x1 * y0
        mid = (ll >> 16) + (lh & M16) + (hl & M16)
        return 0 * ah, x1 * y1 + (lh >> 16) + (hl >> 16) + (mid >> 16)
    return _mulhi_limbs(a, b, 3)


def _limbs(value: tuple[int, int]) -> int:
    """How many 16-bit limbs a Q0.64 value at most ``value`` needs (2, 3 or 4): what bounds a Horner bracket."""
    return 2 if value[0] == 0 else 3 if value[0] < 1 << 16 else 4


def _const(o: Ops, value: tuple[int, int]) -> Pair:
    return o.xp.asarray(value[0], dtype=o.xp.uint32), o.xp.asarray(value[1], dtype=o.xp.uint32)


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


def _horner(t: Pair, coeffs: tuple[tuple[int, int], ...], o: Ops) -> Pair:
    """t·(c1 − t·(c2 − … t·c_n)); every bracket is positive (the Taylor terms decrease)."""
    acc = _const(o, coeffs[-1])
    bound = coeffs[-1]  # acc <= the coefficient it starts from (the bracket only shrinks it)
    for c in reversed(coeffs[:-1]):
        n = _limbs(bound)
        acc = sub64(o, _const(o, c), mulhi(t, acc) if n == 4 else mulhi_narrow(t, acc, n))
        bound = c
    return mulhi(t, acc)


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
    sq = mulhi(two_y, two_y)
    d_s = _horner(sq, SIN_COEFFS, o)
    d_c = _horner(sq, COS_COEFFS, o)
    x = mulhi(ym, _const(o, PI_4))  # x = (π/4)·2y = mantissa·2**(1 − lz) … times π/4
    sin_m = sub64(o, x, mulhi(x, d_s))
    sin_e = o.u32(1 - lz.astype(o.xp.int32))
    # cos = 1 − D_c held as Q1.63 (so 1 itself fits): 2**63 − D_c/2, exponent 1
    cos_m = sub64(o, _const(o, (1 << 31, 0)), (d_c[0] >> 1, (d_c[1] >> 1) | (d_c[0] << 31)))
    cos_e = o.xp.ones_like(sin_e)
    return sin_m, sin_e, cos_m, cos_e, q, half ^ (q & 1)


def scale(m: Pair, e: Any, factor: tuple[int, int, int] | None, o: Ops) -> tuple[Pair, Any]:
    """(m, e) times a static factor (:func:`posenc.exact.fixed.scale_words`), m first normalised."""
    if factor is None:
        return m, e
    m, s = shift_up(o, m)
    return mulhi(m, _const(o, factor[:2])), e - s + (factor[2] % (1 << 32))  # wraps like the rest


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


def round_f32(o: Ops, m: Pair, e: Any, odd: bool = False) -> Any:
    """The float32 bits nearest (ties to even) to (h·2**32 + l)·2**(e − 64); 0 for m = 0 (normal range only).

    ``odd=True`` rounds to odd instead: the 24 leading bits, the last one set
    when any bit below is. That value, rounded to nearest-even into a format
    of at most 22 bits (float16, bfloat16: a plain cast), is the 64-bit value
    rounded once into it (Boldo and Melquiond, "Emulation of FMA and correctly
    rounded sums: proved algorithms using rounding to odd", IEEE Trans.
    Computers 57 (2008)), where a float32 rounded to nearest first could land
    on the format's midpoint and round a second time the wrong way.
    """
    xp = o.xp
    (h, l), s = shift_up(o, m)
    if odd:
        top = (h >> 8) | o.u32(((h & 0xFF) | l) != 0)
        bits = ((e + 126 - s) << 23) | (top & 0x7FFFFF)
        return xp.where((m[0] | m[1]) == 0, 0, bits)
    top = h >> 8
    rb = (h >> 7) & 1
    sticky = o.u32(((h & 0x7F) | l) != 0)
    top = top + (rb & (sticky | (top & 1)))
    carry = top >> 24
    top = xp.where(carry == 1, top >> 1, top)
    # the value is top·2**(e − s − 24 + carry); its float32 exponent field is (e − s − 1 + carry) + 127
    field = e + 126 - s + carry
    bits = (field << 23) | (top & 0x7FFFFF)
    return xp.where((m[0] | m[1]) == 0, 0, bits)


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
    sb = round_f32(o, *scale(sin_m, sin_e, factor, o), odd)
    cb = round_f32(o, *scale(cos_m, cos_e, factor, o), odd)
    sw = swap == 1
    s_mag, c_mag = o.xp.where(sw, cb, sb), o.xp.where(sw, sb, cb)
    # an exact zero (sin kπ, cos of an odd multiple of π/2: dyadic bands) is +0, whatever the quadrant
    sin = s_mag | (o.u32((q >= 2) & (s_mag != 0)) << 31)
    cos = c_mag | (o.u32(((q == 1) | (q == 2)) & (c_mag != 0)) << 31)
    return o.to_f32(sin), o.to_f32(cos)
