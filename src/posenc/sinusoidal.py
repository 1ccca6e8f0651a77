"""The sinusoidal encoding: PE(p, 2i) = sin(ω_i p), PE(p, 2i+1) = cos(ω_i p).

Values come from :mod:`posenc.exact`: within 1 ulp of the true value in
float32 (and float16), within 4 ulp in float64, for every ``|p| < 2**31``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .conventions import resolve
from .errors import (
    check_base,
    check_d_model,
    check_dtype,
    check_int,
    check_layout,
    check_length,
    check_positions,
)
from .exact import Ladder, fill_range, fill_sincos
from .frequencies import seed_ladder
from .layout import sin_cos_views

__all__ = ["encode", "render", "table"]


def render(positions: np.ndarray, ladder: Ladder, layout: str, dtype: np.dtype) -> np.ndarray:
    """Lay out exact sin/cos of validated positions into ``positions.shape + (2 * len(ladder),)``."""
    n = len(ladder)
    w = 2 * n
    flat = positions.reshape(-1)
    out = np.empty((flat.shape[0], w), dtype=dtype)
    s, c = sin_cos_views(out, n, layout)
    fill_sincos(flat, ladder, s, c)
    return out.reshape((*positions.shape, w))


def encode(
    positions: Any,
    d_model: int,
    *,
    base: float = 10000.0,
    layout: str = "interleaved",
    dtype: Any = np.float32,
    convention: Any = None,
) -> np.ndarray:
    """The sinusoidal encoding of each position.

    Args:
        positions: a real scalar or array ``[...]``: integers, floats,
            negatives (``|p| < 2**53``; exact for ``|p| < 2**31``).
        d_model: channels, a positive even integer.
        base: b in ω_i = b**(-2i/d_model); 10000 in the paper.
        layout: ``"interleaved"`` (sin at 2i, cos at 2i+1; the seed's) or
            ``"split"`` (all sines, then all cosines).
        dtype: float16, float32 or float64.
        convention: None for the formula above, or a preset of
            :mod:`posenc.conventions` (or its name, e.g. ``"fairseq"``) that
            reproduces another framework's table; it carries its own base and
            layout, so leave those at their defaults.

    Returns:
        ``[..., d_model]`` in ``dtype``.

    Raises:
        PosEncError: for any bad argument, before any work.

    >>> encode(0, 4).tolist()
    [0.0, 1.0, 0.0, 1.0]
    >>> encode(1000, 4, dtype=np.float64).round(5).tolist()
    [0.82688, 0.56238, -0.54402, -0.83907]
    >>> encode([0, 1], 4, layout="split").shape
    (2, 4)
    >>> encode(0, 5, convention="keras").tolist()
    [0.0, 1.0, 0.0, 1.0, 0.0]
    """
    if convention is not None:
        return resolve(convention, base=base, layout=layout).encode(positions, d_model, dtype=dtype)
    p = check_positions(positions)
    d = check_d_model(d_model)
    b = check_base(base)
    lay = check_layout(layout)
    dt = check_dtype(dtype)
    return render(p, seed_ladder(d, b), lay, dt)


def table(
    length: int,
    d_model: int,
    *,
    start: int = 0,
    base: float = 10000.0,
    layout: str = "interleaved",
    dtype: Any = np.float32,
    convention: Any = None,
) -> np.ndarray:
    """Rows of the encoding for positions ``start, start+1, …, start+length-1``.

    Args:
        length: number of rows, >= 0.
        d_model: channels, a positive even integer.
        start: the first position (an integer; may be negative).
        base, layout, dtype, convention: as in :func:`encode`.

    Returns:
        ``[length, d_model]`` in ``dtype``, equal to
        ``encode(np.arange(start, start + length), ...)``.

    >>> table(3, 4, start=1, dtype=np.float64).round(4).tolist()[0]
    [0.8415, 0.5403, 0.01, 1.0]
    """
    if convention is not None:
        conv = resolve(convention, base=base, layout=layout)
        return conv.table(length, d_model, start=start, dtype=dtype)
    n = check_length(length)
    s0 = check_int(start, "start")
    d = check_d_model(d_model)
    b = check_base(base)
    lay = check_layout(layout)
    dt = check_dtype(dtype)
    last = s0 + max(n - 1, 0)
    check_positions(np.array([s0, last], dtype=object), "positions start … start+length-1")
    lad = seed_ladder(d, b)
    out = np.empty((n, d), dtype=dt)
    s, c = sin_cos_views(out, d // 2, lay)
    fill_range(s0, n, lad, s, c)
    return out
