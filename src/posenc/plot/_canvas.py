"""What every figure shares: matplotlib on demand, one canvas, one palette.

Extra ``posenc[plot]``: matplotlib is imported only when drawing, through
:class:`matplotlib.figure.Figure` (no pyplot, no global state, no window), so
``import posenc.plot`` works without it and every ``plot_*`` raises
:class:`ImportError` naming the extra when it is missing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["BLUE", "GREY", "MAX_CELLS", "MISSING", "ORANGE", "RED", "canvas", "require"]

#: The message when matplotlib is not installed.
MISSING = "plotting needs matplotlib: pip install 'posenc[plot]'"

#: The palette of every figure.
BLUE, ORANGE, RED, GREY = "tab:blue", "tab:orange", "tab:red", "0.6"
MAX_CELLS = 1 << 24  # a heatmap larger than this is no longer a picture


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
