"""posenc.jax's rotation gives the NumPy (and torch) apply_rope's bits, eagerly and under jit: no FMA contraction.

XLA contracts ``a*cos - b*sin`` into FMAs inside a fusion (one rounding
where NumPy rounds twice): before the fix 75 of 384 values of a [6, 64]
rotation were 1–2 float32 ulp off NumPy's, though the rows were bit-equal
(issue 36). The rotation keeps every product rounded on its own
(:func:`posenc.jax.rope._rounded`); these tests hold every value to NumPy's
bits, signs of zeros included.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import jax
import posenc
import posenc.jax as pj
import posenc.jax.conventions as jc
import posenc.torch as pt

RNG = np.random.default_rng(36)


def bits(a):
    return np.asarray(a, np.float32).view(np.uint32)


def mismatches(got, want):
    return int((bits(got) != bits(want)).sum())


@pytest.mark.parametrize(("layout", "rotary_dim"), [("half", None), ("half", 32), ("interleaved", None),
                                                    ("interleaved", 32), ("head_half", None)])
def test_apply_rope_is_numpys_bits_eager_and_jit(layout, rotary_dim):
    x = RNG.standard_normal((3, 16, 64)).astype(np.float32)  # [n_h, s, h_d]
    pos = RNG.integers(0, 2**31 - 1, 16).astype(np.int32)
    kw = {"layout": layout, "rotary_dim": rotary_dim, "scaling": posenc.YaRN(4.0, 4096)}
    want = posenc.apply_rope(x, pos.astype(np.int64), **kw)
    eager = pj.apply_rope(x, pos, **kw)
    compiled = jax.jit(lambda x, p: pj.apply_rope(x, p, **kw) * 2.0)(x, pos)  # amid other work, fused
    assert mismatches(eager, want) == 0
    assert mismatches(np.asarray(compiled) / 2, want) == 0


def test_the_sweeps_case_and_torch_agree_bit_for_bit():
    x = RNG.standard_normal((6, 64)).astype(np.float32)
    pos = RNG.integers(0, 2**31 - 1, 6).astype(np.int32)
    want = posenc.apply_rope(x, pos.astype(np.int64))
    import torch

    rope = pt.RotaryEmbedding(64)
    got_t = rope(torch.from_numpy(x)[None, None], torch.from_numpy(x)[None, None],
                 positions=torch.from_numpy(pos.astype(np.int64)))[0][0, 0].numpy()
    assert mismatches(got_t, want) == 0  # the reference the JAX form is held to: torch's bits are NumPy's
    assert mismatches(jax.jit(pj.apply_rope)(x, pos), want) == 0  # 75 of 384 before the fix


def test_modules_and_conventions_rotate_with_numpys_bits():
    q = RNG.standard_normal((1, 12, 2, 64)).astype(np.float32)  # [b, s, n_h, h_d]
    pos = RNG.integers(0, 10**7, 12).astype(np.int32)
    want = posenc.apply_rope(np.moveaxis(q, 2, 1), pos.astype(np.int64), base=500000.0)  # [b, n_h, s, h_d]
    got, _ = jax.jit(lambda q, p: pj.RotaryEmbedding(64, base=500000.0)(q, q, p))(q, pos)
    assert mismatches(np.moveaxis(np.asarray(got), 2, 1), want) == 0
    got = jax.jit(lambda q, p: jc.maxtext_rope(q, p[None], max_timescale=500000.0))(q, pos)
    assert mismatches(np.moveaxis(np.asarray(got), 2, 1), want) == 0


def test_the_rotation_keeps_its_derivative_and_nan():
    x = jnp.asarray(RNG.standard_normal((4, 8)).astype(np.float32))
    pos = jnp.arange(4, dtype=jnp.int32)
    g = jax.grad(lambda x: jnp.sum(pj.apply_rope(x, pos) ** 2))(x)  # a rotation keeps norms: d|Rx|²/dx = 2x
    np.testing.assert_allclose(np.asarray(g), 2 * np.asarray(x), rtol=1e-5, atol=1e-6)
    cos, sin = jnp.full(4, jnp.nan), jnp.zeros(4)
    assert np.isnan(np.asarray(pj.rotate(jnp.ones((1, 8)), cos, sin, "half", 8))).all()
