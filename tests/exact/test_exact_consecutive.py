"""Whole tables by angle addition (posenc.exact.consecutive) equal the exact path."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import posenc.exact.consecutive as cons
from posenc.exact import fill_range, seed_ladder
from posenc.support.layout import sin_cos_views
from reference import omega, sin_cos, ulp_error

ENGINES = ["numpy", "numba"]


def build(start, length, d, base, layout, dtype, engine, threads=None):
    out = np.empty((length, d), dtype=dtype)
    fill_range(start, length, seed_ladder(d, base), out, layout, engine=engine, threads=threads)
    return out


def ulp_gap(a: np.ndarray, b: np.ndarray) -> int:
    """Largest distance in ulps between two float arrays of the same dtype."""
    kind = {2: np.int16, 4: np.int32, 8: np.int64}[a.dtype.itemsize]
    ia = a.view(kind).astype(np.int64)
    ib = b.view(kind).astype(np.int64)
    # map the sign-magnitude integers onto a monotone line
    top = np.int64(1) << (8 * a.dtype.itemsize - 1)
    ia = np.where(ia < 0, -(ia + top), ia)
    ib = np.where(ib < 0, -(ib + top), ib)
    return int(np.max(np.abs(ia - ib))) if a.size else 0


@given(
    start=st.one_of(st.integers(-(10**6), 10**6), st.integers(-(2**31) + 300_000, 2**31 - 300_000)),
    length=st.integers(0, 9000),
    d=st.integers(1, 40).map(lambda n: 2 * n),
    base=st.floats(2.0, 1e7),
    layout=st.sampled_from(["interleaved", "split", "cos_sin"]),
    dtype=st.sampled_from([np.float32, np.float16]),
    engine=st.sampled_from(ENGINES),
    threads=st.sampled_from([None, 1, 3]),
)
def test_fast_equals_exact_bit_for_bit(start, length, d, base, layout, dtype, engine, threads):
    if engine == "numba" and dtype is np.float16:
        engine = "auto"  # numba serves float32 only
    fast = build(start, length, d, base, layout, dtype, engine, threads)
    exact = build(start, length, d, base, layout, dtype, "exact")
    assert ulp_gap(fast, exact) == 0
    assert np.array_equal(fast.view(f"u{fast.itemsize}"), exact.view(f"u{exact.itemsize}"))  # the sign of 0 too
    assert not np.isnan(fast).any()


@pytest.mark.parametrize("engine", ENGINES)
def test_rows_do_not_depend_on_the_start(engine):
    # the same position gets the same bits whichever table it sits in
    a = build(0, 12000, 1024, 10000.0, "interleaved", np.float32, engine)
    b = build(5003, 12000, 1024, 10000.0, "interleaved", np.float32, engine)
    assert np.array_equal(a[5003:], b[: 12000 - 5003])
    far = build(100_000, 4200, 1024, 10000.0, "interleaved", np.float32, engine)
    alone = build(104_100, 100, 1024, 10000.0, "interleaved", np.float32, "exact")
    assert np.array_equal(far[4100:], alone)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("length", [127, 128, 129, 4095, 4096, 4097, 8192 + 65, 3 * 4096 + 64 * 5 + 7])
def test_fast_path_is_exact_across_block_seams(engine, length):
    # the decomposition uses blocks of 64 rows and steps of 4096: cross every seam
    fast = build(-2049, length, 64, 10000.0, "interleaved", np.float32, engine)
    exact = build(-2049, length, 64, 10000.0, "interleaved", np.float32, "exact")
    assert ulp_gap(fast, exact) == 0


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_values_near_zero_crossings_are_recomputed(engine, layout, monkeypatch):
    # sin(p) for these p is below 2**-22: the angle-addition value is only good
    # to ~2**-49 absolute there, so the fix-up must recompute it exactly.
    calls = []
    real = cons._redo_rows

    def spy(*args):
        calls.append(args[0])
        real(*args)

    monkeypatch.setattr(cons, "_redo_rows", spy)
    for p in (5419351, 80143857, 411557987, 1068966896):
        start = p - 2000
        t = build(start, 4000, 8, 10000.0, layout, np.float32, engine)
        got = sin_cos_views(t, 4, layout)[0][2000, 0]
        ref = mpmath.sin(mpmath.mpf(p))
        assert abs(float(ref)) < 2.0**-22
        assert ulp_error(got, ref, np.float32) <= 1.0
        assert got != 0.0
    assert calls, "the exact fix-up never ran"


@pytest.mark.parametrize("engine", ENGINES)
def test_against_mpmath_at_table_scale(engine):
    d, base, start, length = 256, 500000.0, 10**7 - 3000, 6000
    t = build(start, length, d, base, "interleaved", np.float32, engine)
    rng = np.random.default_rng(7)
    worst = 0.0
    for r in rng.integers(0, length, 25):
        for i in rng.integers(0, d // 2, 6):
            s, c = sin_cos(start + int(r), omega(d, base, int(i)))
            worst = max(worst, ulp_error(t[r, 2 * i], s, np.float32), ulp_error(t[r, 2 * i + 1], c, np.float32))
    assert worst <= 1.0


def test_float64_takes_the_exact_path():
    fast = build(12345, 300, 16, 10000.0, "interleaved", np.float64, "auto")
    exact = build(12345, 300, 16, 10000.0, "interleaved", np.float64, "exact")
    assert np.array_equal(fast, exact)


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("layout", ["interleaved", "split", "cos_sin"])
def test_fill_range_writes_the_layout_into_a_strided_table(engine, layout):
    # a table may be a view of a wider array (odd d_model conventions): its first 2n channels are written
    wide = np.zeros((5000, 23), dtype=np.float32)
    fill_range(7, 5000, seed_ladder(20, 10000.0), wide[:, 1:22], layout, engine=engine)
    ref = build(7, 5000, 20, 10000.0, "interleaved", np.float32, "exact")
    s, c = (wide[:, 1:21:2], wide[:, 2:22:2]) if layout == "interleaved" else (wide[:, 1:11], wide[:, 11:21])
    if layout == "cos_sin":
        s, c = c, s
    assert ulp_gap(s, ref[:, 0::2]) == 0 and ulp_gap(c, ref[:, 1::2]) == 0
    assert np.all(wide[:, [0, 21, 22]] == 0)


def test_fill_range_rejects_an_unknown_engine_layout_or_shape():
    out = np.empty((4, 2), np.float32)
    with pytest.raises(ValueError, match="engine"):
        fill_range(0, 4, seed_ladder(2, 10.0), out, engine="gpu")
    with pytest.raises(ValueError, match="layout"):
        fill_range(0, 4, seed_ladder(2, 10.0), out, "halves")
    with pytest.raises(ValueError, match="out must be"):
        fill_range(0, 4, seed_ladder(4, 10.0), out)
