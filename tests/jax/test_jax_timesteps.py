"""posenc.jax.timestep_embedding and nerf_encoding: the NumPy core's bits for int32 t, 1 ulp of mpmath for real t."""

from __future__ import annotations

import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
from test_jax_rows import walk

import jax
import posenc
import posenc.jax as pj
from posenc.timesteps import DDPM, Diffusers, Flux, GuidedDiffusion, register

RNG = np.random.default_rng(2226)
STEPS = np.concatenate([np.arange(0, 1000), RNG.integers(0, 2**31 - 1, 4000), [2**31 - 2, -1, -999]]).astype(np.int32)
PRESETS = ["diffusers", "ddpm", "guided-diffusion", "flux", Diffusers(flip_sin_to_cos=True, downscale_freq_shift=0),
           Diffusers(scale=1000.0, downscale_freq_shift=0.5, max_period=500.0), DDPM(), GuidedDiffusion(100.0)]


def bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


def mismatches(got, want):
    return int((bits(got) != bits(want)).sum())


@pytest.mark.parametrize("convention", PRESETS, ids=str)
@pytest.mark.parametrize("dim", [256, 33])
def test_integer_steps_in_jit_are_the_cores_float32_bits(convention, dim):
    got = jax.jit(lambda t: pj.timestep_embedding(t, dim, convention=convention))(STEPS)
    want = posenc.timestep_embedding(STEPS.astype(np.int64), dim, convention=convention)
    assert got.dtype == jnp.float32 and got.shape == want.shape == (STEPS.size, dim)
    assert mismatches(got, want) == 0  # 5003 × dim values per preset


def test_a_registered_preset_is_resolved():
    register("jax-test-sd", Diffusers(flip_sin_to_cos=True, downscale_freq_shift=0, scale=3.0))
    t = STEPS[:500]
    got = pj.timestep_embedding(t, 64, convention="jax-test-sd")
    assert mismatches(got, posenc.timestep_embedding(t, 64, convention="jax-test-sd")) == 0


def _real_times():
    return np.concatenate([RNG.uniform(0, 1, 3000), RNG.uniform(0, 1000, 3000), RNG.uniform(0, 1, 20) * 1e-6,
                           [0.0, 1.0, 0.5, 0.25, 999.5]]).astype(np.float32)


@pytest.mark.parametrize("convention", ["flux", "diffusers", "guided-diffusion", Diffusers(scale=1000.0)], ids=str)
def test_real_valued_t_are_the_cores_float32_bits(convention):
    t = _real_times()
    got = jax.jit(lambda t: pj.timestep_embedding(t, 128, convention=convention))(t)
    want = posenc.timestep_embedding(t.astype(np.float64), 128, convention=convention)
    assert mismatches(got, want) == 0


def _exact(t: float, dim: int, period: float, shift: float, scale: float, cos_first: bool) -> list:
    """The formula in mpmath, written from the presets' sources (diffusers, guided-diffusion, Flux)."""
    half = dim // 2
    w = [mpmath.mpf(scale) * mpmath.power(period, -mpmath.mpf(k) / (half - shift)) for k in range(half)]
    s = [mpmath.sin(mpmath.mpf(t) * x) for x in w]
    c = [mpmath.cos(mpmath.mpf(t) * x) for x in w]
    return (c + s) if cos_first else (s + c)


@pytest.mark.parametrize("convention,args", [
    ("flux", (10000.0, 0.0, 1000.0, True)), ("diffusers", (10000.0, 1.0, 1.0, False)),
    ("guided-diffusion", (10000.0, 0.0, 1.0, True)), (Diffusers(scale=1000.0), (10000.0, 1.0, 1000.0, False)),
], ids=str)
def test_real_valued_t_are_within_one_ulp_of_mpmath(convention, args):
    mpmath.mp.prec = 160
    t = np.concatenate([RNG.uniform(0, 1, 60), RNG.uniform(0, 1000, 60), [0.5, 1.0]]).astype(np.float32)
    got = np.asarray(pj.timestep_embedding(t, 32, convention=convention), np.float64)
    worst = 0.0
    for i, v in enumerate(t.tolist()):
        want = np.array([float(x) for x in _exact(v, 32, *args)])
        ulp = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
        worst = max(worst, float(np.max(np.abs(got[i] - want) / ulp)))
    assert worst <= 0.5 + 2.0**-20  # the stated bound is 1 ulp; measured: correctly rounded (within half an ulp)


