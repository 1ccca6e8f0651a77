"""Diffusion timesteps: the sinusoid of t (integer steps, fractional steps, continuous t or σ), per framework.

:mod:`~posenc.timesteps.conventions` holds the presets (diffusers, DDPM,
guided-diffusion, Flux) and the registry; :mod:`~posenc.timesteps.functions`
writes :func:`timestep_embedding` once over a backend
(:mod:`~posenc.timesteps.backend`), :mod:`~posenc.timesteps.numpy_backend`
computes it from :mod:`posenc.exact`'s angles.
"""

from .conventions import (
    CONVENTIONS,
    DDPM,
    Diffusers,
    Flux,
    GuidedDiffusion,
    TimestepConvention,
    TimestepPlan,
    get,
    register,
    round_to,
)
from .embedding import timestep_embedding

__all__ = [
    "CONVENTIONS",
    "DDPM",
    "Diffusers",
    "Flux",
    "GuidedDiffusion",
    "TimestepConvention",
    "TimestepPlan",
    "get",
    "register",
    "round_to",
    "timestep_embedding",
]
