"""Outputs sized against this machine before any allocation.

A table of 10**12 rows would otherwise reach NumPy, which fails with a
MemoryError, or succeed on an overcommitting system and be killed later:
posenc refuses it at once, in a :class:`~posenc.errors.PosEncError` that
names the shape and the bytes it needs.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import PosEncError, shape_text

__all__ = ["allocate", "check_rows", "check_size", "format_bytes", "limit", "nbytes", "shape_of"]


def format_bytes(n: float) -> str:
    """``1.5 GiB``: a byte count for a message.

    >>> format_bytes(512), format_bytes(3 * 2**30)
    ('512 bytes', '3.0 GiB')
    """
    if n >= 2**100:  # beyond float arithmetic's comfort, and any disk: the order of magnitude says it
        return f"about 10**{math.floor(math.log10(int(n)))} bytes"  # log10 of an int: no str(), no float overflow
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if n < 1024 or unit == "PiB":
            return f"{n:.0f} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError  # pragma: no cover


def _memory() -> int:
    """Physical memory of this machine, bytes (a huge number where unknown)."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 2**62


def nbytes(shape: Sequence[int], dtype: Any) -> int:
    """Bytes of an array of ``shape`` in ``dtype`` (a Python int: no overflow at 10**12 rows)."""
    return math.prod(int(n) for n in shape) * np.dtype(dtype).itemsize


def shape_of(x: Any) -> tuple[int, ...] | None:
    """``x``'s shape without copying or scanning it (an array's own; a list's as NumPy reads it); None if ragged.

    What an entry point sizes its output and working arrays by, before it
    looks at a single value: a 10**10-element broadcast view is refused in
    microseconds, not after a float64 copy of it.
    """
    shape = getattr(x, "shape", None)
    if isinstance(shape, tuple) and all(isinstance(n, int) for n in shape):
        return shape
    try:
        return tuple(int(n) for n in np.shape(x))
    except Exception:  # whatever reading it raises (a hostile __array__): the positions check names it
        return None


def limit() -> int:
    """The most memory one call may hold at once, output and working arrays together: this machine's."""
    return _memory()


def check_size(shape: Sequence[int], dtype: Any, what: str, *, work: int = 0, have: int | None = None) -> None:
    """Refuse, at once, an output larger than this machine's memory, with its working arrays.

    Without it a table of 10**12 rows would reach NumPy, which fails with a
    MemoryError, or succeed on an overcommitting system and be killed later.
    A call's temporaries count too (a float64 copy of the positions, the
    products of a rotation): ``work`` is their bytes at the call's peak, as
    each entry point declares them before any work (tests/test_memory.py
    holds every declaration against the peak tracemalloc measures).

    Args:
        shape, dtype: the output's.
        what: the output, for the message.
        work: bytes of working arrays alive with the output at the peak.
        have: the memory to fit in (default :func:`limit`; a torch device's).

    >>> check_size((10**12, 512), np.float32, "table")
    Traceback (most recent call last):
    ...
    posenc.errors.PosEncError: table of shape (1000000000000, 512) in float32 needs 1.8 PiB, more than ...
    """
    out = nbytes(shape, dtype)
    need = out + int(work)
    have = limit() if have is None else have
    if need > have:
        extra = f" with {format_bytes(work)} of working arrays ({format_bytes(need)} in all)" if work else ""
        raise PosEncError(
            f"{what} of shape {shape_text(shape)} in {np.dtype(dtype)} needs {format_bytes(out)}{extra}, "
            f"more than this machine's {format_bytes(have)} of memory"
        )


def check_rows(shape: Sequence[int], widths: tuple[int, int], dtype: Any, what: str, per_row: int) -> None:
    """:func:`check_size` for rows at ``shape`` positions, ``widths`` = (channels computed, channels kept).

    A row computed wider than it is kept (an odd ``d_model`` cut from an even
    table) holds the wider table as work; ``per_row`` bytes of work go with each row.
    """
    n, (computed, kept) = math.prod(int(v) for v in shape), widths
    cut = nbytes((n, computed), dtype) if computed > kept else 0
    check_size((*shape, kept), dtype, what, work=n * per_row + cut)


def allocate(shape: Sequence[int], dtype: Any, what: str, *, zeros: bool = False) -> np.ndarray:
    """``np.empty`` (or ``np.zeros``) after :func:`check_size`; a MemoryError becomes a PosEncError."""
    check_size(shape, dtype, what)
    try:
        return (np.zeros if zeros else np.empty)(tuple(shape), dtype=dtype)
    except MemoryError as exc:
        need = math.prod(int(n) for n in shape) * np.dtype(dtype).itemsize
        raise PosEncError(
            f"{what} of shape {shape_text(shape)} in {np.dtype(dtype)} needs {format_bytes(need)}, "
            "more memory than is free now"
        ) from exc
