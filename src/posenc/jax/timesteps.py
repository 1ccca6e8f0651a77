"""Diffusion timesteps in JAX: :func:`posenc.timestep_embedding` with t traced, exact in the graph.

The presets are :mod:`posenc.timesteps`' (resolved on the host at trace time);
the angle t·ω_k is reduced with 32-bit integer operations
(:mod:`posenc.jax._rows`), so there is no float64 and no dot in the jaxpr.
"""

from __future__ import annotations

import functools
from typing import Any

import jax.numpy as jnp
import numpy as np

import jax

from ..errors import PosEncError
from ..exact.fixed import fixed_ladder
from ..timesteps.conventions import Flux, TimestepConvention, TimestepPlan, get
from ._rows import check_traced_positions, sincos_rows
from .rope import _out_dtype

__all__ = ["timestep_embedding"]

#: name -> (significand bits, smallest normal exponent, largest finite value) of the roundings JAX can do in float32
_ROUNDINGS = {"float32": (24, -126, float(np.finfo(np.float32).max)), "float16": (11, -14, 65504.0),
              "bfloat16": (8, -126, float.fromhex("0x1.fep127"))}


def timestep_embedding(t: Any, dim: Any, *, convention: Any = "diffusers", dtype: Any = jnp.float32) -> jax.Array:
    """The sinusoidal embedding of (traced) diffusion timesteps, ``[..., dim]``: :func:`posenc.timestep_embedding`.

    Args:
        t: ``[...]`` int32 steps, or float32 (bfloat16, float16) fractional
            steps or continuous t, traced or not. A float t at or beyond 2**31
            in magnitude (or NaN, inf) gives NaN channels, never other values.
        dim: output channels, >= 1 (static; odd: the last channel is zero).
        convention: a preset of :mod:`posenc.timesteps` or its name (static):
            ``"diffusers"``, ``"ddpm"``, ``"guided-diffusion"``, ``"flux"`` or a
            registered one. ``Flux(time_dtype=…)`` rounds t, then
            ``time_factor·t``, to that dtype as the checkpoint does
            (``"float64"``: the exact product, which it is for float32 t).
        dtype: float32, bfloat16 or float16.

    Returns:
        ``[..., dim]`` in ``dtype``. float32: for int32 t, the NumPy core's
        float32 bits; for every float32 t, the correctly rounded value of
        the formula evaluated exactly except where the exact value lies within
        2**-56 (relative) of a float32 rounding boundary, so always within 1
        float32 ulp (tests/jax/test_jax_timesteps.py measures it against
        mpmath). bfloat16 and float16 are the float32 values rounded once more.

    Raises:
        PosEncError: for a dim below 1, an unknown convention, a frequency
            outside the 32-bit exact range, or (for a concrete t) a NaN or
            infinite t, before any work.

    >>> np.asarray(timestep_embedding(jnp.array([0, 1]), 4), np.float64).round(4).tolist()
    [[0.0, 0.0, 1.0, 1.0], [0.8415, 0.0001, 0.5403, 1.0]]
    >>> f = jax.jit(lambda t: timestep_embedding(t, 3, convention="flux"))
    >>> np.asarray(f(jnp.float32(0.5)), np.float64).round(4).tolist()
    [-0.8838, -0.4678, 0.0]
    """
    preset = get(convention)
    dt = _out_dtype(dtype)
    given = _given_dtype(t)
    times = check_traced_positions(t.astype(jnp.float32) if given in ("bfloat16", "float16") else t, "t")
    plan, rounding = _plan(preset, dim, given)
    if rounding is not None:
        times = _rounded_product(times, *rounding)
    return render(plan, times).astype(dt)


def _given_dtype(t: Any) -> str:
    dt = getattr(t, "dtype", None)
    if dt is None:
        return "float64" if isinstance(t, float) else "int"
    name = jnp.dtype(dt).name
    return name if name in _ROUNDINGS else ("int" if np.dtype(dt).kind in "iub" else name)


