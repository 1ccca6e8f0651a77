"""Analysis subcommands: ``encode``, ``ladder``, ``context``, ``shift``, ``dot``, ``alias``.

Each prints a table by default and the same data with ``--json``; every
number comes from the public API.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from ..errors import PosEncError, check_positions, show_value
from ..sinusoidal.encoding import encode
from ..sinusoidal.frequencies import context_report, frequencies, wavelengths
from ..sinusoidal.shift import shift
from ..sinusoidal.similarity import aliasing, similarity
from ..support.layout import sin_cos_views
from ..support.vocabulary import ChannelLayout
from ._base import (
    CommandError,
    add_output_options,
    at_least,
    channel_roles,
    command,
    emit_json,
    fixed,
    model_options,
    pos_text,
    position,
    real,
    render_table,
    sig,
    vector_text,
)
from .grid import context_grid, grid_options, ladder_grid, wants_grid
from .rope import context_rope, ladder_rope, rope_options, wants_rope

__all__: list[str] = []

_TOL = 1e-14  # T_k·PE(p) against PE(p + k): a few float64 roundings of values <= 1


def _header(args: argparse.Namespace, *extra: str) -> str:
    parts = [f"d_model {args.d_model}", f"base {args.base:g}", *extra]
    return ", ".join(parts)


# ---------------------------------------------------------------- encode

def _encode_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("positions", nargs="+", type=position, metavar="POS", help="positions (3, -2.5, 1e6, 2pi)")
    model_options(p, layout=True, dtype=True)
    add_output_options(p)


def _formula(layout: str, d: int) -> str:
    """Where pair i's sine and cosine sit in ``layout``: the heading of ``encode``."""
    if layout == "split":
        return f"PE(pos, i) = sin(ω_i·pos), PE(pos, {d // 2}+i) = cos(ω_i·pos), i < {d // 2}"
    return "PE(pos, 2i) = sin(ω_i·pos), PE(pos, 2i+1) = cos(ω_i·pos)"


@command("encode", "the encoding PE(pos) of each position, channel by channel (Ex 1, 6)", _encode_setup)
def encode_cmd(args: argparse.Namespace) -> int:
    enc = encode(args.positions, args.d_model, base=args.base, layout=args.layout, dtype=args.dtype)
    enc = enc.reshape(len(args.positions), args.d_model)
    w = frequencies(args.d_model, args.base)
    roles = channel_roles(args.d_model, args.layout)
    if args.json:
        emit_json({
            "d_model": args.d_model, "base": args.base, "layout": args.layout, "dtype": args.dtype,
            "positions": list(args.positions), "frequencies": w, "encoding": enc.astype(np.float64),
        })
        return 0
    print(f"PE(pos): {_header(args, f'layout {args.layout}', args.dtype)}; {_formula(args.layout, args.d_model)}")
    print()
    heads = ["ch", "i", "fn", "ω_i"] + [f"PE({pos_text(p)})" for p in args.positions]
    rows = [
        [str(ch), str(i), fn, sig(float(w[i]), args.digits)] + [fixed(float(v), args.digits) for v in enc[:, ch]]
        for ch, (i, fn) in enumerate(roles)
    ]
    print(render_table(heads, rows, "rrlr" + "r" * len(args.positions)))
    if args.d_model <= 16:
        print()
        width = max(len(pos_text(p)) for p in args.positions)
        for p, row in zip(args.positions, enc, strict=True):
            print(f"  PE({pos_text(p)}){' ' * (width - len(pos_text(p)))} = {vector_text(row, args.digits)}")
    return 0


# ---------------------------------------------------------------- ladder

def _ladder_setup(p: argparse.ArgumentParser) -> None:
    model_options(p)
    p.add_argument("--context", type=real, metavar="C", help="also count each pair's turns over C positions")
    rope_options(p)
    grid_options(p)
    add_output_options(p)


