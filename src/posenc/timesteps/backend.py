"""The :class:`TimestepBackend` protocol: the array primitives the timestep embedding needs, and nothing else.

:func:`posenc.timestep_embedding`, :func:`posenc.torch.timestep_embedding`
and :func:`posenc.jax.timestep_embedding` are written once, in
:mod:`posenc.timesteps.functions`, over these primitives. The settings never
reach a backend: the generic function resolves the preset, checks the dtype
and sizes the output before the ladder is built, asks the backend for the
plan, then hands it checked times and that plan. It is the sinusoid's
arrangement (:mod:`posenc.sinusoidal.backend`) and RoPE's
(:mod:`posenc.rope.backend`), after einops' ``AbstractBackend``.

A backend is any object with these attributes (a structural
:class:`typing.Protocol`):

>>> from posenc.timesteps.numpy_backend import NUMPY_TIMESTEPS
>>> isinstance(NUMPY_TIMESTEPS, TimestepBackend), NUMPY_TIMESTEPS.name
(True, 'numpy')
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from .conventions import TimestepConvention, TimestepPlan

__all__ = ["TIMESTEP_PRIMITIVES", "TimestepBackend"]


@runtime_checkable
class TimestepBackend(Protocol):
    """The array primitives of one framework, for :mod:`posenc.timesteps.functions`.

    Shapes: t ``[...]``, rows ``[..., dim]``. Each check raises
    :class:`posenc.PosEncError` before any work.
    """

    #: the framework's name (``"numpy"``, ``"torch"``, ``"jax"``): what a message or a test names
    name: str

    def timestep_dtype(self, dtype: Any) -> Any:
        """The output dtype, checked (this framework's dtypes)."""
        ...

    def check_timesteps(self, t: Any, dim: int, dtype: Any) -> None:
        """The memory check of ``[..., dim]`` rows for t as given (its shape, its device), before t is read."""
        ...

    def timestep_plan(self, preset: TimestepConvention, dim: Any, t: Any) -> TimestepPlan:
        """The plan the rows are built from: ``preset.plan(dim)``, or this framework's form of it (t: as given)."""
        ...

    def timestep_times(self, t: Any) -> Any:
        """t read and checked by this framework's rule (values, dtype), with what the rows need of it."""
        ...

    def timestep_rows(self, times: Any, preset: TimestepConvention, plan: TimestepPlan, dtype: Any) -> Any:
        """``[..., plan.dim]``: the preset's times of checked t, exact sin/cos by the ladder, placed, in ``dtype``."""
        ...


#: the primitives every timestep backend implements (what tests/timesteps/test_timesteps_backend.py checks)
TIMESTEP_PRIMITIVES = ("name", "timestep_dtype", "check_timesteps", "timestep_plan", "timestep_times",
                       "timestep_rows")
