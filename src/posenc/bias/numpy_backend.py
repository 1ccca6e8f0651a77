"""The bias families' NumPy primitives: ALiBi's products m·t, T5's float32 bucket steps, the lookup in a table.

:data:`NUMPY_BIAS` is what :func:`posenc.alibi_bias`, :func:`posenc.t5_bucket`
and :func:`posenc.t5_bias` run on. ALiBi: each value is the float64 product
of the correctly rounded slope and the exact distance term, rounded once to
the dtype. T5: each bucket by T5's own float32 steps
(:meth:`~posenc.bias.spec.T5Buckets.distance_bucket`), in chunks.

>>> from posenc.bias.spec import AlibiSpec
>>> NUMPY_BIAS.alibi_rows(AlibiSpec(2, 2, 1), None, np.dtype(np.float32)).tolist()
[[[0.0, -inf], [-0.00390625, 0.0]]]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import PosEncError, as_array, check_dtype, check_positions, show_value
from ..registry import guarded
from ..support.memory import allocate, check_size, shape_of
from .alibi_variants import variant_reach
from .spec import LIMIT, AlibiSpec, T5Buckets

__all__ = ["NUMPY_BIAS", "NumpyBias", "product"]


class NumpyBias:
    """The :class:`~posenc.bias.backend.BiasBackend` primitives over NumPy arrays (float16/32/64, int64 buckets)."""

    name = "numpy"

    def alibi_dtype(self, dtype: Any) -> np.dtype:
        return check_dtype(dtype)

    def check_alibi(self, spec: AlibiSpec, positions: Any, dtype: Any) -> None:
        # the distance terms t (float64 [q, k]), their product and the mask are work
        shape = None if positions is None else shape_of(positions)
        batch = shape[:-1] if shape is not None and len(shape) == 2 else ()
        q, k = spec.q_len, spec.k_len
        check_size((*batch, spec.n_heads, q, k), dtype, "ALiBi bias", work=3 * math.prod(batch) * q * k * 8)

    def alibi_positions(self, positions: Any, spec: AlibiSpec) -> np.ndarray:
        return _key_positions(positions, spec.k_len)

    def alibi_rows(self, spec: AlibiSpec, positions: np.ndarray | None, dtype: Any) -> np.ndarray:
        q, k, off, conv, slopes, causal = spec.q_len, spec.k_len, spec.offset, spec.convention, spec.slopes, spec.causal
        if positions is None:
            check_positions([off, off + q - 1])
            kp = np.arange(k, dtype=np.float64)
            qp = np.arange(off, off + q, dtype=np.float64)
        else:
            kp = positions
            qp = kp[..., off:off + q]
        batch = kp.shape[:-1]
        lo, hi = min(kp.min(), qp.min()), max(kp.max(), qp.max())
        top = float(slopes.max()) * variant_reach(conv, float(lo), float(hi))
        if top > float(np.finfo(dtype).max):
            raise PosEncError(
                f"the bias reaches {top:.4g} over positions {lo:g} … {hi:g}, beyond {dtype.name}'s largest "
                f"{float(np.finfo(dtype).max):.4g}; ask for float32"
            )
        t = _coefficient(conv, qp, kp, bool(causal), (*batch, q, k))
        out = allocate((*batch, slopes.shape[0], q, k), dtype, "ALiBi bias")
        for h, m in enumerate(slopes):
            out[..., h, :, :] = product(m, t)
        if causal:
            future = np.arange(k)[None, :] > np.arange(off, off + q)[:, None]
            out[..., future] = -np.inf
        return out

    def check_buckets(self, relative_position: Any) -> None:
        shape = shape_of(relative_position)
        if shape is not None:  # before any offset is read: the output, an int64 copy, one chunk's temporaries
            check_size(shape, np.int64, "t5_bucket output", work=math.prod(shape) * 8 + _CHUNK * 8 * 12)

    def bucket_offsets(self, value: Any, name: str, what: str) -> np.ndarray:
        return _offsets(value, name, what)

    def buckets(self, spec: T5Buckets, offsets: np.ndarray) -> np.ndarray:
        flat = offsets.reshape(-1)
        out = allocate((flat.shape[0],), np.int64, "t5_bucket output")
        for a in range(0, flat.shape[0], _CHUNK):  # in chunks: the float32 steps' temporaries stay a few MB
            out[a:a + _CHUNK] = _buckets_of(spec, flat[a:a + _CHUNK])
        return out.reshape(offsets.shape)

    def t5_weights(self, weights: Any) -> np.ndarray:
        w = as_array(weights, "weights")
        if w.dtype.kind != "f" or w.ndim != 2 or 0 in w.shape:
            raise PosEncError(f"weights must be a float matrix [num_buckets, n_heads], got {show_value(weights)}")
        return w

    def check_t5(self, weights: np.ndarray, q_len: int, k_len: int) -> None:
        # the output, and the offsets and buckets (int64 [q, k] each)
        check_size((weights.shape[1], q_len, k_len), weights.dtype, "T5 bias", work=2 * q_len * k_len * 8)

    def t5_positions(self, value: Any, first: int, length: int, name: str, weights: np.ndarray) -> np.ndarray:
        return np.arange(first, first + length) if value is None else _offsets(value, name, "positions")

    def t5_lookup(self, weights: np.ndarray, spec: T5Buckets, q_positions: np.ndarray, k_positions: np.ndarray,
                  offset: int) -> np.ndarray:
        qp, kp = q_positions, k_positions
        reach = max(abs(int(kp.max()) - int(qp.min())), abs(int(kp.min()) - int(qp.max())))
        if reach >= LIMIT:
            raise PosEncError(f"the offsets j − i of these positions (offset = {offset}) reach {reach}, "
                              "past 2**53 (T5's buckets take |j − i| < 2**53)")
        return weights.T[:, self.buckets(spec, kp[None, :] - qp[:, None])]


#: the NumPy primitives (no state: one is enough)
NUMPY_BIAS = NumpyBias()


def product(m: Any, t: np.ndarray) -> np.ndarray:
    """m·t in float64: the correctly rounded slope times the exact distance (the caller rounds once more)."""
    return m * t


def _key_positions(positions: Any, k: int) -> np.ndarray:
    pos = check_positions(positions)
    if pos.ndim not in (1, 2) or pos.shape[-1] != k:
        raise PosEncError(f"positions must be [k_len] or [b, k_len] with k_len = {k}, got shape {pos.shape}")
    return pos


def _coefficient(conv: Any, qp: np.ndarray, kp: np.ndarray, causal: bool, shape: tuple[int, ...]) -> np.ndarray:
    """The variant's distance terms t, checked: real, finite, broadcastable to ``[..., q, k]`` (a user's too)."""
    who = f"the ALiBi variant {show_value(conv)}: coefficient(...)"
    t = guarded(who, conv.coefficient, qp[..., :, None], kp[..., None, :], kp[..., -1:, None], causal)
    arr = t if isinstance(t, np.ndarray) else None
    if arr is None or arr.dtype.kind not in "iuf" or not _broadcasts(arr.shape, shape):
        got = show_value(t) if arr is None else f"{arr.dtype} of shape {arr.shape}"
        raise PosEncError(f"{who} returned {got}; expected a real array broadcastable to {shape} (t in bias = m·t)")
    if not np.isfinite(arr).all():
        raise PosEncError(f"{who} returned a non-finite distance term; t must be finite (bias = m·t)")
    return arr


def _broadcasts(shape: tuple[int, ...], to: tuple[int, ...]) -> bool:
    try:
        return np.broadcast_shapes(shape, to) == to
    except ValueError:
        return False


def _offsets(relative_position: Any, name: str = "relative_position", what: str = "key − query") -> np.ndarray:
    arr = as_array(relative_position, name)
    if arr.dtype.kind == "O":
        try:
            arr = np.asarray(relative_position, dtype=np.int64)
        except (OverflowError, ValueError, TypeError) as exc:
            raise PosEncError(f"{name} must be integers with |r| < 2**53, got {arr!r}"[:200]) from exc
    if arr.dtype.kind not in "iu":
        raise PosEncError(f"{name} must be integers ({what}), got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= LIMIT:
        raise PosEncError(f"{name} must satisfy |r| < 2**53, got {int(arr.max())}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        worst = lo if -lo >= hi else hi
        if abs(worst) >= LIMIT:
            raise PosEncError(f"{name} must satisfy |r| < 2**53, got {worst}")
    return arr


#: Offsets per chunk of :func:`t5_bucket` (a dozen temporaries of this many elements).
_CHUNK = 1 << 17


def _buckets_of(cfg: T5Buckets, rel: np.ndarray) -> np.ndarray:
    if cfg.bidirectional:
        return np.where(rel > 0, cfg.per_direction, 0) + cfg.distance_bucket(np.abs(rel))
    return cfg.distance_bucket(-np.minimum(rel, 0))
