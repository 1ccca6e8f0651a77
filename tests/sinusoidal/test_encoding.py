"""encode and table: shapes, layouts, dtypes and the encoding's identities."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc import conventions, encode, rope_cos_sin, rope_frequencies, rope_table, table
from posenc.support.layout import pair_permutation
from reference import reference_encoding

d_models = st.integers(1, 64).map(lambda n: 2 * n)
bases = st.floats(2.0, 1e7)
positions = st.one_of(
    st.integers(-(2**31) + 1, 2**31 - 1),
    st.floats(-(2.0**31), 2.0**31, allow_nan=False, allow_infinity=False),
)


def test_seed_example_1_position_zero():
    assert encode(0, 4).tolist() == [0.0, 1.0, 0.0, 1.0]


@given(d_models, bases)
def test_position_zero_pattern(d, b):
    e = encode(0, d, base=b, dtype=np.float64)
    assert np.array_equal(e, np.tile([0.0, 1.0], d // 2))


@given(positions, d_models, bases)
def test_bounded_and_unit_pairs(p, d, b):
    e = encode(p, d, base=b, dtype=np.float64)
    assert np.all(np.abs(e) <= 1.0)
    assert not np.isnan(e).any()
    assert np.isclose(np.dot(e, e), d / 2, rtol=1e-14, atol=0)


@given(st.lists(positions, min_size=1, max_size=5), d_models, bases)
def test_split_is_a_permutation_of_interleaved(ps, d, b):
    inter = encode(ps, d, base=b)
    split = encode(ps, d, base=b, layout="split")
    perm = pair_permutation(d, "interleaved", "split")
    assert np.array_equal(split, inter[..., perm])
    n = d // 2
    assert np.array_equal(split[..., :n], inter[..., 0::2])
    assert np.array_equal(split[..., n:], inter[..., 1::2])


def test_matches_the_formula_written_independently():
    ps = [0, 1, 7, 1000, -3, 2.5]
    got = encode(ps, 6, base=10000.0, dtype=np.float64)
    for row, p in zip(got, ps, strict=False):
        ref = [float(v) for v in reference_encoding(p, 6, 10000.0)]
        assert np.allclose(row, ref, rtol=0, atol=2e-16)


def test_shapes_and_dtypes():
    assert encode(3, 8).shape == (8,)
    assert encode([[1, 2, 3], [4, 5, 6]], 8).shape == (2, 3, 8)
    assert encode(np.zeros((0,)), 8).shape == (0, 8)
    assert encode(1, 8).dtype == np.float32
    assert encode(1, 8, dtype="float16").dtype == np.float16
    assert encode(np.arange(5, dtype=np.int32), 8).shape == (5, 8)


@given(st.integers(0, 300), d_models, st.integers(-(10**6), 10**6), st.sampled_from(["interleaved", "split"]))
def test_table_is_encode_of_arange(n, d, start, layout):
    t = table(n, d, start=start, layout=layout)
    assert t.shape == (n, d)
    assert np.array_equal(t, encode(np.arange(start, start + n), d, layout=layout))


def test_table_default_float32_and_start():
    t = table(4, 4, start=5)
    assert t.dtype == np.float32
    assert np.array_equal(t[0], encode(5, 4))


def _bits(a: np.ndarray) -> np.ndarray:
    return a.view(f"u{a.itemsize}")  # compared as bits: -0.0 == 0.0 as values


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("convention", [None, *conventions.NAMES])
def test_table_rows_are_encode_bit_for_bit(convention, dtype):
    # issue 18: table(8, 4, dtype=float16)[0, 0] was -0.0 where encode(0, 4) is +0.0 (angle addition's
    # rounding check saw -0 == +0 at a zero crossing); the sign of zero counts, for every preset and dtype
    for start, n in ((0, 8), (0, 300), (-7, 40), (-5000, 6000), (2**31 - 50, 100)):
        t = table(n, 6, start=start, dtype=dtype, convention=convention)
        want = encode(np.arange(start, start + n), 6, dtype=dtype, convention=convention)
        assert np.array_equal(_bits(t), _bits(want)), (start, n)
    if convention is None:
        assert not np.signbit(table(8, 4, dtype=dtype)[0, 0::2]).any()  # sin(0) = +0, as encode(0, 4)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_rope_table_rows_are_rope_cos_sin_bit_for_bit(dtype):
    for start in (0, -7, -5000):
        t = rope_table(rope_frequencies(16), start, 6000, dtype=dtype)
        cos, sin = rope_cos_sin(np.arange(start, start + 6000), 16, dtype=dtype)
        assert np.array_equal(_bits(t[:, 0]), _bits(cos)) and np.array_equal(_bits(t[:, 1]), _bits(sin))
    assert not np.signbit(rope_cos_sin(np.arange(100), 16, dtype=dtype)[1][0]).any()  # sin(0) = +0
