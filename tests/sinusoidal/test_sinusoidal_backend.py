"""The EncodingBackend protocol: every backend implements it, and the sinusoid's functions written once over it.

:func:`posenc.encode`, :func:`posenc.table`, their torch and JAX forms and
every convention's own methods are :mod:`posenc.sinusoidal.functions` bound
to a backend (issue 32). What this file holds them to: each backend has
every primitive and nothing the protocol does not name; the torch and JAX
forms give NumPy's bits for every built-in convention (odd widths and
origins included) and refuse what NumPy refuses, with the same message; a
minimal new backend, written here from the protocol alone, gives NumPy's
bits through the same functions.
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
from posenc.sinusoidal import backend as protocol
from posenc.sinusoidal.backend import ENCODING_PRIMITIVES, EncodingBackend
from posenc.sinusoidal.conventions import resolve
from posenc.sinusoidal.functions import encode_with, table_with
from posenc.sinusoidal.numpy_backend import NUMPY_ENCODING, NumpyEncoding
from posenc.sinusoidal.plan import Plan

_CONVENTIONS = sorted(posenc.conventions.NAMES)
_WIDTHS = (8, 9, 64)


def _backends() -> list[Any]:
    return [NUMPY_ENCODING, *(getattr(importlib.import_module(m), n)
                              for m, n in (("posenc.torch.backend", "TORCH"), ("posenc.jax.backend", "JAX")))]


def test_primitives_are_the_protocols_members() -> None:
    declared = {n for n in vars(EncodingBackend) if not n.startswith("_")} | set(EncodingBackend.__annotations__)
    assert declared == set(ENCODING_PRIMITIVES)
    assert protocol.__all__ == ["ENCODING_PRIMITIVES", "EncodingBackend"]


@pytest.mark.parametrize("backend", _backends(), ids=lambda b: b.name)
def test_each_backend_implements_every_primitive(backend: Any) -> None:
    assert isinstance(backend, EncodingBackend)
    assert [n for n in ENCODING_PRIMITIVES if not callable(getattr(backend, n, None)) and n != "name"] == []
    assert backend.name in {"numpy", "torch", "jax"}


def test_an_object_missing_a_primitive_is_no_backend() -> None:
    class Half:
        name = "half"

        def encoding_rows(self, *args: Any) -> None:
            return None

    assert not isinstance(Half(), EncodingBackend)


def _outcome(call: Any) -> tuple[str, Any]:
    """("rows", float64 NumPy rows) or ("refused", the message): a call's whole observable result."""
    try:
        out = call()
    except PosEncError as e:
        return "refused", str(e).split(":", 1)[-1]  # the message, less the entry point's own name
    return "rows", np.asarray(out.to(torch.float64) if isinstance(out, torch.Tensor) else out)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("d", _WIDTHS)
@pytest.mark.parametrize("conv", _CONVENTIONS)
def test_torch_encode_and_table_are_numpys_bits(conv: str, d: int, dtype: str) -> None:
    p = np.array([0, 1, 7, 1000, 65_535, 10**6])
    tdt = getattr(torch, dtype)
    for ours, numpys in (
        (lambda: pt.encode(torch.from_numpy(p), d, convention=conv, dtype=tdt),
         lambda: posenc.encode(p, d, convention=conv, dtype=dtype)),
        (lambda: pt.table(6, d, start=995, convention=conv, dtype=tdt),
         lambda: posenc.table(6, d, start=995, convention=conv, dtype=dtype)),
    ):
        kind, got = _outcome(ours)
        want = _outcome(numpys)
        assert kind == want[0], (got, want[1])
        np.testing.assert_array_equal(got, want[1])  # the same bits, or the same message
    if d == 8:  # every convention takes an even width
        assert pt.encode(torch.from_numpy(p), d, convention=conv, dtype=tdt).dtype == tdt


@pytest.mark.parametrize("d", _WIDTHS)
@pytest.mark.parametrize("conv", _CONVENTIONS)
def test_jax_encode_and_table_are_numpys_float32_bits(conv: str, d: int) -> None:
    p = np.array([0, 1, 7, 1000, 65_535, 10**6])
    for ours, numpys in (
        (lambda: pj.encode(jnp.asarray(p, dtype=jnp.int32), d, convention=conv),
         lambda: posenc.encode(p, d, convention=conv)),
        (lambda: pj.table(6, d, start=995, convention=conv), lambda: posenc.table(6, d, start=995, convention=conv)),
    ):
        kind, got = _outcome(ours)
        want = _outcome(numpys)
        assert kind == want[0], (got, want[1])
        np.testing.assert_array_equal(got, want[1])


