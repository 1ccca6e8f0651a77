"""``posenc timestep T --dim D --convention C``: a diffusion timestep's embedding, channel by channel."""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from ..errors import MAX_ANGLE, PosEncError, check_positions, show_value
from ..timesteps import CONVENTIONS, get, timestep_embedding
from ..timesteps.conventions import preset_times
from ._base import add_output_options, command, emit_json, fixed, integer, real, render_table, sig

__all__ = ["check_times"]


def check_times(values: Any, name: str, convention: Any, dim: int) -> None:
    """Refuse what :func:`posenc.timestep_embedding` refuses in ``values`` (a list), naming the value given.

    The library judges the angles t·ω after the preset's time factor and
    names the largest |t·factor| it met (``|p| = 10000000000000``); this
    names the t the user typed (``1e13``) and the bound on it.
    """
    times = check_positions(values, name)
    preset = get(convention)
    fastest = preset.plan(dim).ladder.fastest
    flat = preset_times(preset, times.reshape(-1), np.dtype(np.float64))
    angle = np.abs(flat) * fastest
    bad = np.flatnonzero(~(angle < MAX_ANGLE))
    if bad.size:
        k = int(bad[0])
        given = values[k] if isinstance(values, (list, tuple)) else values
        bound = abs(float(times.reshape(-1)[k])) * MAX_ANGLE / float(angle[k])
        folded = " (its time factor folded in)" if getattr(preset, "time_factor", 1) != 1 else ""
        who = preset.name or "the preset"
        raise PosEncError(f"{name} must keep every angle |t·ω| < 2**53 for exact sin/cos; {who}'s "
                          f"fastest frequency is ω = {fastest:.6g}{folded}: keep |{name}| < {bound:.6g}, "
                          f"got {show_value(given)}")


def _setup(p: argparse.ArgumentParser) -> None:
    p.add_argument("t", type=real, nargs="+", metavar="T", help="timesteps: integer steps, fractional, or t in [0, 1]")
    p.add_argument("--dim", type=integer, default=8, metavar="D", help="channels (default 8; odd ends with a zero)")
    p.add_argument("--convention", default="diffusers", choices=tuple(CONVENTIONS),
                   help="the preset (default diffusers: DDPM's shift of 1, [sin | cos])")
    add_output_options(p)


@command("timestep", "a diffusion timestep's sinusoidal embedding (diffusers, ddpm, guided-diffusion, flux), "
                     "exact, channel by channel", _setup)
def timestep_cmd(args: argparse.Namespace) -> int:
    preset = get(args.convention)
    check_times(args.t, "t", preset, args.dim)  # on the values as given: a refusal names the one typed (1e16)
    emb = timestep_embedding(np.array(args.t, dtype=np.float64), args.dim, convention=preset, dtype=np.float64)
    plan = preset.plan(args.dim)
    omega = plan.ladder.w0
    half = len(omega)
    roles = [("cos" if plan.cos_first else "sin", k) for k in range(half)]
    roles += [("sin" if plan.cos_first else "cos", k) for k in range(half)]
    roles += [("zero", -1)] * (plan.dim - 2 * half)
    if args.json:
        emit_json({"convention": repr(preset), "dim": plan.dim, "t": [float(t) for t in args.t],
                   "omega": omega, "channels": [{"role": r, "k": k} for r, k in roles], "embedding": emb})
        return 0
    print(f"{preset!r}, {plan.dim} channels: ω_k for k = 0 … {half - 1}, the angle ω_k·t"
          + (" (time factor folded into ω)" if getattr(preset, "time_factor", 1) != 1 else ""))
    heads = ["channel", "is", "ω_k"] + [f"t = {sig(float(t), 8)}" for t in args.t]
    rows = [[str(j), r if k < 0 else f"{r} ω_{k}·t", "" if k < 0 else sig(float(omega[k]), args.digits)]
            + [fixed(float(emb[i, j]), args.digits) for i in range(len(args.t))] for j, (r, k) in enumerate(roles)]
    print(render_table(heads, rows, "rll" + "r" * len(args.t)))
    return 0