@pytest.mark.parametrize("time_dtype", ["bfloat16", "float16", "float32", "float64"])
def test_flux_time_dtype_rounds_as_the_core_does(time_dtype):
    t = np.concatenate([RNG.uniform(0, 1, 2000), [0.123, 0.5]]).astype(np.float32)
    preset = Flux(time_dtype=time_dtype)
    got = jax.jit(lambda t: pj.timestep_embedding(t, 64, convention=preset))(t)
    want = posenc.timestep_embedding(t.astype(np.float64), 64, convention=preset)
    assert mismatches(got, want) == 0
    if time_dtype == "bfloat16":  # 0.123 -> 0.12304688 (bf16) -> 123.0 (bf16): not the exact product
        assert mismatches(got, pj.timestep_embedding(t, 64, convention="flux")) > 0


def test_flux_time_dtype_input_follows_t_and_refuses_what_float32_cannot_round():
    t = jnp.asarray(RNG.uniform(0, 1, 500), jnp.bfloat16)
    got = pj.timestep_embedding(t, 32, convention=Flux(time_dtype="input"))
    want = pj.timestep_embedding(t.astype(jnp.float32), 32, convention=Flux(time_dtype="bfloat16"))
    assert mismatches(got, want) == 0
    with pytest.raises(posenc.PosEncError, match="time_factor"):
        pj.timestep_embedding(jnp.ones(2), 8, convention=Flux(time_factor=1e39, time_dtype="float32"))


@pytest.mark.parametrize("factor", [0.1, 1 / 3, 999.9, 65537.0])
@pytest.mark.parametrize("time_dtype", ["bfloat16", "float16", "float32", "input"])
def test_flux_time_factor_that_is_no_float32_follows_the_references_multiply(factor, time_dtype):
    # the reference forms float32(factor)·t in float32 (torch's multiply by a Python float); NumPy and torch
    # repeat it (tests/timesteps/test_flux_reference.py), and so does posenc.jax, eager and under jit
    t = np.concatenate([RNG.uniform(0, 1, 1000), [0.123, 0.5, 1.0]]).astype(np.float32)
    preset = Flux(time_factor=factor, time_dtype=time_dtype)
    if time_dtype == "float16" and factor > 1000:
        t = t / 8  # keep float32(factor)·t inside float16's range, which the core refuses beyond
    want = posenc.timestep_embedding(t, 32, convention=preset)
    assert mismatches(pj.timestep_embedding(jnp.asarray(t), 32, convention=preset), want) == 0
    got = jax.jit(lambda x: pj.timestep_embedding(x, 32, convention=preset))(jnp.asarray(t))
    assert mismatches(got, want) == 0


def test_overflowing_float16_product_gives_nan_not_inf_values():
    got = np.asarray(pj.timestep_embedding(jnp.array([100.0, 0.5]), 8, convention=Flux(time_dtype="float16")))
    assert np.isnan(got[0]).all() and np.isfinite(got[1]).all()  # 100 000 overflows float16 (the core refuses it)


def test_no_float64_and_no_dot_in_the_graph():
    for conv in ("flux", Flux(time_dtype="bfloat16"), "diffusers"):
        names, dtypes = walk(lambda t, c=conv: pj.timestep_embedding(t, 64, convention=c), jnp.zeros(8, jnp.float32))
        assert not dtypes & {"float64", "int64", "uint64"} and "dot_general" not in names and "clz" in names
    names, dtypes = walk(lambda x: pj.nerf_encoding(x, 6, convention="tcnn"), jnp.zeros((4, 3), jnp.float32))
    assert not dtypes & {"float64", "int64", "uint64"} and "dot_general" not in names


