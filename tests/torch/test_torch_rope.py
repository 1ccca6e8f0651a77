"""posenc.torch RoPE: the module and the functional form, against the NumPy core and reported bugs."""

from __future__ import annotations

import io

import numpy as np
import pytest
import torch

import posenc
from posenc import DynamicNTK, PosEncError, YaRN
from posenc.torch import RotaryEmbedding, apply_rope, positions_from_cu_seqlens

H = 64  # head_dim in most tests
LAYOUTS = ("half", "interleaved")


def _qk(b=2, nh=4, nkv=2, s=40, h=H, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    q = torch.randn(b, nh, s, h, generator=g).to(dtype)
    k = torch.randn(b, nkv, s, h, generator=g).to(dtype)
    return q, k


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
def test_prefill_then_decode_equals_the_full_forward_bit_for_bit(layout, dtype):
    q, k = _qk(dtype=dtype)
    full_q, full_k = RotaryEmbedding(H, base=5e5, layout=layout)(q, k)
    rope = RotaryEmbedding(H, base=5e5, layout=layout)
    pq, pk = rope(q[:, :, :32], k[:, :, :32])
    parts_q, parts_k = [pq], [pk]
    for t in range(32, 40):  # one token at a time, the KV-cache length as offset
        dq, dk = rope(q[:, :, t : t + 1], k[:, :, t : t + 1], offset=t)
        parts_q.append(dq)
        parts_k.append(dk)
    assert torch.equal(torch.cat(parts_q, dim=2), full_q)
    assert torch.equal(torch.cat(parts_k, dim=2), full_k)
    # per-row offsets (a tensor [b]) and explicit positions [b, s] agree too
    dq, _ = rope(q[:, :, 35:36], k[:, :, 35:36], offset=torch.tensor([35, 35]))
    assert torch.equal(dq, full_q[:, :, 35:36])
    pos = torch.arange(32, 40).expand(2, 8)
    dq, dk = rope(q[:, :, 32:], k[:, :, 32:], positions=pos)
    assert torch.equal(dq, full_q[:, :, 32:]) and torch.equal(dk, full_k[:, :, 32:])


def test_rows_of_a_batch_can_sit_at_different_positions():
    q, k = _qk(b=2, s=6)
    rope = RotaryEmbedding(H)
    pos = torch.tensor([[0, 1, 2, 3, 4, 5], [100, 101, 102, 103, 104, 105]])
    rq, rk = rope(q, k, positions=pos)
    for b in range(2):
        aq, ak = rope(q[b : b + 1], k[b : b + 1], offset=int(pos[b, 0]))
        assert torch.equal(rq[b : b + 1], aq) and torch.equal(rk[b : b + 1], ak)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_packed_sequences_equal_each_sequence_alone(layout):
    lengths = [5, 1, 12, 7]
    cu = torch.tensor(np.concatenate([[0], np.cumsum(lengths)]))
    total = int(cu[-1])
    g = torch.Generator().manual_seed(3)
    q = torch.randn(total, 4, H, generator=g)  # flash-attn varlen layout [total, n_h, h_d]
    k = torch.randn(total, 2, H, generator=g)
    rope = RotaryEmbedding(H, layout=layout, sequence_dim=-3)
    pos = positions_from_cu_seqlens(cu)
    assert pos.tolist() == [p for n in lengths for p in range(n)]
    pq, pk = rope(q, k, positions=pos)
    for j in range(len(lengths)):
        a, b = int(cu[j]), int(cu[j + 1])
        aq, ak = rope(q[a:b], k[a:b])
        assert torch.equal(pq[a:b], aq) and torch.equal(pk[a:b], ak)


def test_sequence_dim_minus_3_is_the_transposed_layout():
    q, k = _qk(s=9)
    a_q, a_k = RotaryEmbedding(H)(q, k, offset=7)
    b_q, b_k = RotaryEmbedding(H, sequence_dim=-3)(q.transpose(1, 2), k.transpose(1, 2), offset=7)
    assert torch.equal(b_q.transpose(1, 2), a_q) and torch.equal(b_k.transpose(1, 2), a_k)


def test_bf16_positions_8190_and_8191_rotate_differently():
    rope = RotaryEmbedding(H, base=10000.0)
    x = torch.ones(1, 1, 2, H, dtype=torch.bfloat16)
    out, _ = rope(x, x, offset=8190)
    assert out.dtype == torch.bfloat16
    assert not torch.equal(out[0, 0, 0], out[0, 0, 1])
    # what a bf16 position would do: both collapse to 8192
    assert torch.tensor([8190.0, 8191.0], dtype=torch.bfloat16).tolist() == [8192.0, 8192.0]
    # float32 math inside, one rounding to bf16 at the end
    ref, _ = rope(x.float(), x.float(), offset=8190)
    assert torch.equal(out, ref.to(torch.bfloat16))


def test_q_and_k_keep_their_own_dtypes():
    q, k = _qk(s=5)
    rope = RotaryEmbedding(H)
    for dq, dk in [(torch.bfloat16, torch.bfloat16), (torch.float16, torch.float32), (torch.float64, torch.float64)]:
        rq, rk = rope(q.to(dq), k.to(dk), offset=3)
        assert (rq.dtype, rk.dtype) == (dq, dk)
        assert rq.shape == q.shape and rk.shape == k.shape


def _numpy_rotation(x: np.ndarray, cos: np.ndarray, sin: np.ndarray, layout: str, r: int) -> np.ndarray:
    """The rotation written out in the test: pair i of the layout table, (x1 c - x2 s, x2 c + x1 s)."""
    out = x.copy()
    n = r // 2
    i1 = np.arange(n) if layout == "half" else np.arange(0, r, 2)
    i2 = i1 + n if layout == "half" else i1 + 1
    x1, x2 = x[..., i1], x[..., i2]
    out[..., i1] = x1 * cos - x2 * sin
    out[..., i2] = x2 * cos + x1 * sin
    return out


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("rotary_dim", [None, 32])
def test_module_equals_numpy(layout, rotary_dim):
    q, k = _qk(s=300)
    rope = RotaryEmbedding(H, base=1e6, layout=layout, rotary_dim=rotary_dim)
    rq, _ = rope(q, k, offset=123456)
    cos, sin = (t.numpy() for t in rope.cos_sin(300, offset=123456))
    r = rope.rotary_dim
    assert np.array_equal(rq.numpy(), _numpy_rotation(q.numpy(), cos, sin, layout, r))
    # the rows are posenc.rope_cos_sin's (within 1 float32 ulp of the truth), so the module is posenc.apply_rope
    pos = np.arange(123456, 123756)
    c32, s32 = posenc.rope_cos_sin(pos, H, base=1e6, rotary_dim=r)
    assert np.array_equal(cos, c32) and np.array_equal(sin, s32)
    assert np.array_equal(rq.numpy(), posenc.apply_rope(q.numpy(), pos, base=1e6, layout=layout, rotary_dim=r))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32, torch.float64])
