"""The Backend protocol: each backend implements every primitive, and the generic functions use only them.

A recording backend (NumPy's primitives, each call logged) shows what
:mod:`posenc.rope.functions` does with a backend: every check (the settings,
xPos, the memory, the positions and their shape) before a row is built, and
nothing built after a refusal. A minimal new backend (float64 rows only,
written here from the protocol) gives NumPy's bits through the same function.
"""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

import posenc
from posenc import PosEncError, RopeConfig
from posenc.rope import backend as protocol
from posenc.rope import functions
from posenc.rope.backend import PRIMITIVES, Backend
from posenc.rope.numpy_backend import NUMPY, NumpyBackend
from posenc.sinusoidal.backend import ENCODING_PRIMITIVES


def _backends() -> list[Any]:
    found = [NUMPY]
    for framework, module, name in (("torch", "posenc.torch.backend", "TORCH"),
                                    ("jax", "posenc.jax.backend", "JAX")):
        pytest.importorskip(framework)
        found.append(getattr(importlib.import_module(module), name))
    return found


def test_primitives_are_the_protocols_members() -> None:
    declared = {n for n in vars(protocol.Backend) if not n.startswith("_")} | set(
        protocol.Backend.__annotations__)
    assert declared == set(PRIMITIVES)


@pytest.mark.parametrize("backend", _backends(), ids=lambda b: b.name)
def test_each_backend_implements_every_primitive(backend: Any) -> None:
    assert isinstance(backend, Backend)
    missing = [n for n in PRIMITIVES if not hasattr(backend, n)]
    assert missing == []
    # nothing else: a backend object serves this protocol and the sinusoid's (posenc.sinusoidal.backend)
    public = {n for c in type(backend).__mro__[:-1] for n in vars(c) if not n.startswith("_")}
    assert public == set(PRIMITIVES) | set(ENCODING_PRIMITIVES)


def test_an_object_missing_a_primitive_is_no_backend() -> None:
    class Half:
        name = "half"

        def rotate(self, *args: Any) -> None:
            return None

    assert not isinstance(Half(), Backend)


class Recording(NumpyBackend):
    """NumPy's primitives, each call from outside logged by name (a primitive's own calls are not)."""

    name = "recording"

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.depth = 0

    def __getattribute__(self, attr: str) -> Any:
        value = object.__getattribute__(self, attr)
        if attr not in PRIMITIVES or not callable(value):
            return value

        def logged(*args: Any, **kwargs: Any) -> Any:
            if self.depth == 0:
                self.calls.append(attr)
            self.depth += 1
            try:
                return value(*args, **kwargs)
            finally:
                self.depth -= 1

        return logged


def test_apply_rope_checks_everything_before_it_builds_a_row() -> None:
    b = Recording()
    x = np.ones((3, 8), np.float32)
    out = functions.apply_rope(b, x, [0, 1, 2], base=100.0)
    assert np.array_equal(out, posenc.apply_rope(x, [0, 1, 2], base=100.0))
    assert b.calls == ["sequence_dim", "float_input", "check_output", "positions", "check_positions_shape",
                       "frequencies", "rotation_dtype", "cos_sin", "rotate"]


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"base": 100.0, "lay_out": "half"}, "unknown RoPE setting lay_out='half'"),
    ({"spec": RopeConfig(8), "base": 100.0}, r"base=100\.0: part of the spec"),
    ({"role": "q"}, "role is for xPos"),
    ({"seq_len": 0}, "seq_len"),
])
def test_a_refusal_comes_before_the_backend_is_asked_for_anything_but_x(kwargs: dict[str, Any], match: str) -> None:
    b = Recording()
    with pytest.raises(PosEncError, match=match):
        functions.apply_rope(b, np.ones((3, 8), np.float32), [0, 1, 2], **kwargs)
    assert b.calls == ["sequence_dim", "float_input"]


def test_bad_positions_are_refused_before_any_row() -> None:
    b = Recording()
    with pytest.raises(PosEncError, match="positions of shape"):
        functions.apply_rope(b, np.ones((3, 8), np.float32), [0, 1], base=100.0)
    assert "cos_sin" not in b.calls and b.calls[-1] == "check_positions_shape"


def test_rope_cos_sin_checks_before_it_builds() -> None:
    b = Recording()
    cos, _ = functions.rope_cos_sin(b, [0, 5], 8, base=100.0, dtype="float64")
    assert np.array_equal(cos, posenc.rope_cos_sin([0, 5], 8, base=100.0, dtype="float64")[0])
    assert b.calls == ["table_dtype", "check_tables", "positions", "frequencies", "cos_sin"]


class Float64Rows(NumpyBackend):
    """A new backend in a few lines: float64 rows for every x (rounded once into x's dtype by the rotation)."""

    name = "float64-rows"

    def rotation_dtype(self, x: np.ndarray) -> np.dtype:
        return np.dtype(np.float64)


def test_a_new_backend_needs_only_its_primitives() -> None:
    x = np.random.default_rng(1).standard_normal((5, 16)).astype(np.float32)
    p = np.array([0, 3, 70000, -2, 9])
    cfg = RopeConfig(16, rotary_dim=8, layout="interleaved")
    got = functions.apply_rope(Float64Rows(), x, p, spec=cfg)
    want = posenc.apply_rope(x.astype(np.float64), p, spec=cfg).astype(np.float32)  # float64 math, rounded once
    assert got.dtype == np.float32
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
