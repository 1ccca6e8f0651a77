"""posenc.torch.NeRFEncoding and FourierFeatures: the NumPy core's bits, under compile, with the formula's gradient."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posenc import PosEncError, fourier_features, nerf_encoding
from posenc.torch import FourierFeatures, NeRFEncoding

X = torch.tensor(np.random.default_rng(3).uniform(-1, 1, (4, 5, 3)), dtype=torch.float32)


@pytest.mark.parametrize(("conv", "n"), [("nerf", 10), ("nerfstudio", 8), ("tcnn", 6), ("nerf", 0)])
@pytest.mark.parametrize("include", [None, True, False])
def test_values_are_the_numpy_cores(conv, n, include):
    got = NeRFEncoding(n, convention=conv, include_input=include)(X)
    ref = nerf_encoding(X.numpy(), n, convention=conv, include_input=include)
    assert got.dtype == torch.float32 and np.array_equal(got.numpy(), ref)


def test_gradient_is_the_formulas():
    x = X.double().clone().requires_grad_(True)
    enc = NeRFEncoding(6, convention="tcnn")
    (enc(x) * torch.linspace(-1, 1, 36, dtype=torch.float64)).sum().backward()
    y = x.detach().clone().requires_grad_(True)
    bands = torch.pi * 2.0 ** torch.arange(6, dtype=torch.float64)
    ang = y[..., None] * bands  # [..., 3, 6]
    plain = torch.stack([torch.sin(ang), torch.cos(ang)], -1).reshape(*y.shape[:-1], 36)
    (plain * torch.linspace(-1, 1, 36, dtype=torch.float64)).sum().backward()
    assert torch.allclose(x.grad, y.grad, rtol=1e-12, atol=1e-12)


def test_fourier_features_module():
    b = np.random.default_rng(0).normal(0, 5, (16, 3))
    ff = FourierFeatures(torch.tensor(b))
    assert np.array_equal(ff(X).numpy(), fourier_features(X.numpy(), b))
    assert set(ff.state_dict()) == {"B"}
    ff.half()
    assert ff.B.dtype == torch.float64 and np.array_equal(ff.B.numpy(), b)
    x = X.double().clone().requires_grad_(True)
    ff(x).sum().backward()
    y = X.double().clone().requires_grad_(True)
    ang = 2 * torch.pi * (y @ torch.tensor(b).T)
    torch.cat([torch.cos(ang), torch.sin(ang)], -1).sum().backward()
    assert torch.allclose(x.grad, y.grad, rtol=1e-10, atol=1e-10)


def test_under_compile_fullgraph():
    enc = NeRFEncoding(10, convention="nerfstudio", include_input=True)
    ff = FourierFeatures(torch.eye(3) * 3)
    assert torch.equal(torch.compile(enc, fullgraph=True)(X), enc(X))
    assert torch.equal(torch.compile(ff, fullgraph=True)(X), ff(X))


def test_bad_input():
    with pytest.raises(PosEncError, match="x must be finite"):
        NeRFEncoding(4)(torch.tensor([[float("nan"), 0.0]]))
    with pytest.raises(PosEncError, match="n_freqs must be >= 0"):
        NeRFEncoding(-1)
    with pytest.raises(PosEncError, match=r"B must be a matrix \[m, d\]"):
        FourierFeatures(torch.ones(3))
