"""The diffusion timestep embedding: sin and cos of t·ω_k for every real t, exact, in any preset's layout.

:func:`timestep_embedding` is :func:`posenc.timesteps.functions.timestep_embedding` on NumPy
(:data:`~posenc.timesteps.numpy_backend.NUMPY_TIMESTEPS`); its parameters are every framework's
(:func:`posenc.support.forms.backend_form`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import functions
from .numpy_backend import NUMPY_TIMESTEPS

__all__ = ["timestep_embedding"]


def timestep_embedding(t: Any, dim: Any, *, convention: Any = "diffusers", dtype: Any = np.float32) -> np.ndarray:
    """The sinusoidal embedding of diffusion timesteps (or noise levels), ``[..., dim]``.

    Args:
        t: a real scalar or array ``[...]``: integer steps (0 … 999), fractional
            steps, or continuous t or σ (``|t| < 2**53``, finite).
        dim: output channels, >= 1 (an odd dim ends with a zero channel).
        convention: a preset of :mod:`posenc.timesteps` or its name:
            ``"diffusers"`` (:class:`~posenc.timesteps.Diffusers` at its
            defaults, which are ``"ddpm"``'s), ``"guided-diffusion"``, ``"flux"``,
            or one added with :func:`posenc.timesteps.register`.
        dtype: float16, float32 or float64; each value is rounded once from the
            exact angle's sin/cos.

    Returns:
        ``[..., dim]`` in ``dtype``; values within 1 ulp (float32, float16) of
        the formula evaluated exactly.

    Raises:
        PosEncError: for a NaN or infinite t, a dim below 1, an unknown
            convention, an angle past 2**53, a t NumPy cannot read (a
            bfloat16, meta or grad-requiring tensor: posenc.torch takes
            those), or an output larger than this machine's memory, before any
            work.

    >>> from posenc.timesteps import Diffusers
    >>> timestep_embedding(0, 4).tolist()
    [0.0, 0.0, 1.0, 1.0]
    >>> timestep_embedding([1.0], 4, convention=Diffusers(flip_sin_to_cos=True), dtype=np.float64).round(4).tolist()
    [[0.5403, 1.0, 0.8415, 0.0001]]
    >>> timestep_embedding(0.5, 3, convention="flux", dtype=np.float64).round(4).tolist()
    [-0.8838, -0.4678, 0.0]
    """
    return functions.timestep_embedding(NUMPY_TIMESTEPS, t, dim, convention=convention, dtype=dtype)
