"""posenc.jax.fourier_features: the NumPy function's float32 bits inside jit, correctly rounded vs mpmath, exact B·v."""

from __future__ import annotations

import jax.numpy as jnp
import mpmath
import numpy as np
import pytest
from test_jax_rows import walk

import jax
import posenc
import posenc.jax as pj

RNG = np.random.default_rng(2028)


def bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


def mismatches(got, want):
    return int((bits(got) != bits(want)).sum())


def zero_aware_mismatches(got, want):
    """Bit mismatches (signs of zeros too) where the NumPy value is not tiny; where it is (|v| < 2**-60), the two
    forms hold an absolute bound only: an exact zero must be +0 in both."""
    got, want = np.asarray(got, np.float32), np.asarray(want, np.float32)
    tiny = np.abs(want) < 2.0**-60
    assert (np.abs(got[tiny] - want[tiny]) < 2.0**-80).all()
    assert (bits(got[want == 0]) == 0).all()
    return mismatches(got[~tiny], want[~tiny])


def _gaussian(m, d, sigma):
    return (RNG.standard_normal((m, d)) * sigma).astype(np.float32)


def _points(n, d, scale=1.0):
    return (RNG.uniform(-1, 1, (n, d)) * scale).astype(np.float32)


@pytest.mark.parametrize("d", [2, 3])
@pytest.mark.parametrize("sigma", [1.0, 10.0, 100.0])
def test_in_jit_the_bits_are_the_numpy_functions(sigma, d):
    x, b = _points(4000, d), _gaussian(64, d, sigma)
    got = jax.jit(pj.fourier_features)(x, b)
    want = posenc.fourier_features(x.astype(np.float64), b.astype(np.float64), dtype=np.float32)
    assert got.dtype == jnp.float32 and got.shape == want.shape == (4000, 128)
    assert mismatches(got, want) == 0  # 512 000 values per (σ, d)


def test_wide_coordinates_and_int32_coordinates_are_the_numpy_functions_bits():
    b = _gaussian(32, 3, 10.0)
    x = np.concatenate([_points(1000, 3, 1000.0), _points(500, 3, 2.0**-20)])
    got = jax.jit(pj.fourier_features)(x, b)
    assert mismatches(got, posenc.fourier_features(x.astype(np.float64), b.astype(np.float64))) == 0
    ints = RNG.integers(-(10**6), 10**6, (1000, 3)).astype(np.int32)
    got = jax.jit(pj.fourier_features)(ints, b)
    assert mismatches(got, posenc.fourier_features(ints.astype(np.int64), b.astype(np.float64))) == 0
    ib = RNG.integers(-100, 100, (4, 3)).astype(np.int32)  # int32 B too: B·v is an integer, cos 1 and sin 0
    assert np.asarray(pj.fourier_features(ints, ib)).tolist() == [[1.0] * 4 + [0.0] * 4] * 1000


def _correctly_rounded(got: np.float32, exact: mpmath.mpf) -> bool:
    """No float32 neighbour of ``got`` is nearer the exact value (ties either way)."""
    err = abs(mpmath.mpf(float(got)) - exact)
    return all(abs(mpmath.mpf(float(np.nextafter(got, s))) - exact) >= err
               for s in (np.float32(np.inf), np.float32(-np.inf)))


def _mp_features(v, b):
    """cos and sin of 2π·Σ b_ij·v_j in mpmath, from the float32 operands' exact values."""
    cos, sin = [], []
    for row in b.tolist():
        ang = 2 * mpmath.pi * mpmath.fsum(mpmath.mpf(y) * mpmath.mpf(x) for x, y in zip(v.tolist(), row, strict=True))
        cos.append(mpmath.cos(ang))
        sin.append(mpmath.sin(ang))
    return cos + sin


def test_values_are_the_correctly_rounded_cos_and_sin_of_the_exact_sum():
    mpmath.mp.prec = 400  # |B·v| up to 2**100 below: the angle mod 2π needs the bits
    x = np.concatenate([_points(12, 3), _points(6, 3, 1e4), _points(4, 3, 1e20), _points(3, 3, 1e-8)])
    b = np.concatenate([_gaussian(8, 3, 10.0), _gaussian(4, 3, 1e3)])
    got = np.asarray(jax.jit(pj.fourier_features)(x, b))
    checked = wrong = 0
    for p in range(x.shape[0]):
        for g, want in zip(got[p], _mp_features(x[p], b), strict=True):
            checked += 1
            wrong += not _correctly_rounded(g, want)
    assert checked == 25 * 24 and wrong == 0  # 600 values, past NumPy's 2**53 limit too


