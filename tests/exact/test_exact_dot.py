"""posenc.exact.dot.dot2 and dot2_turns: B·x (mod 1) as a double-double, and core.turns_core, against Fractions."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc.exact.core import turns_core, two_sum
from posenc.exact.dot import dot2, dot2_turns

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


_WIDE = st.builds(lambda s, m, e: s * m * 2.0**e, st.sampled_from([-1.0, 1.0]), st.floats(1.0, 2.0, exclude_max=True),
                  st.integers(-90, 52))


def _off_integer(v: Fraction) -> Fraction:
    """The distance from v to the nearest integer."""
    return abs(v - round(v))


@given(st.lists(st.tuples(_WIDE, _WIDE), min_size=1, max_size=6))
def test_dot2_turns_is_the_dot_product_mod_1_at_any_size(pairs):
    b = np.array([[p[0] for p in pairs]])
    x = np.array([[p[1] for p in pairs]])
    hi, lo = dot2_turns(b, x, np.rint)
    d = len(pairs)
    exact = sum((Fraction(p) * Fraction(q) for p, q in pairs), Fraction(0))
    got = Fraction(float(hi[0])) + Fraction(float(lo[0]))
    # an integer apart, within 4·d³·2**-106 (plus the subnormal words' few 2**-1074 per product)
    assert _off_integer(got - exact) <= 4 * d**3 * Fraction(2) ** -106 + d * Fraction(2) ** -1070
    assert abs(float(hi[0])) <= d and abs(float(lo[0])) <= float(np.spacing(abs(hi[0]))) / 2
    if d == 1:
        assert _off_integer(got - exact) == 0
    th, tl = dot2_turns(torch.from_numpy(b), torch.from_numpy(x), torch.round)
    assert np.array_equal(th.numpy(), hi) and np.array_equal(tl.numpy(), lo)


@given(_WIDE, _WIDE)
def test_turns_core_splits_off_whole_quarter_turns_exactly(a, c):
    hi, lo = two_sum(np.array([a]), np.array([c * 2.0**-60]))  # a normalised pair
    q, f, g = turns_core(hi, lo)
    rest = Fraction(float(hi[0])) + Fraction(float(lo[0])) - Fraction(int(q[0]), 4) - Fraction(float(f[0])) \
        - Fraction(float(g[0]))
    assert rest.denominator == 1 and int(q[0]) in (0, 1, 2, 3)  # exact: whole turns dropped, nothing else
    assert abs(float(f[0])) <= 0.125 * (1 + 2**-50) and abs(float(g[0])) <= float(np.spacing(abs(f[0]))) / 2
