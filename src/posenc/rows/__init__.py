"""Rows of an exact per-position table, for any backend: where they come from, which to hold, a NumPy cache.

A backend that serves rows of a per-position table (the sinusoidal
encoding, RoPE's cos/sin, ALiBi's slopes by position) asks a
:class:`~posenc.rows.builder.RowBuilder` for exact rows in NumPy, and asks
:mod:`posenc.rows.window` which rows to compute for a request: read the held
window, grow it (amortised O(1) rows per decoded token), or compute far
positions directly and keep nothing. The policy is pure functions of the
held window and the request, so it holds no state and needs no lock; a
backend keeps the tables. :class:`~posenc.rows.cache.RowCache` is that
backend in NumPy, thread-safe; :class:`posenc.torch.TableCache` is the torch
one (buffers, devices, autograd, torch.compile) on the same policy.
"""

from __future__ import annotations

from .builder import RowBuilder, build_rows, check_builder, checked_rows
from .cache import RowCache
from .window import DEFAULT_ROWS, SPARSE_FACTOR, check_positions_held, distinct, for_lookup, for_reserve, grown

__all__ = [
    "DEFAULT_ROWS",
    "SPARSE_FACTOR",
    "RowBuilder",
    "RowCache",
    "build_rows",
    "check_builder",
    "check_positions_held",
    "checked_rows",
    "distinct",
    "for_lookup",
    "for_reserve",
    "grown",
]
