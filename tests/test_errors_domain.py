"""The edges of the domain (issue 10, section 4): what posenc accepts, what it refuses, and how.

The stated domain: even d_model (and head_dim) up to MAX_D_MODEL = 65536, bases in
(1, 2**950], positions |p| < 2**53, angles |p·ω| < 2**53. Inside it, the accuracy
guarantee holds (checked here at the widest d_model against mpmath); outside it,
a PosEncError naming the value, raised before any work (no ladder is built).
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
import pytest

import posenc
from posenc import PosEncError
from posenc.errors import MAX_BASE, MAX_D_MODEL, check_real
from posenc.support.memory import check_size
from reference import omega, sin_cos, ulp_error


def test_the_stated_limits():
    assert MAX_D_MODEL == 65536
    assert MAX_BASE == 2.0**950


# ---------------------------------------------------------------- d_model: the widest encoding


@pytest.fixture
def no_ladder(monkeypatch):
    """Fail the test if any ladder is built: refusals must come before the work."""
    import posenc.exact.ladder as lad

    def boom(*a, **k):
        raise AssertionError("a ladder was built before the size was checked")

    monkeypatch.setattr(lad.Ladder, "from_decimals", classmethod(boom))
    lad.geometric_ladder.cache_clear()
    yield
    lad.geometric_ladder.cache_clear()


@pytest.mark.parametrize("d", [10**6, 10**9, 65540, 2**62, 10**400], ids=["1e6", "1e9", "65540", "2^62", "1e400"])
@pytest.mark.parametrize(
    "call",
    [
        lambda d: posenc.frequencies(d),
        lambda d: posenc.wavelengths(d),
        lambda d: posenc.encode(1, d),
        lambda d: posenc.table(2, d),
        lambda d: posenc.context_report(100, d),
        lambda d: posenc.min_base(100, d),
        lambda d: posenc.max_wavelength(d),
        lambda d: posenc.shift_matrix(1, d),
        lambda d: posenc.similarity(1, 2, d),
        lambda d: posenc.min_separation(10, d),
        lambda d: posenc.rope_frequencies(d),
        lambda d: posenc.rope_cos_sin([1], d),
        lambda d: posenc.rope_context_report(100, d),
        lambda d: posenc.encode(1, d, convention="keras"),
        lambda d: posenc.from_hf_config({"head_dim": d}),
    ],
)
def test_too_wide_is_refused_before_any_work(no_ladder, call, d):
    # d_model = 10**9 used to hang (10**6 took seconds) building a ladder nobody could use
    with pytest.raises(PosEncError, match=r"<= 65536") as info:
        call(d)
    assert str(d)[:12] in str(info.value)


def test_widest_d_model_keeps_the_guarantee():
    # every frequency stays in [1/base, 1], so the exact path's error does not grow with the width:
    # sample channels across d = 65536 at the edge positions, against mpmath
    d = MAX_D_MODEL
    channels = [0, 1, 2, 1000, 12345, 16383, 16384, 32766, 32767]
    for base in (2.0, 10000.0, 1e7):
        for p in (2**31 - 1, -(10**6) - 0.5, 12345.678, 65537):
            for dtype, worst in ((np.float32, 1.0), (np.float64, 4.0)):
                row = posenc.encode(p, d, base=base, dtype=dtype)
                assert row.shape == (d,)
                for i in channels:
                    s, c = sin_cos(p, omega(d, base, i))
                    assert ulp_error(row[2 * i], s, dtype) <= worst, (base, p, i)
                    assert ulp_error(row[2 * i + 1], c, dtype) <= worst, (base, p, i)
    rows = posenc.table(3, d, start=2**31 - 3)
    np.testing.assert_array_equal(rows, posenc.encode([2**31 - 3, 2**31 - 2, 2**31 - 1], d))


# ---------------------------------------------------------------- base and context: huge numbers


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: posenc.encode(1, 4, base=10**400), "401 digits"),
        (lambda: posenc.frequencies(4, base=10**400), "401 digits"),
        (lambda: posenc.rope_frequencies(4, base=10**400), "401 digits"),
        (lambda: posenc.context_report(10**400, 512), "401 digits"),
        (lambda: posenc.min_base(10**400, 512), "401 digits"),
        (lambda: posenc.rope_context_report(10**400, 64), "401 digits"),
        (lambda: posenc.context_report(100, 512, base=-(10**400)), "401 digits"),
        (lambda: posenc.encode(1, 4, base=Fraction(10**400, 3)), "Fraction"),
        (lambda: posenc.encode(1, 4, base=1e300), "1e+300"),
        (lambda: posenc.encode(1, 4, base=2.0**951), "2**950"),
        (lambda: posenc.aliasing(0, 1, 4, atol=10**400), "401 digits"),
    ],
)
def test_huge_numbers_are_named(call, needle):
    # base=10**400 and context_report(10**400, ...) used to raise OverflowError
    with pytest.raises(PosEncError) as info:
        call()
    assert needle in str(info.value)


def test_largest_base_still_exact():
    # base = 2**950: the slowest frequency ~2**-950 still holds more than 110 bits
    d, base = 8, MAX_BASE
    row = posenc.encode(3.5, d, base=base, dtype=np.float64)
    for i in range(d // 2):
        s, c = sin_cos(3.5, omega(d, base, i))
        assert ulp_error(row[2 * i], s, np.float64) <= 4
        assert ulp_error(row[2 * i + 1], c, np.float64) <= 4


def test_min_base_past_float_range_is_inf_not_an_error():
    # context 1e300 at d 4 needs base (1e300/2π)**2: no float64 holds it; inf says "no base suffices"
    assert posenc.min_base(1e300, 4) == math.inf
    assert posenc.context_report(1e300, 4).min_base == math.inf


def test_check_real_huge_int_and_fraction():
    with pytest.raises(PosEncError, match="must be finite"):
        check_real(-(10**400), "x")
    assert check_real(Fraction(1, 3), "x") == 1 / 3


# ---------------------------------------------------------------- sizes: more than the machine holds


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: posenc.table(10**12, 4), "1000000000000"),
        (lambda: posenc.table(2**52, 512, dtype=np.float16), "4503599627370496"),
        (lambda: posenc.table(10**15, 3, convention="keras"), "1000000000000000"),
        (lambda: posenc.rope_table(posenc.rope_frequencies(128), 0, 10**12), "1000000000000"),
        (lambda: posenc.rope_table(posenc.rope_frequencies(128, scaling=posenc.YaRN(4.0, 4096)), 0, 10**12),
         "1000000000000"),
    ],
)
def test_absurd_sizes_are_refused_at_once(call, needle):
    # posenc.table(10**12, 512) used to reach NumPy and fail with a MemoryError (or be killed later)
    with pytest.raises(PosEncError, match="more than this machine's") as info:
        call()
    assert needle in str(info.value)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: posenc.shift_matrix(1, 1024), "(1024, 1024) in float64 needs 8.0 MiB"),
        (lambda: posenc.encode(np.arange(1000), 1024), "(1000, 1024) in float32 needs 3.9 MiB"),
        # the output the caller gets, its 1026-wide table (cut to 1025) counted as a working array
        (lambda: posenc.table(1000, 1025, convention="keras", dtype=np.float64),
         "(1000, 1025) in float64 needs 7.8 MiB with 7.8 MiB of working arrays"),
        (lambda: posenc.rope_cos_sin(np.arange(5000), 512), "(5000, 256) in float32"),
        (lambda: posenc.similarity(np.arange(5000.0), 0, 512, per_channel=True), "(5000, 256) in float64"),
    ],
)
def test_outputs_are_sized_against_the_machine(monkeypatch, call, needle):
    import posenc.support.memory as errors

    monkeypatch.setattr(errors, "_memory", lambda: 2**20)  # a 1 MiB machine
    with pytest.raises(PosEncError, match=r"more than this machine.s 1\.0 MiB of memory") as info:
        call()
    assert needle in str(info.value)


def test_check_size_counts_bytes(monkeypatch):
    import posenc.support.memory as errors

    check_size((1000, 1000), np.float64, "small")  # 8 MB: fine anywhere
    monkeypatch.setattr(errors, "_memory", lambda: 7)
    with pytest.raises(PosEncError, match=r"table of shape \(1, 2\) in float32 needs 8 bytes"):
        check_size((1, 2), np.float32, "table")


def test_allocation_failure_becomes_posenc_error(monkeypatch):
    import posenc.support.memory as errors

    def no_memory(*a, **k):
        raise MemoryError("simulated")

    monkeypatch.setattr(errors.np, "empty", no_memory)
    with pytest.raises(PosEncError, match="more memory than is free now"):
        errors.allocate((4, 4), np.float32, "table")


# ---------------------------------------------------------------- angles past the exact range


def test_unscaled_angles_never_reach_the_limit():
    # ω <= 1 and |p| < 2**53: the largest accepted position stays exact and bounded
    p = 2.0**53 - 1
    row = posenc.encode(p, 4, dtype=np.float64)
    s, c = sin_cos(p, mpmath.mpf(1))
    assert ulp_error(row[0], s, np.float64) <= 4 and ulp_error(row[1], c, np.float64) <= 4


@pytest.mark.parametrize("call", [
    lambda n: posenc.rope_frequencies(64, scaling=posenc.DynamicNTK(2.0, 4096), seq_len=n),
    lambda n: posenc.rope_cos_sin([0, 1], 64, scaling=posenc.DynamicNTK(2.0, 4096), seq_len=n),
    lambda n: posenc.apply_rope(np.zeros((2, 64)), [0, 1], seq_len=n),
    lambda n: posenc.XPos().middle(n),
])
def test_a_sequence_longer_than_the_last_exact_position_is_refused(call):
    with pytest.raises(PosEncError, match=r"seq_len must be <= 9007199254740992, got 9007199254740993"):
        call(2**53 + 1)
    with pytest.raises(PosEncError, match="seq_len must be >= 1"):
        call(0)


def test_a_context_past_2_53_is_reported_for_plain_rope_and_refused_by_name_for_dynamic_scalings():
    report = posenc.rope_context_report(context=1.351079352388807e16, head_dim=6)  # found by the fuzz suite
    assert report.wraps
    with pytest.raises(PosEncError, match=r"context must be <= 2\*\*53 for DynamicNTK.*got 1\.351079352388807e\+?16"):
        posenc.rope_context_report(context=1.351079352388807e16, head_dim=64, scaling=posenc.DynamicNTK(2.0, 4096))
