"""One pass that places per-axis table rows into multi-axis cos/sin (numba, the ``fast`` extra).

Multi-axis RoPE tables are built from small exact per-axis tables (one row
per distinct position of an axis). Placing them is a gather whose
destination columns are scattered (each axis owns a few runs of pairs), and
NumPy's strided copies cost several times the output write there; this
kernel writes each output row once, every run in turn. It only copies values
the exact path computed, so NumPy and numba give the same bits.
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
    def gather(flat_s, flat_c, offsets, widths, starts, steps, axes, index, sin_out, cos_out, a, z):  # pragma: no cover
        for r in range(a, z):
            for q in range(offsets.shape[0]):
                base = offsets[q] + index[axes[q], r] * widths[q]
                col = starts[q]
                for j in range(widths[q]):
                    sin_out[r, col] = flat_s[base + j]
                    cos_out[r, col] = flat_c[base + j]
                    col += steps[q]

    return gather


def gather_rows(
    tables: list[tuple[np.ndarray, np.ndarray]],
    placement: list[tuple[int, slice]],
    index: np.ndarray,
    sin_out: np.ndarray,
    cos_out: np.ndarray,
) -> bool:
    """``out[r, pairs_q] = table_q[index[axis_q, r]]`` for every run q, in one pass; False without numba.

    Args:
        tables: per run, its (sin, cos) tables ``[rows_q, k_q]``, C-contiguous.
        placement: per run, (axis, slice of pairs with ``k_q`` entries).
        index: intp ``[n_axes, m]``, the table row of each position.
        sin_out, cos_out: ``[m, pairs]`` float32 or float64.
    """
    if sin_out.dtype not in (np.float32, np.float64) or sin_out.dtype != tables[0][0].dtype:
        return False
    kern = compiled("rope.gather", _build)
    if kern is None:
        return False
    sizes = [s.size for s, _ in tables]
    offsets = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    flat_s = np.concatenate([s.reshape(-1) for s, _ in tables])
    flat_c = np.concatenate([c.reshape(-1) for _, c in tables])
    widths = np.array([s.shape[1] for s, _ in tables], dtype=np.int64)
    starts = np.array([sl.start for _, sl in placement], dtype=np.int64)
    steps = np.array([sl.step or 1 for _, sl in placement], dtype=np.int64)
    axes = np.array([a for a, _ in placement], dtype=np.int64)
    m = index.shape[1]
    parts = default_threads() if m * sin_out.shape[1] >= 1 << 17 else 1

    def work(a: int, z: int) -> None:
        kern(flat_s, flat_c, offsets, widths, starts, steps, axes, index, sin_out, cos_out, a, z)

    run_spans(spans(m, parts), work)
    return True
