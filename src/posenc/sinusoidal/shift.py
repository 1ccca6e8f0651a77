"""Shift as rotation: PE(p + k) = T_k · PE(p) (seed, Ex 5).

Stack each pair with the sine on top, (sin θ, cos θ). The addition formulas

    sin(θ + φ) =  cos φ · sin θ + sin φ · cos θ
    cos(θ + φ) = -sin φ · sin θ + cos φ · cos θ

force the block [[cos φ, sin φ], [-sin φ, cos φ]] with φ = ω_i k. It
depends on k only, never on p; T_{-k} is its transpose and inverse.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import (
    PosEncError,
    as_array,
    check_base,
    check_d_model,
    check_dtype,
    check_positions,
)
from ..exact import seed_ladder, sincos
from ..support.layout import check_channel_layout, sin_cos_views
from ..support.memory import allocate
from .conventions import SinusoidSettings, seed_settings

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["shift", "shift_matrix"]


def shift_matrix(
    k: float,
    d_model: int,
    *,
    dtype: Any = np.float64,
    **settings: Unpack[SinusoidSettings],
) -> np.ndarray:
    """The block-diagonal T_k with ``T_k @ encode(p) == encode(p + k)``.

    Args:
        k: the offset, any real number (negative: the inverse rotation).
        d_model: channels, a positive even integer.
        dtype: of the result (float64 by default).
        **settings: ``base``, ``layout``, as in :func:`posenc.encode`.

    Returns:
        ``[d_model, d_model]``; each 2×2 block acting on (sin, cos) of pair i
        is [[cos φ_i, sin φ_i], [-sin φ_i, cos φ_i]], φ_i = ω_i k, computed
        exactly.

    >>> T = shift_matrix(5, 4)
    >>> np.round(T[2:, 2:], 6).tolist()
    [[0.99875, 0.049979], [-0.049979, 0.99875]]
    """
    base, layout = seed_settings(settings, "shift_matrix")
    kk = check_positions(k, "k")
    if kk.ndim:
        raise PosEncError(f"k must be a single number, got an array of shape {kk.shape}")
    d = check_d_model(d_model)
    b = check_base(base)
    lay = check_channel_layout(layout)
    dt = check_dtype(dtype)
    n = d // 2
    sp, cp = sincos(kk, seed_ladder(d, b))
    m = allocate((d, d), np.float64, "shift_matrix", zeros=True)
    idx = np.arange(d).reshape(1, d)
    si, ci = (v[0] for v in sin_cos_views(idx, n, lay))
    m[si, si] = cp
    m[si, ci] = sp
    m[ci, si] = -sp
    m[ci, ci] = cp
    return m.astype(dt, copy=False)


def shift(
    encoding: Any,
    k: Any,
    **settings: Unpack[SinusoidSettings],
) -> np.ndarray:
    """Rotate an encoding by offset ``k`` without building T_k.

    Args:
        encoding: ``[..., d_model]``, a float array (the output of
            :func:`posenc.encode` or any vector in that layout).
        k: offset, a real scalar or an array broadcastable to
            ``encoding.shape[:-1]``.
        **settings: ``base``, ``layout``, as in :func:`posenc.encode`.

    Returns:
        ``[..., d_model]`` in the encoding's float dtype: each pair rotated by
        ω_i k (computed in float64, rounded once).

    >>> from posenc import encode
    >>> np.allclose(shift(encode(3, 4, dtype=np.float64), 5), encode(8, 4, dtype=np.float64))
    True
    """
    base, layout = seed_settings(settings, "shift")
    e = as_array(encoding, "encoding")
    if e.dtype.kind != "f" or e.ndim == 0:
        raise PosEncError(
            f"encoding must be a float array [..., d_model], got dtype {e.dtype} "
            f"and shape {e.shape}"
        )
    d = check_d_model(e.shape[-1], "encoding.shape[-1] (d_model)")
    kk = check_positions(k, "k")
    b = check_base(base)
    lay = check_channel_layout(layout)
    try:
        kk = np.broadcast_to(kk, e.shape[:-1])
    except ValueError as exc:
        raise PosEncError(
            f"k of shape {kk.shape} does not broadcast to encoding.shape[:-1] = {e.shape[:-1]}"
        ) from exc
    n = d // 2
    uniq, inv = np.unique(kk, return_inverse=True)
    sp, cp = sincos(uniq, seed_ladder(d, b))
    sp = sp[inv.reshape(kk.shape)]
    cp = cp[inv.reshape(kk.shape)]
    x = e.astype(np.float64)
    s, c = sin_cos_views(x, n, lay)
    out = np.empty_like(x)
    so, co = sin_cos_views(out, n, lay)
    so[...] = cp * s + sp * c
    co[...] = cp * c - sp * s
    return out.astype(e.dtype, copy=False)
