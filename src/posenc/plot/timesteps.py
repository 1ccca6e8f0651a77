"""The timestep figure: a preset's embedding over t, channels across, and its slowest and fastest channels."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import PosEncError, check_channels, check_real, show_value
from ..timesteps import get, timestep_embedding
from ._canvas import MAX_CELLS, canvas

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_timesteps"]


def plot_timesteps(dim: int = 128, *, convention: Any = "diffusers", t_max: float = 1000.0, steps: int = 256,
                   ax: Axes | None = None) -> Figure:
    """The embedding of t = 0 … t_max as an image: t down, channels across, the sin/cos halves marked.

    A flipped preset (``flip_sin_to_cos``, guided-diffusion, Flux) shows its
    cosine half on the left; with the shift of 1 the last column's frequency
    is exactly 1/max_period.
    """
    d = check_channels(dim, "dim")
    top = check_real(t_max, "t_max")
    if top <= 0:
        raise PosEncError(f"t_max must be > 0, got {show_value(t_max)}")
    if steps * d > MAX_CELLS:
        raise PosEncError(f"steps × dim must be <= {MAX_CELLS} cells to draw, got {steps} × {show_value(dim)}")
    preset = get(convention)
    plan = preset.plan(d)
    t = np.linspace(0.0, top, steps)
    data = timestep_embedding(t, d, convention=preset, dtype=np.float64)
    fig, ax = canvas(ax)
    im = ax.imshow(data, aspect="auto", cmap="RdBu_r", vmin=-1.0, vmax=1.0, interpolation="nearest",
                   extent=(-0.5, d - 0.5, top, 0.0))
    im.set_gid("embedding")
    fig.colorbar(im, ax=ax, label="embedding value")
    half = d // 2
    ax.axvline(half - 0.5, color="black", lw=1.0, ls="--", gid="halves")
    first, second = ("cos", "sin") if plan.cos_first else ("sin", "cos")
    ax.set_xlabel(f"channel (0 … {half - 1}: {first}, {half} … {2 * half - 1}: {second}"
                  + (", last: zero" if d % 2 else "") + "); frequency falls to the right")
    ax.set_ylabel("t")
    ax.set_title(f"Timestep embedding ({preset.name or type(preset).__name__}), {d} channels: [{first} | {second}]")
    return fig
