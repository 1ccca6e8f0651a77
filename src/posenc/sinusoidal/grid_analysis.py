"""The seed's analysis, for grids: which channels serve which axis, what each axis's ladder covers, and
how alike two patches' encodings are.

An n-D encoding is per-axis 1-D encodings side by side, so the seed's Ex 7
question — does the slowest channel wrap over the context? — is asked per
axis, against that axis's size: on a 64×64 grid each axis has 64 positions,
and an axis with d/4 frequencies on base 10000 has λ_max far beyond that,
while a smaller base or an axis with few channels may not. The similarity of
one patch's encoding to every other patch's shows the same thing as a picture
(:func:`posenc.plot.plot_grid`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MAX_POSITION, PosEncError, check_int, show_value
from ..exact import Ladder, decimal_context, decimal_pi
from ..support.arguments import check_items, settings_of
from ..support.layout import sin_cos_views
from .conventions_nd import AnyNdConvention, AxialSettings, Block, NdConvention, resolve
from .grid import encode_nd, grid

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["AxisLadder", "GridReport", "axis_ladder", "check_sizes", "grid_report", "grid_similarity", "wavelengths_of"]

_MAX_VALUES = 1 << 27  # grid_similarity: points × channels held in float64 (1 GiB)


@dataclass(frozen=True, eq=False)
class AxisLadder:
    """One axis of a grid encoding against the grid's size along it.

    Attributes:
        axis: the coordinate (``coords[..., axis]``).
        size: positions along it (0 … size-1).
        channels: the output channels that encode it.
        pair_channels: per frequency, its (sin, cos) channels (just the sine
            where a framework cut the cosine off; (x1, x2) for RoPE pairs).
        omega: float64 ``[k]``, its frequencies, fastest first.
        wavelengths: float64 ``[k]``, 2π/ω, correctly rounded.
        loops: turns of each pair over the axis, size/λ.
        wraps: True when even its slowest pair turns more than once: then
            every pair of the axis repeats within the grid (the seed's Ex 7).
        wrapped_pairs: pairs that turn more than once.
    """

    axis: int
    size: int
    channels: tuple[int, ...]
    pair_channels: tuple[tuple[int, ...], ...] = field(repr=False)
    omega: np.ndarray = field(repr=False)
    wavelengths: np.ndarray = field(repr=False)
    loops: np.ndarray = field(repr=False)
    wraps: bool
    wrapped_pairs: int

    @property
    def max_wavelength(self) -> float:
        """The axis's longest wavelength."""
        return float(self.wavelengths.max())


@dataclass(frozen=True, eq=False)
class GridReport:
    """Every axis of a grid encoding against the grid's sizes (the seed's Ex 7, per axis).

    Attributes:
        sizes: the grid's size along each axis.
        d_model: channels (head_dim for RoPE).
        convention: what was analysed, e.g. ``"axial (base 10000)"`` or ``"M-RoPE …"``.
        axes: one :class:`AxisLadder` per axis.
    """

    sizes: tuple[int, ...]
    d_model: int
    convention: str
    axes: tuple[AxisLadder, ...]

    @property
    def wraps(self) -> bool:
        """True when some axis's slowest pair wraps over its size."""
        return any(a.wraps for a in self.axes)


def wavelengths_of(ladder: Ladder, k: int) -> np.ndarray:
    """2π/ω of the ladder's first ``k`` frequencies, from ω to ~160 bits, correctly rounded."""
    with decimal_context():
        two_pi = 2 * decimal_pi()
        return np.array([
            float(two_pi / (Decimal(ladder.w0[i]) + Decimal(ladder.w1[i]) + Decimal(ladder.w2[i])))
            for i in range(k)
        ])


def axis_ladder(
    axis: int, size: int, pairs: Sequence[Sequence[int]], omega: np.ndarray, lam: np.ndarray
) -> AxisLadder:
    """An :class:`AxisLadder` from each frequency's channels, the frequencies and their wavelengths."""
    pair_channels = tuple(tuple(int(c) for c in p) for p in pairs)
    channels = tuple(sorted(c for p in pair_channels for c in p))
    omega, lam = np.array(omega, dtype=np.float64), np.array(lam, dtype=np.float64)
    loops = size / lam
    for a in (omega, lam, loops):
        a.setflags(write=False)
    slowest = float(loops.min()) if loops.size else 0.0
    return AxisLadder(axis, size, channels, pair_channels, omega, lam, loops, slowest > 1.0,
                      int(np.count_nonzero(loops > 1.0)))


def check_sizes(sizes: Any) -> tuple[int, ...]:
    """A grid's sizes: a non-empty sequence of integers >= 1."""
    items = check_items(sizes, "sizes", "the grid's size along each axis, e.g. (64, 64)")
    out = tuple(check_int(s, f"sizes[{k}] (axis {k})", minimum=1, maximum=int(MAX_POSITION))
                for k, s in enumerate(items))
    if not out:
        raise PosEncError("sizes must name at least one axis, e.g. (64, 64)")
    return out


def _name(conv: NdConvention) -> str:
    return f"{conv.name}: {conv!r}"


def _block_pairs(b: Block, where: np.ndarray) -> list[tuple[int, ...]]:
    """Each frequency's (sin, cos) output channels within the block's kept width (``where``: block -> output)."""
    n = len(b.ladder)
    idx = np.arange(2 * n)
    s, c = sin_cos_views(idx, n, b.layout)
    out = []
    for k in range(n):
        kept = tuple(int(where[b.start + int(j)]) for j in (s[k], c[k]) if j < b.width)
        if kept:
            out.append(kept)
    return out


def grid_report(sizes: Sequence[int], d_model: int, *, convention: AnyNdConvention = None,
                **settings: Unpack[AxialSettings]) -> GridReport:
    """Which channels serve which axis, and whether each axis's slowest pair wraps over the grid.

    Args:
        sizes: the grid's size along each axis, e.g. ``(64, 64)``.
        d_model, convention, settings: as :func:`posenc.encode_nd`.

    >>> r = grid_report((64, 64), 256)
    >>> [(a.axis, a.channels[0], a.channels[-1], a.wraps) for a in r.axes]
    [(0, 0, 127, False), (1, 128, 255, False)]
    >>> [round(a.max_wavelength) for a in r.axes], r.wraps
    ([54410, 54410], False)
    >>> grid_report((64, 64), 16, base=10.0).wraps  # 4 pairs per axis on base 10: λ_max 35.3 < 64
    True
    """
    ns = check_sizes(sizes)
    conv = resolve(convention, "grid_report", **settings)
    plan = conv.plan(d_model, len(ns))
    axes = []
    # the blocks' channel c is output channel where[c] (a plan's order permutes them: timm's)
    where = np.arange(plan.d_model) if plan.order is None else np.argsort(np.array(plan.order))
    for b in plan.blocks:
        pairs = _block_pairs(b, where)
        k = len(pairs)  # the frequencies with a channel kept (a cut never skips one)
        axes.append(axis_ladder(b.axis, ns[b.axis], pairs, b.ladder.w0[:k], wavelengths_of(b.ladder, k)))
    return GridReport(ns, plan.d_model, _name(conv), tuple(sorted(axes, key=lambda a: a.axis)))


def grid_similarity(
    sizes: Sequence[int],
    d_model: int,
    patch: Sequence[int],
    *,
    convention: AnyNdConvention = None,
    **settings: Unpack[AxialSettings],
) -> np.ndarray:
    """Cosine similarity of one patch's encoding to every patch's, shaped like the grid.

    ``cos θ = ⟨PE(p), PE(q)⟩ / (|PE(p)|·|PE(q)|)``, from exact float64
    encodings. For the default convention it is the mean over axes of the
    1-D kernels Σ_i cos(ω_i·(p_a - q_a)) / (d/2n): a cross along the
    patch's row and column when each axis's slow pairs reach across the grid.

    Args:
        sizes: the grid's size along each axis.
        d_model, convention, settings: as :func:`posenc.encode_nd`.
        patch: the reference patch's coordinates, one per axis.

    Returns:
        float64 ``[*sizes]``; 1 at ``patch``.

    >>> s = grid_similarity((3, 3), 8, (1, 1))
    >>> float(s[1, 1]), s.shape
    (1.0, (3, 3))
    """
    settings_of(settings, AxialSettings, "grid_similarity")
    ns = check_sizes(sizes)
    p = check_items(patch, "patch", "coordinates, one per axis")
    if len(p) != len(ns):
        raise PosEncError(f"patch must have {len(ns)} coordinates (one per axis of {ns}), got {p!r}")
    for k, (c, n) in enumerate(zip(p, ns, strict=True)):
        if check_int(c, f"patch[{k}]") not in range(n):
            raise PosEncError(f"patch[{k}] must be in 0 … {n - 1} (the grid's size along axis {k}), "
                              f"got {show_value(c)}")
    if math.prod(ns) * check_int(d_model, "d_model", minimum=1) > _MAX_VALUES:
        raise PosEncError(f"grid {ns} × d_model {show_value(d_model)} is too large for a similarity map "
                          f"(at most 2**27 values)")
    table = encode_nd(grid(*ns), d_model, convention=convention, dtype=np.float64, **settings)
    ref = encode_nd(np.array(p), d_model, convention=convention, dtype=np.float64, **settings)
    norms = np.linalg.norm(table, axis=1) * np.linalg.norm(ref)
    sim = np.divide(table @ ref, norms, out=np.zeros(table.shape[0]), where=norms > 0)
    return sim.reshape(ns)
