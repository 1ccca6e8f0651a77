"""Shift as rotation (seed, Ex 5): T_j·T_k = T_{j+k}, orthogonal, T_{-k} = T_k⁻¹."""

from __future__ import annotations

import mpmath
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from posenc import encode, shift, shift_matrix

d_models = st.integers(1, 24).map(lambda n: 2 * n)
bases = st.floats(2.0, 1e7)
offsets = st.integers(-(10**6), 10**6)
layouts = st.sampled_from(["interleaved", "split"])


@given(offsets, offsets, d_models, bases, layouts)
def test_shift_by_j_then_k_is_shift_by_j_plus_k(j, k, d, b, lay):
    tj = shift_matrix(j, d, base=b, layout=lay)
    tk = shift_matrix(k, d, base=b, layout=lay)
    tjk = shift_matrix(j + k, d, base=b, layout=lay)
    assert np.allclose(tj @ tk, tjk, rtol=0, atol=1e-14)


@given(offsets, d_models, bases, layouts)
def test_orthogonal_and_inverse(k, d, b, lay):
    t = shift_matrix(k, d, base=b, layout=lay)
    assert np.allclose(t @ t.T, np.eye(d), rtol=0, atol=1e-15)
    assert np.array_equal(shift_matrix(-k, d, base=b, layout=lay), t.T)


@given(st.integers(-(10**6), 10**6), offsets, d_models, bases, layouts)
def test_shift_moves_the_encoding(p, k, d, b, lay):
    src = encode(p, d, base=b, layout=lay, dtype=np.float64)
    dst = encode(p + k, d, base=b, layout=lay, dtype=np.float64)
    assert np.allclose(shift(src, k, base=b, layout=lay), dst, rtol=0, atol=1e-14)
    assert np.allclose(shift_matrix(k, d, base=b, layout=lay) @ src, dst, rtol=0, atol=1e-14)


def test_seed_example_5_block():
    t = shift_matrix(5, 4)
    c, s = float(mpmath.cos(mpmath.mpf(5) / 100)), float(mpmath.sin(mpmath.mpf(5) / 100))  # not libm's
    assert np.allclose(t[2:, 2:], [[c, s], [-s, c]], rtol=0, atol=1e-16)
    assert np.array_equal(t[:2, 2:], np.zeros((2, 2)))
    # negative k: the lower-left sign moves to the upper right
    tm = shift_matrix(-5, 4)
    assert np.allclose(tm[2:, 2:], [[c, -s], [s, c]], rtol=0, atol=1e-16)


def test_shift_keeps_dtype_and_broadcasts_k():
    e = encode([3, 10], 8)
    out = shift(e, np.array([5, -2]))
    assert out.dtype == np.float32
    assert np.allclose(out, encode([8, 8], 8), atol=3e-7)
