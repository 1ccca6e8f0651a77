"""The grid options of ``ladder`` and ``context``: ``--grid``, ``--convention``, ``--sections``.

``--grid H,W[,T]`` gives the grid's size along each axis, in the order of the
coordinates (rows, columns[, …]; for multi-axis RoPE the order of the
sections, e.g. T,H,W for M-RoPE). The ladder is then shown axis by axis:
which channels encode the axis, its frequencies and wavelengths, and how many
times each pair turns over the axis's size. With ``--rope --sections`` the
ladder is the multi-axis rotary one (:func:`posenc.rope_grid_report`);
otherwise the n-D sinusoid of ``--convention`` (:func:`posenc.grid_report`).
"""

from __future__ import annotations

import argparse
import itertools
from typing import Any

from ..rope.context import rope_grid_report
from ..rope.sections import LADDERS, SECTION_LAYOUTS
from ..sinusoidal.conventions_nd import NAMES as ND_NAMES
from ..sinusoidal.grid_analysis import GridReport, grid_report
from ._base import CommandError, emit_json, integers, render_table, sig, typed

__all__ = ["channel_text", "context_grid", "grid_options", "int_list", "ladder_grid", "wants_grid"]


def int_list(text: str) -> tuple[int, ...]:
    """``64,64`` → (64, 64): an argparse type for sizes, sections and patches, each read as every count is.

    Commas only: an ``x`` made ``0x10`` a grid of 0 by 10, where every count
    option refuses it.

    >>> [int(n) for n in int_list("4e0,6.0")]
    [4, 6]
    """
    return integers(text)