def test_functional_equals_numpy_bit_for_bit(layout, dtype):
    q, _ = _qk(s=33, dtype=dtype)
    pos = np.arange(2**31 - 40, 2**31 - 7)
    got = apply_rope(q, torch.from_numpy(pos), base=5e5, layout=layout, rotary_dim=48)
    want = posenc.apply_rope(q.numpy(), pos, base=5e5, layout=layout, rotary_dim=48)
    assert got.dtype == dtype
    assert np.array_equal(got.numpy(), want)
    bpos = np.stack([pos, pos - 1000])
    got = apply_rope(q, bpos, base=5e5, layout=layout)
    want = posenc.apply_rope(q.numpy(), bpos[:, None, :], base=5e5, layout=layout)
    assert np.array_equal(got.numpy(), want)


def test_yarn_attention_factor_is_in_the_rows():
    y = YaRN(4.0, 32768)
    rope = RotaryEmbedding(H, base=1e6, scaling=y)
    assert rope.attention_factor == pytest.approx(0.1 * np.log(4) + 1, rel=1e-15)
    q, k = _qk(s=1)
    rq, _ = rope(q, k)  # position 0: cos = factor, sin = 0
    torch.testing.assert_close(rq, q * rope.attention_factor, rtol=1e-6, atol=0)


