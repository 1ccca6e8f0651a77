"""``posenc plot KIND --out FILE``: the figures of :mod:`posenc.plot`, as PNG or SVG.

Each kind is a :class:`PlotKind` in :data:`PLOT_KINDS`: the plotting
function and the options it takes. Options left out keep the function's
defaults, so ``posenc plot wave --out w.png`` and ``posenc tour`` draw the
same figure. A new kind (``plot rope``) is one more entry.
"""

from __future__ import annotations

import argparse
import io
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .. import plot
from ..bias.alibi import ALIBI_CONVENTIONS
from ..errors import PosEncError, show_value
from ..plot.bias import alibi_curves, bucket_steps, xpos_curves
from ..rope import ROPE_LAYOUTS
from ..sinusoidal.conventions_nd import NAMES as ND_NAMES
from ..sinusoidal.frequencies import wavelengths
from ..support.vocabulary import CHANNEL_LAYOUTS
from ..timesteps import CONVENTIONS as TIMESTEP_CONVENTIONS
from ._base import CommandError, command, emit_json, integer, position, real
from .files import atomic_file
from .grid import int_list
from .rope import scaling_spec
from .timesteps import check_times

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
    metavar: str | None = None  # the name the help's formulas use (``B^(-2i/D)``)


@dataclass(frozen=True)
class PlotKind:
    """A figure the command can draw."""

    name: str
    help: str
    draw: Callable[..., Any]
    options: tuple[Option, ...]
    data: Callable[..., dict[str, Any]] | None = None  # the plotted numbers, for --json (same options as draw)
    check: Callable[..., None] | None = None  # what the command refuses first, naming the value as typed

    def kwargs(self, args: argparse.Namespace | None) -> dict[str, Any]:
        """The options given in ``args`` (the function's defaults for the rest)."""
        return {o.dest: getattr(args, o.dest) for o in self.options
                if args is not None and getattr(args, o.dest, None) is not None}

    def figure(self, args: argparse.Namespace | None = None) -> Any:
        """Draw with the options given in ``args``."""
        kwargs = self.kwargs(args)
        if self.check is not None:
            self.check(**kwargs)
        return self.draw(**kwargs)


def _d(default: int) -> Option:
    return Option("--d-model", "d_model", integer, f"channels, a positive even integer (default {default})",
                  metavar="D")


_B = Option("--base", "base", real, "ω_i = B^(-2i/D) (default 10000)", metavar="B")
_REFS = "reference positions P (default {})"

def _yes(text: str) -> bool:
    """``yes``/``no`` (also true/false, 1/0): a flag that a plot option can carry."""
    low = text.strip().lower()
    if low in ("yes", "true", "1"):
        return True
    if low in ("no", "false", "0"):
        return False
    raise argparse.ArgumentTypeError(f"expected yes or no, got {text!r}")


def _plot_buckets(
    *, unidirectional: bool | None = None, num_buckets: int = 32, max_distance: int = 128, span: int | None = None
) -> Any:
    return plot.plot_buckets(bidirectional=not unidirectional, num_buckets=num_buckets, max_distance=max_distance,
                             span=span)


def _bucket_steps(
    *, unidirectional: bool | None = None, num_buckets: int = 32, max_distance: int = 128, span: int | None = None
) -> dict[str, Any]:
    return bucket_steps(bidirectional=not unidirectional, num_buckets=num_buckets, max_distance=max_distance,
                        span=span)


def _timesteps_check(*, dim: int = 128, convention: str = "diffusers", t_max: float = 1000.0) -> None:
    """t runs 0 … t_max: the largest angle is t_max's. The library judges the t it samples, and named
    the first too large (3.92e+297, t_max/255) where the user typed t_max (1e300)."""
    if isinstance(t_max, float) and math.isfinite(t_max) and t_max > 0:  # else the library's own refusal
        check_times([t_max], "t_max", convention, dim)


#: The largest value a log axis of matplotlib draws: past it, its tick labels overflow (an OverflowError at 1e280).
LOG_AXIS_MAX = 1e250


def _ladder_check(*, d_model: int = 512, base: float = 10000.0, context: float = 8192.0) -> None:
    """Refuse a ladder the log axis cannot draw, naming the value typed, before the library's ladder is built."""
    if isinstance(context, float) and math.isfinite(context) and context > LOG_AXIS_MAX:
        raise PosEncError("context must be <= 1e250 to draw (a log axis overflows past it), "
                          f"got {show_value(context)}")
    try:
        top = float(wavelengths(d_model, base).max())
    except PosEncError:
        return  # the library's own refusal, when it draws
    if top > LOG_AXIS_MAX:
        raise PosEncError(f"base {show_value(base)} with d_model {show_value(d_model)} gives λ_max = {top:.3g} "
                          "positions, past the 1e250 a log axis can draw: use a smaller base")


