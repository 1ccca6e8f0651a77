"""Diffusion timesteps in JAX: :func:`posenc.timestep_embedding` with t traced, exact in the graph.

The presets are :mod:`posenc.timesteps`' (resolved on the host at trace time);
the angle t·ω_k is reduced with 32-bit integer operations
(:mod:`posenc.jax._rows`), so there is no float64 and no dot in the jaxpr.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Any

import jax.numpy as jnp
import numpy as np

import jax

from ..errors import PosEncError, check_int
from ..exact.fixed import fixed_ladder
from ..support.memory import shape_of
from ..support.signatures import parameters_of
from ..timesteps import functions
from ..timesteps.conventions import Flux, TimestepConvention, TimestepPlan
from ..timesteps.embedding import timestep_embedding as numpy_timestep_embedding
from ._rows import rounds_to_odd, sincos_rows
from .inputs import as_input, check_output, check_traced_positions
from .rope import _out_dtype

__all__ = ["JAX_TIMESTEPS", "JaxTimesteps", "RoundedPlan", "timestep_embedding"]

#: name -> (significand bits, smallest normal exponent, largest finite value) of the roundings JAX can do in float32
_ROUNDINGS = {"float32": (24, -126, float(np.finfo(np.float32).max)), "float16": (11, -14, 65504.0),
              "bfloat16": (8, -126, float.fromhex("0x1.fep127"))}


class JaxTimesteps:
    """The :class:`~posenc.timesteps.backend.TimestepBackend` primitives over JAX arrays, traced or not.

    t is read by :mod:`posenc.jax.inputs`' rule (int32, float32 and narrower
    floats, traced or concrete); the plan is cached per (preset, dim, t's
    dtype) and held to the 32-bit exact range, Flux's product folded into it
    or rounded in float32 (:class:`RoundedPlan`); the rows are built in the
    graph from 32-bit integers (:mod:`posenc.jax._rows`).
    """

    name = "jax"

    def timestep_dtype(self, dtype: Any) -> Any:
        return _out_dtype(dtype)

    def check_timesteps(self, t: Any, dim: int, dtype: Any) -> None:
        shape = shape_of(t)
        if shape is not None:  # a ragged t: the times' check names it
            check_output((*shape, dim), "timestep embedding", dtype=dtype)

    def timestep_plan(self, preset: TimestepConvention, dim: Any, t: Any) -> RoundedPlan:
        return _plan(preset, dim, _given_dtype(as_input(t, "t")))

    def timestep_times(self, t: Any) -> jax.Array:
        return check_traced_positions(as_input(t, "t"), "t")

    def timestep_rows(self, times: jax.Array, preset: TimestepConvention, plan: TimestepPlan, dtype: Any) -> jax.Array:
        rounding = plan.rounding if isinstance(plan, RoundedPlan) else None
        if rounding is not None:
            times = _rounded_product(times, *rounding)
        return render(plan, times, rounds_to_odd(dtype)).astype(dtype)


#: the JAX primitives (no state but the plans' cache: one is enough)
JAX_TIMESTEPS = JaxTimesteps()


@dataclass(frozen=True, eq=False)
class RoundedPlan(TimestepPlan):
    """A plan in the 32-bit exact range, with the (dtype, factor) Flux's ``time_factor·t`` is rounded to first."""

    rounding: tuple[str, float] | None = None


@parameters_of(numpy_timestep_embedding, dtype=jnp.float32)
def timestep_embedding(*args: Any, **kwargs: Any) -> jax.Array:
    """The sinusoidal embedding of (traced) diffusion timesteps, ``[..., dim]``: :func:`posenc.timestep_embedding`.

    Args:
        t: ``[...]`` int32 steps (int64 with ``jax_enable_x64``), or float32
            (bfloat16, float16) fractional steps or continuous t, traced or
            not. A traced float t at or beyond 2**31 in magnitude (or NaN,
            inf), or a traced int64 outside int32, gives NaN channels in its
            rows, never other values; a concrete one is refused.
        dim: output channels, >= 1 (static; odd: the last channel is zero).
        convention: a preset of :mod:`posenc.timesteps` or its name (static):
            ``"diffusers"``, ``"ddpm"``, ``"guided-diffusion"``, ``"flux"`` or a
            registered one. ``Flux(time_dtype=…)`` forms ``time_factor·t`` as
            the reference does in that dtype (t rounded to it, times
            float32(time_factor) in float32, rounded to it:
            :func:`posenc.timesteps.conventions.reference_times`);
            ``"float64"``: the exact product, where float64 holds it.
        dtype: float32, bfloat16 or float16.

    Returns:
        ``[..., dim]`` in ``dtype``. float32: for int32 t, the NumPy core's
        float32 bits; for every float32 t, the correctly rounded value of
        the formula evaluated exactly except where the exact value lies within
        2**-56 (relative) of a float32 rounding boundary, so always within 1
        float32 ulp (tests/jax/test_jax_timesteps.py measures it against
        mpmath). bfloat16 and float16: that exact value rounded once into
        them (not the float32 rounded again, one unit off at a midpoint).

    Raises:
        PosEncError: before any work, for a dim that is not an integer >= 1,
            an unknown convention, a frequency outside the 32-bit exact
            range, a t of another framework (a torch tensor), a float64 JAX t
            (``jax_enable_x64`` on: it would be rounded), an output larger
            than the device's memory, or a concrete t (NumPy, Python, a JAX
            array outside a trace) that is NaN, infinite, at or past 2**31, an
            integer outside int32 or a float that float32 does not hold.
            Under ``jax.jit`` JAX itself converts a NumPy int64 or float64
            argument to int32 or float32 before posenc sees it, silently (an
            int64 2**31 + 5 arrives as −2**31 + 5): pass
            :func:`posenc.jax.positions` of it instead, which checks it.

    >>> np.asarray(timestep_embedding(jnp.array([0, 1]), 4), np.float64).round(4).tolist()
    [[0.0, 0.0, 1.0, 1.0], [0.8415, 0.0001, 0.5403, 1.0]]
    >>> f = jax.jit(lambda t: timestep_embedding(t, 3, convention="flux"))
    >>> np.asarray(f(jnp.float32(0.5)), np.float64).round(4).tolist()
    [-0.8838, -0.4678, 0.0]
    """
    return functions.timestep_embedding(JAX_TIMESTEPS, *args, **kwargs)


