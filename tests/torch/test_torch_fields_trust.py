"""posenc.torch.NeRFEncoding and FourierFeatures against the trust sweeps (issue 31 §4, issue 36): each finding pinned.

- Output dtype: the NumPy functions' rule. An integer x gives float32 (before:
  int64, ``[[3, 0, 0, 0, 0]]`` truncated); bool and complex x are refused by
  dtype (before: a bool output, a complex x cut to its real part).
- Non-tensors (a list, a float, an ndarray) and a tensor on another device
  than the module's buffers are refused by name (before: AttributeError, a
  raw RuntimeError); a 0-d x is one point of one coordinate, as in
  posenc.nerf_encoding (before: IndexError).
- A NaN B loaded from a state_dict, or written in place, is named as B
  (before: "positions reach |p| = nan").
- Quarter turns: the bits of posenc.nerf_encoding (exact +0 and ±1), eagerly
  and in the compiled twin (the path an accelerator runs).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posenc import PosEncError, fourier_features, nerf_encoding
from posenc.torch import FourierFeatures, NeRFEncoding

RNG = np.random.default_rng(3631)


def _quarter_rich() -> np.ndarray:
    k = RNG.integers(-4096, 4097, 48)
    return np.concatenate([k / 8, k / 64, k * 3.0 + 0.25, RNG.uniform(-1, 1, 48)]).reshape(-1, 3)


@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.uint8])
def test_integer_x_gives_float32_as_the_numpy_function(dtype):
    x = torch.tensor([[3, 1, 0], [7, 2, 5]], dtype=dtype)
    for conv in ("nerf", "nerfstudio", "tcnn"):
        got = NeRFEncoding(4, convention=conv, include_input=True)(x)
        want = nerf_encoding(x.numpy(), 4, convention=conv, include_input=True)
        assert got.dtype == torch.float32 and np.array_equal(got.numpy(), want)
    assert NeRFEncoding(2)(torch.tensor([[3]])).tolist()[0][0] == 3.0  # the raw channel, as a float
    ff = FourierFeatures(torch.tensor([[0.25, 1.0, 0.5]]))
    got = ff(x)
    assert got.dtype == torch.float32 and np.array_equal(got.numpy(), fourier_features(x.numpy(), ff.B.numpy()))


@pytest.mark.parametrize("dtype", [torch.bool, torch.complex64, torch.complex128])
def test_bool_and_complex_x_are_refused_by_dtype(dtype):
    x = torch.ones(2, 3, dtype=dtype)
    name = str(dtype).removeprefix("torch.")
    for module in (NeRFEncoding(2), FourierFeatures(torch.eye(3))):
        with pytest.raises(PosEncError, match=rf"x must be real numbers \(an integer or floating tensor\), got a "
                                              rf"tensor of dtype {name}"):
            module(x)


@pytest.mark.parametrize("value", [[[0.5, 0.25]], 0.5, np.array([[0.5, 0.25]])])
def test_non_tensors_are_refused_by_name(value):
    with pytest.raises(PosEncError, match=r"x must be a torch\.Tensor, got .*: pass torch\.as_tensor\(x\), or call "
                                          r"posenc\.nerf_encoding"):
        NeRFEncoding(4)(value)
    with pytest.raises(PosEncError, match=r"x must be a torch\.Tensor, .*posenc\.fourier_features"):
        FourierFeatures(torch.eye(2))(value)


def test_a_0d_x_is_one_coordinate_as_in_numpy():
    got = NeRFEncoding(4)(torch.tensor(0.5))
    assert got.shape == (9,) and np.array_equal(got.numpy(), nerf_encoding(np.float32(0.5), 4))


def test_a_tensor_on_another_device_is_refused_by_name():
    with pytest.raises(PosEncError, match=r"x is on meta but the module's buffers are on cpu"):
        NeRFEncoding(4)(torch.zeros(2, 3, device="meta"))
    with pytest.raises(PosEncError, match=r"x is on meta but the module's buffers are on cpu"):
        FourierFeatures(torch.eye(3))(torch.zeros(2, 3, device="meta"))
    assert NeRFEncoding(4, convention="nerfstudio").to("meta")(torch.zeros(2, 3, device="meta")).shape == (2, 24)


def test_a_nan_b_is_named_as_b():
    ff = FourierFeatures(torch.eye(2, dtype=torch.float64))
    with pytest.raises(PosEncError, match=r"^B must be finite, got nan$"):
        ff.load_state_dict({"B": torch.tensor([[float("nan"), 0.0], [0.0, 1.0]], dtype=torch.float64)})
    with pytest.raises(PosEncError, match=r"B must keep its shape \(2, 2\) when loaded, got shape \(3, 2\)"):
        ff.load_state_dict({"B": torch.zeros(3, 2, dtype=torch.float64)})
    ff.B[0, 0] = float("nan")  # written in place: the next call names it
    with pytest.raises(PosEncError, match=r"^B must be finite, got nan$"):
        ff(torch.ones(1, 2))


ONE = torch.tensor([[1.0]], dtype=torch.float64)
BIG = torch.tensor([[12301.495]], dtype=torch.float32)


def _issue_cases(tcnn3: torch.Tensor, ns9: torch.Tensor) -> None:
    """The issues' values, exact: sin(π), cos(π), sin(2π)… (was 1.1e-49) and a cosine at 12301.495 (was -7.0e-43)."""
    got = tcnn3[0]
    assert got.tolist() == [0.0, -1.0, 0.0, 1.0, 0.0, 1.0] and not torch.signbit(got[::2]).any()
    v = ns9[0, 17]
    assert v.item() == 0.0 and not torch.signbit(v)


