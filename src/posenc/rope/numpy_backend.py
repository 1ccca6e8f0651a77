"""The NumPy backend: posenc's own arrays, the exact tables of :mod:`posenc.rope.tables`, float64 where x is.

What :func:`posenc.rope_cos_sin` and :func:`posenc.apply_rope` run on
(:data:`NUMPY`); the torch backend builds its rows with these tables too.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import PosEncError, as_array, check_dtype, check_positions
from ..sinusoidal.numpy_backend import NumpyEncoding
from ..support.layout import sin_cos_views
from ..support.memory import check_size, nbytes
from ..support.vocabulary import PAIR_CHANNELS, PairLayout, RopeLayout
from .frequencies import RopeFrequencies, spec_frequencies
from .functions import check_broadcast
from .scaling.proportional import rotate_head_half
from .spec import RopeConfig
from .tables import cos_sin_tables, default_seq_len, tables_work
from .xpos import XPos, xpos_cos_sin

__all__ = ["NUMPY", "NumpyBackend", "rotate"]


def rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, layout: PairLayout, rotary_dim: int) -> np.ndarray:
    """Rotate the first rotary_dim channels of x by (cos, sin); ``[..., n]`` tables broadcast."""
    ct = cos.dtype
    n = rotary_dim // 2
    x1, x2 = sin_cos_views(x, n, PAIR_CHANNELS[layout])
    a = x1.astype(ct, copy=False)
    b = x2.astype(ct, copy=False)
    out = np.empty(np.broadcast_shapes(x.shape, (*cos.shape[:-1], x.shape[-1])), dtype=x.dtype)
    o1, o2 = sin_cos_views(out, n, PAIR_CHANNELS[layout])
    o1[...] = a * cos - b * sin
    o2[...] = b * cos + a * sin
    out[..., rotary_dim:] = x[..., rotary_dim:]
    return out


def _rotary(spec: RopeConfig) -> int:
    return int(spec.rotary_dim or spec.head_dim)


class NumpyBackend(NumpyEncoding):
    """:class:`~posenc.rope.backend.Backend` over NumPy arrays: float16/32/64 x, float64 positions.

    With the sinusoid's primitives (:class:`~posenc.sinusoidal.numpy_backend.NumpyEncoding`): one object
    serves both protocols.
    """

    name = "numpy"

    def sequence_dim(self, value: Any) -> int:
        if not isinstance(value, int) or isinstance(value, bool) or value != -2:
            raise PosEncError(f"sequence_dim must be -2 (x is [..., s, h_d]) for {self.name}, got {value!r}")
        return -2

    def float_input(self, x: Any, name: str, sequence_dim: int) -> np.ndarray:
        arr = as_array(x, name)
        if arr.dtype.kind != "f":
            raise PosEncError(f"{name} must be a float16/32/64 array, got dtype {arr.dtype}")
        check_dtype(arr.dtype)
        if arr.ndim < 2:
            raise PosEncError(f"{name} must be [..., s, h_d] (at least 2 dimensions), got shape {arr.shape}")
        return arr

    def table_dtype(self, dtype: Any) -> np.dtype:
        return check_dtype(dtype)

    def check_tables(self, shape: tuple[int, ...], spec: RopeConfig, dtype: Any) -> None:
        # the cos table named, the sin table and the rest work
        r = _rotary(spec)
        rows = (math.prod(shape), r // 2)
        check_size(rows, dtype, "cos table", work=tables_work(shape, r, dtype) - nbytes(rows, dtype))

    def check_output(self, x: np.ndarray, shape: tuple[int, ...], spec: RopeConfig, xpos: XPos | None) -> None:
        # the tables, x's halves in the rotation dtype and their products, and xPos's q and k factors
        r, ct = _rotary(spec), self.rotation_dtype(x)
        xp_work = 0 if xpos is None else 2 * nbytes((math.prod(x.shape[:-1]), r), np.float64)
        check_size(x.shape, x.dtype, "apply_rope output",
                   work=tables_work(shape, r, ct) + 2 * nbytes(x.shape, ct) + xp_work)

    def positions(self, value: Any) -> np.ndarray:
        return check_positions(value)

    def check_positions_shape(self, pos: np.ndarray, x: np.ndarray, spec: RopeConfig, sequence_dim: int) -> None:
        check_broadcast(pos, spec.multi_axis, x.shape)

    def frequencies(self, spec: RopeConfig, seq_len: int | None, pos: np.ndarray) -> RopeFrequencies:
        # HF's length rule: max(positions) + 1 for the scalings that follow the length
        return spec_frequencies(spec, default_seq_len(spec.scaling, pos) if seq_len is None else seq_len)

    def cos_sin(self, pos: np.ndarray, freqs: RopeFrequencies, dtype: Any) -> tuple[np.ndarray, np.ndarray]:
        return cos_sin_tables(pos, freqs, dtype)

    def rotation_dtype(self, x: np.ndarray) -> np.dtype:
        return np.dtype(np.float64) if x.dtype == np.float64 else np.dtype(np.float32)

    def xpos_cos_sin(self, pos: np.ndarray, freqs: RopeFrequencies, xpos: XPos, role: str, seq_len: int | None,
                     x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return xpos_cos_sin(pos, freqs, xpos, role, seq_len, self.rotation_dtype(x), x.dtype)

    def rotate(self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, layout: RopeLayout, rotary_dim: int,
               sequence_dim: int) -> np.ndarray:
        if layout == "head_half":  # spelled so the Literal narrows
            return rotate_head_half(x, cos, sin, rotary_dim)
        return rotate(x, cos, sin, layout, rotary_dim)


#: the NumPy backend (no state: one is enough)
NUMPY = NumpyBackend()
