"""NumPy's RoPE tables: the exact cos/sin rows ``[..., r/2]`` of positions, times the attention factor.

The array work behind :func:`posenc.rope_cos_sin` and :func:`posenc.apply_rope`
(:mod:`posenc.rope.numpy_backend` reads it), the torch caches and xPos: each value
depends on its position alone.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import PosEncError
from ..exact import fill_range, fill_sincos
from ..exact.angles import prefer_compiled
from ..exact.placement import TableRows, assemble
from ..support.memory import allocate, check_size, nbytes
from .frequencies import RopeFrequencies
from .sections import Sections

__all__ = ["check_axes", "cos_sin_tables", "default_seq_len", "tables_work"]


def check_axes(pos: Any, sections: Sections | None) -> None:
    """Multi-axis positions carry a trailing axis of length ``n_axes``."""
    if sections is None:
        return
    n = sections.n_axes
    if pos.ndim == 0 or pos.shape[-1] != n:
        raise PosEncError(
            f"positions for sections {sections.shown} must be [..., {n}] (one position per axis, last), got shape "
            f"{tuple(pos.shape)}; Hugging Face's position_ids [{n}, b, s] become np.moveaxis(position_ids, 0, -1)"
        )


def tables_work(shape: tuple[int, ...], rotary_dim: int, dtype: np.dtype) -> int:
    """Bytes of the (cos, sin) tables of ``shape`` positions in ``dtype`` and what they are made with.

    The positions in float64 (three copies at most: converted, flattened,
    listed) and the float64 table an attention factor multiplies;
    :func:`cos_sin_tables` checks again, exactly, once the frequencies are known.
    """
    rows = math.prod(shape)
    return nbytes((rows, rotary_dim), dtype) + 3 * rows * 8 + nbytes((rows, rotary_dim), np.float64)


def default_seq_len(scaling: Any, pos: np.ndarray) -> int | None:
    """HF's choice, max(position) + 1, for the variants that depend on it."""
    if scaling is None or scaling.cache_key(None) is None or pos.size == 0:
        return None
    return max(1, int(np.floor(pos.max())) + 1)


def cos_sin_tables(pos: np.ndarray, freqs: RopeFrequencies, dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """cos/sin ``[*pos.shape, r/2]`` times the attention factor, rounded once into dtype.

    With sections (multi-axis RoPE) ``pos`` is ``[..., n_axes]`` and the
    tables ``[..., r/2]``, pair i at the position of its axis.

    Each value depends on its position alone: a position gives the same bits
    whatever else is asked (which the torch caches, grown piece by piece,
    rely on). A run of consecutive integers takes the fast table path
    (:func:`posenc.exact.fill_range`, equal to the per-position
    :func:`posenc.exact.fill_sincos` bit for bit).
    """
    n = freqs.rotary_dim // 2
    sec = freqs.sections
    lead = pos.shape if sec is None else pos.shape[:-1]
    af = freqs.attention_factor
    # one rounding from the float64 value: write straight into dtype unless af must multiply first
    work = dtype if af == 1.0 else np.dtype(np.float64)
    keys = pos.reshape(-1, 1 if sec is None else sec.n_axes)
    m = keys.shape[0]
    # the message names the (rows, r/2) table the caller gets; the sin half and, with an attention factor,
    # the products in float64 and their casts are working arrays
    extra = nbytes((m, n), work) + (nbytes((m, 2 * n), np.float64) + nbytes((m, 2 * n), dtype) if af != 1.0 else 0)
    check_size((m, n), work, "cos table", work=extra)
    both = allocate((m, 2 * n), work, "cos and sin tables")  # [cos | sin] per row
    pair_axes = np.zeros(n, dtype=np.int64) if sec is None else freqs.pair_axes
    if sec is not None:
        prefer_compiled(both.size)  # numba's one-time load pays off against an output this large

    def fill(rows: TableRows, dest: np.ndarray) -> None:
        # the plain RoPE rows of positions: pair i of a multi-axis token is pair i of the text token at p_a(i)
        if rows.values is None:
            fill_range(rows.start, rows.count, freqs.ladder, dest, "cos_sin")
        else:
            fill_sincos(rows.values, freqs.ladder, dest[:, n:], dest[:, :n])

    assemble(keys, np.concatenate([pair_axes, pair_axes]), both, fill)
    cos, sin = both[:, :n], both[:, n:]
    if af != 1.0:
        cos = (cos * af).astype(dtype, copy=False)
        sin = (sin * af).astype(dtype, copy=False)
    shape = (*lead, n)
    return cos.reshape(shape), sin.reshape(shape)
