"""Dot products as exact-enough positions: ``B·x`` as an unevaluated double-double ``hi + lo``.

A Fourier-feature angle is 2π·(B·x): the dot product is the "position" the
exact path then multiplies by 2π. Rounded to one double, ``B·x`` would carry
an error of ~2**-53·Σ|B_ij x_j| into the angle; as a double-double (each
product exact by Dekker's two-product, the sum by Knuth's two-sum) it carries
~2**-100 of it, and :func:`posenc.exact.fill_sincos` takes the pair as
``positions`` and ``positions_lo``.
"""

from __future__ import annotations

from typing import Any

from .core import split, two_prod, two_sum

__all__ = ["dot2"]


def dot2(b: Any, x: Any) -> tuple[Any, Any]:
    """``Σ_j b[..., j] · x[..., j]`` (last axis) as float64 ``(hi, lo)``, for arrays or tensors that broadcast.

    The pair is the sum to 106 bits relative to ``Σ|b·x|``, plus an absolute
    error of at most a few 2**-1074 per term once a product falls below
    2**-969, where its rounding error is no longer representable.

    Written with IEEE additions and multiplications only, so the torch twin
    (:mod:`posenc.torch._exact`) runs this very function on tensors.

    >>> import numpy as np
    >>> hi, lo = dot2(np.array([[0.1, 0.2]]), np.array([[3.0, 7.0]]))
    >>> float(hi[0]), abs(float(lo[0])) < 1e-16
    (1.7000000000000002, True)
    """
    n = b.shape[-1]
    hi = lo = None
    for j in range(n):
        bj, xj = b[..., j], x[..., j]
        p, e = two_prod(bj, *split(bj), xj, *split(xj))
        if hi is None:
            hi, lo = p, e
            continue
        hi, err = two_sum(hi, p)
        lo = lo + (err + e)
    if hi is None:
        raise ValueError("dot2 needs at least one term")
    return two_sum(hi, lo)
