"""grid_report, grid_similarity and rope_grid_report: the seed's per-axis analysis on grids."""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import posenc
from posenc import PosEncError, grid_report, grid_similarity, rope_grid_report


def test_axial_report_against_the_formula():
    r = grid_report((64, 32), 64, base=100.0)
    assert r.sizes == (64, 32) and r.d_model == 64 and "axial" in r.convention
    for a, size in zip(r.axes, (64, 32), strict=True):
        assert a.size == size
        assert a.channels == tuple(range(32 * a.axis, 32 * a.axis + 32))
        lam = [2 * math.pi * 100.0 ** (2 * i / 32) for i in range(16)]
        assert np.allclose(a.wavelengths, lam, rtol=1e-15, atol=0)
        assert np.allclose(a.loops, size / np.array(lam), rtol=1e-15)
        assert a.wrapped_pairs == sum(size / v > 1 for v in lam)
        assert a.wraps == (size / lam[-1] > 1)
    assert not r.axes[0].wraps and not r.wraps  # 2π·100^(30/32) = 474 > 64


def test_small_base_wraps_on_the_big_axis_only():
    r = grid_report((200, 8), 8, base=10.0)  # 2 pairs per axis, λ_max = 2π·10^(1/2) ≈ 19.9
    assert r.axes[0].wraps and not r.axes[1].wraps and r.wraps
    assert r.axes[0].max_wavelength == pytest.approx(2 * math.pi * math.sqrt(10), rel=1e-15)


def test_preset_channels():
    mae = grid_report((14, 14), 16, convention="mae")
    assert [a.axis for a in mae.axes] == [0, 1]
    assert mae.axes[1].channels == tuple(range(8)) and mae.axes[0].channels == tuple(range(8, 16))
    # posenc's ω are correctly rounded: the reference is mpmath's, not libm's pow (whose last bit varies)
    assert mae.axes[0].omega.tolist() == [float(mpmath.power(10000, -mpmath.mpf(k) / 4)) for k in range(4)]
    bv = grid_report((14, 14), 16, convention="big_vision")
    assert bv.axes[0].omega[-1] == 1e-4  # temperature^(-(d/4-1)/(d/4-1))
    pe = grid_report((4, 5), 6, convention="positional-encodings")
    assert [(a.axis, a.channels) for a in pe.axes] == [(0, (0, 1, 2, 3)), (1, (4, 5))]
    assert [len(a.omega) for a in pe.axes] == [2, 1]


@pytest.mark.parametrize("conv", ["axial", "mae", "big_vision", "positional-encodings"])
def test_similarity_is_one_at_the_patch_and_depends_on_the_offset(conv):
    s = grid_similarity((12, 10), 32, (5, 4), convention=conv)
    assert s.shape == (12, 10) and s[5, 4] == pytest.approx(1.0, abs=1e-15)
    assert np.all(np.abs(s) <= 1 + 1e-15)
    t = grid_similarity((12, 10), 32, (6, 6), convention=conv)
    assert np.allclose(s[0:11, 0:8], t[1:12, 2:10], rtol=0, atol=1e-12)  # shift invariance


def test_similarity_of_the_default_is_the_mean_of_the_axes_kernels():
    s = grid_similarity((9, 7), 16, (2, 3), base=50.0)
    w = 50.0 ** (-np.arange(4) / 4)
    i, j = np.meshgrid(np.arange(9), np.arange(7), indexing="ij")
    expect = (np.cos(np.multiply.outer(i - 2, w)).sum(-1) + np.cos(np.multiply.outer(j - 3, w)).sum(-1)) / 8
    assert np.allclose(s, expect, rtol=0, atol=1e-14)


@pytest.mark.parametrize(("args", "match"), [
    (((4, 4), 8, (4, 0)), "patch\\[0\\]"),
    (((4, 4), 8, (1,)), "2 coordinates"),
    (((4, 4), 8, "ab"), "coordinates"),
    (((4, 0), 8, (0, 0)), "sizes\\[1\\]"),  # names the argument (was "size of axis 1")
    (((4096, 4096), 1024, (0, 0)), "too large"),
])
def test_similarity_errors(args, match):
    with pytest.raises(PosEncError, match=match):
        grid_similarity(*args)


def test_report_errors():
    with pytest.raises(PosEncError, match="axis"):
        grid_report((), 8)
    with pytest.raises(PosEncError, match="even shares"):
        grid_report((4, 4, 4), 8)
    with pytest.raises(PosEncError, match="2-axis"):
        grid_report((4, 4, 4), 24, convention="mae")


def test_rope_grid_report_pairs_and_channels():
    r = rope_grid_report((4, 16, 16), 16, sections=(4, 2, 2), base=100.0)
    assert [a.channels for a in r.axes] == [(0, 1, 2, 3, 8, 9, 10, 11), (4, 5, 12, 13), (6, 7, 14, 15)]
    f = posenc.rope_frequencies(16, base=100.0)
    assert np.array_equal(r.axes[2].omega, f.inv_freq[6:8])
    assert np.array_equal(r.axes[2].wavelengths, f.wavelengths[6:8])
    inter = rope_grid_report((4, 16, 16), 16, sections=(4, 2, 2), section_layout="interleaved", layout="interleaved")
    assert inter.axes[1].channels == (2, 3, 8, 9)  # pairs 1 and 4
    axial = rope_grid_report((16, 16), 16, sections=(4, 4), ladder="per_axis")
    assert np.array_equal(axial.axes[0].omega, axial.axes[1].omega)
    assert "axial" in axial.convention
    with pytest.raises(PosEncError, match="one size per axis"):
        rope_grid_report((4, 4), 16, sections=(4, 2, 2))
    with pytest.raises(PosEncError, match="needs sections"):
        rope_grid_report((4,), 16, sections=None)


def test_pair_channels():
    mae = grid_report((4, 4), 16, convention="mae")
    assert mae.axes[1].pair_channels == ((0, 4), (1, 5), (2, 6), (3, 7))  # [sin | cos] of the column first
    assert mae.axes[0].pair_channels[0] == (8, 12)
    pe = grid_report((4, 4), 7, convention="positional-encodings")  # C = 4: y keeps 3 channels, its last a sine
    assert pe.axes[1].pair_channels == ((4, 5), (6,))
    r = rope_grid_report((2, 4, 4), 16, sections=(4, 2, 2), section_layout="interleaved")
    assert r.axes[2].pair_channels == ((2, 10), (5, 13))  # pairs 2, 5 of a half-layout head
