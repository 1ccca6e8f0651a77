"""Exact rows inside the traced program: the 32-bit path of :mod:`posenc.exact.fixed` on ``jax.numpy``.

Everything here runs on int32/uint32 values (no float64, no dot), so the rows
are the NumPy core's float32 rows bit for bit with ``jax_enable_x64`` off, on
CPU, GPU or TPU, inside ``jit``, ``vmap``, ``grad`` and ``shard_map``.
"""

from __future__ import annotations

import functools
from typing import Any

import jax.numpy as jnp
import numpy as np

import jax

from ..errors import PosEncError, show_value
from ..exact.fixed import FixedLadder, fixed_ladder, scale_words
from ..exact.fixed_phase import phase_of_floats, phase_of_integers
from ..exact.fixed_sincos import Ops, sincos_f32
from ..exact.ladder import Ladder

__all__ = ["JAX_OPS", "check_traced_positions", "sincos_rows"]

JAX_OPS = Ops(
    jnp,
    jax.lax.clz,
    lambda b: jax.lax.bitcast_convert_type(b, jnp.float32),
    lambda t: jax.lax.bitcast_convert_type(t.astype(jnp.float32), jnp.uint32),
)

#: float positions at or beyond this magnitude (or NaN) give NaN rows: the exact range of the 32-bit path.
FLOAT_LIMIT = 2.0**31


def check_traced_positions(positions: Any, name: str = "positions", limit: float | None = FLOAT_LIMIT) -> jax.Array:
    """positions as an int32 or float32 array; static checks only on a traced value, every check on a concrete one.

    Integer positions are int32 (every int32 is in range); float positions
    float32 (|t| < ``limit``, else NaN rows; None: every finite float32). A
    NumPy or Python value is checked here: an integer outside int32, a float
    that float32 does not hold exactly, a NaN or infinity, or one at or past
    ``limit``, is refused rather than silently moved.
    """
    if isinstance(positions, jax.Array):
        arr = positions
    else:
        try:
            host = np.asarray(positions)
        except (ValueError, TypeError, OverflowError) as exc:  # ragged lists, huge Python ints
            raise PosEncError(f"{name} must be an array of integers or floats, got {show_value(positions)}") from exc
        if host.dtype.kind not in "iuf":
            raise PosEncError(f"{name} must be integers or floats, got dtype {host.dtype} ({show_value(positions)})")
        if host.dtype.kind in "iu" and host.size and (host.min() < -(2**31) or host.max() >= 2**31):
            raise PosEncError(f"{name} must fit int32 (JAX without x64), got values up to {host.max()}")
        if host.dtype.kind == "f":
            if not np.isfinite(host).all() or (limit is not None and (np.abs(host) >= limit).any()):
                raise PosEncError(f"{name} must be finite" + ("" if limit is None else " with |p| < 2**31"))
            with np.errstate(over="ignore"):  # past float32's range (limit None): inf, which is not equal
                narrow = host.astype(np.float32)
            if host.dtype.itemsize > 4 and not np.array_equal(narrow, host):
                raise PosEncError(
                    f"{name} must be float32 values (JAX without x64 holds no float64): a float64 position "
                    "would be rounded before any encoding; pass integers, or float32 values"
                )
            host = narrow
        elif host.dtype.kind in "iu":
            host = host.astype(np.int32)
        arr = jnp.asarray(host)
    kind = np.dtype(arr.dtype).kind
    if kind in "iu":
        if np.dtype(arr.dtype).itemsize > 4 or (kind == "u" and np.dtype(arr.dtype).itemsize == 4):
            raise PosEncError(f"{name} must be int32 (or narrower), got {arr.dtype}")
        return arr.astype(jnp.int32)
    if kind == "f":
        return arr.astype(jnp.float32)
    raise PosEncError(f"{name} must be integers or floats, got dtype {arr.dtype}")


