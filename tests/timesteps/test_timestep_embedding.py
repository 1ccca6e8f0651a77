"""posenc.timestep_embedding against mpmath (within 1 float32 ulp) and against diffusers' own function."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch
from diffusers.models.embeddings import get_timestep_embedding
from hypothesis import given
from hypothesis import strategies as st

import posenc
from posenc import PosEncError
from posenc.timesteps import DDPM, Diffusers, Flux, GuidedDiffusion, register, round_to, timestep_embedding
from reference import ulp_error

mpmath.mp.dps = 60


def exact_row(t, dim, *, shift, scale=1, period=10000, cos_first=False):
    """The formula at 60 digits: ω_k = P^(-k/(half - shift)), angle scale·t·ω_k."""
    half = dim // 2
    ang = [mpmath.mpf(scale) * mpmath.mpf(float(t)) * mpmath.power(period, -mpmath.mpf(k) / (half - mpmath.mpf(shift)))
           for k in range(half)]
    s, c = [mpmath.sin(a) for a in ang], [mpmath.cos(a) for a in ang]
    row = (c + s) if cos_first else (s + c)
    return row + [mpmath.mpf(0)] * (dim % 2)


def worst_ulp(got, ref):
    return max(ulp_error(float(g), r, np.float32) for g, r in zip(got, ref, strict=True))


PRESETS = [
    (Diffusers(), dict(shift=1)),
    (Diffusers(flip_sin_to_cos=True, downscale_freq_shift=0), dict(shift=0, cos_first=True)),
    (Diffusers(downscale_freq_shift=0, scale=1000.0, flip_sin_to_cos=True), dict(shift=0, scale=1000, cos_first=True)),
    (Diffusers(downscale_freq_shift=0.5, max_period=500), dict(shift=0.5, period=500)),
    (GuidedDiffusion(), dict(shift=0, cos_first=True)),
    (DDPM(), dict(shift=1)),
    (Flux(), dict(shift=0, scale=1000, cos_first=True)),
]


@pytest.mark.parametrize(("preset", "formula"), PRESETS, ids=lambda p: repr(p) if not isinstance(p, dict) else "")
@pytest.mark.parametrize("dim", [1, 7, 64, 257])
def test_every_value_within_one_float32_ulp_of_the_exact_formula(preset, formula, dim):
    t = np.array([0.0, 1.0, 0.37, 17.25, 999.0, 1e-3, 12345.678, -3.5])
    if preset.name == "flux":
        t = t / 1000
    if dim < 4 and formula["shift"] >= 1:
        dim = 5
    got = timestep_embedding(t, dim, convention=preset)
    assert got.shape == (t.size, dim) and got.dtype == np.float32
    for row, tv in zip(got, t, strict=True):
        assert worst_ulp(row, exact_row(tv, dim, **formula)) <= 1.0


def test_shapes_scalars_and_dtypes():
    assert timestep_embedding(3, 6).shape == (6,)
    assert timestep_embedding(np.zeros((2, 3)), 6, dtype=np.float16).shape == (2, 3, 6)
    assert timestep_embedding(np.zeros((2, 3)), 6, dtype=np.float16).dtype == np.float16
    assert timestep_embedding([], 6).shape == (0, 6)
    assert timestep_embedding(5, 1).tolist() == [0.0]  # half = 0: only the zero channel


@pytest.mark.parametrize("kw", [
    dict(),
    dict(flip_sin_to_cos=True, downscale_freq_shift=0),
    dict(flip_sin_to_cos=True, downscale_freq_shift=1),
    dict(downscale_freq_shift=0, scale=1000),
    dict(max_period=100),
])
@pytest.mark.parametrize("dim", [5, 32, 320])
def test_matches_diffusers_within_its_own_float32_error(kw, dim):
    t = np.array([0.0, 1.0, 3.5, 250.0, 999.0])
    if kw.get("scale") == 1000:
        t = t / 1000
    ref = get_timestep_embedding(torch.tensor(t), dim, **kw).numpy()
    conv = Diffusers(**{k: v for k, v in kw.items()})
    got = timestep_embedding(t, dim, convention=conv)
    assert got.shape == ref.shape and got.dtype == ref.dtype
    # diffusers rounds ω and t·ω to float32: its error grows with the angle (t·ω < 1000 here)
    assert np.abs(got - ref).max() < 1.5e-4
    half = dim // 2
    if dim % 2:
        assert (got[:, -1] == 0).all() and (ref[:, -1] == 0).all()
    # the channel order is diffusers': the slow channels of the sin block are ~0 at small t, of cos ~1
    first = got[1, half - 1]
    assert (first > 0.99) == bool(kw.get("flip_sin_to_cos"))


def test_guided_diffusion_is_diffusers_flipped_without_the_shift_bit_for_bit():
    t = np.array([0.0, 0.5, 7.0, 999.0, 123.456])
    a = timestep_embedding(t, 258, convention="guided-diffusion", dtype=np.float64)
    b = timestep_embedding(t, 258, convention=Diffusers(flip_sin_to_cos=True, downscale_freq_shift=0), dtype=np.float64)
    assert np.array_equal(a, b)
    assert np.array_equal(timestep_embedding(t, 9, convention="ddpm"), timestep_embedding(t, 9))


def test_flux_is_guided_diffusion_at_1000_t():
    t = np.array([0.0, 0.125, 0.5, 0.75, 1.0])  # 1000·t exact: both paths have the same angle
    a = timestep_embedding(t, 256, convention="flux", dtype=np.float64)
    b = timestep_embedding(1000 * t, 256, convention="guided-diffusion", dtype=np.float64)
    assert np.array_equal(a, b)


@pytest.mark.parametrize(("torch_dtype", "name"), [(torch.bfloat16, "bfloat16"), (torch.float16, "float16"),
                                                   (torch.float32, "float32")])
def test_flux_time_dtype_reproduces_the_pipeline_product(torch_dtype, name):
    t = torch.tensor([0.123, 0.5, 0.9871, 0.003, 1.0, 0.33333], dtype=torch_dtype)
    product = (1000 * t).double().numpy()  # what BFL's `time_factor * t` gives in that dtype
    t64 = t.double().numpy()
    a = timestep_embedding(t64, 64, convention=Flux(time_dtype=name), dtype=np.float64)
    b = timestep_embedding(product, 64, convention="guided-diffusion", dtype=np.float64)
    assert np.array_equal(a, b)
    if name == "bfloat16":  # and it differs from the exact product where bf16 rounds 1000·t
        assert not np.array_equal(a, timestep_embedding(t64, 64, convention="flux", dtype=np.float64))


def test_time_dtype_input_follows_t():
    t = np.array([0.1, 0.7], dtype=np.float32)
    a = timestep_embedding(t, 16, convention=Flux(time_dtype="input"))
    b = timestep_embedding(np.float32(1000) * t, 16, convention="guided-diffusion")
    assert np.array_equal(a, b)


def _round_exact(x: float, bits: int, emin: int) -> float:
    """Round a float to ``bits`` significant bits, ties to even, with Fractions (no float arithmetic)."""
    if x == 0:
        return 0.0
    f = Fraction(x)
    e = max(abs(f).numerator.bit_length() - abs(f).denominator.bit_length(), emin)
    while Fraction(2) ** e > abs(f):
        e -= 1
    e = max(e, emin)
    q = f / Fraction(2) ** (e - bits + 1)
    return float(round(q) * Fraction(2) ** (e - bits + 1))  # round(): Python's ties-to-even


@given(st.floats(min_value=-6e4, max_value=6e4, allow_nan=False))
def test_round_to_is_one_correct_rounding(x):
    for name, bits, emin in (("float32", 24, -126), ("float16", 11, -14), ("bfloat16", 8, -126)):
        assert round_to(np.array([x]), name)[0] == _round_exact(x, bits, emin), name
    assert round_to(np.array([x]), "float32")[0] == float(np.float32(x))
    assert round_to(np.array([x]), "float16")[0] == float(np.float16(x))


def test_a_registered_convention_is_used_by_name():
    register("test-sd-unet", Diffusers(flip_sin_to_cos=True, downscale_freq_shift=0))
    assert np.array_equal(timestep_embedding([3.0], 16, convention="test-sd-unet"),
                          timestep_embedding([3.0], 16, convention="guided-diffusion"))
    register("test-factory", lambda: GuidedDiffusion(max_period=100))
    assert posenc.timesteps.get("test-factory").max_period == 100.0


@pytest.mark.parametrize(("call", "named"), [
    (lambda: timestep_embedding(np.nan, 8), "t must be finite"),
    (lambda: timestep_embedding([1.0, np.inf], 8), "t must be finite"),
    (lambda: timestep_embedding(1.0, 0), "dim must be >= 1"),
    (lambda: timestep_embedding(1.0, 2.5), "dim must be an integer"),
    (lambda: timestep_embedding(1.0, 8, convention="sd9"), "'sd9'"),
    (lambda: timestep_embedding(1.0, 3), "half - downscale_freq_shift"),
    (lambda: timestep_embedding(1.0, 8, dtype=np.int32), "dtype"),
    (lambda: timestep_embedding(2.0**52, 8, convention=Diffusers(scale=1000)), "|p·ω|"),
    (lambda: timestep_embedding(100.0, 8, convention=Flux(time_dtype="float16")), "overflows float16"),
    (lambda: Diffusers(scale=0), "scale must be > 0"),
    (lambda: Diffusers(max_period=1), "max_period"),
    (lambda: Diffusers(flip_sin_to_cos="yes"), "flip_sin_to_cos"),
    (lambda: Flux(time_dtype="int8"), "time_dtype"),
    (lambda: register("", Diffusers()), "name"),
    (lambda: register("x", 3), "preset"),
])
def test_bad_input_names_the_value(call, named):
    with pytest.raises(PosEncError, match=None) as info:
        call()
    assert named in str(info.value)
