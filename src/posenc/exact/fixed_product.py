"""A static float64 times a traced int32, rounded as NumPy does (to float64, then float32), in 32-bit integers.

For backends without float64 (:mod:`posenc.exact.fixed`): ALiBi's m_h·t,
whose NumPy values are the float64 product rounded once more to float32.
The 96-bit product is exact; it is rounded to 53 bits and then to 24, each
to nearest-even, so the bits are NumPy's for every int32 t.
"""

from __future__ import annotations

from typing import Any

from .fixed import scale_words
from .fixed_phase import mul32
from .fixed_sincos import Ops, Pair, round_f32, shift_up

__all__ = ["round_to_bits", "times_int_f32"]


def round_to_bits(o: Ops, m: Pair, e: Any, keep: int) -> tuple[Pair, Any]:
    """(m, e) (value (h·2**32 + l)·2**(e − 64), m != 0) rounded to ``keep`` (33 … 63) significant bits, ties to even."""
    xp = o.xp
    (h, low), s = shift_up(o, m)
    drop = 64 - keep
    half = 1 << (drop - 1)
    rb = o.u32((low & half) != 0)
    sticky = o.u32((low & (half - 1)) != 0)
    lsb = (low >> drop) & 1
    kept = low & xp.asarray(0xFFFFFFFF ^ ((1 << drop) - 1), dtype=xp.uint32)
    new = kept + ((rb & (sticky | lsb)) << drop)
    carry = o.u32(new < kept)
    h2 = h + carry
    over = (h2 == 0) & (carry == 1)  # 2**64: the next power of two
    return (xp.where(over, xp.asarray(1 << 31, dtype=xp.uint32), h2), xp.where(over, 0, new)), e - s + o.u32(over)


def times_int_f32(o: Ops, t: Any, factor: float) -> Any:
    """round32(round64(factor·t)) as float32, for int32 t (any shape) and a positive float64 ``factor``."""
    xp = o.xp
    hi, lo, e = scale_words(factor)
    neg = t < 0
    u = o.u32(t)
    u = xp.where(neg, 0 - u, u)
    h1, l1 = mul32(u, hi >> 16, hi & 0xFFFF)
    h0, l0 = mul32(u, lo >> 16, lo & 0xFFFF)
    mid = l1 + h0
    top = (h1 + o.u32(mid < l1), mid | o.u32(l0 != 0))  # the lowest word only decides ties: jam it
    exp = o.u32(xp.zeros_like(u) + ((e + 32) % (1 << 32)))
    zero = u == 0
    safe = (xp.where(zero, xp.asarray(1 << 31, dtype=xp.uint32), top[0]), top[1])
    m, ex = round_to_bits(o, safe, exp, 53)
    bits = xp.where(zero, 0, round_f32(o, m, ex)) | (o.u32(neg) << 31)
    return o.to_f32(bits)
