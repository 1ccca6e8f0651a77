"""The diffusion timestep embedding: sin and cos of t·ω_k for every real t, exact, in any preset's layout."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..errors import PosEncError, check_angle, check_channels, check_dtype, check_positions, read_array
from ..exact import fill_sincos
from ..support.memory import allocate, check_size, shape_of
from .conventions import TimestepPlan, get, preset_times

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
    shape = shape_of(t)
    preset = get(convention)
    dt = check_dtype(dtype)
    if shape is not None:  # before t is read or the ladder built: a huge view is refused in microseconds
        _check_size(shape, _channels(dim), dt)
    plan = preset.plan(dim)
    if shape is not None:
        _check_size(shape, plan.dim, dt)
    given = read_array(t, "t", "real numbers").dtype if hasattr(t, "dtype") else np.dtype(np.float64)
    times = check_positions(t, "t")
    flat = preset_times(preset, times.reshape(-1), given)
    if flat.size:
        check_angle(float(np.max(np.abs(flat))), plan.ladder.fastest, "t")
    return render(plan, flat, dt).reshape((*times.shape, plan.dim))


#: Bytes per time of the working arrays beside the output: t's float64 copy and a rounding's temporaries.
_PER_TIME = 6 * 8

#: The exact path's blocks (:func:`posenc.exact.fill_sincos`: ~220 bytes for each of 16384 elements).
_BLOCK_WORK = 256 * 16384


def _channels(dim: Any) -> int:
    """``dim`` as the output's width where it is a valid channel count (else 1: the preset names it)."""
    try:
        return check_channels(dim, "dim")
    except PosEncError:
        return 1


def _check_size(shape: tuple[int, ...], dim: int, dt: np.dtype) -> None:
    check_size((*shape, dim), dt, "timestep embedding", work=math.prod(shape) * _PER_TIME + _BLOCK_WORK)


def render(plan: TimestepPlan, times: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``[m, plan.dim]``: sin/cos of ``times[:, None]·ω`` placed as the plan says (float64 ``times [m]``)."""
    n = len(plan.ladder)
    out = allocate((times.shape[0], plan.dim), dtype, "timestep embedding", zeros=plan.dim > 2 * n)
    first, second = out[:, :n], out[:, n:2 * n]
    sin_out, cos_out = (second, first) if plan.cos_first else (first, second)
    fill_sincos(times, plan.ladder, sin_out, cos_out)
    return out
