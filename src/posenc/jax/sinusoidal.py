"""The sinusoidal encoding in JAX: :func:`posenc.encode` with traced positions, exact in the graph."""

from __future__ import annotations

import numbers
from typing import TYPE_CHECKING, Any

import jax.numpy as jnp
import numpy as np

import jax

from ..sinusoidal import table as np_table
from ..sinusoidal.conventions import AnyConvention, SinusoidSettings, resolve
from ..support.arguments import settings_of
from ._rows import host_rows, rounds_to_odd, sincos_rows
from .inputs import check_output, check_traced_positions
from .rope import _out_dtype

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["encode", "table"]


def encode(
    positions: Any,
    d_model: int,
    *,
    dtype: Any = jnp.float32,
    convention: AnyConvention = None,
    **settings: Unpack[SinusoidSettings],
) -> jax.Array:
    """The sinusoidal encoding of each (traced) position, ``[..., d_model]``: :func:`posenc.encode`'s float32 bits.

    Args:
        positions: int32 or float32 ``[...]`` (as :func:`posenc.jax.rope_cos_sin`).
        d_model, convention, settings: as :func:`posenc.encode` (static);
            a convention's origin (fairseq's ``padding_idx + 1``) is added
            exactly, and its padding row is zero.
        dtype: float32, bfloat16 or float16.

    Raises:
        PosEncError: for static arguments the NumPy function refuses, a bad
            dtype, positions :mod:`posenc.jax.inputs` refuses, or an output larger
            than the device's memory, before any work (under ``jax.jit``,
            which narrows int64 and float64 arguments itself, pass
            :func:`posenc.jax.positions`).

    >>> np.asarray(encode(jnp.array([0, 1000]), 4), np.float64).round(5).tolist()
    [[0.0, 1.0, 0.0, 1.0], [0.82688, 0.56238, -0.54402, -0.83907]]
    """
    dt = _out_dtype(dtype)
    pos = check_traced_positions(positions)
    if isinstance(d_model, numbers.Integral) and not isinstance(d_model, (bool, np.bool_)) and d_model > 0:
        # sized before the plan (a wide ladder takes a while to build); an odd width computes one more channel
        check_output((*pos.shape, int(d_model) + int(d_model) % 2), "encoding", dtype=dt)
    plan = resolve(convention, "posenc.jax.encode", **settings).plan(d_model)
    sin, cos = sincos_rows(pos, plan.ladder, origin=plan.origin, odd=rounds_to_odd(dt))
    n = len(plan.ladder)
    if plan.layout == "interleaved":
        out = jnp.stack([sin, cos], axis=-1).reshape((*pos.shape, 2 * n))
    else:
        out = jnp.concatenate([sin, cos], axis=-1)
    if plan.d_model > 2 * n:
        out = jnp.concatenate([out, jnp.zeros((*pos.shape, plan.d_model - 2 * n), out.dtype)], axis=-1)
    out = out[..., : plan.d_model]
    if plan.zero_at is not None:
        pad = (pos == plan.zero_at - plan.origin)[..., None]  # θ = zero_at: fairseq's padding row
        out = jnp.where(pad, 0.0, out)
    return out.astype(dt)


def table(
    length: int,
    d_model: int,
    *,
    start: int = 0,
    dtype: Any = jnp.float32,
    convention: AnyConvention = None,
    **settings: Unpack[SinusoidSettings],
) -> jax.Array:
    """Rows for positions ``start … start+length-1`` (all static): :func:`posenc.table`, as a constant.

    >>> table(3, 4, start=1).shape
    (3, 4)
    """
    settings_of(settings, SinusoidSettings, "posenc.jax.table")
    dt = _out_dtype(dtype)
    return host_rows(lambda np_dt: np_table(length, d_model, start=start, dtype=np_dt, convention=convention,
                                            **settings), dt)
