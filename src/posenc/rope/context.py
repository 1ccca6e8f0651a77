"""Which rotary channels wrap over a context, before and after a scaling (seed, Ex 7, for RoPE).

Pair i of a head turns context/λ_i times over ``context`` positions. A pair
that turns more than once cannot tell positions a wavelength apart by
itself; the slowest pair is the one that must not wrap for absolute order to
survive (the seed's Ex 7 argument). Long-context scalings stretch the slow
wavelengths: this report shows by how much.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MAX_POSITION, PosEncError, check_context, show_value
from ..sinusoidal.frequencies import min_base
from ..sinusoidal.grid_analysis import GridReport, axis_ladder, check_sizes
from ..support.layout import check_pair_layout
from .frequencies import rope_frequencies, spec_frequencies
from .spec import LADDER_SETTINGS, RopeConfig, RopeLadderSettings, RopeSettings, spec_in

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["RopeContextReport", "rope_context_report", "rope_grid_report"]


@dataclass(frozen=True, eq=False)
class RopeContextReport:
    """The rotary ladder against a context length.

    Attributes:
        context: positions.
        head_dim, rotary_dim: h_d and the rotated channels r.
        base: the effective base (after NTK / dynamic NTK).
        scaling: the scaling, or None.
        attention_factor: what the scaling multiplies into cos and sin.
        wavelengths: float64 ``[r/2]``, λ_i = 2π/ω_i after scaling.
        plain_wavelengths: float64 ``[r/2]``, the same base without scaling.
        loops: context/λ_i, turns of each pair over the context.
        wraps: True when even the slowest pair turns more than once.
        wrapped_channels: pairs that turn more than once.
        max_wavelength: the longest λ_i.
        min_base: without scaling, the smallest base whose slowest pair does
            not wrap (:func:`posenc.min_base` over r); None with a scaling.
    """

    context: float
    head_dim: int
    rotary_dim: int
    base: float
    scaling: Any
    attention_factor: float
    wavelengths: np.ndarray = field(repr=False)
    plain_wavelengths: np.ndarray = field(repr=False)
    loops: np.ndarray = field(repr=False)
    wraps: bool
    wrapped_channels: int
    max_wavelength: float
    min_base: float | None


def rope_context_report(
    context: float,
    head_dim: int | RopeConfig,
    *,
    seq_len: int | None = None,
    **settings: Unpack[RopeLadderSettings],
) -> RopeContextReport:
    """Turns of every rotary pair over ``context`` positions, after ``scaling``.

    Args:
        context: context length (> 0).
        head_dim: a :class:`~posenc.RopeConfig`, or channels per head with
            the settings as keywords (``base``, ``scaling``, ``rotary_dim``:
            :class:`~posenc.rope.spec.RopeLadderSettings`), as
            :func:`posenc.rope_frequencies`.
        seq_len: the length that picks DynamicNTK's base / LongRoPE's factors;
            default ``ceil(context)``.

    >>> from posenc import Llama3
    >>> r = rope_context_report(131072, 128, base=500000.0, scaling=Llama3(8.0, 1.0, 4.0, 8192))
    >>> r.wraps, r.wrapped_channels, round(r.max_wavelength)
    (False, 39, 20473564)
    """
    c = check_context(context)
    spec = spec_in(head_dim, settings, LADDER_SETTINGS)
    scaling = spec.scaling
    n = seq_len
    if n is None and scaling is not None and scaling.cache_key(None) is not None:  # its frequencies follow the length
        n = math.ceil(c)
        if n > MAX_POSITION:
            raise PosEncError(
                f"context must be <= 2**53 for {type(scaling).__name__}, whose frequencies follow the length "
                f"(positions stop at 2**53), got {show_value(context)}; pass seq_len to pick its frequencies"
            )
    f = spec_frequencies(spec, n)
    plain = rope_frequencies(spec.head_dim, base=spec.base, rotary_dim=f.rotary_dim) if scaling is not None else f
    loops = c / f.wavelengths
    loops.setflags(write=False)
    mb: float | None = None
    if scaling is None:
        try:
            mb = min_base(c, f.rotary_dim)
        except PosEncError:  # one pair (r = 2): λ = 2π whatever the base
            mb = math.inf
    return RopeContextReport(
        context=c,
        head_dim=f.head_dim,
        rotary_dim=f.rotary_dim,
        base=f.base,
        scaling=scaling,
        attention_factor=f.attention_factor,
        wavelengths=f.wavelengths,
        plain_wavelengths=plain.wavelengths,
        loops=loops,
        wraps=bool(loops.min() > 1.0),
        wrapped_channels=int(np.count_nonzero(loops > 1.0)),
        max_wavelength=float(f.wavelengths.max()),
        min_base=mb,
    )


def rope_grid_report(
    sizes: Any,
    head_dim: int,
    **settings: Unpack[RopeSettings],
) -> GridReport:
    """Multi-axis RoPE on a grid: which pairs (and head channels) turn with each axis, and whether they wrap.

    Each axis's pairs turn size/λ times over its positions 0 … size-1: with
    Qwen2-VL's contiguous sections the last axis (w) gets only the slowest
    frequencies, with Qwen3-VL's interleaved ones every axis spans the ladder.

    Args:
        sizes: the grid's size along each position axis, in the sections' order
            (e.g. (t, h, w)).
        head_dim: channels per head (``seq_len`` is max(sizes)).
        **settings: as :func:`posenc.apply_rope`: ``sections`` (required:
            pairs per axis), ``section_layout``, ``ladder``, ``base``,
            ``scaling``, ``rotary_dim``; ``layout`` ``"half"`` or
            ``"interleaved"``: which head channels form a pair.

    >>> r = rope_grid_report((16, 64, 64), 128, sections=(16, 24, 24), base=1e6)
    >>> [(a.axis, len(a.omega), a.wrapped_pairs) for a in r.axes]  # h, w get no pair that turns over 64
    [(0, 16, 5), (1, 24, 0), (2, 24, 0)]
    >>> r = rope_grid_report((16, 64, 64), 128, sections=(24, 20, 20), section_layout="interleaved", base=1e6)
    >>> [(a.axis, len(a.omega), a.wrapped_pairs) for a in r.axes]
    [(0, 24, 2), (1, 20, 4), (2, 20, 3)]
    """
    ns = check_sizes(sizes)
    spec = spec_in(head_dim, settings)
    lay = check_pair_layout(spec.layout)
    f = spec_frequencies(spec, max(ns))
    sec = f.sections
    if sec is None:
        raise PosEncError("rope_grid_report needs sections (pairs per axis), e.g. sections=(16, 24, 24)")
    if len(ns) != sec.n_axes:
        raise PosEncError(f"sizes {ns} must give one size per axis of sections {sec.shown}")
    half = f.rotary_dim // 2
    axes = []
    for a in range(sec.n_axes):
        pairs = np.flatnonzero(sec.pair_axes() == a)
        chans = [(int(i), int(i) + half) if lay == "half" else (2 * int(i), 2 * int(i) + 1) for i in pairs]
        axes.append(axis_ladder(a, ns[a], chans, f.inv_freq[pairs], f.wavelengths[pairs]))
    what = "M-RoPE" if sec.ladder == "shared" else "axial RoPE"
    desc = f"{what} sections {sec.shown} {sec.layout}, head_dim {f.head_dim}, base {f.base:g}, layout {lay}"
    return GridReport(ns, f.head_dim, desc, tuple(axes))
