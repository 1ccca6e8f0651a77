"""Neural-field encodings in JAX: :func:`posenc.nerf_encoding` with traced coordinates, exact in the graph."""

from __future__ import annotations

import functools
from typing import Any

import jax.numpy as jnp
import numpy as np

import jax

from ..errors import PosEncError, show_value
from ..exact.fixed import fixed_ladder
from ..fields.conventions import FieldConvention, FieldPlan, get
from ._rows import check_traced_positions, sincos_rows
from .rope import _out_dtype

__all__ = ["nerf_encoding"]


def nerf_encoding(x: Any, n_freqs: Any, *, convention: Any = "nerf", include_input: Any = None,
                  dtype: Any = jnp.float32) -> jax.Array:
    """The frequency encoding of (traced) coordinates ``x [..., d]``: :func:`posenc.nerf_encoding` in the graph.

    Args:
        x: float32 (or bfloat16, float16, int32) coordinates ``[..., d]``, traced
            or not; a scalar is one point of one coordinate. A coordinate at
            or beyond 2**31 in magnitude (or NaN) gives NaN channels.
        n_freqs: bands L (static); the fastest band must stay below 2**31·2π
            (the 32-bit exact range: L <= 31 for ``"nerf"``).
        convention, include_input: as :func:`posenc.nerf_encoding` (static).
        dtype: float32, bfloat16 or float16.

    Returns:
        ``[..., 2·L·d (+ d)]``. float32 values are the correctly rounded
        sin/cos of ω_k·x (ω_k the preset's exact band) except where the exact
        value lies within 2**-56 (relative) of a rounding boundary: within 1
        float32 ulp always, and the NumPy core's float32 bits on the tests'
        battery. Differentiable in x: the derivative is ω_k·cos and −ω_k·sin
        of the exact rows (ω_k rounded to float32).

    >>> np.asarray(nerf_encoding(jnp.array([0.5]), 1), np.float64).round(4).tolist()
    [0.5, 0.4794, 0.8776]
    >>> jax.jit(lambda x: nerf_encoding(x, 4, convention="nerfstudio"))(jnp.ones((2, 3))).shape
    (2, 24)
    """
    plan = _plan(get(convention), n_freqs)
    keep = plan.include_input if include_input is None else include_input
    if not isinstance(keep, (bool, np.bool_)):
        raise PosEncError(f"include_input must be True, False or None, got {show_value(include_input)}")
    dt = _out_dtype(dtype)
    if getattr(x, "dtype", None) is not None and jnp.dtype(x.dtype).name in ("bfloat16", "float16"):
        x = x.astype(jnp.float32)  # exact
    pts = check_traced_positions(x, "x")
    pts = pts.reshape(1) if pts.ndim == 0 else pts
    lead, d, n = pts.shape[:-1], pts.shape[-1], len(plan.ladder)
    m = int(np.prod(lead))
    if n:
        s, c = sincos_rows(pts, plan.ladder)  # [..., d, n]
        enc = arrange(plan, s.reshape(m, d, n), c.reshape(m, d, n))
    else:
        enc = jnp.zeros((m, 0), jnp.float32)
    if keep:
        raw = pts.reshape(m, d).astype(jnp.float32)
        enc = jnp.concatenate([raw, enc] if plan.input_at == "first" else [enc, raw], axis=-1)
    return enc.reshape((*lead, enc.shape[-1])).astype(dt)


@functools.lru_cache(maxsize=64)
def _plan(preset: FieldConvention, n_freqs: Any) -> FieldPlan:
    # cached: one ladder object per preset and band count, so jit compiles the rows once
    plan = preset.plan(n_freqs)
    try:
        fixed_ladder(plan.ladder)
    except PosEncError as exc:
        raise PosEncError(f"n_freqs = {n_freqs} with {preset!r}: {exc}") from None
    return plan


def arrange(plan: FieldPlan, s: jax.Array, c: jax.Array) -> jax.Array:
    """The preset's channel order from sin/cos ``[m, d, n]``: ``[m, 2·n·d]``, as in the NumPy API."""
    m, d, n = s.shape
    if plan.order == "nerf":  # per band: sin of every coordinate, then cos
        out = jnp.stack((s, c), 1).transpose(0, 3, 1, 2)
    elif plan.order == "blocks":  # all sines (coordinate-major), then all cosines
        out = jnp.concatenate((s.reshape(m, d * n), c.reshape(m, d * n)), -1)
    else:  # per coordinate, per band: sin, cos
        out = jnp.stack((s, c), -1)
    return out.reshape(m, 2 * n * d)
