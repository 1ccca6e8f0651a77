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

import threading
from typing import Any

import numpy as np

__all__ = ["LOCK", "kernels"]

#: numba's default "workqueue" threading layer must not be entered by two
#: Python threads at once; every launch holds this lock.
LOCK = threading.Lock()

_EPS = 2.0**-48  # bound on |fast - exact| in float64 (see posenc.exact.consecutive)
_cache: dict[str, Any] = {}


def _build() -> tuple[Any, Any]:
    from numba import njit

    @njit(cache=True, nogil=True)
    def joint(za_s, za_c, wb_c, wb_s, wm_c, wm_s, step, b2, first, last, out, counts):  # pragma: no cover - compiled
        """Rows [first, last) of out [m, 2n] float32 (sin, cos interleaved); counts [m] of unsure values."""
        length = last
        n = za_s.shape[1]
        for r0 in range(first, last, b2):
            ia = r0 // step
            ib = (r0 % step) // b2
            s_ab = np.empty(n)
            c_ab = np.empty(n)
            for i in range(n):
                s_ab[i] = za_s[ia, i] * wb_c[ib, i] + za_c[ia, i] * wb_s[ib, i]
                c_ab[i] = za_c[ia, i] * wb_c[ib, i] - za_s[ia, i] * wb_s[ib, i]
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
                    row[2 * i] = s - _EPS
                    row[2 * i + 1] = c - _EPS
                    hi[2 * i] = s + _EPS
                    hi[2 * i + 1] = c + _EPS
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
            s_ab = np.empty(n)
            c_ab = np.empty(n)
            for i in range(n):
                s_ab[i] = za_s[ia, i] * wb_c[ib, i] + za_c[ia, i] * wb_s[ib, i]
                c_ab[i] = za_c[ia, i] * wb_c[ib, i] - za_s[ia, i] * wb_s[ib, i]
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
                    lo_s = np.float32(s - _EPS)
                    lo_c = np.float32(c - _EPS)
                    srow[i] = lo_s
                    crow[i] = lo_c
                    cnt += (lo_s != np.float32(s + _EPS)) + (lo_c != np.float32(c + _EPS))
                counts[r] = cnt

    return joint, apart


def kernels() -> tuple[Any, Any] | None:
    """The compiled (joint, apart) kernels, or None when numba is not installed."""
    if "k" not in _cache:
        try:
            _cache["k"] = _build()
        except ImportError:
            _cache["k"] = None
    return _cache["k"]


