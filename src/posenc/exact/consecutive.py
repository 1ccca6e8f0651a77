"""Whole tables of consecutive positions, exact and fast.

"""

from __future__ import annotations

import numpy as np

from .angles import fill_sincos
from .ladder import Ladder

__all__ = ["fill_range"]


def fill_range(
    start: int, length: int, ladder: Ladder, sin_out: np.ndarray, cos_out: np.ndarray
) -> None:
    """Write sin/cos for the consecutive positions ``start … start+length-1``.

    The entry point for whole tables (the torch caches use it too): the same
    guarantee as :func:`fill_sincos`, and the place where a faster method for
    consecutive positions lives.

    Args:
        start: first position (an integer, validated by the caller).
        length: number of rows.
        ladder: the frequencies ``[n]``.
        sin_out: ``[length, n]`` destination of any float dtype (views allowed).
        cos_out: like ``sin_out``.
    """
    fill_sincos(np.arange(start, start + length, dtype=np.float64), ladder, sin_out, cos_out)