@functools.lru_cache(maxsize=128)
def _plan(preset: TimestepConvention, dim: Any, given: str) -> tuple[TimestepPlan, tuple[str, float] | None]:
    """The plan, and the (dtype, factor) the product is rounded to first, if any (cached: one ladder per preset)."""
    plan, rounding = _resolve(preset, dim, given)
    try:
        fixed_ladder(plan.ladder)
    except PosEncError as exc:
        raise PosEncError(f"convention {preset!r} at dim = {dim}: {exc}") from None
    return plan, rounding


def _resolve(preset: TimestepConvention, dim: Any, given: str) -> tuple[TimestepPlan, tuple[str, float] | None]:
    if not isinstance(preset, Flux) or preset.time_dtype is None:
        return preset.plan(dim), None
    name = preset.time_dtype
    if name == "input":
        name = given if given in _ROUNDINGS else "float64"
    if name == "float64":  # float32 or int32 t times the factor: exact in float64 when the bits fit
        if _bits(preset.time_factor) + (31 if given == "int" else 24) > 53:
            raise PosEncError(f"{preset!r}: time_factor·t in float64 needs float64 (jax_enable_x64) for a "
                              f"time_factor of {_bits(preset.time_factor)} significant bits; use time_dtype=None")
        return Flux(preset.time_factor, preset.max_period).plan(dim), None
    bits = _ROUNDINGS[name][0]
    # float32: the float32 multiply rounds the product once, if the factor is a float32; narrower: the product
    # is exact in float32 when its bits fit, and rounded once by round_float
    room = 24 if name == "float32" else 24 - bits
    if _bits(preset.time_factor) > room or not np.float32(preset.time_factor) == preset.time_factor:
        raise PosEncError(f"{preset!r}: time_factor·t rounded to {name} needs, in JAX, a time_factor of at "
                          f"most {room} significant bits (a float32 that makes the product exact), got "
                          f"{preset.time_factor!r}; use time_dtype=None for the exact product")
    return Flux(preset.time_factor, preset.max_period, "float32").plan(dim), (name, preset.time_factor)


def _bits(x: float) -> int:
    """Significant bits of a positive float64."""
    m = int(np.ldexp(np.frexp(x)[0], 53))
    return 53 - (m & -m).bit_length() + 1


def round_float(x: jax.Array, name: str) -> jax.Array:
    """float32 x rounded once to nearest-even in ``name`` (float32, float16, bfloat16), as float32; overflow: NaN.

    The quantum is a power of two: x/q and its rint are exact in float32, so no
    compiler rewrite (excess precision for a float16 round trip) can move it.
    """
    bits, emin, biggest = _ROUNDINGS[name]
    if name == "float32":
        return x
    b = jax.lax.bitcast_convert_type(x, jnp.uint32)
    if name == "bfloat16":  # same exponent range: round the low 16 bits away, ties to even
        r = (b + 0x7FFF + ((b >> 16) & 1)) & jnp.uint32(0xFFFF0000)
        out = jax.lax.bitcast_convert_type(r, jnp.float32)
    else:
        e = ((b >> 23) & 0xFF).astype(jnp.int32) - 127
        q = jnp.ldexp(jnp.float32(1), jnp.maximum(e, emin) - (bits - 1))
        out = jnp.round(x / q) * q  # round half to even
    return jnp.where(jnp.abs(out) <= biggest, out, jnp.nan)


def _rounded_product(t: jax.Array, name: str, factor: float) -> jax.Array:
    t = t.astype(jnp.float32)
    tr = round_float(t, name)
    return round_float(tr * jnp.float32(factor), name)  # exact in float32 (_plan checks the bits)


def render(plan: TimestepPlan, times: jax.Array) -> jax.Array:
    """``[..., plan.dim]`` float32: sin/cos of ``times·ω`` placed as the plan says (int32 or float32 ``times``)."""
    n = len(plan.ladder)
    shape = times.shape
    parts = []
    if n:
        sin, cos = sincos_rows(times, plan.ladder)
        parts = [cos, sin] if plan.cos_first else [sin, cos]
    if plan.dim > 2 * n:
        parts.append(jnp.zeros((*shape, plan.dim - 2 * n), jnp.float32))
    return jnp.concatenate(parts, axis=-1)