@command("ladder", "per frequency pair: ω_i, wavelength, turns over a context (Ex 2, 3, 7)", _ladder_setup)
def ladder_cmd(args: argparse.Namespace) -> int:
    if wants_grid(args):
        if args.context is not None:
            raise CommandError("--context with --grid: the grid's sizes are the context of each axis")
        return ladder_grid(args)
    if wants_rope(args):
        return ladder_rope(args)
    w = frequencies(args.d_model, args.base)
    lam = wavelengths(args.d_model, args.base)
    rep = None if args.context is None else context_report(args.context, args.d_model, args.base)
    if args.json:
        data: dict[str, object] = {"d_model": args.d_model, "base": args.base, "omega": w, "wavelength": lam}
        if rep is not None:
            data.update(context=rep.context, loops=rep.loops, wraps=rep.loops > 1.0,
                        wrapped_channels=rep.wrapped_channels)
        emit_json(data)
        return 0
    print(f"frequency ladder ω_i = base^(-2i/d_model), λ_i = 2π/ω_i: {_header(args)}, {len(w)} pairs")
    print()
    heads = ["i", "channels", "ω_i", "λ_i (positions)"]
    if rep is not None:
        heads += [f"turns over {rep.context:g}", "wraps"]
    rows = []
    for i in range(len(w)):
        row = [str(i), f"{2 * i}, {2 * i + 1}", sig(float(w[i]), args.digits), sig(float(lam[i]), args.digits)]
        if rep is not None:
            loops = float(rep.loops[i])
            row += [sig(loops, max(args.digits - 2, 3)), "yes" if loops > 1.0 else "no"]
        rows.append(row)
    print(render_table(heads, rows, "rrrrrl"))
    print()
    print(f"  λ_max = 2π·base^((d-2)/d) = {sig(float(lam[-1]), args.digits)} positions (pair {len(w) - 1})")
    if rep is not None:
        slow = "wraps" if rep.wraps else "does not wrap"
        print(f"  {rep.wrapped_channels} of {len(w)} pairs wrap over {rep.context:g} positions; "
              f"the slowest {slow} ({float(rep.loops[-1]):.4g} turns)")
    return 0


# ---------------------------------------------------------------- context

def _context_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("context", type=real, nargs="?", metavar="C",
                   help="context length in positions (leave out with --grid)")
    model_options(p)
    p.add_argument("--check", action="store_true", help="exit 1 when the slowest channel wraps (for scripts)")
    rope_options(p)
    grid_options(p)
    add_output_options(p)


@command("context", "does the base suffice for C positions? λ_max and the smallest base that does (Ex 7)",
         _context_setup)
def context_cmd(args: argparse.Namespace) -> int:
    if wants_grid(args):
        if args.context is not None:
            raise CommandError("give either a context length C or --grid H,W[,T], not both")
        return context_grid(args)
    if args.context is None:
        raise CommandError("the following arguments are required: C (or --grid H,W[,T])")
    if wants_rope(args):
        return context_rope(args)
    r = context_report(args.context, args.d_model, args.base)
    status = 1 if (args.check and r.wraps) else 0
    n = len(r.loops)
    if args.json:
        emit_json({
            "context": r.context, "d_model": r.d_model, "base": r.base, "max_wavelength": r.max_wavelength,
            "slowest_loops": float(r.loops[-1]), "wraps": r.wraps, "suffices": r.suffices,
            "wrapped_channels": r.wrapped_channels, "pairs": n,
            "min_base": r.min_base if math.isfinite(r.min_base) else None,
        })
        return status
    d = args.digits
    mb = at_least(r.min_base, d) if math.isfinite(r.min_base) else "none (d_model 2: one pair, λ = 2π for every base)"
    print(f"context {r.context:g} positions: {_header(args)}")
    print()
    rows = [
        ["λ_max = 2π·base^((d-2)/d)", f"{sig(r.max_wavelength, d)} positions"],
        [f"turns of the slowest pair (i = {n - 1})", sig(float(r.loops[-1]), max(d - 2, 3))],
        ["pairs that turn more than once", f"{r.wrapped_channels} of {n}"],
        ["smallest base that does not wrap", mb],
    ]
    print(render_table(["", ""], rows, "ll").split("\n", 1)[1])
    print()
    if r.wraps:
        fix = f"; use base >= {mb}" if math.isfinite(r.min_base) else ""
        print(f"FAILS: base {r.base:g} wraps: the slowest channel turns {float(r.loops[-1]):.4g} times over "
              f"{r.context:g} positions (λ_max {sig(r.max_wavelength, d)} < {r.context:g}){fix}")
    else:
        print(f"OK: base {r.base:g} suffices: the slowest channel turns {float(r.loops[-1]):.4g} times over "
              f"{r.context:g} positions (λ_max {sig(r.max_wavelength, d)} >= {r.context:g})")
    return status


# ---------------------------------------------------------------- shift

def _shift_setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("--pos", type=position, required=True, metavar="P", help="the source position")
    p.add_argument("--by", type=position, required=True, metavar="K", help="the offset k (negative: backwards)")
    model_options(p, layout=True)
    add_output_options(p)


