"""``posenc plot KIND --out FILE``: the figures of :mod:`posenc.plot`, as PNG or SVG.

Each kind is a :class:`PlotKind` in :data:`PLOT_KINDS`: the plotting
function and the options it takes. Options left out keep the function's
defaults, so ``posenc plot wave --out w.png`` and ``posenc tour`` draw the
same figure. A new kind (``plot rope``) is one more entry.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import plot
from ..layout import LAYOUTS
from ..rope import ROPE_LAYOUTS
from ..sinusoidal.conventions_nd import NAMES as ND_NAMES
from ._base import CommandError, command, integer, position, real
from .grid import int_list
from .rope import scaling_spec

__all__ = ["FORMATS", "PLOT_KINDS", "Option", "PlotKind", "save"]

#: File suffixes ``plot`` and ``tour`` write, and matplotlib's format names.
FORMATS = {".png": "png", ".svg": "svg"}


@dataclass(frozen=True)
class Option:
    """One command-line option of a plot kind, passed to its function as ``dest``."""

    flag: str
    dest: str
    type: Callable[[str], Any]
    help: str
    nargs: str | None = None
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class PlotKind:
    """A figure the command can draw."""

    name: str
    help: str
    draw: Callable[..., Any]
    options: tuple[Option, ...]

    def figure(self, args: argparse.Namespace | None = None) -> Any:
        """Draw with the options given in ``args`` (the function's defaults for the rest)."""
        kwargs = {o.dest: getattr(args, o.dest) for o in self.options
                  if args is not None and getattr(args, o.dest, None) is not None}
        return self.draw(**kwargs)


def _d(default: int) -> Option:
    return Option("--d-model", "d_model", integer, f"channels, a positive even integer (default {default})")


_B = Option("--base", "base", real, "ω_i = B^(-2i/D) (default 10000)")

PLOT_KINDS: dict[str, PlotKind] = {
    k.name: k
    for k in (
        PlotKind("wave", "Figure s02: sin(pos) of the fastest channel, integer positions as dots, 2π marked",
                 plot.plot_wave, (_d(4), _B, Option("--positions", "positions", integer, "dots 0 … N-1 (default 8)"))),
        PlotKind("rotation", "Figure s03: the pair at pos and at pos + by, and the rotation between them",
                 plot.plot_rotation,
                 (Option("--pos", "pos", position, "source position (default 3)"),
                  Option("--by", "by", position, "offset k; negative turns the other way (default 5)"),
                  _d(4), _B, Option("--pair", "pair", integer, "pair i (default: the slowest)"))),
        PlotKind("heatmap", "the table PE(pos, channel): positions down, channels across", plot.plot_heatmap,
                 (Option("--length", "length", integer, "positions (default 128)"),
                  Option("--start", "start", integer, "first position (default 0)"), _d(64), _B,
                  Option("--layout", "layout", str, "channel layout (default interleaved)", choices=LAYOUTS))),
        PlotKind("kernel", "PE(p)·PE(p + Δ) against Δ for several p: it depends only on |Δ|", plot.plot_kernel,
                 (_d(64), _B, Option("--max-offset", "max_offset", integer, "Δ from -M to M (default 100)"),
                  Option("--refs", "refs", position, "reference positions (default 0 250 1000)", nargs="+"))),
        PlotKind("ladder", "wavelength of every pair on a log axis against a context length", plot.plot_ladder,
                 (_d(512), _B, Option("--context", "context", real, "context length (default 8192)"))),
        PlotKind("rope", "RoPE: one query pair turning as the position advances; q·k against the offset",
                 plot.plot_rope,
                 (Option("--head-dim", "head_dim", integer, "channels per head (default 64)"), _B,
                  Option("--scaling", "scaling", scaling_spec,
                         "a long-context scaling, e.g. yarn:factor=4,original_max=32768; none when left out"),
                  Option("--layout", "layout", str, "pair layout (default half)", choices=ROPE_LAYOUTS),
                  Option("--pair", "pair", integer,
                         "the pair on the left; when left out, the one turning ~0.9 times over the points"),
                  Option("--positions", "positions", integer, "points 0 … N-1 on the left (default 24)"),
                  Option("--max-offset", "max_offset", integer, "Δ from -M to M (default 200)"),
                  Option("--refs", "refs", position, "query positions (default 0 1000 1e+06)", nargs="+"))),
        PlotKind("grid", "2-D grids: cos similarity of one patch's encoding to every patch's, per n-D convention",
                 plot.plot_grid,
                 (Option("--grid", "sizes", int_list, "the grid H,W (default 16,16)"),
                  _d(256), Option("--base", "base", real, "the base of the default (axial) convention (default 10000)"),
                  Option("--patch", "patch", int_list, "the reference patch I,J; the centre when omitted"),
                  Option("--convention", "conventions", str, "conventions to draw; all of them when omitted", nargs="+",
                         choices=ND_NAMES))),
    )
}


def save(fig: Any, path: Path, dpi: int = 100) -> None:
    """Write ``fig`` as PNG or SVG, chosen by the suffix."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise CommandError(f"--out must end in {' or '.join(FORMATS)}, got {str(path)!r}")
    # no timestamp in SVGs, so the same figure gives the same file
    fig.savefig(path, format=fmt, dpi=dpi, metadata={"Date": None} if fmt == "svg" else None)


def _setup(p: argparse.ArgumentParser) -> None:
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)
    for kind in PLOT_KINDS.values():
        kp = kinds.add_parser(kind.name, help=kind.help, description=kind.help)
        kp.add_argument("--out", required=True, metavar="FILE", help="the file to write: .png or .svg")
        kp.add_argument("--dpi", type=integer, default=100, help="resolution of a PNG (default 100)")
        for o in kind.options:
            kp.add_argument(o.flag, dest=o.dest, type=o.type, nargs=o.nargs, choices=o.choices, help=o.help)


@command("plot", "draw a figure (wave, rotation, heatmap, kernel, ladder, rope, grid) to a .png or .svg file", _setup)
def plot_cmd(args: argparse.Namespace) -> int:
    plot.require()  # say which extra is missing before any work
    path = Path(args.out)
    if path.suffix.lower() not in FORMATS:
        raise CommandError(f"--out must end in {' or '.join(FORMATS)}, got {args.out!r}")
    if not 10 <= args.dpi <= 1000:
        raise CommandError(f"--dpi must be 10 … 1000, got {args.dpi}")
    save(PLOT_KINDS[args.kind].figure(args), path, args.dpi)
    print(f"wrote {path}")
    return 0
