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

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..support.concurrency import default_threads, run_spans, spans
from ..support.memory import allocate
from ..support.optional import compiled
from . import _place_jit
from .angles import prefer_compiled

__all__ = [
    "RUN_MIN", "SPAN", "KeyScan", "TableRows", "assemble", "consecutive_start", "place_rows", "row_placer",
    "scan_keys", "table_rows",
]

#: Coordinates spanning up to max(SPAN, points) consecutive integers are
#: tabulated over that whole range (the consecutive-position path); others
#: at their distinct values.
SPAN = 4096
_SELECT_RUN = 8  # mean columns per run below which the bitwise select beats copying run by run
_MASKS = 4  # axes selected per pass
_PARALLEL_MIN = 1 << 20  # output values below which handing half to a pool thread costs more than it saves


def _kernels(values: int) -> Any:
    """The compiled kernels when numba is installed and the work pays for loading it, else None."""
    return compiled("exact.placement", _place_jit.build) if prefer_compiled(values) else None


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
    run_spans(spans(m, default_threads() if out.size >= _PARALLEL_MIN else 1), row_placer(table, rows, axes, out))


def row_placer(table: np.ndarray, rows: TableRows, axes: np.ndarray, out: np.ndarray) -> Callable[[int, int], None]:
    """:func:`place_rows` as ``work(first, last)`` over output rows, for the caller's threads."""
    width = out.shape[1]
    kern = _kernels(out.size)
    if kern is None or not (table.flags.c_contiguous and out.flags.c_contiguous):
        return lambda a, z: _place_numpy(table, _rows_of(rows, a, z), axes, out[a:z])
    bits = np.dtype(f"u{out.dtype.itemsize}")
    data, dest = table.reshape(-1).view(bits), out.reshape(-1).view(bits)
    keys = np.ascontiguousarray(rows.keys)
    starts = np.flatnonzero(np.diff(axes, prepend=-1))  # where each run of one axis's columns begins
    if width / starts.shape[0] >= _SELECT_RUN:
        r_len = np.diff(np.append(starts, width))
        args = (axes[starts].astype(np.int64), starts.astype(np.int64), r_len, width)
        return lambda a, z: kern[1](data, dest, keys, rows.start, *args, a, z)
    on = np.iinfo(bits).max
    used = np.unique(axes).tolist()
    passes = []
    for g in range(0, len(used), _MASKS):
        group = used[g : g + _MASKS]
        masks = np.zeros((_MASKS, width), dtype=bits)
        for j, ax in enumerate(group):
            masks[j, axes == ax] = on
        cols = np.array(group + [group[0]] * (_MASKS - len(group)), dtype=np.int64)
        passes.append((cols, *masks, len(group), g > 0, width))

    def work(a: int, z: int) -> None:
        for args_g in passes:  # a later pass ORs into the rows the earlier ones wrote
            kern[2](data, dest, keys, rows.start, *args_g, a, z)

    return work


def _rows_of(rows: TableRows, a: int, z: int) -> TableRows:
    return TableRows(rows.start, rows.count, rows.values, rows.keys[a:z])


#: Runs of at least this many consecutive diagonal points (text between
#: images) are computed straight into the output, beside the placing.
RUN_MIN = 256
_FILL_COST = 1.6  # a row computed by angle addition costs about this many placed (copied) rows


