"""RoPE's algebra and exactness: rotation, relative invariance, layouts, checkpoint permutation."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from posenc import (
    DynamicNTK,
    Linear,
    LongRoPE,
    PosEncError,
    YaRN,
    apply_rope,
    permute_qk_weights,
    qk_permutation,
    rope_cos_sin,
    rope_frequencies,
    rope_table,
)
from reference import omega, ulp_error

LAYOUTS = ("half", "interleaved")


def _pairs(x: np.ndarray, layout: str, r: int) -> tuple[np.ndarray, np.ndarray]:
    """Pair i of a head, written from the layout table (not from posenc.support.layout)."""
    n = r // 2
    if layout == "half":
        return x[..., :n], x[..., n:r]
    return x[..., 0:r:2], x[..., 1:r:2]


def _score_reference(q: np.ndarray, k: np.ndarray, delta: int, base: float, layout: str) -> float:
    """⟨R(p)q, R(p+Δ)k⟩ = ⟨q, R(Δ)k⟩ = Σ_i (q1k1 + q2k2) cos(ω_i Δ) + (q2k1 - q1k2) sin(ω_i Δ), in mpmath."""
    d = q.shape[-1]
    q1, q2 = _pairs(q, layout, d)
    k1, k2 = _pairs(k, layout, d)
    total = mpmath.mpf(0)
    for i in range(d // 2):
        a = omega(d, base, i) * delta
        a1, a2, b1, b2 = (mpmath.mpf(float(v)) for v in (q1[i], q2[i], k1[i], k2[i]))
        total += (a1 * b1 + a2 * b2) * mpmath.cos(a) + (a2 * b1 - a1 * b2) * mpmath.sin(a)
    return float(total)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize(("dtype", "tol"), [(np.float64, 1e-12), (np.float32, 2e-5)])
def test_score_depends_on_offset_only(layout, dtype, tol):
    rng = np.random.default_rng(7)
    d, base = 64, 10000.0
    q = rng.standard_normal(d).astype(dtype)
    k = rng.standard_normal(d).astype(dtype)
    scale = float(np.linalg.norm(q.astype(np.float64)) * np.linalg.norm(k.astype(np.float64)))
    for delta in (0, 1, 5, -7, 300, 40000):
        ref = _score_reference(q, k, delta, base, layout)
        for p in (0, 1, 999, 65536, 10**6 - 40000, 10**6):
            rq = apply_rope(q[None], [p], base=base, layout=layout)[0]
            rk = apply_rope(k[None], [p + delta], base=base, layout=layout)[0]
            assert rq.dtype == dtype
            got = float(np.dot(rq.astype(np.float64), rk.astype(np.float64)))
            assert abs(got - ref) <= tol * scale, (delta, p, got, ref)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_position_zero_is_the_identity_bit_for_bit(layout, dtype):
    x = np.random.default_rng(1).standard_normal((2, 3, 5, 16)).astype(dtype)
    out = apply_rope(x, np.zeros(5, dtype=np.int64), layout=layout)
    assert out.dtype == dtype
    assert out.tobytes() == x.tobytes()


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotation_preserves_each_pair_norm(layout):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((7, 32))
    pos = rng.integers(-(2**31) + 1, 2**31, 7)
    out = apply_rope(x, pos, base=5e5, layout=layout)
    a1, a2 = _pairs(x, layout, 32)
    b1, b2 = _pairs(out, layout, 32)
    np.testing.assert_allclose(b1**2 + b2**2, a1**2 + a2**2, rtol=1e-14)
    np.testing.assert_allclose(np.linalg.norm(out, axis=-1), np.linalg.norm(x, axis=-1), rtol=1e-14)


def test_seed_example_5_shift_is_a_rotation():
    # A pair (1, 0) at position p becomes (cos ω p, sin ω p); moving it on by k is rotation by ω k.
    x = np.array([[1.0, 0.0, 1.0, 0.0]])
    out = apply_rope(x, [3], base=10000.0, layout="interleaved")  # ω = (1, 0.01), seed's d=4
    np.testing.assert_allclose(out[0], [np.cos(3), np.sin(3), np.cos(0.03), np.sin(0.03)], rtol=1e-15)
    on = apply_rope(out, [5], base=10000.0, layout="interleaved")
    np.testing.assert_allclose(on[0], [np.cos(8), np.sin(8), np.cos(0.08), np.sin(0.08)], rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_interleaved_equals_half_after_channel_permutation(dtype):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 4, 9, 24)).astype(dtype)
    pos = rng.integers(0, 10**6, 9)
    # interleaved pair i = channels (2i, 2i+1); half pair i = (i, i + 12)
    to_half = np.concatenate([np.arange(0, 24, 2), np.arange(1, 24, 2)])
    inter = apply_rope(x, pos, layout="interleaved")
    half = apply_rope(x[..., to_half], pos, layout="half")
    assert np.array_equal(inter[..., to_half], half)


def _meta_permute(w: np.ndarray, n_heads: int) -> np.ndarray:
    """HF convert_llama_weights_to_hf.py `permute`, written with NumPy reshapes."""
    dim1 = w.shape[0]
    rest = w.shape[1:]
    return w.reshape(n_heads, dim1 // n_heads // 2, 2, *rest).swapaxes(1, 2).reshape(dim1, *rest)


def test_permutation_is_hf_convert_permute():
    rng = np.random.default_rng(4)
    w = rng.standard_normal((4 * 16, 10))
    b = rng.standard_normal(4 * 16)
    assert np.array_equal(permute_qk_weights(w, 4, "interleaved", "half"), _meta_permute(w, 4))
    assert np.array_equal(permute_qk_weights(b, 4, "interleaved", "half"), _meta_permute(b, 4))
    back = permute_qk_weights(permute_qk_weights(w, 4, "interleaved", "half"), 4, "half", "interleaved")
    assert np.array_equal(back, w)
    assert np.array_equal(permute_qk_weights(w, 4, "half", "half"), w)


def _scores(x, wq, bq, wk, bk, nq, nk, h_d, pos, layout):
    s = x.shape[0]
    q = (x @ wq.T + bq).reshape(s, nq, h_d).transpose(1, 0, 2)  # [n_h, s, h_d]
    k = (x @ wk.T + bk).reshape(s, nk, h_d).transpose(1, 0, 2)
    q = apply_rope(q, pos, base=5e5, layout=layout)
    k = apply_rope(k, pos, base=5e5, layout=layout)
    k = np.repeat(k, nq // nk, axis=0)  # grouped-query attention
    return q @ k.transpose(0, 2, 1)


def test_permuted_checkpoint_gives_the_same_attention_scores():
    rng = np.random.default_rng(5)
    d_in, nq, nk, h_d, s = 48, 4, 2, 16, 11
    wq, wk = rng.standard_normal((nq * h_d, d_in)), rng.standard_normal((nk * h_d, d_in))
    bq, bk = rng.standard_normal(nq * h_d), rng.standard_normal(nk * h_d)
    x = rng.standard_normal((s, d_in))
    pos = np.arange(100_000, 100_000 + s)
    meta = _scores(x, wq, bq, wk, bk, nq, nk, h_d, pos, "interleaved")
    hf = _scores(
        x,
        permute_qk_weights(wq, nq, "interleaved", "half"),
        permute_qk_weights(bq, nq, "interleaved", "half"),
        permute_qk_weights(wk, nk, "interleaved", "half"),
        permute_qk_weights(bk, nk, "interleaved", "half"),
        nq, nk, h_d, pos, "half",
    )
    np.testing.assert_allclose(hf, meta, rtol=1e-12, atol=1e-10 * np.abs(meta).max())
    # and without the permutation the two layouts disagree badly (the bug this guards against)
    wrong = _scores(x, wq, bq, wk, bk, nq, nk, h_d, pos, "half")
    assert np.abs(wrong - meta).max() > 0.1 * np.abs(meta).max()


def test_partial_rotary_permutation_keeps_the_tail():
    idx = qk_permutation(8, 2, "interleaved", "half", rotary_dim=4)
    assert idx.tolist() == [0, 2, 1, 3, 4, 5, 6, 7, 8, 10, 9, 11, 12, 13, 14, 15]


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_partial_rotary_leaves_the_tail_bit_identical(layout, dtype):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((3, 6, 40)).astype(dtype)
    pos = rng.integers(1, 5000, 6)
    out = apply_rope(x, pos, layout=layout, rotary_dim=16)
    assert out[..., 16:].tobytes() == np.ascontiguousarray(x[..., 16:]).tobytes()
    assert not np.array_equal(out[..., :16], x[..., :16])
    # the rotated part is RoPE over a 16-channel head (exponent over the rotary dim, as HF)
    assert np.array_equal(out[..., :16], apply_rope(x[..., :16], pos, layout=layout))


@pytest.mark.parametrize("base", [1e4, 5e5, 1e6, 1e7])
def test_cos_sin_within_one_float32_ulp_of_mpmath(base):
    d = 128
    pos = np.array([0, 1, 8190, 8191, 65537, 131071, 10**6, 2**31 - 1, -(2**31 - 1)], dtype=np.int64)
    cos, sin = rope_cos_sin(pos, d, base=base)
    assert cos.dtype == np.float32 and cos.shape == (9, 64)
    for i in (0, 1, 17, 40, 63):
        w = omega(d, base, i)
        for j, p in enumerate(pos.tolist()):
            th = mpmath.mpf(p) * w
            assert ulp_error(cos[j, i], mpmath.cos(th), np.float32) <= 1.0, (p, i)
            assert ulp_error(sin[j, i], mpmath.sin(th), np.float32) <= 1.0, (p, i)


def test_cos_sin_float64_and_float_positions():
    c64, s64 = rope_cos_sin([2.5, 123456.75], 8, base=1e4, dtype=np.float64)
    for j, p in enumerate((2.5, 123456.75)):
        for i in range(4):
            th = mpmath.mpf(p) * omega(8, 1e4, i)
            assert ulp_error(c64[j, i], mpmath.cos(th), np.float64) <= 4
            assert ulp_error(s64[j, i], mpmath.sin(th), np.float64) <= 4


def test_a_position_gives_the_same_bits_whatever_else_is_asked():
    run = np.arange(70000, 72000)
    c1, s1 = rope_cos_sin(run, 64, base=5e5)
    c2, s2 = rope_cos_sin(run[::-7].copy(), 64, base=5e5)
    assert np.array_equal(c1[::-7], c2) and np.array_equal(s1[::-7], s2)


@pytest.mark.parametrize("start", [0, 70000, 2**31 - 5000])
def test_rope_table_rows_are_rope_cos_sin_whatever_the_start(start):
    f = rope_frequencies(64, base=5e5)
    rows = rope_table(f, start, 3000)
    assert rows.shape == (3000, 2, 32) and rows.dtype == np.float32
    c, s = rope_cos_sin(np.arange(start, start + 3000), 64, base=5e5)
    assert np.array_equal(rows[:, 0], c) and np.array_equal(rows[:, 1], s)
    assert np.array_equal(rope_table(f, start + 1234, 10), rows[1234:1244])  # grown in pieces: same bits
    y = YaRN(4.0, 4096)
    scaled = rope_table(rope_frequencies(64, base=5e5, scaling=y), start, 10, np.float64)
    c, s = rope_cos_sin(np.arange(start, start + 10), 64, base=5e5, scaling=y, dtype=np.float64)
    assert np.array_equal(scaled[:, 0], c) and np.array_equal(scaled[:, 1], s)


def test_nearby_large_positions_stay_distinct_in_half_precision():
    x = np.ones((1, 64), dtype=np.float16)
    a = apply_rope(x, [8190])
    b = apply_rope(x, [8191])
    assert a.dtype == np.float16 and not np.array_equal(a, b)


def test_per_row_positions_broadcast_over_heads():
    rng = np.random.default_rng(8)
    x = rng.standard_normal((2, 3, 5, 8)).astype(np.float32)
    pos = np.array([[0, 1, 2, 3, 4], [7, 8, 9, 10, 11]])
    out = apply_rope(x, pos[:, None, :], layout="interleaved")
    for b in range(2):
        assert np.array_equal(out[b], apply_rope(x[b], pos[b], layout="interleaved"))


def test_float32_math_rounds_once_more_than_float64():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((50, 16))
    pos = rng.integers(0, 2**31, 50)
    hi = apply_rope(x, pos)
    lo = apply_rope(x.astype(np.float32), pos)
    assert lo.dtype == np.float32
    np.testing.assert_allclose(lo, hi, rtol=0, atol=4 * np.finfo(np.float32).eps * np.abs(x).max())


def test_attention_factor_scales_cos_and_sin():
    y = YaRN(4.0, 32768)
    f = rope_frequencies(64, base=1e6, scaling=y)
    expect = 0.1 * np.log(4.0) + 1.0
    assert f.attention_factor == pytest.approx(expect, rel=1e-15)
    x = np.random.default_rng(10).standard_normal((1, 64))
    np.testing.assert_allclose(apply_rope(x, [0], base=1e6, scaling=y), x * expect, rtol=1e-15)
    c, s = rope_cos_sin([0], 64, base=1e6, scaling=y, dtype=np.float64)
    np.testing.assert_allclose(c, expect, rtol=1e-15)
    assert not s.any()


def test_linear_scaling_is_position_interpolation():
    x = np.random.default_rng(11).standard_normal((1, 32))
    a = apply_rope(x, [4000], scaling=Linear(4.0), base=1e4)
    b = apply_rope(x, [1000], base=1e4)
    np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-13)


def test_length_dependent_scalings_follow_max_position_plus_one():
    dyn = DynamicNTK(2.0, 16)
    x = np.random.default_rng(12).standard_normal((1, 8))
    short = apply_rope(x, [15], scaling=dyn)  # seq_len 16: plain base
    assert np.array_equal(short, apply_rope(x, [15]))
    long = apply_rope(x, [31], scaling=dyn)  # seq_len 32: rescaled base
    assert np.array_equal(long, apply_rope(x, [31], scaling=dyn, seq_len=32))
    assert not np.array_equal(long, apply_rope(x, [31]))
    # an explicit seq_len keeps one base for a whole decode (no mixed rotations)
    assert not np.array_equal(apply_rope(x, [15], scaling=dyn, seq_len=32), short)
    lr = LongRoPE([1.0] * 4, [2.0] * 4, 16)
    assert np.array_equal(apply_rope(x, [15], scaling=lr), apply_rope(x, [15]))
    assert np.array_equal(apply_rope(x, [16], scaling=lr), apply_rope(x, [8]))


def test_frequencies_are_cached_per_effective_length():
    dyn = DynamicNTK(2.0, 4096)
    assert rope_frequencies(64, scaling=dyn, seq_len=100) is rope_frequencies(64, scaling=dyn, seq_len=4096)
    assert rope_frequencies(64, scaling=dyn, seq_len=5000) is not rope_frequencies(64, scaling=dyn, seq_len=5001)
    assert rope_frequencies(64, scaling=dyn, seq_len=100).base == 10000.0


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: rope_frequencies(63), "head_dim"),
        (lambda: rope_frequencies(0), "head_dim"),
        (lambda: rope_frequencies(64, rotary_dim=31), "rotary_dim"),
        (lambda: rope_frequencies(64, rotary_dim=66), "rotary_dim must be <= head_dim = 64"),
        (lambda: rope_frequencies(64, base=1.0), "base"),
        (lambda: rope_frequencies(64, scaling="yarn"), "scaling"),
        (lambda: rope_frequencies(64, seq_len=0), "seq_len"),
        (lambda: apply_rope(np.ones((2, 7)), [0, 1]), "head_dim"),
        (lambda: apply_rope(np.ones((2, 8)), [0, 1], layout="split"), "layout"),
        (lambda: apply_rope(np.ones((2, 8)), [0, 1, 2]), "positions of shape (3,)"),
        (lambda: apply_rope(np.ones((2, 8), dtype=np.int32), [0, 1]), "dtype int32"),
        (lambda: apply_rope(np.ones(8), [0]), "at least 2"),
        (lambda: apply_rope(np.ones((1, 8)), [np.nan]), "finite"),
        (lambda: rope_cos_sin([0], 8, dtype=np.int8), "dtype"),
        (lambda: permute_qk_weights(np.ones((10, 3)), 3, "half", "interleaved"), "multiple of n_heads"),
        (lambda: permute_qk_weights(np.ones((12, 3)), 2, "half", "meta"), "layout"),
        (lambda: permute_qk_weights(np.ones((2, 3, 4)), 1, "half", "interleaved"), "shape"),
        (lambda: apply_rope(np.ones((1, 8)), [0], scaling=LongRoPE([1.0] * 3, [1.0] * 3, 8)), "rotary_dim/2 = 4"),
    ],
)
def test_bad_input_names_the_problem(call, needle):
    with pytest.raises(PosEncError, match=None) as info:
        call()
    assert needle in str(info.value)
