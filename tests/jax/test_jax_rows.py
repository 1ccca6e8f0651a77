"""posenc.jax rows inside jit: the NumPy core's float32 bits, every scaling, with no float64 and no dot."""

from __future__ import annotations

import jax.extend
import jax.numpy as jnp
import numpy as np
import pytest
from jaxprs import jaxpr_items

import jax
import posenc
import posenc.jax as pj

RNG = np.random.default_rng(2222)
POSITIONS = np.concatenate([
    RNG.integers(0, 2**31 - 1, size=3000), np.arange(0, 64), [2**31 - 2, 2**31 - 3, 1],
]).astype(np.int32)
SEQ_LEN = 20000  # the length DynamicNTK and LongRoPE are evaluated at (static under jit)


def scalings():
    n = 64
    rng = np.random.default_rng(7)
    long_rope = posenc.LongRoPE(tuple(rng.uniform(0.9, 3, n)), tuple(rng.uniform(1, 40, n)), 4096, factor=16.0)
    return [None, posenc.Linear(4.0), posenc.NTK(8.0), posenc.DynamicNTK(4.0, 4096),
            posenc.Llama3(8.0, 1.0, 4.0, 8192), posenc.YaRN(4.0, 32768),
            posenc.YaRN(40.0, 4096, mscale=1.0, mscale_all_dim=0.707), long_rope]


def bits(a):
    return np.asarray(a, dtype=np.float32).view(np.uint32)


def mismatches(got, want):
    return int((bits(got) != bits(want)).sum())


@pytest.mark.parametrize("scaling", scalings(), ids=lambda s: type(s).__name__)
def test_rows_in_jit_are_the_cores_float32_bits(scaling):
    fn = jax.jit(lambda p: pj.rope_cos_sin(p, 128, base=500000.0, scaling=scaling, seq_len=SEQ_LEN))
    cos, sin = fn(jnp.asarray(POSITIONS))
    want_c, want_s = posenc.rope_cos_sin(POSITIONS.astype(np.int64), 128, base=500000.0, scaling=scaling,
                                         seq_len=SEQ_LEN, dtype=np.float32)
    assert cos.dtype == jnp.float32 and cos.shape == want_c.shape
    assert (mismatches(cos, want_c), mismatches(sin, want_s)) == (0, 0)  # 2 × 3067 × 64 values


def test_negative_and_batched_positions():
    pos = RNG.integers(-(2**31), 2**31, size=(4, 256)).astype(np.int32)
    cos, sin = jax.jit(lambda p: pj.rope_cos_sin(p, 64))(pos)
    want_c, want_s = posenc.rope_cos_sin(pos.astype(np.int64), 64)
    assert cos.shape == (4, 256, 32)
    assert (mismatches(cos, want_c), mismatches(sin, want_s)) == (0, 0)


def test_float_positions_are_exact():
    t = np.concatenate([RNG.uniform(-1e6, 1e6, 500), RNG.uniform(0, 1, 500), [0.25, 1.5]]).astype(np.float32)
    cos, sin = jax.jit(lambda p: pj.rope_cos_sin(p, 64))(t)
    want_c, want_s = posenc.rope_cos_sin(t.astype(np.float64), 64)
    assert (mismatches(cos, want_c), mismatches(sin, want_s)) == (0, 0)


def test_float_positions_out_of_range_give_nan_not_garbage():
    cos, _ = jax.jit(lambda p: pj.rope_cos_sin(p, 8))(jnp.array([jnp.nan, 2.0**31, 3.0], jnp.float32))
    c = np.asarray(cos)
    assert np.isnan(c[:2]).all() and np.isfinite(c[2]).all()


@pytest.mark.parametrize("layout", ["contiguous", "interleaved"])
def test_sections_turn_each_pair_with_its_axis(layout):
    pos = RNG.integers(0, 2**31 - 1, size=(50, 3)).astype(np.int32)
    sizes = (16, 24, 24) if layout == "contiguous" else (24, 20, 20)
    fn = jax.jit(lambda p: pj.rope_cos_sin(p, 128, base=1e6, sections=sizes, section_layout=layout))
    cos, sin = fn(pos)
    want_c, want_s = posenc.rope_cos_sin(pos.astype(np.int64), 128, base=1e6, sections=sizes,
                                         section_layout=layout)
    assert (mismatches(cos, want_c), mismatches(sin, want_s)) == (0, 0)


def test_partial_rotary_and_per_axis_ladders():
    pos = RNG.integers(0, 2**20, size=(30, 2)).astype(np.int32)
    cos, _ = pj.rope_cos_sin(pos, 64, sections=(16, 16), ladder="per_axis")
    assert mismatches(cos, posenc.rope_cos_sin(pos.astype(np.int64), 64, sections=(16, 16), ladder="per_axis")[0]) == 0
    cos, _ = pj.rope_cos_sin(pos[:, 0], 96, rotary_dim=32)
    assert cos.shape == (30, 16)
    assert mismatches(cos, posenc.rope_cos_sin(pos[:, 0].astype(np.int64), 96, rotary_dim=32)[0]) == 0


