"""The 32-bit exact path (posenc.exact.fixed*), run on NumPy: the NumPy core's float32 bits, everywhere.

The same functions run inside jax.jit in posenc.jax (tests/jax/); here they are
checked against the float64 core directly, over random int32 positions,
every scaling, origins and float32 positions.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

import posenc
from posenc.exact import geometric_ladder
from posenc.exact.fixed import COS_COEFFS, PI_4, SIN_COEFFS, fixed_ladder, scale_words
from posenc.exact.fixed_phase import phase_of_floats, phase_of_integers
from posenc.exact.fixed_sincos import NUMPY_OPS, sincos_f32
from posenc.rope.frequencies import rope_frequencies

RNG = np.random.default_rng(22)
INTS = np.concatenate([
    RNG.integers(0, 2**31 - 1, size=2000), RNG.integers(-(2**31), 2**31, size=500),
    np.arange(-64, 256), [2**31 - 2, 2**31 - 1, -(2**31), 1, 2],
]).astype(np.int32)


def _scalings():
    n = 32
    rng = np.random.default_rng(5)
    lr = posenc.LongRoPE(tuple(rng.uniform(0.9, 3, n)), tuple(rng.uniform(1, 40, n)), 4096, factor=16.0)
    return [None, posenc.Linear(4.0), posenc.NTK(8.0), posenc.DynamicNTK(4.0, 4096),
            posenc.Llama3(8.0, 1.0, 4.0, 8192), posenc.YaRN(4.0, 32768),
            posenc.YaRN(40.0, 4096, mscale=1.0, mscale_all_dim=0.707), lr]


def _bits(a):
    return np.asarray(a, dtype=np.float32).view(np.uint32)


@pytest.mark.parametrize("scaling", _scalings(), ids=lambda s: type(s).__name__)
def test_integer_rows_are_the_cores_bits(scaling):
    f = rope_frequencies(64, base=500000.0, scaling=scaling, seq_len=20000)
    af = f.attention_factor
    phase = phase_of_integers(NUMPY_OPS, INTS[:, None], fixed_ladder(f.ladder))
    s, c = sincos_f32(NUMPY_OPS, phase, None if af == 1.0 else scale_words(af))
    cr, sr = posenc.rope_cos_sin(INTS.astype(np.int64), 64, base=500000.0, scaling=scaling, seq_len=20000)
    assert np.array_equal(_bits(s), _bits(sr))
    assert np.array_equal(_bits(c), _bits(cr))


@pytest.mark.parametrize("origin", [1, 2, -3])
def test_an_origin_shifts_exactly(origin):
    f = rope_frequencies(32)
    s, c = sincos_f32(NUMPY_OPS, phase_of_integers(NUMPY_OPS, INTS[:, None], fixed_ladder(f.ladder), origin))
    cr, sr = posenc.rope_cos_sin(INTS.astype(np.int64) + origin, 32)
    assert np.array_equal(_bits(s), _bits(sr)) and np.array_equal(_bits(c), _bits(cr))
    zero = INTS == -origin
    assert zero.any() and (s[zero] == 0).all() and (c[zero] == 1).all()  # θ = 0 exactly, not a tiny angle


def test_float_positions_are_the_cores_bits_above_the_stated_bound():
    t = np.concatenate([
        RNG.uniform(-(2**31), 2**31, 500), RNG.uniform(-1000, 1000, 500), RNG.uniform(-1, 1, 500),
        2.0 ** RNG.uniform(-30, 31, 500) * RNG.choice([-1, 1], 500), [0.0, 0.5, -0.5, 3.0, -2.0],
    ]).astype(np.float32)
    for d, base, origin in ((64, 10000.0, 0), (16, 2.0, 0), (32, 10000.0, 2)):
        f = rope_frequencies(d, base=base)
        s, c = sincos_f32(NUMPY_OPS, phase_of_floats(NUMPY_OPS, t[:, None], fixed_ladder(f.ladder), origin))
        cr, sr = posenc.rope_cos_sin(t.astype(np.float64) + origin, d, base=base)
        assert np.array_equal(_bits(s), _bits(sr)) and np.array_equal(_bits(c), _bits(cr))


def test_tiny_float_angles_keep_the_stated_absolute_bound():
    # below |t·ω| ~ 2**-60 the 128-bit phase runs out of relative precision: the error stays < 2**-90
    t = np.array([1e-30, -3e-25, 1e-20], dtype=np.float32)
    lad = rope_frequencies(64).ladder
    s, _ = sincos_f32(NUMPY_OPS, phase_of_floats(NUMPY_OPS, t[:, None], fixed_ladder(lad)))
    exact = np.array([[float(mpmath.sin(mpmath.mpf(float(v)) * mpmath.mpf(w))) for w in lad.w0] for v in t])
    assert np.max(np.abs(s - exact)) < 2.0**-90


def test_constants_match_mpmath():
    mpmath.mp.prec = 200
    assert PI_4[0] * 2**32 + PI_4[1] == int(mpmath.nint(mpmath.pi / 4 * 2**64))
    for k, (hi, lo) in enumerate(SIN_COEFFS, start=1):
        want = (mpmath.pi / 2) ** (2 * k) / mpmath.factorial(2 * k + 1) / 4**k
        assert hi * 2**32 + lo == int(mpmath.nint(want * 2**64))
    for k, (hi, lo) in enumerate(COS_COEFFS, start=1):
        want = (mpmath.pi / 2) ** (2 * k) / mpmath.factorial(2 * k) / 4**k
        assert hi * 2**32 + lo == int(mpmath.nint(want * 2**64))
    lad = geometric_ladder(3, 10000.0, Fraction(3))
    fx = fixed_ladder(lad)
    for i in range(3):
        turns = (mpmath.mpf(lad.w0[i]) + mpmath.mpf(lad.w1[i]) + mpmath.mpf(lad.w2[i])) / (2 * mpmath.pi)
        words = sum(int(fx.frac_words[j, i]) << (32 * (3 - j)) for j in range(4))
        assert words == int(mpmath.nint(mpmath.frac(turns) * 2**128)) % 2**128


def test_out_of_range_frequencies_are_refused():
    from decimal import Decimal

    from posenc.exact import Ladder

    with pytest.raises(posenc.PosEncError, match="2\\*\\*-60"):
        fixed_ladder(Ladder.from_decimals([Decimal(2) ** -70]))
    with pytest.raises(posenc.PosEncError, match="positive finite"):
        scale_words(0.0)


def test_the_unrounded_kernel_stays_within_the_stated_error_bound():
    from posenc.exact.fixed import ERROR_BOUND
    from posenc.exact.fixed_sincos import sincos_bits

    mpmath.mp.prec = 200
    rng = np.random.default_rng(9)
    words = rng.integers(0, 2**32, size=(4, 3000), dtype=np.uint64).astype(np.uint32)
    words[0, :200] >>= rng.integers(0, 30, 200).astype(np.uint32)  # phases near 0: small sines, relative error
    words[0, 200:400] = 0x40000000 - (words[0, 200:400] >> 20)  # phases just below a quarter turn
    sin_m, sin_e, cos_m, cos_e, _, swap = sincos_bits(NUMPY_OPS, tuple(words))
    worst = 0.0
    for i in range(words.shape[1]):
        turns = mpmath.mpf(sum(int(words[j, i]) << (32 * (3 - j)) for j in range(4))) / 2**128
        s, c = abs(mpmath.sin(2 * mpmath.pi * turns)), abs(mpmath.cos(2 * mpmath.pi * turns))
        if swap[i]:
            s, c = c, s
        for m, e, true in ((sin_m, sin_e, s), (cos_m, cos_e, c)):
            value = mpmath.mpf(int(m[0][i]) * 2**32 + int(m[1][i])) * mpmath.mpf(2) ** (int(np.int32(e[i])) - 64)
            if true > 2**-60:  # phases known to 2**-96 only: below, the phase's own error dominates
                worst = max(worst, float(abs(value - true) / true))
    assert worst < ERROR_BOUND  # measured: about 2**-61


def test_the_sine_and_cosine_mantissas_need_at_most_one_shift():
    # shift_up_once (round_f32(high=True), scale) takes m in [2**62, 2**64) or 0: the unrounded sines and
    # cosines, and their products with a factor's mantissa, checked against the range over every kind of phase
    from posenc.exact.fixed_sincos import scale, sincos_bits

    rng = np.random.default_rng(12)
    words = rng.integers(0, 2**32, size=(4, 20000), dtype=np.uint64).astype(np.uint32)
    words[0, :2000] >>= rng.integers(0, 32, 2000).astype(np.uint32)  # tiny angles
    words[:, 2000:2100] = 0  # the phase 0: sin 0
    words[0, 2100:2300] = rng.integers(0, 8, 200).astype(np.uint32) << 29  # multiples of 1/8: y = 0 or 1/2
    words[1:, 2100:2300] = 0
    words[0, 2300:2500] = (rng.integers(0, 4, 200).astype(np.uint32) << 30) + 0x20000000  # y = 1/2 ± tiny
    words[1:, 2300:2400] = 0
    words[1:, 2400:2500] = 0xFFFFFFFF
    words[0, 2400:2500] -= 1
    sin_m, sin_e, cos_m, cos_e, _, _ = sincos_bits(NUMPY_OPS, tuple(words))

    def in_range(m):
        v = m[0].astype(np.uint64) << np.uint64(32) | m[1].astype(np.uint64)
        return bool(np.all((v >= np.uint64(2**62)) | (v == 0)))

    assert (sin_m[0] == 0).any() and in_range(sin_m) and in_range(cos_m)
    for factor in (1.0, 2.0, 0.5, 1 + 2**-52, 2 - 2**-52, 1.2247, 0.1):
        for m, e in ((sin_m, sin_e), (cos_m, cos_e)):
            assert in_range(scale(m, e, scale_words(factor), NUMPY_OPS)[0])
