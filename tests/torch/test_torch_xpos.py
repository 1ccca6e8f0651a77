"""RotaryEmbedding(xpos=...): posenc.apply_rope's xPos bit for bit, rotary-embedding-torch, decoding, compile."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from rotary_embedding_torch import RotaryEmbedding as RERotary

import posenc
from posenc import PosEncError, XPos
from posenc.rope import DynamicNTK
from posenc.torch import RotaryEmbedding, _fused


def _qk(b: int = 2, h: int = 3, s: int = 40, d: int = 32, dtype: torch.dtype = torch.float32, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(b, h, s, d, generator=g).to(dtype), torch.randn(b, h, s, d, generator=g).to(dtype)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_module_equals_numpy_apply_rope_with_xpos(layout: str, dtype: torch.dtype) -> None:
    q, k = _qk(dtype=dtype)
    m = RotaryEmbedding(32, layout=layout, rotary_dim=24, xpos=XPos(gamma=0.3, scale_base=256))
    a, b = m(q, k, offset=100)
    pos = np.arange(100, 140)
    for got, x, role in ((a, q, "q"), (b, k, "k")):
        want = posenc.apply_rope(x.numpy(), pos, layout=layout, rotary_dim=24, xpos=XPos(gamma=0.3, scale_base=256),
                                 role=role)
        assert torch.equal(got, torch.from_numpy(want))


def test_bfloat16_fused_path_equals_the_plain_formula() -> None:
    q, k = _qk(dtype=torch.bfloat16)
    m = RotaryEmbedding(32, layout="interleaved", xpos=XPos())
    fused = m(q, k)
    _fused.enabled = False
    try:
        plain = m(q, k)
    finally:
        _fused.enabled = True
    assert torch.equal(fused[0], plain[0]) and torch.equal(fused[1], plain[1])


def test_equals_rotary_embedding_torch() -> None:
    q, k = _qk(s=300)
    ours = RotaryEmbedding(32, layout="interleaved", xpos=XPos())(q, k)
    theirs = RERotary(32, use_xpos=True, cache_if_possible=False).rotate_queries_and_keys(q, k)
    for a, b in zip(ours, theirs, strict=True):
        assert (a - b).abs().max() <= 4e-7 * 300 * a.abs().max()  # their float32 angles drift with p


def test_decoding_with_a_fixed_seq_len_equals_the_full_forward() -> None:
    q, k = _qk(s=64, dtype=torch.float64)
    m = RotaryEmbedding(32, xpos=XPos(), seq_len=64)
    full_q, full_k = m(q, k)
    for t in (0, 31, 63):
        one_q, one_k = m(q[:, :, t : t + 1], k[:, :, t : t + 1], offset=t)
        assert torch.equal(one_q, full_q[:, :, t : t + 1]) and torch.equal(one_k, full_k[:, :, t : t + 1])


def test_without_seq_len_the_centre_follows_each_call() -> None:
    m = RotaryEmbedding(32, xpos=XPos())
    for s in (10, 41, 7):
        q, k = _qk(s=s)
        a, _ = m(q, k)
        assert torch.equal(a, torch.from_numpy(posenc.apply_rope(q.numpy(), np.arange(s), xpos=XPos(), role="q")))
        assert m.xpos is not None and m.xpos.middle == s // 2


def test_scores_depend_on_the_offset_only() -> None:
    q, k = _qk(b=1, h=1, s=1, dtype=torch.float64)
    m = RotaryEmbedding(32, xpos=XPos(), seq_len=4096)
    pos = torch.tensor([[100, 40]])
    moved = pos + 2000
    s1 = (m.rotate(q, positions=pos[:, :1], role="q") * m.rotate(k, positions=pos[:, 1:], role="k")).sum()
    s2 = (m.rotate(q, positions=moved[:, :1], role="q") * m.rotate(k, positions=moved[:, 1:], role="k")).sum()
    assert abs(float(s1 - s2)) <= 1e-12 * float(q.abs().sum() * k.abs().sum())


def test_rows_are_not_saved_or_cast_and_survive_meta_init() -> None:
    q, k = _qk(s=20)
    m = RotaryEmbedding(32, xpos=XPos(), seq_len=20)
    want = m(q, k)
    assert m.state_dict() == {}
    m.to(torch.bfloat16)
    assert torch.equal(m(q, k)[0], want[0])
    with torch.device("meta"):
        meta = RotaryEmbedding(32, xpos=XPos(), seq_len=20, max_len=64)
    meta.to_empty(device="cpu")
    assert torch.equal(meta(q, k)[1], want[1])


def test_compile_fullgraph_with_a_fixed_centre() -> None:
    m = RotaryEmbedding(32, xpos=XPos(), seq_len=512, max_len=512)
    compiled = torch.compile(m, fullgraph=True, dynamic=True, backend="aot_eager")
    torch._dynamo.reset()
    try:
        for s in (5, 33):
            q, k = _qk(s=s, seed=s)
            got, want = compiled(q, k, offset=100), m(q, k, offset=100)
            assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])
    finally:
        torch._dynamo.reset()


def test_gradients_are_those_of_the_scaled_rotation() -> None:
    q, _ = _qk(s=9, dtype=torch.float64)
    q.requires_grad_(True)
    m = RotaryEmbedding(32, xpos=XPos(), seq_len=9)
    assert torch.autograd.gradcheck(lambda a: m.rotate(a, role="q"), (q,))


@pytest.mark.parametrize("call, fragment", [
    (lambda: RotaryEmbedding(32, xpos=0.4), "xpos"),
    (lambda: RotaryEmbedding(32, xpos=XPos(), scaling=DynamicNTK(2.0, 4096)), "length-dependent"),
    (lambda: RotaryEmbedding(32, xpos=XPos()).rotate(torch.ones(1, 4, 32)), "role"),
    (lambda: RotaryEmbedding(32).rotate(torch.ones(1, 4, 32), role="q"), "role"),
    # float16 keys 20,000 positions from the centre: ζ^(−p/512) overflows float16
    (lambda: RotaryEmbedding(32, xpos=XPos(center=False))(torch.ones(1, 1, 1, 32, dtype=torch.float16),
                                                          torch.ones(1, 1, 1, 32, dtype=torch.float16),
                                                          offset=20_000), "float16"),
])
def test_bad_input(call, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PosEncError, match=fragment):
        call()
