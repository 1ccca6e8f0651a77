"""The BiasBackend protocol: every backend implements it, and the relative biases are written once over it.

:func:`posenc.alibi_bias`, :func:`posenc.t5_bucket`, :func:`posenc.t5_bias`
and their torch and JAX forms are :mod:`posenc.bias.functions` bound to a
backend (issue 32). What this file holds them to: each backend has every
primitive and nothing the protocol does not name; torch and JAX give NumPy's
bits for every built-in ALiBi variant, causal or not, with and without
positions, and T5's buckets and bias for its settings, or refuse what NumPy
refuses; a minimal new backend, written here from the protocol alone, serves
the same functions.
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
from posenc.bias import Bloom, Mpt, Press
from posenc.bias import backend as protocol
from posenc.bias.backend import BIAS_PRIMITIVES, BiasBackend
from posenc.bias.functions import alibi_bias, t5_bias, t5_bucket
from posenc.bias.numpy_backend import NUMPY_BIAS
from posenc.bias.spec import AlibiSpec, T5Buckets
from protocols import (
    check_declared,
    check_implements_only,
    check_missing_one_is_no_backend,
    check_same,
)

VARIANTS = [Press(), Bloom(), Mpt(), Mpt(alibi_bias_max=16)]
_POSITIONS = np.array([[0, 1, 2, 3, 4], [0, 0, 0, 1, 2]])
_W = np.random.default_rng(5).standard_normal((32, 3)).astype(np.float32)
_OFFSETS = np.array([[-1, 0, 1, -8, -12, -128], [500, -(2**31), 2**31 - 1, 3, 64, -300]])


def _backends() -> list[Any]:
    others = (("posenc.torch.bias", "TORCH_BIAS"), ("posenc.jax.bias", "JAX_BIAS"))
    return [NUMPY_BIAS, *(getattr(importlib.import_module(m), n) for m, n in others)]


def test_primitives_are_the_protocols_members() -> None:
    check_declared(BiasBackend, BIAS_PRIMITIVES, protocol)


@pytest.mark.parametrize("backend", _backends(), ids=lambda b: b.name)
def test_each_backend_implements_every_primitive_and_nothing_else(backend: Any) -> None:
    check_implements_only(backend, BiasBackend, BIAS_PRIMITIVES)


def test_an_object_missing_a_primitive_is_no_backend() -> None:
    check_missing_one_is_no_backend(BiasBackend, BIAS_PRIMITIVES)


@pytest.mark.parametrize("positions", [None, "batched", "one-row"])
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("variant", VARIANTS, ids=repr)
def test_torch_and_jax_alibi_are_numpys_bits(variant: Any, causal: bool, positions: str | None) -> None:
    pos = {None: None, "batched": _POSITIONS, "one-row": _POSITIONS[0]}[positions]
    kw = {"offset": 1, "convention": variant, "causal": causal}
    for dtype in ("float32", "float64"):
        check_same(lambda: pt.alibi_bias(4, 5, 6, positions=None if pos is None else torch.from_numpy(pos),
                                         dtype=getattr(torch, dtype), **kw),  # noqa: B023 - called at once
                   lambda: posenc.alibi_bias(4, 5, 6, positions=pos, dtype=dtype, **kw))  # noqa: B023
    check_same(lambda: pj.alibi_bias(4, 5, 6, positions=None if pos is None else jnp.asarray(pos, jnp.int32), **kw),
               lambda: posenc.alibi_bias(4, 5, 6, positions=pos, **kw))


@pytest.mark.parametrize("settings", [{}, {"bidirectional": False}, {"num_buckets": 16, "max_distance": 64},
                                      {"bidirectional": False, "num_buckets": 34, "max_distance": 27}], ids=str)
def test_torch_and_jax_buckets_and_bias_are_numpys(settings: dict[str, Any]) -> None:
    check_same(lambda: pt.t5_bucket(torch.from_numpy(_OFFSETS), **settings),
               lambda: posenc.t5_bucket(_OFFSETS, **settings))
    check_same(lambda: pj.t5_bucket(jnp.asarray(_OFFSETS, jnp.int32), **settings),
               lambda: posenc.t5_bucket(_OFFSETS, **settings), dtype=False)
    if "num_buckets" in settings:
        return
    kw = {k: v for k, v in settings.items() if k != "num_buckets"}
    qp, kp = np.array([4, 9, 300]), np.array([0, 50, 100, 2**20])
    check_same(lambda: pt.t5_bias(torch.from_numpy(_W), 3, 4, q_positions=torch.from_numpy(qp),
                                  k_positions=torch.from_numpy(kp), **kw),
               lambda: posenc.t5_bias(_W, 3, 4, q_positions=qp, k_positions=kp, **kw))
    check_same(lambda: pj.t5_bias(jnp.asarray(_W), 3, 4, q_positions=jnp.asarray(qp, jnp.int32),
                                  k_positions=jnp.asarray(kp, jnp.int32), **kw),
               lambda: posenc.t5_bias(_W, 3, 4, q_positions=qp, k_positions=kp, **kw))
    check_same(lambda: pt.t5_bias(torch.from_numpy(_W), 2, 5, offset=3, **kw),
               lambda: posenc.t5_bias(_W, 2, 5, offset=3, **kw))
    check_same(lambda: pj.t5_bias(jnp.asarray(_W), 2, 5, offset=3, **kw),
               lambda: posenc.t5_bias(_W, 2, 5, offset=3, **kw))


@pytest.mark.parametrize("call", [
    lambda m, a: m.alibi_bias(4, 3, 2),
    lambda m, a: m.alibi_bias(2, 3, 0),
    lambda m, a: m.alibi_bias(2, 3, 2, convention="no-such-variant"),
    lambda m, a: m.alibi_bias(2, 3, 2, positions=a([[0, 1]])),
    lambda m, a: m.t5_bucket(a([1, 2]), num_buckets=3),
    lambda m, a: m.t5_bucket(a([1, 2]), spec=T5Buckets(), max_distance=64),
    lambda m, a: m.t5_bias(a(_W), 0, 3),
    lambda m, a: m.t5_bias(a(_W), 2, 3, q_positions=a([1, 2, 3])),
], ids=["query-past-keys", "no-heads", "unknown-variant", "positions-shape", "buckets-3", "spec-and-setting",
        "q-len-0", "q-positions-shape"])
def test_every_backend_refuses_what_numpy_refuses_with_its_message(call: Any) -> None:
    with pytest.raises(PosEncError) as numpy_error:
        call(posenc, np.asarray)
    for module, read in ((pt, torch.as_tensor), (pj, jnp.asarray)):
        with pytest.raises(PosEncError) as error:
            call(module, read)
        assert str(error.value) == str(numpy_error.value), module.__name__


def test_every_backend_names_itself_beside_an_unknown_setting() -> None:
    for module, where in ((posenc, "t5_bucket"), (pt, "posenc.torch.t5_bucket"), (pj, "posenc.jax.t5_bucket")):
        with pytest.raises(PosEncError, match=where):
            module.t5_bucket([1], buckets=3)


class Float32Products:
    """A new backend from the protocol alone: ALiBi's products in float32 (one rounding more), T5 by NumPy's steps.

    What a first port would write: the checks and the spec are the generic
    functions', the arrays its own.
    """

    name = "float32-products"

    def alibi_dtype(self, dtype: Any) -> Any:
        return NUMPY_BIAS.alibi_dtype(dtype)

    def check_alibi(self, spec: AlibiSpec, positions: Any, dtype: Any) -> None:
        NUMPY_BIAS.check_alibi(spec, positions, dtype)

    def alibi_positions(self, positions: Any, spec: AlibiSpec) -> Any:
        return np.asarray(positions, dtype=np.float32)

    def alibi_rows(self, spec: AlibiSpec, positions: Any, dtype: Any) -> Any:
        q, k, off = spec.q_len, spec.k_len, spec.offset
        kp = np.arange(k, dtype=np.float32) if positions is None else positions
        qp = kp[..., off:off + q]
        t = spec.convention.coefficient(qp[..., :, None], kp[..., None, :], kp[..., -1:, None], spec.causal)
        out = spec.slopes.astype(np.float32)[:, None, None] * np.asarray(t, np.float32)[..., None, :, :]
        if spec.causal:
            out = np.where(np.arange(k)[None, :] > np.arange(off, off + q)[:, None], -np.inf, out)
        return out.astype(dtype)

    def check_buckets(self, relative_position: Any) -> None:
        NUMPY_BIAS.check_buckets(relative_position)

    def bucket_offsets(self, value: Any, name: str, what: str) -> Any:
        return NUMPY_BIAS.bucket_offsets(value, name, what)

    def buckets(self, spec: T5Buckets, offsets: Any) -> Any:
        rel = np.asarray(offsets)
        if spec.bidirectional:
            return np.where(rel > 0, spec.per_direction, 0) + spec.distance_bucket(np.abs(rel))
        return spec.distance_bucket(-np.minimum(rel, 0))

    def t5_weights(self, weights: Any) -> Any:
        return NUMPY_BIAS.t5_weights(weights)

    def check_t5(self, weights: Any, q_len: int, k_len: int) -> None:
        NUMPY_BIAS.check_t5(weights, q_len, k_len)

    def t5_positions(self, value: Any, first: int, length: int, name: str, weights: Any) -> Any:
        return NUMPY_BIAS.t5_positions(value, first, length, name, weights)

    def t5_lookup(self, weights: Any, spec: T5Buckets, q_positions: Any, k_positions: Any, offset: int) -> Any:
        return np.moveaxis(weights[self.buckets(spec, k_positions[None, :] - q_positions[:, None])], -1, 0)


def test_a_minimal_new_backend_serves_the_same_functions() -> None:
    new = Float32Products()
    assert isinstance(new, BiasBackend)
    for variant in VARIANTS:
        for pos in (None, _POSITIONS):
            kw = {"offset": 1, "positions": pos, "convention": variant, "causal": True}
            got = alibi_bias(new, 4, 5, 6, dtype="float32", **kw)
            np.testing.assert_allclose(got, posenc.alibi_bias(4, 5, 6, **kw), rtol=1e-6)  # float32 products: close
    np.testing.assert_array_equal(t5_bucket(new, _OFFSETS, spec=None), posenc.t5_bucket(_OFFSETS))
    got = t5_bias(new, _W, 3, 4, offset=2, q_positions=None, k_positions=None, bidirectional=True, max_distance=128)
    np.testing.assert_array_equal(got, posenc.t5_bias(_W, 3, 4, offset=2))
    with pytest.raises(PosEncError, match="offset"):
        alibi_bias(new, 4, 3, 2, offset=0, positions=None, convention="press", causal=True, dtype="float32")
