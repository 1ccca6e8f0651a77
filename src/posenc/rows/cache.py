"""A NumPy cache of exact rows: the window policy of :mod:`posenc.rows.window` with its state, locked.

The backend-neutral cache: a NumPy caller (or a backend that keeps its
tables on the host) holds rows here exactly as :class:`posenc.torch.TableCache`
holds them on a device, by the same policy.

- **Exact rows.** Every row comes from the builder, so a position gives the
  same bits whether it was read from the window or computed directly.
- **float32 and float64 windows**, each grown on its own (the float64 one
  the first time a float64 caller asks).
- **Thread-safe.** Deciding, growing, moving and replacing the windows
  happen under one lock per cache; a window is never written once built
  (its arrays are read-only), so a returned view never changes under a
  reader while another thread grows the cache.

>>> class Ramp:  # row p = [p]
...     def rows(self, start, n, dtype): return np.arange(start, start + n, dtype=dtype)[:, None]
...     def at(self, p, dtype): return p.astype(dtype)[:, None]
>>> c = RowCache(Ramp(), (1,), stop=4)
>>> c.at([3, 0]).ravel().tolist(), c.run(10**6, 2).ravel().tolist(), c.held()   # far: computed, not kept
([3.0, 0.0], [1000000.0, 1000001.0], (0, 4))
>>> c.run(4, 1).ravel().tolist(), c.held()   # next to the window: it grows
([4.0], (0, 256))
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PosEncError, check_int, check_span, show_value
from ..support.memory import check_size
from .builder import ROW_DTYPES, RowBuilder, build_rows, cache_arguments, check_builder
from .window import DEFAULT_ROWS, Span, check_positions_held, distinct, for_lookup, for_reserve, grown

__all__ = ["RowCache"]


class RowCache:
    """Rows of an exact per-position table in NumPy, one window per dtype, grown by the window policy.

    Args:
        build: a :class:`~posenc.rows.builder.RowBuilder`.
        row_shape: shape of one row, e.g. ``(d_model,)`` or ``(2, n)``.
        stop: rows for positions ``start … stop-1`` are computed now
            (default :data:`~posenc.rows.window.DEFAULT_ROWS`; ``0``: none until first use).
        start: the first position held.
    """

    def __init__(self, build: RowBuilder, row_shape: Sequence[int], *, stop: int = DEFAULT_ROWS,
                 start: int = 0) -> None:
        self.build, self.row_shape, first, count = cache_arguments(build, row_shape, stop, start)
        self._lock = threading.Lock()
        self._windows: dict[np.dtype, tuple[int, np.ndarray]] = {}
        self._windows[ROW_DTYPES[0]] = (first, self._compute(first, count, ROW_DTYPES[0]))
        self._windows[ROW_DTYPES[1]] = (0, self._compute(0, 0, ROW_DTYPES[1]))

    def held(self, dtype: Any = np.float32) -> Span:
        """``(start, stop)``: the positions whose ``dtype`` rows are held."""
        a, table = self._windows[_row_dtype(dtype)]
        return a, a + table.shape[0]

    def run(self, first: Any, length: Any, dtype: Any = np.float32) -> np.ndarray:
        """Rows ``[length, *row_shape]`` of positions ``first … first+length-1``, read-only."""
        s0, n = check_span(first, length)
        dt = _row_dtype(dtype)
        with self._lock:
            a, table = self._serve(dt, s0, s0 + n, n)
            if table is None:
                return _frozen(self._compute(s0, n, dt))
            return table[s0 - a : s0 - a + n]

    def at(self, positions: Any, dtype: Any = np.float32) -> np.ndarray:
        """Rows ``[*positions.shape, *row_shape]`` of any integer positions, read-only."""
        p = np.asarray(positions)
        if p.dtype.kind not in "iu":
            raise PosEncError(f"positions must be integers, got {show_value(positions)} of dtype {p.dtype}")
        flat = p.reshape(-1).astype(np.int64)
        lo, hi = (int(flat.min()), int(flat.max()) + 1) if flat.size else (0, 0)
        if p.dtype.kind == "u" and flat.size and int(p.max()) >= 2**53:
            lo, hi = 0, int(p.max()) + 1  # beyond int64: refused below, shown exactly
        check_positions_held(lo, hi)
        dt = _row_dtype(dtype)
        with self._lock:
            a, table = self._serve(dt, lo, hi, flat.size)
            if table is not None:
                return _frozen(table[flat - a].reshape(*p.shape, *self.row_shape))
            a, table = self._windows[dt]
        inside = (flat >= a) & (flat < a + table.shape[0])
        ask, inverse = distinct(flat[~inside])
        rows = build_rows(self.build, (ask.shape[0], *self.row_shape), dt, positions=ask)
        out = np.empty((flat.size, *self.row_shape), dtype=dt)
        out[inside] = table[flat[inside] - a]
        out[~inside] = rows if inverse is None else rows[inverse]
        return _frozen(out.reshape(*p.shape, *self.row_shape))

    def reserve(self, stop: Any, start: Any = 0, dtype: Any = np.float32) -> None:
        """Hold the rows for positions ``start … stop-1`` now: grow the window, or move it to exactly them."""
        first, last = check_int(start, "start"), check_int(stop, "stop")
        dt = _row_dtype(dtype)
        if last <= first:
            return
        check_positions_held(first, last)
        with self._lock:
            action = for_reserve(self.held(dt), first, last)
            if action == "grow":
                self._grow(dt, first, last)
            elif action == "move":
                self._windows[dt] = (first, self._compute(first, last - first, dt))

    def reset(self, build: RowBuilder | None = None) -> None:
        """Forget every row (and replace the builder)."""
        with self._lock:
            if build is not None:
                self.build = check_builder(build)
            for dt in ROW_DTYPES:
                self._windows[dt] = (0, self._compute(0, 0, dt))

    def _serve(self, dt: np.dtype, lo: int, hi: int, count: int) -> tuple[int, np.ndarray | None]:
        """Under the lock: the window to read from (grown if the policy says so), or None to compute directly."""
        action = for_lookup(self.held(dt), lo, hi, count)
        if action == "direct":
            return 0, None
        if action == "grow":
            self._grow(dt, lo, hi)
        return self._windows[dt]

    def _grow(self, dt: np.dtype, lo: int, hi: int) -> None:
        a, z = self.held(dt)
        new_lo, new_hi = grown((a, z), lo, hi)
        check_positions_held(new_lo, new_hi)
        check_size((new_hi - new_lo, *self.row_shape), dt, "a position table")
        below = self._compute(new_lo, a - new_lo, dt)
        above = self._compute(z, new_hi - z, dt)
        self._windows[dt] = (new_lo, _frozen(np.concatenate([below, self._windows[dt][1], above])))

    def _compute(self, start: int, length: int, dt: np.dtype) -> np.ndarray:
        shape = (length, *self.row_shape)
        check_size(shape, dt, "a position table")
        rows = np.empty(shape, dtype=dt) if length == 0 else build_rows(self.build, shape, dt, start=start)
        return _frozen(rows)

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state.pop("_lock", None)  # locks do not pickle; each copy gets its own
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._lock = threading.Lock()


def _row_dtype(dtype: Any) -> np.dtype:
    try:
        dt = np.dtype(dtype)
    except (TypeError, ValueError):
        dt = None
    if dt not in ROW_DTYPES:
        raise PosEncError(f"dtype must be float32 or float64, got {show_value(dtype)}")
    return dt


def _frozen(a: np.ndarray) -> np.ndarray:
    view = a.view()  # the builder's own array keeps its flags
    view.flags.writeable = False  # never written once built: a view handed out never changes
    return view
