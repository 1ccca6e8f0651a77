"""The compiled kernels of :mod:`posenc.exact.placement` (numba, the ``fast`` extra).

Indices are unsigned so numba emits no negative-index wraparound, which
would keep LLVM from vectorizing the copies; each kernel writes a span of
output rows and releases the GIL, and the caller runs spans on its threads.
They copy bits (tables and outputs are viewed as unsigned integers of the
dtype's width), so every dtype gives the exact path's values.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["build"]


def build() -> Any:
    """Compile (or load from numba's cache) the kernels: (diagonal, runs, select, extent, diagonal_runs)."""
    from numba import float64, int64, njit, uint64

    @njit(cache=True, nogil=True, boundscheck=False)
    def extent(flat):  # pragma: no cover - compiled
        """(min, max, any key fractional) of finite keys |k| < 2**53, through int64 (which vectorizes).

        With a fractional key, min and max are of the keys' integer parts.
        """
        lo = int64(flat[0])
        hi = lo
        fractional = 0
        for i in range(uint64(flat.shape[0])):
            k = int64(flat[i])
            lo = min(lo, k)
            hi = max(hi, k)
            fractional |= float64(k) != flat[i]
        return lo, hi, fractional

    @njit(cache=True, nogil=True, boundscheck=False)
    def diagonal(keys):  # pragma: no cover - compiled
        """Whether every row of keys [m, n] holds one value; stops at the first row that does not."""
        m, n = keys.shape
        for r in range(m):
            for x in range(1, n):
                if keys[r, x] != keys[r, 0]:
                    return False
        return True

    @njit(cache=True, nogil=True, boundscheck=False)
    def runs(data, out, keys, lo, r_axis, r_start, r_len, width, first, last):  # pragma: no cover - compiled
        """out[r, run] = data[key(r, axis) - lo, run] for every run of columns of one axis."""
        n = keys.shape[1]
        uw = uint64(width)
        ptr = np.empty(n, np.uint64)
        for r in range(first, last):
            dst = uint64(r) * uw
            same = True
            for x in range(n):
                ptr[x] = uint64(np.int64(keys[r, x]) - lo) * uw
                same = same and keys[r, x] == keys[r, 0]
            if same:  # a diagonal point: its table row as is
                s = ptr[0]
                for i in range(uw):
                    out[dst + i] = data[s + i]
                continue
            for k in range(r_axis.shape[0]):
                s = ptr[r_axis[k]] + uint64(r_start[k])
                d = dst + uint64(r_start[k])
                for i in range(uint64(r_len[k])):
                    out[d + i] = data[s + i]

    @njit(cache=True, nogil=True, boundscheck=False)
    def select(data, out, keys, lo, cols, m0, m1, m2, m3, k, accumulate, width, first, last):  # pragma: no cover
        """out[r, c] = data[key(r, cols[j]) - lo, c] where mask j is all ones on c, for up to 4 axes j.

        A bitwise select (each column is in exactly one mask) rather than a
        gather, so every load and store has unit stride; ``accumulate`` ORs
        into what earlier passes (axes beyond the fourth) wrote. The part
        from all but the last axis is kept while those keys repeat (a grid
        in C order varies its last axis fastest).
        """
        n = keys.shape[1]
        uw = uint64(width)
        part = np.zeros(uw, data.dtype)
        held0 = uint64(0)
        held1 = uint64(0)
        held = False
        for r in range(first, last):
            dst = uint64(r) * uw
            same = not accumulate
            for x in range(n):
                same = same and keys[r, x] == keys[r, 0]
            a0 = uint64(np.int64(keys[r, cols[0]]) - lo) * uw
            a1 = uint64(np.int64(keys[r, cols[1]]) - lo) * uw
            a2 = uint64(np.int64(keys[r, cols[2]]) - lo) * uw
            a3 = uint64(np.int64(keys[r, cols[3]]) - lo) * uw
            if same:
                for i in range(uw):
                    out[dst + i] = data[a0 + i]
            elif accumulate or k > 3:
                for i in range(uw):
                    v = ((data[a0 + i] & m0[i]) | (data[a1 + i] & m1[i])
                         | (data[a2 + i] & m2[i]) | (data[a3 + i] & m3[i]))
                    out[dst + i] = (out[dst + i] | v) if accumulate else v
            elif k == 2:
                if not (held and a0 == held0):
                    for i in range(uw):
                        part[i] = data[a0 + i] & m0[i]
                    held, held0 = True, a0
                for i in range(uw):
                    out[dst + i] = part[i] | (data[a1 + i] & m1[i])
            else:
                if not (held and a0 == held0 and a1 == held1):
                    for i in range(uw):
                        part[i] = (data[a0 + i] & m0[i]) | (data[a1 + i] & m1[i])
                    held, held0, held1 = True, a0, a1
                for i in range(uw):
                    out[dst + i] = part[i] | (data[a2 + i] & m2[i])

    @njit(cache=True, nogil=True, boundscheck=False)
    def diagonal_runs(keys, min_rows):  # pragma: no cover - compiled
        """[k, 2] (first, stop) rows of each run of >= min_rows rows whose keys are all one integer, +1 a row."""
        m, n = keys.shape
        found = np.empty((m // max(min_rows, 1) + 1, 2), np.int64)
        k = 0
        r = 0
        while r < m:
            same = True
            for x in range(1, n):  # most rows of an image differ here at once
                same = same and keys[r, x] == keys[r, 0]
            if not same:
                r += 1
                continue
            first = r
            r += 1
            while r < m and keys[r, 0] == keys[r - 1, 0] + 1.0:
                same = True
                for x in range(1, n):
                    same = same and keys[r, x] == keys[r, 0]
                if not same:
                    break
                r += 1
            v = keys[first, 0]
            if r - first >= min_rows and v == np.floor(v):  # p, p+1, … from an integer: all integers
                found[k, 0] = first
                found[k, 1] = r
                k += 1
        return found[:k]

    return diagonal, runs, select, extent, diagonal_runs
