"""Sinusoids on grids: the coordinates of an n-D grid, and their encoding.

Image and video models place tokens on 2-D and 3-D grids. Their sine–cosine
tables are per-axis 1-D sinusoids side by side; which channels hold which
axis, on which ladder and in which layout is the *convention*
(:mod:`posenc.sinusoidal.conventions_nd`).

Exact and fast: a grid's axis takes only a few distinct coordinates (64 on a
64×64 grid), so each axis's 1-D table is computed once per distinct value
by :mod:`posenc.exact` — the consecutive-position path when they are
consecutive integers — and then broadcast into the output (a full grid in C
order) or gathered row by row (any other set of points). Every value is the
exact path's: within 1 float32 ulp of the formula evaluated exactly.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import PosEncError, allocate, check_dtype, check_int, check_positions
from ..exact import Ladder, fill_range, fill_sincos
from ..exact.angles import prefer_compiled
from ..layout import sin_cos_views
from .conventions_nd import Block, NdPlan, resolve

__all__ = ["MAX_POINTS", "encode_nd", "grid", "render_nd"]

#: :func:`grid` makes at most this many points.
MAX_POINTS = 2**31


def grid(*sizes: int) -> np.ndarray:
    """The integer coordinates of every point of an n-D grid, in C order.

    Args:
        *sizes: the grid's size along each axis, ``grid(h, w)`` or ``grid(t, h, w)``.

    Returns:
        int64 ``[prod(sizes), n]``: row ``r`` holds the coordinates of the r-th
        point, the last axis varying fastest (``grid(h, w)`` gives ``(i, j)``
        = (row, column), the order of a ``[h, w]`` image flattened).

    Raises:
        PosEncError: no sizes, a size that is not an integer >= 0, or more than
            2**31 points.

    >>> grid(2, 3).tolist()
    [[0, 0], [0, 1], [0, 2], [1, 0], [1, 1], [1, 2]]
    """
    if not sizes:
        raise PosEncError("grid needs at least one size, e.g. grid(h, w)")
    ns = tuple(check_int(s, f"size of axis {k}", minimum=0) for k, s in enumerate(sizes))
    total = math.prod(ns)
    if total > MAX_POINTS:
        raise PosEncError(f"grid{ns} has {total} points; at most 2**31 = {MAX_POINTS}")
    n = len(ns)
    out = allocate((*ns, n), np.int64, "grid coordinates")
    for k, size in enumerate(ns):
        shape = [1] * n
        shape[k] = size
        out[..., k] = np.arange(size, dtype=np.int64).reshape(shape)
    return out.reshape(total, n)


def encode_nd(
    coords: Any,
    d_model: int,
    *,
    base: float = 10000.0,
    convention: Any = None,
    dtype: Any = np.float32,
) -> np.ndarray:
    """The n-D sinusoidal encoding of each point.

    Args:
        coords: ``[..., n]`` real coordinates, axis k in ``coords[..., k]``
            (integers from :func:`grid`, or real values such as diffusers'
            ``arange(h) / (h / base_size)``; ``|c| < 2**53``).
        d_model: channels.
        base: the ladder's base for the default convention.
        convention: None for :class:`~posenc.sinusoidal.conventions_nd.Axial`
            (each axis d_model/n channels of the seed's interleaved encoding
            on its own ladder, axis 0 first), or an n-D preset or its name:
            ``"mae"``, ``"big_vision"``, ``"positional-encodings"``; a preset
            carries its own base, so leave ``base`` at its default.
        dtype: float16, float32 or float64.

    Returns:
        ``[..., d_model]`` in ``dtype``, each value within 1 ulp of the
        convention's formula evaluated exactly (float32, float16).

    Raises:
        PosEncError: for bad coordinates, a ``d_model`` or number of axes the
            convention cannot take (odd per-axis shares for the default), or
            a bad dtype, before any work.

    >>> encode_nd([0, 0], 8).tolist()
    [0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0]
    >>> encode_nd(grid(2, 2), 4, dtype=np.float64).round(4).tolist()[3]
    [0.8415, 0.5403, 0.8415, 0.5403]
    >>> encode_nd([[0, 1]], 8, convention="mae", dtype=np.float64).round(4).tolist()  # the column comes first
    [[0.8415, 0.01, 0.5403, 1.0, 0.0, 0.0, 1.0, 1.0]]
    """
    conv = resolve(convention, base=base)
    c = check_positions(coords, "coords")
    if c.ndim == 0:
        raise PosEncError(f"coords must be [..., n] (one coordinate per axis), got the scalar {coords!r}")
    plan = conv.plan(d_model, c.shape[-1])
    dt = check_dtype(dtype)
    out = render_nd(plan, c.reshape(-1, plan.n_axes), dt)
    return out.reshape((*c.shape[:-1], plan.d_model))


def render_nd(plan: NdPlan, coords: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The plan's values at validated float64 ``coords`` ``[m, n]``: ``[m, d_model]`` in ``dtype``."""
    m = coords.shape[0]
    covered = sum(b.width for b in plan.blocks)
    out = allocate((m, plan.d_model), dtype, "encode_nd output", zeros=covered < plan.d_model)
    if m == 0:
        return out
    values = [np.unique(coords[:, k], return_inverse=True) for k in range(plan.n_axes)]
    sizes = _grid_sizes(values, m)
    prefer_compiled(m * plan.d_model)  # numba's one-time load pays off against an output this large
    tables: list[tuple[Ladder, str, np.ndarray, np.ndarray]] = []  # axes sharing a ladder and values share a table
    for b in plan.blocks:
        u, inverse = values[b.axis]
        table = _axis_table(u, b, dtype, tables)
        if sizes is not None:
            # a full grid in C order: the axis's rows broadcast along every other axis
            shape = [1] * plan.n_axes
            shape[b.axis] = u.shape[0]
            out.reshape((*sizes, plan.d_model))[..., b.start : b.start + b.width] = table.reshape(
                (*shape, b.width)
            )
        else:
            out[:, b.start : b.start + b.width] = table[inverse]
    return out