def test_dynamic_ntk_follows_the_length_and_never_mixes_rotations():
    dyn = DynamicNTK(2.0, 64)
    q, k = _qk(s=64)
    plain = RotaryEmbedding(H)
    rope = RotaryEmbedding(H, scaling=dyn)
    assert torch.equal(rope(q, k)[0], plain(q, k)[0])  # seq_len 64: the plain base
    long_q, long_k = _qk(s=128)
    out = rope(long_q, long_k)[0]  # seq_len 128: base rescaled, table rebuilt
    assert not torch.equal(out[:, :, :64], plain(long_q[:, :, :64], long_k[:, :, :64])[0])
    want = posenc.apply_rope(long_q.numpy(), np.arange(128), scaling=dyn)
    np.testing.assert_allclose(out.numpy(), want, rtol=0, atol=1e-5)
    assert torch.equal(rope(q, k)[0], plain(q, k)[0])  # back below: plain again
    fixed = RotaryEmbedding(H, scaling=dyn, seq_len=128)  # one base for a whole generation
    first = fixed(long_q[:, :, :64], long_k[:, :, :64])[0]
    assert torch.equal(first, fixed(long_q, long_k)[0][:, :, :64])
    assert torch.equal(first, out[:, :, :64])
    assert not torch.equal(first, plain(long_q[:, :, :64], long_k[:, :, :64])[0])


