"""The relative-bias figures: ALiBi's penalty per head, T5's bucket of each offset, xPos's decay per pair.

Extra ``posenc[plot]`` (matplotlib, imported through :func:`posenc.plot.require`
only when drawing). Every plotted number comes from :func:`posenc.alibi_bias`,
:func:`posenc.t5_bucket` and :func:`posenc.xpos_decay`.

>>> fig = plot_buckets()
>>> [line.get_gid() for line in fig.axes[0].get_lines()][:1]
['buckets']
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..bias.alibi import alibi_bias, alibi_convention, alibi_distance, alibi_slopes
from ..bias.t5 import T5Settings, t5_bucket, t5_bucket_edges, t5_buckets
from ..errors import PosEncError, check_d_model, check_int, check_real, show_value
from ..rope.xpos import XPos, xpos_decay
from ._canvas import GREY, RED, canvas, legend_clear_of_data

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from typing_extensions import Unpack

__all__ = ["alibi_curves", "bucket_steps", "plot_alibi", "plot_buckets", "plot_xpos", "xpos_curves"]


def _span(value: Any, name: str, top: int) -> int:
    n = check_int(value, name, minimum=1)
    if n > top:
        raise PosEncError(f"{name} must be <= {top} to draw, got {show_value(value)}")
    return n


def alibi_curves(
    n_heads: int = 12, *, convention: Any = "press", max_distance: int = 256, penalty: float = 1.0,
) -> dict[str, Any]:
    """What :func:`plot_alibi` draws: distances ``[D+1]``, each head's bias ``[h, D+1]``, slopes, reach.

    The bias is the last row of :func:`posenc.alibi_bias` (the query that sees
    every key) minus its value at the query's own key, so every convention
    gives the paper's −m·d.
    """
    h = _span(n_heads, "n_heads", 64)
    d = _span(max_distance, "max_distance", 100_000)
    conv = alibi_convention(convention)
    reach = alibi_distance(h, penalty, convention=conv)
    row = alibi_bias(1, d + 1, h, offset=d, convention=conv, dtype=np.float64)[:, 0, ::-1]  # distance 0 first
    return {"convention": conv.name, "penalty": check_real(penalty, "penalty"), "distance": np.arange(d + 1),
            "bias": row - row[:, :1], "slopes": alibi_slopes(h, convention=conv), "reach": reach}


def plot_alibi(
    n_heads: int = 12, *, convention: Any = "press", max_distance: int = 256, penalty: float = 1.0,
    ax: Axes | None = None,
) -> Figure:
    """ALiBi's bias −m_h·d against the distance d = i − j, one line per head.

    The lines fan out from 0 with the slopes m_h (12 heads: 2**-1 … 2**-8,
    then the interleaved 2**-0.5 … 2**-3.5); the dotted line marks
    ``−penalty`` and each head's crossing of it (:func:`posenc.alibi_distance`).
    Read off the last row of :func:`posenc.alibi_bias` (the query that sees
    every key), so bloom and mpt draw the same lines: they differ only by a
    constant per row.

    Args:
        n_heads: heads (1 … 64).
        convention: ``"press"``, ``"bloom"``, ``"mpt"`` or an instance.
        max_distance: the distances drawn, 0 … max_distance (1 … 100000).
        penalty: the level marked (> 0).
        ax: draw into these axes.
    """
    data = alibi_curves(n_heads, convention=convention, max_distance=max_distance, penalty=penalty)
    h, d, p = len(data["slopes"]), int(data["distance"][-1]), float(data["penalty"])
    conv = alibi_convention(convention)
    slopes, reach, dist, row = data["slopes"], data["reach"], data["distance"], data["bias"]
    fig, axes = canvas(ax, (9.0, 5.4))
    cmap = _cmap()
    rank = np.argsort(np.argsort(-slopes))  # colour by steepness: the interleaved heads fall between their neighbours
    lines = []
    for k in range(h):
        colour = cmap(rank[k] / max(h - 1, 1))
        lines += axes.plot(dist, row[k], color=colour, lw=1.6, gid=f"head {k}",
                           label=rf"head {k}: $m = 2^{{{np.log2(slopes[k]):.4g}}}$" if h <= 16 else None)
        if reach[k] <= d:
            axes.plot([reach[k]], [-p], "o", color=colour, ms=4, gid=f"reach {k}")
    axes.axhline(-p, color=RED, ls=":", lw=1.2, gid="penalty")
    axes.set_xlim(0, d)
    axes.set_ylim(max(-8 * p, float(row.min())) * 1.05, 0.05 * 8 * p)
    axes.set_xlabel("distance i − j (key before the query)")
    axes.set_ylabel("bias added to the score")
    axes.set_title(rf"ALiBi ({conv.name}, {h} head{'s' if h > 1 else ''}): head $h$ adds $-m_h\,(i - j)$; "
                   f"dots: where the penalty reaches {p:g}", fontsize=10)
    if h <= 16:
        # listed as the lines lie, top (the gentlest slope) to bottom; where it covers none of them
        order = np.argsort(slopes, kind="stable")
        legend_clear_of_data(axes, [lines[k] for k in order], [lines[k].get_label() for k in order], fontsize=8,
                             title="lines, top to bottom" if h > 1 else None, title_fontsize=8, grow=ax is None)
    axes.grid(alpha=0.3)
    return fig


def bucket_steps(*, span: int | None = None, **settings: Unpack[T5Settings]) -> dict[str, Any]:
    """What :func:`plot_buckets` draws: offsets ``[2S+1]``, their buckets, and the edges."""
    cfg = t5_buckets(None, "bucket_steps", **settings)
    s = _span(span if span is not None else (3 * cfg.max_distance) // 2, "span", 100_000)
    rel = np.arange(-s, s + 1)
    b, nb, md = cfg.bidirectional, cfg.num_buckets, cfg.max_distance
    return {"bidirectional": b, "num_buckets": nb, "max_distance": md, "offset": rel,
            "bucket": t5_bucket(rel, bidirectional=b, num_buckets=nb, max_distance=md),
            "edges": t5_bucket_edges(bidirectional=b, num_buckets=nb, max_distance=md)}


def plot_buckets(
    *,
    span: int | None = None,
    ax: Axes | None = None,
    **settings: Unpack[T5Settings],
) -> Figure:
    """T5's bucket of each offset j − i, a staircase: one step per position, then logarithmic ones.

    Args:
        span: offsets −span … span are drawn (default 1.5·max_distance; at most 100000).
        ax: draw into these axes.
        **settings: ``bidirectional``, ``num_buckets``, ``max_distance``, as :func:`posenc.t5_bucket`.
    """
    cfg = t5_buckets(None, "plot_buckets", **settings)
    data = bucket_steps(span=span, **settings)
    rel, b, edges = data["offset"], data["bucket"], data["edges"]
    fig, axes = canvas(ax, (9.0, 5.0))
    axes.step(rel, b, where="mid", color="tab:blue", lw=1.6, gid="buckets")
    for x in (-cfg.max_distance, cfg.max_distance):
        axes.axvline(x, color=RED, ls="--", lw=1.0, gid=f"max_distance {x}")
    e = cfg.max_exact
    for x in (-e, e):
        axes.axvline(x, color=GREY, ls=":", lw=1.0, gid=f"max_exact {x}")
    first_log = edges[e] if e < edges.shape[0] else None
    axes.set_xlabel("offset j − i (key position − query position)")
    axes.set_ylabel("bucket")
    kind = "bidirectional (encoder)" if cfg.bidirectional else "unidirectional (decoder)"
    axes.set_title(f"T5 buckets, {kind}: {cfg.num_buckets} buckets, max_distance {cfg.max_distance}\n"
                   f"one per distance below {e} (dotted), logarithmic from {first_log}, "
                   f"the last from {edges[-1]} on (max_distance dashed)", fontsize=10)
    axes.grid(alpha=0.3)
    return fig


def xpos_curves(
    rotary_dim: int = 64, *, gamma: float = 0.4, scale_base: float = 512.0, max_offset: int = 2048,
) -> dict[str, Any]:
    """What :func:`plot_xpos` draws: offsets ``[401]`` and each pair's decay ``[401, r/2]``, with ζ."""
    r = check_d_model(rotary_dim, "rotary_dim")
    if r > 1024:
        raise PosEncError(f"rotary_dim must be <= 1024 to draw, got {show_value(rotary_dim)}")
    xp = XPos(gamma=gamma, scale_base=scale_base)
    m = _span(max_offset, "max_offset", 100_000)
    off = np.linspace(0.0, m, 401)
    return {"rotary_dim": r, "gamma": xp.gamma, "scale_base": xp.scale_base, "zeta": xp.zeta(r),
            "offset": off, "decay": xpos_decay(off, r, xpos=xp)}


