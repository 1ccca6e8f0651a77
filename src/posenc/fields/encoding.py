"""Neural-field encodings of coordinates: the NeRF family's frequency bands and Tancik et al.'s Fourier features.

:func:`nerf_encoding` and :func:`fourier_features` are :mod:`posenc.fields.functions` on NumPy
(:data:`~posenc.fields.numpy_backend.NUMPY_FIELDS`); their parameters are every framework's
(:func:`posenc.support.signatures.parameters_of`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import functions
from .numpy_backend import NUMPY_FIELDS

__all__ = ["fourier_features", "nerf_encoding"]


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
    return functions.nerf_encoding(NUMPY_FIELDS, x, n_freqs, convention=convention, include_input=include_input,
                                   dtype=dtype)


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
    return functions.fourier_features(NUMPY_FIELDS, x, b, dtype=dtype)