def test_tiny_sums_keep_the_absolute_bound():
    # products of 2**-140 … 2**-60: those below 2**-128 are cut, so a sine there is known to 2π·d·2**-128 absolute
    mpmath.mp.prec = 400
    x = (np.exp2(RNG.uniform(-100, -30, (40, 3))) * RNG.choice([-1, 1], (40, 3))).astype(np.float32)
    b = (RNG.standard_normal((6, 3)) * 2.0**-40).astype(np.float32)
    got = np.asarray(pj.fourier_features(x, b), np.float64)
    bound = 2 * np.pi * 3 * 2.0**-128
    worst = 0.0
    for p in range(40):
        exact = _mp_features(x[p], b)
        assert (got[p, :6] == 1).all()
        for g, e in zip(got[p, 6:], exact[6:], strict=True):
            half_ulp = float(np.spacing(np.float32(abs(float(e))))) / 2
            worst = max(worst, (abs(g - float(e)) - half_ulp) / bound)
    assert worst <= 1  # the stated bound (beyond the float32 rounding itself)


def test_the_sum_is_exact_where_a_float32_dot_is_not():
    # B·v = 2**90 + 2**67 + 1/8 − 2**90 (a 1/8 turn, lost by a float32 sum in any order: 2**67 + 1/8 needs 71
    # bits), and a plain large angle (|B·v| ~ 5·10**5) whose float32 products are rounded; NumPy's function
    # refuses the first (|x| >= 2**53), posenc is correctly rounded on both
    x = jnp.float32([[2.0**100, 0.125, -(2.0**100)], [4097.3, 0.3, -0.7]])
    b = jnp.float32([[2.0**-10 + 2.0**-33, 1.0, 2.0**-10], [123.457, 1.0, 1.0]])
    got = np.asarray(jax.jit(pj.fourier_features)(x, b))
    mpmath.mp.prec = 400
    for p in range(2):
        exact = _mp_features(np.asarray(x[p]), np.asarray(b))
        assert all(_correctly_rounded(g, e) for g, e in zip(got[p], exact, strict=True))
    assert got[0, 0] == np.float32(np.cos(np.pi / 4)) and got[0, 2] == np.float32(np.sin(np.pi / 4))
    dot = np.asarray(x @ b.T)  # the float32 dot the formula's users write
    assert float(dot[0, 0]) % 1 != 0.125
    naive = np.asarray(jnp.cos(2 * jnp.pi * dot))
    assert abs(naive[1, 1] - got[1, 1]) > 1e-3


def test_no_float64_no_dot_and_no_callback_in_the_graph():
    x, b = jnp.zeros((4, 3), jnp.float32), jnp.ones((8, 3), jnp.float32)
    for fn in (pj.fourier_features, jax.grad(lambda x, b: pj.fourier_features(x, b).sum(), argnums=(0, 1))):
        names, dtypes = walk(fn, x, b)
        assert not dtypes & {"float64", "int64", "uint64"} and "dot_general" not in names
        assert not any("callback" in n for n in names)
    names, _ = walk(pj.fourier_features, x, b)
    assert "clz" in names and "reduce_sum" in names  # the integer path, not a float formula


