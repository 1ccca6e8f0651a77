"""The sinusoidal encoding: PE(p, 2i) = sin(ω_i p), PE(p, 2i+1) = cos(ω_i p).

The formula is the default convention (:class:`~posenc.sinusoidal.conventions.Vaswani`)
with the given base and layout, so every sinusoid, the paper's or another
framework's, is made by one path. Values come from :mod:`posenc.exact`:
within 1 ulp of the true value in float32 (and float16), within 4 ulp in
float64, for every ``|p| < 2**31``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .conventions import AnyConvention, SinusoidSettings, resolve

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["encode", "table"]


def encode(
    positions: Any,
    d_model: int,
    *,
    dtype: Any = np.float32,
    convention: AnyConvention = None,
    **settings: Unpack[SinusoidSettings],
) -> np.ndarray:
    """The sinusoidal encoding of each position.

    Args:
        positions: a real scalar or array ``[...]``: integers, floats,
            negatives (``|p| < 2**53``; exact for ``|p| < 2**31``).
        d_model: channels, a positive even integer.
        dtype: float16, float32 or float64.
        convention: None for the formula above, or a preset of
            :mod:`posenc.conventions` (or its name, e.g. ``"fairseq"``) that
            reproduces another framework's table; it carries its own base and
            layout, so leave those out.
        **settings: the formula's (:class:`~posenc.sinusoidal.conventions.SinusoidSettings`),
            for ``convention=None``: ``base``, b in ω_i = b**(-2i/d_model)
            (10000, the paper's); ``layout``, ``"interleaved"`` (sin at 2i,
            cos at 2i+1; the seed's) or ``"split"`` (all sines, then all
            cosines).

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
    return resolve(convention, "encode", **settings).encode(positions, d_model, dtype=dtype)


def table(
    length: int,
    d_model: int,
    *,
    start: int = 0,
    dtype: Any = np.float32,
    convention: AnyConvention = None,
    **settings: Unpack[SinusoidSettings],
) -> np.ndarray:
    """Rows of the encoding for positions ``start, start+1, …, start+length-1``.

    Args:
        length: number of rows, >= 0.
        d_model: channels, a positive even integer.
        start: the first position (an integer; may be negative).
        dtype, convention, settings: as in :func:`encode`.

    Returns:
        ``[length, d_model]`` in ``dtype``, equal to
        ``encode(np.arange(start, start + length), ...)``.

    >>> table(3, 4, start=1, dtype=np.float64).round(4).tolist()[0]
    [0.8415, 0.5403, 0.01, 1.0]
    """
    return resolve(convention, "table", **settings).table(length, d_model, start=start, dtype=dtype)
