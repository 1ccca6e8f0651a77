"""The timestep embedding, written once over a :class:`~posenc.timesteps.backend.TimestepBackend`.

:func:`timestep_embedding` takes the backend first, then the public
arguments. It validates at the boundary, once, before any work: the preset,
the dtype, the memory the output needs (sized before the ladder is built: a
wide dim takes a while to plan), the plan, then t; only then does the backend
build rows. :func:`posenc.timestep_embedding`, :func:`posenc.torch.timestep_embedding`
and :func:`posenc.jax.timestep_embedding` are this function bound to their
backend, so what one accepts the others accept.

>>> from posenc.timesteps.numpy_backend import NUMPY_TIMESTEPS
>>> timestep_embedding(NUMPY_TIMESTEPS, [1], 4, convention="ddpm", dtype="float64").round(4).tolist()
[[0.8415, 0.0001, 0.5403, 1.0]]
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import PosEncError, check_channels
from .conventions import get

if TYPE_CHECKING:
    from .backend import TimestepBackend

__all__ = ["timestep_embedding"]


def timestep_embedding(backend: TimestepBackend, t: Any, dim: Any, *, convention: Any, dtype: Any) -> Any:
    """``[..., dim]``: the sinusoidal embedding of t by ``convention``'s preset, on ``backend``."""
    preset = get(convention)
    dt = backend.timestep_dtype(dtype)
    backend.check_timesteps(t, _channels(dim), dt)  # before the ladder is built or t read: a huge view, at once
    plan = backend.timestep_plan(preset, dim, t)
    backend.check_timesteps(t, plan.dim, dt)
    return backend.timestep_rows(backend.timestep_times(t), preset, plan, dt)


def _channels(dim: Any) -> int:
    """``dim`` as the output's width where it is a valid channel count (else 1: the plan names it)."""
    try:
        return check_channels(dim, "dim")
    except PosEncError:
        return 1
