"""posenc.jax.encode/table, alibi_bias and t5_bucket/t5_bias: the NumPy API's values, with traced positions."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import jax
import posenc
import posenc.jax as pj

RNG = np.random.default_rng(2224)
INTS = np.concatenate([RNG.integers(-(2**31) + 8, 2**31 - 8, 1500), [0, 1, -1, -2, 2**31 - 2]]).astype(np.int32)


def same_bits(a, b):
    return np.array_equal(np.asarray(a, np.float32).view(np.uint32), np.asarray(b, np.float32).view(np.uint32))


@pytest.mark.parametrize("convention,d", [(None, 64), ("fairseq", 33), ("tensor2tensor", 64), ("keras", 33),
                                          ("hf-marian", 32), ("positional-encodings", 33)])
def test_encode_in_jit_is_numpys_bits(convention, d):
    got = jax.jit(lambda p: pj.encode(p, d, convention=convention))(INTS)
    assert got.shape == (INTS.shape[0], d)
    assert same_bits(got, posenc.encode(INTS.astype(np.int64), d, convention=convention))


def test_encode_split_layout_float_positions_and_table():
    t = RNG.uniform(-500, 500, 300).astype(np.float32)
    assert same_bits(pj.encode(t, 32, layout="split", base=100.0),
                     posenc.encode(t.astype(np.float64), 32, layout="split", base=100.0))
    assert same_bits(pj.table(50, 16, start=-3), posenc.table(50, 16, start=-3))
    assert same_bits(pj.table(50, 16), jax.jit(lambda p: pj.encode(p, 16))(jnp.arange(50)))


@pytest.mark.parametrize("convention", ["press", "bloom", "mpt"])
@pytest.mark.parametrize("causal", [True, False])
def test_alibi_with_traced_positions_is_numpys_bits(convention, causal):
    pos = np.array([[0, 0, 0, 1, 2, 3, 4, 5], [0, 1, 2, 3, 4, 5, 6, 7]], np.int32) * 1009  # non-power-of-2 slopes
    for heads in (3, 12):
        want = posenc.alibi_bias(5, 8, heads, offset=3, positions=pos, convention=convention, causal=causal)
        got = jax.jit(lambda p, h=heads: pj.alibi_bias(5, 8, h, offset=3, positions=p, convention=convention,
                                                       causal=causal))(pos)
        assert got.shape == want.shape and same_bits(got, want)
    assert same_bits(pj.alibi_bias(4, 6, 5, offset=2), posenc.alibi_bias(4, 6, 5, offset=2))


@pytest.mark.parametrize("bidirectional", [True, False])
@pytest.mark.parametrize("num_buckets,max_distance", [(32, 128), (18, 128), (34, 27), (8, 5)])
def test_t5_buckets_in_jit_are_numpys(bidirectional, num_buckets, max_distance):
    rel = np.concatenate([RNG.integers(-(2**31), 2**31, 20000), np.arange(-3000, 3000), [-(2**31)]]).astype(np.int32)
    fn = jax.jit(lambda r: pj.t5_bucket(r, bidirectional=bidirectional, num_buckets=num_buckets,
                                        max_distance=max_distance))
    want = posenc.t5_bucket(rel.astype(np.int64), bidirectional=bidirectional, num_buckets=num_buckets,
                            max_distance=max_distance)
    assert np.array_equal(np.asarray(fn(rel)), want)


def test_t5_bias_gathers_the_table_by_bucket():
    w = jnp.asarray(RNG.standard_normal((32, 4)).astype(np.float32))
    bias = jax.jit(lambda w: pj.t5_bias(w, 3, 7, offset=4))(w)
    buckets = posenc.t5_bucket(np.arange(7)[None, :] - np.arange(4, 7)[:, None])
    assert bias.shape == (4, 3, 7)
    assert np.array_equal(np.asarray(bias), np.moveaxis(np.asarray(w)[buckets], -1, 0))


def test_bias_arguments_are_checked():
    with pytest.raises(posenc.PosEncError, match="int32"):
        pj.alibi_bias(2, 2, 1, positions=jnp.array([0.0, 1.0]))
    with pytest.raises(posenc.PosEncError, match="k_len"):
        pj.alibi_bias(2, 3, 1, positions=jnp.array([0, 1]))
    with pytest.raises(posenc.PosEncError, match="num_buckets"):
        pj.t5_bucket(jnp.arange(3), num_buckets=2)
    with pytest.raises(posenc.PosEncError, match="integers"):
        pj.t5_bucket(jnp.ones(3))
