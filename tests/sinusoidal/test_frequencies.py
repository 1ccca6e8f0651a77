"""The ladder and the context analysis (seed, Ex 2, 3, 7)."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc import context_report, frequencies, max_wavelength, min_base, wavelengths
from reference import omega


def test_seed_tiny_model():
    assert frequencies(4).tolist() == [1.0, 0.01]


@pytest.mark.parametrize(("d", "b"), [(4, 1e4), (512, 1e4), (128, 5e5), (30, 3.5)])
def test_frequencies_and_wavelengths_correctly_rounded(d, b):
    f = frequencies(d, b)
    lam = wavelengths(d, b)
    for i in range(d // 2):
        w = omega(d, b, i)
        assert f[i] == float(w)
        assert lam[i] == float(2 * mpmath.pi / w)


@given(st.integers(2, 4096).map(lambda n: 2 * n), st.floats(1.5, 1e7))
def test_max_wavelength_formula(d, b):
    ref = 2 * mpmath.pi * mpmath.power(mpmath.mpf(b), mpmath.mpf(d - 2) / d)
    assert math.isclose(max_wavelength(d, b), float(ref), rel_tol=1e-15)


@given(st.floats(7.0, 1e9), st.integers(2, 2048).map(lambda n: 2 * n))
def test_min_base_is_the_smallest(context, d):
    def true_lambda(b: float) -> mpmath.mpf:
        return 2 * mpmath.pi * mpmath.power(mpmath.mpf(b), mpmath.mpf(d - 2) / d)

    b = min_base(context, d)
    assert true_lambda(b) >= context
    assert true_lambda(math.nextafter(b, 0)) < context  # one ulp less wraps


def test_min_base_small_context():
    assert min_base(6, 512) == 1.0


def test_seed_example_7():
    ok = context_report(8192, 512, 10000.0)
    bad = context_report(8192, 512, 100.0)
    assert ok.suffices and not ok.wraps
    assert bad.wraps and not bad.suffices
    assert round(ok.max_wavelength) == 60611
    assert round(bad.max_wavelength, 1) == 617.1
    assert 13 < bad.loops[-1] < 13.5
    assert bad.min_base == min_base(8192, 512)
    assert bad.base < bad.min_base < ok.base
    assert ok.loops.shape == (256,)
    assert np.all(np.diff(ok.loops) < 0)
    assert ok.wrapped_channels == int(np.sum(8192 / wavelengths(512, 1e4) > 1))
    assert context_report(100, 2, 10.0).min_base == math.inf
