"""Dot products, aliasing and uniqueness: what the encoding lets attention see.

Seed, Ex 8: PE(p)·PE(q) = Σ_i [sin a sin b + cos a cos b] = Σ_i cos(ω_i (p - q)),
a function of the offset only, and even in it. Ex 4: one channel pair can
repeat (ω_0 = 1 at p and p + 2π) but the whole vector does not.

Distances use half-angle forms so that nothing cancels:
|PE(p) - PE(q)|² = Σ_i 4 sin²(ω_i (p - q)/2), and per dimension
sin a - sin b = 2 cos((a+b)/2) sin((a-b)/2),
cos a - cos b = -2 sin((a+b)/2) sin((a-b)/2).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import (
    PosEncError,
    check_base,
    check_d_model,
    check_int,
    check_positions,
    check_real,
    show_value,
)
from ..exact import fill_sincos, seed_ladder, sincos
from ..support.arguments import check_flag
from ..support.layout import check_channel_layout, sin_cos_views
from ..support.vocabulary import ChannelLayout
from .conventions import SinusoidSettings, Vaswani, seed_settings

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Aliasing", "Separation", "aliasing", "min_separation", "similarity"]


def _exact_sum(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    s = a + b
    bb = s - a
    return s, (a - (s - bb)) + (b - bb)


def _offset(p: np.ndarray, q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """p - q as an unevaluated double-double (exact for any floats)."""
    hi, lo = _exact_sum(p, -q)
    big = np.abs(hi) >= 2.0**53
    if np.any(big):
        gap = Decimal(float(hi[big].flat[0])) + Decimal(float(lo[big].flat[0]))  # exact: |p|, |q| < 2**53
        raise PosEncError(f"p - q must satisfy |p - q| < 2**53, got p - q = {gap}")
    return hi, lo


def similarity(
    p: Any, q: Any, d_model: int, *, base: float = Vaswani.base, per_channel: bool = False
) -> np.ndarray:
    """PE(p)·PE(q) in closed form, Σ_i cos(ω_i (p - q)) (seed, Ex 8).

    Args:
        p, q: positions, real scalars or broadcastable arrays.
        d_model: channels, a positive even integer.
        base: the ladder's base.
        per_channel: return the terms cos(ω_i (p - q)), ``[..., d_model/2]``,
            instead of their sum.

    Returns:
        float64, shape ``broadcast(p, q).shape`` (or ``+ (d_model/2,)``). The
        offset p - q is formed exactly, so the terms are exact to 1 ulp.

    >>> round(float(similarity(8, 3, 4, per_channel=True)[1]), 6)
    0.99875
    >>> float(similarity(3, 8, 4)) == float(similarity(8, 3, 4))
    True
    """
    pp = check_positions(p, "p")
    qq = check_positions(q, "q")
    d = check_d_model(d_model)
    b = check_base(base)
    flat = not check_flag(per_channel, "per_channel")
    try:
        pp, qq = np.broadcast_arrays(pp, qq)
    except ValueError as exc:
        raise PosEncError(f"p of shape {pp.shape} and q of shape {qq.shape} do not broadcast together") from exc
    hi, lo = _offset(pp, qq)
    # cos is even: using |p - q| makes similarity(p, q) == similarity(q, p) bit for bit
    neg = hi < 0
    hi = np.where(neg, -hi, hi)
    lo = np.where(neg, -lo, lo)
    _, c = sincos(hi, seed_ladder(d, b), lo)
    return c.sum(axis=-1) if flat else c


@dataclass(frozen=True, eq=False)
class Aliasing:
    """How PE(p) and PE(q) differ, channel by channel (seed, Ex 4).

    Attributes:
        p, q: the two positions.
        d_model, base, layout, atol: as given.
        diff: float64 ``[d_model]``, |PE(p) - PE(q)| per dimension.
        coincide: bool ``[d_model]``, ``diff <= atol``.
        pair_distance: float64 ``[d_model/2]``, |Δ| of each (sin, cos) pair,
            2|sin(ω_i (p - q)/2)|.
        distance: |PE(p) - PE(q)|, the full-vector distance.
    """

    p: float
    q: float
    d_model: int
    base: float
    layout: ChannelLayout
    atol: float
    diff: np.ndarray = field(repr=False)
    coincide: np.ndarray = field(repr=False)
    pair_distance: np.ndarray = field(repr=False)
    distance: float

    @property
    def collide(self) -> bool:
        """True only when every dimension coincides."""
        return bool(self.coincide.all())


def aliasing(
    p: float,
    q: float,
    d_model: int,
    *,
    atol: float = 1e-9,
    **settings: Unpack[SinusoidSettings],
) -> Aliasing:
    """Which dimensions of PE(p) and PE(q) coincide, and how far apart they are.

    ``settings`` (``base``, ``layout``) are those of :func:`posenc.encode`.

    >>> a = aliasing(0, 2 * math.pi, 4)
    >>> a.coincide.tolist(), round(a.distance, 5)
    ([True, True, False, False], 0.06282)
    """
    base, layout = seed_settings(settings, "aliasing")
    pp = check_positions(p, "p")
    qq = check_positions(q, "q")
    if pp.ndim or qq.ndim:
        raise PosEncError("p and q must be single positions")
    d = check_d_model(d_model)
    b = check_base(base)
    lay = check_channel_layout(layout)
    tol = check_real(atol, "atol")
    if tol < 0:
        raise PosEncError(f"atol must be >= 0, got {atol}")
    n = d // 2
    lad = seed_ladder(d, b)
    # halves of sums and differences are exact (a power-of-two scaling)
    dh, dl = _offset(pp.reshape(1), qq.reshape(1))
    sh, sl = _exact_sum(pp.reshape(1), qq.reshape(1))
    s_half_d, _ = sincos(dh * 0.5, lad, dl * 0.5)
    s_half_s, c_half_s = sincos(sh * 0.5, lad, sl * 0.5)
    pair = 2.0 * np.abs(s_half_d[0])
    diff = np.empty(d)
    ds, dc = sin_cos_views(diff, n, lay)
    ds[:] = np.abs(c_half_s[0]) * pair
    dc[:] = np.abs(s_half_s[0]) * pair
    dist = math.sqrt(math.fsum((pair * pair).tolist()))
    for a in (diff, pair):
        a.setflags(write=False)
    coincide = diff <= tol
    coincide.setflags(write=False)
    return Aliasing(
        p=float(pp), q=float(qq), d_model=d, base=b, layout=lay, atol=tol,
        diff=diff, coincide=coincide, pair_distance=pair, distance=dist,
    )


@dataclass(frozen=True)
class Separation:
    """The closest two distinct integer positions in [0, n) come.

    Attributes:
        n: the range of positions.
        d_model, base: the encoding.
        distance: min over p != q of |PE(p) - PE(q)|.
        offset: the |p - q| attaining it (every pair at that offset does:
            the distance depends on the offset only).
    """

    n: int
    d_model: int
    base: float
    distance: float
    offset: int


#: The most channel offsets :func:`min_separation` scans: about ten minutes with numba, an
#: hour without; a larger request (n = 2**53 would take centuries) is refused at once.
MAX_SCAN = 2**36


def min_separation(n: int, d_model: int, *, base: float = Vaswani.base) -> Separation:
    """The uniqueness guarantee over a range: how close two encodings come.

    Since |PE(p) - PE(q)|² = Σ_i 4 sin²(ω_i (p - q)/2) depends only on the
    offset, this scans offsets 1 … n-1, in chunks: O(n·d) time,
    O(chunk·d) memory.

    >>> s = min_separation(100, 4)
    >>> s.offset, round(s.distance, 4)
    (19, 0.242)
    """
    nn = check_int(n, "n", minimum=2)
    d = check_d_model(d_model)
    b = check_base(base)
    if (nn - 1) * (d // 2) > MAX_SCAN:
        raise PosEncError(
            f"min_separation scans (n - 1)·d_model/2 channel offsets; n={show_value(nn)} with d_model={d} makes "
            f"{show_value((nn - 1) * (d // 2))}, over the 2**36 (minutes) it does at most"
        )
    lad = seed_ladder(d, b)
    half = d // 2
    rows = max(1, (1 << 16) // half)
    best, best_k = math.inf, 1
    s = np.empty((rows, half))
    c = np.empty((rows, half))
    for a in range(1, nn, rows):
        z = min(nn, a + rows)
        offs = np.arange(a, z, dtype=np.float64)
        m = z - a
        fill_sincos(offs * 0.5, lad, s[:m], c[:m])
        sq = 4.0 * np.einsum("ij,ij->i", s[:m], s[:m])
        j = int(np.argmin(sq))
        if sq[j] < best:
            best, best_k = float(sq[j]), a + j
    return Separation(n=nn, d_model=d, base=b, distance=math.sqrt(best), offset=best_k)
