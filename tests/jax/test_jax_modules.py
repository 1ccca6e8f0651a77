"""posenc.jax's Flax NNX modules: the functions' values, no state, safe under nnx.jit."""

from __future__ import annotations

import subprocess
import sys

import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

import jax
import posenc
import posenc.jax as pj

RNG = np.random.default_rng(2225)


def test_rotary_module_equals_the_function_and_holds_no_state():
    rope = pj.RotaryEmbedding(64, base=500000.0, scaling=posenc.Llama3(8.0, 1.0, 4.0, 8192), rotary_dim=48)
    assert nnx.state(rope) == nnx.State({})
    q = jnp.asarray(RNG.standard_normal((2, 16, 4, 64)), jnp.bfloat16)
    k = jnp.asarray(RNG.standard_normal((2, 16, 2, 64)), jnp.float32)
    pos = jnp.asarray(RNG.integers(0, 2**31 - 1, (2, 16)).astype(np.int32))
    qr, kr = nnx.jit(lambda m, q, k, p: m(q, k, p))(rope, q, k, pos)
    fn = jax.jit(lambda x, p: pj.apply_rope(x, p[:, :, None], base=500000.0, rotary_dim=48,
                                            scaling=posenc.Llama3(8.0, 1.0, 4.0, 8192)))
    assert qr.dtype == jnp.bfloat16 and kr.dtype == jnp.float32
    assert np.array_equal(np.asarray(qr), np.asarray(fn(q, pos)))
    assert np.array_equal(np.asarray(kr), np.asarray(fn(k, pos)))


def test_rotary_module_with_sections_and_shared_positions():
    rope = pj.RotaryEmbedding(128, base=1e6, sections=(16, 24, 24))
    q = jnp.asarray(RNG.standard_normal((1, 6, 2, 128)).astype(np.float32))
    pos = jnp.asarray(RNG.integers(0, 100, (6, 3)).astype(np.int32))
    qr, _ = jax.jit(lambda q, p: rope(q, q, p))(q, pos)
    want = posenc.apply_rope(np.asarray(q), np.asarray(pos, np.int64)[:, None, :], base=1e6, sections=(16, 24, 24))
    np.testing.assert_allclose(np.asarray(qr), want, rtol=2e-6, atol=2e-6)


def test_rotary_module_checks_at_construction_and_call():
    with pytest.raises(posenc.PosEncError, match="seq_len"):
        pj.RotaryEmbedding(64, scaling=posenc.DynamicNTK(2.0, 4096))
    with pytest.raises(posenc.PosEncError, match="layout"):
        pj.RotaryEmbedding(64, layout="neox")
    rope = pj.RotaryEmbedding(64)
    with pytest.raises(posenc.PosEncError, match="q must be"):
        rope(jnp.ones((8, 64)), jnp.ones((8, 64)), jnp.arange(8))
    with pytest.raises(posenc.PosEncError, match="positions must be"):
        rope(jnp.ones((1, 8, 1, 64)), jnp.ones((1, 8, 1, 64)), jnp.arange(7))


def test_sinusoidal_module_adds_the_encoding():
    pe = pj.SinusoidalEmbedding(32, convention="fairseq")
    assert nnx.state(pe) == nnx.State({})
    x = jnp.asarray(RNG.standard_normal((2, 10, 32)).astype(np.float32))
    got = nnx.jit(lambda m, x: m(x, offset=5))(pe, x)
    enc = posenc.encode(np.arange(5, 15), 32, convention="fairseq")
    assert np.array_equal(np.asarray(got), np.asarray(x) + enc)
    pos = jnp.asarray(RNG.integers(0, 10**6, (2, 10)).astype(np.int32))
    assert np.array_equal(np.asarray(pe(x, pos)), np.asarray(x + pj.encode(pos, 32, convention="fairseq")))


def test_import_posenc_jax_leaves_flax_unloaded_until_a_module_is_asked_for():
    code = ("import sys, posenc.jax\nprint('flax' in sys.modules)\n"
            "posenc.jax.RotaryEmbedding\nprint('flax' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]


@pytest.mark.parametrize("cfg", [posenc.RopeConfig(64, rotary_dim=32, base=500000.0, layout="interleaved"),
                                 posenc.RopeConfig(128, base=5e6, sections=(24, 20, 20),
                                                   section_layout="interleaved")], ids=repr)
def test_rotary_module_built_from_a_spec_takes_every_setting_it_holds(cfg):
    whole = pj.RotaryEmbedding(cfg)
    assert whole.spec is cfg and whole.layout == cfg.layout and whole.rotary_dim == cfg.rotary_dim
    h = cfg.head_dim
    q = jnp.asarray(RNG.standard_normal((1, 6, 2, h)), jnp.float32)
    p = np.array([0, 5, 77, 4096, 2**20, 2**31 - 2], np.int32)
    pos = p if cfg.sections is None else np.stack([p, p // 2, p // 3], axis=-1)
    got = np.asarray(whole(q, q, jnp.asarray(pos))[0])
    want = jax.jit(lambda x, p: pj.apply_rope(x, p, spec=cfg))(q, jnp.asarray(pos)[:, None])
    assert np.array_equal(got.view(np.uint32), np.asarray(want).view(np.uint32))
    with pytest.raises(posenc.PosEncError, match=r"base=10\.0: part of the spec"):
        pj.RotaryEmbedding(cfg, base=10.0)
    with pytest.raises(posenc.PosEncError, match=r"layout='half': part of the spec"):  # the default, typed
        pj.RotaryEmbedding(cfg, layout="half")
