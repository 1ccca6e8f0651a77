"""The one-pass RoPE kernels give the plain formula's bits, forward and backward."""

from __future__ import annotations

import pytest
import torch

from posenc.torch import _fused
from posenc.torch.rope import RotaryEmbedding


def run(rope, q, k, fused, **kw):
    old = _fused.enabled
    _fused.enabled = fused
    try:
        q = q.detach().clone().requires_grad_(True)
        k = k.detach().clone().requires_grad_(True)
        qo, ko = rope(q, k, **kw)
        (qo.float().square().sum() + (ko.float() * 3).sum()).backward()
        return qo.detach(), ko.detach(), q.grad, k.grad
    finally:
        _fused.enabled = old


def same_bits(a, b):
    if a.dtype == torch.bfloat16:
        return torch.equal(a.view(torch.int16), b.view(torch.int16))
    return torch.equal(a.view(torch.int32), b.view(torch.int32))


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("rotary_dim", [None, 16])
def test_fused_equals_plain_bit_for_bit(dtype, layout, rotary_dim):
    g = torch.Generator().manual_seed(0)
    q = torch.randn(2, 4, 37, 32, generator=g).to(dtype)
    k = torch.randn(2, 2, 37, 32, generator=g).to(dtype)  # GQA: fewer key heads
    rope = RotaryEmbedding(32, base=500000.0, layout=layout, rotary_dim=rotary_dim)
    for kw in ({}, {"offset": 1000}, {"positions": torch.tensor([[5] * 37, list(range(100, 137))])}):
        a = run(rope, q, k, True, **kw)
        b = run(rope, q, k, False, **kw)
        for x, y in zip(a, b, strict=True):
            assert x.dtype == y.dtype == dtype
            assert same_bits(x, y)


def test_fused_path_is_taken_and_handles_special_values(monkeypatch):
    calls = []
    real = _fused._launch
    monkeypatch.setattr(_fused, "_launch", lambda *a: calls.append(1) or real(*a))
    x = torch.tensor([[[[float("nan"), 1.0, float("inf"), -0.0]]]], dtype=torch.bfloat16)
    rope = RotaryEmbedding(4, layout="interleaved")
    out, _ = rope(x, x, offset=3)
    assert calls
    assert torch.isnan(out[0, 0, 0, 0]) and torch.isnan(out[0, 0, 0, 1])  # a NaN pair stays NaN
    old = _fused.enabled
    _fused.enabled = False
    try:
        plain, _ = rope(x, x, offset=3)
    finally:
        _fused.enabled = old
    # NaN payloads are not a value: the NaNs match in place, everything else in bits
    assert torch.equal(torch.isnan(out), torch.isnan(plain))
    fin = ~torch.isnan(out)
    assert same_bits(out[fin], plain[fin])


def test_not_used_for_other_layouts_or_dtypes(monkeypatch):
    monkeypatch.setattr(_fused, "_launch", lambda *a: pytest.fail("fused path used"))
    rope = RotaryEmbedding(8)
    rope(torch.randn(1, 2, 3, 8, dtype=torch.float64), torch.randn(1, 2, 3, 8, dtype=torch.float64))
    rope(torch.randn(1, 2, 3, 8, dtype=torch.float16), torch.randn(1, 2, 3, 8, dtype=torch.float16))
    seq3 = RotaryEmbedding(8, sequence_dim=-3)
    seq3(torch.randn(1, 3, 2, 8), torch.randn(1, 3, 2, 8))


def _second_derivative(rope, q, k, fused, create_graph=True):
    """∂/∂q of <v, ∂L/∂q> for L = Σ w·q_rot² + Σ k_rot: a Hessian-vector product through RoPE."""
    old = _fused.enabled
    _fused.enabled = fused
    try:
        q = q.detach().clone().requires_grad_(True)
        qo, ko = rope(q, k.detach(), offset=1000)
        w = torch.linspace(0.5, 1.5, qo.shape[-1], dtype=torch.float32)
        loss = (qo.float().square() * w).sum() + ko.float().sum()
        (g,) = torch.autograd.grad(loss, q, create_graph=create_graph)
        v = torch.linspace(-1.0, 1.0, g.numel(), dtype=torch.float32).reshape(g.shape)
        (h,) = torch.autograd.grad((g.float() * v).sum(), q)
        return g.detach(), h
    finally:
        _fused.enabled = old


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_double_backward_through_the_fused_path_equals_the_plain_formula(dtype, layout, monkeypatch):
    calls = []
    real = _fused._launch
    monkeypatch.setattr(_fused, "_launch", lambda *a: calls.append(a[-1]) or real(*a))
    g = torch.Generator().manual_seed(1)
    q = torch.randn(2, 4, 9, 32, generator=g).to(dtype)
    k = torch.randn(2, 2, 9, 32, generator=g).to(dtype)
    rope = RotaryEmbedding(32, base=500000.0, layout=layout, rotary_dim=24)
    g_fused, h_fused = _second_derivative(rope, q, k, True)
    assert calls.count(1.0) >= 3 and -1.0 in calls  # forward, backward (-θ) and grad-of-grad (+θ) all fused
    g_plain, h_plain = _second_derivative(rope, q, k, False)
    assert same_bits(g_fused, g_plain) and same_bits(h_fused, h_plain)
    assert h_fused.dtype == dtype and torch.count_nonzero(h_fused) > 0