def test_table_is_not_in_the_state_dict_and_legacy_keys_load():
    rope = RotaryEmbedding(H, max_len=16)
    assert rope.state_dict() == {}
    legacy = {"inv_freq": torch.ones(H // 2), "cos_cached": torch.ones(4, H), "sin_cached": torch.ones(4, H)}
    rope.load_state_dict(legacy, strict=True)
    q, k = _qk(s=4)
    assert torch.equal(rope(q, k)[0], RotaryEmbedding(H)(q, k)[0])


def test_cast_meta_init_and_pickling_keep_the_exact_rows():
    q, k = _qk(s=20, dtype=torch.bfloat16)
    want = RotaryEmbedding(H, base=5e5)(q, k, offset=1000)
    cast = RotaryEmbedding(H, base=5e5, max_len=2048).to(torch.bfloat16)
    assert cast.cache.table.dtype == torch.float32
    assert torch.equal(cast(q, k, offset=1000)[0], want[0])
    with torch.device("meta"):
        meta = RotaryEmbedding(H, base=5e5, max_len=2048)
    assert meta.cache.table.is_meta
    meta.to_empty(device="cpu")
    assert torch.equal(meta(q, k, offset=1000)[1], want[1])
    buf = io.BytesIO()
    torch.save(RotaryEmbedding(H, base=5e5), buf)
    buf.seek(0)
    again = torch.load(buf, weights_only=False)
    assert torch.equal(again(q, k, offset=1000)[0], want[0])


def test_rope_gradients_pass_gradcheck_and_keep_bf16():
    q, k = _qk(b=1, nh=2, nkv=1, s=5, h=8, dtype=torch.float64)
    q.requires_grad_(True)
    k.requires_grad_(True)
    rope = RotaryEmbedding(8, layout="interleaved", rotary_dim=6)
    assert torch.autograd.gradcheck(lambda a, b: rope(a, b, offset=77), (q, k))
    qb = q.detach().to(torch.bfloat16).requires_grad_(True)
    out, _ = rope(qb, k.detach().to(torch.bfloat16), offset=3)
    out.float().square().sum().backward()
    assert qb.grad is not None and qb.grad.dtype == torch.bfloat16


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: RotaryEmbedding(63), "head_dim"),
        (lambda: RotaryEmbedding(64, rotary_dim=65), "rotary_dim"),
        (lambda: RotaryEmbedding(64, rotary_dim=128), "rotary_dim must be <= head_dim"),
        (lambda: RotaryEmbedding(64, layout="neox"), "layout"),
        (lambda: RotaryEmbedding(64, sequence_dim=1), "sequence_dim"),
        (lambda: RotaryEmbedding(64, scaling=YaRN(0.0, 10)), "YaRN.factor"),
        (lambda: RotaryEmbedding(64)(torch.zeros(1, 1, 2, 64, dtype=torch.long), torch.zeros(1, 1, 2, 64)), "q must"),
        (lambda: RotaryEmbedding(64)(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 2, 32)), "k must"),
        (lambda: RotaryEmbedding(64)(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 3, 64)), "every dimension but heads"),
        (lambda: RotaryEmbedding(64)(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 2, 64),
                                     positions=torch.arange(3)), "positions must have shape [s] = [2]"),
        (lambda: RotaryEmbedding(64)(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 2, 64),
                                     positions=torch.arange(2), offset=4), "either"),
        (lambda: RotaryEmbedding(64)(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 2, 64),
                                     positions=torch.arange(2), offset=torch.tensor(0)), "either"),
        (lambda: RotaryEmbedding(64)(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 2, 64),
                                     positions=torch.tensor([0.0, float("nan")])), "finite"),
        (lambda: RotaryEmbedding(64)(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 2, 64), offset=2**53), "2**53"),
        (lambda: RotaryEmbedding(64)(torch.zeros(2, 1, 5, 64), torch.zeros(2, 1, 5, 64),
                                     positions=torch.arange(3)), "[s] = [5] or [b, s] = [2, 5], got [3]"),
        (lambda: RotaryEmbedding(64)(torch.zeros(2, 1, 5, 64), torch.zeros(2, 1, 5, 64),
                                     offset=torch.tensor([1, 2, 3])), "[] or [b] = [2], got [3]"),
        (lambda: RotaryEmbedding(64)(torch.zeros(2, 1, 5, 64), torch.zeros(3, 1, 5, 64)), "but heads"),
        (lambda: RotaryEmbedding(64)(torch.zeros(1, 1, 2, 64), torch.zeros(1, 1, 2, 64), offset=np.float64(2)),
         "offset must be an integer"),
        (lambda: positions_from_cu_seqlens(torch.tensor([0.0, 3.0])), "cu_seqlens"),
        (lambda: positions_from_cu_seqlens(torch.tensor([1, 3])), "start at 0"),
        (lambda: positions_from_cu_seqlens(torch.tensor([0, 3, 2])), "never decrease"),
        (lambda: apply_rope(torch.zeros(2, 64), [0, 1, 2]), "positions must be [s] or [b, s]"),
        (lambda: apply_rope(torch.zeros(2, 1, 5, 64), np.zeros((3, 5), dtype=int)), "b = 3"),
    ],
)
def test_bad_input_names_the_problem(call, needle):
    with pytest.raises(PosEncError) as info:
        call()
    assert needle in str(info.value)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_float64_inputs_get_float64_rows_and_equal_numpy_apply_rope(layout):
    q, k = _qk(s=50, dtype=torch.float64)
    rope = RotaryEmbedding(H, base=5e5, layout=layout, rotary_dim=48)
    for where in ({"offset": 123456}, {"positions": torch.tensor([[3] * 50, list(range(2**31 - 50, 2**31))])}):
        rq, rk = rope(q, k, **where)
        pos = (where["positions"].numpy()[:, None, :] if "positions" in where
               else np.arange(123456, 123506))
        for got, x in ((rq, q), (rk, k)):
            want = posenc.apply_rope(x.numpy(), pos, base=5e5, layout=layout, rotary_dim=48)
            assert got.dtype == torch.float64 and np.array_equal(got.numpy(), want)
    # float32 k beside float64 q: each gets its own rows
    rq, rk = rope(q, k.float(), offset=7)
    assert np.array_equal(rk.numpy(), posenc.apply_rope(k.float().numpy(), np.arange(7, 57), base=5e5,
                                                        layout=layout, rotary_dim=48))