def test_the_issues_quarter_turns_are_exact():
    _issue_cases(NeRFEncoding(3, convention="tcnn")(ONE), NeRFEncoding(9, convention="nerfstudio")(BIG))


@pytest.mark.parametrize(("conv", "n"), [("tcnn", 12), ("nerfstudio", 10), ("nerf", 6)])
def test_quarter_turns_are_the_numpy_bits(conv, n):
    x = torch.from_numpy(_quarter_rich())
    for dt, ndt in ((torch.float32, np.float32), (torch.float64, np.float64)):
        got = NeRFEncoding(n, convention=conv, include_input=True)(x.to(dt)).numpy()
        want = nerf_encoding(x.to(dt).numpy(), n, convention=conv, include_input=True, dtype=ndt)
        assert np.array_equal(got.view(np.uint8), want.view(np.uint8))


def test_quarter_turns_in_the_compiled_twin():
    # under compile the torch twin runs (as on an accelerator): the NumPy bits, exact +0 and ±1. nerfstudio's
    # 9 bands 2π·2^0 … 2π·2^8 are all taken in turns (the mixed default is compiled in test_torch_fields.py)
    x = torch.cat([torch.from_numpy(_quarter_rich().astype(np.float32)).reshape(-1, 1), BIG])
    enc = NeRFEncoding(9, convention="nerfstudio")
    got = torch.compile(enc, fullgraph=True)(x)
    want = nerf_encoding(x.numpy(), 9, convention="nerfstudio")
    assert np.array_equal(got.numpy().view(np.int32), want.view(np.int32))
    _issue_cases(NeRFEncoding(3, convention="tcnn")(ONE), got[-1:])
    assert (got[:-1].abs() == 1).sum() > 100


def test_the_gradient_of_mixed_bands_is_the_formulas():
    # nerfstudio's default bands: 2π·2^linspace(0, 8, 10): whole exponents (in turns) and the rest (radians)
    x = torch.tensor(RNG.uniform(-1, 1, (5, 3)), dtype=torch.float64, requires_grad=True)
    weights = torch.linspace(-1, 1, 60, dtype=torch.float64)
    (NeRFEncoding(10, convention="nerfstudio")(x) * weights).sum().backward()
    y = x.detach().clone().requires_grad_(True)
    bands = 2 * torch.pi * 2.0 ** torch.linspace(0, 8, 10, dtype=torch.float64)
    ang = (y[..., None] * bands).reshape(5, 30)
    (torch.cat([torch.sin(ang), torch.cos(ang)], -1) * weights).sum().backward()
    assert torch.allclose(x.grad, y.grad, rtol=1e-12, atol=1e-9)