def _buckets_check(*, unidirectional: bool | None = None, num_buckets: int = 32, max_distance: int = 128,
                   span: int | None = None) -> None:
    """The default span is 1.5·max_distance: a refusal of it names the max_distance typed, not the span derived."""
    if span is None and isinstance(max_distance, int) and (3 * max_distance) // 2 > _SPAN_MAX:
        raise PosEncError(f"max_distance must be <= {(2 * _SPAN_MAX + 1) // 3} to draw with the default span "
                          f"(1.5·max_distance, at most {_SPAN_MAX}; or give --span), got {show_value(max_distance)}")


_SPAN_MAX = 100_000  # posenc.plot.plot_buckets' largest span


PLOT_KINDS: dict[str, PlotKind] = {
    k.name: k
    for k in (
        PlotKind("wave", "Figure s02: sin(pos) of the fastest channel, integer positions as dots, 2π marked",
                 plot.plot_wave,
                 (_d(4), _B, Option("--positions", "positions", integer, "dots at 0 … N-1 (default 8)", metavar="N"))),
        PlotKind("rotation", "Figure s03: a pair at P and at P + K, and the rotation between them",
                 plot.plot_rotation,
                 (Option("--pos", "pos", position, "source position (default 3)", metavar="P"),
                  Option("--by", "by", position, "offset; negative turns the other way (default 5)", metavar="K"),
                  _d(4), _B, Option("--pair", "pair", integer, "the pair shown (default: the slowest)", metavar="I"))),
        PlotKind("heatmap", "the table PE(pos, channel): positions down, channels across", plot.plot_heatmap,
                 (Option("--length", "length", integer, "positions (default 128)", metavar="N"),
                  Option("--start", "start", integer, "first position (default 0)", metavar="S"), _d(64), _B,
                  Option("--layout", "layout", str, "channel layout (default interleaved)", choices=CHANNEL_LAYOUTS))),
        PlotKind("kernel", "PE(p)·PE(p + Δ) against Δ for several p: it depends only on |Δ|", plot.plot_kernel,
                 (_d(64), _B,
                  Option("--max-offset", "max_offset", integer, "Δ from -M to M (default 100)", metavar="M"),
                  Option("--refs", "refs", position, _REFS.format("0 250 1000"), nargs="+", metavar="P"))),
        PlotKind("ladder", "wavelength of every pair on a log axis against a context length", plot.plot_ladder,
                 (_d(512), _B, Option("--context", "context", real, "context length (default 8192)", metavar="C")),
                 check=_ladder_check),
        PlotKind("rope", "RoPE: one query pair turning as the position advances; q·k against the offset",
                 plot.plot_rope,
                 (Option("--head-dim", "head_dim", integer, "channels per head (default 64)", metavar="H"),
                  Option("--base", "base", real, "ω_i = B^(-2i/H) (default 10000)", metavar="B"),
                  Option("--scaling", "scaling", scaling_spec,
                         "a long-context scaling, e.g. yarn:factor=4,original_max=32768; none when left out",
                         metavar="SPEC"),
                  Option("--layout", "layout", str, "pair layout (default half)", choices=ROPE_LAYOUTS),
                  Option("--pair", "pair", integer,
                         "the pair on the left; when left out, the one turning ~0.9 times over the points",
                         metavar="I"),
                  Option("--positions", "positions", integer, "points at 0 … N-1 on the left (default 24)",
                         metavar="N"),
                  Option("--max-offset", "max_offset", integer, "Δ from -M to M (default 200)", metavar="M"),
                  Option("--refs", "refs", position, "query positions P (default 0 1000 1e+06)", nargs="+",
                         metavar="P"))),
        PlotKind("grid", "2-D grids: cos similarity of one patch's encoding to every patch's, per n-D convention",
                 plot.plot_grid,
                 (Option("--grid", "sizes", int_list, "the grid H,W; 16,16 when omitted", metavar="H,W"),
                  _d(256), Option("--base", "base", real, "the base of the default (axial) convention (default 10000)",
                                  metavar="B"),
                  Option("--patch", "patch", int_list, "the reference patch I,J; the centre when omitted",
                         metavar="I,J"),
                  Option("--convention", "conventions", str, "conventions to draw; all of them when omitted", nargs="+",
                         choices=ND_NAMES))),
        PlotKind("alibi", "ALiBi: each head's bias −m_h·(i − j) against the distance", plot.plot_alibi,
                 (Option("--heads", "n_heads", integer, "heads (default 12)", metavar="N"),
                  Option("--convention", "convention", str, "slopes (default press)", choices=tuple(ALIBI_CONVENTIONS)),
                  Option("--max-distance", "max_distance", integer, "distances 0 … D (default 256)", metavar="D"),
                  Option("--penalty", "penalty", real, "the level P marked (default 1)", metavar="P")), alibi_curves),
        PlotKind("buckets", "T5: the bucket of each offset j − i", _plot_buckets,
                 (Option("--num-buckets", "num_buckets", integer, "buckets in all (default 32)", metavar="N"),
                  Option("--max-distance", "max_distance", integer,
                         "distances >= D share the last bucket (default 128)", metavar="D"),
                  Option("--unidirectional", "unidirectional", _yes,
                         "yes for T5's decoder; the encoder's bidirectional buckets when left out", metavar="yes|no"),
                  Option("--span", "span", integer, "offsets -S … S; 1.5·max-distance when left out", metavar="S")),
                 _bucket_steps, check=_buckets_check),
        PlotKind("xpos", "xPos: each pair's decay ζ_i^(Δ/scale_base) of q·k against the offset", plot.plot_xpos,
                 (Option("--rotary-dim", "rotary_dim", integer, "the rotated channels (default 64)", metavar="R"),
                  Option("--gamma", "gamma", real, "γ in ζ_i = (2i/R + γ)/(1 + γ) (default 0.4)", metavar="G"),
                  Option("--scale-base", "scale_base", real, "the offset over which pair i decays by ζ_i (default 512)",
                         metavar="S"),
                  Option("--max-offset", "max_offset", integer, "Δ from 0 … M (default 2048)", metavar="M")),
                 xpos_curves),
        PlotKind("timesteps", "diffusion timesteps: a preset's embedding over t, channels across, halves marked",
                 plot.plot_timesteps,
                 (Option("--dim", "dim", integer, "channels (default 128)", metavar="D"),
                  Option("--convention", "convention", str, "the preset (default diffusers)",
                         choices=tuple(TIMESTEP_CONVENTIONS)),
                  Option("--t-max", "t_max", real, "t from 0 to T (default 1000)", metavar="T")),
                 check=_timesteps_check),
    )
}


