"""posenc.torch.Timesteps: diffusers' drop-in, bit for bit the NumPy core, on device, under compile."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
import torch
from diffusers.models.embeddings import Timesteps as DiffusersTimesteps

from posenc import PosEncError, timestep_embedding
from posenc.exact import fill_sincos, geometric_ladder
from posenc.timesteps import Diffusers, Flux
from posenc.torch import Timesteps
from posenc.torch._exact import LadderBuffers
from posenc.torch._exact import sincos as twin_sincos

T = np.concatenate([np.arange(0, 1000, 37.0), [0.5, 0.001, 999.999, 12345.75, -3.0],
                    np.random.default_rng(1).uniform(0, 1, 40)])


def test_the_torch_twin_gives_the_numpy_cores_float64_bits():
    rng = np.random.default_rng(0)
    lad = geometric_ladder(96, 10000.0, Fraction(95), 1000)
    p = np.concatenate([rng.uniform(0, 1, 500), rng.uniform(0, 1e6, 500), [0.0, 1e9, 3e12, -5.5, 2.0**40]])
    s = np.empty((p.size, 96))
    c = np.empty((p.size, 96))
    fill_sincos(p, lad, s, c, engine="numpy")
    words = LadderBuffers(lad).words()
    ts, tc = twin_sincos(torch.from_numpy(p)[:, None], words)  # the twin itself (CPU modules take the NumPy core)
    assert np.array_equal(ts.numpy(), s) and np.array_equal(tc.numpy(), c)
    lo = torch.from_numpy(p * 2.0**-60)
    ts, tc = twin_sincos(torch.from_numpy(p)[:, None], words, lo[:, None])
    fill_sincos(p, lad, s, c, p * 2.0**-60, engine="numpy")
    assert np.array_equal(ts.numpy(), s) and np.array_equal(tc.numpy(), c)


@pytest.mark.parametrize(("args", "kw"), [
    ((320, True, 0), {}), ((256, False, 1), {}), ((257, True, 1), {}), ((256, True, 0), {"scale": 1000}),
    ((64, False, 0.5), {}),
])
def test_a_drop_in_for_diffusers(args, kw):
    ours, theirs = Timesteps(*args, **kw), DiffusersTimesteps(*args, **kw)
    t = torch.tensor(T / 1000 if kw.get("scale") == 1000 else T, dtype=torch.float32)
    a, b = ours(t), theirs(t)
    assert a.shape == b.shape and a.dtype == b.dtype == torch.float32
    assert (a - b).abs().max() < 1e-3  # diffusers' own float32 error at these angles
    assert dict(ours.state_dict()) == {} == dict(theirs.state_dict())
    conv = Diffusers(args[1], args[2], kw.get("scale", 1.0))
    assert np.array_equal(a.numpy(), timestep_embedding(t.numpy(), args[0], convention=conv))


@pytest.mark.parametrize("dtype", [torch.int64, torch.float32, torch.bfloat16, torch.float16, torch.float64])
def test_any_input_dtype_and_shape(dtype):
    t = torch.tensor([[0, 1, 999], [3, 4, 5]]).to(dtype)
    out = Timesteps(10, True, 0)(t)
    assert out.shape == (2, 3, 10) and out.dtype == torch.float32
    ref = timestep_embedding(t.double().numpy(), 10, convention=Diffusers(True, 0))
    assert np.array_equal(out.numpy(), ref)


def test_dtype_casts_of_the_model_leave_the_frequencies_exact():
    m = Timesteps(64, True, 0)
    t = torch.tensor([0.25, 700.5])
    before = m(t)
    m.half()
    m.to(torch.bfloat16)
    assert torch.equal(m(t), before)


def test_flux_from_convention_with_and_without_the_pipelines_rounding():
    t = torch.tensor([0.123, 0.5, 0.98], dtype=torch.bfloat16)
    exact = Timesteps.from_convention(256, "flux")(t)
    assert np.array_equal(exact.numpy(), timestep_embedding(t.double().numpy(), 256, convention="flux"))
    rounded = Timesteps.from_convention(256, Flux(time_dtype="input"))(t)
    ref = timestep_embedding((t * 1000).double().numpy(), 256, convention="guided-diffusion")
    assert np.array_equal(rounded.numpy(), ref)
    assert not torch.equal(rounded, exact)


def test_under_torch_compile_fullgraph_the_same_bits():
    m = Timesteps(320, True, 0)
    t = torch.tensor(T, dtype=torch.float32)
    compiled = torch.compile(m, fullgraph=True)
    assert torch.equal(compiled(t), m(t))


def test_bad_t_on_cpu_is_refused_by_name():
    m = Timesteps(8, False, 1)
    with pytest.raises(PosEncError, match="t must be finite"):
        m(torch.tensor([1.0, float("nan")]))
    with pytest.raises(PosEncError, match="t reach"):
        Timesteps(8, False, 0, scale=2.0**20)(torch.tensor([2.0**40]))
    with pytest.raises(PosEncError, match="num_channels must be >= 1"):
        Timesteps(0, False, 1)
    with pytest.raises(PosEncError, match="half - downscale_freq_shift"):
        Timesteps(2, False, 1)
