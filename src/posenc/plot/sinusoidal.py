"""Figures of the sinusoidal encoding: the seed's s02 and s03, the table, the kernel, the ladder.

Every plotted number comes from the public API.

>>> fig = plot_wave()
>>> [line.get_gid() for line in fig.axes[0].get_lines()]
[None, 'curve', 'period']
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from ..errors import (
    PosEncError,
    check_base,
    check_context,
    check_d_model,
    check_int,
    check_positions,
    show_value,
)
from ..sinusoidal.conventions import SinusoidSettings, Vaswani, seed_settings
from ..sinusoidal.encoding import encode, table
from ..sinusoidal.frequencies import context_report, frequencies, wavelengths
from ..support.layout import check_channel_layout, sin_cos_views
from ._canvas import BLUE, GREY, MAX_CELLS, ORANGE, RED, canvas, legend_clear_of_data

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from typing_extensions import Unpack

__all__ = ["plot_heatmap", "plot_kernel", "plot_ladder", "plot_rotation", "plot_wave"]

def _pair_views(vec: np.ndarray, d: int) -> tuple[np.ndarray, np.ndarray]:
    return sin_cos_views(vec, d // 2, "interleaved")


def plot_wave(d_model: int = 4, *, base: float = Vaswani.base, positions: int = 8,
              ax: Axes | None = None) -> Figure:
    """Figure s02: the fastest channel, sin(ω_0·pos) with ω_0 = 1, against position.

    The smooth curve over real positions, the integer positions 0 … positions-1
    as dots labelled with their values, and a dashed red line at one full
    period, 2π: by pos 6 the dots have not come back to where they started.

    Args:
        d_model, base: the encoding (ω_0 = 1 whatever they are).
        positions: how many integer positions to mark (2 … 64).
        ax: draw into these axes instead of a new figure.
    """
    d = check_d_model(d_model)
    b = check_base(base)
    m = check_int(positions, "positions", minimum=2)
    if m > 64:
        raise PosEncError(f"positions must be <= 64 (each dot is labelled), got {show_value(positions)}")
    period = float(wavelengths(d, b)[0])
    own = ax is None  # the figure is ours: it may widen for a legend beside the axes
    fig, ax = canvas(ax)
    # a label and its gap, ~48 pt, in positions: from the axes' width (the page's figures are narrower)
    span_pt = max(fig.get_figwidth() * 72.0 * ax.get_position().width, 100.0)
    right = max(m - 1, period) + 0.5
    reach = 48.0 * (right + 0.3) / span_pt
    if m <= 16 and m - 1 - reach < period < m - 1:  # the last label fits left of its dot only across the line
        right = m - 1 + 1.15 * reach
        reach = 48.0 * (right + 0.3) / span_pt
    xs = np.linspace(0.0, right, 600)
    curve = encode(xs, d, base=b, dtype=np.float64)[:, 0]
    ints = np.arange(m)
    at_ints = encode(ints, d, base=b, dtype=np.float64)
    dots, slope = at_ints[:, 0], at_ints[:, 1]  # cos is the slope of sin: it says where the curve goes next
    ax.axhline(0.0, color=GREY, lw=0.8, zorder=0)
    ax.plot(xs, curve, color=BLUE, lw=2, label=r"$\sin(\mathrm{pos})$, smooth", gid="curve")
    ax.scatter(ints, dots, color=ORANGE, s=50, zorder=3, edgecolor="black", linewidth=0.6,
               label=f"integer positions 0 … {m - 1}", gid="positions")
    if m <= 16:
        for x, y, up in zip(ints.tolist(), dots.tolist(), (slope > 0).tolist(), strict=True):
            # on the side the curve leaves empty: right of the dot (below when rising, above when falling),
            # or left of it (above when rising) where the right would cross the period line or the edge
            left = (x == m - 1 and x + reach > right) or x < period < x + reach
            below = up != left
            ax.annotate("0" if y == 0 else f"{y:.4f}", (x, y), textcoords="offset points",
                        xytext=(-7 if left else 7, -15 if below else 7), ha="right" if left else "left",
                        fontsize=9, zorder=4,
                        bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.85})
    ax.axvline(period, color=RED, ls="--", lw=1.5, label=rf"one full period $2\pi \approx {period:.2f}$",
               gid="period")
    ax.set_xlim(-0.3, right)
    ax.set_ylim(-1.25, 1.3)
    ax.set_xlabel(r"position pos  (= the angle in radians, since $\omega_0 = 1$)")
    ax.set_ylabel(r"$PE(\mathrm{pos}, 0) = \sin(\omega_0 \cdot \mathrm{pos})$")
    ax.set_title(rf"Figure s02: the fastest channel ($i = 0$, $\omega_0 = 1$) of $d_{{model}} = {d}$")
    ax.grid(alpha=0.3)
    legend_clear_of_data(ax, fontsize=9, grow=own)  # clear of the curve, the dots, their labels and the period line
    return fig


def plot_rotation(
    pos: float = 3,
    by: float = 5,
    *,
    d_model: int = 4,
    base: float = Vaswani.base,
    pair: int | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Figure s03: shifting by ``by`` positions rotates each (sin, cos) pair.

    On pair ``pair`` (default: the slowest) the sub-vector at ``pos`` is the
    blue arrow, at ``pos + by`` the orange one, and the red arc is the path
    PE traces as the position moves from one to the other: a rotation by
    φ = ω_i·by, counter-clockwise for ``by > 0``, clockwise for ``by < 0``.
    Axes: x = cos(ω_i·pos), y = sin(ω_i·pos), so the angle reads as usual
    on the unit circle (the seed stacks the pair as (sin, cos), sine on top).
    When φ is small an inset magnifies the arc.
    """
    p = float(check_positions(pos, "pos"))
    k = float(check_positions(by, "by"))
    d = check_d_model(d_model)
    b = check_base(base)
    n = d // 2
    i = n - 1 if pair is None else check_int(pair, "pair", minimum=0)
    if i >= n:
        raise PosEncError(f"pair must be < d_model/2 = {n}, got {show_value(pair)}")
    check_positions(p + k, "pos + by")
    ends = encode([p, p + k], d, base=b, dtype=np.float64)
    path = encode(np.linspace(p, p + k, 200), d, base=b, dtype=np.float64)
    sin_e, cos_e = (v[:, i] for v in _pair_views(ends, d))
    sin_p, cos_p = (v[:, i] for v in _pair_views(path, d))
    omega = float(frequencies(d, b)[i])
    # phi for the labels only; the drawing uses the library's sin/cos
    turn = _Turn(p, k, sin_e, cos_e, sin_p, cos_p, omega * k, abs(omega * k) < 0.6)
    fig, ax = canvas(ax, (7.5, 7.0))
    _draw_turn(ax, turn, 2.5, None)
    ax.set_xlim(-1.2, 1.2)
    ax.set_ylim(-1.2, 1.2)
    ax.set_aspect("equal")
    ax.set_xlabel(rf"x = $\cos(\omega_{{{i}}} \cdot \mathrm{{pos}})$  (the seed's bottom entry)")
    ax.set_ylabel(rf"y = $\sin(\omega_{{{i}}} \cdot \mathrm{{pos}})$  (the seed's top entry)")
    way = "counter-clockwise" if k >= 0 else "clockwise"
    ax.set_title(f"Figure s03: shift by k = {k:g} = rotation by "
                 rf"$\varphi = \omega_{{{i}}} k = {turn.phi:.4g}$ rad ({way})" "\n"
                 rf"pair $i = {i}$ of $d_{{model}} = {d}$, base {b:g}", fontsize=11)
    _legend_and_inset(ax, turn)
    return fig


