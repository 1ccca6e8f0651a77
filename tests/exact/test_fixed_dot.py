"""posenc.exact.fixed_dot on NumPy: frac(B·v) against exact Fractions, and the NumPy core's Fourier feature bits.

The same function runs inside jax.jit in posenc.jax.fourier_features
(tests/jax/test_jax_fourier.py).
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

import posenc
from posenc.exact.fixed_dot import MAX_TERMS, phase_of_dot
from posenc.exact.fixed_sincos import NUMPY_OPS, sincos_f32

RNG = np.random.default_rng(2027)
ULP = Fraction(1, 2**128)


def _value(words, index) -> Fraction:
    n = 0
    for w in words:
        n = (n << 32) | int(w[index])
    return Fraction(n, 2**128)


def _exact_frac(v, b) -> Fraction:
    """frac(Σ b_j·v_j) from the operands' exact values (float32 or int32, read through Python's exact Fraction)."""
    return sum((Fraction(float(x)) * Fraction(float(y)) for x, y in zip(v, b, strict=True)), Fraction(0)) % 1


def _distance(a: Fraction, b: Fraction) -> Fraction:
    d = (a - b) % 1
    return min(d, 1 - d)


def _wide_floats(shape) -> np.ndarray:
    """float32 of every scale: 2**-149 (subnormal) … 2**100, both signs, with exact zeros."""
    mag = np.exp2(RNG.uniform(-149, 100, shape)) * RNG.uniform(1, 2, shape)
    out = (mag * RNG.choice([-1.0, 1.0], shape)).astype(np.float32)
    out[RNG.uniform(size=shape) < 0.05] = 0
    return out


@pytest.mark.parametrize("kind", ["gaussian", "wide", "ints"])
def test_phase_is_within_d_units_of_the_exact_fraction(kind):
    d, m, n = 3, 8, 40
    if kind == "gaussian":
        v = RNG.uniform(-1, 1, (n, d)).astype(np.float32)
        b = (RNG.standard_normal((m, d)) * 100).astype(np.float32)
    elif kind == "wide":
        v, b = _wide_floats((n, d)), _wide_floats((m, d))
    else:  # int32 coordinates (every int32, the extremes too) against float32 B
        v = RNG.integers(-(2**31), 2**31, (n, d)).astype(np.int32)
        v[0] = [-(2**31), 2**31 - 1, 0]
        b = _wide_floats((m, d))
    words, finite = phase_of_dot(NUMPY_OPS, v, b)
    assert finite.all() and words[0].shape == (n, m)
    worst = Fraction(0)
    for p in range(n):
        for i in range(m):
            got = _value([w[p] for w in words], i)
            worst = max(worst, _distance(got, _exact_frac(v[p], b[i])))
    assert worst < d * ULP  # each term cut below 2**-128: the stated bound


def test_phase_is_exact_when_every_product_is_a_multiple_of_the_last_bit():
    # operands at or above 2**-64 (each product a multiple of 2**-128), huge ones too: no rounding at all
    v = (np.exp2(RNG.integers(-40, 60, (50, 4))) * RNG.integers(-(2**23), 2**23, (50, 4))).astype(np.float32)
    b = (np.exp2(RNG.integers(-64, 40, (6, 4))) * RNG.integers(-(2**23), 2**23, (6, 4))).astype(np.float32)
    b[0] = [2.0**-64, -(2.0**-64), 2.0**-64, 2.0**-64]
    words, _ = phase_of_dot(NUMPY_OPS, v, b)
    for p in range(50):
        for i in range(6):
            assert _value([w[p] for w in words], i) == _exact_frac(v[p], b[i])


def test_integer_operands_give_the_phase_zero():
    v = RNG.integers(-(2**31), 2**31, (20, 3)).astype(np.int32)
    words, finite = phase_of_dot(NUMPY_OPS, v, np.int32([[3, -7, 1], [2**31 - 1, 0, -(2**31)]]))
    assert words[0].shape == (20, 2) and finite.all() and not any(w.any() for w in words)
    words, _ = phase_of_dot(NUMPY_OPS, v, np.float32([[0.5, 0.25, 2.0**-40]]))  # int32 v, float32 B: the general path
    assert all(_value([w[p] for w in words], 0) == _exact_frac(v[p], [0.5, 0.25, 2.0**-40]) for p in range(20))


def test_long_sums_carry_across_every_limb():
    # many terms whose phases are all just below 1 (and their negatives): every limb's carry is exercised
    d = 4096
    v = np.full((2, d), np.float32(1 - 2.0**-24), np.float32)
    v[1, ::2] *= -1
    b = np.stack([np.full(d, np.float32(3 - 2.0**-22)), _wide_floats(d)]).astype(np.float32)
    words, _ = phase_of_dot(NUMPY_OPS, v, b)
    for p in range(2):
        for i in range(2):
            assert _distance(_value([w[p] for w in words], i), _exact_frac(v[p], b[i])) < d * ULP


def _left_to_right(dtype, v, b):
    acc = dtype(0)
    for x, y in zip(v.tolist(), b.tolist(), strict=True):
        acc = dtype(acc + dtype(dtype(x) * dtype(y)))
    return float(acc)


def test_a_float_dot_loses_the_phase_that_the_exact_sum_keeps():
    # B·v = 2**90 + 2**67 + 1/8 − 2**90: float32 and float64 sums both drop the 1/8 turn, the exact one does not
    v = np.float32([[2.0**100, 0.125, -(2.0**100)]])
    b = np.float32([[2.0**-10 + 2.0**-33, 1.0, 2.0**-10]])
    words, _ = phase_of_dot(NUMPY_OPS, v, b)
    assert _value([w[0] for w in words], 0) == Fraction(1, 8) == _exact_frac(v[0], b[0])
    assert _left_to_right(np.float32, v[0], b[0]) % 1 == 0 and _left_to_right(np.float64, v[0], b[0]) % 1 == 0


def test_non_finite_operands_are_flagged():
    v = np.float32([[1.0, np.inf], [np.nan, 0.0], [1.0, 2.0]])
    b = np.float32([[1.0, 1.0], [0.0, np.float32(np.inf)], [1.0, 0.0]])
    _, finite = phase_of_dot(NUMPY_OPS, v, b[:, :])
    assert finite.tolist() == [[False, False, False], [False, False, False], [True, False, True]]


def test_more_terms_than_the_limb_sums_hold_are_refused():
    with pytest.raises(posenc.PosEncError, match="65535"):
        phase_of_dot(NUMPY_OPS, np.zeros((1, MAX_TERMS + 1), np.float32), np.zeros((1, MAX_TERMS + 1), np.float32))


@pytest.mark.parametrize("sigma", [1.0, 10.0, 100.0])
def test_numpy_ops_are_the_cores_fourier_feature_bits(sigma):
    v = RNG.uniform(-1, 1, (2000, 3)).astype(np.float32)
    b = (RNG.standard_normal((32, 3)) * sigma).astype(np.float32)
    words, _ = phase_of_dot(NUMPY_OPS, v, b)
    s, c = sincos_f32(NUMPY_OPS, words)
    want = posenc.fourier_features(v.astype(np.float64), b.astype(np.float64), dtype=np.float32)
    got = np.concatenate([c, s], axis=-1)
    assert int((got.view(np.uint32) != want.view(np.uint32)).sum()) == 0  # 128 000 values per σ


@pytest.mark.parametrize("odd", [False, True])
def test_the_sine_a_quarter_turn_on_is_the_cosine_bit_for_bit(odd):
    # posenc.jax's Fourier features take cos 2πφ as sin 2π(φ + 1/4), one expression for both halves: a quarter
    # turn adds 2**30 to the top word and moves the quadrant by one, the octant's reduced angle untouched
    n = 400_000
    words = [RNG.integers(0, 2**32, n, dtype=np.uint64).astype(np.uint32) for _ in range(4)]
    k = np.arange(256, dtype=np.uint64)
    words[0][:256] = (k << np.uint64(24)).astype(np.uint32)  # every 1/256 turn: the octant's and quadrant's edges,
    for w in words[1:]:  # sines and cosines 0 and ±1
        w[:256] = 0
    words[3][256:512] = k.astype(np.uint32)  # just past them
    words[0][512:768] = ((k << np.uint64(24)) - np.uint64(1)).astype(np.uint32)  # just before them
    for w in words[1:]:
        w[512:768] = 0xFFFFFFFF
    _, cos = sincos_f32(NUMPY_OPS, tuple(words), None, odd)
    turned, _ = sincos_f32(NUMPY_OPS, (words[0] + np.uint32(1 << 30), *words[1:]), None, odd)
    assert np.array_equal(turned.view(np.uint32), cos.view(np.uint32))
    assert (cos[:256:64] == np.float32([1, 0, -1, 0])).all() and not np.signbit(cos[64:256:128]).any()
