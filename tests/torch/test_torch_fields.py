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
    compiled = torch.compile(ff, fullgraph=True)  # the torch twin of the exact path (the one accelerators run)
    assert torch.equal(compiled(X), ff(X))
    quarters = QUARTERS.float().reshape(X.shape)  # 3·k/4: exact 0 and ±1 in the twin too, the zeros +0
    got = compiled(quarters)
    assert np.array_equal(got.numpy().view(np.int32), fourier_features(quarters.numpy(), 3 * np.eye(3)).view(np.int32))
    assert set(got.abs().unique().tolist()) == {0.0, 1.0} and not torch.signbit(got[got == 0]).any()


QUARTERS = torch.tensor(np.random.default_rng(4).integers(-40, 41, 60) / 4)


def test_quarter_turns_and_large_angles_are_the_numpy_functions_bits():
    b = np.array([[1.0], [3.0], [2.0**40 + 1], [0.1]])
    x = torch.cat([QUARTERS, QUARTERS + 1e8, torch.tensor([2.0**52 + 0.5, -(2.0**50) - 0.25])]).reshape(-1, 1)
    got = FourierFeatures(torch.tensor(b))(x).numpy()
    want = fourier_features(x.numpy(), b, dtype=np.float64)
    assert np.array_equal(got.view(np.int64), want.view(np.int64))
    assert (got[:, :3] == np.round(got[:, :3])).all() and not np.signbit(got[:, :3][got[:, :3] == 0]).any()
    assert FourierFeatures(torch.tensor([[1.0], [2.0]]))(torch.tensor(0.25)).tolist() == [0.0, -1.0, 1.0, 0.0]


def test_bad_input():
    with pytest.raises(PosEncError, match="x must be finite"):
        NeRFEncoding(4)(torch.tensor([[float("nan"), 0.0]]))
    with pytest.raises(PosEncError, match="n_freqs must be >= 0"):
        NeRFEncoding(-1)
    with pytest.raises(PosEncError, match=r"B must be a matrix \[m, d\]"):
        FourierFeatures(torch.ones(3))
    with pytest.raises(PosEncError, match=r"B must be a matrix \[m, d\] with m >= 1 and d >= 1, got shape \(3, 0\)"):
        FourierFeatures(torch.ones(3, 0))  # d = 0: no coordinate, as posenc.fourier_features refuses it
    with pytest.raises(PosEncError, match=r"got shape \(0, 3\)"):
        FourierFeatures(np.ones((0, 3)))
    with pytest.raises(PosEncError, match=r"x's last axis must hold B's d = 3 coordinates, got shape \(6, 2\)"):
        FourierFeatures(torch.ones(4, 3))(torch.ones(6, 2))  # 12 values would reshape to [4, 1, 3] silently
    with pytest.raises(PosEncError, match=r"got shape \(6, 0\)"):
        FourierFeatures(torch.ones(4, 3))(torch.ones(6, 0))
