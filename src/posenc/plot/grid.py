"""The grid figure: how alike one patch's encoding is to every other patch's, per n-D convention.

Extra ``posenc[plot]`` (matplotlib, imported through :func:`posenc.plot.require`
only when drawing). Every plotted number comes from
:func:`posenc.grid_similarity`.

>>> fig = plot_grid((8, 8), 32)
>>> [a.get_gid() for a in fig.axes][:4]  # then the colorbar's
['axial', 'mae', 'big_vision', 'positional-encodings']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import PosEncError, show_value
from ..sinusoidal.conventions_nd import NAMES, Axial, get, resolve
from ..sinusoidal.grid_analysis import check_sizes, grid_similarity
from ._canvas import MAX_CELLS, require

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_grid"]

#: the panels drawn by default: each a different similarity map (timm's is MAE's, channels reordered)
_DEFAULT = tuple(n for n in NAMES if n != "timm")


def _describe(conv: Any, d: int) -> str:
    """Which axis comes first and how each axis's channels are laid out, in a few words."""
    plan = conv.plan(d, 2)
    first = "column (w) first" if plan.blocks[0].axis == 1 else "row (h) first"
    layout = "sin, cos interleaved" if plan.blocks[0].layout == "interleaved" else "[sin | cos] halves"
    if plan.order is not None:
        layout = "[sin | sin | cos | cos]"
    return f"{first}, {layout}"


def plot_grid(
    sizes: Sequence[int] | None = None,
    d_model: int = 256,
    *,
    patch: Sequence[int] | None = None,
    base: float = Axial.base,
    conventions: Sequence[Any] | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Similarity maps: cos θ between one patch's encoding and every patch's, one panel per convention.

    Each panel is the h×w grid coloured by the cosine similarity of its
    patches' encodings to the chosen patch's (marked). A per-axis encoding
    scores high along the patch's row and column — where one of the two
    axes agrees exactly — and falls off with distance along each axis at the
    rate of that axis's ladder; conventions differ in ladder (big_vision's
    reaches 1/T exactly) and in how many channels each axis gets.

    Args:
        sizes: the grid, ``(h, w)`` (2 … 128 each); None: 16×16.
        d_model: channels.
        patch: the reference patch ``(i, j)``; default the centre.
        base: the base of the default (axial) convention; the presets carry their own.
        conventions: n-D conventions or names to draw (default: axial, mae,
            big_vision and positional-encodings; timm's table is MAE's ladder
            with the channels reordered, so its map is MAE's and is drawn
            only when named).
        ax: draw one convention into these axes instead of a new figure.
    """
    ns = check_sizes((16, 16) if sizes is None else sizes)
    if len(ns) != 2 or not all(2 <= n <= 128 for n in ns):
        shown = ", ".join(show_value(n) for n in ns)
        raise PosEncError(f"sizes must be (h, w) with each 2 … 128 to draw, got ({shown})")
    p = (ns[0] // 2, ns[1] // 2) if patch is None else tuple(patch)
    convs = [resolve(None, base=base) if c in (None, "axial") else get(c) for c in (conventions or _DEFAULT)]
    if not convs or (ax is not None and len(convs) != 1):
        raise PosEncError("conventions must name at least one convention, and exactly one when ax is given")
    if len(convs) * ns[0] * ns[1] > MAX_CELLS:
        raise PosEncError(f"too many cells to draw: {len(convs)} × {ns[0]} × {ns[1]}")
    maps = [grid_similarity(ns, d_model, p, convention=c) for c in convs]  # validates d_model and patch first

    fig: Any
    if ax is None:
        fig = require()(figsize=(3.6 * len(convs) + 1.2, 4.3), dpi=100, layout="constrained")
        axes = list(np.atleast_1d(fig.subplots(1, len(convs))))
    else:
        fig, axes = ax.figure, [ax]
    images = []
    # one colour scale for every panel, over the values drawn: the slow pairs keep every score high
    low = min(float(m.min()) for m in maps)
    for a, conv, sim in zip(axes, convs, maps, strict=True):
        a.set_gid(conv.name)
        images.append(a.imshow(sim, cmap="viridis", vmin=low, vmax=1.0, interpolation="nearest", origin="upper"))
        a.plot([p[1]], [p[0]], marker="s", ms=7, mfc="none", mec="red", mew=1.8, gid="patch")
        a.set_title(f"{conv.name}\n{_describe(conv, d_model)}", fontsize=10)
        a.set_xlabel("column j (w)")
        a.set_ylabel("row i (h)")
    fig.colorbar(images[-1], ax=axes, shrink=0.85, label=f"cos similarity to patch {p}")
    if ax is None:
        fig.suptitle(f"How alike patch {p}'s encoding is to every patch's: {ns[0]}×{ns[1]} grid, "
                     rf"$d_{{model}} = {d_model}$", fontsize=11)
    return fig