def walk(fn, *args):
    closed = jax.make_jaxpr(fn)(*args)
    items = list(jaxpr_items(closed.jaxpr))
    names = {x for x in items if isinstance(x, str)}
    dtypes = {str(getattr(x, "dtype", "")) for x in items if not isinstance(x, str)}
    return names, dtypes


@pytest.mark.parametrize("scaling", [None, posenc.YaRN(4.0, 32768)], ids=["plain", "yarn"])
def test_no_float64_and_no_dot_in_the_graph(scaling):
    names, dtypes = walk(lambda p: pj.rope_cos_sin(p, 128, scaling=scaling), jnp.arange(16))
    assert "float64" not in dtypes and "int64" not in dtypes and "uint64" not in dtypes
    assert "dot_general" not in names and "clz" in names  # the integer path, not a float formula
    names, dtypes = walk(lambda p: pj.rope_cos_sin(p, 64), jnp.linspace(0, 1, 8, dtype=jnp.float32))
    assert "float64" not in dtypes and "dot_general" not in names
    x = jnp.ones((2, 16, 4, 64), jnp.bfloat16)
    names, dtypes = walk(lambda x, p: pj.apply_rope(x, p[:, :, None], scaling=scaling), x, jnp.ones((2, 16), jnp.int32))
    assert "float64" not in dtypes and "dot_general" not in names


def test_static_arguments_are_checked_at_trace_time():
    with pytest.raises(posenc.PosEncError, match="seq_len"):
        jax.jit(lambda p: pj.rope_cos_sin(p, 64, scaling=posenc.DynamicNTK(2.0, 4096)))(jnp.arange(4))
    with pytest.raises(posenc.PosEncError, match="dtype"):
        pj.rope_cos_sin(jnp.arange(4), 64, dtype="float64")
    with pytest.raises(posenc.PosEncError, match="int32"):
        pj.rope_cos_sin(np.array([2**40]), 64)
    with pytest.raises(posenc.PosEncError, match="float32"):
        pj.rope_cos_sin(np.array([0.1]), 64)
    with pytest.raises(posenc.PosEncError, match="head_dim"):
        pj.rope_cos_sin(jnp.arange(4), 63)
    with pytest.raises(posenc.PosEncError, match="sections"):
        pj.rope_cos_sin(jnp.arange(4), 64, sections=(8, 12, 12))


EAGER_CALLS = {
    "rope_cos_sin": lambda pos: pj.rope_cos_sin(pos, 64),
    "encode": lambda pos: pj.encode(pos, 32),
    "timestep_embedding": lambda pos: pj.timestep_embedding(pos.astype(jnp.float32), 64),
    "apply_rope": lambda pos: pj.apply_rope(jnp.ones((1, 2, 16, 64), jnp.bfloat16), pos),
}


@pytest.mark.parametrize("name", sorted(EAGER_CALLS))
def test_an_eager_call_repeated_compiles_nothing(name):
    """Eager calls reuse their compiled rows: before, each one traced and compiled a new program (~0.4 s)."""
    compiles = []

    def listener(event, _secs, **_kw):
        if event == "/jax/core/compile/backend_compile_duration":
            compiles.append(event)

    call = EAGER_CALLS[name]
    pos = jnp.arange(16, dtype=jnp.int32)
    first = call(pos)
    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        again = [call(pos) for _ in range(3)]
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)
    assert compiles == []
    for a in again:
        assert np.asarray(a).tobytes() == np.asarray(first).tobytes()


def test_eager_calls_of_a_new_length_or_base_reuse_the_compiled_rows():
    """Eagerly the rows program takes the ladder's words as arguments and positions padded to a size class:
    a new base, scaling or length of the same number of frequencies compiles no new rows program (~0.5 s
    each before), and gives the NumPy core's float32 bits."""
    from posenc.jax._rows import _padded, _rows_of_words

    calls = [(n, kw) for n in (3, 17, 40, 64) for kw in ({}, {"base": 500000.0}, {"scaling": posenc.NTK(8.0)})]
    pj.rope_cos_sin(jnp.arange(5, dtype=jnp.int32), 64)  # the size class of 64 int32 positions, compiled
    before = _rows_of_words._cache_size()
    for n, kw in calls:
        pos = jnp.asarray(RNG.integers(-(2**31), 2**31, size=n).astype(np.int32))
        eager = pj.rope_cos_sin(pos, 64, **kw)
        want = posenc.rope_cos_sin(np.asarray(pos).astype(np.int64), 64, dtype=np.float32, **kw)
        for e, w in zip(eager, want, strict=True):
            assert e.shape == w.shape == (n, 32) and mismatches(e, w) == 0
    assert _rows_of_words._cache_size() == before
    assert [_padded(n) for n in (1, 64, 65, 2**16, 2**16 + 1)] == [64, 64, 128, 2**16, 2**17]
