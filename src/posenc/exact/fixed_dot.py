"""The phase frac(Σ_j B_ij·v_j) of float32 (or int32) operands, formed exactly in 32-bit integers.

Part of the 32-bit exact path (:mod:`posenc.exact.fixed`), written over an
array namespace (:class:`~posenc.exact.fixed_sincos.Ops`): the angle of
Tancik et al.'s random Fourier features, 2π·(B·v), as a phase that
:func:`~posenc.exact.fixed_sincos.sincos_f32` turns into sin and cos.

Method. A finite float32 is ±m·2**e with m < 2**24 an integer (subnormals
included, e = −149 for them) and an int32 is ±m·2**0 with m < 2**32, so each
product B_ij·v_j is ±P·2**E with P = m_B·m_v < 2**64 formed exactly from
16-bit limb products (:func:`~posenc.exact.fixed_phase.mul32`). Only
frac(B·v) matters, so P·2**E is placed in a Q0.128 window: the bits of
weight 2**0 and above are whole turns and drop out exactly, the bits below
2**-128 are cut (each term's magnitude truncated, an error below 2**-128).
The terms are summed mod 1, the positive and the negative ones apart, as
16-bit limbs in uint32 (a sum of d < 2**16 limbs cannot overflow), and the
carries propagated once. So the phase is within d·2**-128 of frac(B·v)
(absolute), for every finite value however large: there is no range limit
and no cancellation, unlike a float32 (or float64) dot product. Where every
product is a multiple of 2**-128 (e_B + e_v >= −128 in every term) the
phase is exact.
"""

from __future__ import annotations

from typing import Any

from ..errors import PosEncError
from .fixed_phase import M16, Words, mul32, sub128
from .fixed_sincos import Ops

__all__ = ["MAX_TERMS", "phase_of_dot", "product_words", "significand"]

#: The longest sum the limb accumulation holds: d·(2**16 − 1) plus the carry stays below 2**32.
MAX_TERMS = 2**16 - 1


def _integral(v: Any) -> bool:
    """Whether v holds integers: a NumPy or JAX dtype's kind, or a torch dtype (which has none)."""
    kind = getattr(v.dtype, "kind", None)
    return kind in ("i", "u") if kind is not None else not v.dtype.is_floating_point


def significand(o: Ops, v: Any) -> tuple[Any, Any, Any, Any]:
    """(m, e, negative, finite) with |v| = m·2**e: uint32 m, int32 e, for float32 or int32 v (any shape)."""
    xp = o.xp
    if _integral(v):
        u = o.u32(v)
        neg = v < 0
        zero = xp.zeros(v.shape, dtype=xp.int32)
        return xp.where(neg, 0 - u, u), zero, neg, zero == 0
    b = o.bits(v)
    ex = ((b >> 23) & 0xFF).astype(xp.int32)
    mant = b & 0x7FFFFF
    m = xp.where(ex == 0, mant, mant | 0x800000)
    e = xp.where(ex == 0, 1, ex) - 150
    return m, e, (b >> 31) == 1, ex != 255


def product_words(o: Ops, a: tuple[Any, Any], b: tuple[Any, Any]) -> Words:
    """frac(|a·b|) in Q0.128 (most significant word first), |a| = m_a·2**e_a, |b| = m_b·2**e_b, cut below 2**-128.

    ``a`` and ``b`` are (m, e) pairs of :func:`significand` (broadcast
    against each other). The 64-bit product P is shifted left by E + 192 in
    a 192-bit field (six words); the top four words are bits 2**-1 … 2**-128.
    A shift past the field (E >= 0: whole turns) gives 0, and one below 0
    leaves nothing in the top words (P·2**E < 2**-128).
    """
    xp = o.xp
    hi, lo = mul32(a[0], b[0] >> 16, b[0] & M16)
    t = a[1] + b[1] + 192
    inside = (t >= 0) & (t < 192)
    tc = xp.clip(t, 0, 191)
    ws = tc >> 5  # the word the product's low word lands on, 0 … 5
    bs = o.u32(tc & 31)
    r = (32 - bs) & 31  # a shift by 32 is undefined: bs = 0 takes the words as they are
    keep = bs == 0
    zero = xp.zeros_like(hi)
    q = (lo << bs, xp.where(keep, hi, (hi << bs) | (lo >> r)), xp.where(keep, zero, hi >> r))
    out = []
    for k in (5, 4, 3, 2):  # the field's words 2 … 5 (units of 2**-192): the window's words, lowest last
        v = zero
        for j in range(3):
            if 0 <= k - j <= 5:
                v = xp.where(ws == k - j, q[j], v)
        out.append(xp.where(inside, v, zero))
    return out[0], out[1], out[2], out[3]


def _limb_sum(o: Ops, words: Words, take: Any) -> Words:
    """Σ over the last axis of the words where ``take``, mod 1: limb sums, then one carry pass."""
    xp = o.xp
    zero = xp.zeros_like(words[0])
    limbs = []
    for w in reversed(words):  # least significant first
        w = xp.where(take, w, zero)
        limbs += [xp.sum(w & M16, axis=-1, dtype=xp.uint32), xp.sum(w >> 16, axis=-1, dtype=xp.uint32)]
    carry = 0 * limbs[0]
    digits = []
    for s in limbs:
        s = s + carry
        digits.append(s & M16)
        carry = s >> 16  # the carry out of the top limb is whole turns
    out = tuple(digits[2 * i] | (digits[2 * i + 1] << 16) for i in range(4))
    return out[3], out[2], out[1], out[0]


def phase_of_dot(o: Ops, v: Any, b: Any) -> tuple[Words, Any]:
    """frac(Σ_j b_ij·v_j) as Q0.128 words ``[..., m]``, and whether every operand was finite.

    Args:
        o: the backend.
        v: float32 or int32 ``[..., d]``.
        b: float32 or int32 ``[m, d]`` (or anything broadcasting with ``v[..., None, :]``).

    Returns:
        (phase, finite): four uint32 words ``[..., m]``, within d·2**-128 of
        frac(B·v) (each term cut, never rounded up); ``finite`` is False where
        a v_j or B_ij is infinite or NaN (the words there are meaningless).

    >>> import numpy as np
    >>> from posenc.exact.fixed_sincos import NUMPY_OPS
    >>> (w, ok) = phase_of_dot(NUMPY_OPS, np.float32([3.0, 0.25]), np.float32([[0.5, -1.5]]))
    >>> hex(int(w[0][0])), bool(ok[0])  # 1.5 − 0.375 = 1.125: the phase 1/8
    ('0x20000000', True)
    """
    d = int(v.shape[-1])
    if d > MAX_TERMS:
        raise PosEncError(f"the coordinates' last axis d = {d} is past {MAX_TERMS}, the longest exact sum")
    if _integral(v) and _integral(b):  # an integer B·v: the phase is 0 (no work to fold away)
        zero = o.xp.zeros(o.xp.broadcast_shapes((*v.shape[:-1], 1), b.shape[:-1]), dtype=o.xp.uint32)
        return (zero, zero, zero, zero), zero == 0
    mv, ev, nv, fv = significand(o, v)
    mb, eb, nb, fb = significand(o, b)
    words = product_words(o, (mv[..., None, :], ev[..., None, :]), (mb, eb))
    neg = nv[..., None, :] ^ nb
    finite = o.xp.all(fv[..., None, :] & fb, axis=-1)
    return sub128(o, _limb_sum(o, words, ~neg), _limb_sum(o, words, neg)), finite