@dataclass(frozen=True)
class _Turn:
    """What Figure s03 draws: the pair at pos and pos + by, the path between, and the angle."""

    pos: float
    by: float
    sin_e: np.ndarray  # the two ends, [2]
    cos_e: np.ndarray
    sin_p: np.ndarray  # the path, [200]
    cos_p: np.ndarray
    phi: float  # ω_i·by, for the labels
    small: bool  # the arrows are a few degrees apart: an inset magnifies their tips


def _draw_turn(a: Axes, t: _Turn, lw: float, zoom: float | None) -> None:
    """The circle, both arrows and the arc; ``zoom``: the inset's half-width (None for the main view)."""
    circle = np.linspace(0.0, 2 * math.pi, 721)
    a.plot(np.cos(circle), np.sin(circle), color=GREY, lw=0.8, zorder=0)  # the unit circle, a backdrop only
    a.axhline(0.0, color=GREY, lw=0.6, zorder=0)
    a.axvline(0.0, color=GREY, lw=0.6, zorder=0)
    tag = "" if zoom is None else "-inset"
    for j, (color, name) in enumerate(((BLUE, "source"), (ORANGE, "target"))):
        tip = np.array([t.cos_e[j], t.sin_e[j]])
        if zoom is None:
            tail = np.zeros(2)
        else:
            # the shaft from the origin is clipped by the inset; the head starts inside it
            a.plot([0.0, tip[0]], [0.0, tip[1]], color=color, lw=lw)
            tail = tip * (1 - 0.3 * zoom)
            a.annotate(f"pos {(t.pos, t.pos + t.by)[j]:g}", (tip[0], tip[1]), textcoords="offset points",
                       xytext=(8, -4), color=color, fontsize=10, fontweight="bold")
        ann = a.annotate("", xy=(tip[0], tip[1]), xytext=(tail[0], tail[1]),
                         arrowprops={"arrowstyle": "-|>", "color": color, "lw": lw, "mutation_scale": 18})
        ann.set_gid(name + tag)
    # a small turn is drawn on the circle, joining the tips; a large one inside it, as an angle mark
    r = 1.0 if t.small else 0.3
    a.plot(r * t.cos_p, r * t.sin_p, color=RED, lw=lw, gid="arc" + tag)
    if zoom is not None or not t.small:
        a.annotate("", xy=(r * t.cos_p[-1], r * t.sin_p[-1]), xytext=(r * t.cos_p[-6], r * t.sin_p[-6]),
                   arrowprops={"arrowstyle": "-|>", "color": RED, "lw": lw, "mutation_scale": 16})
        mid = len(t.cos_p) // 2
        # two lines: narrow enough to stay inside the inset in the page's smaller figure
        a.annotate(f"$\\varphi = {t.phi:.4g}$\nrad", (r * t.cos_p[mid], r * t.sin_p[mid]), textcoords="offset points",
                   xytext=(-10, 0), ha="right", va="center", multialignment="right", color=RED, fontsize=10)


