"""Fused angle-addition kernels (numba, the optional ``fast`` extra).

Same arithmetic as the NumPy path in :mod:`posenc.exact.consecutive` — a
complex multiply per value, float64, rounded once to float32 — but in one
pass over the output. Compiled without ``fastmath``, so no contraction or
reassociation changes the error bound. Each call fills a span of rows and
releases the GIL; the caller runs spans on its own threads (numba's parallel
regions stall when another process holds a core, plain threads do not). The
kernel writes into the caller's whole table and is told where sin and cos of
each pair go (the layout as channel offsets), so nothing is reassembled from
views.

Imported only when numba is installed and a table is large enough to pay for
it; :func:`kernel` returns ``None`` otherwise.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._optional import compiled
from .core import FAST_EPS

__all__ = ["kernel"]


def _build() -> Any:
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

    @njit(cache=True, nogil=True, inline="always")
    def pairs(s_ab, c_ab, wm_c, wm_s, m, exact, dst, hi):  # pragma: no cover - compiled
        """dst[2i], dst[2i+1] = sin, cos of the row (rounded from v - EPS); returns how many are unsure."""
        n = s_ab.shape[0]
        if exact:  # a copy of an exact row (rotated by exactly 0): its rounding is the exact one
            for i in range(n):
                dst[2 * i] = s_ab[i] * wm_c[m, i] + c_ab[i] * wm_s[m, i]
                dst[2 * i + 1] = c_ab[i] * wm_c[m, i] - s_ab[i] * wm_s[m, i]
            return 0
        for i in range(n):
            s = s_ab[i] * wm_c[m, i] + c_ab[i] * wm_s[m, i]
            c = c_ab[i] * wm_c[m, i] - s_ab[i] * wm_s[m, i]
            dst[2 * i] = s - FAST_EPS
            dst[2 * i + 1] = c - FAST_EPS
            hi[2 * i] = s + FAST_EPS
            hi[2 * i + 1] = c + FAST_EPS
        # the exact value rounds like v only if v - EPS and v + EPS round alike
        cnt = 0
        for j in range(2 * n):
            cnt += dst[j] != hi[j]
        return cnt

    @njit(cache=True, nogil=True)
    def rows(za_s, za_c, wb_c, wb_s, wm_c, wm_s, step, b2, first, last, out, s0, c0, st, counts):  # pragma: no cover
        """Rows [first, last) of out [m, w] float32: sin of pair i at channel s0 + st·i, cos at c0 + st·i.

        counts[r] gets the number of unsure values of row r (to recompute exactly).
        """
        n = za_s.shape[1]
        packed = st == 2 and c0 == s0 + 1  # (sin, cos) pairs side by side: written in place
        lo = np.empty(2 * n, dtype=np.float32)
        hi = np.empty(2 * n, dtype=np.float32)
        for r0 in range(first, last, b2):
            ia = r0 // step
            ib = (r0 % step) // b2
            s_ab, c_ab = block_start(za_s, za_c, wb_c, wb_s, ia, ib)
            for r in range(r0, min(last, r0 + b2)):
                row = out[r]
                exact = r % step == 0
                if packed:
                    counts[r] = pairs(s_ab, c_ab, wm_c, wm_s, r - r0, exact, row[s0 : s0 + 2 * n], hi)
                    continue
                counts[r] = pairs(s_ab, c_ab, wm_c, wm_s, r - r0, exact, lo, hi)
                for i in range(n):
                    row[s0 + st * i] = lo[2 * i]
                    row[c0 + st * i] = lo[2 * i + 1]

    return rows


def kernel() -> Any:
    """The compiled ``rows`` kernel, or None when numba is not installed."""
    return compiled("exact.angle_addition", _build)