def _given_dtype(t: Any) -> str:
    dt = np.dtype(t.dtype)
    return dt.name if dt.name in _ROUNDINGS else ("int" if dt.kind in "iub" else dt.name)


def _plan(preset: TimestepConvention, dim: Any, given: str) -> RoundedPlan:
    """The plan, with the (dtype, factor) the product is rounded to first, if any.

    ``dim``'s type is checked before the cache is asked: a cache key holds
    8 == 8.0 == np.float64(8) and 1 == True alike (and cannot hold ``[8]``),
    so a refusal must not depend on which call came first. The cache is
    typed, and a preset that cannot be hashed is planned afresh.
    """
    check_int(dim, "dim")
    try:
        hash(preset)
    except TypeError:
        return _planned(preset, dim, given)
    return _cached_plan(preset, dim, given)


def _planned(preset: TimestepConvention, dim: Any, given: str) -> RoundedPlan:
    plan, rounding = _resolve(preset, dim, given)
    try:
        fixed_ladder(plan.ladder)
    except PosEncError as exc:
        raise PosEncError(f"convention {preset!r} at dim = {dim}: {exc}") from None
    return RoundedPlan(plan.ladder, plan.cos_first, plan.dim, rounding)


_cached_plan = functools.lru_cache(maxsize=128, typed=True)(_planned)  # one ladder per preset: jit compiles once


def _resolve(preset: TimestepConvention, dim: Any, given: str) -> tuple[TimestepPlan, tuple[str, float] | None]:
    if not isinstance(preset, Flux) or preset.time_dtype is None:
        return preset.plan(dim), None
    name = preset.time_dtype
    if name == "input":  # as Flux.time_format: an integer t times a Python float is formed in float32 (torch's)
        name = given if given in (*_ROUNDINGS, "float64") else "float32"
    if name == "float64":  # float32 or int32 t times the factor: exact in float64 when the bits fit
        if _bits(preset.time_factor) + (31 if given == "int" else 24) > 53:
            raise PosEncError(f"{preset!r}: time_factor·t rounded to float64 is formed exactly in posenc.jax's "
                              f"32-bit arithmetic only where float64 holds it, not for a time_factor of "
                              f"{_bits(preset.time_factor)} significant bits (with or without jax_enable_x64); "
                              "use time_dtype=None for the exact product, or the NumPy API")
        return Flux(preset.time_factor, preset.max_period).plan(dim), None
    # the reference's rule (posenc.timesteps.conventions.reference_times, torch's multiply): t rounded to the
    # dtype, times float32(time_factor) in float32 (one rounding), then rounded to the dtype
    factor = np.float32(preset.time_factor) if preset.time_factor <= float(np.finfo(np.float32).max) else None
    if factor is None or not np.isfinite(factor):
        raise PosEncError(f"{preset!r}: time_factor {preset.time_factor!r} overflows float32, the dtype the "
                          f"reference multiplies t by it in")
    return Flux(preset.time_factor, preset.max_period, "float32").plan(dim), (name, float(factor))


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
    return round_float(tr * jnp.float32(factor), name)  # one float32 multiply (one rounding), then the dtype's


def render(plan: TimestepPlan, times: jax.Array, odd: bool = False) -> jax.Array:
    """``[..., plan.dim]`` float32: sin/cos of ``times·ω`` placed as the plan says (int32 or float32 ``times``).

    ``odd``: rounded to odd, for a cast to bfloat16 or float16 (:func:`~posenc.jax._rows.rounds_to_odd`).
    """
    n = len(plan.ladder)
    shape = times.shape
    parts = []
    if n:
        sin, cos = sincos_rows(times, plan.ladder, odd=odd)
        parts = [cos, sin] if plan.cos_first else [sin, cos]
    if plan.dim > 2 * n:
        parts.append(jnp.zeros((*shape, plan.dim - 2 * n), jnp.float32))
    return jnp.concatenate(parts, axis=-1)
