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


@pytest.mark.parametrize(("channels", "flip", "scale", "t"), [
    (320, True, 1.0, np.random.default_rng(2).uniform(0, 1000, 4096)),  # two spans, both halves in one call
    (257, False, 1.0, np.random.default_rng(3).uniform(-1000, 1000, 300)),  # odd: the zero channel
    (256, True, 1000.0, np.random.default_rng(4).uniform(0, 1, 64)),
    (16, True, 1.0, np.array([3e12, -2.0**45, 7.5, 0.0])),  # angles past 2**40: the kernel with the far branch
])
def test_the_host_path_gives_the_numpy_functions_bits(channels, flip, scale, t):
    m = Timesteps(channels, flip, 0, scale)
    conv = Diffusers(flip, 0, scale)
    for tt in (torch.tensor(t, dtype=torch.float64), torch.tensor(t, dtype=torch.float32),
               torch.tensor(np.trunc(t), dtype=torch.int64), torch.tensor(t, dtype=torch.float64)[::2]):
        ref = timestep_embedding(tt.double().numpy(), channels, convention=conv)
        assert np.array_equal(m(tt).numpy(), ref)
    small = torch.tensor(np.clip(np.trunc(t), -100, 100))
    for dtype in (torch.int8, torch.int16, torch.int32, torch.uint8, torch.bfloat16):
        tt = small.abs().to(dtype)
        assert np.array_equal(m(tt).numpy(), timestep_embedding(tt.double().numpy(), channels, convention=conv))


@pytest.mark.parametrize("t", [
    torch.randint(0, 1000, (4096,), generator=torch.Generator().manual_seed(5)),  # steps: each value's row once
    torch.randint(-7, 9, (3, 40), generator=torch.Generator().manual_seed(6)).to(torch.int16),
    torch.full((50,), 981), torch.full((2, 9), 0.3125), torch.full((9,), -2.5, dtype=torch.float64),
    torch.tensor([-0.0, 0.0, -0.0, 0.0]), torch.tensor([0.0, -0.0]),  # equal, two inputs: the full path
    torch.tensor([5, 5]), torch.tensor([7]),
])
def test_repeated_t_gives_every_rows_own_bits(t):
    for flip, channels in ((True, 320), (False, 33)):
        got = Timesteps(channels, flip, 0)(t)
        ref = timestep_embedding(t.double().numpy(), channels, convention=Diffusers(flip, 0))
        assert got.shape == (*t.shape, channels)
        assert np.array_equal(got.numpy().view(np.int32), ref.view(np.int32))  # bits: -0.0 is not 0.0


@pytest.mark.parametrize(("t", "message"), [
    ([1.0, float("nan")], "t must be finite, got nan"),
    ([float("inf"), 1.0], "t must be finite, got inf"),
    ([-float("inf")], "t must be finite, got -inf"),
    ([1.0, 2.0**53], "t must satisfy |p| < 2**53 (float64 holds every integer only below it), got 9007199254740992.0"),
    (torch.tensor([2**53 + 1, 0]), "t must satisfy |p| < 2**53 (float64 holds every integer only below it), got "
                                   "9007199254740993"),
    (torch.tensor([0, -2**53]), "t must satisfy |p| < 2**53 (float64 holds every integer only below it), got "
                                "-9007199254740992"),
])
def test_the_host_path_refuses_before_any_work_with_the_checks_message(monkeypatch, t, message):
    import posenc.torch.timesteps as mod

    def boom(*a, **k):
        raise AssertionError("work started before validation")

    m = Timesteps(8, True, 0)
    m(torch.tensor([1.0]))  # numba loaded: the kernel is the host path's
    monkeypatch.setattr(mod, "fill_halves", boom)
    monkeypatch.setattr(mod, "fill_sincos", boom)
    tt = t if isinstance(t, torch.Tensor) else torch.tensor(t, dtype=torch.float64)
    with pytest.raises(PosEncError) as err:
        m(tt)
    assert str(err.value) == message
    with pytest.raises(PosEncError, match=r"^t reach \|p\| = 4398046511104 where"):
        Timesteps(8, False, 0, scale=2.0**20)(torch.tensor([2.0**42, 1.0]))
    with pytest.raises(AssertionError, match="work started"):  # the patched places are live
        m(torch.tensor([1.0, 2.0]))