def test_double_backward_on_the_plain_path_matches_the_formula():
    # float64 takes the plain formula; L = Σ w·(Rq)², so ∂/∂q <v, ∂L/∂q> = Rᵀ(2w ⊙ Rv)
    q, k = _qk(b=1, nh=2, nkv=1, s=6, h=16, dtype=torch.float64)
    rope = RotaryEmbedding(16, base=100.0, layout="interleaved")
    q.requires_grad_(True)
    qo, _ = rope(q, k, offset=40)
    w = torch.linspace(0.5, 1.5, 16, dtype=torch.float64)
    (g,) = torch.autograd.grad((qo.square() * w).sum(), q, create_graph=True)
    v = torch.linspace(-1.0, 1.0, g.numel(), dtype=torch.float64).reshape(g.shape)
    (h,) = torch.autograd.grad((g * v).sum(), q)
    cos, sin = posenc.rope_cos_sin(np.arange(40, 46), 16, base=100.0, dtype=np.float64)
    rv = _numpy_rotation(v.numpy(), cos, sin, "interleaved", 16)
    want = _numpy_rotation(2 * w.numpy() * rv, cos, -sin, "interleaved", 16)
    np.testing.assert_allclose(h.numpy(), want, rtol=1e-13, atol=1e-13)
    assert torch.autograd.gradgradcheck(lambda a: rope(a, a, offset=77)[0], (q.detach().requires_grad_(True),))


def test_returned_tensors_never_reach_the_table():
    rope = RotaryEmbedding(H, base=1e4)
    q, k = _qk(s=8)
    before = rope(q, k, offset=3)
    cos, sin = rope.cos_sin(8, offset=3)
    cos.mul_(0)
    sin.fill_(float("nan"))
    rq, _ = rope(q, k, offset=3)
    rq.mul_(0)
    again = rope(q, k, offset=3)
    assert torch.equal(again[0], before[0]) and torch.equal(again[1], before[1])
    table = rope.cache.table.untyped_storage().data_ptr()
    assert table not in (cos.untyped_storage().data_ptr(), rq.untyped_storage().data_ptr())


def test_numpy_integer_offsets_are_integers():
    rope = RotaryEmbedding(H)
    q, k = _qk(s=5)
    want = rope(q, k, offset=3)
    for off in (np.int64(3), np.int32(3), np.uint8(3)):
        got = rope(q, k, offset=off)
        assert torch.equal(got[0], want[0]) and torch.equal(got[1], want[1])


def test_huge_offsets_are_exact_or_fail_fast_never_memory_error():
    rope = RotaryEmbedding(128, base=5e5)
    q = torch.randn(1, 1, 4, 128)
    for off in (10**9, 10**12, 2**53 - 4):
        got, _ = rope(q, q, offset=off)  # computed for these 4 positions only
        want = posenc.apply_rope(q.numpy(), np.arange(off, off + 4, dtype=np.float64), base=5e5)
        assert np.array_equal(got.numpy(), want)
    assert (rope.cache.start, rope.cache.stop) == (0, 4096)
    far = torch.tensor([0, 30_000_000])  # issue 10: 15 GB and 17 s before
    got, _ = rope(q[:, :, :2], q[:, :, :2], positions=far)
    assert np.array_equal(got.numpy(), posenc.apply_rope(q[:, :, :2].numpy(), far.numpy(), base=5e5))
    for call in (lambda: rope.reserve(10**12), lambda: RotaryEmbedding(128, max_len=10**12),
                 lambda: rope(q, q, offset=2**53 - 3)):
        with pytest.raises(PosEncError, match=r"more than this machine|2\*\*53"):
            call()


