"""posenc.exact.dot.dot2: B·x as a double-double, against Fractions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc.exact.dot import dot2

_F = st.floats(-1e6, 1e6, allow_nan=False)


@given(st.lists(st.tuples(_F, _F), min_size=1, max_size=6))
def test_hi_plus_lo_is_the_dot_product_to_106_bits(pairs):
    b = np.array([[p[0] for p in pairs]])
    x = np.array([[p[1] for p in pairs]])
    hi, lo = dot2(b, x)
    exact = sum((Fraction(p) * Fraction(q) for p, q in pairs), Fraction(0))
    # Products below 2**-969 leave their rounding error under the subnormal ulp (2**-1074), so each term may
    # lose up to a few of those in absolute terms: far below anything a float32 output can show.
    scale = sum((abs(Fraction(p) * Fraction(q)) for p, q in pairs), Fraction(0)) * Fraction(2) ** -100 \
        + len(pairs) * Fraction(2) ** -1070
    assert abs(Fraction(float(hi[0])) + Fraction(float(lo[0])) - exact) <= scale
    assert abs(Fraction(float(hi[0])) - exact) <= abs(exact) * Fraction(2) ** -52 + scale


def test_products_in_the_subnormal_range_lose_only_absolute_bits():
    hi, lo = dot2(np.array([[1.044614745286708e-280]]), np.array([[1.044614745286708e-280]]))
    assert float(hi[0]) == 0.0 and float(lo[0]) == 0.0


def test_the_same_bits_on_tensors():
    rng = np.random.default_rng(0)
    b, x = rng.normal(size=(1, 7, 3)), rng.normal(size=(5, 1, 3))
    hi, lo = dot2(b, x)
    th, tl = dot2(torch.from_numpy(b), torch.from_numpy(x))
    assert np.array_equal(th.numpy(), hi) and np.array_equal(tl.numpy(), lo)
