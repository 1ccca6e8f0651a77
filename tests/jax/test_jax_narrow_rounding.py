"""posenc.jax's float16 and bfloat16 outputs round the exact value once, checked where rounding twice bites.

Before, every form built float32 rows and cast them: the exact value rounded
to float32, then to the format. Where that float32 lands exactly on a
midpoint of the format (its low 16 bits 0x8000 for bfloat16, low 13 bits
0x1000 for float16) the second rounding goes to even, whichever side of the
midpoint the exact value lies: one unit off on about half of those values.
Now the rows are float32 rounded to odd (:func:`posenc.exact.fixed_sincos.round_f32`),
as in posenc.torch, and the cast rounds the exact value once.

The reference is independent of the JAX path: the NumPy API's float64 values
(and mpmath's formula for the timesteps), rounded once to the format by the
rule written here. Each case holds midpoint values, and at some of them the
old cast gives another value than the reference, so each test can fail.
"""

from __future__ import annotations

import jax.numpy as jnp
import mpmath
import numpy as np
import pytest

import jax
import posenc
import posenc.jax as pj
from posenc.rope.scaling import YaRN

#: format -> (significand bits, smallest normal exponent, float32 bits dropped by the format)
FORMATS = {"bfloat16": (8, -126, 16), "float16": (11, -14, 13)}


def _rounded_once(x: np.ndarray, fmt: str) -> np.ndarray:
    """float64 x rounded to nearest-even in ``fmt`` (subnormals included), as float64: ldexp and rint, exact."""
    bits, emin, _ = FORMATS[fmt]
    e = np.maximum(np.frexp(x)[1], emin + 1)
    return np.ldexp(np.rint(np.ldexp(x, bits - e)), e - bits)


def _midpoints(f32: np.ndarray, fmt: str) -> np.ndarray:
    """Where a float32 lies exactly halfway between two neighbours in ``fmt`` (its normal range)."""
    _, emin, low = FORMATS[fmt]
    u = np.ascontiguousarray(f32, np.float32).view(np.uint32)
    return ((u & ((1 << low) - 1)) == (1 << (low - 1))) & (np.abs(f32) >= 2.0**emin)


def _check(form, args: tuple[np.ndarray, ...], ref64: np.ndarray, fmt: str) -> None:
    arrays = tuple(jnp.asarray(a) for a in args)
    f32 = np.asarray(form(jnp.float32, *arrays), np.float32)
    got = np.asarray(form(jnp.dtype(fmt), *arrays)).astype(np.float64)
    # the arrays passed in, not closed over: XLA would fold a million-value constant through the whole program
    jitted = np.asarray(jax.jit(lambda *a: form(jnp.dtype(fmt), *a))(*arrays)).astype(np.float64)
    want = _rounded_once(ref64, fmt)
    tie = _midpoints(f32, fmt)
    old = f32.astype(jnp.dtype(fmt)).astype(np.float64)  # the float32 rows cast: rounded twice
    assert tie.sum() >= 3 and (old[tie] != want[tie]).sum() >= 1  # the case holds values that tell them apart
    assert np.array_equal(got, want)
    assert np.array_equal(got.view(np.int64), jitted.view(np.int64))  # jax.jit: the same bits


T = np.arange(4096, dtype=np.int32)
X = np.random.default_rng(7).uniform(-4, 4, (16384, 3)).astype(np.float32)  # ~1M NeRF values: ~16 midpoints
B = (np.random.default_rng(8).normal(0, 3, (24, 3))).astype(np.float32)


@pytest.mark.parametrize("fmt", FORMATS)
def test_timestep_embedding(fmt):
    _check(lambda dt, t: pj.timestep_embedding(t, 256, dtype=dt), (T,),
           posenc.timestep_embedding(T, 256, dtype=np.float64), fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_timestep_embedding_midpoints_against_mpmath(fmt):
    # the midpoint values alone, from diffusers' formula in mpmath (flip_sin_to_cos=False, shift 1: [sin | cos])
    f32 = np.asarray(pj.timestep_embedding(jnp.asarray(T), 256), np.float32)
    got = np.asarray(pj.timestep_embedding(jnp.asarray(T), 256, dtype=jnp.dtype(fmt))).astype(np.float64)
    mpmath.mp.prec = 160
    rows, cols = np.nonzero(_midpoints(f32, fmt))
    assert rows.size >= 3
    bits, emin, _ = FORMATS[fmt]
    wrong_before = 0
    for r, k in zip(rows.tolist(), cols.tolist(), strict=True):
        w = mpmath.power(10000, -mpmath.mpf(k % 128) / 127)
        v = (mpmath.sin if k < 128 else mpmath.cos)(T[r] * w)
        _, e = mpmath.frexp(v)
        q = mpmath.ldexp(1, max(int(e), emin + 1) - bits)
        n = v / q
        f = mpmath.floor(n)
        n = f + 1 if n - f > 0.5 else f  # no exact midpoint here: the value is transcendental
        want = float(n * q)
        assert got[r, k] == want, (T[r], k)
        wrong_before += float(np.float32(f32[r, k]).astype(jnp.dtype(fmt))) != want
    assert wrong_before >= 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_encode_and_the_host_table(fmt):
    _check(lambda dt, t: pj.encode(t, 128, dtype=dt), (T,), posenc.encode(T, 128, dtype=np.float64), fmt)
    _check(lambda dt: pj.table(4096, 128, dtype=dt), (), posenc.table(4096, 128, dtype=np.float64), fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_rope_cos_sin_with_and_without_an_attention_factor(fmt):
    for settings in ({}, {"base": 1e6, "scaling": YaRN(4.0, 4096)}):  # YaRN: rows times its factor, rounded once
        ref = np.concatenate(posenc.rope_cos_sin(T, 128, dtype=np.float64, **settings), axis=-1)
        _check(lambda dt, t, s=settings: jnp.concatenate(pj.rope_cos_sin(t, 128, dtype=dt, **s), -1), (T,),
               ref, fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_fields(fmt):
    _check(lambda dt, x: pj.nerf_encoding(x, 10, dtype=dt), (X,),
           posenc.nerf_encoding(X, 10, dtype=np.float64), fmt)
    _check(lambda dt, x, b: pj.fourier_features(x, b, dtype=dt), (X, B),
           posenc.fourier_features(X.astype(np.float64), B.astype(np.float64), dtype=np.float64), fmt)


@pytest.mark.parametrize("fmt", FORMATS)
def test_encode_nd(fmt):
    coords = np.random.default_rng(9).integers(0, 2**20, (8192, 2))  # many distinct angles (a grid repeats them)
    _check(lambda dt, c: pj.encode_nd(c, 128, dtype=dt), (coords.astype(np.int32),),
           posenc.encode_nd(coords, 128, dtype=np.float64), fmt)
