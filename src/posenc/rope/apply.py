"""Rotating queries and keys by their positions (NumPy)."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import PosEncError, as_array, check_d_model, check_dtype, check_positions, check_seq_len
from ..support.arguments import default
from ..support.compile import outside_compile
from ..support.layout import sin_cos_views
from ..support.memory import check_size, nbytes, shape_of
from ..support.vocabulary import PAIR_CHANNELS, LadderSharing, PairLayout, RopeLayout, SectionLayout
from .cos_sin import check_axes, cos_sin_tables, default_seq_len, tables_work
from .frequencies import spec_frequencies
from .scaling.proportional import rotate_head_half
from .sections import Sections
from .spec import RopeConfig, spec_of
from .xpos import check_xpos, xpos_cos_sin

__all__ = ["apply_rope", "check_broadcast", "check_head_dim_of_x", "rotate", "rotate_spec", "spec_cos_sin"]


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


@outside_compile("apply_rope")
def apply_rope(
    x: Any,
    positions: Any,
    *,
    base: float = default(10000.0),
    scaling: Any = None,
    layout: RopeLayout = default("half"),
    rotary_dim: int | None = None,
    seq_len: int | None = None,
    sections: Any = None,
    section_layout: SectionLayout = default("contiguous"),
    ladder: LadderSharing = default("shared"),
    xpos: Any = None,
    role: str | None = None,
    spec: RopeConfig | None = None,
) -> np.ndarray:
    """Rotate queries or keys by their positions (and decay them, with xPos).

    Shapes: b batch, n_h heads, s sequence, h_d head_dim.

    Args:
        x: float16/32/64 ``[..., s, h_d]``, e.g. ``[b, n_h, s, h_d]``.
        positions: ``[s]``, or any shape that broadcasts to ``x.shape[:-1]``
            (``[b, 1, s]`` for per-row positions of ``[b, n_h, s, h_d]``).
        base, scaling, rotary_dim, seq_len: as :func:`rope_cos_sin`.
        layout: ``"half"`` (HF, GPT-NeoX) or ``"interleaved"`` (Meta, GPT-J);
            or ``"head_half"``: pairs (i, i + h_d/2), i < rotary_dim/2 (Gemma 4's
            proportional RoPE, :mod:`posenc.rope.scaling.proportional`).
        sections, section_layout, ladder: multi-axis RoPE (M-RoPE, axial), as
            :func:`rope_cos_sin`; positions are then ``[..., n_axes]``, their
            leading shape broadcasting to ``x.shape[:-1]`` (``[s, 3]`` for
            Qwen2-VL's (t, h, w); HF's ``[3, b, s]`` moved to ``[b, 1, s, 3]``
            for ``[b, n_h, s, h_d]``).
        xpos: None, or a :class:`posenc.XPos`: pair i is also multiplied by
            ζ_i^(±(p − c)/scale_base), c = seq_len//2 with ``center``
            (``seq_len`` default max(positions) + 1: pass the same one for q
            and k). See :mod:`posenc.rope.xpos`.
        role: with xpos, ``"q"`` (factor ζ^(+…)) or ``"k"`` (ζ^(−…)).
        spec: a :class:`~posenc.RopeConfig` holding base, scaling, layout,
            rotary_dim and the sections (built and checked once, e.g. by
            :func:`posenc.from_hf_config`); leave those arguments out beside
            it. Its head_dim must be ``x.shape[-1]``. The keyword arguments
            build the same spec, so both forms give the same bits.

    Returns:
        Same shape and dtype as x. The math is float64 for float64 input and
        float32 otherwise, on exact tables; channels past ``rotary_dim`` are
        copied bit for bit.

    Raises:
        PosEncError: for any bad argument, before any work.

    >>> q = np.array([[1.0, 0.0, 0.0, 0.0]])        # [s=1, h_d=4]
    >>> apply_rope(q, [2], base=100.0, layout="interleaved").round(4).tolist()
    [[-0.4161, 0.9093, 0.0, 0.0]]
    >>> cfg = RopeConfig(4, base=100.0, layout="interleaved")
    >>> apply_rope(q, [2], spec=cfg).round(4).tolist()
    [[-0.4161, 0.9093, 0.0, 0.0]]
    """
    arr = _check_x(x)
    given = {"base": base, "scaling": scaling, "layout": layout, "rotary_dim": rotary_dim, "sections": sections,
             "section_layout": section_layout, "ladder": ladder}
    cfg = spec_of(spec, arr.shape[-1], **given)
    return rotate_spec(arr, positions, cfg, seq_len, xpos, role)


def rotate_spec(arr: np.ndarray, positions: Any, spec: RopeConfig, seq_len: Any, xpos: Any,
                role: Any) -> np.ndarray:
    """:func:`apply_rope` of a checked x and spec: only the positions, seq_len and xPos are checked here."""
    r = int(spec.rotary_dim or spec.head_dim)
    ct = np.dtype(np.float64) if arr.dtype == np.float64 else np.dtype(np.float32)
    shape = shape_of(positions)
    if shape is not None:  # before the positions are read: the tables, x's halves in ct and their products
        xp_work = 0 if xpos is None else 2 * nbytes((math.prod(arr.shape[:-1]), r), np.float64)  # q, k factors
        check_size(arr.shape, arr.dtype, "apply_rope output",
                   work=tables_work(shape, r, ct) + 2 * nbytes(arr.shape, ct) + xp_work)
    pos = check_positions(positions)
    check_broadcast(pos, spec.multi_axis, arr.shape)
    cos, sin = spec_cos_sin(pos, spec, seq_len, xpos, role, ct, arr.dtype)
    if spec.layout == "head_half":  # spelled so the Literal narrows
        return rotate_head_half(arr, cos, sin, r)
    return rotate(arr, cos, sin, spec.layout, r)


def spec_cos_sin(pos: np.ndarray, spec: RopeConfig, seq_len: Any, xpos: Any, role: Any, ct: np.dtype,
                 x_dtype: np.dtype) -> tuple[np.ndarray, np.ndarray]:
    """The (cos, sin) ``[..., r/2]`` in ``ct`` that rotate x of dtype ``x_dtype`` at checked positions ``pos``.

    xPos's factors (``role``'s) are in them; ``seq_len`` None: the scaling's
    default for these positions. The one place the NumPy and torch
    :func:`apply_rope` build their tables.
    """
    sec = spec.multi_axis
    xp = check_xpos(xpos, role)
    if xp is not None and sec is not None:
        raise PosEncError("xpos with sections (multi-axis RoPE) is not defined: pass one or the other")
    length = None if seq_len is None else check_seq_len(seq_len)
    if seq_len is None:
        seq_len = default_seq_len(spec.scaling, pos)
    freqs = spec_frequencies(spec, seq_len)
    if xp is not None:
        return xpos_cos_sin(pos, freqs, xp, str(role), length, ct, x_dtype)
    return cos_sin_tables(pos, freqs, ct)


def _check_x(x: Any) -> np.ndarray:
    """x as an array ``[..., s, h_d]`` of float16/32/64."""
    arr = as_array(x, "x")
    if arr.dtype.kind != "f":
        raise PosEncError(f"x must be a float16/32/64 array, got dtype {arr.dtype}")
    check_dtype(arr.dtype)
    if arr.ndim < 2:
        raise PosEncError(f"x must be [..., s, h_d] (at least 2 dimensions), got shape {arr.shape}")
    check_head_dim_of_x(arr.shape[-1])
    return arr


def check_head_dim_of_x(h: int) -> int:
    """x's last axis as RoPE's head_dim: a positive even count, named as x's (the NumPy and torch forms)."""
    check_d_model(h, "x.shape[-1] (head_dim)")
    if h % 2:
        raise PosEncError(f"x.shape[-1] (head_dim) must be even (RoPE rotates pairs of channels), got {h}")
    return h


def check_broadcast(pos: Any, sec: Sections | None, x_shape: tuple[int, ...]) -> None:
    """Positions (less their trailing axis with sections) must broadcast to ``x.shape[:-1]`` (any array: the JAX
    form checks its traced positions here too)."""
    check_axes(pos, sec)
    lead = tuple(pos.shape) if sec is None else tuple(pos.shape[:-1])
    x_shape = tuple(x_shape)
    try:
        shape = np.broadcast_shapes(lead, x_shape[:-1])
    except ValueError:
        shape = None
    if shape != x_shape[:-1]:
        axes = "" if sec is None else f" (after the trailing axis of {sec.n_axes})"
        raise PosEncError(
            f"positions of shape {tuple(pos.shape)} must broadcast to x.shape[:-1] = {x_shape[:-1]}{axes} "
            f"(x is [..., s, h_d]; use [s], [b, 1, s] for [b, n_h, s, h_d], [b, s, 1] for [b, s, n_h, h_d])"
        )
