"""posenc's own exp and log (posenc.exact.power) against mpmath: the xPos factors and T5's logs, correctly rounded."""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest

from posenc import XPos, xpos_decay, xpos_scale
from posenc.exact import power
from posenc.exact.power import EXP_EPS, exp_dd, log_float32, nearest_log, nearest_power, round_checked

_RNG = np.random.default_rng(20261201)


def _mp(z: Fraction) -> mpmath.mpf:
    return mpmath.mpf(z.numerator) / z.denominator


def nearest(v: mpmath.mpf, dtype: type) -> float:
    """The nearest dtype value to v (normal range), by mpmath's own rounding."""
    with mpmath.workprec(np.finfo(dtype).nmant + 1):
        return float(+v)


def zeta_ref(i: int, r: int, gamma: float) -> mpmath.mpf:
    g = mpmath.mpf(gamma)  # a float is exact in mpmath
    return (mpmath.mpf(2 * i) / r + g) / (1 + g)


def decay_ref(units: np.ndarray, r: int, gamma: float, sb: float, dtype: type) -> np.ndarray:
    out = np.empty((units.size, r // 2))
    with mpmath.workprec(320):
        zs = [zeta_ref(i, r, gamma) for i in range(r // 2)]
        for a, u in enumerate(units.tolist()):
            for i, z in enumerate(zs):
                out[a, i] = nearest(mpmath.power(z, mpmath.mpf(u) / mpmath.mpf(sb)), dtype)
    return out


def test_exp_dd_is_within_its_bound_over_the_whole_range() -> None:
    hi = np.concatenate([_RNG.uniform(-664, 709, 20000), _RNG.uniform(-1, 1, 5000), _RNG.uniform(-1e-6, 1e-6, 2000),
                         np.arange(-700, 701, dtype=np.float64) * (np.log(2) / 128)])
    lo = hi * _RNG.uniform(-2.0**-53, 2.0**-53, hi.size)
    rh, rl = exp_dd(hi, lo)
    worst = 0.0
    with mpmath.workprec(200):
        for x, y, h, lw in zip(hi.tolist(), lo.tolist(), rh.tolist(), rl.tolist(), strict=True):
            v = mpmath.exp(mpmath.mpf(x) + mpmath.mpf(y))
            worst = max(worst, float(abs((mpmath.mpf(h) + mpmath.mpf(lw)) / v - 1)))
    assert worst < EXP_EPS / 16, worst  # measured ~2**-79 (results above 2**-960); the bound has a margin


def test_near_the_bottom_of_float64_factors_are_still_correctly_rounded() -> None:
    # below 2**-960 the low word of exp_dd is rounded to a multiple of 2**-1074: still decided right
    xp = XPos(center=False)
    rate = float(mpmath.log(zeta_ref(0, 8, 0.4))) / 512  # the fastest pair's ln ζ / scale_base
    off = np.rint(np.linspace(-707.5 / rate, -690 / rate, 300))  # the fastest pair from 2**-1020.7 to 2**-995
    got = xpos_decay(off, 8, xpos=xp)
    assert got[:, 0].min() < 2.0**-1020
    assert np.array_equal(got, decay_ref(off, 8, 0.4, 512.0, np.float64))


def test_exp_dd_outside_the_normal_range_is_zero_or_inf() -> None:
    rh, rl = exp_dd(np.array([-800.0, -745.0, 710.0, 1e6, -1e300]), np.zeros(5))
    assert rh.tolist() == [0.0, 0.0, np.inf, np.inf, 0.0] and rl.tolist() == [0.0] * 5


@pytest.mark.parametrize("r, gamma, sb", [(128, 0.4, 512.0), (64, 0.1, 256.0), (32, 2.5, 100.0), (6, 1.0, 7.0)])
def test_xpos_decay_is_the_nearest_float64_to_mpmath(r: int, gamma: float, sb: float) -> None:
    off = np.concatenate([np.arange(-3000, 3001, 97.0), _RNG.uniform(-4000, 4000, 40), [0.5, -0.25, 1e-9, sb]])
    got = xpos_decay(off, r, xpos=XPos(gamma=gamma, scale_base=sb))
    want = decay_ref(off, r, gamma, sb, np.float64)
    assert got.size >= 4 * 40 and np.array_equal(got, want), np.argwhere(got != want)[:5]


@pytest.mark.parametrize("dtype, n", [(np.float64, 9000), (np.float32, 9000), (np.float16, 2000)])
@pytest.mark.parametrize("role", ["q", "k"])
def test_xpos_scale_is_the_nearest_value_of_its_dtype(dtype: type, n: int, role: str) -> None:
    pos = np.arange(0, n, 31.0)
    got = xpos_scale(pos, 48, role=role, seq_len=n, dtype=dtype)
    assert got.dtype == dtype
    units = (pos - n // 2) * (1 if role == "q" else -1)
    want = decay_ref(units, 48, 0.4, 512.0, dtype)
    assert np.array_equal(got.astype(np.float64), want)


def test_the_exact_fallback_gives_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    off = np.arange(-2000, 2001, 250.0)
    fast = {dt: xpos_scale(off, 16, seq_len=1, dtype=dt, xpos=XPos(center=False)) for dt in (np.float64, np.float16)}
    monkeypatch.setattr(power, "EXP_EPS", 1.0)  # every value "hard": all decided by nearest_power
    for dt, want in fast.items():
        assert np.array_equal(xpos_scale(off, 16, seq_len=1, dtype=dt, xpos=XPos(center=False)), want)


def test_a_power_that_is_exactly_a_midpoint_rounds_to_even() -> None:
    # γ = 1, r = 4: ζ_1 = 3/4, and (3/4)**34 = 3**34 / 2**68 has 54 significant bits: a float64 midpoint
    tie = Fraction(3, 4) ** 34
    assert tie.numerator.bit_length() == 54 and tie.numerator % 2 == 1
    d = xpos_decay([34 * 512.0], 4, xpos=XPos(gamma=1.0))
    assert d[0, 1] == float(tie)  # Python rounds a Fraction correctly, ties to even
    assert nearest_power(Fraction(3, 4), Fraction(34), np.float64) == float(tie)
    assert nearest_power(Fraction(9, 16), Fraction(1, 2), np.float16) == 0.75  # exact, no tie


def test_round_checked_flags_what_it_cannot_decide() -> None:
    # 1 + 2**-53 is halfway between 1 and its successor: within EXP_EPS of it nothing is decided
    y, hard = round_checked(np.array([1.0, 1.0, 1.5]), np.array([2.0**-53, 2.0**-80, 0.0]), np.float64)
    assert hard.tolist() == [True, False, False] and y[1:].tolist() == [1.0, 1.5]


def test_log_float32_is_correctly_rounded_and_needs_no_libm(monkeypatch: pytest.MonkeyPatch) -> None:
    x = np.concatenate([np.arange(8, 5000, dtype=np.float32) / np.float32(8),
                        _RNG.uniform(1, 2.0**40, 3000).astype(np.float32), np.float32([1.0, 2.0**60])])
    got = log_float32(x)
    with mpmath.workprec(200):
        want = np.array([nearest(mpmath.log(mpmath.mpf(float(v))), np.float32) for v in x.tolist()])
    assert got.dtype == np.float32 and np.array_equal(got.astype(np.float64), want)
    # the platform's log is only a first guess: a guess off by an ulp or two gives the same bits
    real_log = np.log
    monkeypatch.setattr(power.np, "log", lambda a: real_log(a) * (1 + 3e-7))
    assert np.array_equal(log_float32(x), got)


def test_nearest_log_decides_hard_cases_exactly() -> None:
    assert nearest_log(Fraction(1), np.float32) == 0.0
    with mpmath.workprec(300):
        for q in (Fraction(27, 8), Fraction(3, 2), Fraction(2**52 + 1, 2**52), Fraction(10**6)):
            assert nearest_log(q, np.float64) == float(mpmath.log(_mp(q)))
    with pytest.raises(ValueError, match="x >= 1"):
        nearest_log(Fraction(1, 2), np.float64)