def _blocks(k: float, d: int, base: float, layout: ChannelLayout) -> tuple[np.ndarray, np.ndarray]:
    """cos φ_i and sin φ_i of every 2×2 block of T_k, read off T_k applied to basis vectors.

    T_k acts on (sin, cos) of pair i as [[cos φ, sin φ], [-sin φ, cos φ]]; on
    (1, 0) it gives (cos φ, -sin φ). Using :func:`posenc.shift` keeps memory
    O(d) where the full matrix would be d×d.
    """
    e = np.zeros(d)
    s, _ = sin_cos_views(e, d // 2, layout)
    s[:] = 1.0
    te = shift(e, k, base=base, layout=layout)
    ts, tc = sin_cos_views(te, d // 2, layout)
    return ts.copy(), -tc


def _column(top: float, bottom: float, digits: int) -> tuple[str, str]:
    """A 2-vector printed as a column, brackets aligned."""
    a, b = fixed(top, digits), fixed(bottom, digits)
    w = max(len(a), len(b))
    return f"[{a:>{w}}]", f"[{b:>{w}}]"


@command("shift", "T_k: the rotation that maps PE(p) onto PE(p + k), block by block (Ex 5)", _shift_setup)
def shift_cmd(args: argparse.Namespace) -> int:
    d, n, lay, k = args.d_model, args.d_model // 2, args.layout, args.by
    check_positions(args.pos, "p")
    check_positions(k, "k")
    src = encode(args.pos, d, base=args.base, layout=lay, dtype=np.float64)
    cphi, sphi = _blocks(k, d, args.base, lay)  # checks k as typed before the sum below is formed
    target_pos = args.pos + k
    check_positions(target_pos, "the target P + K")
    tgt = encode(target_pos, d, base=args.base, layout=lay, dtype=np.float64)
    ss, sc = sin_cos_views(src, n, lay)
    # the seed's arithmetic, row by row: top = cos φ·sin θ + sin φ·cos θ
    rot_s = cphi * ss + sphi * sc
    rot_c = -sphi * ss + cphi * sc
    ts, tc = sin_cos_views(tgt, n, lay)
    diff = np.maximum(np.abs(rot_s - ts), np.abs(rot_c - tc))
    back = shift(tgt, -k, base=args.base, layout=lay)
    back_diff = float(np.max(np.abs(back - src)))
    ok, ok_back = bool(diff.max() <= _TOL), back_diff <= _TOL
    w = frequencies(d, args.base)
    status = 0 if (ok and ok_back) else 1
    if args.json:
        emit_json({
            "pos": args.pos, "by": k, "target": target_pos, "d_model": d, "base": args.base, "layout": lay,
            "omega": w, "cos_phi": cphi, "sin_phi": sphi,
            "blocks": [[[float(cphi[i]), float(sphi[i])], [float(-sphi[i]), float(cphi[i])]] for i in range(n)],
            "source": src, "rotated": np.stack([rot_s, rot_c], axis=1), "target_direct": tgt,
            "max_diff": float(diff.max()), "passed": ok, "inverse_max_diff": back_diff, "inverse_passed": ok_back,
        })
        return status
    p, q, dg = pos_text(args.pos), pos_text(target_pos), args.digits
    print(f"T_k with k = {pos_text(k)} maps PE({p}) onto PE({q}): {_header(args, f'layout {lay}')}")
    print("each pair, stacked (sin, cos) with the sine on top, turns by φ = ω_i·k: "
          "block [[cos φ, sin φ], [-sin φ, cos φ]]")
    for i in range(n):
        # φ printed for reading only; the block's entries come from shift
        print()
        print(f"  pair i = {i}   ω_i = {sig(float(w[i]), dg)}   φ = ω_i·k = {sig(float(w[i]) * float(k), dg)}")
        c, s, ms = (fixed(v, dg) for v in (float(cphi[i]), float(sphi[i]), -float(sphi[i])))
        bw = max(len(c), len(s), len(ms))
        cols = [
            ["T block", f"[{c:>{bw}}  {s:>{bw}}]", f"[{ms:>{bw}}  {c:>{bw}}]"],
            [f"PE({p})", *_column(float(ss[i]), float(sc[i]), dg)],
            ["", "", "="],
            [f"T·PE({p})", *_column(float(rot_s[i]), float(rot_c[i]), dg)],
            [f"PE({q}) direct", *_column(float(ts[i]), float(tc[i]), dg)],
            ["|Δ|", f"{diff[i]:.1e}", ""],
        ]
        rows = [[col[r] for col in cols] for r in (1, 2)]
        print(render_table([col[0] for col in cols], rows, "rrlrrl", indent=4))
    print()
    mark = "✓" if ok else "✗"
    print(f"  {mark} T_{pos_text(k)} · PE({p}) = PE({q}): max |Δ| = {diff.max():.1e} over {d} channels "
          f"(tolerance {_TOL:g})")
    mark = "✓" if ok_back else "✗"
    print(f"  {mark} T_{pos_text(-k)} is the inverse rotation (the other way round): "
          f"T_{pos_text(-k)} · PE({q}) = PE({p}), max |Δ| = {back_diff:.1e}")
    return status


# ---------------------------------------------------------------- dot

def _pair_setup(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("p", type=position, metavar="P", help=f"first position of the {what}")
    p.add_argument("q", type=position, metavar="Q", help=f"second position of the {what}")


def _dot_setup(p: argparse.ArgumentParser) -> None:
    _pair_setup(p, "dot product")
    model_options(p)
    add_output_options(p)


@command("dot", "PE(p)·PE(q) = Σ_i cos(ω_i·(p − q)): per-pair terms and their sum (Ex 8)", _dot_setup)
def dot_cmd(args: argparse.Namespace) -> int:
    d, n = args.d_model, args.d_model // 2
    terms = similarity(args.p, args.q, d, base=args.base, per_channel=True)
    total = float(similarity(args.p, args.q, d, base=args.base))
    rev = float(similarity(args.q, args.p, d, base=args.base))
    ep = encode(args.p, d, base=args.base, dtype=np.float64)
    eq = encode(args.q, d, base=args.base, dtype=np.float64)
    pair_dots = (ep * eq).reshape(n, 2).sum(axis=1)  # sin·sin + cos·cos of each pair (interleaved)
    w = frequencies(d, args.base)
    off = args.p - args.q
    if args.json:
        emit_json({
            "p": args.p, "q": args.q, "offset": off, "d_model": d, "base": args.base, "omega": w,
            "terms": terms, "sum": total, "pair_dots": pair_dots, "direct_dot": float(ep @ eq),
            "reversed_sum": rev,
        })
        return 0
    p, q, dg = pos_text(args.p), pos_text(args.q), args.digits
    print(f"PE({p})·PE({q}) = Σ_i cos(ω_i·(p − q)) with p − q = {pos_text(off)}: {_header(args)}")
    print()
    heads = ["i", "ω_i", "ω_i·(p − q)", "sin·sin + cos·cos", "cos(ω_i·(p − q))"]
    rows = [
        [str(i), sig(float(w[i]), dg), sig(float(w[i]) * float(off), dg),  # the angle is shown, not used
         fixed(float(pair_dots[i]), dg), fixed(float(terms[i]), dg)]
        for i in range(n)
    ]
    rows.append(["sum", "", "", fixed(float(ep @ eq), dg), fixed(total, dg)])
    print(render_table(heads, rows, "lrrrr"))
    print()
    same = "the same: cosine is even, only |p − q| matters" if rev == total else "DIFFERENT"
    print(f"  the gap reversed, PE({q})·PE({p}) = {fixed(rev, dg)}: {same}")
    return 0


# ---------------------------------------------------------------- alias

def _alias_setup(p: argparse.ArgumentParser) -> None:
    _pair_setup(p, "comparison")
    model_options(p, layout=True)
    p.add_argument("--atol", type=real, default=1e-9, help="dimensions closer than this coincide (default 1e-9)")
    add_output_options(p)


@command("alias", "do PE(p) and PE(q) coincide? per dimension, and the full-vector distance (Ex 4)", _alias_setup)
def alias_cmd(args: argparse.Namespace) -> int:
    d, lay = args.d_model, args.layout
    if not args.atol >= 0:  # the library words this one with str(): -1e+300 for the -1e300 typed
        raise PosEncError(f"atol must be >= 0, got {show_value(args.atol)}")
    a = aliasing(args.p, args.q, d, base=args.base, layout=lay, atol=args.atol)
    ep = encode(args.p, d, base=args.base, layout=lay, dtype=np.float64)
    eq = encode(args.q, d, base=args.base, layout=lay, dtype=np.float64)
    if args.json:
        emit_json({
            "p": a.p, "q": a.q, "d_model": d, "base": a.base, "layout": lay, "atol": a.atol,
            "pe_p": ep, "pe_q": eq, "diff": a.diff, "coincide": a.coincide, "pair_distance": a.pair_distance,
            "distance": a.distance, "collide": a.collide,
        })
        return 0
    p, q, dg = pos_text(args.p), pos_text(args.q), args.digits
    print(f"PE({p}) against PE({q}): {_header(args, f'layout {lay}')}; a dimension coincides when "
          f"|Δ| <= {a.atol:g}")
    print()
    heads = ["ch", "i", "fn", f"PE({p})", f"PE({q})", "|Δ|", "coincide"]
    rows = [
        [str(ch), str(i), fn, fixed(float(ep[ch]), dg), fixed(float(eq[ch]), dg), f"{a.diff[ch]:.2e}",
         "yes" if a.coincide[ch] else "no"]
        for ch, (i, fn) in enumerate(channel_roles(d, lay))
    ]
    print(render_table(heads, rows, "rrlrrrl"))
    print()
    same = int(np.count_nonzero(a.coincide))
    if a.collide:
        print(f"  COLLIDE: all {d} dimensions coincide; |PE({p}) − PE({q})| = {a.distance:.3e}")
    else:
        print(f"  the vectors differ: {same} of {d} dimensions coincide, but |PE({p}) − PE({q})| = "
              f"{fixed(a.distance, dg)}")
    return 0
