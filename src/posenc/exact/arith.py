"""Error-free transformations on float64 arrays (Dekker 1971, Knuth TAOCP vol. 2).

``two_sum`` and ``two_prod`` return a rounded result and its exact error, so
that sums and products can be carried to twice the working precision.
"""

from __future__ import annotations

import numpy as np

__all__ = ["split", "two_prod", "two_sum"]

_SPLITTER = 134217729.0  # 2**27 + 1: Veltkamp's constant for 53-bit doubles


def split(a: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    t = _SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def two_prod(
    a: np.ndarray, ah: np.ndarray, al: np.ndarray, b: np.ndarray, bh: np.ndarray, bl: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Dekker: ``p + e == a * b`` exactly, given the Veltkamp halves of a and b."""
    p = a * b
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def two_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Knuth: ``s + e == a + b`` exactly, for any magnitudes."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e