def test_derivatives_in_x_and_b_are_the_formulas():
    x, b = _points(5, 3), _gaussian(4, 3, 3.0)
    jx = np.asarray(jax.jacfwd(pj.fourier_features, argnums=0)(x, b), np.float64)  # [5, 8, 5, 3]
    jb = np.asarray(jax.jacrev(pj.fourier_features, argnums=1)(x, b), np.float64)  # [5, 8, 4, 3]
    xv, bv = x.astype(np.float64), b.astype(np.float64)
    ang = 2 * np.pi * xv @ bv.T  # [5, 4]
    for p in range(5):
        for i in range(4):
            # d/dv cos(2π b·v) = −2π sin·b, d/db = −2π sin·v; the sines: +2π cos
            np.testing.assert_allclose(jx[p, i, p], -2 * np.pi * np.sin(ang[p, i]) * bv[i], rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(jx[p, 4 + i, p], 2 * np.pi * np.cos(ang[p, i]) * bv[i], rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(jb[p, i, i], -2 * np.pi * np.sin(ang[p, i]) * xv[p], rtol=1e-4, atol=1e-4)
            np.testing.assert_allclose(jb[p, 4 + i, i], 2 * np.pi * np.cos(ang[p, i]) * xv[p], rtol=1e-4, atol=1e-4)
    assert not jx[0, :, 1].any() and not jb[0, 0, 1].any()  # another point, another feature's row: 0
    g = jax.grad(lambda b, x: pj.fourier_features(x, b).sum())(jnp.asarray(b), jnp.asarray(RNG.integers(-3, 3, (5, 3)),
                                                                                               jnp.int32))
    assert g.shape == b.shape and np.isfinite(np.asarray(g)).all()  # int32 x: a derivative in B only


def test_vmap_over_points_and_over_matrices():
    x, b = _points(16, 2), _gaussian(8, 2, 10.0)
    full = pj.fourier_features(x, b)
    assert mismatches(jax.vmap(lambda v: pj.fourier_features(v, b))(x), full) == 0
    bs = np.stack([b, _gaussian(8, 2, 1.0)])
    per = jax.jit(jax.vmap(lambda m: pj.fourier_features(x, m)))(bs)
    assert mismatches(per[0], full) == 0 and mismatches(per[1], pj.fourier_features(x, bs[1])) == 0


def test_input_and_output_dtypes():
    x, b = _points(64, 3), _gaussian(16, 3, 10.0)
    for low in (jnp.bfloat16, jnp.float16):  # upcast exactly: the features of the narrow values themselves
        xl, bl = jnp.asarray(x, low), jnp.asarray(b, low)
        want = posenc.fourier_features(np.asarray(xl, np.float64), np.asarray(bl, np.float64))
        assert zero_aware_mismatches(pj.fourier_features(xl, bl), want) == 0
    out = pj.fourier_features(x, b, dtype=jnp.bfloat16)
    assert out.dtype == jnp.bfloat16
    assert np.array_equal(np.asarray(out), np.asarray(jnp.asarray(pj.fourier_features(x, b), jnp.bfloat16)))
    scalar = pj.fourier_features(jnp.float32(0.25), [[1.0], [2.0]])  # one point of one coordinate
    assert np.asarray(scalar).tolist() == [0.0, -1.0, 1.0, 0.0]


def test_quarter_turns_are_exact_zeros_and_ones():
    # B·v = 0.75 and 1.25 (exact sums): cos is 0 and sin ∓1 exactly, where the NumPy function leaves ~1e-26
    got = np.asarray(pj.fourier_features(jnp.float32([[0.5, 0.25]]), jnp.float32([[1, 1], [3, -1]])))
    assert got.tolist() == [[0.0, 0.0, -1.0, 1.0]] and not np.signbit(got[0, :2]).any()
    want = posenc.fourier_features([[0.5, 0.25]], [[1, 1], [3, -1]])
    assert (np.abs(want[0, :2]) < 2.0**-60).all() and want[0, 2:].tolist() == [-1.0, 1.0]


def test_traced_non_finite_values_give_nan_for_the_features_they_meet():
    x = jnp.float32([[1.0, jnp.nan], [jnp.inf, 0.0], [0.5, 0.25]])
    b = jnp.float32([[1.0, 0.0], [0.0, 1.0], [1.0, jnp.inf]])
    got = np.asarray(jax.jit(pj.fourier_features)(x, b)).reshape(3, 2, 3)  # [point, cos|sin, feature]
    nan = np.isnan(got)
    # point 0: NaN coordinate 1 poisons every feature (0·NaN is NaN); point 1 likewise; point 2: feature 2 only
    assert nan[:2].all() and nan[2].tolist() == [[False, False, True]] * 2
    assert got[2, :, :2].tolist() == [[-1.0, 0.0], [0.0, 1.0]]


def test_bad_arguments_are_refused_by_name_before_any_work():
    x = jnp.ones((4, 3), jnp.float32)
    for bad, word in [(jnp.ones((8, 2)), r"\(8, 2\)"), (jnp.ones(3), r"\(3,\)"), (jnp.ones((0, 3)), r"\(0, 3\)"),
                      (jnp.ones((2, 8, 3)), r"\(2, 8, 3\)")]:
        with pytest.raises(posenc.PosEncError, match=word):
            pj.fourier_features(x, bad)
    with pytest.raises(posenc.PosEncError, match="at least one coordinate"):
        pj.fourier_features(jnp.zeros((2, 0)), jnp.zeros((3, 0)))  # d = 0, as the NumPy function
    with pytest.raises(posenc.PosEncError, match="B must be float32 values"):
        pj.fourier_features(x, np.random.default_rng(0).normal(size=(8, 3)))  # float64 Gaussian: cast it first
    with pytest.raises(posenc.PosEncError, match="x must be float32 values"):
        pj.fourier_features(np.full((2, 3), 0.1), jnp.ones((4, 3)))
    with pytest.raises(posenc.PosEncError, match="B must be finite"):
        pj.fourier_features(x, np.full((2, 3), np.inf, np.float32))
    with pytest.raises(posenc.PosEncError, match="B must be integers or floats"):
        pj.fourier_features(x, jnp.ones((2, 3), bool))
    with pytest.raises(posenc.PosEncError, match="x must be integers or floats"):
        pj.fourier_features(jnp.ones((2, 3), jnp.complex64), jnp.ones((4, 3)))
    with pytest.raises(posenc.PosEncError, match="dtype"):
        pj.fourier_features(x, jnp.ones((4, 3)), dtype="float64")
    with pytest.raises(posenc.PosEncError, match="65535"):
        pj.fourier_features(jnp.ones((1, 2**16)), jnp.ones((1, 2**16)))
    # a float32-exact host B (a float64 array of float32 values) and a host x past NumPy's 2**53 are accepted
    b = _gaussian(4, 3, 10.0).astype(np.float64)
    assert pj.fourier_features(np.full((2, 3), 2.0**60), b).shape == (2, 8)
