"""posenc.torch.Timesteps against the trust sweep (issue 31 §4): each finding pinned.

- Compile keeps Flux's rounding: ``time_factor · t`` in bfloat16 or float16
  is rounded by exact integer and float64 operations, which Inductor cannot
  fold (before: it dropped the round trip in ``t.to(bf16) * 1000``; compiled
  and eager differed in 16,300 of 16,384 values, by up to 1.72).
- The product is the reference's torch multiply for any factor (0.1, 1/3,
  999.9 with "float32" and "input" gave other bits than the NumPy function).
- Differentiable in t as diffusers' module is (before: no gradient); the
  gradient is the formula's, d/dt sin(ω·s·t) = ω·s·cos(ω·s·t).
- bool and complex t, non-tensors, and a t on another device than the
  module are refused by name (before: accepted, AttributeError, raw RuntimeError).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from posenc import PosEncError, timestep_embedding
from posenc.timesteps import Flux, GuidedDiffusion
from posenc.torch import Timesteps

T = torch.rand(2048, generator=torch.Generator().manual_seed(36))  # float32 t in [0, 1), as a sampler gives


class _Presets(torch.nn.Module):
    """Several Flux roundings in one graph: one compile for all of them."""

    CASES = (("bfloat16", 1000.0), ("float16", 0.1))  # every step of the twin: t, the float32 product, the dtype

    def __init__(self) -> None:
        super().__init__()
        self.mods = torch.nn.ModuleList(Timesteps.from_convention(8, Flux(time_factor=f, time_dtype=d))
                                        for d, f in self.CASES)

    def forward(self, t: torch.Tensor) -> list[torch.Tensor]:
        return [m(t) for m in self.mods]


def test_compile_keeps_fluxs_rounding_bit_for_bit():
    t = torch.cat([T, torch.tensor([0.4962566])])  # the t: 496.0 in bf16, where compile read 496.2566
    presets = _Presets()
    eager = presets(t)
    compiled = torch.compile(presets, fullgraph=True)(t)
    for (d, f), e, c in zip(_Presets.CASES, eager, compiled, strict=True):
        assert torch.equal(e.view(torch.int32), c.view(torch.int32)), (d, f)
        want = timestep_embedding(t.numpy(), 8, convention=Flux(time_factor=f, time_dtype=d))
        assert np.array_equal(e.numpy().view(np.uint32), want.view(np.uint32)), (d, f)
    ref = timestep_embedding(np.array([496.0]), 8, convention=GuidedDiffusion())
    assert np.array_equal(compiled[0].numpy()[-1:], ref)


@pytest.mark.parametrize("factor", [0.1, 1 / 3, 999.9, 1000.0])
@pytest.mark.parametrize("time_dtype", ["float32", "input", "bfloat16", "float16"])
def test_the_product_is_the_references_torch_multiply(factor, time_dtype):
    dt = {"input": torch.float32, "float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    ref = (factor * T.to(dt[time_dtype])).double().numpy()  # BFL: t = time_factor * t, in the pipeline's dtype
    got = Timesteps.from_convention(16, Flux(time_factor=factor, time_dtype=time_dtype))(T).numpy()
    want = timestep_embedding(ref, 16, convention=GuidedDiffusion())
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))


def _formula_grad(t: torch.Tensor, dim: int, shift: float, scale: float, cos_first: bool,
                  weights: torch.Tensor) -> torch.Tensor:
    """d/dt of Σ weights·[sin | cos](scale·t·ω_k), ω_k = 10000^(−k/(half − shift)), written out by hand."""
    half = dim // 2
    w = torch.tensor([math.exp(-math.log(10000.0) * k / (half - shift)) for k in range(half)], dtype=torch.float64)
    ang = scale * t.detach().double()[:, None] * w
    ds, dc = scale * w * torch.cos(ang), -scale * w * torch.sin(ang)
    parts = (dc, ds) if cos_first else (ds, dc)
    return (torch.cat(parts, -1) * weights[: 2 * half]).sum(-1)


@pytest.mark.parametrize(("flip", "shift", "scale"), [(True, 0.0, 1.0), (False, 1.0, 1.0), (True, 0.0, 1000.0)])
def test_differentiable_in_t_with_the_formulas_gradient(flip, shift, scale):
    t = torch.tensor([0.0, 0.37, 3.0, 250.5, 999.0], dtype=torch.float64, requires_grad=True)
    weights = torch.linspace(-1, 1, 16, dtype=torch.float32)
    mod = Timesteps(16, flip, shift, scale)
    (mod(t) * weights).sum().backward()
    want = _formula_grad(t, 16, shift, scale, flip, weights.double())
    assert t.grad is not None and torch.allclose(t.grad, want, rtol=1e-6, atol=1e-6)


def test_the_gradient_is_close_to_diffusers_own():
    from diffusers.models.embeddings import Timesteps as DiffusersTimesteps

    t = torch.tensor([3.0, 17.5, 500.0], requires_grad=True)
    Timesteps(8, True, 0)(t).sum().backward()
    u = t.detach().clone().requires_grad_(True)
    DiffusersTimesteps(8, True, 0)(u).sum().backward()
    assert t.grad is not None and u.grad is not None and torch.allclose(t.grad, u.grad, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize("time_dtype", [None, "bfloat16"])
def test_flux_gradient_is_the_factor_times_the_formulas(time_dtype):
    # rounding has no derivative of its own: d/dt of the reference's time_factor·t is time_factor (as autograd
    # through t.to(bf16) * 1000 gives), so the gradient is 1000·ω·cos at the (rounded) time
    t = torch.tensor([0.123, 0.5, 0.9], dtype=torch.float64, requires_grad=True)
    weights = torch.linspace(-1, 1, 8, dtype=torch.float32)
    (Timesteps.from_convention(8, Flux(time_dtype=time_dtype))(t) * weights).sum().backward()
    times = 1000.0 * t.detach() if time_dtype is None else (t.detach().to(torch.bfloat16) * 1000).double()
    want = _formula_grad(times, 8, 0.0, 1.0, True, weights.double()) * 1000.0
    assert t.grad is not None and torch.allclose(t.grad, want, rtol=1e-6, atol=1e-4)


@pytest.mark.parametrize("dtype", [torch.bool, torch.complex64])
def test_bool_and_complex_t_are_refused_as_the_numpy_function_refuses_them(dtype):
    name = str(dtype).removeprefix("torch.")
    with pytest.raises(PosEncError, match=rf"t must be real numbers \(an integer or floating tensor\), got a tensor "
                                          rf"of dtype {name}"):
        Timesteps(8, True, 0)(torch.ones(3, dtype=dtype))
    with pytest.raises(PosEncError):
        timestep_embedding(torch.ones(3, dtype=dtype).numpy(), 8)


@pytest.mark.parametrize("value", [[0.5], 0.5, np.array([0.5])])
def test_non_tensors_are_refused_by_name(value):
    with pytest.raises(PosEncError, match=r"t must be a torch\.Tensor, got .*posenc\.timestep_embedding"):
        Timesteps(8, True, 0)(value)


def test_a_t_on_another_device_is_refused_by_name():
    with pytest.raises(PosEncError, match=r"t is on meta but the module's buffers are on cpu"):
        Timesteps(8, True, 0)(torch.zeros(3, device="meta"))
    assert Timesteps(8, True, 0).to("meta")(torch.zeros(3, device="meta")).shape == (3, 8)
