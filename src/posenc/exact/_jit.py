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

from ..support.optional import compiled
from .core import FAST_EPS

__all__ = ["kernel"]


def _build() -> Any:
    from numba import float32, njit, uint64

    # Indices are unsigned so numba emits no negative-index wraparound, which
    # keeps LLVM from vectorizing; every row is built in two small buffers and
    # then stored by layout, so the arithmetic loop has unit strides (3-5x
    # faster than storing through the layout's strides in the same loop).
    @njit(cache=True, nogil=True, boundscheck=False)
    def rows(za_s, za_c, wb_c, wb_s, wm_c, wm_s, step, b2, first, last, out, s0, c0, st, counts):  # pragma: no cover
        """Rows [first, last) of out [m, w] float32: sin of pair i at channel s0 + st·i, cos at c0 + st·i.

        Each value is rounded from v - EPS; counts[r] gets the number of
        values of row r for which v + EPS rounds elsewhere (to recompute
        exactly). A row that is an exact row rotated by exactly 0 is a copy,
        whose rounding is the exact one.
        """
        n = uint64(za_s.shape[1])
        s_ab = np.empty(n)
        c_ab = np.empty(n)
        lo_s = np.empty(n, np.float32)
        lo_c = np.empty(n, np.float32)
        us0, uc0, ust, one, two = uint64(s0), uint64(c0), uint64(st), uint64(1), uint64(2)
        for r0 in range(first, last, b2):
            ia = uint64(r0 // step)
            ib = uint64((r0 % step) // b2)
            # the block's first position, a + b: one complex multiply per pair
            for i in range(n):
                s_ab[i] = za_s[ia, i] * wb_c[ib, i] + za_c[ia, i] * wb_s[ib, i]
                c_ab[i] = za_c[ia, i] * wb_c[ib, i] - za_s[ia, i] * wb_s[ib, i]
            for r in range(r0, min(last, r0 + b2)):
                m = uint64(r - r0)
                cnt = 0
                if r % step == 0:
                    for i in range(n):
                        lo_s[i] = s_ab[i] * wm_c[m, i] + c_ab[i] * wm_s[m, i]
                        lo_c[i] = c_ab[i] * wm_c[m, i] - s_ab[i] * wm_s[m, i]
                else:
                    for i in range(n):
                        s = s_ab[i] * wm_c[m, i] + c_ab[i] * wm_s[m, i]
                        c = c_ab[i] * wm_c[m, i] - s_ab[i] * wm_s[m, i]
                        a = float32(s - FAST_EPS)
                        b = float32(c - FAST_EPS)
                        # the exact value rounds like v only if v - EPS and v + EPS round alike
                        cnt += (a != float32(s + FAST_EPS)) + (b != float32(c + FAST_EPS))
                        lo_s[i] = a
                        lo_c[i] = b
                counts[r] = cnt
                ur = uint64(r)
                if st == 1:
                    for i in range(n):
                        out[ur, us0 + i] = lo_s[i]
                    for i in range(n):
                        out[ur, uc0 + i] = lo_c[i]
                elif st == 2 and c0 == s0 + 1:  # (sin, cos) side by side; a literal stride vectorizes
                    for i in range(n):
                        j = us0 + two * i
                        out[ur, j] = lo_s[i]
                        out[ur, j + one] = lo_c[i]
                else:
                    for i in range(n):
                        out[ur, us0 + ust * i] = lo_s[i]
                        out[ur, uc0 + ust * i] = lo_c[i]

    return rows


def kernel() -> Any:
    """The compiled ``rows`` kernel, or None when numba is not installed."""
    return compiled("exact.angle_addition", _build)

