"""Neural-field encodings of coordinates: the NeRF family's frequency bands and Tancik et al.'s Fourier features."""

from __future__ import annotations

from typing import Any

import numpy as np

from .._compile import outside_compile
from ..errors import PosEncError, as_array, check_angle, check_dtype, check_positions, shape_text, show_value
from ..exact import Ladder, fill_sincos
from ..exact.core import quadrant, turns_core
from ..exact.dot import dot2_turns
from ..exact.ladder import decimal_pi
from ..memory import allocate
from .conventions import FieldPlan, get

__all__ = ["arrange", "fourier_features", "nerf_encoding"]


@outside_compile("nerf_encoding")
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
        2π·2^e, or π·2^k, never rounded).

    Raises:
        PosEncError: for a NaN or infinite x, a negative or huge n_freqs, an
            unknown convention, or an angle past 2**53.

    >>> nerf_encoding([0.5], 1, dtype=np.float64).round(4).tolist()
    [0.5, 0.4794, 0.8776]
    >>> nerf_encoding([[0.25, 1.0]], 2, convention="tcnn", dtype=np.float64).round(4).tolist()
    [[0.7071, 0.7071, 1.0, 0.0, 0.0, -1.0, -0.0, 1.0]]
    """
    pts = _coords(x, "x")
    plan = get(convention).plan(n_freqs)
    keep = plan.include_input if include_input is None else include_input
    if not isinstance(keep, (bool, np.bool_)):
        raise PosEncError(f"include_input must be True, False or None, got {show_value(include_input)}")
    dt = check_dtype(dtype)
    flat = pts.reshape(-1)
    if flat.size and len(plan.ladder):
        check_angle(float(np.max(np.abs(flat))), plan.ladder.fastest, "x")
    s, c = _sincos(flat, None, plan.ladder)
    m, d, n = int(np.prod(pts.shape[:-1])), pts.shape[-1], len(plan.ladder)
    enc = arrange(plan, s.reshape(m, d, n), c.reshape(m, d, n), dt)
    if keep:
        raw = pts.reshape(m, d).astype(dt)
        enc = np.concatenate([raw, enc] if plan.input_at == "first" else [enc, raw], axis=-1)
    return enc.reshape((*pts.shape[:-1], enc.shape[-1]))


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


@outside_compile("fourier_features")
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
    pts = _coords(x, "x")
    mat = _matrix(b, pts.shape[-1])
    dt = check_dtype(dtype)
    hi, lo = dot2_turns(mat[None, :, :], pts.reshape(-1, 1, pts.shape[-1]), np.rint)  # B·x mod 1: [points, m]
    q, f, g = turns_core(hi.reshape(-1), lo.reshape(-1))  # its quarter turns and the rest, exactly
    s, c = quadrant(q[:, None], *_sincos(f, g, two_pi()))
    m = mat.shape[0]
    out = np.concatenate([c.reshape(-1, m), s.reshape(-1, m)], axis=-1) + 0.0  # an exact zero is +0
    return out.astype(dt).reshape((*pts.shape[:-1], 2 * m))


def _matrix(b: Any, d: int) -> np.ndarray:
    arr = as_array(b, "B")
    if d < 1:  # an empty sum: no coordinate to encode (and dot2 needs a term)
        raise PosEncError(f"x must hold at least one coordinate on its last axis, got d = {d}")
    if arr.ndim != 2 or arr.shape[1] != d or arr.shape[0] < 1:
        raise PosEncError(f"B must be a matrix [m, d] with m >= 1 and d = {d} (the coordinates' last axis), "
                          f"got shape {shape_text(arr.shape)}")
    return check_positions(arr, "B")