def _legend_and_inset(ax: Axes, t: _Turn) -> None:
    """The legend, and for a small turn an inset magnifying the tips, in the half the arrows leave empty."""
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], color=BLUE, lw=2.5,
               label=f"pos {t.pos:g}: (sin, cos) = ({t.sin_e[0]:.6f}, {t.cos_e[0]:.6f})"),
        Line2D([], [], color=ORANGE, lw=2.5,
               label=f"pos {t.pos + t.by:g}: (sin, cos) = ({t.sin_e[1]:.6f}, {t.cos_e[1]:.6f})"),
        Line2D([], [], color=RED, lw=2.5, label=rf"rotation by $\varphi = {t.phi:.4g}$ rad"),
    ]
    mid = math.atan2(float(t.sin_p[len(t.sin_p) // 2]), float(t.cos_p[len(t.cos_p) // 2]))
    right = math.cos(mid) > 0
    # legend (top) and inset (bottom) go to the half the arrows leave empty, one above the other
    ax.legend(handles=handles, loc="upper left" if right else "upper right", fontsize=9)
    if t.small:
        # inside the main axes with room for the inset's own tick labels (left and below it), clear of the
        # main axis's tick labels; a few ticks, so the labels stay apart
        inset = ax.inset_axes((0.14 if right else 0.55, 0.1, 0.38, 0.38))
        xs = np.concatenate([t.cos_e, t.cos_p])
        ys = np.concatenate([t.sin_e, t.sin_p])
        half = max(float(np.ptp(xs)), float(np.ptp(ys)), 0.002) * 0.8
        cx, cy = float(xs.mean()), float(ys.mean())
        _draw_turn(inset, t, 2.0, half)
        inset.set_xlim(cx - half, cx + half)
        inset.set_ylim(cy - half, cy + half)
        inset.set_aspect("equal")
        inset.tick_params(labelsize=8)
        from matplotlib.ticker import MaxNLocator

        for axis in (inset.xaxis, inset.yaxis):
            axis.set_major_locator(MaxNLocator(nbins=3))
        ax.indicate_inset_zoom(inset, edgecolor="0.3")


def plot_heatmap(
    length: int = 128,
    d_model: int = 64,
    *,
    start: int = 0,
    ax: Axes | None = None,
    **settings: Unpack[SinusoidSettings],
) -> Figure:
    """The table PE(pos, channel) as an image: positions down, channels across.

    Fast channels (left, interleaved) alternate quickly down the rows; slow
    ones (right) barely change: sin near 0, cos near 1. ``settings``
    (``base``, ``layout``) are those of :func:`posenc.encode`.
    """
    base, layout = seed_settings(settings, "plot_heatmap")
    n = check_int(length, "length", minimum=1)
    d = check_d_model(d_model)
    lay = check_channel_layout(layout)
    if n * d > MAX_CELLS:
        raise PosEncError(
            f"length × d_model must be <= {MAX_CELLS} cells to draw, got {show_value(length)} × {show_value(d_model)}")
    data = table(n, d, start=start, base=base, layout=lay, dtype=np.float64)
    fig, ax = canvas(ax)
    s0 = int(start)
    im = ax.imshow(data, aspect="auto", cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="nearest",
                   extent=(-0.5, d - 0.5, s0 + n - 0.5, s0 - 0.5))
    im.set_gid("table")
    fig.colorbar(im, ax=ax, label="PE(pos, channel)")
    where = "even: sin, odd: cos" if lay == "interleaved" else f"0 … {d // 2 - 1}: sin, {d // 2} … {d - 1}: cos"
    ax.set_xlabel(f"channel ({where}); frequency falls to the right")
    ax.set_ylabel("position")
    ax.set_title(rf"The encoding table: {n} positions $\times$ {d} channels (base {float(base):g}, {lay})")
    return fig


def plot_kernel(
    d_model: int = 64,
    *,
    base: float = Vaswani.base,
    max_offset: int = 100,
    refs: Sequence[float] = (0, 250, 1000),
    ax: Axes | None = None,
) -> Figure:
    """PE(p)·PE(p + Δ) against the offset Δ, for several reference positions p.

    Each curve is the dot product of the actual encodings; they lie on top of
    each other and are mirror-symmetric about Δ = 0: the score depends only
    on |p − q| (seed, Ex 8). The peak is d_model/2 at Δ = 0.
    """
    d = check_d_model(d_model)
    b = check_base(base)
    m = check_int(max_offset, "max_offset", minimum=1)
    if m > 100_000:
        raise PosEncError(f"max_offset must be <= 100000, got {show_value(max_offset)}")
    ps = check_positions(list(refs), "refs")
    if ps.ndim != 1 or ps.size == 0:
        raise PosEncError(f"refs must be a non-empty list of positions, got {show_value(refs)}")
    offsets = np.arange(-m, m + 1)
    check_positions(ps[:, None] + offsets[None, :], "refs + offsets")
    fig, ax = canvas(ax)
    styles = [("-", 5.0, 0.35), ("--", 2.2, 1.0), (":", 2.2, 1.0), ("-.", 1.6, 1.0)]
    colors = [BLUE, ORANGE, "tab:green", "tab:purple"]
    for j, p in enumerate(ps.tolist()):
        here = encode(p, d, base=b, dtype=np.float64)
        there = encode(p + offsets, d, base=b, dtype=np.float64)
        ls, lw, alpha = styles[j % len(styles)]
        ax.plot(offsets, there @ here, ls=ls, lw=lw, alpha=alpha, color=colors[j % len(colors)],
                label=f"p = {p:g}", gid=f"ref {p:g}")
    ax.axhline(d / 2, color=GREY, ls=":", lw=1)
    ax.annotate(rf"$d_{{model}}/2 = {d // 2}$ at $\Delta = 0$", (0, d / 2), textcoords="offset points",
                xytext=(8, -14), fontsize=9)
    ax.set_xlabel(r"offset $\Delta = q - p$")
    ax.set_ylabel(r"$PE(p) \cdot PE(p + \Delta) = \sum_i \cos(\omega_i \Delta)$")
    ax.set_title(rf"The dot product depends only on $|p - q|$: the curves coincide ($d_{{model}} = {d}$, "
                 f"base {b:g})")
    ax.legend(title="reference position", fontsize=9)
    ax.grid(alpha=0.3)
    return fig


def plot_ladder(
    d_model: int = 512, *, base: float = Vaswani.base, context: float = 8192, ax: Axes | None = None
) -> Figure:
    """The wavelength λ_i = 2π/ω_i of every pair on a log axis, and a context length.

    Pairs whose wavelength is shorter than the context turn more than once
    over it (red crosses); the slowest pair decides whether the base
    suffices (seed, Ex 7).
    """
    d = check_d_model(d_model)
    b = check_base(base)
    c = check_context(context)
    lam = wavelengths(d, b)
    rep = context_report(c, d, b)
    wraps = rep.loops > 1.0
    idx = np.arange(len(lam))
    fig, ax = canvas(ax)
    size = 36 if len(lam) <= 64 else 14
    if (~wraps).any():  # a legend names only what is drawn: no "0 pairs" entry
        ax.scatter(idx[~wraps], lam[~wraps], color=BLUE, s=size, marker="o",
                   label=f"does not wrap over the context: {int(np.count_nonzero(~wraps))} pairs", gid="unwrapped")
    if wraps.any():
        ax.scatter(idx[wraps], lam[wraps], color=RED, s=size + 6, marker="x",
                   label=f"wraps (λ < context): {int(np.count_nonzero(wraps))} pairs", gid="wrapped")
    ax.axhline(c, color="black", ls="--", lw=1.2, label=f"context = {c:g} positions", gid="context")
    ax.set_yscale("log")
    # the label sits left of the slowest pair, in the empty space above the ladder, on the side of
    # its point away from the context line (below it when the context is higher), an arrow to the point
    below = c >= lam[-1]
    ax.annotate(rf"$\lambda_{{max}} = {lam[-1]:.1f}$", (idx[-1], lam[-1]), textcoords="offset points",
                xytext=(-60, -4 if below else 4), ha="right", va="top" if below else "bottom", fontsize=9,
                arrowprops={"arrowstyle": "->", "color": "0.3", "lw": 0.8, "shrinkB": 4}, gid="lambda_max")
    ax.set_ylim(top=max(float(lam[-1]), c) * 4)
    verdict = "wraps: raise the base" if rep.wraps else "does not wrap: the base suffices"
    ax.set_title(rf"Wavelength ladder, $d_{{model}} = {d}$, base {b:g}" "\n"
                 f"over {c:g} positions the slowest pair {verdict}", fontsize=11)
    ax.set_xlabel(r"pair $i$ (channels $2i$, $2i+1$)")
    from matplotlib.ticker import MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(integer=True))  # pairs are whole: no tick at pair 0.5
    ax.set_ylabel(r"wavelength $\lambda_i = 2\pi / \omega_i$ (positions, log scale)")
    ax.legend(loc="lower right", fontsize=9)  # the ladder rises left to right: that corner stays empty
    ax.grid(alpha=0.3, which="both")
    return fig
