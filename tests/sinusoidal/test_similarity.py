"""similarity, aliasing, min_separation (seed, Ex 4 and Ex 8)."""

from __future__ import annotations

import itertools
import math

import mpmath
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from posenc import aliasing, encode, min_separation, similarity
from reference import ulp_error

d_models = st.integers(1, 32).map(lambda n: 2 * n)
bases = st.floats(2.0, 1e7)
pos = st.integers(-(10**6), 10**6)


@given(pos, pos, d_models, bases)
def test_closed_form_equals_dot_product_and_is_symmetric(p, q, d, b):
    s = similarity(p, q, d, base=b)
    dot = encode(p, d, base=b, dtype=np.float64) @ encode(q, d, base=b, dtype=np.float64)
    assert math.isclose(float(s), float(dot), rel_tol=0, abs_tol=1e-13)
    assert float(s) == float(similarity(q, p, d, base=b))


@given(pos, pos, st.integers(-(10**6), 10**6), d_models, bases)
def test_depends_only_on_the_offset(p, q, t, d, b):
    assert math.isclose(float(similarity(p, q, d, base=b)), float(similarity(p + t, q + t, d, base=b)),
                        rel_tol=0, abs_tol=1e-15)


def test_per_channel_terms_are_cosines_of_the_gap():
    terms = similarity(8, 3, 4, per_channel=True)
    assert terms.shape == (2,)
    # against mpmath (libm's cos differs by an ulp between CPUs); posenc's bound is under 1 ulp
    assert ulp_error(terms[0], mpmath.cos(5), np.float64) < 1
    assert ulp_error(terms[1], mpmath.cos(mpmath.mpf(5) / 100), np.float64) < 1
    assert similarity([0, 1, 2], 0, 4).shape == (3,)


def test_aliasing_seed_example_4():
    a = aliasing(0, 2 * math.pi, 4)
    assert a.coincide.tolist() == [True, True, False, False]
    assert not a.collide
    assert math.isclose(a.diff[2], math.sin(0.01 * 2 * math.pi), rel_tol=1e-15)
    assert math.isclose(a.distance, float(np.linalg.norm(encode(0, 4, dtype=np.float64)
                                                        - encode(2 * math.pi, 4, dtype=np.float64))),
                        rel_tol=1e-12)


def test_aliasing_diff_matches_direct_difference():
    a = aliasing(12345, 777, 16, base=500.0)
    direct = np.abs(encode(12345, 16, base=500.0, dtype=np.float64) - encode(777, 16, base=500.0, dtype=np.float64))
    assert np.allclose(a.diff, direct, rtol=0, atol=1e-15)
    split = aliasing(12345, 777, 16, base=500.0, layout="split")
    assert np.array_equal(np.sort(split.diff), np.sort(a.diff))


@given(st.integers(2, 60), st.integers(1, 4).map(lambda n: 2 * n), st.floats(2.0, 100.0))
def test_min_separation_brute_force(n, d, b):
    enc = encode(np.arange(n), d, base=b, dtype=np.float64)
    best = min(
        (float(np.linalg.norm(enc[i] - enc[j])), abs(i - j)) for i, j in itertools.combinations(range(n), 2)
    )
    got = min_separation(n, d, base=b)
    assert math.isclose(got.distance, best[0], rel_tol=1e-9, abs_tol=1e-12)
    assert math.isclose(
        float(np.linalg.norm(enc[0] - enc[got.offset])), best[0], rel_tol=1e-9, abs_tol=1e-12
    )