@pytest.mark.parametrize("tdt, ndt", [("float16", "float16"), ("bfloat16", None)])
def test_torch_half_dtypes_round_numpys_float64_rows_once(tdt: str, ndt: str | None) -> None:
    p = np.arange(0, 5000, 37)
    got = pt.encode(torch.from_numpy(p), 16, dtype=getattr(torch, tdt))
    exact = torch.from_numpy(posenc.encode(p, 16, dtype="float64"))
    assert torch.equal(got, exact.to(getattr(torch, tdt)))  # one rounding, from the float64 rows
    if ndt is not None:
        np.testing.assert_array_equal(got.numpy(), posenc.encode(p, 16, dtype=ndt))


@pytest.mark.parametrize("call", [
    lambda m: m.encode([0, 1], 0),
    lambda m: m.encode([0, 1], 8, base=1.0),
    lambda m: m.encode([0, float("nan")], 8),
    lambda m: m.table(-1, 8),
    lambda m: m.table(3, 8, start=2**60),
    lambda m: m.encode([0, 1], 9, convention="vaswani"),
], ids=["d0", "base1", "nan", "length-1", "start2^60", "odd-vaswani"])
def test_every_backend_refuses_what_numpy_refuses_with_its_message(call: Any) -> None:
    with pytest.raises(PosEncError) as numpy_error:
        call(posenc)
    for module in (pt, pj):
        with pytest.raises(PosEncError) as error:
            call(module)
        ours, numpys = (str(e.value).split(":", 1)[-1] for e in (error, numpy_error))
        # the same rule and the same value named (JAX's position rule adds its 32-bit range to the same words)
        head, _, got = numpys.rpartition(", got ")
        assert ours.startswith(head) and ours.endswith(f", got {got}"), (module.__name__, ours, numpys)


def test_jax_refuses_positions_beyond_its_32_bit_path_by_its_own_range() -> None:
    """The one stated difference: JAX's exact path is 32-bit (|p| < 2**31); NumPy's and torch's is float64's."""
    assert posenc.encode([2**40], 8).shape == (1, 8)
    assert pt.encode(torch.tensor([2**40]), 8).shape == (1, 8)
    with pytest.raises(PosEncError, match=r"positions must fit int32.*got 1099511627776"):
        pj.encode(np.array([2**40]), 8)


class Float64Rows:
    """A new backend from the protocol alone: float64 rows by the plain formula (libm), no exact core.

    Only the rendering is new; the checks are NumPy's. It is what a CuPy or
    MLX port would write first, and the functions above serve it unchanged.
    """

    name = "float64-rows"

    def encoding_dtype(self, dtype: Any) -> Any:
        return NUMPY_ENCODING.encoding_dtype(dtype)

    def check_encoding(self, shape: tuple[int, ...], computed: int, d_model: int, origin: int, dtype: Any) -> None:
        NUMPY_ENCODING.check_encoding(shape, computed, d_model, origin, dtype)

    def encoding_positions(self, value: Any) -> Any:
        return NUMPY_ENCODING.encoding_positions(value)

    def encoding_rows(self, positions: Any, plan: Plan, dtype: Any) -> Any:
        theta = np.asarray(positions, dtype=np.float64) + plan.origin
        rows = self._place(theta[..., None] * plan.ladder.w0, plan, dtype)
        if plan.zero_at is not None:
            rows[theta == plan.zero_at] = 0
        return rows

    def table_rows(self, first: int, length: int, plan: Plan, dtype: Any) -> Any:
        return self.encoding_rows(np.arange(first, first + length) - plan.origin, plan, dtype)

    @staticmethod
    def _place(angle: np.ndarray, plan: Plan, dtype: Any) -> np.ndarray:
        out = np.zeros((*angle.shape[:-1], plan.computed))
        n = angle.shape[-1]
        if plan.layout == "interleaved":  # sin ω_k at 2k, cos at 2k+1
            out[..., 0:2 * n:2], out[..., 1:2 * n:2] = np.sin(angle), np.cos(angle)
        else:  # every sine, then every cosine
            out[..., :n], out[..., n:2 * n] = np.sin(angle), np.cos(angle)
        return out[..., :plan.d_model].astype(dtype)


def test_a_minimal_new_backend_serves_the_same_functions() -> None:
    new = Float64Rows()
    assert isinstance(new, EncodingBackend)
    for conv in _CONVENTIONS:
        c = resolve(conv, "test")
        got = encode_with(new, c, np.array([0, 3, 250]), 9 if conv in ("fairseq", "keras") else 8, "float64")
        want = posenc.encode([0, 3, 250], got.shape[-1], convention=conv, dtype="float64")
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)  # libm's sin: close, not bits
        rows = table_with(new, c, 4, 8, 10, "float64")
        np.testing.assert_allclose(rows, posenc.table(4, 8, start=10, convention=conv, dtype="float64"),
                                   rtol=0, atol=1e-12)
    with pytest.raises(PosEncError, match="d_model"):
        encode_with(new, resolve(None, "test"), [0], 0, "float64")


def test_numpy_encoding_is_the_one_numpy_backend() -> None:
    from posenc.rope.numpy_backend import NUMPY

    assert isinstance(NUMPY, NumpyEncoding)  # RoPE's NumPy backend is the sinusoid's too: one object per framework
