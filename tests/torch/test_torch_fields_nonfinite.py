"""NaN and ±inf coordinates are refused by NeRFEncoding and FourierFeatures on every path: never NaN features.

Before, only a CPU tensor in eager mode was checked. Off the host (a device
tensor, or a trace: ``make_fx``, ``torch.compile``) FourierFeatures' 32-bit
path gave NaN features, its float64 twin NaN or finite numbers of no meaning
(a traced graph: ``B = 0.1·I``, x = [0, nan, 0] gave finite features), and
NeRFEncoding's float64 twin NaN. Now the eager check names the value as the
host does (:func:`posenc.triton.positions.check_values`) and a traced graph
asserts, as Timesteps and the 32-bit rows refuse an out-of-range position.
"""

from __future__ import annotations

import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from posenc import PosEncError
from posenc.torch import FourierFeatures, NeRFEncoding
from posenc.triton.positions import check_values

BAD = [float("nan"), float("inf"), float("-inf")]
NARROW = [torch.float32, torch.float16, torch.bfloat16]


def _modules() -> dict[str, torch.nn.Module]:
    return {
        "fourier-32-bit": FourierFeatures(torch.eye(3) * 3),  # float32 holds B: the 32-bit path off the host
        "fourier-float64": FourierFeatures(torch.eye(3, dtype=torch.float64) * 0.1),  # it does not: the twin
        "nerf": NeRFEncoding(4),
    }


def _with(value: float, dtype: torch.dtype) -> torch.Tensor:
    x = torch.full((2, 3), 0.25, dtype=dtype)
    x[1, 1] = value
    return x


def _shown(value: float) -> str:
    return "nan" if value != value else ("inf" if value > 0 else "-inf")


@pytest.mark.parametrize("name", ["fourier-32-bit", "fourier-float64", "nerf"])
@pytest.mark.parametrize("dtype", [*NARROW, torch.float64])
@pytest.mark.parametrize("value", BAD)
def test_eager_on_the_host_names_the_value(name, dtype, value):
    with pytest.raises(PosEncError, match=rf"^x must be finite, got {_shown(value)}$"):
        _modules()[name](_with(value, dtype))


@pytest.mark.parametrize("dtype", [*NARROW, torch.float64])
@pytest.mark.parametrize("value", BAD)
def test_eager_off_the_host_names_the_value_as_the_host_does(dtype, value):
    # what a device tensor meets in eager mode (the check reads it: one reduction, then the same message)
    with pytest.raises(PosEncError, match=rf"^x must be finite, got {_shown(value)}$"):
        check_values(_with(value, dtype), "x")
    with pytest.raises(PosEncError, match=r"^x must satisfy \|p\| < 2\*\*53 .*, got -9007199254740992$"):
        check_values(torch.tensor([3, -(2**53)], dtype=torch.int64), "x")
    with pytest.raises(PosEncError, match=r"got -9223372036854775808$"):  # int64's lowest: abs would wrap it
        check_values(torch.tensor([-(2**63)], dtype=torch.int64), "x")
    check_values(torch.tensor([2**53 - 1, -(2**53) + 1], dtype=torch.int64), "x")  # inside: nothing to refuse
    check_values(torch.tensor([float.fromhex("0x1.fffffffffffffp52")], dtype=torch.float64), "x")


@pytest.mark.parametrize("name", ["fourier-32-bit", "fourier-float64", "nerf"])
@pytest.mark.parametrize("dtype", [*NARROW, torch.float64])
def test_a_make_fx_graph_asserts_instead_of_giving_nan(name, dtype):
    m = _modules()[name]
    good = _with(0.5, dtype)
    gm = make_fx(m)(good)
    y = gm(good)
    assert torch.equal(y, m(good)) and torch.isfinite(y).all()
    for value in BAD:
        with pytest.raises(RuntimeError, match=r"posenc: x must be finite with \|x\| < 2\*\*53"):
            gm(_with(value, dtype))  # was NaN (or meaningless finite) features


@pytest.mark.parametrize("name", ["fourier-32-bit", "fourier-float64", "nerf"])
@pytest.mark.parametrize("dtype", NARROW)
def test_torch_compile_fullgraph_asserts_instead_of_giving_nan(name, dtype):
    m = _modules()[name]
    fn = torch.compile(m, fullgraph=True, backend="eager")
    good = _with(0.5, dtype)
    assert torch.equal(fn(good), m(good))
    for value in BAD:
        with pytest.raises(RuntimeError, match=r"posenc: x must be finite with \|x\| < 2\*\*53"):
            fn(_with(value, dtype))


def test_inductor_keeps_the_assert():
    ff = FourierFeatures(torch.eye(3) * 3)
    fn = torch.compile(ff, fullgraph=True)  # Inductor: the assert must survive its passes
    assert torch.equal(fn(_with(0.5, torch.float32)), ff(_with(0.5, torch.float32)))
    with pytest.raises(RuntimeError, match="x must be finite"):
        fn(_with(float("nan"), torch.float32))


@pytest.mark.parametrize("name", ["fourier-float64", "nerf"])
def test_the_float64_twin_under_make_fx_computes_rather_than_freezing_zeros(name):
    # make_fx is not torch.compile: the NumPy core was called on its placeholder tensors and the graph held
    # the empty outputs as constants (all zeros for FourierFeatures(0.1·I) at x = 0.5, cos = 0.951… there)
    m = _modules()[name]
    x = _with(0.5, torch.float64) if name == "nerf" else _with(0.5, torch.float32)
    gm = make_fx(m)(x)
    y = gm(x)
    assert torch.equal(y, m(x)) and (y != 0).any()
    other = x * 0.3
    assert torch.equal(gm(other), m(other))  # the graph computes: another x, its own features
