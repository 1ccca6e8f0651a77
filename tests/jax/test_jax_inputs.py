"""What posenc.jax takes: positions JAX would wrap, float64 and int64 under x64, foreign arrays, non-finite values.

Each test pins a finding of the trust sweeps (issues 31 and 36): every one
failed on the code before posenc.jax.inputs (a raw TypeError, a silent
float32 cut, NaN channels, a refusal that depended on the previous call).
"""

from __future__ import annotations

import warnings
from decimal import Decimal
from fractions import Fraction

import jax.numpy as jnp
import numpy as np
import pytest

import jax
import posenc
import posenc.jax as pj
import posenc.jax.conventions as jc
from posenc import PosEncError


@pytest.fixture
def x64():
    """jax_enable_x64 on for one test, and off again after it (the other tests run with it off)."""
    with jax.enable_x64(True):
        assert jax.config.jax_enable_x64
        yield
    assert not jax.config.jax_enable_x64


def bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


# ------------------------------------------------------------------ item 1: positions JAX wraps under jit

def test_jax_itself_wraps_int64_jit_arguments_silently():
    # the hazard the docs describe (docs/how-to/jax-flax.md): JAX cuts a NumPy int64 argument of a jitted
    # function to its low 32 bits, with no warning (filterwarnings=error would raise one) and no error
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        seen = jax.jit(lambda p: p)(np.array([2**31 + 5, 3], np.int64))
        rounded = jax.jit(lambda t: t)(np.array([0.1]))
    assert seen.dtype == jnp.int32 and seen.tolist() == [-(2**31) + 5, 3]
    assert rounded.dtype == jnp.float32 and float(rounded[0]) == float(np.float32(0.1))
    with pytest.raises(OverflowError):  # a Python int is refused by JAX itself
        jax.jit(lambda p: p)(2**31 + 5)


def test_positions_refuses_host_positions_jax_would_change():
    with pytest.raises(PosEncError, match=r"int32.*2147483653"):
        pj.positions(np.array([3, 2**31 + 5], np.int64))
    with pytest.raises(PosEncError, match=r"float32 values.*0\.1"):
        pj.positions(np.array([0.1, 0.5]))
    with pytest.raises(PosEncError, match="finite"):
        pj.positions(np.array([1.0, np.nan], np.float32))
    with pytest.raises(PosEncError, match="signed integers"):
        pj.positions(jnp.array([1], jnp.uint32))
    with pytest.raises(PosEncError, match="integers or floats"):
        pj.positions(np.array([True]))


def test_positions_gives_int32_and_float32_arrays_for_jit():
    p = pj.positions(np.array([0, 7, 2**31 - 1], np.int64))
    assert isinstance(p, jax.Array) and p.dtype == jnp.int32 and p.tolist() == [0, 7, 2**31 - 1]
    t = pj.positions(np.array([0.5, 0.25]))  # float64 values float32 holds exactly
    assert t.dtype == jnp.float32 and t.tolist() == [0.5, 0.25]
    got = jax.jit(lambda p: pj.encode(p, 8))(p)
    assert np.array_equal(bits(got), bits(posenc.encode(np.array([0, 7, 2**31 - 1]), 8)))


# ------------------------------------------------------------------ items 3, 4: jax_enable_x64 on

def test_x64_float64_inputs_are_refused_eagerly_and_under_jit(x64):
    x, b = jnp.array([[0.1]]), jnp.array([[3.0]])
    assert x.dtype == jnp.float64
    with pytest.raises(PosEncError, match=r"x is float64.*float32"):
        pj.fourier_features(x, b)
    with pytest.raises(PosEncError, match=r"x is float64"):
        jax.jit(pj.fourier_features)(x, b)
    with pytest.raises(PosEncError, match=r"B is float64"):
        pj.fourier_features(x.astype(jnp.float32), b)
    for call in (lambda t: pj.timestep_embedding(t, 8), lambda t: pj.nerf_encoding(t, 2),
                 lambda t: pj.encode(t, 8), lambda t: pj.rope_cos_sin(t, 8)[0]):
        with pytest.raises(PosEncError, match=r"t is float64|x is float64|positions is float64"):
            call(jnp.array([0.1]))
        with pytest.raises(PosEncError, match="float64"):
            jax.jit(call)(jnp.array([0.1]))


