"""posenc.jax.encode_nd: posenc.encode_nd's float32 bits inside jit for every n-D convention, vmap, a clean graph."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from test_jax_rows import walk

import jax
import posenc
import posenc.jax as pj
from posenc import PosEncError
from posenc.sinusoidal.conventions_nd import Timm

RNG = np.random.default_rng(2031)

#: (convention, d_model, grid sizes): every preset, with a cut (positional-encodings at d = 2n·k ± 2) and 3-D where
#: it is defined
CASES = [
    (None, 64, (12, 9)), (None, 48, (4, 5, 6)), (None, 6, (7,)),
    ("mae", 64, (12, 9)), ("mae", 12, (3, 4)),
    ("big_vision", 64, (12, 9)), ("big_vision", 8, (3, 4)),
    ("positional-encodings", 64, (12, 9)), ("positional-encodings", 30, (4, 5, 6)), ("positional-encodings", 7, (5,)),
    ("timm", 64, (12, 9)), (Timm(reverse_coord=True), 32, (5, 6)), (Timm(interleave_sin_cos=True), 32, (5, 6)),
    (posenc.sinusoidal.conventions_nd.Axial(500.0), 32, (5, 6)),
]


def bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


def mismatches(got, want):
    assert np.asarray(got).shape == np.asarray(want).shape
    return int((bits(got) != bits(want)).sum())


def jitted(d, convention, **kw):
    return jax.jit(lambda c: pj.encode_nd(c, d, convention=convention, **kw))


@pytest.mark.parametrize(("convention", "d", "sizes"), CASES, ids=lambda v: repr(v))
def test_integer_grids_are_the_numpy_bits(convention, d, sizes):
    g = posenc.grid(*sizes)
    want = posenc.encode_nd(g, d, convention=convention, dtype=np.float32)
    got = jitted(d, convention)(jnp.asarray(g, jnp.int32))
    assert got.dtype == jnp.float32 and want.size == g.shape[0] * d
    assert mismatches(got, want) == 0
    assert np.abs(want).max() > 0.5  # a table, not zeros


@pytest.mark.parametrize(("convention", "d", "sizes"), CASES, ids=lambda v: repr(v))
def test_random_float32_coordinates_are_the_numpy_bits(convention, d, sizes):
    n = len(sizes)
    c = np.concatenate([
        RNG.uniform(-100, 100, (300, n)),  # real coordinates
        RNG.uniform(-2.0**30, 2.0**30, (100, n)),  # large ones, still in the 32-bit exact range
        np.arange(40 * n).reshape(40, n) / (40 / 16),  # diffusers' arange(h) / (h / base_size)
    ]).astype(np.float32)
    want = posenc.encode_nd(c.astype(np.float64), d, convention=convention, dtype=np.float32)
    got = jitted(d, convention)(jnp.asarray(c))
    assert want.size == c.shape[0] * d
    assert mismatches(got, want) == 0


def test_bfloat16_and_float16_coordinates_widen_exactly():
    c = RNG.uniform(-50, 50, (64, 2)).astype(np.float32)
    for narrow in (jnp.bfloat16, jnp.float16):
        x = jnp.asarray(c).astype(narrow)
        want = posenc.encode_nd(np.asarray(x.astype(jnp.float32), np.float64), 32, convention="mae", dtype=np.float32)
        assert mismatches(jitted(32, "mae")(x), want) == 0


@pytest.mark.parametrize("cls_token", [True, 3])
@pytest.mark.parametrize("convention", [None, "mae", "timm"])
def test_cls_token_rows_come_first(cls_token, convention):
    g = np.stack([posenc.grid(4, 4), posenc.grid(4, 4) + 5])  # [2, 16, 2]: lead axes kept
    want = posenc.encode_nd(g, 16, convention=convention, dtype=np.float32, cls_token=cls_token)
    got = jitted(16, convention, cls_token=cls_token)(jnp.asarray(g, jnp.int32))
    k = int(cls_token)
    assert got.shape == (2, k + 16, 16) and mismatches(got, want) == 0
    assert (np.asarray(got)[:, :k] == 0).all() and (np.asarray(got)[:, k:] != 0).any()


def test_vmap_over_batches_of_points():
    c = RNG.integers(-1000, 1000, (3, 20, 2)).astype(np.int32)
    got = jax.jit(jax.vmap(lambda x: pj.encode_nd(x, 32, convention="big_vision")))(jnp.asarray(c))
    want = posenc.encode_nd(c.astype(np.int64), 32, convention="big_vision", dtype=np.float32)
    assert got.shape == (3, 20, 32) and mismatches(got, want) == 0


def test_narrow_output_dtypes_are_the_float32_values_rounded_once():
    g = posenc.grid(6, 6)
    want = posenc.encode_nd(g, 32, dtype=np.float32)
    for dt in (jnp.bfloat16, jnp.float16):
        got = pj.encode_nd(jnp.asarray(g, jnp.int32), 32, dtype=dt)
        assert got.dtype == dt
        assert np.array_equal(np.asarray(got), np.asarray(jnp.asarray(want).astype(dt)))


@pytest.mark.parametrize("convention", [None, "mae", "big_vision", "positional-encodings", "timm"])
def test_no_float64_no_dot_and_no_callback_in_the_graph(convention):
    for c in (jnp.zeros((16, 2), jnp.int32), jnp.zeros((16, 2), jnp.float32)):
        names, dtypes = walk(lambda x: pj.encode_nd(x, 32, convention=convention, cls_token=True), c)
        assert not dtypes & {"float64", "int64", "uint64"} and "dot_general" not in names
        assert not any("callback" in n for n in names)
        assert "clz" in names  # the integer row path, not a float formula


@pytest.mark.parametrize(
    ("call", "named"),
    [
        (lambda c: pj.encode_nd(c, 30, convention="mae"), "d_model=30"),
        (lambda c: pj.encode_nd(c, 4, convention="big_vision"), "d_model=4"),
        (lambda c: pj.encode_nd(c, 6), "d_model=6"),  # 6 / 2 = 3 channels per axis: odd
        (lambda c: pj.encode_nd(c, 0), "0"),
        (lambda c: pj.encode_nd(c, 16, convention="swin"), "swin"),
        (lambda c: pj.encode_nd(c, 16, convention="mae", base=100.0), "base=100"),
        (lambda c: pj.encode_nd(c, 16, dtype=jnp.float64), "float64"),
        (lambda c: pj.encode_nd(c, 16, dtype="int8"), "int8"),
        (lambda c: pj.encode_nd(c, 16, cls_token=-1), "-1"),
        (lambda c: pj.encode_nd(c[..., :1].repeat(3, -1), 24, convention="timm"), "3 axes"),
        (lambda c: pj.encode_nd(c[0, 0], 16), "scalar"),
        (lambda c: pj.encode_nd(c[0], 16, cls_token=True), "[..., m, n]"),
    ],
)
def test_bad_static_arguments_are_refused_at_trace_time(call, named):
    with pytest.raises(PosEncError, match=named.replace("[", r"\[").replace(".", r"\.")):
        jax.jit(call)(jnp.zeros((4, 2), jnp.int32))


def test_host_coordinates_float32_does_not_hold_are_refused():
    with pytest.raises(PosEncError, match="float32"):
        pj.encode_nd(np.array([[0.1, 0.2]]), 8)  # float64 0.1 would be rounded
    with pytest.raises(PosEncError, match="int32"):
        pj.encode_nd(np.array([[2**40, 0]]), 8)
    with pytest.raises(PosEncError, match="finite"):
        pj.encode_nd(np.array([[np.nan, 0.0]]), 8)
    ok = pj.encode_nd(np.array([[0.5, 3.0]]), 8)  # float64 values float32 holds are taken
    assert mismatches(ok, posenc.encode_nd([[0.5, 3.0]], 8, dtype=np.float32)) == 0
