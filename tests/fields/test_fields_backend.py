"""The FieldBackend protocol: every backend implements it, and the field encodings are written once over it.

:func:`posenc.nerf_encoding` and :func:`posenc.fourier_features`, and their
torch and JAX forms, are :mod:`posenc.fields.functions` bound to a backend
(issue 32). What this file holds them to: each backend has every primitive
and nothing the protocol does not name; torch and JAX give NumPy's bits for
every built-in preset, a few band counts, with and without the raw input,
or refuse what NumPy refuses; a minimal new backend, written here from the
protocol alone, serves the same functions.
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
from posenc.fields import NeRF, Nerfstudio, TinyCudaNN
from posenc.fields import backend as protocol
from posenc.fields.backend import FIELD_PRIMITIVES, FieldBackend
from posenc.fields.conventions import FieldConvention, FieldPlan
from posenc.fields.functions import fourier_features, nerf_encoding
from posenc.fields.numpy_backend import NUMPY_FIELDS, arrange
from protocols import (
    check_declared,
    check_implements_only,
    check_missing_one_is_no_backend,
    check_same,
    check_same_refusal,
)

#: every built-in preset, at its defaults and at other settings
PRESETS = [NeRF(), NeRF(log_sampling=False), Nerfstudio(), Nerfstudio(-1.0, 4.5), TinyCudaNN()]
_X = np.array([[0.1, -0.7, 0.3], [1.0, 0.0, -1.0], [0.25, 2.5, -3.125]], dtype=np.float32)
_B = np.array([[1.0, 0.0, 2.0], [2.0, 1.0, -0.5], [-2.5, 0.75, 3.0], [0.3, -0.7, 12.0]], dtype=np.float32)


def _backends() -> list[Any]:
    others = (("posenc.torch.fields", "TORCH_FIELDS"), ("posenc.jax.fields", "JAX_FIELDS"))
    return [NUMPY_FIELDS, *(getattr(importlib.import_module(m), n) for m, n in others)]


def test_primitives_are_the_protocols_members() -> None:
    check_declared(FieldBackend, FIELD_PRIMITIVES, protocol)


@pytest.mark.parametrize("backend", _backends(), ids=lambda b: b.name)
def test_each_backend_implements_every_primitive_and_nothing_else(backend: Any) -> None:
    check_implements_only(backend, FieldBackend, FIELD_PRIMITIVES)


def test_an_object_missing_a_primitive_is_no_backend() -> None:
    check_missing_one_is_no_backend(FieldBackend, FIELD_PRIMITIVES)


@pytest.mark.parametrize("keep", [None, True, False])
@pytest.mark.parametrize("n", [0, 1, 4])
@pytest.mark.parametrize("preset", PRESETS, ids=repr)
def test_torch_and_jax_nerf_rows_are_numpys_bits(preset: FieldConvention, n: int, keep: bool | None) -> None:
    for dtype in ("float16", "float32", "float64"):
        check_same(lambda: pt.nerf_encoding(torch.from_numpy(_X), n, convention=preset, include_input=keep,
                                            dtype=getattr(torch, dtype)),  # noqa: B023 - called at once
                   lambda: posenc.nerf_encoding(_X, n, convention=preset, include_input=keep, dtype=dtype))  # noqa: B023
    check_same(lambda: pj.nerf_encoding(jnp.asarray(_X), n, convention=preset, include_input=keep),
               lambda: posenc.nerf_encoding(_X, n, convention=preset, include_input=keep))


@pytest.mark.parametrize("m", [1, 4])
@pytest.mark.parametrize("d", [1, 3])
def test_torch_and_jax_fourier_features_are_numpys_bits(d: int, m: int) -> None:
    x, b = _X[:, :d], _B[:m, :d]
    for dtype in ("float16", "float32", "float64"):
        check_same(lambda: pt.fourier_features(torch.from_numpy(x), torch.from_numpy(b),
                                               dtype=getattr(torch, dtype)),  # noqa: B023 - called at once
                   lambda: posenc.fourier_features(x, b, dtype=dtype))  # noqa: B023
    check_same(lambda: pj.fourier_features(jnp.asarray(x), jnp.asarray(b)), lambda: posenc.fourier_features(x, b))


@pytest.mark.parametrize("call", [
    lambda m, a: m.nerf_encoding(a([0.5]), -1),
    lambda m, a: m.nerf_encoding(a([0.5]), 2, convention="no-such-preset"),
    lambda m, a: m.nerf_encoding(a([0.5]), 2, include_input="yes"),
    lambda m, a: m.nerf_encoding(a([0.5, float("nan")]), 2),
    lambda m, a: m.fourier_features(a([0.5, float("inf")]), a([[1.0, 2.0]])),
], ids=["bands-1", "unknown-preset", "include-input", "nan", "inf"])
def test_every_backend_refuses_what_numpy_refuses_with_its_message(call: Any) -> None:
    with pytest.raises(PosEncError) as numpy_error:
        call(posenc, np.asarray)
    for module, read in ((pt, lambda v: torch.tensor(v, dtype=torch.float32)),
                         (pj, lambda v: jnp.asarray(v, dtype=jnp.float32))):
        with pytest.raises(PosEncError) as error:
            call(module, read)
        check_same_refusal(str(error.value), str(numpy_error.value))


@pytest.mark.parametrize("module", [posenc, pt, pj], ids=lambda m: m.__name__)
def test_every_backend_refuses_a_matrix_of_another_width(module: Any) -> None:
    with pytest.raises(PosEncError, match=r"\bd = 3\b|B's d = 2"):
        module.fourier_features(np.ones((2, 3), np.float32) if module is not pt else torch.ones(2, 3),
                                np.ones((4, 2), np.float32) if module is not pt else torch.ones(4, 2))


class Float64Rows:
    """A new backend from the protocol alone: float64 rows by the plain formula (libm), no exact core.

    Only the rows are new; the checks are NumPy's, and so is the channel
    order (:func:`posenc.fields.numpy_backend.arrange`, written once for
    every framework).
    """

    name = "float64-rows"

    def field_dtype(self, dtype: Any) -> Any:
        return NUMPY_FIELDS.field_dtype(dtype)

    def field_plan(self, preset: FieldConvention, n_freqs: Any) -> FieldPlan:
        return preset.plan(n_freqs)

    def check_nerf(self, x: Any, plan: FieldPlan, include_input: bool, dtype: Any) -> None:
        NUMPY_FIELDS.check_nerf(x, plan, include_input, dtype)

    def nerf_points(self, x: Any) -> Any:
        return np.atleast_1d(np.asarray(x, dtype=np.float64))

    def nerf_rows(self, points: Any, plan: FieldPlan, include_input: bool, dtype: Any) -> Any:
        flat = points.reshape(-1, points.shape[-1])
        angle = flat[..., None] * plan.ladder.w0  # [m, d, n]
        enc = arrange(plan, np.sin(angle), np.cos(angle))
        parts = [flat, enc] if plan.input_at == "first" else [enc, flat]
        out = np.concatenate(parts if include_input else [enc], axis=-1)
        return out.reshape((*points.shape[:-1], out.shape[-1])).astype(dtype)

    def check_fourier(self, x: Any, b: Any, dtype: Any) -> None:
        NUMPY_FIELDS.check_fourier(x, b, dtype)

    def fourier_points(self, x: Any) -> Any:
        return np.atleast_1d(np.asarray(x, dtype=np.float64))

    def fourier_matrix(self, b: Any, points: Any) -> Any:
        return NUMPY_FIELDS.fourier_matrix(b, points)

    def fourier_rows(self, points: Any, matrix: Any, dtype: Any) -> Any:
        phase = 2 * np.pi * points @ matrix.T
        return np.concatenate([np.cos(phase), np.sin(phase)], axis=-1).astype(dtype)


def test_a_minimal_new_backend_serves_the_same_functions() -> None:
    new = Float64Rows()
    assert isinstance(new, FieldBackend)
    x = _X.astype(np.float64)
    for preset in PRESETS:
        got = nerf_encoding(new, x, 4, convention=preset, include_input=True, dtype="float64")
        want = posenc.nerf_encoding(x, 4, convention=preset, include_input=True, dtype="float64")
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)  # libm's sin: close, not bits
    got = fourier_features(new, x, _B.astype(np.float64), dtype="float64")
    np.testing.assert_allclose(got, posenc.fourier_features(x, _B, dtype="float64"), rtol=0, atol=1e-12)
    with pytest.raises(PosEncError, match="include_input"):
        nerf_encoding(new, x, 4, convention="nerf", include_input=1, dtype="float64")
