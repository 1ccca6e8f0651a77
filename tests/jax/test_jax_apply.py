"""posenc.jax.apply_rope: the NumPy rotation, under jit, grad, vmap, shard_map and jax.export."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import jax
import posenc
import posenc.jax as pj
import posenc.jax.conventions as jc

RNG = np.random.default_rng(2223)


def close(a, b):
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(b, np.float64), rtol=2e-6, atol=2e-6)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
@pytest.mark.parametrize("rotary_dim", [None, 32])
def test_rotation_matches_numpy(layout, rotary_dim):
    x = RNG.standard_normal((2, 4, 16, 64)).astype(np.float32)  # [b, n_h, s, h_d]
    pos = RNG.integers(0, 2**31 - 1, size=(2, 1, 16)).astype(np.int32)
    got = jax.jit(lambda x, p: pj.apply_rope(x, p, layout=layout, rotary_dim=rotary_dim,
                                             scaling=posenc.YaRN(4.0, 4096)))(x, pos)
    want = posenc.apply_rope(x, pos.astype(np.int64), layout=layout, rotary_dim=rotary_dim,
                             scaling=posenc.YaRN(4.0, 4096))
    assert got.dtype == jnp.float32 and got.shape == x.shape
    close(got, want)
    if rotary_dim:  # channels past rotary_dim pass through bit for bit
        assert np.array_equal(np.asarray(got)[..., 32:], x[..., 32:])


def test_low_precision_input_is_rotated_in_float32_and_rounded_once():
    x = RNG.standard_normal((8, 64)).astype(np.float32)
    pos = np.arange(10**6, 10**6 + 8, dtype=np.int32)
    xb = jnp.asarray(x, jnp.bfloat16)
    got = pj.apply_rope(xb, pos)
    want = posenc.apply_rope(np.asarray(xb, np.float32), pos.astype(np.int64))  # float32 math on the bf16 values
    assert got.dtype == jnp.bfloat16
    assert np.array_equal(np.asarray(got), np.asarray(jnp.asarray(want).astype(jnp.bfloat16)))


def test_sections_rotate_like_numpy():
    x = RNG.standard_normal((10, 128)).astype(np.float32)
    pos = RNG.integers(0, 5000, size=(10, 3)).astype(np.int32)
    got = pj.apply_rope(x, pos, base=1e6, sections=(16, 24, 24))
    close(got, posenc.apply_rope(x, pos.astype(np.int64), base=1e6, sections=(16, 24, 24)))


def test_grad_of_the_rotation_is_the_inverse_rotation():
    x = jnp.asarray(RNG.standard_normal((16, 64)).astype(np.float32))
    g = jnp.asarray(RNG.standard_normal((16, 64)).astype(np.float32))
    pos = jnp.asarray(RNG.integers(0, 2**31 - 1, 16).astype(np.int32))
    grad = jax.jit(jax.grad(lambda x: jnp.sum(pj.apply_rope(x, pos) * g)))(x)
    close(grad, pj.apply_rope(g, -pos))  # R(p)ᵀ = R(−p)


def test_vmap_over_per_example_positions():
    x = jnp.asarray(RNG.standard_normal((3, 12, 2, 32)).astype(np.float32))  # [b, s, n_h, h_d]
    pos = jnp.asarray(RNG.integers(0, 10**7, (3, 12)).astype(np.int32))  # [b, s]
    per = jax.jit(jax.vmap(lambda x, p: pj.apply_rope(x, p[:, None])))(x, pos)
    whole = jax.jit(lambda x, p: pj.apply_rope(x, p[:, :, None]))(x, pos)
    # jit against jit: XLA may contract the rotation's float32 products into FMAs, eager may not
    assert np.array_equal(np.asarray(per), np.asarray(whole))


def test_shard_map_over_the_batch():
    from jax.sharding import Mesh, PartitionSpec

    mesh = Mesh(np.array(jax.devices()[:1]), ("data",))
    x = jnp.asarray(RNG.standard_normal((2, 8, 32)).astype(np.float32))
    pos = jnp.asarray(RNG.integers(0, 10**6, (2, 8)).astype(np.int32))
    spec = PartitionSpec("data")
    fn = jax.jit(jax.shard_map(lambda x, p: pj.apply_rope(x, p), mesh=mesh, in_specs=(spec, spec), out_specs=spec))
    assert np.array_equal(np.asarray(fn(x, pos)), np.asarray(jax.jit(pj.apply_rope)(x, pos)))


def test_export_round_trips_with_the_same_bits():
    from jax import export

    def rows(p):
        return pj.rope_cos_sin(p, 64, scaling=posenc.Llama3(8.0, 1.0, 4.0, 8192))

    pos = RNG.integers(0, 2**31 - 1, 256).astype(np.int32)
    exported = export.export(jax.jit(rows))(jax.ShapeDtypeStruct((256,), jnp.int32))
    back = export.deserialize(exported.serialize())
    got = back.call(pos)
    want = posenc.rope_cos_sin(pos.astype(np.int64), 64, scaling=posenc.Llama3(8.0, 1.0, 4.0, 8192))
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(np.asarray(g).view(np.uint32), w.view(np.uint32))


def test_shapes_are_checked_statically():
    with pytest.raises(posenc.PosEncError, match="broadcast"):
        pj.apply_rope(jnp.ones((2, 8, 4, 32)), jnp.arange(8))  # [b, s, n_h, h_d] needs [b, s, 1]
    with pytest.raises(posenc.PosEncError, match="float"):
        pj.apply_rope(jnp.ones((8, 32), jnp.int32), jnp.arange(8))
    with pytest.raises(posenc.PosEncError, match="layout"):
        pj.apply_rope(jnp.ones((8, 32)), jnp.arange(8), layout="neox")


def test_gemma4_head_half_pairs_rotate_like_numpy():
    """layout="head_half": pairs (i, i + h_d/2) for i < rotary_dim/2 turn, the rest pass through (Gemma 4)."""
    x = RNG.standard_normal((2, 4, 16, 64)).astype(np.float32)
    pos = RNG.integers(0, 2**31 - 1, size=(2, 1, 16)).astype(np.int32)
    got = np.asarray(jax.jit(lambda x, p: pj.apply_rope(x, p, layout="head_half", rotary_dim=16))(x, pos))
    close(got, posenc.apply_rope(x, pos.astype(np.int64), layout="head_half", rotary_dim=16))
    kept = np.r_[8:32, 40:64]
    assert np.array_equal(got[..., kept], x[..., kept]) and not np.array_equal(got[..., :8], x[..., :8])


def test_the_rows_are_built_once_per_program_whatever_the_heads_and_layers():
    # the row builder (~1,300 integer operations per value) runs once per distinct positions: not once per
    # head (XLA would fuse it into every consumer) and not once per layer (the layers' identical builders
    # are one computation after XLA's CSE); so a model pays it once per forward pass
    import re

    rng = np.random.default_rng(3)
    xs = [jnp.asarray(rng.standard_normal((1, 64, 4, 32), dtype=np.float32)) for _ in range(8)]
    pos = jnp.asarray(rng.integers(0, 2**31 - 1, 64, dtype=np.int32))[None, :, None]

    def layers(xs, p):  # q and k of four layers, all at the same positions
        return [pj.apply_rope(x, p) for x in xs]

    def builders(compiled):
        return len(re.findall(r"= \S+ conditional\(", compiled.as_text()))

    assert builders(jax.jit(layers).lower(xs[:1], pos).compile()) == 1
    compiled = jax.jit(layers).lower(xs, pos).compile()
    assert builders(compiled) == 1
    got = compiled(xs, pos)  # the program counted above, run
    # eager, the eight inputs side by side as heads in one call (each value's bits depend only on its own input
    # and its row): one op-by-op pass (~1 s) instead of eight
    want = np.asarray(pj.apply_rope(jnp.concatenate(xs, axis=2), pos))
    for k, y in enumerate(got):
        assert np.array_equal(np.asarray(y), want[:, :, 4 * k:4 * (k + 1)])


_CONTEXTS = {
    "half": lambda x, p: pj.apply_rope(x, p),
    "interleaved": lambda x, p: pj.apply_rope(x, p, layout="interleaved"),
    "partial rotary": lambda x, p: pj.apply_rope(x, p, rotary_dim=32, scaling=posenc.YaRN(4.0, 4096)),
    "ops around it": lambda x, p: pj.apply_rope(x * 2, p) + 1,
    "q times k": lambda x, p: pj.apply_rope(x, p) * pj.apply_rope(x + 1, p),
    "bfloat16": lambda x, p: pj.apply_rope(x.astype(jnp.bfloat16), p).astype(jnp.float32),
    "vmap": lambda x, p: jax.vmap(pj.apply_rope)(x, p),
    "maxtext": lambda x, p: jc.maxtext_rope(x, p[..., 0]),
    "gemma, a quarter of the pairs turning": lambda x, p: jc.gemma_apply_rope(
        x, p[..., 0], base_frequency=10_000, scale_factor=8.0, rope_proportion=0.25),
    "flax module": lambda x, p: _module()(x, x + 1, p[..., 0])[1],
}


def _module():
    return pj.RotaryEmbedding(64, scaling=posenc.Llama3(8.0, 1.0, 4.0, 8192))


@pytest.mark.parametrize("name", list(_CONTEXTS))
def test_an_eager_call_gives_the_bits_of_a_compiled_one(name):
    # XLA contracts the rotation's products into FMAs inside a fusion; op-by-op dispatch would not. The
    # rotation is one compiled program either way, so eager and jit round alike (seen: 2,036 of 8,192
    # values 1 ulp apart before)
    fn = _CONTEXTS[name]
    x = jnp.asarray(RNG.standard_normal((2, 32, 4, 64)).astype(np.float32))  # [b, s, n_h, h_d]
    pos = jnp.asarray(RNG.integers(0, 2**31 - 1, (2, 32)).astype(np.int32))[..., None]
    assert np.array_equal(np.asarray(fn(x, pos)), np.asarray(jax.jit(fn)(x, pos)))
