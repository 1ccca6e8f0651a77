"""Positions to sin/cos: extended-precision reduction mod π/2 and a polynomial kernel.

See :mod:`posenc.exact` for the method and its error bound.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import check_angle
from ..support.concurrency import default_threads, run_spans, spans
from ..support.memory import allocate
from ..support.optional import compiled, ready
from .core import NEAR_ANGLE, quadrant, reduce_core, refold, sincos_core, split
from .fill import build_fill
from .ladder import Ladder

__all__ = ["fill_halves", "fill_sincos", "prefer_compiled", "sincos"]

def _reduce(p: np.ndarray, plo: np.ndarray | None, lad: Ladder) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """θ = (p + plo)·ω reduced: θ = k·π/2 + (x + y), |x| <= ~π/4.

    ``p`` and ``plo`` are ``[m, 1]``; results are ``[m, n]``.
    """
    w0h, w0l, w1h, w1l = lad.splits
    ph, pl = split(p)
    qh, ql = split(plo) if plo is not None else (None, None)
    k, x, y = reduce_core(p, ph, pl, plo, qh, ql, plo is not None, lad.w0, lad.w1, lad.w2, w0h, w0l, w1h, w1l)
    far = np.abs(x) > 0.8
    if far.any():
        k2, x[far], y[far] = refold(x[far], y[far])
        k = np.broadcast_to(k, x.shape).copy()
        k[far] += k2
    return k, x, y


def _kernel(k: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of k·π/2 + (x + y), |x + y| <= 1, to under 1 float64 ulp."""
    return quadrant(k, *sincos_core(x, y))


_CHUNK = 16384  # elements per block: keeps the ~30 temporaries in L2


