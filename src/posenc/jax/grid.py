"""The n-D sinusoidal encoding in JAX: :func:`posenc.encode_nd` of traced coordinates, exact in the graph."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax.numpy as jnp
import numpy as np

import jax

from ..sinusoidal.conventions_nd import AnyNdConvention, AxialSettings
from ..sinusoidal.grid import channel_sources, check_nd_shape, nd_options
from ._rows import rounds_to_odd, sincos_rows
from .inputs import check_output, check_traced_positions
from .rope import _out_dtype

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["encode_nd"]


def encode_nd(
    coords: Any,
    d_model: int,
    *,
    convention: AnyNdConvention = None,
    dtype: Any = jnp.float32,
    cls_token: Any = False,
    **settings: Unpack[AxialSettings],
) -> jax.Array:
    """The n-D sinusoidal encoding of (traced) points ``[..., n]``: :func:`posenc.encode_nd`'s float32 bits.

    The plan (which channels hold which axis, on which ladder, in which
    layout and order) is the NumPy function's
    (:mod:`posenc.sinusoidal.conventions_nd`); each axis's sin/cos rows are
    built in the graph from 32-bit integer operations
    (:func:`posenc.jax._rows.sincos_rows`) and gathered into the
    convention's channel order: no float64, no dot, no callback.

    Args:
        coords: int32 or float32 (bfloat16 and float16 widened exactly)
            ``[..., n]`` coordinates, traced or not, axis k in
            ``coords[..., k]`` (:func:`posenc.grid` gives integer grids). A
            host value must fit int32, or be float32-exact with
            ``|c| < 2**31``; a traced float coordinate at or past 2**31 (or
            NaN) gives NaN channels.
        d_model, convention, cls_token, settings: as :func:`posenc.encode_nd`
            (static, checked when traced).
        dtype: float32, bfloat16 or float16.

    Returns:
        ``[..., d_model]`` (``[..., k + m, d_model]`` with ``cls_token``):
        for int32 coordinates the NumPy function's float32 values bit for
        bit; for float32 ones the correctly rounded values except within
        2**-56 (relative) of a rounding boundary (within 1 float32 ulp always).

    Raises:
        PosEncError: for a ``d_model`` or number of axes the convention
            cannot take, an unknown convention, a ``base`` beside a preset, a
            bad ``cls_token``, coordinates that are not ``[..., n]``, of
            another framework, float64 JAX arrays (``jax_enable_x64`` on) or
            (concrete) not int32/float32-exact, NaN, infinite or past 2**31, a
            bad dtype, or an output larger than the device's memory. Under
            ``jax.jit`` JAX itself converts a NumPy int64 argument to int32 by
            keeping its low 32 bits, and a float64 one to float32, silently,
            before posenc sees it: pass :func:`posenc.jax.positions` of it.

    >>> import posenc
    >>> pe = jax.jit(lambda c: encode_nd(c, 8, convention="mae"))(jnp.asarray(posenc.grid(2, 2), jnp.int32))
    >>> bool((np.asarray(pe) == posenc.encode_nd(posenc.grid(2, 2), 8, convention="mae")).all())
    True
    >>> encode_nd(jnp.zeros((3, 2)), 8, cls_token=True).shape
    (4, 8)
    """
    conv, extra = nd_options(convention, cls_token, "posenc.jax.encode_nd", **settings)
    dt = _out_dtype(dtype)
    pts = check_traced_positions(coords, "coords")
    check_nd_shape(pts.shape, extra, coords)
    plan = conv.plan(d_model, pts.shape[-1])
    rows = (*pts.shape[:-2], pts.shape[-2] + extra) if extra else pts.shape[:-1]
    # working arrays: the rows, built once as complex64 pairs (sincos_rows), their channels concatenated, and
    # those gathered into order: three float32 outputs (XLA's measure: 2.01, tests/jax/test_jax_sizes.py)
    out_bytes = 4 * int(np.prod([*rows, plan.d_model], dtype=object))
    check_output((*rows, plan.d_model), "encode_nd output", dtype=dt, work=3 * out_bytes)
    groups, index = channel_sources(plan)
    lead = pts.shape[:-1]
    parts = []
    for ladder in dict.fromkeys(lad for _, lad in groups):  # one row build per ladder, for all its axes
        axes = [a for a, lad in groups if lad is ladder]
        sin, cos = sincos_rows(pts[..., np.array(axes)], ladder, odd=rounds_to_odd(dt))  # [..., len(axes), n]
        parts.append((ladder, axes, sin, cos))
    pieces = []
    for axis, ladder in groups:  # the groups' order: [sin | cos] of each
        _, axes, sin, cos = next(p for p in parts if p[0] is ladder)
        k = axes.index(axis)
        pieces += [sin[..., k, :], cos[..., k, :]]
    pieces.append(jnp.zeros((*lead, 1), jnp.float32))
    out = jnp.take(jnp.concatenate(pieces, axis=-1), jnp.asarray(index.astype(np.int32)), axis=-1)
    if extra:
        out = jnp.concatenate([jnp.zeros((*lead[:-1], extra, plan.d_model), out.dtype), out], axis=-2)
    return out.astype(dt)
