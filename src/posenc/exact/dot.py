"""Dot products as exact-enough positions: ``B·x`` as an unevaluated double-double ``hi + lo``.

A Fourier-feature angle is 2π·(B·x): the dot product is the "position" the
exact path then multiplies by 2π. Rounded to one double, ``B·x`` would carry
an error of ~2**-53·Σ|B_ij x_j| into the angle; as a double-double (each
product exact by Dekker's two-product, the sum by Knuth's two-sum) it carries
~2**-100 of it, and :func:`posenc.exact.fill_sincos` takes the pair as
``positions`` and ``positions_lo``.

Only B·x mod 1 matters to a Fourier feature (its angle is in turns):
:func:`dot2_turns` takes each exact product's two words mod 1 before it
sums them, so the phase keeps ~2**-100 absolute however large B·x is.
"""

from __future__ import annotations

from typing import Any

from .core import split, two_prod, two_sum

__all__ = ["dot2", "dot2_turns"]


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


def dot2_turns(b: Any, x: Any, rint: Any) -> tuple[Any, Any]:
    """``Σ_j b[..., j] · x[..., j]`` mod 1 (last axis) as float64 ``(hi, lo)``, ``|hi| <= d`` and ``|lo| <= ulp(hi)/2``.

    Each product is formed exactly (``p + e``, Dekker) and each of its words
    taken mod 1 exactly (``v − rint(v)``: v and the integer nearest it are
    multiples of ulp(v) within 1/2 of each other, or Sterbenz's lemma below
    1), so whatever the size of B·x the 2d terms are at most 1/2 and their
    two-sum cascade holds the sum mod 1 within 4·d³·2**-106 (the rounding of
    the low word's 2d − 1 additions, each of an error below d·2**-53), plus
    the few 2**-1074 per product of :func:`dot2`. For d = 1 the pair is
    exact. ``rint`` is the caller's round-half-even (``np.rint``, or
    ``torch.round`` for tensors); the rest is IEEE additions and
    multiplications.

    >>> import numpy as np
    >>> hi, lo = dot2_turns(np.array([[2.0**60 + 2**8, 0.5]]), np.array([[0.75 + 2.0**-40, 0.5]]), np.rint)
    >>> float(hi[0]) == 0.25 + 2.0**-32, float(lo[0])  # (2**60 + 2**8)·(3/4 + 2**-40) = an integer + 2**-32
    (True, 0.0)
    """
    n = b.shape[-1]
    hi = lo = None
    for j in range(n):
        bj, xj = b[..., j], x[..., j]
        p, e = two_prod(bj, *split(bj), xj, *split(xj))
        for v in (p - rint(p), e - rint(e)):
            if hi is None:
                hi, lo = v, 0.0 * v
                continue
            hi, err = two_sum(hi, v)
            lo = lo + err
    if hi is None:
        raise ValueError("dot2_turns needs at least one term")
    return two_sum(hi, lo)
