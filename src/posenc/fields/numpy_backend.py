"""The neural-field encodings' NumPy primitives: the exact path's rows, in blocks, in each preset's order.

:data:`NUMPY_FIELDS` is what :func:`posenc.nerf_encoding` and
:func:`posenc.fourier_features` run on. Coordinates are read as float64
(``|x| < 2**53``). A NeRF band that is 2π times a power of two takes its
phase in turns (:class:`Bands`: x·2^e exact, the quarter turns split off
exactly); the others their angle by :mod:`posenc.exact`. Fourier features
take B·v mod 1 exactly (:func:`posenc.exact.dot.dot2_turns`) and sin/cos of
2π times it (:func:`turn_sincos`). Each value is rounded once into the
output dtype.

>>> from posenc.fields import TinyCudaNN
>>> NUMPY_FIELDS.nerf_rows(np.array([[0.25]]), TinyCudaNN().plan(1), False, np.dtype(np.float64)).round(4).tolist()
[[0.7071, 0.7071]]
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import PosEncError, as_array, check_angle, check_dtype, check_positions, shape_text, show_value
from ..exact import Ladder, fill_sincos
from ..exact.core import quadrant, turns_core
from ..exact.dot import dot2_turns
from ..exact.ladder import decimal_pi
from ..support.memory import allocate, check_size, shape_of
from .conventions import FieldConvention, FieldPlan

__all__ = ["NUMPY_FIELDS", "Bands", "NumpyFields", "arrange", "check_matrix", "check_raw", "read_matrix",
           "turn_sincos", "two_pi"]


class NumpyFields:
    """The :class:`~posenc.fields.backend.FieldBackend` primitives over NumPy arrays (float16/32/64 rows)."""

    name = "numpy"

    def field_dtype(self, dtype: Any) -> np.dtype:
        return check_dtype(dtype)

    def field_plan(self, preset: FieldConvention, n_freqs: Any) -> FieldPlan:
        return preset.plan(n_freqs)

    def check_nerf(self, x: Any, plan: FieldPlan, include_input: bool, dtype: Any) -> None:
        shape = shape_of(x)
        if shape is not None:  # before x is read: a huge view is refused in microseconds, not after its float64 copy
            lead, d = (shape[:-1], shape[-1]) if shape else ((), 1)
            n = len(plan.ladder)
            check_size((*lead, d * (2 * n + int(include_input))), dtype, "field encoding",
                       work=math.prod(lead) * d * 8 + _block_work(d, n))

    def nerf_points(self, x: Any) -> np.ndarray:
        return _coords(x, "x")

    def nerf_rows(self, points: np.ndarray, plan: FieldPlan, include_input: bool, dtype: Any) -> np.ndarray:
        keep = include_input
        lead, d, n = points.shape[:-1], points.shape[-1], len(plan.ladder)
        m = math.prod(lead)
        flat = points.reshape(m, d)
        top = float(np.max(np.abs(flat))) if flat.size else 0.0
        bands = Bands.of(plan)
        if flat.size and len(bands.ladder):  # the bands in turns have no angle limit: x·2^e is exact at any size
            check_angle(top, bands.ladder.fastest, "x")
        if keep:
            check_raw(top, dtype, "x")
        out = allocate((m, d * (2 * n + int(keep))), dtype, "field encoding")
        enc = out[:, d:] if keep and plan.input_at == "first" else out[:, :2 * n * d]
        if keep:
            (out[:, :d] if plan.input_at == "first" else out[:, 2 * n * d:])[...] = flat
        rows = max(1, _BLOCK // max(1, d * n))
        for a in range(0, m if n else 0, rows):
            b = min(m, a + rows)
            s, c = bands.sincos(flat[a:b].reshape(-1))
            enc[a:b] = arrange(plan, s.reshape(b - a, d, n), c.reshape(b - a, d, n))  # rounded once, into enc
        return out.reshape((*lead, out.shape[-1]))

    def check_fourier(self, x: Any, b: Any, dtype: Any) -> None:
        xs, bs = shape_of(x), shape_of(b)
        if xs is not None and bs is not None and len(bs) == 2:  # before x and B are read: the output and the blocks
            lead, m = (xs[:-1] if xs else ()), bs[0]
            check_size((*lead, 2 * m), dtype, "fourier_features output",
                       work=math.prod(lead) * bs[1] * 8 + _block_work(1, m))  # a block's arrays are [rows, m]

    def fourier_points(self, x: Any) -> np.ndarray:
        return _coords(x, "x")

    def fourier_matrix(self, b: Any, points: np.ndarray) -> np.ndarray:
        return read_matrix(b, points.shape[-1])

    def fourier_rows(self, points: np.ndarray, matrix: np.ndarray, dtype: Any) -> np.ndarray:
        mat = matrix
        m, d = mat.shape
        flat = points.reshape(-1, d)
        out = allocate((flat.shape[0], 2 * m), dtype, "fourier_features output")
        rows = max(1, _BLOCK // (m * d))
        for a in range(0, flat.shape[0], rows):
            z = min(flat.shape[0], a + rows)
            hi, lo = dot2_turns(mat[None, :, :], flat[a:z, None, :], np.rint)  # B·x mod 1: [rows, m]
            s, c = turn_sincos(hi, lo)
            out[a:z, :m], out[a:z, m:] = c, s
        return out.reshape((*points.shape[:-1], 2 * m))


#: the NumPy primitives (no state: one is enough)
NUMPY_FIELDS = NumpyFields()


#: Elements (coordinates × bands) computed at a time: the blocks' temporaries stay in L2.
_BLOCK = 16384

#: Bytes of temporaries per element of a block (tracemalloc measures ~200: tests/test_memory.py).
_PER_ELEMENT = 320


def _block_work(width: int, n: int) -> int:
    """Bytes of one block's temporaries, for rows of ``width`` coordinates (or products) and ``n`` bands."""
    return max(_BLOCK, width * n) * _PER_ELEMENT