def test_x64_int64_positions_within_int32_are_taken(x64):
    p = jnp.arange(6) * 400_000_000  # int64 under x64, values within int32
    assert p.dtype == jnp.int64
    host = np.arange(6) * 400_000_000
    assert np.array_equal(bits(pj.encode(p, 16)), bits(posenc.encode(host, 16)))
    assert np.array_equal(bits(jax.jit(lambda p: pj.encode(p, 16))(p)), bits(posenc.encode(host, 16)))
    cos, _ = jax.jit(lambda p: pj.rope_cos_sin(p, 16))(p)
    assert np.array_equal(bits(cos), bits(posenc.rope_cos_sin(host, 16)[0]))
    assert np.array_equal(bits(pj.timestep_embedding(jnp.arange(4), 8)),
                          bits(posenc.timestep_embedding(np.arange(4), 8)))
    assert pj.apply_rope(jnp.ones((6, 8), jnp.float32), p).shape == (6, 8)
    assert pj.alibi_bias(2, 3, 2, positions=jnp.arange(3)).shape == (2, 2, 3)
    assert pj.t5_bucket(jnp.arange(-3, 3)).tolist() == posenc.t5_bucket(np.arange(-3, 3)).tolist()


def test_x64_int64_outside_int32_refused_when_concrete_nan_when_traced(x64):
    p = jnp.array([1, 2**31 + 5])
    with pytest.raises(PosEncError, match=r"int32.*2147483653"):
        pj.encode(p, 8)
    with pytest.raises(PosEncError, match=r"int32.*2147483653"):
        jax.jit(lambda: pj.encode(p, 8))()  # closed over: concrete, refused as eagerly
    got = np.asarray(jax.jit(lambda p: pj.encode(p, 8))(p))  # traced: unknown values, the row masked
    assert np.array_equal(bits(got[0]), bits(posenc.encode(1, 8))) and np.isnan(got[1]).all()
    bias = np.asarray(jax.jit(lambda p: pj.alibi_bias(1, 2, 1, positions=p, causal=False))(jnp.array([0, 2**40])))
    assert bias[0, 0, 0] == 0 and np.isnan(bias[0, 0, 1])
    rel = jnp.array([-(2**40), 2**40, -5])  # T5's bucket of a huge distance: the last one, exactly as NumPy's
    got = jax.jit(pj.t5_bucket)(rel)
    assert got.tolist() == posenc.t5_bucket(np.asarray(rel)).tolist()


def test_x64_messages_do_not_say_enable_x64(x64):
    with pytest.raises(PosEncError) as info:
        pj.encode(jnp.arange(4), 8, dtype="float64")
    assert "jax_enable_x64" not in str(info.value) and "NumPy API" in str(info.value)
    with pytest.raises(PosEncError) as info:
        pj.timestep_embedding(jnp.float32([0.5]), 8, convention=posenc.timesteps.Flux(0.1, time_dtype="float64"))
    assert "needs float64 (jax_enable_x64)" not in str(info.value)


# ------------------------------------------------------------------ item 6: validation independent of history

def test_static_counts_are_refused_whatever_came_before():
    t = jnp.array([1, 2], jnp.int32)
    assert pj.timestep_embedding(t, 8).shape == (2, 8)
    for bad in (8.0, np.float64(8), [8], "8"):
        with pytest.raises(PosEncError, match="dim must be an integer"):
            pj.timestep_embedding(t, bad)
    assert pj.timestep_embedding(t, 1).shape == (2, 1)
    with pytest.raises(PosEncError, match="dim must be an integer"):
        pj.timestep_embedding(t, True)
    x = jnp.float32([0.5])
    assert pj.nerf_encoding(x, 4).shape == (9,)
    for bad in (Fraction(4), Decimal(4), 4.0, [4]):
        with pytest.raises(PosEncError, match="n_freqs must be an integer"):
            pj.nerf_encoding(x, bad)


