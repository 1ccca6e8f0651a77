"""Fused RoPE rotation kernels (numba, the optional ``fast`` extra), one pass over q or k.

For each pair (a, b) of a head vector and its angle (cos c, sin s) the
kernels compute, in float32 and in this order,

    a' = a·c − b·s,    b' = b·c + a·s

— the same operations, rounded the same way, as ``x*cos + rotate_half(x)*sin``
evaluated in float32 by PyTorch or NumPy, so results are bit-identical to the
unfused path. Compiled without ``fastmath`` (no FMA contraction). bfloat16
arrives as its uint16 bit patterns: widened to float32 exactly, and rounded
back to nearest-even as ``torch.Tensor.to(torch.bfloat16)`` does (NaNs stay
NaN; their payload bits are not preserved). ``sign = -1``
rotates backwards (the gradient of a rotation is the inverse rotation).

Channels past ``rot`` are copied unchanged. Shapes: x and out ``[bh, s, d]``
(batch·heads, sequence, head_dim); ``cs`` ``[g, s, 2, rot/2]`` float32 holds
cos (``[..., 0, :]``) and sin (``[..., 1, :]``) side by side, as the torch
cache stores them, with ``g`` 1 or the batch size (row ``bh // heads``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..support.optional import cacheable, compiled

__all__ = ["kernels"]


def _build() -> tuple[Any, Any]:
    from numba import njit

    # the rotations call the pair loop and the rounding as globals bound to their compiled forms, not as closure
    # cells: numba's cache cannot key a closure over a compiled function (posenc.support.optional.cacheable)
    pairs, narrow = njit(nogil=True, inline="always")(_pairs), njit(nogil=True, inline="always")(_narrow)
    f32 = njit(cache=True, nogil=True)(cacheable(_f32, {"_pairs": pairs}, "rope_f32"))
    bf16 = njit(cache=True, nogil=True)(cacheable(_bf16, {"_narrow": narrow}, "rope_bf16"))
    return f32, bf16


def _pairs(xr, orow, cr, sr, half, rot, sign):  # pragma: no cover - compiled
    r2 = rot // 2
    if half:
        for i in range(r2):
            c = cr[i]
            s = sr[i] * sign
            a = xr[i]
            b = xr[i + r2]
            orow[i] = a * c - b * s
            orow[i + r2] = b * c + a * s
    else:
        for i in range(r2):
            c = cr[i]
            s = sr[i] * sign
            a = xr[2 * i]
            b = xr[2 * i + 1]
            orow[2 * i] = a * c - b * s
            orow[2 * i + 1] = b * c + a * s
    for j in range(rot, xr.shape[0]):
        orow[j] = xr[j]


def _f32(x, cs, out, heads, half, rot, sign, first, last):  # pragma: no cover - compiled
    """float32 q or k: rows [first, last) of bh rotated (the template of the compiled kernel)."""
    multi = cs.shape[0] > 1
    sg = np.float32(sign)
    for bh in range(first, last):
        g = bh // heads if multi else 0
        for t in range(x.shape[1]):
            _pairs(x[bh, t], out[bh, t], cs[g, t, 0], cs[g, t, 1], half, rot, sg)


def _narrow(u):  # pragma: no cover - compiled
    """float32 bits -> bfloat16 bits, round to nearest even.

    No NaN branch: every NaN here has zero low 16 bits (widened bfloat16
    NaNs, or the hardware's default NaN), so rounding leaves it a NaN.
    """
    return np.uint16((u + np.uint32(0x7FFF) + ((u >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16))


def _bf16(x, cs, out, heads, half, rot, sign, first, last):  # pragma: no cover - compiled
    """bfloat16 bits: as :func:`_f32`, each pair widened to float32 and each result rounded back."""
    multi = cs.shape[0] > 1
    sg = np.float32(sign)
    d = x.shape[2]
    r2 = rot // 2
    # pairs widened to float32 (bit patterns shifted up: exact), results as float32
    a = np.empty(r2, dtype=np.uint32)
    b = np.empty(r2, dtype=np.uint32)
    af = a.view(np.float32)
    bf = b.view(np.float32)
    o1 = np.empty(r2, dtype=np.float32)
    o2 = np.empty(r2, dtype=np.float32)
    o1u = o1.view(np.uint32)
    o2u = o2.view(np.uint32)
    sixteen = np.uint32(16)
    for bh in range(first, last):
        g = bh // heads if multi else 0
        for t in range(x.shape[1]):
            xr = x[bh, t]
            orow = out[bh, t]
            cr = cs[g, t, 0]
            sr = cs[g, t, 1]
            if half:
                for i in range(r2):
                    a[i] = np.uint32(xr[i]) << sixteen
                    b[i] = np.uint32(xr[i + r2]) << sixteen
            else:
                for i in range(r2):
                    a[i] = np.uint32(xr[2 * i]) << sixteen
                    b[i] = np.uint32(xr[2 * i + 1]) << sixteen
            for i in range(r2):
                c = cr[i]
                s = sr[i] * sg
                o1[i] = af[i] * c - bf[i] * s
                o2[i] = bf[i] * c + af[i] * s
            if half:
                for i in range(r2):
                    orow[i] = _narrow(o1u[i])
                    orow[i + r2] = _narrow(o2u[i])
            else:
                for i in range(r2):
                    orow[2 * i] = _narrow(o1u[i])
                    orow[2 * i + 1] = _narrow(o2u[i])
            for j in range(rot, d):
                orow[j] = xr[j]


def kernels() -> tuple[Any, Any] | None:
    """The compiled (float32, bfloat16) kernels, or None when numba is not installed."""
    result: tuple[Any, Any] | None = compiled("rope", _build)
    return result
