"""The sinusoidal encoding in JAX: :func:`posenc.encode` with traced positions, exact in the graph."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax.numpy as jnp

import jax

from ..sinusoidal.conventions import AnyConvention, SinusoidSettings, resolve
from ..sinusoidal.functions import encode_with, table_with
from .backend import JAX

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

    >>> import numpy as np
    >>> np.asarray(encode(jnp.array([0, 1000]), 4), np.float64).round(5).tolist()
    [[0.0, 1.0, 0.0, 1.0], [0.82688, 0.56238, -0.54402, -0.83907]]
    """
    return encode_with(JAX, resolve(convention, "posenc.jax.encode", **settings), positions, d_model, dtype)


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
    conv = resolve(convention, "posenc.jax.table", **settings)
    return table_with(JAX, conv, length, d_model, start, dtype)
