"""Whole tables of consecutive positions, exact and at the speed of writing memory.

The seed's Ex 5 identity, PE(a + b) = T_b · PE(a), gives every row of a table
from a few exactly computed rows with two multiplies and an add per value.
Write a position as ``n = start + a + b + m`` with ``a`` a multiple of
``B1·B2``, ``b`` a multiple of ``B2`` and ``0 <= m < B2``. Only the
``N/(B1·B2) + B1 + B2`` rows for ``start + a``, ``b`` and ``m`` come from the
exact path (:mod:`posenc.exact.angles`); in complex form

    (sin x + i cos x) · (cos y − i sin y) = sin(x + y) + i cos(x + y),

so one complex multiply per pair of values, in float64, builds every other
row, which is then rounded once into the caller's dtype.

Why the result is the exact path's, bit for bit: each exact row is within
1 float64 ulp, and each complex multiply by a unit vector adds at most
3·2**-53 absolute error, so every float64 value ``v`` lies within
``EPS = 2**-48`` of the exact path's float64 value. Rounding is monotonic:
when ``v - EPS`` and ``v + EPS`` round to the same float32 (the same bits:
in float16 a value near zero may round to −0 at one end and +0 at the
other), so does the exact value, and that is what is written. The rare values where they do not
(next to a rounding boundary, or tiny ones near zero crossings: about one in
10**7) are recomputed by the exact path. So a table does not depend on where
it starts, or on the engine: row ``p`` always equals ``encode(p)``.

float64 output needs 4 float64 ulp, which the recurrence cannot promise, so
it takes the exact path for every value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ..errors import check_angle
from ..support.concurrency import default_threads, run_spans, spans
from ..support.optional import compiled, ready
from ..support.vocabulary import FILL_LAYOUTS, FillLayout
from . import _jit
from .angles import fill_sincos
from .core import FAST_EPS
from .fill import build_fill
from .ladder import Ladder

__all__ = ["CHANNELS", "ENGINES", "fill_range"]

#: How :func:`fill_range` combines rows: ``"auto"`` uses numba when it is
#: installed (the ``fast`` extra) and the table is large, else NumPy.
ENGINES = ("auto", "numpy", "numba", "exact")

_B2 = 64  # rows sharing one "a + b" row; the offsets m run over 0 … _B2-1
_B1 = 64  # "b" rows per "a" row: a steps by _B1 * _B2 = 4096 positions
_SHORT = 8  # rows below which the exact path is quicker than reading the cached offset rows
_CHUNK_BYTES = 1 << 19  # NumPy path: complex128 rows per multiply, kept in L2
_PARALLEL_MIN = 1 << 17  # values; below this numba does not pay off
_THREADS_MIN = 1 << 19  # values; below this handing rows to a pool thread costs more than it saves


def _exact_rows(positions: np.ndarray, ladder: Ladder, block: int = 4096) -> tuple[np.ndarray, np.ndarray]:
    n = len(ladder)
    s = np.empty((positions.shape[0], n))
    c = np.empty((positions.shape[0], n))
    fill_sincos(positions, ladder, s, c, block=block)
    return s, c


@functools.lru_cache(maxsize=16)
def _start_rows(ladder: Ladder, start: int, count: int) -> tuple[np.ndarray, np.ndarray]:
    """sin/cos at start, start + step, …: cached, since tables are rebuilt from the same start (often 0)."""
    s, c = _exact_rows(start + np.arange(count, dtype=np.float64) * (_B1 * _B2), ladder)
    s.setflags(write=False)
    c.setflags(write=False)
    return s, c


@functools.lru_cache(maxsize=8)
def _offset_rows(ladder: Ladder) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """cos/sin of ω·b (b = 0, _B2, …) and of ω·m (m < _B2): the same for every start."""
    bs, bc = _exact_rows(np.arange(_B1, dtype=np.float64) * _B2, ladder)
    ms, mc = _exact_rows(np.arange(_B2, dtype=np.float64), ladder)
    for a in (bc, bs, mc, ms):
        a.setflags(write=False)
    return bc, bs, mc, ms


#: Where :func:`fill_range` puts sin and cos of pair i in a row of ``out``:
#: ``"interleaved"`` sin at 2i, cos at 2i+1; ``"split"`` sin at i, cos at
#: n+i; ``"cos_sin"`` cos at i, sin at n+i (RoPE's ``[.., 2, n]`` (cos, sin) rows).
CHANNELS = FILL_LAYOUTS  # posenc.support.vocabulary.FillLayout


def _channels(layout: str, n: int) -> tuple[int, int, int]:
    """(first sin channel, first cos channel, stride between pairs)."""
    return {"interleaved": (0, 1, 2), "split": (0, n, 1), "cos_sin": (n, 0, 1)}[layout]


def fill_range(
    start: int,
    length: int,
    ladder: Ladder,
    out: np.ndarray,
    layout: FillLayout = "interleaved",
    *,
    threads: int | None = None,
    engine: str = "auto",
) -> None:
    """Write sin/cos for the consecutive positions ``start … start+length-1`` into ``out``.

    The entry point for whole tables (the torch caches use it too). Same
    guarantee as :func:`posenc.exact.fill_sincos`: within 1 ulp for float32
    and float16 destinations (angle addition, see the module docstring),
    the exact path for float64.

    Args:
        start: first position; the caller has validated that every position
            has ``|p| < 2**53``.
        length: number of rows.
        ladder: the frequencies ``[n]``.
        out: ``[length, >= 2n]`` destination of any float dtype, written whole
            (its first ``2n`` channels; any strides).
        layout: where sin and cos of pair i go, one of :data:`CHANNELS`.
        threads: worker threads (default: every CPU this process may use;
            NumPy and the kernel release the GIL).
        engine: one of :data:`ENGINES`; ``"exact"`` skips angle addition.

    >>> from fractions import Fraction
    >>> from posenc.exact import geometric_ladder
    >>> out = np.empty((3, 2), np.float32)
    >>> fill_range(999, 3, geometric_ladder(1, 10.0, Fraction(1)), out)
    >>> [round(float(v), 5) for v in out[1]]
    [0.82688, 0.56238]
    """
    n = len(ladder)
    if not _check_args(engine, layout, out, length, n):
        return
    if ladder.fastest > 1.0:  # scaled frequencies: see posenc.errors.MAX_ANGLE
        check_angle(max(abs(start), abs(start + length - 1)), ladder.fastest)
    s0, c0, st = _channels(layout, n)
    sin_out = out[:length, s0 : s0 + st * (n - 1) + 1 : st]
    cos_out = out[:length, c0 : c0 + st * (n - 1) + 1 : st]
    if engine == "exact" or out.dtype.itemsize > 4 or length < _SHORT:
        _fill_exact(start, length, ladder, sin_out, cos_out)
        return

    step = _B1 * _B2
    a_s, a_c = _start_rows(ladder, start, -(-length // step))
    bc, bs, mc, ms = _offset_rows(ladder)
    big = length * n >= _PARALLEL_MIN
    # numba takes ~1 s to load: for big tables, or once something else has loaded it
    use_jit = engine == "numba" or (engine == "auto" and (big or ready("exact.fill")))
    kern = _jit.kernel() if use_jit and out.dtype == np.float32 else None
    if engine == "numba" and kern is None:
        raise ValueError("engine='numba' needs numba on float32 output: pip install 'posenc[fast]'")
    workers = (threads if threads is not None else default_threads()) if length * n >= _THREADS_MIN else 1
    work_spans = spans(length, workers, align=_B2)

    if kern is not None:
        compiled("exact.fill", build_fill)  # numba is loaded now: let the exact re-checks use it too
        counts = np.zeros(length, dtype=np.int64)
        run_spans(work_spans, lambda a, z: kern(a_s, a_c, bc, bs, mc, ms, step, _B2, a, z, out, s0, c0, st, counts))
        _redo_rows(start, np.flatnonzero(counts), ladder, sin_out, cos_out)
        return
    run_spans(work_spans, _numpy_rows(start, ladder, out, layout, (a_s, a_c), sin_out, cos_out))


def _check_args(engine: str, layout: str, out: np.ndarray, length: int, n: int) -> bool:
    """Reject a bad engine, layout or destination; False when there is nothing to write."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {ENGINES}, got {engine!r}")
    if layout not in CHANNELS:
        raise ValueError(f"layout must be one of {CHANNELS}, got {layout!r}")
    if length <= 0 or n == 0:
        return False
    if out.ndim != 2 or out.shape[0] < length or out.shape[1] < 2 * n:
        raise ValueError(f"out must be [length, >= 2n] = [{length}, >= {2 * n}], got {list(out.shape)}")
    return True


