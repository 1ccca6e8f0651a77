"""Every figure of posenc (extra ``posenc[plot]``), one module per family.

matplotlib is imported only when drawing, through
:class:`matplotlib.figure.Figure` (no pyplot, no global state, no window), so
``import posenc.plot`` works without it and every ``plot_*`` raises
:class:`ImportError` naming the extra when it is missing.

Each ``plot_*`` draws into ``ax`` when given (returning its figure) or into a
new figure, and returns the figure; save it with ``fig.savefig("file.png")``.

>>> fig = plot_wave()
>>> [line.get_gid() for line in fig.axes[0].get_lines()]
[None, 'curve', 'period']
"""

from ._canvas import DRAWING, MISSING, require
from .bias import plot_alibi, plot_buckets, plot_xpos
from .families import plot_nerf_bands, plot_precision, plot_scalings, plot_sections, plot_timestep_precision
from .grid import plot_grid
from .rope import plot_rope
from .sinusoidal import plot_heatmap, plot_kernel, plot_ladder, plot_rotation, plot_wave
from .timesteps import plot_timesteps

__all__ = [
    "DRAWING",
    "MISSING",
    "plot_alibi",
    "plot_buckets",
    "plot_grid",
    "plot_heatmap",
    "plot_kernel",
    "plot_ladder",
    "plot_nerf_bands",
    "plot_precision",
    "plot_rope",
    "plot_rotation",
    "plot_scalings",
    "plot_sections",
    "plot_timestep_precision",
    "plot_timesteps",
    "plot_wave",
    "plot_xpos",
    "require",
]