def _grid_sizes(values: list[tuple[np.ndarray, np.ndarray]], m: int) -> tuple[int, ...] | None:
    """The grid's sizes when the points are every combination of the axes' values, in C order."""
    sizes = tuple(int(u.shape[0]) for u, _ in values)
    if math.prod(sizes) != m:
        return None
    linear = np.zeros(m, dtype=np.int64)
    stride = 1
    for (_, inverse), size in zip(reversed(values), reversed(sizes), strict=True):
        linear += inverse.reshape(-1) * stride
        stride *= size
    return sizes if np.array_equal(linear, np.arange(m)) else None


def _axis_table(
    u: np.ndarray, b: Block, dtype: np.dtype, done: list[tuple[Ladder, str, np.ndarray, np.ndarray]]
) -> np.ndarray:
    """The block's channels at the sorted distinct coordinates ``u``: ``[len(u), width]``."""
    for ladder, layout, values, table in done:
        if ladder is b.ladder and layout == b.layout and np.array_equal(values, u):
            return table[:, : b.width]
    n = len(b.ladder)
    # contiguous sin and cos first: the compiled engine writes them several times faster than strided views
    both = np.empty((u.shape[0], 2 * n), dtype=dtype)
    s, c = both[:, :n], both[:, n:]
    if np.all(u == np.floor(u)) and u[-1] - u[0] == u.shape[0] - 1:
        fill_range(int(u[0]), u.shape[0], b.ladder, both, "split")  # consecutive integers: the table path
    else:
        fill_sincos(u, b.ladder, s, c)
    table = np.empty((u.shape[0], 2 * n), dtype=dtype)
    ts, tc = sin_cos_views(table, n, b.layout)
    ts[...] = s
    tc[...] = c
    done.append((b.ladder, b.layout, u, table))
    return table[:, : b.width]