def save(fig: Any, path: Path, dpi: int = 100, *, linger: bool = False) -> None:
    """Write ``fig`` as PNG or SVG, chosen by the suffix, written aside and renamed.

    The figure is rendered into memory first, then written whole with
    :func:`posenc.cli.files.atomic_file`: a failed render, a full disk or a
    signal leaves the old file (or none), never a partial image. ``linger``
    as in :func:`~posenc.cli.files.atomic_file` (the command about to exit).
    """
    data = render(fig, path, dpi)
    with atomic_file(path, size=data.nbytes, linger=linger) as out:
        out.write(data)


def render(fig: Any, path: Path, dpi: int = 100) -> memoryview:
    """``fig`` as the bytes of a PNG or SVG file, the format chosen by ``path``'s suffix."""
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise CommandError(f"--out must end in {' or '.join(FORMATS)}, got {show_value(str(path))}")
    buf = io.BytesIO()
    # no timestamp in SVGs, so the same figure gives the same file
    fig.savefig(buf, format=fmt, dpi=dpi, metadata={"Date": None} if fmt == "svg" else None)
    return buf.getbuffer()


def _setup(p: argparse.ArgumentParser) -> None:
    kinds = p.add_subparsers(dest="kind", metavar="KIND", required=True)
    for kind in PLOT_KINDS.values():
        kp = kinds.add_parser(kind.name, help=kind.help, description=kind.help)
        kp.add_argument("--out", required=True, metavar="FILE", help="the file to write: .png or .svg")
        kp.add_argument("--dpi", type=integer, default=100, metavar="N", help="dots per inch of a PNG (default 100)")
        for o in kind.options:
            kp.add_argument(o.flag, dest=o.dest, type=o.type, nargs=o.nargs, choices=o.choices, help=o.help,
                            metavar=o.metavar)
        if kind.data is not None:
            kp.add_argument("--json", action="store_true", help="also print the plotted numbers as JSON")


@command("plot", "draw a figure (wave, rotation, heatmap, kernel, ladder, rope, grid, alibi, buckets, xpos, timesteps) "
                 "to a .png or .svg file", _setup)
def plot_cmd(args: argparse.Namespace) -> int:
    plot.require()  # say which extra is missing before any work
    path = Path(args.out)
    if path.suffix.lower() not in FORMATS:
        raise CommandError(f"--out must end in {' or '.join(FORMATS)}, got {show_value(args.out)}")
    if not 10 <= args.dpi <= 1000:
        raise CommandError(f"--dpi must be 10 … 1000, got {show_value(args.dpi)}")
    kind = PLOT_KINDS[args.kind]
    save(kind.figure(args), path, args.dpi, linger=bool(getattr(args, "as_command", False)))
    if getattr(args, "json", False) and kind.data is not None:
        emit_json({"wrote": str(path), "kind": kind.name, **kind.data(**kind.kwargs(args))})
    else:
        print(f"wrote {path}")
    return 0
