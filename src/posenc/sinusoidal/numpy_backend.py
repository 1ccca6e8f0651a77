"""The sinusoid's NumPy primitives: :mod:`posenc.exact`'s rows written straight into the placed channels.

:class:`NumpyEncoding` is the :class:`~posenc.sinusoidal.backend.EncodingBackend`
half of :data:`posenc.rope.numpy_backend.NUMPY` (one object serves both
protocols). Positions are float64 (``|p| < 2**53``; exact below 2**31); a
convention's origin is added exactly, as an unevaluated sum ``hi + lo``
(:func:`posenc.exact.two_sum`), so θ = p + origin is never rounded.

>>> from posenc.sinusoidal.conventions import Fairseq
>>> NumpyEncoding().table_rows(2, 1, Fairseq().plan(4), np.dtype(np.float64)).round(4).tolist()
[[0.9093, 0.0002, -0.4161, 1.0]]
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import MAX_POSITION, PosEncError, check_dtype, check_positions
from ..exact import fill_range, fill_sincos, two_sum
from ..support.layout import sin_cos_views
from ..support.memory import allocate, check_rows
from .plan import Plan

__all__ = ["NUMPY_ENCODING", "NumpyEncoding"]


class NumpyEncoding:
    """The :class:`~posenc.sinusoidal.backend.EncodingBackend` primitives over NumPy arrays (float16/32/64 rows)."""

    name = "numpy"

    def encoding_dtype(self, dtype: Any) -> np.dtype:
        return check_dtype(dtype)

    def check_encoding(self, shape: tuple[int, ...], computed: int, d_model: int, origin: int, dtype: Any) -> None:
        # the float64 copies of the positions (and hi, lo of θ = p + origin) beside the rows
        check_rows(shape, (computed, d_model), dtype, "encoding", (6 if origin else 2) * 8)

    def encoding_positions(self, value: Any) -> np.ndarray:
        return check_positions(value)

    def encoding_rows(self, positions: np.ndarray, plan: Plan, dtype: Any) -> np.ndarray:
        hi, lo = _shift(positions.reshape(-1), plan.origin)
        out = _render(plan, dtype, hi.shape[0], lambda t, s, c: fill_sincos(hi, plan.ladder, s, c, lo))
        if plan.zero_at is not None:
            zero = hi == plan.zero_at
            if lo is not None:
                zero &= lo == 0
            out[zero] = 0
        return out.reshape((*positions.shape, plan.d_model))

    def table_rows(self, first: int, length: int, plan: Plan, dtype: Any) -> np.ndarray:
        # consecutive angles: the angle-addition path, the same bits as encoding_rows at every θ
        out = _render(plan, dtype, length, lambda t, s, c: fill_range(first, length, plan.ladder, t, plan.layout))
        if plan.zero_at is not None and first <= plan.zero_at < first + length:
            out[plan.zero_at - first] = 0
        return out


#: the NumPy primitives (no state: one is enough; :data:`posenc.rope.numpy_backend.NUMPY` is one too)
NUMPY_ENCODING = NumpyEncoding()


def _shift(p: np.ndarray, origin: int) -> tuple[np.ndarray, np.ndarray | None]:
    """θ = p + origin as an exact unevaluated sum ``hi + lo`` (lo None when zero)."""
    if origin == 0:
        return p, None
    hi, lo = two_sum(p, np.full_like(p, float(origin)))
    big = np.abs(hi) >= MAX_POSITION
    if big.any():
        raise PosEncError(
            f"positions + origin ({origin}) must satisfy |p| < 2**53, got {hi[big].flat[0]!r}"
        )
    return hi, (lo if lo.any() else None)


def _render(plan: Plan, dtype: np.dtype, rows: int, fill: Any) -> np.ndarray:
    """``[rows, plan.d_model]``: ``fill(table, sin_view, cos_view)`` writes the computed channels, then the cut."""
    n = len(plan.ladder)
    width = plan.computed
    out = allocate((rows, width), dtype, "encoding", zeros=width > 2 * n)
    s, c = sin_cos_views(out, n, plan.layout)
    fill(out, s, c)
    if width > plan.d_model:
        # odd d_model in keras / positional-encodings / Marian: the last cosine is cut
        out = np.ascontiguousarray(out[:, : plan.d_model])
    return out
