"""The TimestepBackend protocol: every backend implements it, and the timestep embedding is written once over it.

:func:`posenc.timestep_embedding`, :func:`posenc.torch.timestep_embedding`
and :func:`posenc.jax.timestep_embedding` are
:func:`posenc.timesteps.functions.timestep_embedding` bound to a backend
(issue 32). What this file holds them to: each backend has every primitive
and nothing the protocol does not name; torch and JAX give NumPy's bits for
every built-in preset, odd and even widths, or refuse what NumPy refuses with
its message; a minimal new backend, written here from the protocol alone,
serves the same function.
"""

from __future__ import annotations

import importlib
from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest
import torch

import posenc
import posenc.jax as pj
import posenc.torch as pt
from posenc import PosEncError
from posenc.timesteps import DDPM, Diffusers, Flux, GuidedDiffusion
from posenc.timesteps import backend as protocol
from posenc.timesteps.backend import TIMESTEP_PRIMITIVES, TimestepBackend
from posenc.timesteps.conventions import TimestepConvention, TimestepPlan
from posenc.timesteps.functions import timestep_embedding
from posenc.timesteps.numpy_backend import NUMPY_TIMESTEPS
from protocols import (
    check_declared,
    check_implements_only,
    check_missing_one_is_no_backend,
    check_same,
    check_same_refusal,
)

#: every built-in preset, at its defaults and at the settings checkpoints use
PRESETS = [Diffusers(), DDPM(), GuidedDiffusion(), Flux(), Diffusers(True, 0.0, 1000.0), Flux(time_dtype="bfloat16"),
           Flux(time_dtype="float32")]
_DIMS = (7, 8, 64)
_STEPS = np.array([0, 1, 7, 500, 999])
_FRACTIONS = np.array([0.0, 0.03125, 0.5, 12.25, 0.999], dtype=np.float32)


def _backends() -> list[Any]:
    others = (("posenc.torch.timesteps", "TORCH_TIMESTEPS"), ("posenc.jax.timesteps", "JAX_TIMESTEPS"))
    return [NUMPY_TIMESTEPS, *(getattr(importlib.import_module(m), n) for m, n in others)]


def test_primitives_are_the_protocols_members() -> None:
    check_declared(TimestepBackend, TIMESTEP_PRIMITIVES, protocol)


@pytest.mark.parametrize("backend", _backends(), ids=lambda b: b.name)
def test_each_backend_implements_every_primitive_and_nothing_else(backend: Any) -> None:
    check_implements_only(backend, TimestepBackend, TIMESTEP_PRIMITIVES)


def test_an_object_missing_a_primitive_is_no_backend() -> None:
    check_missing_one_is_no_backend(TimestepBackend, TIMESTEP_PRIMITIVES)


@pytest.mark.parametrize("t", [_STEPS, _FRACTIONS], ids=["steps", "fractions"])
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("dim", _DIMS)
@pytest.mark.parametrize("preset", PRESETS, ids=repr)
def test_torch_gives_numpys_bits_for_every_preset(preset: TimestepConvention, dim: int, dtype: str,
                                                  t: np.ndarray) -> None:
    check_same(lambda: pt.timestep_embedding(torch.from_numpy(t), dim, convention=preset, dtype=getattr(torch, dtype)),
               lambda: posenc.timestep_embedding(t, dim, convention=preset, dtype=dtype))


@pytest.mark.parametrize("t", [_STEPS, _FRACTIONS], ids=["steps", "fractions"])
@pytest.mark.parametrize("dim", _DIMS)
@pytest.mark.parametrize("preset", PRESETS, ids=repr)
def test_jax_gives_numpys_float32_bits_for_every_preset(preset: TimestepConvention, dim: int, t: np.ndarray) -> None:
    jt = jnp.asarray(t.astype(np.int32) if t.dtype.kind == "i" else t)
    check_same(lambda: pj.timestep_embedding(jt, dim, convention=preset),
               lambda: posenc.timestep_embedding(t, dim, convention=preset))


@pytest.mark.parametrize("call", [
    lambda m, a: m.timestep_embedding(a([1, 2]), 0),
    lambda m, a: m.timestep_embedding(a([1.0, float("nan")]), 8),
    lambda m, a: m.timestep_embedding(a([1, 2]), 8, convention="no-such-preset"),
    lambda m, a: m.timestep_embedding(a([1, 2]), 8.5),
    lambda m, a: m.timestep_embedding(a([1, 2]), 2, convention=Diffusers()),
], ids=["dim0", "nan", "unknown-preset", "dim-float", "shift-too-large"])
def test_every_backend_refuses_what_numpy_refuses_with_its_message(call: Any) -> None:
    with pytest.raises(PosEncError) as numpy_error:
        call(posenc, np.asarray)
    for module, read in ((pt, torch.tensor), (pj, jnp.asarray)):
        with pytest.raises(PosEncError) as error:
            call(module, read)
        check_same_refusal(str(error.value), str(numpy_error.value))


def test_every_backend_refuses_a_bad_dtype_in_its_own_words() -> None:
    for module, dtype in ((posenc, "int8"), (pt, torch.int8), (pj, jnp.int8)):
        with pytest.raises(PosEncError, match="dtype"):
            module.timestep_embedding([1, 2], 8, dtype=dtype)


class Float64Rows:
    """A new backend from the protocol alone: float64 rows by the plain formula (libm), no exact core.

    Only the rows are new; the checks are NumPy's. It is what a CuPy or MLX
    port would write first, and the generic function serves it unchanged.
    """

    name = "float64-rows"

    def timestep_dtype(self, dtype: Any) -> Any:
        return NUMPY_TIMESTEPS.timestep_dtype(dtype)

    def check_timesteps(self, t: Any, dim: int, dtype: Any) -> None:
        NUMPY_TIMESTEPS.check_timesteps(t, dim, dtype)

    def timestep_plan(self, preset: TimestepConvention, dim: Any, t: Any) -> TimestepPlan:
        return preset.plan(dim)

    def timestep_times(self, t: Any) -> Any:
        return np.asarray(t, dtype=np.float64)

    def timestep_rows(self, times: Any, preset: TimestepConvention, plan: TimestepPlan, dtype: Any) -> Any:
        angle = times[..., None] * plan.ladder.w0  # ω's leading float64 word: close, not exact
        halves = [np.cos(angle), np.sin(angle)] if plan.cos_first else [np.sin(angle), np.cos(angle)]
        rows = np.concatenate([*halves, np.zeros((*times.shape, plan.dim - 2 * angle.shape[-1]))], axis=-1)
        return rows.astype(dtype)


def test_a_minimal_new_backend_serves_the_same_function() -> None:
    new = Float64Rows()
    assert isinstance(new, TimestepBackend)
    for preset in (Diffusers(), GuidedDiffusion(), Flux()):
        for dim in (7, 64):
            got = timestep_embedding(new, _STEPS, dim, convention=preset, dtype="float64")
            want = posenc.timestep_embedding(_STEPS, dim, convention=preset, dtype="float64")
            np.testing.assert_allclose(got, want, rtol=0, atol=1e-9)  # libm's sin of a rounded angle: close
    with pytest.raises(PosEncError, match="dim"):
        timestep_embedding(new, [0], 0, convention="diffusers", dtype="float64")