def plot_xpos(
    rotary_dim: int = 64, *, gamma: float = 0.4, scale_base: float = 512.0, max_offset: int = 2048,
    ax: Axes | None = None,
) -> Figure:
    """xPos's decay ζ_i^(Δ/scale_base) of q·k against the offset Δ, one line per pair i (log scale).

    Pair 0, the fastest rotation, decays most (ζ_0 = γ/(1 + γ)); the slowest
    pair hardly at all. Dots mark Δ = scale_base, where pair i's factor is ζ_i.

    Args:
        rotary_dim: r (even, 2 … 1024).
        gamma, scale_base: as :class:`posenc.XPos`.
        max_offset: Δ from 0 … max_offset (1 … 100000).
        ax: draw into these axes.
    """
    data = xpos_curves(rotary_dim, gamma=gamma, scale_base=scale_base, max_offset=max_offset)
    r, xp, off, decay = int(data["rotary_dim"]), XPos(gamma=gamma, scale_base=scale_base), data["offset"], data["decay"]
    m = int(off[-1])
    fig, axes = canvas(ax, (9.0, 5.4))
    cmap = _cmap()
    n = r // 2
    for i in range(n):
        axes.plot(off, decay[:, i], color=cmap(i / max(n - 1, 1)), lw=1.2, gid=f"pair {i}")
    if xp.scale_base <= m:
        mark = xpos_decay([xp.scale_base], r, xpos=xp)[0]
        axes.scatter(np.full(n, xp.scale_base), mark, s=10, color="k", zorder=3, gid="at scale_base")
    axes.set_yscale("log")
    axes.set_xlim(0, m)
    axes.set_xlabel(r"offset $\Delta = p_q - p_k$")
    axes.set_ylabel("factor of pair i in q·k")
    axes.set_title(rf"xPos decay $\zeta_i^{{\Delta/{xp.scale_base:g}}}$, "
                   rf"$\zeta_i = (2i/{r} + {xp.gamma:g})/(1 + {xp.gamma:g})$: pair 0 (dark) decays fastest",
                   fontsize=10)
    axes.grid(alpha=0.3, which="both")
    return fig


def _cmap() -> Any:
    from matplotlib import colormaps

    return colormaps["viridis"]