# ------------------------------------------------------------------ item 7: foreign array types

class Foreign:
    """An array of another framework, as far as posenc can tell: ``__array__``, a shape and a dtype."""

    shape, dtype = (2,), "foreign.float32"

    def __array__(self, dtype=None, copy=None):
        return np.ones(2, np.float32)


def _foreign_calls(value):
    return [
        lambda: pj.timestep_embedding(value, 8),
        lambda: pj.encode(value, 8),
        lambda: pj.rope_cos_sin(value, 8),
        lambda: pj.apply_rope(jnp.ones((2, 8)), value),
        lambda: pj.apply_rope(value, jnp.arange(2)),
        lambda: pj.rotate(value, jnp.ones(4), jnp.zeros(4), "half", 8),
        lambda: pj.nerf_encoding(value, 2),
        lambda: pj.fourier_features(value, jnp.ones((3, 2))),
        lambda: pj.fourier_features(jnp.ones((1, 2)), value),
        lambda: pj.encode_nd(value, 8),
        lambda: pj.alibi_bias(1, 2, 1, positions=value),
        lambda: pj.t5_bucket(value),
        lambda: pj.t5_bias(value, 1, 2),
        lambda: pj.positions(value),
        lambda: pj.RotaryEmbedding(8)(value, jnp.ones((1, 2, 1, 8)), jnp.arange(2)),
        lambda: pj.SinusoidalEmbedding(8)(value),
        lambda: jc.maxtext_rope(value, jnp.arange(2)[None]),
        lambda: jc.keras_hub_rotary_embedding(value),
    ]


def test_foreign_arrays_are_refused_by_name():
    for i, call in enumerate(_foreign_calls(Foreign())):
        with pytest.raises(PosEncError, match=r"must be a JAX array, a NumPy array or Python numbers, got a "
                                              r"test_jax_inputs\.Foreign of shape \(2,\)"):
            call()
        assert i >= 0


def test_torch_tensors_are_refused_by_name():
    torch = pytest.importorskip("torch")  # make test installs the torch extra
    for value in (torch.tensor([1.0, 2.0]), torch.tensor([1, 2]), torch.ones(2, dtype=torch.bfloat16)):
        for call in _foreign_calls(value):
            with pytest.raises(PosEncError, match=r"got a torch\.Tensor of shape \(2,\), dtype torch\.") as info:
                call()
            assert "\n" not in str(info.value)


# ------------------------------------------------------------------ item 8: non-finite inputs

@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf, 2.0**31])
def test_concrete_non_finite_inputs_are_refused(bad):
    v = jnp.float32([0.5, bad])
    col, pairs = v[:, None], jnp.stack([v, v], -1)  # made outside: inside jit they would be traced values
    calls = [lambda: pj.timestep_embedding(v, 8), lambda: pj.encode(v, 8), lambda: pj.rope_cos_sin(v, 8),
             lambda: pj.nerf_encoding(col, 2), lambda: pj.encode_nd(pairs, 8),
             lambda: pj.apply_rope(jnp.ones((2, 8)), v), lambda: pj.positions(v)]
    if not np.isfinite(bad):  # Fourier features take any finite coordinate
        calls += [lambda: pj.fourier_features(col, jnp.ones((3, 1))),
                  lambda: pj.fourier_features(jnp.ones((2, 1)), col)]
    for call in calls:
        with pytest.raises(PosEncError, match=r"must be finite.*got (nan|inf|-inf|2147483648\.0)"):
            call()
        with pytest.raises(PosEncError, match=r"must be finite.*got (nan|inf|-inf|2147483648\.0)"):
            jax.jit(call)()  # v closed over by the jitted function: a known value, refused all the same


def test_traced_non_finite_timesteps_give_nan_in_their_rows_only():
    t = jnp.float32([0.5, np.nan, np.inf, 3.0])
    got = np.asarray(jax.jit(lambda t: pj.timestep_embedding(t, 8))(t))
    want = posenc.timestep_embedding(np.float32([0.5, 3.0]), 8)
    assert np.isnan(got[1:3]).all()
    assert np.array_equal(bits(got[[0, 3]]), bits(want))