def grid_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--grid``, ``--convention``, ``--sections``, ``--section-layout`` and ``--ladder``."""
    parser.add_argument("--grid", type=int_list, metavar="H,W[,T]",
                        help="analyse an n-D grid of these sizes, axis by axis (coordinate order; "
                             "with --sections, the sections' order, e.g. T,H,W)")
    parser.add_argument("--convention", choices=ND_NAMES, default=None,
                        help="with --grid: the n-D sinusoid (default axial: each axis d/n channels)")
    parser.add_argument("--sections", type=int_list, metavar="S0,S1,...",
                        help="with --grid: multi-axis RoPE, rotary pairs per axis (e.g. 16,24,24); implies --rope")
    # None: left out, so the entry point's default (the spec's) applies and a spec beside it finds no clash
    parser.add_argument("--section-layout", choices=SECTION_LAYOUTS, default=None,
                        help="where each axis's pairs sit: contiguous (Qwen2-VL, default) or interleaved (Qwen3-VL)")
    parser.add_argument("--ladder", choices=LADDERS, default=None,
                        help="shared: one ladder over the head (M-RoPE, default); per_axis: each axis its own (axial)")


def wants_grid(args: argparse.Namespace) -> bool:
    """True when ``--grid`` was given; the grid-only options without it are an error."""
    if args.grid is None:
        if args.sections is not None or args.convention is not None:
            raise CommandError("--sections and --convention need --grid H,W[,T]")
        return False
    return True


def _report(args: argparse.Namespace) -> GridReport:
    rope = args.sections is not None or getattr(args, "rope", None) is not None
    if not rope:
        if getattr(args, "scaling", None) is not None or getattr(args, "rotary_dim", None) is not None:
            raise CommandError("--scaling/--rotary-dim with --grid need --sections (multi-axis RoPE)")
        return grid_report(args.grid, args.d_model, convention=args.convention, **typed(args, "base"))
    if args.sections is None:
        raise CommandError("--rope with --grid needs --sections S0,S1,... (rotary pairs per axis)")
    if args.convention is not None:
        raise CommandError("--convention names an n-D sinusoid; with --sections the grid is multi-axis RoPE")
    sections = {k: v for k, v in (("section_layout", args.section_layout), ("ladder", args.ladder)) if v is not None}
    return rope_grid_report(
        args.grid, args.d_model, sections=args.sections, **sections,
        base=args.base, scaling=args.scaling, rotary_dim=args.rotary_dim, layout=getattr(args, "rope", None) or "half",
    )


def channel_text(channels: tuple[int, ...]) -> str:
    """Channels compactly: ``0–127``, ``1, 4, 7, … 58`` or a short list.

    >>> channel_text((0, 1, 2, 3)), channel_text((1, 4, 7, 10, 13)), channel_text((2, 9))
    ('0–3', '1, 4, … 13 (step 3)', '2, 9')
    """
    c = list(channels)
    if len(c) <= 2:
        return ", ".join(map(str, c))
    step = c[1] - c[0]
    if all(b - a == step for a, b in itertools.pairwise(c)):
        return f"{c[0]}–{c[-1]}" if step == 1 else f"{c[0]}, {c[1]}, … {c[-1]} (step {step})"
    runs, start = [], 0
    for k in range(1, len(c) + 1):
        if k == len(c) or c[k] != c[k - 1] + 1:
            runs.append(f"{c[start]}–{c[k - 1]}" if k - 1 > start else str(c[start]))
            start = k
    return ", ".join(runs) if len(runs) <= 6 else f"{len(c)} channels: {', '.join(runs[:4])}, …"


def _json(rep: GridReport) -> dict[str, Any]:
    return {
        "sizes": list(rep.sizes), "d_model": rep.d_model, "convention": rep.convention, "wraps": rep.wraps,
        "axes": [{"axis": a.axis, "size": a.size, "channels": list(a.channels),
                  "pair_channels": [list(p) for p in a.pair_channels], "omega": a.omega,
                  "wavelength": a.wavelengths, "loops": a.loops, "wraps": a.wraps,
                  "wrapped_pairs": a.wrapped_pairs, "max_wavelength": a.max_wavelength} for a in rep.axes],
    }


def _sizes(rep: GridReport) -> str:
    return "×".join(map(str, rep.sizes))


def ladder_grid(args: argparse.Namespace) -> int:
    """``posenc ladder --grid``: each axis's channels and ladder, turns over the axis's size."""
    rep = _report(args)
    if args.json:
        emit_json(_json(rep))
        return 0
    print(f"grid {_sizes(rep)}: {rep.convention}; d_model {rep.d_model}; each axis's pairs against its size")
    for a in rep.axes:
        print()
        print(f"axis {a.axis} (size {a.size}): channels {channel_text(a.channels)}; {len(a.omega)} pairs")
        rows = [[str(i), ", ".join(map(str, a.pair_channels[i])), sig(float(a.omega[i]), args.digits),
                 sig(float(a.wavelengths[i]), args.digits), sig(float(a.loops[i]), max(args.digits - 2, 3)),
                 "yes" if a.loops[i] > 1.0 else "no"]
                for i in range(len(a.omega))]
        print(render_table(["i", "channels", "ω_i", "λ_i (positions)", f"turns over {a.size}", "wraps"], rows,
                           "rrrrrl", 4))
    print()
    for a in rep.axes:
        slow = "wraps" if a.wraps else "does not wrap"
        print(f"  axis {a.axis}: {a.wrapped_pairs} of {len(a.omega)} pairs wrap over {a.size} positions; "
              f"the slowest {slow} (λ_max {sig(a.max_wavelength, args.digits)})")
    return 0


def context_grid(args: argparse.Namespace) -> int:
    """``posenc context --grid``: does every axis's slowest pair cover the axis? (exit 1 with --check if not)."""
    rep = _report(args)
    status = 1 if (args.check and rep.wraps) else 0
    if args.json:
        emit_json(_json(rep))
        return status
    print(f"grid {_sizes(rep)}: {rep.convention}; d_model {rep.d_model}")
    print()
    rows = [[str(a.axis), str(a.size), channel_text(a.channels), sig(a.max_wavelength, args.digits),
             sig(float(a.loops.min()), max(args.digits - 2, 3)), f"{a.wrapped_pairs} of {len(a.omega)}",
             "WRAPS" if a.wraps else "ok"] for a in rep.axes]
    print(render_table(["axis", "size", "channels", "λ_max", "slowest turns", "pairs wrapping", ""], rows,
                       "rrlrrrl"))
    print()
    bad = [a for a in rep.axes if a.wraps]
    if bad:
        names = ", ".join(f"axis {a.axis}" for a in bad)
        print(f"FAILS: on {names} even the slowest pair turns more than once over the grid: every pair of "
              f"that axis repeats within it")
    else:
        print("OK: on every axis the slowest pair turns less than once over the grid")
    return status
