"""Exact cos/sin tables of the rotary angles ω_i·p, times the attention factor."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import PosEncError, check_dtype, check_int, check_positions
from ..exact import fill_range, fill_sincos
from .frequencies import RopeFrequencies, check_dims, check_scaling, rope_frequencies

__all__ = ["cos_sin_tables", "default_seq_len", "rope_cos_sin", "rope_table"]


def default_seq_len(scaling: Any, pos: np.ndarray) -> int | None:
    """HF's choice, max(position) + 1, for the variants that depend on it."""
    if scaling is None or scaling.cache_key(None) is None or pos.size == 0:
        return None
    return max(1, int(np.floor(pos.max())) + 1)


def cos_sin_tables(pos: np.ndarray, freqs: RopeFrequencies, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin ``[*pos.shape, r/2]`` times the attention factor, rounded once into dtype.

    Each value depends on its position alone: a position gives the same bits
    whatever else is asked (which the torch caches, grown piece by piece,
    rely on). A run of consecutive integers takes the fast table path
    (:func:`posenc.exact.fill_range`, equal to the per-position
    :func:`posenc.exact.fill_sincos` bit for bit).
    """
    n = freqs.rotary_dim // 2
    flat = pos.reshape(-1)
    af = freqs.attention_factor
    # one rounding from the float64 value: write straight into dtype unless af must multiply first
    work = dtype if af == 1.0 else np.dtype(np.float64)
    both = np.empty((flat.shape[0], 2 * n), dtype=work)  # [cos | sin] per row
    cos, sin = both[:, :n], both[:, n:]
    first = flat[0] if flat.shape[0] > 1 else 0.5
    if first == np.floor(first) and flat[-1] - first == flat.shape[0] - 1 and np.all(np.diff(flat) == 1.0):
        fill_range(int(first), flat.shape[0], freqs.ladder, both, "cos_sin")
    else:
        fill_sincos(flat, freqs.ladder, sin, cos)
    if af != 1.0:
        cos = (cos * af).astype(dtype, copy=False)
        sin = (sin * af).astype(dtype, copy=False)
    shape = (*pos.shape, n)
    return cos.reshape(shape), sin.reshape(shape)


def rope_table(freqs: RopeFrequencies, start: int, length: int, dtype: Any = np.float32) -> np.ndarray:
    """Rows of cos and sin for positions ``start … start+length-1``: ``[length, 2, r/2]``.

    Row ``j`` holds ``(cos, sin)`` of ω·(start + j), times the attention
    factor: the values of :func:`rope_cos_sin`, bit for bit, whatever
    ``start`` is (the builder behind the torch caches, which grow in pieces),
    built by the fast consecutive path.

    >>> rope_table(rope_frequencies(4, base=100.0), 0, 2, np.float64).round(4).tolist()
    [[[1.0, 1.0], [0.0, 0.0]], [[0.5403, 0.995], [0.8415, 0.0998]]]
    """
    if not isinstance(freqs, RopeFrequencies):
        raise PosEncError(f"freqs must be a RopeFrequencies (rope_frequencies(...)), got {type(freqs).__name__}")
    first = check_int(start, "start")
    n = check_int(length, "length", minimum=0)
    check_positions([first, first + max(n - 1, 0)])
    dt = check_dtype(dtype)
    if freqs.attention_factor == 1.0:
        out = np.empty((n, 2, freqs.rotary_dim // 2), dtype=dt)
        fill_range(first, n, freqs.ladder, out.reshape(n, freqs.rotary_dim), "cos_sin")  # straight in, one rounding
        return out
    cos, sin = cos_sin_tables(np.arange(first, first + n, dtype=np.float64), freqs, dt)
    return np.stack([cos, sin], axis=1)


def rope_cos_sin(
    positions: Any,
    head_dim: int,
    *,
    base: float = 10000.0,
    scaling: Any = None,
    rotary_dim: int | None = None,
    seq_len: int | None = None,
    dtype: Any = np.float32,
) -> tuple[np.ndarray, np.ndarray]:
    """Exact cos(ω_i p) and sin(ω_i p) tables, times the attention factor.

    Each value is the true one (to ~2**-100) times the scaling's attention
    factor, rounded once to ``dtype``: within 1 ulp for every |p| < 2**31
    (when the factor is 1, the correctly rounded cos/sin up to that ulp).
    HF multiplies its cos and sin by the same factor.

    Args:
        positions: integers or floats, any shape ``[...]`` (|p| < 2**53).
        head_dim, base, scaling, rotary_dim: as :func:`rope_frequencies`.
        seq_len: for DynamicNTK/LongRoPE; default max(positions) + 1, as HF.
        dtype: float16, float32 or float64.

    Returns:
        (cos, sin), each ``[..., rotary_dim/2]`` in ``dtype``.

    >>> c, s = rope_cos_sin([0, 1000], 4, base=10000.0, dtype=np.float64)
    >>> c.round(5).tolist()
    [[1.0, 1.0], [0.56238, -0.83907]]
    >>> s.round(5).tolist()
    [[0.0, 0.0], [0.82688, -0.54402]]
    """
    check_dims(head_dim, rotary_dim)
    dt = check_dtype(dtype)
    pos = check_positions(positions)
    check_scaling(scaling)
    if seq_len is None:
        seq_len = default_seq_len(scaling, pos)
    freqs = rope_frequencies(head_dim, base=base, scaling=scaling, rotary_dim=rotary_dim, seq_len=seq_len)
    return cos_sin_tables(pos, freqs, dt)