def test_a_fixed_seq_len_past_the_last_exact_position_is_refused():
    with pytest.raises(PosEncError, match="seq_len must be <= 9007199254740992, got 9007199254740993"):
        RotaryEmbedding(64, scaling=DynamicNTK(2.0, 4096), seq_len=2**53 + 1)
    assert RotaryEmbedding(64, scaling=DynamicNTK(2.0, 4096), seq_len=2**20, max_len=0).seq_len == 2**20


MODULE_SPECS = [
    posenc.RopeConfig(16, rotary_dim=8, base=100.0, layout="interleaved"),
    posenc.RopeConfig(16, scaling=YaRN(factor=4.0, original_max=64)),
    posenc.RopeConfig(16, sections=(4, 2, 2), section_layout="interleaved"),
    posenc.RopeConfig(16, base=100.0, sections=(4, 4), ladder="per_axis"),
]


@pytest.mark.parametrize("cfg", MODULE_SPECS, ids=repr)
def test_a_module_built_from_a_spec_is_the_module_built_from_its_settings(cfg):
    # the spec brings the layout and the section layout too: cfg.kwargs() alone would drop the layout
    whole = RotaryEmbedding(cfg)
    spread = RotaryEmbedding(cfg.head_dim, layout=cfg.layout, **cfg.kwargs())
    assert (whole.layout, whole.rotary_dim, whole.base, whole.sections) == (
        spread.layout, spread.rotary_dim, spread.base, spread.sections)
    x = torch.tensor(np.random.default_rng(3).standard_normal((1, 2, 6, 16)).astype(np.float32))
    p = np.array([0, 1, 7, 1000, 3, 123456])
    pos = p if cfg.sections is None else np.stack([p, p // 2, p // 3][: len(cfg.sections)], axis=-1)
    got = whole(x, x, positions=torch.tensor(pos))[0]
    assert torch.equal(got, spread(x, x, positions=torch.tensor(pos))[0])
    assert np.array_equal(got.numpy(), posenc.apply_rope(x.numpy(), pos, spec=cfg))


def test_beside_a_spec_the_module_refuses_its_settings_by_name():
    cfg = posenc.RopeConfig(16, rotary_dim=8, layout="interleaved")
    with pytest.raises(PosEncError, match=r"rotary_dim=4: part of the spec"):
        RotaryEmbedding(cfg, rotary_dim=4)
    with pytest.raises(PosEncError, match=r"base=100\.0: part of the spec"):
        RotaryEmbedding(cfg, base=100.0)
    # a value equal to the default is passed all the same: the half layout typed beside an interleaved spec
    with pytest.raises(PosEncError, match=r"layout='half': part of the spec"):
        RotaryEmbedding(cfg, layout="half")
    with pytest.raises(PosEncError, match=r"base=10000\.0: part of the spec"):
        RotaryEmbedding(cfg, base=10000.0)
    with pytest.raises(PosEncError, match=r"sections=\[2, 2\]: part of the spec"):
        RotaryEmbedding(cfg, sections=(2, 2))
    # Gemma 4's layout, as NumPy and JAX take it (bits: tests/test_backend_parity.py)
    assert RotaryEmbedding(posenc.RopeConfig(16, rotary_dim=8, layout="head_half")).layout == "head_half"
    own = RotaryEmbedding(cfg, max_len=8, sequence_dim=-3)  # the module's own settings stay beside a spec
    assert (own.sequence_dim, own.layout, own.rotary_dim) == (-3, "interleaved", 8)
