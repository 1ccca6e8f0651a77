"""grid and encode_nd: coordinates, shapes, the two rendering paths, identities, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import posenc
from posenc import PosEncError, encode_nd, grid
from reference import reference_encoding, ulp_error

CONVENTIONS = ["axial", "mae", "big_vision", "positional-encodings"]


def test_grid_is_c_order():
    g = grid(2, 3)
    assert g.dtype == np.int64 and g.shape == (6, 2)
    assert g.tolist() == [[i, j] for i in range(2) for j in range(3)]
    assert np.array_equal(grid(4), np.arange(4)[:, None])
    g3 = grid(2, 3, 4)
    assert g3.shape == (24, 3)
    assert np.array_equal(g3, np.stack(np.meshgrid(np.arange(2), np.arange(3), np.arange(4), indexing="ij"),
                                       axis=-1).reshape(-1, 3))
    assert grid(0, 5).shape == (0, 2)


@pytest.mark.parametrize(("sizes", "match"), [
    ((), "at least one"), ((2, -1), "axis 1"), ((2.0, 3), "axis 0"), ((True,), "axis 0"),
    ((2**16, 2**16, 2), "2\\*\\*31"),
])
def test_grid_bad_sizes(sizes, match):
    with pytest.raises(PosEncError, match=match):
        grid(*sizes)


def test_default_is_each_axis_its_own_seed_encoding():
    pts = np.array([[0, 0], [3, 7], [1000, 2], [65537, -5]])
    got = encode_nd(pts, 16, dtype=np.float64)
    for row, (i, j) in zip(got, pts, strict=True):
        ref = reference_encoding(float(i), 8, 10000.0) + reference_encoding(float(j), 8, 10000.0)
        assert max(abs(float(g) - float(r)) for g, r in zip(row, ref, strict=True)) < 1e-15
    f32 = encode_nd(pts, 16)
    for row, (i, j) in zip(f32, pts, strict=True):
        ref = reference_encoding(float(i), 8, 10000.0) + reference_encoding(float(j), 8, 10000.0)
        assert all(ulp_error(float(g), r, np.float32) <= 1 for g, r in zip(row, ref, strict=True))


@pytest.mark.parametrize("conv", CONVENTIONS)
def test_grid_path_equals_point_by_point(conv):
    d = 24 if conv != "big_vision" else 32
    n = 3 if conv in ("axial", "positional-encodings") else 2
    sizes = (3, 5, 4)[:n]
    pts = grid(*sizes) + np.arange(n) * 70  # a full grid, not at the origin: the broadcast path
    full = encode_nd(pts, d, convention=conv)
    rng = np.random.default_rng(1)
    order = rng.permutation(len(pts))
    shuffled = encode_nd(pts[order], d, convention=conv)  # not in C order: the gather path
    assert np.array_equal(shuffled, full[order])
    one_by_one = np.stack([encode_nd(p, d, convention=conv) for p in pts[:7]])
    assert np.array_equal(one_by_one, full[:7])


def test_shapes_and_dtypes():
    assert encode_nd([1, 2], 8).shape == (8,)
    assert encode_nd(np.zeros((2, 3, 2)), 8).shape == (2, 3, 8)
    assert encode_nd(np.zeros((0, 2)), 8).shape == (0, 8)
    for dt in (np.float16, np.float32, np.float64):
        assert encode_nd(grid(2, 2), 8, dtype=dt).dtype == dt
    h = encode_nd(grid(3, 3) * 1000, 8, dtype=np.float16)
    assert np.array_equal(h, encode_nd(grid(3, 3) * 1000, 8, dtype=np.float64).astype(np.float16))


def test_real_coordinates_take_the_exact_path():
    # diffusers' get_2d_sincos_pos_embed: grid_h = arange(h) / (h / base_size) / interpolation_scale
    h = w = 24
    coords = grid(h, w) / (h / 16)
    got = encode_nd(coords, 64, convention="mae", dtype=np.float64)
    y, x = coords[17]
    ref = encode_nd([[y, x]], 64, convention="mae", dtype=np.float64)[0]
    assert np.array_equal(got[17], ref)
    k = np.arange(16)
    omega = 10000.0 ** (-k / 16)
    assert np.allclose(got[17, :16], np.sin(x * omega), rtol=0, atol=1e-15)


@given(st.lists(st.tuples(st.integers(-(10**6), 10**6), st.integers(-(10**6), 10**6)), min_size=1, max_size=6),
       st.sampled_from(CONVENTIONS))
def test_each_point_depends_only_on_itself(points, conv):
    d = 32
    batch = encode_nd(points, d, convention=conv)
    for row, p in zip(batch, points, strict=True):
        assert np.array_equal(row, encode_nd(p, d, convention=conv))


@given(st.integers(-(2**20), 2**20), st.integers(-(2**20), 2**20), st.integers(-500, 500))
def test_shift_along_one_axis_rotates_only_its_channels(i, j, k):
    d = 16
    a = encode_nd([i, j], d, dtype=np.float64)
    b = encode_nd([i, j + k], d, dtype=np.float64)
    assert np.array_equal(a[:8], b[:8])  # axis 0's channels do not move
    assert np.allclose(b[8:], posenc.shift(a[8:], k), rtol=0, atol=1e-12)  # axis 1's turn by T_k


def test_dot_product_is_the_sum_of_the_axes_kernels():
    p, q = np.array([5, 40]), np.array([12, 3])
    a, b = encode_nd(p, 32, dtype=np.float64), encode_nd(q, 32, dtype=np.float64)
    w = 10000.0 ** (-np.arange(8) / 8)
    expect = sum(np.cos(w * (p[k] - q[k])).sum() for k in range(2))
    assert math.isclose(float(a @ b), float(expect), rel_tol=0, abs_tol=1e-13)


@pytest.mark.parametrize(("coords", "match"), [
    (3, "scalar"), ([[0, float("nan")]], "finite"), ([[0, 2**53]], "2\\*\\*53"), ([["a", "b"]], "coords"),
    (np.zeros((2, 0)), "number of axes"),
])
def test_bad_coords(coords, match):
    with pytest.raises(PosEncError, match=match):
        encode_nd(coords, 8)


def test_bad_dtype_and_d():
    with pytest.raises(PosEncError, match="dtype"):
        encode_nd([0, 0], 8, dtype=np.int32)
    with pytest.raises(PosEncError, match="d_model"):
        encode_nd([0, 0], 8.0)
