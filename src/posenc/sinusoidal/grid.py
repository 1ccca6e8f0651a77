"""Sinusoids on grids: the coordinates of an n-D grid, and their encoding.

Image and video models place tokens on 2-D and 3-D grids. Their sine–cosine
tables are per-axis 1-D sinusoids side by side; which channels hold which
axis, on which ladder and in which layout is the *convention*
(:mod:`posenc.sinusoidal.conventions_nd`).

Exact and fast: every channel follows one axis, and a grid's axes take only
a few distinct coordinates (64 on a 64×64 grid), so the encoding is computed
by :mod:`posenc.exact` only at the diagonal points (p, …, p) of those
coordinates — the consecutive-position path when they are consecutive
integers — and each point's row is pieced together from them
(:mod:`posenc.exact.placement`), for a full grid or any other set of points.
Every value is the exact path's: within 1 float32 ulp of the formula
evaluated exactly.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np

from ..errors import MAX_D_MODEL, PosEncError, check_dtype, check_int, check_positions, shape_text
from ..exact import Ladder, fill_range, fill_sincos
from ..exact.angles import prefer_compiled
from ..exact.placement import TableRows, assemble
from ..support.layout import sin_cos_views
from ..support.memory import allocate, check_size, nbytes, shape_of
from .conventions_nd import AnyNdConvention, AxialSettings, Block, NdConvention, NdPlan, resolve

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["MAX_POINTS", "channel_sources", "check_nd_shape", "diagonal_rows", "encode_nd", "grid", "nd_options",
           "render_nd"]

#: :func:`grid` makes at most this many points.
MAX_POINTS = 2**31
#: :func:`grid` takes at most this many axes: encode_nd gives each axis a (sin, cos) pair at least.
MAX_AXES = MAX_D_MODEL // 2


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
    if len(sizes) > MAX_AXES:
        raise PosEncError(f"grid takes at most {MAX_AXES} axes (encode_nd gives each axis 2 channels or more, "
                          f"of at most {MAX_D_MODEL}), got {len(sizes)}")
    ns = tuple(check_int(s, f"size of axis {k}", minimum=0) for k, s in enumerate(sizes))
    total = math.prod(ns)
    if total > MAX_POINTS:
        raise PosEncError(f"grid{shape_text(ns)} has {total} points; at most 2**31 = {MAX_POINTS}")
    n = len(ns)
    check_size((total, n), np.int64, "grid coordinates", work=2 * total * 8)
    out = allocate((total, n), np.int64, "grid coordinates")
    index = np.arange(total, dtype=np.int64)
    stride = total
    for k, size in enumerate(ns):  # flat, column by column: any number of axes (an [*sizes, n] array has n + 1)
        stride //= max(size, 1)
        out[:, k] = index // max(stride, 1) % max(size, 1)
    return out


def encode_nd(
    coords: Any,
    d_model: int,
    *,
    convention: AnyNdConvention = None,
    dtype: Any = np.float32,
    cls_token: Any = False,
    **settings: Unpack[AxialSettings],
) -> np.ndarray:
    """The n-D sinusoidal encoding of each point.

    Args:
        coords: ``[..., n]`` real coordinates, axis k in ``coords[..., k]``
            (integers from :func:`grid`, or real values such as diffusers'
            ``arange(h) / (h / base_size)``; ``|c| < 2**53``).
        d_model: channels.
        convention: None for :class:`~posenc.sinusoidal.conventions_nd.Axial`
            (each axis d_model/n channels of the seed's interleaved encoding
            on its own ladder, axis 0 first), or an n-D preset or its name:
            ``"mae"``, ``"big_vision"``, ``"positional-encodings"``,
            ``"timm"``; a preset carries its own base, so leave ``base`` out.
        dtype: float16, float32 or float64.
        cls_token: True to prepend a zero row before the points, the slot
            of the class token (MAE's ``get_2d_sincos_pos_embed(...,
            cls_token=True)``); an integer k >= 0 prepends k (diffusers'
            ``cls_token=True, extra_tokens=k``). Needs ``coords
            [..., m, n]``: the rows go before the m points.
        **settings: the default convention's
            (:class:`~posenc.sinusoidal.conventions_nd.AxialSettings`):
            ``base``, the ladder's base (10000).

    Returns:
        ``[..., d_model]`` in ``dtype`` (``[..., k + m, d_model]`` with
        ``cls_token``), each value within 1 ulp of the convention's formula
        evaluated exactly (float32, float16).

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
    >>> encode_nd([[0, 1]], 8, convention="timm", dtype=np.float64).round(4).tolist()  # sin h, sin w, cos h, cos w
    [[0.0, 0.0, 0.8415, 0.01, 1.0, 1.0, 0.5403, 1.0]]
    >>> encode_nd(grid(1, 2), 4, convention="mae", cls_token=True).shape
    (3, 4)
    """
    conv, extra = nd_options(convention, cls_token, "encode_nd", **settings)
    shape = shape_of(coords)
    if shape:  # sized before any coordinate is read
        rows = (math.prod(shape[:-1]) + extra * math.prod(shape[:-2]), check_int(d_model, "d_model", minimum=1))
        dt0 = check_dtype(dtype)
        # the coordinates in float64 (and flattened), and the rows assemble() gathers: about one output
        # (with cls_token the points' table is rendered, then copied below the zero rows: one more)
        work = 3 * math.prod(shape) * 8 + nbytes(rows, dt0) * (2 if extra else 1)
        check_size(rows, dt0, "encode_nd output", work=work)
    c = check_positions(coords, "coords")
    check_nd_shape(c.shape, extra, coords)
    plan = conv.plan(d_model, c.shape[-1])
    dt = check_dtype(dtype)
    out = render_nd(plan, c.reshape(-1, plan.n_axes), dt).reshape((*c.shape[:-1], plan.d_model))
    if not extra:
        return out
    lead = c.shape[:-2]
    full = allocate((*lead, extra + c.shape[-2], plan.d_model), dt, "encode_nd output", zeros=True)
    full[..., extra:, :] = out
    return full


def nd_options(convention: AnyNdConvention, cls_token: Any, where: str,
               **settings: Unpack[AxialSettings]) -> tuple[NdConvention, int]:
    """The preset and the number of zero rows an ``encode_nd(..., convention=, cls_token=, **settings)`` call means.

    Checked here for :func:`encode_nd` and :func:`posenc.jax.encode_nd` alike (``where`` names the one called).
    """
    return resolve(convention, where, **settings), check_cls_token(cls_token)


def check_nd_shape(shape: tuple[int, ...], extra: int, coords: Any) -> None:
    """Refuse coordinates of ``shape`` that are not ``[..., n]`` (``[..., m, n]`` with ``extra`` zero rows)."""
    if len(shape) == 0:
        raise PosEncError(f"coords must be [..., n] (one coordinate per axis), got the scalar {coords!r}")
    if extra and len(shape) < 2:
        raise PosEncError(f"cls_token needs coords [..., m, n] (the zero rows go before the m points), got shape "
                          f"{tuple(shape)}")


def channel_sources(plan: NdPlan) -> tuple[tuple[tuple[int, Ladder], ...], np.ndarray]:
    """Where each output channel of ``plan`` takes its value from, for a renderer that builds the rows per axis.

    Returns:
        ``groups``, the distinct (axis, ladder) pairs of the blocks, and
        ``index`` int ``[d_model]``: output channel j is entry ``index[j]``
        of the concatenation, over ``groups``, of ``[sin(c·ω) | cos(c·ω)]``
        (``2·len(ladder)`` each, c the group's coordinate), followed by one
        zero. The blocks' layouts (:func:`posenc.support.layout.sin_cos_views`), their
        cut to ``width``, the uncovered channels (zero) and the framework's
        ``order`` are all in ``index``.

    >>> from posenc.sinusoidal.conventions_nd import get
    >>> groups, index = channel_sources(get("timm").plan(8, 2))
    >>> [g[0] for g in groups], index.tolist()
    ([0, 1], [0, 1, 4, 5, 2, 3, 6, 7])
    """
    groups: list[tuple[int, Ladder]] = []
    offsets: list[int] = []
    total = 0
    for b in plan.blocks:
        if not any(a == b.axis and lad is b.ladder for a, lad in groups):
            groups.append((b.axis, b.ladder))
            offsets.append(total)
            total += 2 * len(b.ladder)
    index = np.full(plan.d_model, total, dtype=np.int64)  # the zero, where no block lands
    for b in plan.blocks:
        k = next(i for i, (a, lad) in enumerate(groups) if a == b.axis and lad is b.ladder)
        n = len(b.ladder)
        local = np.empty(2 * n, dtype=np.int64)
        sin, cos = sin_cos_views(local, n, b.layout)
        sin[:] = offsets[k] + np.arange(n)
        cos[:] = offsets[k] + n + np.arange(n)
        index[b.start : b.start + b.width] = local[: b.width]
    if plan.order is not None:
        index = index[np.array(plan.order, dtype=np.int64)]
    return tuple(groups), index


def check_cls_token(cls_token: Any) -> int:
    """The zero rows ``cls_token`` asks for: False 0, True 1, or an integer k in 0 … 2**16."""
    if isinstance(cls_token, (bool, np.bool_)):
        return int(cls_token)
    return check_int(cls_token, "cls_token (True, False or a number of zero rows)", minimum=0, maximum=2**16)


def render_nd(plan: NdPlan, coords: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """The plan's values at validated float64 ``coords`` ``[m, n]``: ``[m, d_model]`` in ``dtype``.

    Column c follows one axis, so a point's row is pieced together from the
    rows of the diagonal points (p, …, p) at its coordinates
    (:func:`posenc.exact.placement.assemble`); those few rows are computed exactly.
    """
    m = coords.shape[0]
    covered = sum(b.width for b in plan.blocks)
    out = allocate((m, plan.d_model), dtype, "encode_nd output", zeros=covered < plan.d_model)
    prefer_compiled(out.size)  # numba's one-time load pays off against an output this large
    axes = np.zeros(plan.d_model, dtype=np.int64)  # channels no block covers: zeros, from any axis
    for b in plan.blocks:
        axes[b.channels.start : b.channels.stop] = b.axis
    assemble(coords, axes, out, lambda rows, dest: diagonal_rows(plan, rows, dest))
    if plan.order is not None:  # the framework's channel order, a block of rows at a time (no second table)
        order = np.array(plan.order)
        step = max(1, 2**20 // max(plan.d_model, 1))
        for i in range(0, m, step):
            out[i : i + step] = out[i : i + step][:, order]
    return out


def diagonal_rows(plan: NdPlan, rows: TableRows, out: np.ndarray) -> None:
    """The plan's rows at the diagonal points of ``rows`` (every coordinate p) into ``out`` ``[count, d_model]``.

    Blocks on one ladder and layout (the default's axes) are computed once and copied.
    """
    done: list[Block] = []
    for b in plan.blocks:
        twin = next((d for d in done if d.ladder is b.ladder and d.layout == b.layout and d.width >= b.width), None)
        if twin is not None:
            out[:, b.start : b.start + b.width] = out[:, twin.start : twin.start + b.width]
            continue
        n = len(b.ladder)
        whole = b.width == 2 * n
        dest = out[:, b.start : b.start + 2 * n] if whole else np.empty((rows.count, 2 * n), dtype=out.dtype)
        if rows.values is None:
            fill_range(rows.start, rows.count, b.ladder, dest, b.layout)  # consecutive integers: the table path
        else:
            fill_sincos(rows.values, b.ladder, *sin_cos_views(dest, n, b.layout))
        if not whole:
            out[:, b.start : b.start + b.width] = dest[:, : b.width]
        done.append(b)
