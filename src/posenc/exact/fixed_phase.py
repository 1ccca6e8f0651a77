"""The phase frac(p·ω/2π) in 32-bit integers, for integer and float32 positions.

Part of the 32-bit exact path (:mod:`posenc.exact.fixed`), written over an
array namespace (:class:`~posenc.exact.fixed_sincos.Ops`). A phase is four
uint32 words, Q0.128, most significant first.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .fixed import FixedLadder

__all__ = ["add128", "add_words", "mul32", "neg128", "phase_of_floats", "phase_of_integers", "sub128"]

M16 = 0xFFFF
Words = tuple[Any, Any, Any, Any]


def mul32(a: Any, bh: Any, bl: Any) -> tuple[Any, Any]:
    """a·b exactly as (hi, lo), b given by its 16-bit halves; every limb product < 2**32."""
    ah, al = a >> 16, a & M16
    ll, lh, hl = al * bl, al * bh, ah * bl
    mid = (ll >> 16) + (lh & M16) + (hl & M16)  # < 3·2**16: no overflow
    lo = (ll & M16) | (mid << 16)
    hi = ah * bh + (lh >> 16) + (hl >> 16) + (mid >> 16)
    return hi, lo


def _zero(v: Any) -> bool:
    return isinstance(v, int) and v == 0


def add_words(o: Any, a: tuple[Any, ...], b: tuple[Any, ...], carry: Any = 0) -> tuple[Any, ...]:
    """a + b + carry for equal-length multiword numbers (most significant word first), the top carry dropped.

    ``carry`` (0 or 1, a Python int or a uint32 array) enters at the lowest word. A word that is a Python-int
    0 costs no operation.
    """
    out = []
    c = carry
    for j in range(len(a) - 1, -1, -1):
        if _zero(a[j]) or _zero(b[j]):
            t, c1 = (b[j] if _zero(a[j]) else a[j]), 0
        else:
            t = a[j] + b[j]
            c1 = o.u32(t < a[j]) if j else 0
        if _zero(c):
            t2, c2 = t, 0
        else:
            t2 = t + c
            c2 = o.u32(t2 < t) if j else 0
        out.append(t2)
        c = c2 if _zero(c1) else c1 if _zero(c2) else c1 | c2  # never both: a + b + 1 < 2**33 − 1
    return tuple(reversed(out))


def add128(o: Any, a: Words, b: Words) -> Words:
    """(a + b) mod 1."""
    return add_words(o, a, b)


def sub128(o: Any, a: Words, b: Words) -> Words:
    """(a − b) mod 1: a + (2**128 − 1 − b) + 1, the complement's 1 the carry into the lowest word."""
    ones = o.xp.asarray(0xFFFFFFFF, dtype=o.xp.uint32)
    neg = tuple(w ^ ones for w in b)  # not ~w: torch.compile traces no ~ on posenc.torch's uint32 wrapper
    return add_words(o, a, neg, 1)


def neg128(o: Any, b: Words) -> Words:
    """(−b) mod 1."""
    return sub128(o, (0, 0, 0, 0), b)


def _words(o: Any, arr: Any) -> Words:
    return tuple(o.xp.asarray(arr[j]) for j in range(4))


def _halves(o: Any, w: Any) -> tuple[Any, Any]:
    """A word's 16-bit halves (high, low): a host constant's split on the host, so the graph holds no
    operation for it."""
    if isinstance(w, np.ndarray):
        return o.xp.asarray(w >> 16), o.xp.asarray(w & M16)
    x = o.xp.asarray(w)
    return x >> 16, x & M16


def _times_fraction(o: Any, u: Any, frac: Any) -> Words:
    """frac(u·F) for uint32 u and F in Q0.128 (``frac``: its four words): the top product word is whole turns
    and drops out."""
    # the top word's product: only its low half is a fraction (a wrapping uint32 multiply), the rest whole turns
    prods = [mul32(u, *_halves(o, frac[j])) for j in (1, 2, 3)]
    high = (prods[0][0], prods[1][0], prods[2][0], 0)  # each high word lands on the word above
    return add128(o, (u * o.xp.asarray(frac[0]), prods[0][1], prods[1][1], prods[2][1]), high)