def fill_sincos(
    positions: np.ndarray,
    ladder: Ladder,
    sin_out: np.ndarray,
    cos_out: np.ndarray,
    positions_lo: np.ndarray | None = None,
    *,
    block: int = _CHUNK,
    engine: str = "auto",
) -> None:
    """Write sin/cos(p·ω_i) into ``sin_out``/``cos_out``, both ``[m, n]``.

    Args:
        positions: float64 ``[m]``, validated (finite, ``|p| < 2**53``).
        ladder: the frequencies ``[n]``.
        sin_out: ``[m, n]`` array of any float dtype (a strided view is fine);
            each value is rounded once, from the float64 result.
        cos_out: like ``sin_out``.
        positions_lo: optional float64 ``[m]``; the position is then the
            unevaluated sum ``positions + positions_lo`` (used for exact
            differences ``p - q``).
        block: elements (positions × frequencies) computed at a time by the
            NumPy engine; its peak extra memory is about 220 bytes per element.
        engine: ``"auto"`` (numba when installed — the ``fast`` extra —, the
            destinations are float32/float64 and the input is large or numba
            is already loaded; else NumPy), ``"numpy"`` or
            ``"numba"``. Both engines give the same bits: the same IEEE
            operations in the same order, or (numba on a CPU with FMA)
            others proven to give the same bits (:func:`~posenc.exact.fill.build_fill`).
    """
    m = positions.shape[0]
    n = len(ladder)
    if engine not in ("auto", "numpy", "numba"):
        raise ValueError(f"engine must be 'auto', 'numpy' or 'numba', got {engine!r}")
    if m == 0 or n == 0:
        return
    if ladder.fastest > 1.0:  # ω <= 1 and |p| < 2**53 keep |p·ω| < 2**53; faster (scaled) frequencies may not
        check_angle(float(np.max(np.abs(positions))), ladder.fastest)
    # numba costs ~1 s to load: worth it for big inputs, or once something else has loaded it
    wanted = engine == "numba" or (engine == "auto" and (m * n >= _JIT_MIN or ready("exact.fill")))
    if wanted and sin_out.dtype in _JIT_DTYPES and cos_out.dtype in _JIT_DTYPES:
        kern = compiled("exact.fill", build_fill)
        if kern is not None:
            near = _reach(positions, positions_lo) * ladder.fastest < NEAR_ANGLE * (1 - 2.0**-20)
            if near:
                kern = compiled("exact.fill_near", _build_near)  # no far branch: every angle below 2**40
            pair = _halves(sin_out, cos_out, n) if m * n >= _PAIRED_MIN else None
            if pair is not None:  # sines and cosines side by side in one array: its rows stored contiguously
                kern = compiled("exact.fill_near_paired" if near else "exact.fill_paired",
                                _build_near_paired if near else _build_paired)
                _fill_jit(kern, positions, ladder, pair, positions_lo)
                return
            _fill_jit(kern, positions, ladder, (sin_out, cos_out), positions_lo)
            return
    if engine == "numba":
        raise ValueError("engine='numba' needs numba and float32/float64 outputs: pip install 'posenc[fast]'")
    rows = max(1, block // n)
    for a in range(0, m, rows):
        b = min(m, a + rows)
        p = positions[a:b, None]
        plo = None if positions_lo is None else positions_lo[a:b, None]
        k, x, y = _reduce(p, plo, ladder)
        s, c = _kernel(k, x, y)
        sin_out[a:b] = s
        cos_out[a:b] = c


_JIT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def _build_near() -> Any:
    return build_fill(near=True)


def _build_paired() -> Any:
    return build_fill(paired=True)


def _build_near_paired() -> Any:
    return build_fill(near=True, paired=True)


#: values from which the paired kernel is looked for: below, finding the halves costs more than it saves
_PAIRED_MIN = 1 << 15


def _halves(sin_out: np.ndarray, cos_out: np.ndarray, n: int) -> tuple[np.ndarray, int, int] | None:
    """``(out, s_col, c_col)`` when the two outputs are column blocks ``[m, n]`` of one C-contiguous array.

    (:func:`~posenc.exact.fill.build_fill`'s ``paired`` kernel stores them as
    contiguous row slices.) None otherwise: the views are written as given.
    """
    out = sin_out.base
    if (out is None or cos_out.base is not out or not isinstance(out, np.ndarray) or out.ndim != 2
            or not out.flags.c_contiguous or out.dtype != sin_out.dtype or out.dtype != cos_out.dtype
            or out.shape[0] != sin_out.shape[0] or sin_out.strides != out.strides or cos_out.strides != out.strides):
        return None
    size = out.itemsize
    cols = []
    for view in (sin_out, cos_out):
        off = view.__array_interface__["data"][0] - out.__array_interface__["data"][0]
        if off % size or not 0 <= off // size <= out.shape[1] - n:
            return None
        cols.append(off // size)
    return out, cols[0], cols[1]


def _reach(positions: np.ndarray, positions_lo: np.ndarray | None) -> float:
    """max |p + lo| over the positions, from above (a NaN gives NaN: the full kernel then).

    From the largest and smallest values, not ``np.abs`` of the array: no
    temporary as large as the positions, which the size checks do not count.
    """
    top = max(abs(float(np.max(positions))), abs(float(np.min(positions))))
    if positions_lo is None:
        return top
    return top + max(abs(float(np.max(positions_lo))), abs(float(np.min(positions_lo))))


_JIT_MIN = 1 << 16  # elements: below this the NumPy engine answers in about a millisecond


def prefer_compiled(values: int) -> bool:
    """Load the compiled engine (the ``fast`` extra) when an output of ``values`` values is on its way.

    For callers that compute small exact tables and then broadcast or gather
    them into a large output (grids, multi-axis RoPE): the small tables then
    take numba, as one large table would. Returns True when numba is loaded
    (then ``engine="numba"`` may be asked for float32 tables); without numba,
    or below the size that pays for loading it, False.
    """
    return values >= _JIT_MIN and compiled("exact.fill", build_fill) is not None


def fill_halves(positions: np.ndarray, ladder: Ladder, out: np.ndarray, s_col: int, c_col: int,
                reach: float) -> bool:
    """:func:`fill_sincos` into two column blocks of one array, for a caller that has checked everything.

    ``out[:, s_col:s_col + n]`` gets the sines and ``out[:, c_col:c_col + n]``
    the cosines, by numba's paired kernel, the same bits as
    :func:`fill_sincos`: for a module called often on small inputs
    (:class:`posenc.torch.Timesteps` on a [64] batch), where looking for the
    halves, the engine and the reach again on every call cost as much as the
    arithmetic.

    Args:
        positions: float64 ``[m]``, C-contiguous, finite, ``|p| < 2**53``.
        ladder: the frequencies ``[n]``, with ``reach · ladder.fastest < 2**53``.
        out: a C-contiguous float32 or float64 ``[m, >= n]`` array.
        s_col: the sines' first column; ``c_col``: the cosines'.
        reach: ``max |p|`` over the positions (picks the kernel without the far branch below 2**40).

    Returns:
        False, writing nothing, where numba is not installed (or ``out`` is another dtype): then call
        :func:`fill_sincos`.

    >>> from fractions import Fraction
    >>> from posenc.exact import geometric_ladder
    >>> out = np.zeros((1, 4))
    >>> done = fill_halves(np.array([1000.0]), geometric_ladder(2, 10000.0, Fraction(2)), out, 0, 2, 1000.0)
    >>> not done or [round(float(v), 5) for v in out[0]] == [0.82688, -0.54402, 0.56238, -0.83907]
    True
    """
    m, n = positions.shape[0], len(ladder)
    if out.dtype not in _JIT_DTYPES:
        return False
    near = reach * ladder.fastest < NEAR_ANGLE * (1 - 2.0**-20)
    kern = compiled("exact.fill_near_paired" if near else "exact.fill_paired",
                    _build_near_paired if near else _build_paired)
    if kern is None:
        return False
    if m == 0 or n == 0:
        return True
    if m * n < 1 << 15:  # one span: the kernel on this thread, no spans or closure
        w0h, w0l, w1h, w1l = ladder.splits
        args = (positions, positions, False, ladder.w0, ladder.w1, ladder.w2, w0h, w0l, w1h, w1l,
                out, s_col, c_col, 0, m)
        try:
            kern(*args)
        except OSError:  # as in _fill_jit: the on-disk cache could not be written, the kernel is in memory
            kern(*args)
        return True
    _fill_jit(kern, positions, ladder, (out, s_col, c_col), None)
    return True


def _fill_jit(
    kern: Any, positions: np.ndarray, ladder: Ladder, outs: tuple[Any, ...], positions_lo: np.ndarray | None,
) -> None:
    """Run ``kern`` over spans of rows; ``outs``: ``(sin_out, cos_out)``, or ``(out, s_col, c_col)`` (paired)."""
    p = np.ascontiguousarray(positions, dtype=np.float64)
    lo = p if positions_lo is None else np.ascontiguousarray(positions_lo, dtype=np.float64)
    w0h, w0l, w1h, w1l = ladder.splits
    m, n = p.shape[0], len(ladder)
    parts = default_threads() if m * n >= 1 << 15 else 1

    def work(a: int, z: int) -> None:
        args = (p, lo, positions_lo is not None, ladder.w0, ladder.w1, ladder.w2, w0h, w0l, w1h, w1l,
                *outs, a, z)
        try:
            kern(*args)
        except OSError:
            # numba compiled the kernel, then failed to write its on-disk cache (a full disk, `ulimit -f`);
            # the compiled kernel is already in memory and the kernel does no I/O: the call runs again
            kern(*args)

    run_spans(spans(m, parts), work)


def sincos(
    positions: np.ndarray, ladder: Ladder, positions_lo: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of ``positions[..., None] * ω``, float64 ``[..., n]``.

    Positions must already be validated (see :func:`posenc.errors.check_positions`).

    >>> from fractions import Fraction
    >>> from posenc.exact import geometric_ladder
    >>> lad = geometric_ladder(2, 10000.0, Fraction(2))
    >>> s, c = sincos(np.array([1000.0]), lad)
    >>> [round(float(v), 5) for v in (s[0, 0], c[0, 0], s[0, 1], c[0, 1])]
    [0.82688, 0.56238, -0.54402, -0.83907]
    """
    flat = np.ascontiguousarray(positions, dtype=np.float64).reshape(-1)
    lo = None
    if positions_lo is not None:
        lo = np.ascontiguousarray(positions_lo, dtype=np.float64).reshape(-1)
    n = len(ladder)
    s = allocate((flat.shape[0], n), np.float64, "sin/cos")
    c = allocate((flat.shape[0], n), np.float64, "sin/cos")
    fill_sincos(flat, ladder, s, c, lo)
    shape = (*np.shape(positions), n)
    return s.reshape(shape), c.reshape(shape)
