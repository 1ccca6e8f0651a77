"""Figures of the worked-examples site: the scalings' ladders, the precision view, M-RoPE sections, NeRF bands.

Each ``plot_*`` draws into ``ax`` when given (returning its figure) or into a
new figure, and returns the figure, as every posenc figure does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..fields import nerf_encoding
from ..rope import NTK, Linear, Llama3, YaRN, rope_frequencies
from ..rope.sections import Sections
from ._canvas import BLUE, GREY, ORANGE, RED, canvas, legend_clear_of_data

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["plot_nerf_bands", "plot_precision", "plot_scalings", "plot_sections", "plot_timestep_precision"]


def plot_scalings(head_dim: int = 128, *, base: float = 10000.0, factor: float = 8.0, original_max: int = 4096,
                  ax: Axes | None = None) -> Figure:
    """ω_i(scaled)/ω_i(plain) against the pair i for linear, NTK, YaRN and Llama 3.1's smoothing (log scale).

    Linear divides every pair by the factor; NTK raises the base, so the
    slowdown grows from 1 (pair 0) to the factor (the last); YaRN keeps the
    fast pairs, divides the slow ones and ramps between; Llama 3.1 does the
    same by wavelength against original_max/4 and original_max.

    >>> fig = plot_scalings(16)
    >>> [line.get_gid() for line in fig.axes[0].get_lines()]
    ['linear', 'ntk', 'yarn', 'llama3']
    """
    own = ax is None
    fig, ax = canvas(ax)
    plain = rope_frequencies(head_dim, base=base).inv_freq
    variants = (("linear", "linear", Linear(factor), GREY), ("ntk", "NTK-aware", NTK(factor), BLUE),
                ("yarn", "YaRN (β 32, 1)", YaRN(factor, original_max), ORANGE),
                ("llama3", "Llama 3.1 (1, 4)", Llama3(factor, 1.0, 4.0, original_max), RED))
    i = np.arange(plain.size)
    for gid, label, sc, colour in variants:
        r = rope_frequencies(head_dim, base=base, scaling=sc).inv_freq / plain
        ax.plot(i, r, marker="o", markersize=3, color=colour, label=label, gid=gid)
    ax.set_yscale("log", base=2)
    ax.set_xlabel("pair i (0 = fastest)")
    ax.set_ylabel("ω_i / ω_i of plain RoPE")
    ax.set_title(f"Scalings of a {head_dim}-channel head, base {base:g}, factor {factor:g}, trained at {original_max}")
    ax.grid(True, alpha=0.3)
    legend_clear_of_data(ax, grow=own)
    return fig


def _precision_lines(ax: Axes, x: np.ndarray, errors: dict[str, np.ndarray], first: str) -> None:
    ax.plot(x, errors["f32"], color=RED, label=first, gid="f32")
    ax.plot(x, errors["bf16"], color=ORANGE, label="bfloat16 table", gid="bf16")
    ax.plot(x, errors["f16"], color=BLUE, label="float16 table", gid="f16")
    ax.plot(x, np.zeros_like(x), color="black", linewidth=2.0, label="exact (posenc)", gid="exact")
    ax.set_xscale("log")
    ax.set_ylabel("largest |error| of cos, sin over the pairs")
    ax.legend(loc="upper left")
    ax.grid(True, alpha=0.3)


def plot_precision(head_dim: int = 128, *, base: float = 500000.0, scaling: Any = None,
                   ax: Axes | None = None) -> Figure:
    """The precision view: error of the usual RoPE tables against the exact value, positions 1 … 10^6.

    The float32 angle (transformers' ``(inv_freq.float() @ position.float())``)
    grows with the position, reaching about 0.04 at 10^6; the bfloat16 and
    float16 tables hold a fixed rounding error (2^-9, 2^-12); the exact curve
    is zero (:mod:`posenc.parity.precision` defines each).

    >>> fig = plot_precision(8)
    >>> [line.get_gid() for line in fig.axes[0].get_lines()]
    ['f32', 'bf16', 'f16', 'exact']
    """
    from ..parity.precision import POSITIONS, rope_precision

    fig, ax = canvas(ax)
    f = rope_frequencies(head_dim, base=base, scaling=scaling)
    _precision_lines(ax, POSITIONS, rope_precision(f.ladder), "float32 angle (p·inv_freq).float()")
    ax.set_xlabel("position p (log axis)")
    ax.set_title(f"RoPE cos/sin, head {head_dim}, base {base:g}: error against the exact value")
    return fig


def plot_timestep_precision(dim: int = 256, *, ax: Axes | None = None) -> Figure:
    """diffusers' float32 timestep embedding (and float16/bfloat16 tables) against the exact one, t = 1 … 10^6.

    >>> fig = plot_timestep_precision(8)
    >>> fig.axes[0].get_lines()[0].get_gid()
    'f32'
    """
    from ..parity.precision import POSITIONS, timestep_precision

    fig, ax = canvas(ax)
    _precision_lines(ax, POSITIONS, timestep_precision(dim), "diffusers float32 (t.float()·exp(…))")
    ax.set_xlabel("timestep t (log axis; diffusers' range is 0 … 999)")
    ax.set_title(f"Timestep embedding, dim {dim}: error against the exact value")
    return fig


def plot_sections(sections: tuple[int, ...] = (24, 20, 20), *, ax: Axes | None = None) -> Figure:
    """Which position axis (t, h, w) each pair of M-RoPE turns with: contiguous (Qwen2-VL) over interleaved (Qwen3-VL).

    Interleaved sections need axis 0 to hold the most pairs (Qwen3-VL's (24, 20, 20)).

    >>> fig = plot_sections((2, 1, 1))
    >>> fig.axes[0].images[0].get_array().shape
    (2, 4)
    """
    from matplotlib.colors import ListedColormap

    fig, ax = canvas(ax, (8.0, 3.2))
    rows = [Sections(sections, layout).pair_axes() for layout in ("contiguous", "interleaved")]
    ax.imshow(np.array(rows), aspect="auto", cmap=ListedColormap([BLUE, ORANGE, "tab:green"]), vmin=0, vmax=2,
              interpolation="nearest")
    ax.set_yticks([0, 1], ["contiguous\n(Qwen2-VL)", "interleaved\n(Qwen3-VL)"])
    ax.set_xlabel("pair i")
    n = sum(sections)
    ax.set_xticks(range(0, n, max(1, n // 8)))
    for k, name in enumerate("thw"[: len(sections)]):
        ax.plot([], [], "s", color=[BLUE, ORANGE, "tab:green"][k], label=f"axis {name}", gid=f"axis-{name}")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.3), ncol=3, frameon=False)
    ax.set_title(f"M-RoPE sections {tuple(sections)}: the axis each pair turns with")
    return fig


def plot_nerf_bands(n_freqs: int = 4, *, ax: Axes | None = None) -> Figure:
    """Neural-field bands sin(2^k·π·x) over x in [−1, 1], one line per band k (tiny-cuda-nn's ladder).

    >>> fig = plot_nerf_bands(2)
    >>> [line.get_gid() for line in fig.axes[0].get_lines()]
    ['band-0', 'band-1']
    """
    fig, ax = canvas(ax)
    x = np.linspace(-1.0, 1.0, 801)
    enc = nerf_encoding(x[:, None], n_freqs, convention="tcnn", dtype=np.float64)  # [sin, cos] of π·2^k·x per band
    for k in range(n_freqs):
        ax.plot(x, enc[:, 2 * k], label=f"sin(2^{k}·π·x)" if k < 4 else None, gid=f"band-{k}",
                linewidth=2.0 - 1.2 * k / max(1, n_freqs - 1))
    ax.set_xlabel("coordinate x")
    ax.set_ylabel("encoding")
    ax.set_title(f"Frequency bands (tiny-cuda-nn): each doubles the last (π·2^k, k < {n_freqs})")
    ax.legend(loc="lower left", fontsize=8)
    ax.grid(True, alpha=0.3)
    return fig
