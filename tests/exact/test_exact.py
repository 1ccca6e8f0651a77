"""The precision guarantee: float32 within 1 ulp, float64 within 4 ulp of mpmath."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import mpmath
import numpy as np
import pytest

from posenc import encode
from posenc.exact import Ladder, decimal_pi, geometric_ladder, sincos, to_triple
from reference import omega, sin_cos, ulp_error

FIXED = [0, 1, 255, 257, 2047, 8191, 65537, 131071, 10**6, 10**7, 2**31 - 1,
         -1, -255, -(10**6), -(2**31 - 1), 0.5, -0.5, 2.75, 1e-300, 6.283185307179586,
         123456.789, -9876543.21, 2**31 - 0.5, 1e-7]
CASES = [(2, 10000.0), (4, 10000.0), (64, 2.0), (512, 10000.0), (1024, 5e5),
         (128, 1e6), (8192, 10000.0), (256, 1e7), (96, 12345.678)]


def _positions(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rand = np.concatenate([
        rng.integers(-(2**31) + 1, 2**31, 12).astype(np.float64),
        rng.uniform(-(2**31), 2**31, 6),
        rng.integers(0, 70000, 6).astype(np.float64),
        rng.uniform(-10, 10, 4),
    ])
    return np.concatenate([np.array(FIXED, dtype=np.float64), rand])


def _channels(d: int, seed: int) -> list[int]:
    n = d // 2
    rng = np.random.default_rng(seed)
    return sorted({0, 1 % n, n // 2, n - 1, *rng.integers(0, n, 3).tolist()})


def test_pi_digits_are_pi():
    mpmath.mp.dps = 130
    assert abs(mpmath.mpf(str(decimal_pi())) - mpmath.pi) < mpmath.mpf(10) ** -118


def test_triple_double_holds_the_value():
    mpmath.mp.dps = 80
    v = Decimal("0.7071067811865475244008443621048490392848359376884740365883")
    h, m, lo = to_triple(v)
    err = mpmath.mpf(h) + mpmath.mpf(m) + mpmath.mpf(lo) - mpmath.mpf(str(v))
    assert abs(err) < mpmath.mpf(2) ** -155


@pytest.mark.parametrize(("d", "base"), CASES)
def test_ladder_to_160_bits(d, base):
    n = d // 2
    lad = geometric_ladder(n, base, Fraction(n))
    mpmath.mp.dps = 60
    for i in _channels(d, 0):
        got = mpmath.mpf(lad.w0[i]) + mpmath.mpf(lad.w1[i]) + mpmath.mpf(lad.w2[i])
        ref = omega(d, base, i)
        assert abs(got - ref) <= ref * mpmath.mpf(2) ** -150
        assert lad.w0[i] == float(ref)  # correctly rounded to float64


@pytest.mark.parametrize(("d", "base"), CASES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16])
def test_within_guarantee_against_mpmath(d, base, dtype):
    limit = 4.0 if dtype is np.float64 else 1.0
    pos = _positions(d)
    chans = _channels(d, d + 1)
    enc = encode(pos, d, base=base, dtype=dtype)
    assert enc.dtype == dtype
    worst = 0.0
    for j, p in enumerate(pos):
        for i in chans:
            s, c = sin_cos(p, omega(d, base, i))
            worst = max(worst, ulp_error(enc[j, 2 * i], s, dtype), ulp_error(enc[j, 2 * i + 1], c, dtype))
    assert worst <= limit, f"worst error {worst:.3f} ulp"


def test_float64_reduction_is_accurate_near_a_multiple_of_pi():
    # float(2π) sits 2.4e-16 from 2π: sin of it is a tiny number that only an
    # extended-precision reduction gets right to the last bit.
    p = 2 * np.pi
    s = encode(p, 2, dtype=np.float64)[0]
    ref = mpmath.sin(mpmath.mpf(p))
    assert ulp_error(s, ref, np.float64) <= 1.0


def test_naive_float32_formula_is_not_exact_but_posenc_is():
    # The claim that motivates the project, measured: at 10**7 the float32
    # product p*ω loses the angle.
    p = np.arange(10**7, 10**7 + 64, dtype=np.float32)
    w = np.float32(0.01)  # ω_1 of d_model 4
    naive = np.sin(p * w)
    ours = encode(p.astype(np.int64), 4)[:, 2]
    refs = [mpmath.sin(mpmath.mpf(int(x)) * omega(4, 10000.0, 1)) for x in p]
    naive_worst = max(ulp_error(a, r, np.float32) for a, r in zip(naive, refs, strict=False))
    ours_worst = max(ulp_error(a, r, np.float32) for a, r in zip(ours, refs, strict=False))
    assert ours_worst <= 1.0
    assert naive_worst > 1e4


def test_big_positions_stay_in_range_and_bounded():
    # beyond the 2**31 guarantee the reduction still lands in range: values are
    # bounded and match mpmath closely
    pos = np.array([2.0**52 + 1, -(2.0**52) - 3, 2.0**53 - 1, 3.0e15])
    enc = encode(pos, 8, dtype=np.float64)
    assert np.all(np.abs(enc) <= 1)
    for j, p in enumerate(pos):
        s, c = sin_cos(p, omega(8, 10000.0, 0))
        assert ulp_error(enc[j, 0], s, np.float64) <= 8
        assert ulp_error(enc[j, 1], c, np.float64) <= 8


def test_sincos_with_low_part_adds_exactly():
    lad = geometric_ladder(3, 10000.0, Fraction(3))
    hi = np.array([1e6, 3.0])
    lo = np.array([1e-11, -2.0**-60])
    s, c = sincos(hi, lad, lo)
    mpmath.mp.dps = 60
    for j in range(2):
        for i in range(3):
            th = (mpmath.mpf(hi[j]) + mpmath.mpf(lo[j])) * omega(6, 10000.0, i)
            assert ulp_error(s[j, i], mpmath.sin(th), np.float64) <= 1
            assert ulp_error(c[j, i], mpmath.cos(th), np.float64) <= 1


def test_from_decimals_is_read_only():
    lad = Ladder.from_decimals([Decimal(1), Decimal("0.5")])
    with pytest.raises(ValueError):
        lad.w0[0] = 2.0
    assert len(lad) == 2


def test_a_ladder_of_writable_arrays_is_read_only_and_its_arrays_are_not():
    # one kernel signature whoever built the ladder (numba types read-only arrays apart)
    words = [np.array([1.0, 0.5]), np.zeros(2), np.zeros(2)]
    lad = Ladder(*words)
    assert not any(w.flags.writeable for w in (lad.w0, lad.w1, lad.w2))
    assert all(w.flags.writeable for w in words) and np.shares_memory(lad.w0, words[0])
    with pytest.raises(ValueError):
        lad.w1[0] = 2.0


@pytest.mark.parametrize(("d", "base"), [(512, 10000.0), (64, 5e5), (8, 2.0), (6, 12345.678)])
@pytest.mark.parametrize("with_lo", [False, True])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_numba_and_numpy_engines_give_the_same_bits(d, base, with_lo, dtype):
    from posenc.exact import fill_sincos, seed_ladder

    rng = np.random.default_rng(d)
    p = np.concatenate([_positions(d), rng.uniform(-1e9, 1e9, 50), [2.0**52 + 1, -(2.0**52) - 3, 3e15]])
    lo = rng.uniform(-1e-9, 1e-9, p.size) if with_lo else None
    lad = seed_ladder(d, base)
    outs = []
    for engine in ("numpy", "numba"):
        s = np.empty((p.size, d // 2), dtype=dtype)
        c = np.empty((p.size, d // 2), dtype=dtype)
        fill_sincos(p, lad, s, c, lo, engine=engine)
        outs.append((s, c))
    assert np.array_equal(outs[0][0], outs[1][0])
    assert np.array_equal(outs[0][1], outs[1][1])


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("cos_first", [False, True])
def test_numba_into_the_halves_of_one_output_gives_the_numpy_bits(dtype, cos_first):
    # the layout posenc.torch.Timesteps and posenc.rope_cos_sin write: sin and cos side by side in one array
    from posenc.exact import fill_sincos, seed_ladder

    p = np.concatenate([_positions(64), np.random.default_rng(1).uniform(-1e6, 1e6, 200)])
    lad = seed_ladder(64, 10000.0)
    s_ref, c_ref = np.empty((p.size, 32), dtype=dtype), np.empty((p.size, 32), dtype=dtype)
    fill_sincos(p, lad, s_ref, c_ref, engine="numpy")
    out = np.full((p.size, 65), 7.0, dtype=dtype)
    s, c = (out[:, 32:64], out[:, :32]) if cos_first else (out[:, :32], out[:, 32:64])
    fill_sincos(p, lad, s, c, engine="numba")
    assert np.array_equal(s, s_ref) and np.array_equal(c, c_ref)
    assert np.all(out[:, 64] == 7.0)  # nothing written past the halves


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("with_lo", [False, True])
def test_the_paired_kernels_give_the_numpy_bits_near_and_far(dtype, with_lo):
    # halves of one C-contiguous array take build_fill(paired=True) (contiguous row stores), near and far
    # kernels both; anything else (a strided view, two arrays) keeps the views' kernel: the same bits
    from posenc.exact import angles, fill_sincos, seed_ladder

    rng = np.random.default_rng(11)
    lad = seed_ladder(40, 10000.0)
    lo_p = rng.uniform(-1e5, 1e5, 300)
    far_p = np.concatenate([lo_p, [3e15, -(2.0**52) - 3], rng.uniform(-1e14, 1e14, 40)])
    for p in (lo_p, far_p):
        lo = rng.uniform(-1e-9, 1e-9, p.size) if with_lo else None
        s_ref, c_ref = np.empty((p.size, 20), dtype), np.empty((p.size, 20), dtype)
        fill_sincos(p, lad, s_ref, c_ref, lo, engine="numpy")
        out = np.full((p.size, 43), 7.0, dtype)
        s, c = out[:, 21:41], out[:, 1:21]
        assert angles._halves(s, c, 20) == (out, 21, 1)
        fill_sincos(p, lad, s, c, lo, engine="numba")
        assert np.array_equal(s, s_ref) and np.array_equal(c, c_ref)
        assert np.all(out[:, [0, 41, 42]] == 7.0)  # nothing written outside the halves
        rows = np.full((2 * p.size, 40), 7.0, dtype)[::2]  # every other row: not one C array, the views' kernel
        assert angles._halves(rows[:, :20], rows[:, 20:], 20) is None
        fill_sincos(p, lad, rows[:, :20], rows[:, 20:], lo, engine="numba")
        assert np.array_equal(rows[:, :20], s_ref) and np.array_equal(rows[:, 20:], c_ref)


def test_the_near_kernel_never_needs_the_far_branch():
    # build_fill(near=True) drops refold below NEAR_ANGLE: there the reduction's x must stay under 0.8,
    # here with ω just under 1, 1000 and 1e6 and |θ| up to the bound (the worst case sits at the top)
    from posenc.exact.core import NEAR_ANGLE, reduce_core, split

    rng = np.random.default_rng(3)
    for base in (1.0 - 2.0**-30, 1000.0, 1e6):
        w = np.array([base])
        w0h, w0l = split(w)
        z = np.zeros(1)
        p = rng.uniform(-NEAR_ANGLE / base, NEAR_ANGLE / base, 20000) * (1 - 2.0**-20)
        p = np.concatenate([p, NEAR_ANGLE / base * (1 - 2.0**-20) - np.arange(2000.0)])
        ph, pl = split(p)
        _, x, _ = reduce_core(p, ph, pl, None, None, None, False, w, z, z, w0h, w0l, z, z)
        assert np.max(np.abs(x)) < 0.7860, base


def test_the_near_and_full_kernels_give_the_same_bits_either_side_of_the_switch():
    from posenc.exact import fill_sincos, seed_ladder
    from posenc.exact.core import NEAR_ANGLE

    lad = seed_ladder(16, 10000.0)
    near = np.random.default_rng(4).uniform(-1, 1, 300) * NEAR_ANGLE / lad.fastest * (1 - 2.0**-19)
    outs = []
    for p in (near, np.append(near, NEAR_ANGLE / lad.fastest)):  # all near; one past: the full kernel
        for engine in ("numpy", "numba"):
            s, c = np.empty((p.size, 8), np.float32), np.empty((p.size, 8), np.float32)
            fill_sincos(p, lad, s, c, engine=engine)
            outs.append((s[:300], c[:300]))
    for s, c in outs[1:]:
        assert np.array_equal(s, outs[0][0]) and np.array_equal(c, outs[0][1])


def test_unknown_engine_is_rejected():
    from posenc.exact import fill_sincos, seed_ladder

    s = np.empty((1, 1))
    with pytest.raises(ValueError, match="engine"):
        fill_sincos(np.zeros(1), seed_ladder(2, 10.0), s, s.copy(), engine="cuda")
