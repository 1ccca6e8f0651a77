"""The RoPE figure: a query pair turning as the position advances, and the q·k score against the offset.

Extra ``posenc[plot]`` (matplotlib, imported through :func:`posenc.plot.require`
only when drawing). Every plotted number comes from :func:`posenc.apply_rope`.

>>> fig = plot_rope(16, positions=12, max_offset=20)
>>> [a.get_gid() for a in fig.axes][:2]  # then the colorbar's
['pair', 'score']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import PosEncError, check_int, check_positions, show_value
from ..rope.apply import apply_rope
from ..rope.frequencies import spec_frequencies
from ..rope.spec import RopeSettings, settings_spec
from ..support.layout import check_pair_layout
from ._canvas import BLUE, GREY, ORANGE, RED, require

if TYPE_CHECKING:
    from matplotlib.figure import Figure
    from typing_extensions import Unpack

__all__ = ["plot_rope"]

#: the settings the figure draws
_DRAWN = frozenset({"base", "scaling", "layout"})


def plot_rope(
    head_dim: int = 64,
    *,
    pair: int | None = None,
    positions: int = 24,
    max_offset: int = 200,
    refs: Sequence[float] = (0, 1000, 1_000_000),
    **settings: Unpack[RopeSettings],
) -> Figure:
    """Two panels: one query pair rotating with position; ⟨R(p)q, R(p+Δ)k⟩ against Δ.

    Left: pair ``pair`` of q = (1, 1, …, 1) rotated to positions 0 …
    positions-1: the points walk round the circle by ω_i per step (default
    pair: the one turning about 0.9 times over those positions). Right: the
    attention score of q = k = (1, …, 1)/√h_d at positions p and p + Δ, for
    each reference p: the curves coincide, since RoPE scores depend on Δ
    alone (the decay with |Δ| is RoPE's long-term decay, Su et al. 2021).
    With a scaling, the unscaled score is drawn dashed for comparison.

    Args:
        head_dim: channels per head.
        pair: the pair shown on the left (< head_dim/2).
        positions: points on the left (2 … 200).
        max_offset: Δ runs over -max_offset … max_offset (1 … 100000).
        refs: reference positions p on the right (1 to 4 of them).
        **settings: ``base``, ``scaling`` and ``layout`` (``"half"`` or
            ``"interleaved"``), as :func:`posenc.apply_rope` (the others
            refused by name: one pair of a 1-D rotation is drawn).
    """
    spec = settings_spec(None, head_dim, settings, _DRAWN)
    f = spec_frequencies(spec)
    base, scaling, layout = spec.base, spec.scaling, check_pair_layout(spec.layout)
    n = f.rotary_dim // 2
    m = check_int(positions, "positions", minimum=2)
    if m > 200:
        raise PosEncError(f"positions must be <= 200 (each point is drawn), got {show_value(positions)}")
    i = int(np.argmin(np.abs(f.inv_freq * m - 1.8 * math.pi))) if pair is None else check_int(pair, "pair", minimum=0)
    if i >= n:
        raise PosEncError(f"pair must be < head_dim/2 = {n}, got {show_value(pair)}")
    span = check_int(max_offset, "max_offset", minimum=1)
    if span > 100_000:
        raise PosEncError(f"max_offset must be <= 100000, got {show_value(max_offset)}")
    ps = check_positions(list(refs), "refs")
    if ps.ndim != 1 or not 1 <= ps.size <= 4:
        raise PosEncError(f"refs must be 1 to 4 positions, got {show_value(refs)}")
    offsets = np.arange(-span, span + 1)
    check_positions(ps[:, None] + offsets[None, :], "refs + offsets")
    kw = {"base": base, "scaling": scaling, "layout": layout}

    fig = require()(figsize=(13.0, 5.6), dpi=100, layout="constrained")
    left, right = fig.subplots(1, 2, width_ratios=(1.0, 1.45))
    left.set_gid("pair")
    right.set_gid("score")
    _pair_panel(fig, left, f, i, m, kw)
    _score_panel(right, ps, offsets, head_dim, kw)
    return fig


def _pair_panel(fig: Any, left: Any, f: Any, i: int, m: int, kw: dict[str, Any]) -> None:
    """Left: q = ones rotated to positions 0 … m-1, pair i's two channels (per the layout) as points."""
    head_dim, layout, n = f.head_dim, kw["layout"], f.rotary_dim // 2
    q = np.ones((m, head_dim))
    rot = apply_rope(q, np.arange(m), **kw)
    a, b = (i, i + n) if layout == "half" else (2 * i, 2 * i + 1)
    x, y = rot[:, a], rot[:, b]

    radius = float(np.hypot(x[0], y[0]))
    t = np.linspace(0.0, 2 * math.pi, 721)
    left.plot(radius * np.cos(t), radius * np.sin(t), color=GREY, lw=0.8, zorder=0)
    left.axhline(0.0, color=GREY, lw=0.6, zorder=0)
    left.axvline(0.0, color=GREY, lw=0.6, zorder=0)
    left.plot(x, y, color=GREY, lw=0.8, zorder=1)
    pts = left.scatter(x, y, c=np.arange(m), cmap="viridis", s=46, zorder=2, gid="points")
    fig.colorbar(pts, ax=left, label="position p", shrink=0.8)
    for p in sorted({0, 1, 2, m - 1}):
        left.annotate(f"p={p}", (x[p], y[p]), textcoords="offset points", xytext=(6, 6), fontsize=9)
    left.annotate("", xy=(x[1], y[1]), xytext=(x[0], y[0]),
                  arrowprops={"arrowstyle": "-|>", "color": RED, "lw": 1.8, "mutation_scale": 14})
    lim = radius * 1.25
    left.set_xlim(-lim, lim)
    left.set_ylim(-lim, lim)
    left.set_aspect("equal")
    left.set_xlabel(rf"channel {a} of $R(p)\,q$")
    left.set_ylabel(rf"channel {b} of $R(p)\,q$")
    left.set_title(rf"pair $i = {i}$: $q = (1, 1)$ turns by $\omega_{{{i}}} = {f.inv_freq[i]:.4g}$ rad per position"
                   "\n"
                   rf"($\lambda_{{{i}}} = {f.wavelengths[i]:.4g}$ positions; {layout} layout)", fontsize=10)


def _score_panel(right: Any, ps: np.ndarray, offsets: np.ndarray, head_dim: int, kw: dict[str, Any]) -> None:
    """Right: the score of q = k at p and p + Δ for each reference p (and without the scaling, dashed)."""
    base, scaling, layout = kw["base"], kw["scaling"], kw["layout"]
    unit = np.ones((1, head_dim)) / math.sqrt(head_dim)
    styles = [("-", 5.0, 0.35), ("--", 2.2, 1.0), (":", 2.4, 1.0), ("-.", 1.6, 1.0)]
    colors = [BLUE, ORANGE, "tab:green", "tab:purple"]
    for j, p in enumerate(ps.tolist()):
        here = apply_rope(unit, [p], **kw)[0]
        there = apply_rope(np.repeat(unit, offsets.size, axis=0), p + offsets, **kw)
        ls, lw, alpha = styles[j]
        right.plot(offsets, there @ here, ls=ls, lw=lw, alpha=alpha, color=colors[j], label=f"p = {p:g}",
                   gid=f"ref {p:g}")
    if scaling is not None:
        here = apply_rope(unit, [ps[0]], base=base, layout=layout)[0]
        there = apply_rope(np.repeat(unit, offsets.size, axis=0), ps[0] + offsets, base=base, layout=layout)
        right.plot(offsets, there @ here, ls="--", lw=1.0, color=GREY, label="without the scaling",
                   gid="unscaled")
    right.axhline(0.0, color=GREY, lw=0.6)
    right.set_xlabel(r"offset $\Delta$ (key at $p + \Delta$)")
    right.set_ylabel(r"$\langle R(p)\,q,\ R(p+\Delta)\,k \rangle$,  $q = k = \mathbf{1}/\sqrt{h_d}$")
    what = "" if scaling is None else f", {type(scaling).__name__}"
    right.set_title(rf"the score depends only on $\Delta$: the curves coincide ($h_d = {head_dim}$, "
                    f"base {float(base):g}{what})", fontsize=10)
    right.legend(title="query position", fontsize=9)
    right.grid(alpha=0.3)
