"""Exact cos/sin tables of the rotary angles ω_i·p, times the attention factor: :func:`rope_cos_sin` on NumPy.

The tables themselves are :mod:`posenc.rope.tables` (re-exported here);
:func:`rope_cos_sin` is :func:`posenc.rope.functions.rope_cos_sin` bound to
:data:`posenc.rope.numpy_backend.NUMPY`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import PosEncError, check_dtype, check_span
from ..exact import fill_range
from ..support.memory import allocate, check_size
from . import functions
from .frequencies import RopeFrequencies, spec_frequencies
from .numpy_backend import NUMPY
from .spec import RopeConfig, RopeFrequencySettings
from .tables import check_axes, cos_sin_tables, default_seq_len, tables_work

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["check_axes", "cos_sin_tables", "default_seq_len", "rope_cos_sin", "rope_table", "tables_work"]


def rope_table(freqs: RopeFrequencies | RopeConfig, start: int, length: int, dtype: Any = np.float32) -> np.ndarray:
    """Rows of cos and sin for positions ``start … start+length-1``: ``[length, 2, r/2]``.

    Row ``j`` holds ``(cos, sin)`` of ω·(start + j), times the attention
    factor: the values of :func:`rope_cos_sin`, bit for bit, whatever
    ``start`` is (the builder behind the torch caches, which grow in pieces),
    built by the fast consecutive path. ``freqs`` may be a
    :class:`~posenc.RopeConfig` (a spec whose scaling does not follow the length).

    >>> rope_table(RopeConfig(4, base=100.0), 0, 2, np.float64).round(4).tolist()
    [[[1.0, 1.0], [0.0, 0.0]], [[0.5403, 0.995], [0.8415, 0.0998]]]
    """
    if isinstance(freqs, RopeConfig):
        freqs = spec_frequencies(freqs)
    if not isinstance(freqs, RopeFrequencies):
        raise PosEncError(f"freqs must be a RopeFrequencies (rope_frequencies(...)), got {type(freqs).__name__}")
    first, n = check_span(start, length)
    dt = check_dtype(dtype)
    if freqs.attention_factor == 1.0:
        out = allocate((n, 2, freqs.rotary_dim // 2), dt, "rope_table")
        fill_range(first, n, freqs.ladder, out.reshape(n, freqs.rotary_dim), "cos_sin")  # straight in, one rounding
        return out
    check_size((n, 2, freqs.rotary_dim // 2), np.float64, "rope_table")  # before the positions are listed
    cos, sin = cos_sin_tables(np.arange(first, first + n, dtype=np.float64), freqs, dt)
    return np.stack([cos, sin], axis=1)


def rope_cos_sin(
    positions: Any,
    head_dim: int | RopeConfig,
    *,
    seq_len: int | None = None,
    dtype: Any = np.float32,
    **settings: Unpack[RopeFrequencySettings],
) -> tuple[np.ndarray, np.ndarray]:
    """Exact cos(ω_i p) and sin(ω_i p) tables, times the attention factor.

    Each value is the true one (to ~2**-100) times the scaling's attention
    factor, rounded once to ``dtype``: within 1 ulp for every |p| < 2**31
    (when the factor is 1, the correctly rounded cos/sin up to that ulp).
    HF multiplies its cos and sin by the same factor.

    Args:
        positions: integers or floats, any shape ``[...]`` (|p| < 2**53); with
            sections ``[..., n_axes]``, one position per axis (HF's
            ``position_ids`` ``[3, b, s]`` is ``np.moveaxis(position_ids, 0, -1)``).
        head_dim: a :class:`~posenc.RopeConfig`, the spec holding every
            setting (then leave them out), or channels per head, the settings
            as keywords.
        seq_len: for DynamicNTK/LongRoPE; default max(positions) + 1, as HF.
        dtype: float16, float32 or float64.
        **settings: without a spec, its frequency fields
            (:class:`~posenc.rope.spec.RopeFrequencySettings`): ``base``,
            ``scaling``, ``rotary_dim`` as :func:`rope_frequencies`;
            ``sections``, ``section_layout``, ``ladder``: multi-axis RoPE, pair
            i turning with the position of its axis. An unknown name is refused.

    Returns:
        (cos, sin), each ``[..., rotary_dim/2]`` in ``dtype`` (the positions'
        shape without the axis dimension, with sections).

    >>> c, s = rope_cos_sin([0, 1000], RopeConfig(4, base=10000.0), dtype=np.float64)
    >>> c.round(5).tolist()
    [[1.0, 1.0], [0.56238, -0.83907]]
    >>> s.round(5).tolist()
    [[0.0, 0.0], [0.82688, -0.54402]]
    >>> c, s = rope_cos_sin([[3, 0, 5]], 8, sections=(2, 1, 1), dtype=np.float64)  # (t, h, w) = (3, 0, 5)
    >>> c.round(5).tolist()  # pairs 0, 1 turn with t = 3; pair 2 with h = 0; pair 3 with w = 5
    [[-0.98999, 0.95534, 1.0, 0.99999]]
    """
    return functions.rope_cos_sin(NUMPY, positions, head_dim, seq_len=seq_len, dtype=dtype, **settings)
