"""Every public name of posenc.jax (and its conventions) gives the same bits called eagerly and under jax.jit.

The rows are integer code, the same anywhere; the float arithmetic around
them (the rotation, x + PE) is where XLA could round otherwise inside a
fused program than op by op (FMA contraction, which the rotation keeps out:
tests/jax/test_jax_rotation_bits.py holds it to NumPy's bits), so every name
is called both ways on traced arguments and compared bit for bit, signs of
zeros included.
A new name in ``__all__`` fails :func:`test_every_name_has_a_case` until it
has one.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np
import pytest

import jax
import posenc
import posenc.jax as pj
import posenc.jax.conventions as jc

RNG = np.random.default_rng(77)
_P = jnp.asarray(RNG.integers(0, 2**31 - 1, 48).astype(np.int32))  # [s]
_T = jnp.asarray(RNG.uniform(0, 1000, 48).astype(np.float32))  # timesteps
_X = jnp.asarray(RNG.standard_normal((2, 48, 4, 64)).astype(np.float32))  # [b, s, n_h, h_d]
_C = jnp.asarray(RNG.uniform(-40, 40, (48, 2)).astype(np.float32))  # 2-D coordinates
_B = jnp.asarray((RNG.standard_normal((16, 2)) * 10).astype(np.float32))
_W = jnp.asarray(RNG.standard_normal((32, 4)).astype(np.float32))  # T5 bias weights [buckets, heads]


def _rows(x: jax.Array, cos: jax.Array, sin: jax.Array) -> jax.Array:
    return pj.rotate(x, cos[None, :, None, :], sin[None, :, None, :], "interleaved", 64)


#: name -> (function of traced arrays, its arguments)
CASES: dict[str, tuple[Any, tuple[Any, ...]]] = {
    "RotaryEmbedding": (lambda q, p: pj.RotaryEmbedding(64, scaling=posenc.YaRN(4.0, 4096))(q, q + 1, p[None]),
                        (_X, _P)),
    "SinusoidalEmbedding": (lambda x, p: pj.SinusoidalEmbedding(64)(x[:, :, 0], p), (_X, _P)),
    "alibi_bias": (lambda p: pj.alibi_bias(48, 48, 4) + 0 * p[0].astype(jnp.float32), (_P,)),
    "apply_rope": (lambda x, p: pj.apply_rope(x, p[:, None], scaling=posenc.Llama3(8.0, 1.0, 4.0, 8192)), (_X, _P)),
    "encode": (lambda p: pj.encode(p, 64), (_P,)),
    "encode_nd": (lambda c: pj.encode_nd(c, 64, convention="mae"), (_C,)),
    "fourier_features": (lambda c, b: pj.fourier_features(c, b), (_C, _B)),
    "rope_frequencies": (lambda p: pj.rope_cos_sin(p, pj.rope_frequencies(64, base=500000.0).rotary_dim)[0], (_P,)),
    "nerf_encoding": (lambda c: pj.nerf_encoding(c / 64, 10), (_C,)),
    "positions": (lambda p, t: (pj.positions(p), pj.positions(t)), (_P, _T)),
    "rope_cos_sin": (lambda p: pj.rope_cos_sin(p, 64, scaling=posenc.NTK(8.0)), (_P,)),
    "rotate": (lambda x, p: _rows(x, *pj.rope_cos_sin(p, 64)), (_X, _P)),
    "t5_bias": (lambda w: pj.t5_bias(w, 48, 48), (_W,)),
    "t5_bucket": (lambda p: pj.t5_bucket(p - 2**30), (_P,)),
    "table": (lambda p: pj.table(48, 64) + 0 * p[0].astype(jnp.float32), (_P,)),
    "timestep_embedding": (lambda t: pj.timestep_embedding(t, 64, convention="flux"), (_T,)),
    "big_vision_posemb_sincos_2d": (lambda p: jc.big_vision_posemb_sincos_2d(6, 8, 64) + 0 * p[0], (_P,)),
    "flax_sinusoidal_init": (lambda p: jc.flax_sinusoidal_init(48)(None, (1, 48, 64)) + 0 * p[0], (_P,)),
    "gemma_apply_rope": (lambda x, p: jc.gemma_apply_rope(x, p[None], base_frequency=10_000, scale_factor=8.0,
                                                          rope_proportion=0.5), (_X, _P)),
    "keras_hub_rotary_embedding": (lambda x, p: jc.keras_hub_rotary_embedding(x[:, :, 0], p[0] % 1000), (_X, _P)),
    "keras_hub_sine_position_encoding": (lambda x, p: jc.keras_hub_sine_position_encoding(x[0, :, 0], p[0] % 99),
                                         (_X, _P)),
    "maxtext_llama_rope": (lambda x, p: jc.maxtext_llama_rope(x, p[None]), (_X, _P)),
    "maxtext_qk_kernel": (lambda x, p: jc.maxtext_qk_kernel(np.arange(64.0).reshape(1, 1, 64), "interleaved",
                                                            "half") + 0 * x[0, 0, 0, 0], (_X, _P)),
    "maxtext_rope": (lambda x, p: jc.maxtext_rope(x, p[None]), (_X, _P)),
}


def test_every_name_has_a_case():
    assert set(pj.__all__) | set(jc.__all__) == set(CASES)


def _bits(tree: Any) -> list[np.ndarray]:
    return [np.asarray(leaf, np.float32).view(np.uint32) if np.asarray(leaf).dtype.kind == "f"
            else np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(tree)]


@pytest.mark.parametrize("name", sorted(CASES))
def test_eager_and_jit_give_the_same_bits(name):
    fn, args = CASES[name]
    eager, compiled = _bits(fn(*args)), _bits(jax.jit(fn)(*args))
    assert len(eager) == len(compiled)
    for e, c in zip(eager, compiled, strict=True):
        assert e.shape == c.shape and np.array_equal(e, c), int((e != c).sum())


@pytest.mark.parametrize("name", sorted(CASES))
def test_concrete_arrays_closed_over_by_jit_are_checked_at_trace_time(name):
    # a model holding a jnp constant (a frequency matrix B, a position table) and calling posenc inside its jitted
    # step: under the trace, jnp operations on that constant are staged, so a check that read its values on the
    # host (bool(ok.all())) raised TracerBoolConversionError. Tracing is where it failed: no XLA compile needed
    fn, args = CASES[name]
    eager = jax.tree_util.tree_leaves(fn(*args))
    traced = jax.tree_util.tree_leaves(jax.eval_shape(lambda: fn(*args)))
    assert [(e.shape, e.dtype) for e in eager] == [(t.shape, t.dtype) for t in traced]
