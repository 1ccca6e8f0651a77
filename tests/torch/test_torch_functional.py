"""posenc.torch's functional forms of the NumPy API: the module's values, NumPy's bits, the dtype and device asked for.

Each function is checked against NumPy posenc (the reference) in float32 and
float64 (float16 where both round once from float64), against its module
(the one place its values are computed), for its shapes, dtypes and device
(meta too), its gradient (``torch.autograd.gradcheck``: finite differences
of its own float64 values), and its refusals (a PosEncError before any work).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch

import posenc
import posenc.torch as pt
from posenc import PosEncError

_T = np.array([0.0, 1.0, 12.5, 999.0, 0.0625])
_X = np.array([[0.1, -0.7, 0.3], [1.0, 0.0, -1.0], [2.5, 1e3, -3e4]])
_B = np.array([[1.0, 2.0, -3.0], [0.5, 0.0, 7.0], [-1.25, 0.375, 2.0]])
_W = np.random.default_rng(7).standard_normal((32, 4))

#: name -> (torch call, NumPy call), each of (array-like input, NumPy or torch dtype)
CALLS: dict[str, tuple[Any, Any]] = {
    "timestep_embedding": (lambda v, dt: pt.timestep_embedding(v, 9, convention="flux", dtype=dt),
                           lambda v, dt: posenc.timestep_embedding(v, 9, convention="flux", dtype=dt)),
    "nerf_encoding": (lambda v, dt: pt.nerf_encoding(v, 5, convention="nerfstudio", include_input=True, dtype=dt),
                      lambda v, dt: posenc.nerf_encoding(v, 5, convention="nerfstudio", include_input=True, dtype=dt)),
    "fourier_features": (lambda v, dt: pt.fourier_features(v, torch.from_numpy(_B), dtype=dt),
                         lambda v, dt: posenc.fourier_features(v, _B, dtype=dt)),
    "encode_nd": (lambda v, dt: pt.encode_nd(v, 16, convention="mae", dtype=dt),
                  lambda v, dt: posenc.encode_nd(v, 16, convention="mae", dtype=dt)),
    "rope_cos_sin": (lambda v, dt: pt.rope_cos_sin(v, 8, scaling=posenc.YaRN(4.0, 16), dtype=dt)[1],
                     lambda v, dt: posenc.rope_cos_sin(v, 8, scaling=posenc.YaRN(4.0, 16), dtype=dt)[1]),
}
_INPUT = {"timestep_embedding": _T, "nerf_encoding": _X, "fourier_features": _X, "encode_nd": _X[:, :2],
          "rope_cos_sin": _T * 8}
_DTYPES = [(torch.float32, np.float32), (torch.float64, np.float64), (torch.float16, np.float16)]


@pytest.mark.parametrize("name", sorted(CALLS))
@pytest.mark.parametrize(("tdt", "ndt"), _DTYPES, ids=["float32", "float64", "float16"])
def test_numpys_bits_in_each_dtype(name, tdt, ndt):
    mine, numpy = CALLS[name]
    v = _INPUT[name]
    want = numpy(v, ndt)
    for given in (torch.from_numpy(v), v.tolist()):  # a tensor, and an array-like read as NumPy reads it
        got = mine(given, tdt)
        assert got.dtype == tdt and got.device.type == "cpu" and tuple(got.shape) == want.shape
        assert got.numpy().tobytes() == want.tobytes(), name


@pytest.mark.parametrize("name", sorted(CALLS))
def test_bfloat16_is_the_float64_value_rounded_once(name):
    mine, numpy = CALLS[name]
    v = _INPUT[name]
    exact = numpy(v, np.float64)
    got = mine(torch.from_numpy(v), torch.bfloat16).double().numpy()
    # the nearest bfloat16: within half a unit (8 significand bits) of the float64 value
    ulp = np.exp2(np.floor(np.log2(np.maximum(np.abs(exact), 2.0**-126))) - 7)
    assert (np.abs(got - exact) <= ulp / 2).all(), name


def test_each_function_is_its_modules_computation():
    t = torch.tensor([0.0, 3.0, 999.0])
    assert torch.equal(pt.timestep_embedding(t, 320), pt.Timesteps.from_convention(320, "diffusers")(t))
    x = torch.from_numpy(_X).float()
    assert torch.equal(pt.nerf_encoding(x, 4, convention="tcnn"), pt.NeRFEncoding(4, convention="tcnn")(x))
    assert torch.equal(pt.fourier_features(x, _B), pt.FourierFeatures(_B)(x))
    assert torch.equal(pt.alibi_bias(3, 5, 4, offset=2), pt.AlibiBias(4)(3, 5, offset=2)[0])
    m = pt.T5RelativeBias(4, bidirectional=False)
    rel = torch.tensor([[3, 0, -1, -20, -(10**9)], [7, -128, -129, 2**40, -(2**52)]])
    assert torch.equal(pt.t5_bucket(rel, bidirectional=False), m.bucket(rel))
    w = m.relative_attention_bias.weight
    assert torch.equal(pt.t5_bias(w, 3, 6, offset=2, bidirectional=False), m(3, 6, offset=2)[0])
    rope = pt.RotaryEmbedding(8, base=100.0, scaling=posenc.YaRN(4.0, 16))
    for p in (torch.arange(3, 8), torch.tensor([0.5, 3.25, 7.0])):  # the cached rows, and real-valued positions
        got, want = pt.rope_cos_sin(p, 8, base=100.0, scaling=posenc.YaRN(4.0, 16)), rope.cos_sin(len(p), positions=p)
        assert all(torch.equal(g, w) for g, w in zip(got, want, strict=True))


def test_biases_and_buckets_are_numpys():
    pos = np.array([[0, 0, 1, 2, 3], [0, 1, 2, 3, 4]])
    for kw in ({}, {"offset": 2, "convention": "mpt"}, {"causal": False, "convention": "bloom"}):
        for dt, ndt in _DTYPES[:2]:
            want = posenc.alibi_bias(3, 5, 6, dtype=ndt, **kw)
            assert pt.alibi_bias(3, 5, 6, dtype=dt, **kw).numpy().tobytes() == want.tobytes()
    got = pt.alibi_bias(2, 5, 3, positions=torch.from_numpy(pos), convention="bloom")
    assert got.shape == (2, 3, 2, 5) and np.array_equal(got.numpy(), posenc.alibi_bias(
        2, 5, 3, positions=pos, convention="bloom"))
    rel = np.array([-(2**53 - 1), -1000, -13, -1, 0, 1, 9, 127, 128, 2**53 - 1])
    for kw in ({}, {"bidirectional": False, "num_buckets": 12, "max_distance": 2**40}):
        got = pt.t5_bucket(torch.from_numpy(rel), **kw)
        assert got.dtype == torch.int64 and np.array_equal(got.numpy(), posenc.t5_bucket(rel, **kw))
    qp, kp = np.array([5, 6, 2**40]), np.array([0, 300, -7, 2**40 + 3])
    want = posenc.t5_bias(_W, 3, 4, q_positions=qp, k_positions=kp, max_distance=64)
    got = pt.t5_bias(torch.from_numpy(_W), 3, 4, q_positions=torch.from_numpy(qp), k_positions=kp.tolist(),
                     max_distance=64)
    assert got.dtype == torch.float64 and got.numpy().tobytes() == np.ascontiguousarray(want).tobytes()


def test_t5_bias_is_the_learned_table_of_hf_buckets():
    # reference: the buckets of HF's formula in float32, written here (T5's own settings: no platform-log ties)
    q, k = 6, 300
    rel = np.arange(k)[None, :] - (np.arange(q) + 40)[:, None]
    n, out = 16, np.where(rel > 0, 16, 0)
    d = np.abs(rel)
    far = np.maximum(d, 8).astype(np.float32)  # the logarithmic buckets' distances (the others are d itself)
    large = 8 + (np.log(far / np.float32(8)) / np.float32(math.log(128 / 8)) * np.float32(n - 8)).astype(np.int64)
    bucket = out + np.where(d < 8, d, np.minimum(large, n - 1))
    got = pt.t5_bias(torch.from_numpy(_W), q, k, offset=40)
    assert np.array_equal(got.numpy(), np.moveaxis(_W[bucket], -1, 0))
    assert np.array_equal(posenc.t5_bias(_W, q, k, offset=40), got.numpy())


def test_outputs_follow_the_inputs_device_meta_included():
    meta = torch.zeros(4, 3, device="meta")
    assert pt.timestep_embedding(meta[:, 0], 8).device.type == "meta"
    assert pt.nerf_encoding(meta, 3).shape == (4, 21)
    assert pt.fourier_features(meta, _B).shape == (4, 6)
    assert pt.alibi_bias(2, 3, 4, positions=torch.zeros(3, dtype=torch.long, device="meta")).shape == (4, 2, 3)
    assert pt.t5_bucket(torch.zeros(2, 5, dtype=torch.long, device="meta")).device.type == "meta"
    assert pt.t5_bias(torch.zeros(32, 2, device="meta"), 3, 4).shape == (2, 3, 4)
    for call in (lambda: pt.encode_nd(meta, 8), lambda: pt.rope_cos_sin(meta[:, 0], 8)):
        with pytest.raises(PosEncError, match="meta device"):
            call()


def test_gradients_are_the_formulas():
    t = torch.tensor([0.5, 3.0, 400.25], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: pt.timestep_embedding(v, 8, dtype=torch.float64), (t,))
    x = torch.tensor([[0.1, -0.7], [1.5, 0.2]], dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v: pt.nerf_encoding(v, 3, dtype=torch.float64), (x,))
    assert torch.autograd.gradcheck(lambda v: pt.fourier_features(v, _B[:, :2], dtype=torch.float64), (x,))
    w = torch.from_numpy(_W[:, :2].copy()).requires_grad_()
    assert torch.autograd.gradcheck(lambda v: pt.t5_bias(v, 2, 3), (w,))
    y = pt.timestep_embedding(t.float(), 8)  # float32 out of a float64 t: the gradient still reaches t
    y.sum().backward()
    assert t.grad is not None and torch.isfinite(t.grad).all()


@pytest.mark.parametrize(("call", "match"), [
    (lambda: pt.timestep_embedding([1.0, math.nan], 8), "t must be finite"),
    (lambda: pt.timestep_embedding(torch.tensor([1.0]), 0), "dim"),
    (lambda: pt.timestep_embedding(torch.tensor([1.0]), 8, dtype=np.float32), "dtype"),
    (lambda: pt.timestep_embedding(torch.tensor([True]), 8), "real numbers"),
    (lambda: pt.timestep_embedding(torch.zeros(1).expand(10**10), 8), "timestep embedding"),
    (lambda: pt.nerf_encoding(torch.tensor([[1e5]]), 2, include_input=True, dtype=torch.float16), "x"),
    (lambda: pt.nerf_encoding(torch.tensor([[0.5]]), -1), "n_freqs"),
    (lambda: pt.fourier_features(torch.ones(2, 2), torch.ones(3, 3)), "d = 3"),
    (lambda: pt.fourier_features(torch.ones(2, 3), [[math.inf, 0, 0]]), "B"),
    (lambda: pt.alibi_bias(3, 3, 2, positions=torch.tensor([0.5, 1.0, 2.0])), "positions"),
    (lambda: pt.alibi_bias(4, 3, 2), "offset"),
    (lambda: pt.t5_bucket(torch.tensor([0.5])), "relative_position must be integers"),
    (lambda: pt.t5_bucket(torch.tensor([2**53])), "relative_position"),
    (lambda: pt.t5_bucket([1], spec=posenc.bias.T5Buckets(), num_buckets=8), "spec"),
    (lambda: pt.t5_bias(torch.ones(32, dtype=torch.float32), 2, 2), "weights"),
    (lambda: pt.t5_bias(torch.ones(3, 2), 2, 2), "weights' first axis"),
    (lambda: pt.t5_bias(torch.ones(32, 2), 2, 2, q_positions=torch.tensor([0, 2**52]),
                        k_positions=torch.tensor([-(2**52), 0])), "2\\*\\*53"),
    (lambda: pt.t5_bias(torch.ones(32, 2), 2, 2, k_positions=torch.tensor([0, 1, 2])), "k_positions"),
    (lambda: pt.encode_nd(torch.tensor(posenc.grid(2, 2)), 6), "d_model"),
    (lambda: pt.rope_cos_sin(torch.tensor([0, 1]), 7), "head_dim"),
    (lambda: pt.rope_cos_sin(torch.tensor([0, 1]), 8, dtype="float32"), "dtype"),
])
def test_refusals_name_the_value(call, match):
    with pytest.raises(PosEncError, match=match):
        call()


def test_numpy_refuses_alike():
    """The same arguments, through the NumPy API: refused too (one rule per argument)."""
    with pytest.raises(PosEncError, match="weights' first axis"):
        posenc.t5_bias(np.ones((3, 2)), 2, 2)
    with pytest.raises(PosEncError, match="2\\*\\*53"):
        posenc.t5_bias(np.ones((32, 2)), 2, 2, q_positions=[0, 2**52], k_positions=[-(2**52), 0])
    with pytest.raises(PosEncError, match="x"):
        posenc.nerf_encoding([[1e5]], 2, include_input=True, dtype=np.float16)


def test_compiled_with_graph_breaks_gives_eager_bits():
    torch._dynamo.reset()
    t = torch.tensor([0.0, 0.5, 999.0])

    def f(v: torch.Tensor) -> torch.Tensor:
        return pt.timestep_embedding(v * 2, 9) + pt.nerf_encoding(v[:, None], 4)[:, :9]

    try:
        got = torch.compile(f, backend="aot_eager")(t)
    finally:
        torch._dynamo.reset()
    assert got.view(torch.int32).equal(f(t).view(torch.int32))
