"""No float64 on the device path: every module traced (make_fx, torch.compile) holds no float64 tensor.

When the requested output is float32, float16 or bfloat16, the traced graph of
Timesteps, NeRFEncoding and RotaryEmbedding (real positions) must not produce a
float64 tensor anywhere (MPS has none; GPUs run it at 1/32 to 1/64 rate), and
must give the eager bits. The old float64 twin traced 14 (Timesteps), 2
(NeRFEncoding) and 1 (cos_sin) float64 nodes under make_fx.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.fx.experimental.proxy_tensor import make_fx

from posenc.exact.fixed import fixed_ladder
from posenc.exact.fixed_phase import phase_of_floats, phase_of_integers
from posenc.exact.fixed_sincos import NUMPY_OPS, sincos_f32
from posenc.timesteps.conventions import Diffusers
from posenc.torch import NeRFEncoding, RotaryEmbedding, Timesteps
from posenc.torch._exact import LadderBuffers

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def float64_nodes(gm: torch.fx.GraphModule, key: str = "val") -> list[str]:
    """The nodes of ``gm`` whose value (or any tensor of it) is float64."""
    out = []
    for node in gm.graph.nodes:
        val = node.meta.get(key)
        vals = val if isinstance(val, (tuple, list)) else (val,)
        if any(isinstance(v, torch.Tensor) and v.dtype == torch.float64 for v in vals):
            out.append(node.format_node())
    return out


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.dtype == b.dtype and a.shape == b.shape and torch.equal(a.float().view(torch.int32),
                                                                       b.float().view(torch.int32))


def _timesteps_inputs() -> list[tuple[str, Timesteps, torch.Tensor]]:
    g = torch.Generator().manual_seed(0)
    t = torch.rand(24, generator=g) * 1000
    cases = []
    for conv in ("diffusers", "flux", "guided-diffusion"):
        m = Timesteps.from_convention(33, conv)  # odd: the zero channel too
        for x in (t, t.to(torch.int64), t.to(torch.bfloat16), t.half(), (t / 1000).half()):
            cases.append((f"{conv}-{x.dtype}", m, x))
    return cases


@pytest.mark.parametrize(("name", "module", "t"), _timesteps_inputs(), ids=lambda v: v if isinstance(v, str) else "")
def test_timesteps_traced_by_make_fx_holds_no_float64_and_gives_the_eager_bits(name, module, t):
    gm = make_fx(module)(t)
    assert float64_nodes(gm) == [], name
    assert same_bits(gm(t), module(t)), name


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("convention", ["nerf", "nerfstudio", "tcnn"])
def test_nerf_traced_by_make_fx_holds_no_float64_and_gives_the_eager_bits(convention, dtype):
    m = NeRFEncoding(6, convention=convention)
    x = (torch.randn(40, 3, generator=torch.Generator().manual_seed(1)) * 4).to(dtype)
    x[0] = torch.tensor([0.0, 1.0, -2.0])  # sin(kπ) of the dyadic bands: exactly 0
    gm = make_fx(m)(x)
    assert float64_nodes(gm) == []
    assert same_bits(gm(x), m(x))


@pytest.mark.parametrize("dtype", DTYPES)
def test_rope_rows_at_real_positions_traced_by_make_fx_hold_no_float64(dtype):
    rope = RotaryEmbedding(64, rotary_dim=48)
    pos = (torch.rand(20, generator=torch.Generator().manual_seed(2)) * 3000).to(dtype)
    fn = lambda p: rope.cos_sin(20, positions=p, dtype=torch.float32)  # noqa: E731
    gm = make_fx(fn)(pos)
    assert float64_nodes(gm) == []
    assert all(same_bits(a, b) for a, b in zip(gm(pos), fn(pos), strict=True))


def test_rope_with_sections_traced_by_make_fx_holds_no_float64():
    rope = RotaryEmbedding(64, sections=[8, 12, 12])
    pos = torch.rand(10, 3, generator=torch.Generator().manual_seed(3)) * 50
    fn = lambda p: rope.cos_sin(10, positions=p, dtype=torch.float32)  # noqa: E731
    gm = make_fx(fn)(pos)
    assert float64_nodes(gm) == []
    assert all(same_bits(a, b) for a, b in zip(gm(pos), fn(pos), strict=True))


def _dynamo_float64(fn, *args):
    """Compile ``fn`` with fullgraph=True and a backend that records the float64 nodes of the graph it is given."""
    seen: list[str] = []

    def backend(gm, example_inputs):
        seen.extend(float64_nodes(gm, "example_value"))
        return gm.forward

    torch._dynamo.reset()
    out = torch.compile(fn, fullgraph=True, backend=backend)(*args)
    return seen, out


@pytest.mark.parametrize("kind", ["timesteps", "flux-bf16", "nerf-f16", "rope-real"])
def test_under_torch_compile_fullgraph_no_node_is_float64(kind):
    g = torch.Generator().manual_seed(4)
    if kind == "timesteps":
        m, args = Timesteps(64, True, 0), (torch.rand(8, generator=g) * 1000,)
    elif kind == "flux-bf16":
        m, args = Timesteps.from_convention(16, "flux"), (torch.rand(8, generator=g).to(torch.bfloat16),)
    elif kind == "nerf-f16":
        m, args = NeRFEncoding(4), (torch.randn(8, 3, generator=g).half(),)
    else:
        rope = RotaryEmbedding(32)
        q = torch.randn(1, 2, 6, 32, generator=g)
        m = lambda q, k, p: rope(q, k, positions=p)  # noqa: E731
        args = (q, q.clone(), torch.rand(6, generator=g) * 100)
    seen, out = _dynamo_float64(m, *args)
    assert seen == []
    want = m(*args)
    for a, b in zip(out if isinstance(out, tuple) else (out,), want if isinstance(want, tuple) else (want,),
                    strict=True):
        assert same_bits(a, b)


def test_float64_output_keeps_the_float64_path():
    """The float64 twin is still there for float64 positions (rows float64): the control of the tests above."""
    rope = RotaryEmbedding(32)
    pos = torch.rand(5, dtype=torch.float64) * 10
    gm = make_fx(lambda p: rope.cos_sin(5, positions=p, dtype=torch.float64))(pos)
    assert float64_nodes(gm) != []


def _numpy_rows(p: np.ndarray, ladder) -> tuple[np.ndarray, np.ndarray]:
    fx = fixed_ladder(ladder)
    phase = (phase_of_integers if p.dtype.kind == "i" else phase_of_floats)(NUMPY_OPS, p[:, None], fx)
    return sincos_f32(NUMPY_OPS, phase)


@pytest.mark.parametrize("kind", ["int32", "float32"])
def test_the_inlined_integer_kernel_traced_holds_no_float64_and_gives_numpys_bits(kind):
    """The integer operations themselves (what a device runs): traced, no float64; the NumPy 32-bit bits."""
    ladder = Diffusers(True, 0, 1, 10000).plan(32).ladder
    lad = LadderBuffers(ladder)
    rng = np.random.default_rng(5)
    if kind == "int32":
        p = rng.integers(-2**31, 2**31, 300).astype(np.int32)
    else:
        p = (rng.standard_normal(300) * 10.0 ** rng.integers(-4, 9, 300)).astype(np.float32)
    p[:3] = [0, 1, -1]
    fn = lambda t: lad.sincos32(t, inline=True)  # noqa: E731
    gm = make_fx(fn)(torch.from_numpy(p))
    assert float64_nodes(gm) == []
    s, c = gm(torch.from_numpy(p))
    ws, wc = _numpy_rows(p, ladder)
    assert np.array_equal(s.numpy().view(np.uint32), ws.view(np.uint32))
    assert np.array_equal(c.numpy().view(np.uint32), wc.view(np.uint32))


def test_the_inlined_integer_kernel_gives_nan_rows_outside_its_range():
    lad = LadderBuffers(Diffusers(True, 0, 1, 10000).plan(8).ladder)
    s, c = lad.sincos32(torch.tensor([2.0**31, float("nan"), 3.0]), inline=True)
    assert torch.isnan(s[:2]).all() and torch.isnan(c[:2]).all() and not torch.isnan(s[2]).any()
    s, _ = lad.sincos32(torch.tensor([2**31, -2**31 - 1, 5], dtype=torch.int64), inline=True)
    assert torch.isnan(s[:2]).all() and not torch.isnan(s[2]).any()



@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_fourier_features_traced_by_make_fx_hold_no_float64(dtype):
    from posenc.torch import FourierFeatures

    g = torch.Generator().manual_seed(6)
    ff = FourierFeatures(torch.randn(12, 3, generator=g) * 10)  # float32 values: the 32-bit path holds B
    x = torch.randn(30, 3, generator=g).to(dtype)
    gm = make_fx(ff)(x)
    assert float64_nodes(gm) == []
    assert same_bits(gm(x), ff(x))


def test_fourier_features_the_integer_phase_gives_the_hosts_bits_and_its_derivative():
    """The device computation (phase_of_dot on TORCH_OPS) equals the NumPy function's bits; the gradient is 2π·B."""
    from posenc.exact.fixed_dot import phase_of_dot
    from posenc.torch import FourierFeatures
    from posenc.torch._fixed import TORCH_OPS

    g = torch.Generator().manual_seed(7)
    b = torch.randn(8, 2, generator=g) * 5
    x = torch.randn(20, 2, generator=g)
    ff = FourierFeatures(b)
    s, c = sincos_f32(TORCH_OPS, phase_of_dot(TORCH_OPS, x, b)[0])
    assert same_bits(torch.cat([c, s], -1), ff(x))
    xg = x.clone().requires_grad_(True)
    gm = make_fx(lambda v: ff(v).sum())(xg)  # the traced (32-bit) path with its derivative
    assert float64_nodes(gm) == []
    (grad,) = torch.autograd.grad(ff(xg.double()).sum(), xg)  # the float64 path's derivative, in float64
    got = torch.func.grad(lambda v: make_fx(lambda u: ff(u).sum())(v)(v))(x.clone())
    assert torch.allclose(got, grad.float(), rtol=1e-4, atol=1e-3)


def test_fourier_features_with_a_b_float32_does_not_hold_keeps_float64():
    from posenc.torch import FourierFeatures

    ff = FourierFeatures(torch.tensor([[0.1]], dtype=torch.float64))  # 0.1 is no float32
    gm = make_fx(ff)(torch.ones(2, 1))
    assert float64_nodes(gm) != []
