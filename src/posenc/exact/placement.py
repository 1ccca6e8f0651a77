"""Outputs whose every column follows one coordinate: a small exact table, placed row by row.

n-D sinusoids (:mod:`posenc.sinusoidal.grid`) and multi-axis RoPE
(:mod:`posenc.rope.sections`) have one shape: a point has a coordinate per
axis, and each output column is a function of one of them (column c follows
axis ``axes[c]``). So the output row of any point is made of pieces of the
rows of *diagonal* points (p, p, …, p): column c of point x equals column c
of the diagonal point at p = x[axes[c]]. posenc computes the diagonal rows
once, exactly, for the few p a batch needs (:func:`table_rows`: a range of
consecutive integers, or the distinct values), and then only copies bits
(:func:`place_rows`). Every value is therefore the exact path's, whatever
the engine, and the cost is about that of writing the output.

The copy is a numba kernel (the ``fast`` extra) that writes each output row
once: long runs of columns from one axis (contiguous sections, n-D blocks)
as slices, interleaved columns (Qwen3-VL's sections) as a bitwise select of
the axes' rows. Rows whose coordinates are all equal (text tokens) are one
slice. Without numba, NumPy's ``take`` does the same run by run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._concurrency import default_threads, run_spans, spans
from .._optional import compiled
from .angles import prefer_compiled

__all__ = ["SPAN", "KeyScan", "TableRows", "consecutive_start", "place_rows", "scan_keys", "table_rows"]

#: Coordinates spanning up to max(SPAN, points) consecutive integers are
#: tabulated over that whole range (the consecutive-position path); others
#: at their distinct values.
SPAN = 4096
_SELECT_RUN = 8  # mean columns per run below which the bitwise select beats copying run by run
_MASKS = 4  # axes selected per pass
_PARALLEL_MIN = 1 << 20  # output values below which handing half to a pool thread costs more than it saves


def _build() -> Any:
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

    return diagonal, runs, select, extent


def _kernels(values: int) -> Any:
    """The compiled kernels when numba is installed and the work pays for loading it, else None."""
    return compiled("exact.placement", _build) if prefer_compiled(values) else None


@dataclass(frozen=True)
class KeyScan:
    """What :func:`scan_keys` finds in float64 keys ``[m, n]``.

    Attributes:
        lo, hi: the smallest and largest key.
        integral: every key is an integer.
        diagonal: in every row all keys are equal (text tokens).
    """

    lo: float
    hi: float
    integral: bool
    diagonal: bool


def scan_keys(keys: np.ndarray) -> KeyScan:
    """One pass over validated float64 keys ``[m, n]``, ``m >= 1``.

    >>> scan_keys(np.array([[3.0, 3.0], [4.0, 6.0]]))
    KeyScan(lo=3.0, hi=6.0, integral=True, diagonal=False)
    """
    kern = _kernels(keys.size)
    if kern is None:
        return KeyScan(float(keys.min()), float(keys.max()), bool(np.all(keys == np.floor(keys))),
                       bool(np.all(keys == keys[:, :1])))
    flat = np.ascontiguousarray(keys).reshape(-1)
    lo, hi, fractional = kern[3](flat)
    if fractional:
        return KeyScan(float(keys.min()), float(keys.max()), False, bool(kern[0](keys)))
    return KeyScan(float(lo), float(hi), True, bool(kern[0](keys)))


def consecutive_start(positions: np.ndarray) -> int | None:
    """The first of float64 ``positions [m]`` when they are the integers p, p+1, …, p+m-1 (m >= 2), else None.

    >>> consecutive_start(np.array([4.0, 5.0, 6.0])), consecutive_start(np.array([4.0, 6.0]))
    (4, None)
    """
    m = positions.shape[0]
    if m < 2:
        return None
    first = positions[0]
    if first != np.floor(first) or positions[-1] - first != m - 1 or not np.all(np.diff(positions) == 1.0):
        return None
    return int(first)


@dataclass(frozen=True)
class TableRows:
    """Which diagonal points a batch needs, and where each key's row is.

    Attributes:
        start, count: the rows are the consecutive integers ``start …
            start+count-1`` (``values`` None), or
        values: the distinct keys, ascending (then ``start`` is 0).
        keys: ``[m, n]``, each key's table row plus ``start``: the keys
            themselves for a range, their ranks for distinct values.
    """

    start: int
    count: int
    values: np.ndarray | None
    keys: np.ndarray


def table_rows(keys: np.ndarray, scan: KeyScan) -> TableRows:
    """The table rows for float64 keys ``[m, n]``: their integer range when it is short, else their values.

    >>> t = table_rows(np.array([[0.5, 7.0]]), scan_keys(np.array([[0.5, 7.0]])))
    >>> t.values.tolist(), t.keys.tolist()
    ([0.5, 7.0], [[0, 1]])
    """
    m = keys.shape[0]
    if scan.integral and scan.hi - scan.lo < max(SPAN, m):
        return TableRows(int(scan.lo), int(scan.hi - scan.lo) + 1, None, keys)
    values, inverse = np.unique(keys, return_inverse=True)
    return TableRows(0, int(values.shape[0]), values, inverse.reshape(keys.shape).astype(np.int64))


def place_rows(table: np.ndarray, rows: TableRows, axes: np.ndarray, out: np.ndarray) -> None:
    """``out[r, c] = table[row of keys[r, axes[c]], c]``: every output row from the diagonal rows.

    Args:
        table: ``[count, width]``, row j the diagonal point of table row j.
        rows: the batch's :class:`TableRows`.
        axes: int ``[width]``, the axis each column follows.
        out: ``[m, width]`` of the table's dtype; written whole.

    >>> table = np.array([[0.0, 10.0], [1.0, 11.0], [2.0, 12.0]])  # diagonal rows of keys 5, 6, 7
    >>> rows = TableRows(5, 3, None, np.array([[5.0, 7.0], [6.0, 6.0]]))
    >>> out = np.empty((2, 2))
    >>> place_rows(table, rows, np.array([0, 1]), out)
    >>> out.tolist()
    [[0.0, 12.0], [1.0, 11.0]]
    """
    m, width = out.shape
    if m == 0 or width == 0:
        return
    kern = _kernels(out.size)
    if kern is None or not (table.flags.c_contiguous and out.flags.c_contiguous):
        _place_numpy(table, rows, axes, out)
        return
    bits = np.dtype(f"u{out.dtype.itemsize}")
    data, dest = table.reshape(-1).view(bits), out.reshape(-1).view(bits)
    keys = np.ascontiguousarray(rows.keys)
    starts = np.flatnonzero(np.diff(axes, prepend=-1))  # where each run of one axis's columns begins
    passes: list[Any] = []
    if width / starts.shape[0] >= _SELECT_RUN:
        r_len = np.diff(np.append(starts, width))
        args = (axes[starts].astype(np.int64), starts.astype(np.int64), r_len, width)
        passes.append(lambda a, z: kern[1](data, dest, keys, rows.start, *args, a, z))
    else:
        on = np.iinfo(bits).max
        used = np.unique(axes).tolist()
        for g in range(0, len(used), _MASKS):
            group = used[g : g + _MASKS]
            masks = np.zeros((_MASKS, width), dtype=bits)
            for j, ax in enumerate(group):
                masks[j, axes == ax] = on
            cols = np.array(group + [group[0]] * (_MASKS - len(group)), dtype=np.int64)
            args_g = (cols, *masks, len(group), g > 0, width)
            passes.append(lambda a, z, args_g=args_g: kern[2](data, dest, keys, rows.start, *args_g, a, z))
    parts = spans(m, default_threads() if out.size >= _PARALLEL_MIN else 1)
    for work in passes:  # each pass writes every row before the next ORs into it
        run_spans(parts, work)


def _place_numpy(table: np.ndarray, rows: TableRows, axes: np.ndarray, out: np.ndarray) -> None:
    """NumPy's version of :func:`place_rows`: a take per axis and run of its columns at a constant step."""
    for a in np.unique(axes).tolist():
        index = (rows.keys[:, a] - rows.start).astype(np.intp)
        for cols in _strided(np.flatnonzero(axes == a).tolist()):
            out[:, cols] = np.take(table[:, cols], index, axis=0)


def _strided(cols: list[int]) -> list[slice]:
    """Ascending column indices as slices at a constant step (interleaved sections: a few, not one per column).

    >>> _strided([0, 3, 6, 7, 8, 20])
    [slice(0, 7, 3), slice(7, 9, 1), slice(20, 21, 1)]
    """
    out, k = [], 0
    while k < len(cols):
        step = cols[k + 1] - cols[k] if k + 1 < len(cols) else 1
        z = k + 1
        while z < len(cols) and cols[z] - cols[z - 1] == step:
            z += 1
        out.append(slice(cols[k], cols[z - 1] + 1, step))
        k = z
    return out
