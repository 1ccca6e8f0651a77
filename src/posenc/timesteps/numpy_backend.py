"""The timestep embedding's NumPy primitives: :mod:`posenc.exact`'s rows written straight into their halves.

:data:`NUMPY_TIMESTEPS` is what :func:`posenc.timestep_embedding` runs on.
t is read as float64 (``|t| < 2**53``); the preset's times
(:func:`~posenc.timesteps.conventions.preset_times`: Flux's rounded product)
are formed exactly, and each value rounded once from the exact angle's
sin/cos.

>>> from posenc.timesteps.conventions import GuidedDiffusion
>>> plan = GuidedDiffusion().plan(4)
>>> rows = NUMPY_TIMESTEPS.timestep_rows(NUMPY_TIMESTEPS.timestep_times([1]), GuidedDiffusion(), plan,
...                                      np.dtype(np.float64))
>>> rows.round(4).tolist()
[[0.5403, 1.0, 0.8415, 0.01]]
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import numpy as np

from ..errors import check_angle, check_dtype, check_positions, read_array
from ..exact import fill_sincos
from ..support.memory import allocate, check_size, shape_of
from .conventions import TimestepConvention, TimestepPlan, preset_times

__all__ = ["NUMPY_TIMESTEPS", "NumpyTimesteps", "Times", "render"]

#: Bytes per time of the working arrays beside the output: t's float64 copy and a rounding's temporaries.
_PER_TIME = 6 * 8

#: The exact path's blocks (:func:`posenc.exact.fill_sincos`: ~220 bytes for each of 16384 elements).
_BLOCK_WORK = 256 * 16384


class Times(NamedTuple):
    """Checked float64 times ``[...]`` and the dtype t came in (Flux's ``time_dtype="input"`` reads it)."""

    values: np.ndarray
    given: np.dtype


class NumpyTimesteps:
    """The :class:`~posenc.timesteps.backend.TimestepBackend` primitives over NumPy arrays (float16/32/64 rows)."""

    name = "numpy"

    def timestep_dtype(self, dtype: Any) -> np.dtype:
        return check_dtype(dtype)

    def check_timesteps(self, t: Any, dim: int, dtype: Any) -> None:
        shape = shape_of(t)
        if shape is not None:  # a ragged t: the times' check names it
            check_size((*shape, dim), dtype, "timestep embedding", work=math.prod(shape) * _PER_TIME + _BLOCK_WORK)

    def timestep_plan(self, preset: TimestepConvention, dim: Any, t: Any) -> TimestepPlan:
        return preset.plan(dim)

    def timestep_times(self, t: Any) -> Times:
        given = read_array(t, "t", "real numbers").dtype if hasattr(t, "dtype") else np.dtype(np.float64)
        return Times(check_positions(t, "t"), given)

    def timestep_rows(self, times: Times, preset: TimestepConvention, plan: TimestepPlan, dtype: Any) -> np.ndarray:
        flat = preset_times(preset, times.values.reshape(-1), times.given)
        if flat.size:
            check_angle(float(np.max(np.abs(flat))), plan.ladder.fastest, "t")
        return render(plan, flat, dtype).reshape((*times.values.shape, plan.dim))


def render(plan: TimestepPlan, times: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``[m, plan.dim]``: sin/cos of ``times[:, None]·ω`` placed as the plan says (float64 ``times [m]``)."""
    n = len(plan.ladder)
    out = allocate((times.shape[0], plan.dim), dtype, "timestep embedding", zeros=plan.dim > 2 * n)
    first, second = out[:, :n], out[:, n:2 * n]
    sin_out, cos_out = (second, first) if plan.cos_first else (first, second)
    fill_sincos(times, plan.ladder, sin_out, cos_out)
    return out


#: the NumPy primitives (no state: one is enough)
NUMPY_TIMESTEPS = NumpyTimesteps()