def _build_exact(p_parts: Any, two_over_pi: float, sin_c: Any, cos_c: Any) -> Any:
    """The exact path of :mod:`posenc.exact.angles`, operation for operation, one element at a time.

    Same IEEE additions and multiplications in the same order (no fastmath,
    so no FMA contraction), hence the same bits as the NumPy path; without
    NumPy's per-call overhead it is ~20x faster on small inputs.
    """
    from numba import njit

    P0, P1, P2, P3 = (float(x) for x in p_parts)
    SPLIT = 134217729.0
    P0H = SPLIT * P0 - (SPLIT * P0 - P0)
    P0L = P0 - P0H
    P1H = SPLIT * P1 - (SPLIT * P1 - P1)
    P1L = P1 - P1H
    TWO_OVER_PI = float(two_over_pi)
    SC = np.array(sin_c, dtype=np.float64)
    CC = np.array(cos_c, dtype=np.float64)

    @njit(cache=True, nogil=True, inline="always")
    def split(a):  # pragma: no cover - compiled
        t = SPLIT * a
        hi = t - (t - a)
        return hi, a - hi

    @njit(cache=True, nogil=True, inline="always")
    def two_prod(a, ah, al, b, bh, bl):  # pragma: no cover - compiled
        p = a * b
        return p, ((ah * bh - p) + ah * bl + al * bh) + al * bl

    @njit(cache=True, nogil=True, inline="always")
    def two_sum(a, b):  # pragma: no cover - compiled
        s = a + b
        bb = s - a
        return s, (a - (s - bb)) + (b - bb)

    @njit(cache=True, nogil=True, inline="always")
    def horner(c, z):  # pragma: no cover - compiled
        acc = c[-1] * z + c[-2]
        for j in range(c.shape[0] - 3, -1, -1):
            acc = acc * z + c[j]
        return acc

    @njit(cache=True, nogil=True)
    def one(p, ph, pl, plo, qh, ql, has_lo, w0, w1, w2, w0h, w0l, w1h, w1l, sc, cc):  # pragma: no cover
        h0, l0 = two_prod(p, ph, pl, w0, w0h, w0l)
        h1, l1 = two_prod(p, ph, pl, w1, w1h, w1l)
        k = np.rint(h0 * TWO_OVER_PI)
        kh, kl = split(k)
        a0, b0 = two_prod(k, kh, kl, P0, P0H, P0L)
        a1, b1 = two_prod(k, kh, kl, P1, P1H, P1L)
        s, e = two_sum(h0, -a0)
        small = (l1 - b1) + (p * w2 - k * P2) - k * P3
        s, err = two_sum(s, l0)
        e = e + err
        s, err = two_sum(s, -b0)
        e = e + err
        s, err = two_sum(s, h1)
        e = e + err
        s, err = two_sum(s, -a1)
        e = e + err
        if has_lo:
            c0, d0 = two_prod(plo, qh, ql, w0, w0h, w0l)
            small = small + d0 + plo * w1
            s, err = two_sum(s, c0)
            e = e + err
        x, y = two_sum(s, e + small)
        if abs(x) > 0.8:
            k2 = np.rint(x * TWO_OVER_PI)
            k2h, k2l = split(k2)
            t0, u0 = two_prod(k2, k2h, k2l, P0, P0H, P0L)
            x, err = two_sum(x, -t0)
            y = y + err - u0 - k2 * P1
            x, y = two_sum(x, y)
            k = k + k2
        xh, xl = split(x)
        zh, zl = two_prod(x, xh, xl, x, xh, xl)
        poly = horner(sc, zh)
        hz = 0.5 * zh
        sin_r = x + (x * zh * poly + y * (1.0 - hz))
        poly = horner(cc, zh)
        w = 1.0 - hz
        cos_r = w + ((((1.0 - w) - hz) - 0.5 * zl) + (zh * zh * poly - x * y))
        q = int(k - 4.0 * np.floor(k * 0.25))
        if q & 1:
            sv, cv = cos_r, sin_r
        else:
            sv, cv = sin_r, cos_r
        if q >= 2:
            sv = -sv
        if q == 1 or q == 2:
            cv = -cv
        return sv, cv

    @njit(cache=True, nogil=True)
    def fill(pos, plo, has_lo, w0, w1, w2, w0h, w0l, w1h, w1l, sin_out, cos_out, first, last):  # pragma: no cover
        for r in range(first, last):
            p = pos[r]
            ph, pl = split(p)
            lo = plo[r] if has_lo else 0.0
            qh, ql = split(lo)
            for i in range(w0.shape[0]):
                sv, cv = one(p, ph, pl, lo, qh, ql, has_lo, w0[i], w1[i], w2[i], w0h[i], w0l[i], w1h[i], w1l[i],
                             SC, CC)
                sin_out[r, i] = sv
                cos_out[r, i] = cv

    return fill


def exact_kernel() -> Any:
    """The compiled exact-path kernel, or None when numba is not installed."""
    if "exact" not in _cache:
        try:
            from .angles import _COS_C, _HALF_PI, _SIN_C, _TWO_OVER_PI

            _cache["exact"] = _build_exact(_HALF_PI, float(_TWO_OVER_PI), _SIN_C, _COS_C)
        except ImportError:
            _cache["exact"] = None
    return _cache["exact"]