def _fill_exact(start: int, length: int, ladder: Ladder, sin_out: np.ndarray, cos_out: np.ndarray) -> None:
    """The per-position exact path over the rows, in slices of ~64K values (float64 tables, short ones)."""
    rows = max(1, (1 << 16) // len(ladder))
    for r in range(0, length, rows):
        z = min(length, r + rows)
        pos = np.arange(start + r, start + z, dtype=np.float64)
        fill_sincos(pos, ladder, sin_out[r:z], cos_out[r:z], block=4096)


def _numpy_rows(
    start: int, ladder: Ladder, out: np.ndarray, layout: str, a_rows: tuple[np.ndarray, np.ndarray],
    sin_out: np.ndarray, cos_out: np.ndarray,
) -> Callable[[int, int], None]:
    """The NumPy engine as ``work(first, last)`` over rows (first a multiple of _B2)."""
    n = len(ladder)
    step = _B1 * _B2
    bc, bs, mc, ms = _offset_rows(ladder)
    za = a_rows[0] + 1j * a_rows[1]  # sin + i cos
    wb = bc - 1j * bs  # cos - i sin: multiplying rotates forward by the angle
    wm = mc - 1j * ms
    # b-blocks per multiply: ~3 temporaries of this size per thread, a few % of the output
    chunk_bytes = min(_CHUNK_BYTES, max(16 * n, sin_out.shape[0] * n * out.dtype.itemsize // 64))
    per_chunk = max(1, chunk_bytes // (16 * n * _B2))

    def work(first: int, last: int) -> None:
        r = first
        while r < last:
            ia, rem = r // step, r % step
            kb0 = rem // _B2
            # b-blocks in this multiply: bounded by the chunk size, the a-row and the span
            kb1 = min(_B1, kb0 + per_chunk, kb0 + -(-(last - r) // _B2))
            z = min(last, r + (kb1 - kb0) * _B2)
            t = ((za[ia] * wb[kb0:kb1])[:, None, :] * wm[None, :, :]).reshape(-1, n)[: z - r]
            v = t.view(np.float64)  # [rows, 2n]: (sin, cos) of each pair, interleaved
            lo = (v - FAST_EPS).astype(out.dtype)
            # bit patterns, not values: in float16 both ends of a value within 2**-25 of zero round to a
            # zero, −0 and +0, which compare equal; the exact path gives the true sign (issue 18)
            bits = f"u{out.dtype.itemsize}"
            unsure = np.flatnonzero((lo.view(bits) != (v + FAST_EPS).astype(out.dtype).view(bits)).any(axis=1))
            if layout == "interleaved":
                out[r:z, : 2 * n] = lo
            else:
                sin_out[r:z] = lo[:, 0::2]
                cos_out[r:z] = lo[:, 1::2]
            if unsure.size:
                _redo_rows(start + r, unsure, ladder, sin_out[r:z], cos_out[r:z])
            r = z

    return work


def _redo_rows(
    first: int, rows: np.ndarray, ladder: Ladder, sin_out: np.ndarray, cos_out: np.ndarray
) -> None:
    """Overwrite ``rows`` (indices into the outputs, position ``first + row``) with the exact path."""
    if rows.size:
        fill_sincos(first + rows.astype(np.float64), ladder, s := np.empty((rows.size, len(ladder))),
                    c := np.empty((rows.size, len(ladder))))
        sin_out[rows] = s
        cos_out[rows] = c