#: float16 holds |v| < 65520 (65504 and the values that round to it); float32 and float64 hold every |x| < 2**53.
_RAW_LIMIT = {np.dtype(np.float16): 65520.0}


def check_raw(top: float, dt: np.dtype, what: str) -> None:
    """Refuse raw coordinates (``include_input``) that ``dt`` would write as inf; ``top`` is the largest |x|."""
    limit = _RAW_LIMIT.get(np.dtype(dt))
    if limit is not None and top >= limit:
        raise PosEncError(f"{what} reaches |{what}| = {top:g}, which {np.dtype(dt)} cannot hold (largest 65504): "
                          "include_input would write inf; use dtype=np.float32 or include_input=False")


class Bands:
    """A plan's bands split by how their angle is taken: in turns (ω = 2π·2^e) or in radians (the rest).

    Attributes:
        radian: indices of the bands taken as (x·ω) mod π/2, ``[nr]``.
        dyadic: indices of the bands 2π·τ (τ a power of two), ``[nd]``.
        taus: float64 τ of the dyadic bands, ``[nd]``.
        ladder: the radian bands' :class:`~posenc.exact.Ladder`.
    """

    def __init__(self, plan: FieldPlan) -> None:
        turns = plan.turns or (0.0,) * len(plan.ladder)
        self.radian = np.array([i for i, t in enumerate(turns) if not t], dtype=np.int64)
        self.dyadic = np.array([i for i, t in enumerate(turns) if t], dtype=np.int64)
        self.taus = np.array([t for t in turns if t], dtype=np.float64)
        lad = plan.ladder
        self.ladder = lad if not self.dyadic.size else Ladder(lad.w0[self.radian], lad.w1[self.radian],
                                                               lad.w2[self.radian])
        self.n = len(plan.ladder)

    @classmethod
    def of(cls, plan: FieldPlan) -> Bands:
        """The split of ``plan``'s bands."""
        return cls(plan)

    def sincos(self, flat: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """sin and cos of every band at float64 coordinates ``flat [k]``: float64 ``[k, n]``."""
        k = flat.shape[0]
        if not self.dyadic.size:
            return _sincos(flat, None, self.ladder)
        s = np.empty((k, self.n))
        c = np.empty((k, self.n))
        if self.radian.size:
            s[:, self.radian], c[:, self.radian] = _sincos(flat, None, self.ladder)
        s[:, self.dyadic], c[:, self.dyadic] = turn_sincos(flat[:, None] * self.taus)
        return s, c


def turn_sincos(phase: np.ndarray, lo: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """sin and cos of 2π·(phase + lo) (float64, any shape), the quarter turns exact: an exact zero is +0.

    The phase is split exactly into whole turns, quarter turns q and a rest
    of at most 1/8 turn (:func:`posenc.exact.core.turns_core`); sin/cos of
    2π times the rest are taken by the exact path and turned by q
    (:func:`posenc.exact.core.quadrant`).
    """
    hi = phase.reshape(-1)
    q, f, g = turns_core(hi, np.zeros_like(hi) if lo is None else lo.reshape(-1))
    s, c = quadrant(q[:, None], *_sincos(f, g, two_pi()))
    return (s + 0.0).reshape(phase.shape), (c + 0.0).reshape(phase.shape)  # + 0.0: an exact zero is +0


def arrange(plan: FieldPlan, s: Any, c: Any, stack: Any = np.stack, concat: Any = np.concatenate,
            permute: Any = np.transpose) -> Any:
    """The preset's channel order from sin/cos ``[m, d, n]``: ``[m, 2·n·d]``, in any framework.

    Written once for every backend: each passes its own ``stack(arrays, axis)``,
    ``concat(arrays, axis)`` and ``permute(array, axes)`` (NumPy's by default;
    ``torch.stack, torch.cat, torch.permute``; ``jnp.stack, jnp.concatenate, jnp.transpose``).
    """
    m, d, n = s.shape
    if plan.order == "nerf":  # per band k: sin of every coordinate, then cos: [m, n, 2, d]
        out = permute(stack((s, c), 1), (0, 3, 1, 2))
    elif plan.order == "blocks":  # all sines (coordinate-major), then all cosines
        out = concat((s.reshape(m, d * n), c.reshape(m, d * n)), -1)
    else:  # interleaved: per coordinate, per band, sin then cos: [m, d, n, 2]
        out = stack((s, c), -1)
    return out.reshape(m, 2 * n * d)


def _coords(x: Any, name: str) -> np.ndarray:
    """Coordinates as float64 ``[..., d]`` (a scalar is one point of one coordinate)."""
    pts = check_positions(x, name)
    return pts.reshape(1) if pts.ndim == 0 else pts


def _sincos(hi: np.ndarray, lo: np.ndarray | None, ladder: Ladder) -> tuple[np.ndarray, np.ndarray]:
    n = len(ladder)
    s = allocate((hi.shape[0], n), np.float64, "field encoding")
    c = allocate((hi.shape[0], n), np.float64, "field encoding")
    fill_sincos(hi, ladder, s, c, lo)
    return s, c


_TWO_PI: Ladder | None = None


def two_pi() -> Ladder:
    """The one-band ladder [2π] (to ~160 bits) that Fourier features multiply B·x by."""
    global _TWO_PI
    if _TWO_PI is None:
        _TWO_PI = Ladder.from_decimals([2 * decimal_pi()])
    return _TWO_PI


def read_matrix(b: Any, d: int) -> np.ndarray:
    arr = as_array(b, "B")
    if d < 1:  # an empty sum: no coordinate to encode (and dot2 needs a term)
        raise PosEncError(f"x must hold at least one coordinate on its last axis, got d = {d}")
    if arr.ndim != 2 or arr.shape[1] != d or arr.shape[0] < 1:
        raise PosEncError(f"B must be a matrix [m, d] with m >= 1 and d = {d} (the coordinates' last axis), "
                          f"got shape {shape_text(arr.shape)}")
    return check_matrix(arr)


def check_matrix(arr: np.ndarray) -> np.ndarray:
    """B ``[m, d]`` as float64, each entry finite with ``|B| < 2**53``, refused by B's own name and bound."""
    if arr.dtype.kind == "f" and arr.size:
        with np.errstate(invalid="ignore"):
            big = np.abs(arr.astype(np.float64)) >= 2.0**53
        if big.any():  # (a position's message would say "float64 holds every integer")
            raise PosEncError(f"B must satisfy |B| < 2**53 (the entries whose products with x posenc forms "
                              f"exactly), got {show_value(arr[big].flat[0])}")
    return check_positions(arr, "B")
