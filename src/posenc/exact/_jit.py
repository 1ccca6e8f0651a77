"""Fused angle-addition kernels (numba, the optional ``fast`` extra).

Same arithmetic as the NumPy path in :mod:`posenc.exact.consecutive` — a
complex multiply per value, float64, rounded once to float32 — but in one
pass over the output. Compiled without ``fastmath``, so no contraction or
reassociation changes the error bound. Each call fills a span of rows and
releases the GIL; the caller runs spans on its own threads (numba's parallel
regions stall when another process holds a core, plain threads do not).

Imported only when numba is installed and a table is large enough to pay for
it; :func:`kernels` returns ``None`` otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._optional import compiled
from .core import FAST_EPS

__all__ = ["kernels"]


def _build() -> tuple[Any, Any]:
    from numba import njit

    @njit(cache=True, nogil=True, inline="always")
    def block_start(za_s, za_c, wb_c, wb_s, ia, ib):  # pragma: no cover - compiled
        """sin/cos of the block's first position, (a + b): one complex multiply per pair."""
        n = za_s.shape[1]
        s_ab = np.empty(n)
        c_ab = np.empty(n)
        for i in range(n):
            s_ab[i] = za_s[ia, i] * wb_c[ib, i] + za_c[ia, i] * wb_s[ib, i]
            c_ab[i] = za_c[ia, i] * wb_c[ib, i] - za_s[ia, i] * wb_s[ib, i]
        return s_ab, c_ab

    @njit(cache=True, nogil=True)
    def joint(za_s, za_c, wb_c, wb_s, wm_c, wm_s, step, b2, first, last, out, counts):  # pragma: no cover - compiled
        """Rows [first, last) of out [m, 2n] float32 (sin, cos interleaved); counts [m] of unsure values."""
        length = last
        n = za_s.shape[1]
        for r0 in range(first, last, b2):
            ia = r0 // step
            ib = (r0 % step) // b2
            s_ab, c_ab = block_start(za_s, za_c, wb_c, wb_s, ia, ib)
            hi = np.empty(2 * n, dtype=np.float32)
            hi_bits = hi.view(np.uint32)
            for r in range(r0, min(length, r0 + b2)):
                m = r - r0
                row = out[r]
                if r % step == 0:
                    # a copy of an exact row (rotated by exactly 0): its rounding is the exact one
                    for i in range(n):
                        row[2 * i] = s_ab[i] * wm_c[m, i] + c_ab[i] * wm_s[m, i]
                        row[2 * i + 1] = c_ab[i] * wm_c[m, i] - s_ab[i] * wm_s[m, i]
                    counts[r] = 0
                    continue
                for i in range(n):
                    s = s_ab[i] * wm_c[m, i] + c_ab[i] * wm_s[m, i]
                    c = c_ab[i] * wm_c[m, i] - s_ab[i] * wm_s[m, i]
                    row[2 * i] = s - FAST_EPS
                    row[2 * i + 1] = c - FAST_EPS
                    hi[2 * i] = s + FAST_EPS
                    hi[2 * i + 1] = c + FAST_EPS
                # the exact value rounds like v only if v - EPS and v + EPS round alike
                bits = row.view(np.uint32)
                cnt = 0
                for j in range(2 * n):
                    cnt += bits[j] != hi_bits[j]
                counts[r] = cnt

    @njit(cache=True, nogil=True)
    def apart(za_s, za_c, wb_c, wb_s, wm_c, wm_s, step, b2, first, last, sin_out, cos_out, counts):  # pragma: no cover
        """Rows [first, last) of sin_out, cos_out [m, n] float32 (any strides); counts of unsure values."""
        length = last
        n = za_s.shape[1]
        for r0 in range(first, last, b2):
            ia = r0 // step
            ib = (r0 % step) // b2
            s_ab, c_ab = block_start(za_s, za_c, wb_c, wb_s, ia, ib)
            for r in range(r0, min(length, r0 + b2)):
                m = r - r0
                srow = sin_out[r]
                crow = cos_out[r]
                exact = r % step == 0  # a copy of an exact row: its rounding is the exact one
                cnt = 0
                for i in range(n):
                    s = s_ab[i] * wm_c[m, i] + c_ab[i] * wm_s[m, i]
                    c = c_ab[i] * wm_c[m, i] - s_ab[i] * wm_s[m, i]
                    if exact:
                        srow[i] = s
                        crow[i] = c
                        continue
                    lo_s = np.float32(s - FAST_EPS)
                    lo_c = np.float32(c - FAST_EPS)
                    srow[i] = lo_s
                    crow[i] = lo_c
                    cnt += (lo_s != np.float32(s + FAST_EPS)) + (lo_c != np.float32(c + FAST_EPS))
                counts[r] = cnt

    return joint, apart


def kernels() -> tuple[Any, Any] | None:
    """The compiled (joint, apart) kernels, or None when numba is not installed."""
    result: tuple[Any, Any] | None = compiled("exact.angle_addition", _build)
    return result