def phase_of_integers(o: Any, p: Any, fixed: FixedLadder, origin: int = 0) -> Words:
    """frac((p + origin)·ω_i/2π), p int32 ``[..., 1]``, origin a static int; error < 2**-95 for every int32 p.

    θ = p + origin is formed in int32 and read as a uint32 u: for θ >= 0 the
    phase is frac(u·F); for θ < 0 (u = θ + 2**32) frac(2**32·ω/2π) is taken
    back. An overflow of p + origin is the carry that makes θ >= 0 again, so
    θ = 0 gives the phase 0 exactly, whatever the origin.
    """
    xp = o.xp
    if origin:
        # in uint32, biased by 2**31 (signed order becomes unsigned order): a signed overflow is
        # something a compiler may assume away, an unsigned carry is not
        sign = xp.asarray(1 << 31, dtype=xp.uint32)
        biased = o.u32(p) ^ sign
        t = biased + xp.asarray(origin % (1 << 32), dtype=xp.uint32)
        low = t < sign  # θ + 2**31 < 2**31 before any carry: θ < 0
        negative = (low & ~(t < biased)) if origin > 0 else (low | (t > biased))
        s = t ^ sign
    else:
        s, negative = p, p < 0
    f = _times_fraction(o, o.u32(s), fixed.frac_words)
    zero = xp.zeros_like(f[0])
    back = tuple(xp.where(negative, w, zero) for w in _words(o, fixed.unwrap_words))
    return add128(o, f, back)  # less 2**32·F, as one addition of its complement mod 1


def _fraction_shifted(o: Any, m: Any, k: Any, fixed: FixedLadder) -> Words:
    """frac(m·2**-k·ω_i/2π) for uint32 m < 2**24 and 0 <= k < 160: the product's words, shifted right by k."""
    xp = o.xp
    hi_i, lo_i = mul32(m, *_halves(o, fixed.int_words))
    prods = [mul32(m, *_halves(o, fixed.frac_words[j])) for j in range(4)]
    zero = 0 * m
    a = (hi_i, lo_i, *(p[1] for p in prods))
    b = (0, *(p[0] for p in prods), 0)
    words = add_words(o, a, b)[::-1]  # least significant first, units of 2**-128
    ws, bs = k >> 5, k & 31
    at = [ws == s for s in range(5)]
    picked = []
    for j in range(5):  # the words ws + j, j = 0 … 4 (zero past the top)
        v = zero
        for s in range(5):
            if s + j < 6:
                v = xp.where(at[s], words[s + j], v)
        picked.append(v)
    r = (32 - bs) & 31
    keep = bs == 0
    out = [xp.where(keep, picked[j], (picked[j] >> bs) | (picked[j + 1] << r)) for j in range(4)]
    return out[3], out[2], out[1], out[0]


def phase_of_floats(o: Any, t: Any, fixed: FixedLadder, origin: int = 0) -> Words:
    """frac((t + origin)·ω_i/2π) for float32 t ``[..., 1]``, |t| < 2**31, from t's exact value.

    t = ±(n + φ): the integer part ±n + origin takes the integer path, and
    φ·ω/2π = m·2**-k·ω/2π comes from t's significand (the integer part of
    ω/2π included). Error < 2**-94; an integral t gives the integer path's bits.
    """
    xp = o.xp
    b = o.bits(t)
    ex = ((b >> 23) & 0xFF).astype(xp.int32)
    mant = b & 0x7FFFFF
    m = xp.where(ex == 0, mant, mant | 0x800000)
    e = xp.where(ex == 0, 1, ex) - 150  # |t| = m·2**e
    k = xp.clip(-e, 0, 159)
    k31 = o.u32(xp.minimum(k, 31))
    n = xp.where(e >= 0, m << o.u32(xp.clip(e, 0, 8)), m >> k31)
    frac_m = xp.where(e >= 0, 0, xp.where(k < 24, m & ((1 << k31) - 1), m))
    neg = (b >> 31) == 1
    whole = xp.where(neg, 0 - n, n).astype(xp.int32)
    f = _fraction_shifted(o, frac_m, o.u32(k), fixed)
    # a negative t turns the other way: −f = (2**128 − 1 − f) + 1, the complement a xor with all ones, its 1
    # the carry into the sum's lowest word
    flip = o.u32(neg)
    ones = 0 - flip
    back = tuple(w ^ ones for w in f)
    return add_words(o, phase_of_integers(o, whole, fixed, origin), back, flip)
