"""ALiBi: slopes and biases against the paper's form, BLOOM's and MPT's (transformers 5.23.0), and softmax."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st
from transformers.models.bloom.modeling_bloom import _get_alibi_slopes, build_alibi_tensor
from transformers.models.mpt.modeling_mpt import build_mpt_alibi_tensor

from posenc import ALIBI_CONVENTIONS, PosEncError, alibi_bias, alibi_slopes
from posenc.bias import Bloom, Mpt, Press

HEADS = range(1, 257)


def paper_slopes(n: int) -> list[mpmath.mpf]:
    """The paper's get_slopes (ofirpress/attention_with_linear_biases), written again in mpmath (60 digits)."""
    with mpmath.workdps(60):
        return _paper(n)


def _paper(n: int) -> list[mpmath.mpf]:
    def power_of_two(m: int) -> list[mpmath.mpf]:
        start = mpmath.power(2, -mpmath.power(2, -(mpmath.log(m, 2) - 3)))
        return [start * start**i for i in range(m)]
    if math.log2(n).is_integer():
        return power_of_two(n)
    closest = 2 ** math.floor(math.log2(n))
    return power_of_two(closest) + _paper(2 * closest)[0::2][: n - closest]


def f32_ulps(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Distance in float32 steps between two float32 arrays of the same sign."""
    ia = np.asarray(a, np.float32).view(np.int32).astype(np.int64)
    ib = np.asarray(b, np.float32).view(np.int32).astype(np.int64)
    return np.abs(ia - ib)


def softmax(x: np.ndarray) -> np.ndarray:
    z = np.exp(x - x.max(axis=-1, keepdims=True))
    return z / z.sum(axis=-1, keepdims=True)


# ---------------------------------------------------------------- slopes

def test_slopes_are_the_papers_correctly_rounded() -> None:
    for n in HEADS:
        got = alibi_slopes(n)
        assert got.dtype == np.float64 and got.shape == (n,)
        assert got.tolist() == [float(m) for m in paper_slopes(n)], n


def test_power_of_two_head_counts_are_the_plain_geometric_series() -> None:
    for n in (1, 2, 4, 8, 16, 32, 64):
        with mpmath.workdps(60):
            expected = [float(mpmath.power(2, mpmath.mpf(-8 * k) / n)) for k in range(1, n + 1)]
        assert alibi_slopes(n).tolist() == expected


def test_twelve_heads_interleave_a_second_series() -> None:
    s = alibi_slopes(12)
    assert s[:8].tolist() == [2.0**-k for k in range(1, 9)]
    with mpmath.workdps(60):
        assert s[8:].tolist() == [float(mpmath.power(2, mpmath.mpf(-k) / 2)) for k in (1, 3, 5, 7)]
    # the extra slopes fall between the first series' values: 2**-0.5 between 1 and 2**-1, …
    assert all(2.0 ** -(t + 1) < s[8 + t] < 2.0**-t for t in range(4))


def test_bloom_slopes_against_transformers_whose_float32_pow_drifts() -> None:
    # HF's _get_alibi_slopes raises a float32 base to the k-th power with torch.pow in float32, so its
    # slopes drift from 2**(-8k/n) as k grows (measured: up to 32 float32 steps for n <= 256); posenc's
    # are the true values correctly rounded, so never farther from the truth than HF's.
    exact = total = 0
    with mpmath.workdps(60):
        for n in HEADS:
            ref = _get_alibi_slopes(n, torch.device("cpu")).numpy()
            ours = alibi_slopes(n, convention="bloom").astype(np.float32)
            true = paper_slopes(n)
            assert f32_ulps(ours, ref).max() <= 32, n
            for a, b, t in zip(ours, ref, true, strict=True):
                assert abs(mpmath.mpf(float(a)) - t) <= abs(mpmath.mpf(float(b)) - t)
            if n in (1, 2, 4, 8):
                assert np.array_equal(ours, ref)  # slopes 2**-k: exact in float32 both ways
            exact += int((ours == ref).sum())
            total += n
    assert exact >= 2900  # measured 2929 of 32896 bit-equal


def mpt_reference_slopes(n: int, bias_max: float) -> np.ndarray:
    # build_mpt_alibi_tensor(n, 2) is [n, 1, 2] = slope·(j - 1) for j = 0, 1: column 0 is -slope
    return -build_mpt_alibi_tensor(n, 2, alibi_bias_max=bias_max)[:, 0, 0].numpy()


@pytest.mark.parametrize("bias_max", [8, 16, 4, 6, 12])
def test_mpt_slopes_match_transformers_within_one_float32_ulp(bias_max: int) -> None:
    for n in HEADS:
        ours = Mpt(alibi_bias_max=bias_max).slopes(n).astype(np.float32)
        assert f32_ulps(ours, mpt_reference_slopes(n, bias_max)).max() <= 1, (n, bias_max)


def test_mpt_with_the_default_bias_max_gives_the_papers_list_in_the_papers_order() -> None:
    for n in HEADS:
        assert np.array_equal(alibi_slopes(n, convention="mpt"), alibi_slopes(n)), n
    # other bias_max values change the slopes: 2**(-k·16/P)
    assert Mpt(alibi_bias_max=16).slopes(4).tolist() == [2.0**-4, 2.0**-8, 2.0**-12, 2.0**-16]


def test_mpt_reorders_odd_and_even_heads_for_non_powers_of_two() -> None:
    # P = 8 for 6 heads: exponents k·bias_max/8; even k first, then odd k
    s = Mpt(alibi_bias_max=4).slopes(6)
    expo = [-math.log2(m) for m in s]
    assert expo == pytest.approx([1.0, 2.0, 3.0, 4.0, 0.5, 1.5])


def test_conventions_by_name_and_instance() -> None:
    assert set(ALIBI_CONVENTIONS) == {"press", "bloom", "mpt"}
    assert isinstance(ALIBI_CONVENTIONS["mpt"], Mpt) and ALIBI_CONVENTIONS["mpt"].alibi_bias_max == 8.0
    assert np.array_equal(alibi_slopes(5, convention=Bloom()), alibi_slopes(5, convention="bloom"))
    assert Press() != Bloom()


# ---------------------------------------------------------------- biases

def test_press_is_minus_m_times_distance_below_the_diagonal_and_masked_above() -> None:
    n, q = 12, 40
    b = alibi_bias(q, q, n, dtype=np.float64)
    m = np.array([float(x) for x in paper_slopes(n)])
    i, j = np.arange(q)[:, None], np.arange(q)[None, :]
    ref = np.where(j <= i, -(m[:, None, None] * (i - j)), -np.inf)
    assert np.array_equal(b, ref)


def test_bloom_matches_transformers_with_left_padding() -> None:
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1, 1], [0, 0, 0, 0, 0, 1, 1]])
    positions = ((mask.cumsum(-1) - 1) * mask).numpy()
    for n in (1, 2, 3, 4, 8, 12, 16, 24, 32, 64, 112):
        ref = build_alibi_tensor(mask, n, torch.float32).reshape(3, n, 1, 7).numpy()
        ours = alibi_bias(7, 7, n, positions=positions, convention="bloom", causal=False)
        ref = np.broadcast_to(ref, ours.shape)
        # HF's slopes drift by up to 32 float32 steps (above); the products inherit it
        np.testing.assert_allclose(ours, ref, rtol=33 * 2.0**-23, atol=0)
        if n in (1, 2, 4, 8):
            assert np.array_equal(ours, ref)


def test_bloom_in_bfloat16_mostly_equals_transformers() -> None:
    mask = torch.ones(1, 2048, dtype=torch.long)
    for n, floor in ((12, 1.0), (16, 0.95), (112, 0.99)):  # measured 1.0, 0.953, 0.994
        ref = build_alibi_tensor(mask, n, torch.bfloat16).reshape(n, 2048)
        ours = torch.from_numpy(alibi_bias(1, 2048, n, offset=2047, convention="bloom")[:, 0]).to(torch.bfloat16)
        same = (ours == ref).double().mean().item()
        assert same >= floor, (n, same)
        steps = (ours.view(torch.int16).int() - ref.view(torch.int16).int()).abs()
        assert int(steps.max()) <= 1


def test_bloom_causal_is_bloom_with_the_future_masked() -> None:
    full = alibi_bias(9, 9, 4, convention="bloom", causal=False)
    causal = alibi_bias(9, 9, 4, convention="bloom")
    upper = np.triu(np.ones((9, 9), bool), 1)
    assert np.all(np.isneginf(causal[:, upper])) and np.array_equal(causal[:, ~upper], full[:, ~upper])


@pytest.mark.parametrize("n", [1, 3, 8, 12, 20, 40])
@pytest.mark.parametrize("bias_max", [8, 16])
def test_mpt_matches_transformers(n: int, bias_max: int) -> None:
    k = 33
    ref = build_mpt_alibi_tensor(n, k, alibi_bias_max=bias_max).numpy()  # [n, 1, k]
    ours = alibi_bias(5, k, n, offset=k - 5, convention=Mpt(alibi_bias_max=bias_max))
    ref = np.broadcast_to(ref, ours.shape)
    live = np.isfinite(ours)
    assert f32_ulps(ours[live], ref[live]).max() <= 2  # MPT's slopes are within 1 step, then one product
    assert np.all(np.isfinite(ours[:, -1]))  # the last query sees every key: nothing masked


def test_the_three_conventions_are_equal_after_softmax_row_by_row() -> None:
    rng = np.random.default_rng(0)
    n, q, k = 12, 6, 20
    scores = rng.normal(size=(n, q, k))
    probs = {c: softmax(scores + alibi_bias(q, k, n, offset=k - q, convention=c, dtype=np.float64))
             for c in ALIBI_CONVENTIONS}
    np.testing.assert_allclose(probs["bloom"], probs["press"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(probs["mpt"], probs["press"], rtol=1e-12, atol=1e-15)
    assert not np.allclose(alibi_bias(q, k, n, offset=k - q, convention="bloom"),
                           alibi_bias(q, k, n, offset=k - q, convention="press"))


def test_with_power_of_two_slopes_each_row_differs_by_exactly_a_constant() -> None:
    n, q = 8, 50  # slopes 2**-1 … 2**-8: every product exact
    press = alibi_bias(q, q, n, dtype=np.float64)
    live = np.isfinite(press)
    m = alibi_slopes(n)[:, None]
    i = np.arange(q)[None, :]
    for conv, row_constant in (("bloom", m * i), ("mpt", m * (i - (q - 1)))):
        other = alibi_bias(q, q, n, convention=conv, dtype=np.float64)
        diff = np.where(live, np.where(live, other, 0.0) - np.where(live, press, 0.0), np.nan)
        assert np.array_equal(np.nanmax(diff, axis=-1), row_constant)
        assert np.array_equal(np.nanmin(diff, axis=-1), row_constant)


def test_without_the_mask_bloom_and_mpt_still_agree_but_symmetric_press_does_not() -> None:
    rng = np.random.default_rng(1)
    n, q, k = 4, 7, 7
    scores = rng.normal(size=(n, q, k))
    p = {c: softmax(scores + alibi_bias(q, k, n, convention=c, causal=False, dtype=np.float64))
         for c in ALIBI_CONVENTIONS}
    np.testing.assert_allclose(p["bloom"], p["mpt"], rtol=1e-12)
    assert not np.allclose(p["bloom"], p["press"], atol=1e-3)
    sym = alibi_bias(q, k, n, causal=False, dtype=np.float64)
    assert np.array_equal(sym, np.swapaxes(sym, -1, -2)) and np.all(sym <= 0)


def test_decoding_with_offset_is_the_last_rows_of_the_full_bias() -> None:
    for conv in ALIBI_CONVENTIONS:
        full = alibi_bias(30, 30, 6, convention=conv)
        assert np.array_equal(alibi_bias(1, 30, 6, offset=29, convention=conv), full[:, 29:])
        assert np.array_equal(alibi_bias(4, 30, 6, offset=26, convention=conv), full[:, 26:])


def test_positions_give_a_batch_and_queries_take_their_keys_positions() -> None:
    pos = np.array([[0, 0, 0, 1, 2], [0, 1, 2, 3, 4]])
    b = alibi_bias(2, 5, 3, offset=3, positions=pos, dtype=np.float64)
    assert b.shape == (2, 3, 2, 5)
    assert np.array_equal(b[1], alibi_bias(2, 5, 3, offset=3, dtype=np.float64))
    m = alibi_slopes(3)
    assert b[0, :, 1, 4].tolist() == [0.0] * 3 and b[0, :, 1, 3].tolist() == (-m).tolist()
    assert np.array_equal(alibi_bias(2, 5, 3, offset=3, positions=pos[1]), alibi_bias(2, 5, 3, offset=3))


@pytest.mark.parametrize("dtype", [np.float16, np.float32])
def test_each_value_is_rounded_once_from_float64(dtype: type) -> None:
    for conv in ALIBI_CONVENTIONS:
        wide = alibi_bias(64, 64, 12, convention=conv, dtype=np.float64)
        assert np.array_equal(alibi_bias(64, 64, 12, convention=conv, dtype=dtype), wide.astype(dtype))


@mpmath.workdps(60)
def test_values_against_mpmath() -> None:
    m = paper_slopes(12)
    b = alibi_bias(1, 3000, 12, offset=2999, dtype=np.float32)[:, 0]
    worst = 0
    for h in range(12):
        for d in range(0, 3000, 37):
            exact = -m[h] * d
            got = mpmath.mpf(float(b[h, 2999 - d]))
            step = mpmath.mpf(float(np.spacing(np.float32(abs(float(exact)))))) if d else 1
            worst = max(worst, float(abs(got - exact) / step))
    assert worst <= 1.0


@given(n=st.integers(1, 40), q=st.integers(1, 12), extra=st.integers(0, 12),
       conv=st.sampled_from(["press", "bloom", "mpt"]))
def test_shapes_masks_and_signs(n: int, q: int, extra: int, conv: str) -> None:
    k = q + extra
    b = alibi_bias(q, k, n, offset=extra, convention=conv, dtype=np.float64)
    assert b.shape == (n, q, k)
    future = np.arange(k)[None, :] > np.arange(extra, k)[:, None]
    assert np.all(np.isneginf(b[:, future])) and np.all(np.isfinite(b[:, ~future]))
    live = b[:, ~future]
    assert np.all(live <= 0) if conv != "bloom" else np.all(live >= 0)


# ---------------------------------------------------------------- bad input

@pytest.mark.parametrize("call, fragment", [
    (lambda: alibi_slopes(0), "n_heads"),
    (lambda: alibi_slopes(-3), "n_heads"),
    (lambda: alibi_slopes(2.0), "n_heads"),
    (lambda: alibi_slopes(True), "n_heads"),
    (lambda: alibi_slopes(4, convention="falcon"), "convention"),
    (lambda: Mpt(alibi_bias_max=0), "alibi_bias_max"),
    (lambda: Mpt(alibi_bias_max=float("nan")), "alibi_bias_max"),
    (lambda: alibi_bias(5, 3, 4), "q_len=5, k_len=3"),
    (lambda: alibi_bias(2, 3, 4, offset=2), "offset=2"),
    (lambda: alibi_bias(2, 3, 4, offset=-1), "offset=-1"),
    (lambda: alibi_bias(0, 3, 4), "q_len"),
    (lambda: alibi_bias(3, 3, 0), "n_heads"),
    (lambda: alibi_bias(3, 3, 4, causal=None), "causal"),
    (lambda: alibi_bias(3, 3, 4, dtype=np.int32), "dtype"),
    (lambda: alibi_bias(3, 3, 4, positions=[0, 1]), "positions"),
    (lambda: alibi_bias(3, 3, 4, positions=[[0, 1, float("nan")]]), "positions"),
    (lambda: alibi_bias(5, 3, 4, causal=False, positions=[0, 1, 2]), "positions"),
    (lambda: alibi_bias(1, 2, 1, causal=False, offset=2**60), "2**53"),
    (lambda: alibi_bias(1, 1, 2, positions=[1e7], convention="bloom", dtype=np.float16), "float16"),
])
def test_bad_input_raises_poserror_naming_it(call, fragment: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(PosEncError, match=fragment.replace("*", r"\*")):
        call()


def test_a_large_request_is_rejected_before_any_work() -> None:
    with pytest.raises(PosEncError, match="q_len=1000001"):  # q_len > k_len is caught first
        alibi_bias(10**6 + 1, 10**6, 64)
    with pytest.raises(PosEncError, match="more than this machine's"):  # 64 × 10**12 float32: 256 TB
        alibi_bias(10**6, 10**6, 64)


def test_non_causal_allows_any_placement_without_positions() -> None:
    b = alibi_bias(3, 2, 1, offset=-1, causal=False, dtype=np.float64)
    m = alibi_slopes(1)[0]
    assert b[0].tolist() == [[-m, -2 * m], [0.0, -m], [-m, 0.0]]