def assemble(keys: np.ndarray, axes: np.ndarray, out: np.ndarray,
             fill: Callable[[TableRows, np.ndarray], None]) -> None:
    """Write ``out[r]``, the row of the point ``keys[r]``, from exact rows of diagonal points.

    Args:
        keys: validated float64 ``[m, n]``, a point per row.
        axes: int ``[width]``, the axis each column follows.
        out: ``[m, width]``, C order; columns ``fill`` leaves alone must be
            zero (they are copied from zeroed tables).
        fill: ``fill(rows, dest)`` writes the exact rows of the diagonal
            points ``rows`` names into ``dest`` ``[rows.count, width]``.

    The points all diagonal (one axis; text only): ``fill`` writes ``out``.
    Otherwise runs of :data:`RUN_MIN` or more consecutive diagonal points
    are filled in place while the other rows are placed from a table of the
    diagonal points they need, the work shared evenly among the threads.

    >>> keys = np.array([[2.0, 2.0], [3.0, 5.0]])
    >>> def fill(rows, dest):  # the diagonal point p has the row (p, 10·p)
    ...     p = np.arange(rows.start, rows.start + rows.count) if rows.values is None else rows.values
    ...     dest[:] = np.stack([p, 10 * p], axis=1)
    >>> out = np.empty((2, 2))
    >>> assemble(keys, np.array([0, 1]), out, fill)
    >>> out.tolist()
    [[2.0, 20.0], [3.0, 50.0]]
    """
    m, width = out.shape
    if m == 0 or width == 0:
        return
    kern = None if keys.shape[1] == 1 else _kernels(out.size)
    runs = [] if kern is None else kern[4](np.ascontiguousarray(keys), RUN_MIN).tolist()
    if runs == [[0, m]] or keys.shape[1] == 1:  # one axis, or text only
        _fill_all(keys, out, fill)
        return
    if not runs:
        scan = scan_keys(keys)
        if scan.diagonal:
            _fill_all(keys, out, fill)
            return
        rows = table_rows(keys, scan)
        table = allocate((rows.count, width), out.dtype, "rows of the distinct positions", zeros=True)
        fill(rows, table)
        place_rows(table, rows, axes, out)
        return
    edges = [0, *(r for run in runs for r in run), m]  # gap, run, gap, …, run, gap
    gaps = [(a, z) for a, z in zip(edges[0::2], edges[1::2], strict=True) if z > a]
    pieces: list[tuple[int, int, float, Callable[[int, int], None]]] = []
    for r0, r1 in runs:
        p0 = int(keys[r0, 0])

        def fill_run(a: int, z: int, r0: int = r0, p0: int = p0) -> None:
            fill(TableRows(p0 + a - r0, z - a, None, keys[a:z]), out[a:z])

        pieces.append((r0, r1, _FILL_COST, fill_run))
    if gaps:
        pieces += _gap_pieces(keys, gaps, axes, out, fill)
    _run_shared(pieces)


def _fill_all(keys: np.ndarray, out: np.ndarray, fill: Callable[[TableRows, np.ndarray], None]) -> None:
    """Every point on the diagonal: their rows are the output (consecutive positions: the table path)."""
    flat = keys[:, 0]
    first = consecutive_start(flat)
    fill(TableRows(first, flat.shape[0], None, keys) if first is not None else TableRows(0, flat.shape[0], flat, keys),
         out)


def _gap_pieces(
    keys: np.ndarray, gaps: list[tuple[int, int]], axes: np.ndarray, out: np.ndarray,
    fill: Callable[[TableRows, np.ndarray], None],
) -> list[tuple[int, int, float, Callable[[int, int], None]]]:
    """One table for the diagonal points the gaps between runs need; a placer per gap."""
    inside = keys[gaps[0][0] : gaps[0][1]] if len(gaps) == 1 else np.concatenate([keys[a:z] for a, z in gaps])
    rows = table_rows(inside, scan_keys(inside))
    table = allocate((rows.count, out.shape[1]), out.dtype, "rows of the distinct positions", zeros=True)
    fill(rows, table)
    pieces: list[tuple[int, int, float, Callable[[int, int], None]]] = []
    at = 0
    for a, z in gaps:
        placer = row_placer(table, _rows_of(rows, at, at + z - a), axes, out[a:z])

        def place(x: int, y: int, a: int = a, placer: Callable[[int, int], None] = placer) -> None:
            placer(x - a, y - a)  # the gap's placer counts rows from the gap's first

        pieces.append((a, z, 1.0, place))
        at += z - a
    return pieces


def _run_shared(pieces: list[tuple[int, int, float, Callable[[int, int], None]]]) -> None:
    """Run ``fn(first, last)`` over every piece's rows, cut into equal shares of cost, one per thread."""
    total = sum((z - a) * w for a, z, w, _ in pieces)
    parts = default_threads() if total * 64 >= _PARALLEL_MIN else 1  # ~64 values a row: only big work splits
    share = total / parts
    groups: list[list[tuple[Callable[[int, int], None], int, int]]] = [[] for _ in range(parts)]
    spent = 0.0
    for a, z, w, fn in pieces:
        r = a
        while r < z:
            g = min(parts - 1, int(spent / share))
            fit = z - r if g == parts - 1 else max(1, math.ceil(((g + 1) * share - spent) / w))
            take = min(z - r, fit)
            groups[g].append((fn, r, r + take))
            spent += take * w
            r += take

    def work(first: int, last: int) -> None:
        for g in range(first, last):
            for fn, a, z in groups[g]:
                fn(a, z)

    run_spans([(g, g + 1) for g in range(parts) if groups[g]], work)


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
