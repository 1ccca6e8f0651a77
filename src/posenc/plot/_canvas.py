"""What every figure shares: matplotlib on demand, one canvas, one palette.

Extra ``posenc[plot]``: matplotlib is imported only when drawing, through
:class:`matplotlib.figure.Figure` (no pyplot, no global state, no window), so
``import posenc.plot`` works without it and every ``plot_*`` raises
:class:`ImportError` naming the extra when it is missing.
"""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure
    from matplotlib.legend import Legend
    from matplotlib.transforms import Bbox

__all__ = [
    "BLUE", "DRAWING", "GREY", "MAX_CELLS", "MISSING", "ORANGE", "RED", "canvas", "legend_clear_of_data", "require",
]

#: The message when matplotlib is not installed.
MISSING = "plotting needs matplotlib: pip install 'posenc[plot]'"

#: The palette of every figure.
BLUE, ORANGE, RED, GREY = "tab:blue", "tab:orange", "tab:red", "0.6"
MAX_CELLS = 1 << 24  # a heatmap larger than this is no longer a picture

#: Held while posenc draws a figure (the page, the command): matplotlib's text
#: layout shares one mathtext parser, which two threads laying out text at once
#: break (a ValueError from deep inside it). Figures are not on a hot path.
DRAWING = threading.RLock()


def require() -> type[Figure]:
    """Import matplotlib (Agg, no pyplot) or raise ImportError naming the extra."""
    try:
        import matplotlib  # noqa: F401  (the package first: a stub of it must fail here)
        from matplotlib.figure import Figure
    except ImportError as exc:
        raise ImportError(MISSING) from exc
    return Figure


def canvas(ax: Axes | None, figsize: tuple[float, float] = (8.0, 5.0)) -> tuple[Any, Axes]:
    """``ax``'s figure and ``ax``, or a new constrained-layout figure and its one axes."""
    if ax is not None:
        return ax.figure, ax
    fig = require()(figsize=figsize, dpi=100, layout="constrained")
    return fig, fig.add_subplot()


def legend_clear_of_data(ax: Axes, *args: Any, grow: bool = False, **kwargs: Any) -> Legend:
    """``ax.legend(*args, **kwargs)`` where it covers no data: inside the axes if a spot there is free, else outside.

    matplotlib's ``loc="best"`` picks the least-covered spot, which may still
    lie over a line (a dashed reference line crossing the middle, a fan of
    lines filling the axes). So the figure is laid out once, and when the
    legend's box still crosses a drawn line or point, the legend moves out of
    the axes to their right (constrained layout makes room for it). A data
    line is one with a ``gid`` (the figures name every line they draw on
    purpose; unnamed lines are the backdrop: zero lines, the unit circle).

    Args:
        ax: the axes.
        *args, **kwargs: as :meth:`matplotlib.axes.Axes.legend` (not ``loc``).
        grow: the figure is the plot's own: widen it by the legend's width
            when the legend moves out, so the axes keep their size (labels
            placed for that width stay inside).
    """
    legend = ax.legend(*args, loc="best", **kwargs)
    root: Any = ax.figure
    root = root.figure
    lay_out = getattr(root, "draw_without_rendering", None)  # matplotlib >= 3.6
    if lay_out is None:
        return legend
    lay_out()  # the layout and the "best" spot, as a save will find them
    if not _covers_data(ax, legend.get_window_extent()):
        return legend
    legend.remove()
    legend = ax.legend(*args, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0.0, **kwargs)
    if grow:
        lay_out()
        width = legend.get_window_extent().width / root.dpi
        root.set_figwidth(root.get_figwidth() + width + 0.15)  # the legend and its gap to the axes
    return legend


def _covers_data(ax: Axes, frame: Bbox) -> bool:
    from matplotlib.transforms import Bbox

    inside = Bbox.intersection(frame, ax.bbox)  # the part of the box over the axes, where lines are drawn
    if inside is None:
        return False
    for line in ax.get_lines():
        if line.get_gid() is None or not line.get_visible():
            continue
        path = line.get_transform().transform_path(line.get_path())
        if line.get_linestyle() not in ("None", "", " ") and path.intersects_bbox(inside, filled=False):
            return True
        if line.get_marker() not in ("None", "", " ", None) and inside.padded(line.get_markersize()).count_contains(
                path.vertices):
            return True
    for points in ax.collections:
        offsets = np.asarray(points.get_offsets())
        if offsets.size and inside.count_contains(points.get_offset_transform().transform(offsets)):
            return True
    return False
