"""One pass that places per-axis table rows into multi-axis cos/sin (numba, the ``fast`` extra).

Multi-axis RoPE tables are built from small exact per-axis tables (one row
per distinct position of an axis, one column per pair of the axis). Placing
them is a gather whose destination columns are scattered (each axis owns a
few runs of pairs), which NumPy does run by run with strided copies; this
kernel writes each output row once, in pair order. It only copies values the
exact path computed, so NumPy and numba give the same bits.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._concurrency import default_threads, run_spans, spans
from .._optional import compiled

__all__ = ["gather_rows"]


def _build() -> Any:
    from numba import njit

    @njit(cache=True, nogil=True)
    def gather(flat_s, flat_c, offsets, widths, pair_axis, pair_col, index, sin_out, cos_out, a, z):  # pragma: no cover
        n_axes = offsets.shape[0]
        pairs = pair_axis.shape[0]
        base = np.empty(n_axes, np.int64)
        src = np.empty(pairs, np.int64)
        for r in range(a, z):
            # where each pair's value sits: its axis's table row for this token, then its column there
            for x in range(n_axes):
                base[x] = offsets[x] + index[x, r] * widths[x]
            for i in range(pairs):
                src[i] = base[pair_axis[i]] + pair_col[i]
            for i in range(pairs):
                sin_out[r, i] = flat_s[src[i]]
            for i in range(pairs):
                cos_out[r, i] = flat_c[src[i]]

    return gather


def gather_rows(
    flat_s: np.ndarray,
    flat_c: np.ndarray,
    offsets: np.ndarray,
    placement: list[tuple[int, np.ndarray, int]],
    index: np.ndarray,
    sin_out: np.ndarray,
    cos_out: np.ndarray,
) -> bool:
    """``out[r, pairs_a] = table_a[index[a, r]]`` for every axis a, in one pass; False without numba.

    Args:
        flat_s, flat_c: every axis's (sin, cos) table ``[rows_a, k_a]``, C order,
            one after another; axis ``placement[j]``'s starts at ``offsets[j]``.
        offsets: int64, where each table starts.
        placement: per table, (its axis, its ``k_a`` pair indices, ``k_a``);
            together every pair of the output once.
        index: intp ``[n_axes, m]``, the table row of each position, by axis.
        sin_out, cos_out: ``[m, pairs]`` float32 or float64, C-contiguous.
    """
    if sin_out.dtype not in (np.float32, np.float64) or sin_out.dtype != flat_s.dtype \
            or not (sin_out.flags.c_contiguous and cos_out.flags.c_contiguous):
        return False
    kern = compiled("rope.gather", _build)
    if kern is None:
        return False
    n_axes, pairs = index.shape[0], sin_out.shape[1]
    start = np.zeros(n_axes, dtype=np.int64)
    widths = np.zeros(n_axes, dtype=np.int64)
    pair_axis = np.zeros(pairs, dtype=np.int64)
    pair_col = np.zeros(pairs, dtype=np.int64)
    for at, (a, idx, k) in zip(offsets.tolist(), placement, strict=True):
        start[a], widths[a] = at, k
        pair_axis[idx] = a
        pair_col[idx] = np.arange(k)
    m = index.shape[1]
    parts = default_threads() if m * pairs >= 1 << 17 else 1

    def work(a: int, z: int) -> None:
        kern(flat_s, flat_c, start, widths, pair_axis, pair_col, index, sin_out, cos_out, a, z)

    run_spans(spans(m, parts), work)
    return True