def sincos_rows(
    positions: jax.Array, ladder: Ladder, factor: float = 1.0, *, origin: int = 0, pair_axes: Any = None
) -> tuple[jax.Array, jax.Array]:
    """sin and cos of (p + origin)·ω_i times ``factor``, float32 ``[..., n]`` each, exact.

    Args:
        positions: int32 or float32 ``[...]`` (checked by :func:`check_traced_positions`);
            with ``pair_axes``, ``[..., n_axes]``.
        ladder: the frequencies (static).
        factor: a static multiplier (RoPE's attention factor), rounded in once.
        origin: a static integer added to every position, exactly.
        pair_axes: int ``[n]``, the position axis of each pair (multi-axis RoPE), or None.
    """
    fixed_ladder(ladder)  # the frequency range checked here, outside any trace
    axes = None if pair_axes is None else tuple(int(a) for a in np.asarray(pair_axes).tolist())
    if np.dtype(positions.dtype).kind == "f":  # differentiable in a real position: the bit path has no derivative
        return _real_rows(positions, ladder, float(factor), int(origin), axes)
    return _rows(positions, ladder, float(factor), int(origin), axes)


@functools.partial(jax.custom_jvp, nondiff_argnums=(1, 2, 3, 4))
def _real_rows(
    positions: jax.Array, ladder: Ladder, factor: float, origin: int, axes: tuple[int, ...] | None
) -> tuple[jax.Array, jax.Array]:
    return _rows(positions, ladder, factor, origin, axes)


@_real_rows.defjvp
def _real_rows_jvp(
    ladder: Ladder, factor: float, origin: int, axes: tuple[int, ...] | None, primals: Any, tangents: Any
) -> tuple[Any, Any]:
    # d/dp factor·(sin, cos)(ω p) = ω·(cos, −sin) rows: the exact rows times ω rounded to float32 (the
    # integer bit path itself has no derivative; jax would give 0 silently)
    (p,), (dp,) = primals, tangents
    sin, cos = _rows(p, ladder, factor, origin, axes)
    w = jnp.asarray(np.asarray(ladder.w0, dtype=np.float32))
    dp = dp[..., None] if axes is None else jnp.take(dp, jnp.asarray(np.asarray(axes, dtype=np.int32)), axis=-1)
    return (sin, cos), (cos * (w * dp), -sin * (w * dp))


@functools.partial(jax.jit, static_argnums=(1, 2, 3, 4))
def _rows(
    positions: jax.Array, ladder: Ladder, factor: float, origin: int, axes: tuple[int, ...] | None
) -> tuple[jax.Array, jax.Array]:
    # one compiled program per (ladder, factor, origin, axes, shape): called eagerly, the builder's
    # thousand-odd operations would otherwise each be dispatched (and compiled) on their own
    fixed: FixedLadder = fixed_ladder(ladder)
    if axes is None:
        p = positions[..., None]
    else:
        p = jnp.take(positions, jnp.asarray(np.asarray(axes, dtype=np.int32)), axis=-1)
    if p.dtype == jnp.int32:
        phase = phase_of_integers(JAX_OPS, p, fixed, origin)
    else:
        phase = phase_of_floats(JAX_OPS, p, fixed, origin)
    sin, cos = sincos_f32(JAX_OPS, phase, None if factor == 1.0 else scale_words(factor))
    if p.dtype != jnp.int32:
        bad = ~(jnp.abs(p) < FLOAT_LIMIT)  # NaN too
        sin = jnp.where(bad, jnp.nan, sin)
        cos = jnp.where(bad, jnp.nan, cos)
    return sin, cos


def computed_once(build: Any, positions: jax.Array) -> Any:
    """``build(positions)`` (two float32 arrays), computed once and kept, for a program that reads them often.

    XLA fuses an elementwise producer into each of its consumers: the row
    builder (a few hundred integer operations per value) would be recomputed
    for every head of q and k. ``optimization_barrier`` does not stop that on
    the CPU (it is expanded before fusion); the two branches of a
    conditional on a runtime predicate are separate computations, so the rows
    are built once there and read from memory. Both branches are the same
    function: whichever runs, the rows are the same.
    """
    if positions.size == 0:
        return build(positions)

    def packed(p: jax.Array) -> jax.Array:
        # one complex64 output: inside one fusion the pair's shared work (phase, fold, t, the Horner sums)
        # is done once per value; two float32 outputs are two loop fusions that each redo all of it (XLA's
        # CPU backend has no multi-output loop fusion). Packing and unpacking move bits, never round.
        a, b = build(p)
        return jax.lax.complex(a, b)

    flat = positions.reshape(-1)
    pred = flat[0] == flat[0]  # a runtime predicate (False only for a NaN position, and then the same rows)
    both = jax.lax.cond(pred, packed, packed, positions)
    return jnp.real(both), jnp.imag(both)
