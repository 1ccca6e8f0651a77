"""Exact cos/sin tables of the rotary angles ω_i·p, times the attention factor."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import PosEncError, check_dtype, check_positions, check_span
from ..exact import fill_range, fill_sincos
from ..exact.angles import prefer_compiled
from ..exact.placement import TableRows, assemble
from ..support.arguments import default
from ..support.compile import outside_compile
from ..support.memory import allocate, check_size, nbytes, shape_of
from ..support.vocabulary import LadderSharing, SectionLayout
from .frequencies import RopeFrequencies, spec_frequencies
from .sections import Sections
from .spec import RopeConfig, as_spec

__all__ = ["check_axes", "cos_sin_tables", "default_seq_len", "rope_cos_sin", "rope_table", "spec_cos_sin"]


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


@outside_compile("rope_table")
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


@outside_compile("rope_cos_sin")
def rope_cos_sin(
    positions: Any,
    head_dim: int | RopeConfig,
    *,
    base: float = default(10000.0),
    scaling: Any = None,
    rotary_dim: int | None = None,
    seq_len: int | None = None,
    dtype: Any = np.float32,
    sections: Any = None,
    section_layout: SectionLayout = default("contiguous"),
    ladder: LadderSharing = default("shared"),
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
        head_dim, base, scaling, rotary_dim: as :func:`rope_frequencies`
            (``head_dim`` may be a :class:`~posenc.RopeConfig`, the spec,
            holding them all and the sections).
        seq_len: for DynamicNTK/LongRoPE; default max(positions) + 1, as HF.
        dtype: float16, float32 or float64.
        sections, section_layout, ladder: multi-axis RoPE, as
            :func:`rope_frequencies`; pair i turns with the position of its axis.

    Returns:
        (cos, sin), each ``[..., rotary_dim/2]`` in ``dtype`` (the positions'
        shape without the axis dimension, with sections).

    >>> c, s = rope_cos_sin([0, 1000], 4, base=10000.0, dtype=np.float64)
    >>> c.round(5).tolist()
    [[1.0, 1.0], [0.56238, -0.83907]]
    >>> s.round(5).tolist()
    [[0.0, 0.0], [0.82688, -0.54402]]
    >>> c, s = rope_cos_sin([[3, 0, 5]], 8, sections=(2, 1, 1), dtype=np.float64)  # (t, h, w) = (3, 0, 5)
    >>> c.round(5).tolist()  # pairs 0, 1 turn with t = 3; pair 2 with h = 0; pair 3 with w = 5
    [[-0.98999, 0.95534, 1.0, 0.99999]]
    """
    given = {"base": base, "scaling": scaling, "rotary_dim": rotary_dim, "sections": sections,
             "section_layout": section_layout, "ladder": ladder}
    spec = as_spec(head_dim, **given)
    return spec_cos_sin(positions, spec, seq_len, check_dtype(dtype))


def spec_cos_sin(positions: Any, spec: RopeConfig, seq_len: Any, dt: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """:func:`rope_cos_sin` of a checked spec: only the positions (and seq_len) are checked here."""
    r = int(spec.rotary_dim or spec.head_dim)
    shape = shape_of(positions)
    if shape is not None:  # before the positions are read: the cos table named, the sin table and the rest work
        rows = (math.prod(shape), r // 2)
        check_size(rows, dt, "cos table", work=tables_work(shape, r, dt) - nbytes(rows, dt))
    pos = check_positions(positions)
    check_axes(pos, spec.multi_axis)
    if seq_len is None:
        seq_len = default_seq_len(spec.scaling, pos)
    return cos_sin_tables(pos, spec_frequencies(spec, seq_len), dt)
