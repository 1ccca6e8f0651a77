"""Where a table's rows come from: the row builder protocol, and its answer checked.

A :class:`RowBuilder` computes exact rows in NumPy, one value per position,
whichever way it is asked (a run, or any positions), so a cache may serve
one position from a held window or from a direct computation and give the
same bits. Every backend checks the builder and its answers here.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

import numpy as np

from ..errors import MAX_D_MODEL, PosEncError, check_int, show_value
from ..support.arguments import check_items
from .window import check_positions_held

__all__ = ["ROW_DTYPES", "RowBuilder", "build_rows", "cache_arguments", "check_builder", "checked_rows"]

#: The dtypes a builder computes rows in.
ROW_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


class RowBuilder(Protocol):
    """Where a cache's rows come from: exact, one value per position, picklable.

    ``rows(start, length, dtype)`` returns positions ``start … start+length-1``
    and ``at(positions, dtype)`` any int64 positions ``[m]``; both as arrays
    ``[count, *row_shape]`` in ``dtype`` (float32 or float64), and the same
    position gives the same bits through either.
    """

    def rows(self, start: int, length: int, dtype: np.dtype) -> np.ndarray: ...

    def at(self, positions: np.ndarray, dtype: np.dtype) -> np.ndarray: ...


def check_builder(build: Any) -> RowBuilder:
    """``build`` if it has ``rows`` and ``at``; a PosEncError naming it otherwise."""
    if not (callable(getattr(build, "rows", None)) and callable(getattr(build, "at", None))):
        raise PosEncError(f"build must be a row builder (rows(start, length, dtype), at(positions, dtype)), "
                          f"got {show_value(build)}")
    return build


def checked_rows(rows: Any, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A builder's answer as a C-contiguous ``dtype`` array, refused when its shape is not ``shape``.

    >>> checked_rows(np.zeros((2, 3)), (2, 3), np.dtype(np.float32)).dtype
    dtype('float32')
    """
    out = np.ascontiguousarray(rows, dtype=dtype)
    if out.shape != shape:
        raise PosEncError(f"table builder returned shape {out.shape}, expected {shape} ([count, *row_shape])")
    return out


def build_rows(
    build: RowBuilder, shape: tuple[int, ...], dtype: np.dtype, *, start: int = 0, positions: np.ndarray | None = None,
) -> np.ndarray:
    """``build.rows(start, shape[0])`` (or ``build.at(positions)``), checked: ``shape`` in ``dtype``."""
    rows = build.rows(start, shape[0], dtype) if positions is None else build.at(positions, dtype)
    return checked_rows(rows, shape, dtype)


def cache_arguments(build: Any, row_shape: Sequence[int], stop: Any, start: Any) -> tuple[RowBuilder, tuple[int, ...],
                                                                                         int, int]:
    """A row cache's constructor arguments, checked: ``(build, row_shape, first, count)`` for any backend's cache.

    ``first`` is ``start``; ``count`` the rows ``start … stop-1`` to hold at
    once (0 when ``stop <= start``), every one a position a cache may hold.
    """
    fn = check_builder(build)
    shape = tuple(check_int(n, f"row_shape[{k}]", minimum=0, maximum=MAX_D_MODEL) for k, n in
                  enumerate(check_items(row_shape, "row_shape", "the shape of one row, e.g. (64,)")))
    first = check_int(start, "start")
    count = max(check_int(stop, "stop") - first, 0)
    check_positions_held(first, first + count)
    return fn, shape, first, count