def test_vmap_grad_and_traced_nan():
    t = jnp.asarray(RNG.uniform(0, 1000, 6), jnp.float32)
    per = jax.vmap(lambda x: pj.timestep_embedding(x, 16))(t)
    assert mismatches(per, pj.timestep_embedding(t, 16)) == 0
    # d/dt [sin(ω t) | cos(ω t)] = ω·[cos | −sin]: the derivative of the formula, not the bit path's 0
    w = 10000.0 ** (-np.arange(8) / 7)
    jac = np.asarray(jax.vmap(jax.jacfwd(lambda x: pj.timestep_embedding(x, 16)))(t), np.float64)
    tt = np.asarray(t, np.float64)[:, None]
    want = np.concatenate([w * np.cos(w * tt), -w * np.sin(w * tt)], axis=-1)
    np.testing.assert_allclose(jac, want, rtol=1e-6, atol=1e-6)
    bad = np.asarray(jax.jit(lambda x: pj.timestep_embedding(x, 8))(jnp.array([jnp.nan, jnp.inf, 2.0**31, 3.0])))
    assert np.isnan(bad[:3]).all() and np.isfinite(bad[3]).all()


def test_bad_static_arguments_raise_before_any_work():
    with pytest.raises(posenc.PosEncError, match="dim"):
        pj.timestep_embedding(jnp.arange(3), 0)
    with pytest.raises(posenc.PosEncError, match="no-such"):
        pj.timestep_embedding(jnp.arange(3), 8, convention="no-such")
    with pytest.raises(posenc.PosEncError, match="t must be finite"):
        pj.timestep_embedding(np.array([np.nan]), 8)
    with pytest.raises(posenc.PosEncError, match="dtype"):
        pj.timestep_embedding(jnp.arange(3), 8, dtype="float64")
    assert np.asarray(pj.timestep_embedding(jnp.arange(3), 1)).tolist() == [[0.0]] * 3  # dim 1: the zero channel


@pytest.mark.parametrize("convention", ["nerf", "nerfstudio", "tcnn"])
def test_nerf_encoding_in_jit_is_the_cores_values(convention):
    x = np.concatenate([RNG.uniform(-3, 3, (3000, 3)), RNG.integers(-64, 64, (500, 3)) / 16]).astype(np.float32)
    got = np.asarray(jax.jit(lambda v: pj.nerf_encoding(v, 10, convention=convention))(x))
    want = posenc.nerf_encoding(x.astype(np.float64), 10, convention=convention)
    assert got.shape == want.shape
    nonzero = want != 0
    # the bits wherever the value is not zero; a zero (sin kπ at a dyadic x, exactly 0 in the formula) is +0 here
    # where the core's 160-bit π leaves a sign
    assert mismatches(got[nonzero], want[nonzero]) == 0 and (got[~nonzero] == 0).all()


def test_nerf_encoding_dyadic_coordinates_are_exact_and_differentiable():
    got = np.asarray(pj.nerf_encoding(jnp.array([0.5, -1.25]), 3, convention="tcnn"))
    assert got[:6].tolist() == [1.0, 0.0, 0.0, -1.0, 0.0, 1.0]  # sin/cos of π/2, π, 2π
    g = jax.grad(lambda v: pj.nerf_encoding(v, 4, include_input=False).sum())(jnp.array([0.7], jnp.float32))
    want = sum(2.0**k * (np.cos(2.0**k * 0.7) - np.sin(2.0**k * 0.7)) for k in range(4))
    assert abs(float(g[0]) - want) < 1e-5
    with pytest.raises(posenc.PosEncError, match="2\\*\\*31"):
        pj.nerf_encoding(jnp.ones(3), 40)  # 2**39 is past the 32-bit exact range
