"""Neural-field encodings of coordinates: the NeRF family's frequency bands and Tancik et al.'s Fourier features."""

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
from .conventions import FieldPlan, get

__all__ = ["Bands", "arrange", "check_matrix", "check_raw", "fourier_features", "nerf_encoding", "turn_sincos"]


def nerf_encoding(x: Any, n_freqs: Any, *, convention: Any = "nerf", include_input: Any = None,
                  dtype: Any = np.float32) -> np.ndarray:
    """The frequency encoding of coordinates ``x [..., d]``, as a neural field's framework builds it.

    Args:
        x: real coordinates ``[..., d]``, the last axis the coordinates (a scalar: d = 1).
        n_freqs: bands L, 0 … 53.
        convention: ``"nerf"`` (bmild/nerf), ``"nerfstudio"`` (``NeRFEncoding``),
            ``"tcnn"`` (tiny-cuda-nn ``Frequency``), a preset of
            :mod:`posenc.fields`, or a name added with :func:`posenc.fields.register`.
        include_input: add x itself (first for nerf, last for nerfstudio and
            tcnn); None takes the preset's default (nerf True, the others False).
        dtype: float16, float32 or float64.

    Returns:
        ``[..., 2·L·d (+ d)]``; each value within 1 ulp (float32) of the
        formula: sin/cos of ω_k·x with ω_k the preset's exact band (2^k, or
        2π·2^e, or π·2^k, never rounded). A band that is 2π times a power of
        two (tcnn's, nerfstudio's at whole exponents) takes the phase in
        turns, as :func:`fourier_features` does: x·2^e exactly, its quarter
        turns split off exactly, so where the angle is a multiple of π/2 the
        zero is exactly +0 and the other channel exactly ±1.

    Raises:
        PosEncError: for a NaN or infinite x, a negative or huge n_freqs, an
            unknown convention, an angle past 2**53 (in a band not taken in
            turns), an x that float16
            cannot hold with ``include_input``, or an output larger than this
            machine's memory, before any work.

    >>> nerf_encoding([0.5], 1, dtype=np.float64).round(4).tolist()
    [0.5, 0.4794, 0.8776]
    >>> nerf_encoding([[0.25, 1.0]], 2, convention="tcnn", dtype=np.float64).round(4).tolist()
    [[0.7071, 0.7071, 1.0, 0.0, 0.0, -1.0, 0.0, 1.0]]
    """
    shape = shape_of(x)
    plan = get(convention).plan(n_freqs)
    keep = plan.include_input if include_input is None else include_input
    if not isinstance(keep, (bool, np.bool_)):
        raise PosEncError(f"include_input must be True, False or None, got {show_value(include_input)}")
    dt = check_dtype(dtype)
    if shape is not None:  # before x is read: a huge view is refused in microseconds, not after its float64 copy
        lead, d = (shape[:-1], shape[-1]) if shape else ((), 1)
        check_size((*lead, d * (2 * len(plan.ladder) + int(keep))), dt, "field encoding",
                   work=math.prod(lead) * d * 8 + _block_work(d, len(plan.ladder)))
    pts = _coords(x, "x")
    lead, d, n = pts.shape[:-1], pts.shape[-1], len(plan.ladder)
    m = math.prod(lead)
    flat = pts.reshape(m, d)
    top = float(np.max(np.abs(flat))) if flat.size else 0.0
    bands = Bands.of(plan)
    if flat.size and len(bands.ladder):  # the bands in turns have no angle limit: x·2^e is exact at any size
        check_angle(top, bands.ladder.fastest, "x")
    if keep:
        check_raw(top, dt, "x")
    out = allocate((m, d * (2 * n + int(keep))), dt, "field encoding")
    enc = out[:, d:] if keep and plan.input_at == "first" else out[:, :2 * n * d]
    if keep:
        (out[:, :d] if plan.input_at == "first" else out[:, 2 * n * d:])[...] = flat
    rows = max(1, _BLOCK // max(1, d * n))
    for a in range(0, m if n else 0, rows):
        b = min(m, a + rows)
        s, c = bands.sincos(flat[a:b].reshape(-1))
        enc[a:b] = arrange(plan, s.reshape(b - a, d, n), c.reshape(b - a, d, n), np.float64)
    return out.reshape((*lead, out.shape[-1]))


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


def arrange(plan: FieldPlan, s: Any, c: Any, dtype: Any) -> Any:
    """The preset's channel order from sin/cos ``[m, d, n]`` (NumPy arrays or torch tensors): ``[m, 2·n·d]``."""
    m, d, n = s.shape
    numpy = isinstance(s, np.ndarray)
    stack: Any
    cat: Any
    if numpy:
        stack, cat = np.stack, np.concatenate
    else:  # a torch tensor (posenc.torch.fields): the same order, with torch's functions
        import torch

        stack, cat = torch.stack, torch.cat
    if plan.order == "nerf":  # per band k: sin of every coordinate, then cos: [m, n, 2, d]
        both: Any = stack((s, c), 1)
        out = both.transpose(0, 3, 1, 2) if numpy else both.permute(0, 3, 1, 2)
    elif plan.order == "blocks":  # all sines (coordinate-major), then all cosines
        out = cat((s.reshape(m, d * n), c.reshape(m, d * n)), -1)
    else:  # interleaved: per coordinate, per band, sin then cos: [m, d, n, 2]
        out = stack((s, c), -1)
    out = out.reshape(m, 2 * n * d)
    return out.astype(dtype) if numpy else out.to(dtype)


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


def fourier_features(x: Any, b: Any, *, dtype: Any = np.float32) -> np.ndarray:
    """Tancik et al.'s random Fourier features ``[cos(2π B v) | sin(2π B v)]``.

    Tancik et al. 2020, "Fourier Features Let Networks Learn High Frequency
    Functions in Low Dimensional Domains" (arXiv:2006.10739), §4 and their
    code (tancik/fourier-feature-networks ``Demo.ipynb``, ``input_mapping``).
    The angle is in turns, so only B·v mod 1 matters: each product B_ij·v_j
    is formed exactly and taken mod 1 before the sum
    (:func:`posenc.exact.dot.dot2_turns`), the sum split exactly into
    quarter turns and a rest of at most 1/8 turn
    (:func:`posenc.exact.core.turns_core`), and sin/cos of 2π times the
    rest taken by the exact path, then turned by the quarters (a swap and
    signs). The phase is held to 4·d³·2**-106 turns however large B·v is
    (exactly for d = 1), so there is no limit on the angle.

    Args:
        x: coordinates v ``[..., d]`` (a scalar: d = 1), d >= 1.
        b: B ``[m, d]``, finite reals (Gaussian σ·N(0, 1) in the paper).
        dtype: float16, float32 or float64.

    Returns:
        ``[..., 2m]``: the m cosines, then the m sines. Each value is within
        1 ulp of the formula (float32 or float64) where its magnitude is
        at least d³·2**-77 (float32) or d³·2**-45 (float64); a smaller one
        (a sine or cosine near its zero) is within 2π·4·d³·2**-106
        absolute. Where B·v is a multiple of 1/4 and its phase is held
        exactly (always for d = 1) the zero is exactly +0 and the other
        channel exactly ±1.

    >>> fourier_features([[1 / 12, 1 / 6]], [[1.0, 0.0], [0.0, 1.0]], dtype=np.float64).round(4).tolist()
    [[0.866, 0.5, 0.5, 0.866]]
    >>> fourier_features([[0.25], [1e8 + 0.5]], [[1.0]], dtype=np.float64).tolist()  # quarter turns: exact
    [[0.0, 1.0], [-1.0, 0.0]]
    """
    xs, bs = shape_of(x), shape_of(b)
    dt = check_dtype(dtype)
    if xs is not None and bs is not None and len(bs) == 2:  # before x and B are read: the output and the blocks
        lead, m = (xs[:-1] if xs else ()), bs[0]
        check_size((*lead, 2 * m), dt, "fourier_features output",
                   work=math.prod(lead) * bs[1] * 8 + _block_work(1, m))  # a block's arrays are [rows, m]
    pts = _coords(x, "x")
    mat = _matrix(b, pts.shape[-1])
    m, d = mat.shape
    flat = pts.reshape(-1, d)
    out = allocate((flat.shape[0], 2 * m), dt, "fourier_features output")
    rows = max(1, _BLOCK // (m * d))
    for a in range(0, flat.shape[0], rows):
        z = min(flat.shape[0], a + rows)
        hi, lo = dot2_turns(mat[None, :, :], flat[a:z, None, :], np.rint)  # B·x mod 1: [rows, m]
        s, c = turn_sincos(hi, lo)
        out[a:z, :m], out[a:z, m:] = c, s
    return out.reshape((*pts.shape[:-1], 2 * m))


def _matrix(b: Any, d: int) -> np.ndarray:
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
