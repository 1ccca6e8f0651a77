"""Each JAX codebase's convention equals its source formula, written here independently in float64.

The formulas are transcribed from the sources cited in posenc.jax.conventions
(MaxText, gemma, keras-hub, big_vision, the flax examples), evaluated in
float64 NumPy at positions where float64 is still exact to well below a
float32 ulp; posenc's exact float32 values must agree to float32 accuracy.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import jax
import posenc
from posenc.jax import conventions as cv

RNG = np.random.default_rng(2226)
X = RNG.standard_normal((2, 12, 3, 16))  # [B, S, N, H]
POS = RNG.integers(0, 4000, (2, 12))


def close(got, want, tol=3e-6):
    np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=tol, atol=tol)


def half_rotate(x, ang):  # pairs (i, i + H/2)
    n = x.shape[-1] // 2
    c, s = np.cos(ang), np.sin(ang)
    a, b = x[..., :n], x[..., n:]
    return np.concatenate([a * c - b * s, b * c + a * s], axis=-1)


def test_maxtext_rotary_embedding():
    h = X.shape[-1]
    timescale = 2.0 * (1e4 / 2.0) ** (2 * np.arange(h // 2) / h) * 1.5  # min·(max/min)**(2i/H)·linear factor
    want = half_rotate(X, POS[:, :, None, None] / timescale)
    got = jax.jit(lambda x, p: cv.maxtext_rope(x, p, min_timescale=2, max_timescale=1e4,
                                               rope_linear_scaling_factor=1.5))(jnp.asarray(X, jnp.float32), POS)
    close(got, want)


def _llama31(freq):  # Llama 3.1's rule, as MaxText's _apply_scaling_factor writes it
    wavelen = 2 * np.pi / freq
    smooth = (8192 / wavelen - 1) / (4 - 1)
    mid = (1 - smooth) * freq / 8 + smooth * freq
    return np.where(wavelen < 8192 / 4, freq, np.where(wavelen > 8192 / 1, freq / 8, mid))


def test_maxtext_llama_rotary_embedding_interleaved_and_scaled():
    h = X.shape[-1]
    freq = _llama31(1.0 / 500000.0 ** (2 * np.arange(h // 2) / h))
    ang = POS[:, :, None, None] * freq
    even, odd = X[..., 0::2], X[..., 1::2]
    want = np.empty_like(X)
    want[..., 0::2] = even * np.cos(ang) - odd * np.sin(ang)
    want[..., 1::2] = odd * np.cos(ang) + even * np.sin(ang)
    close(cv.maxtext_llama_rope(jnp.asarray(X, jnp.float32), POS, max_timescale=500000), want)


@pytest.mark.parametrize("proportion,scale", [(1.0, 1.0), (0.5, 8.0), (0.25, 1.0)])
def test_gemma_apply_rope(proportion, scale):
    h = X.shape[-1]
    angles = int(proportion * h // 2)
    timescale = np.concatenate([10000.0 ** (2.0 / h * np.arange(angles)), np.full(h // 2 - angles, np.inf)])
    want = half_rotate(X, POS[:, :, None, None] / timescale / scale)
    got = cv.gemma_apply_rope(jnp.asarray(X, jnp.float32), POS, base_frequency=10000, scale_factor=scale,
                              rope_proportion=proportion)
    close(got, want)
    with pytest.raises(posenc.PosEncError, match="scale_factor"):
        cv.gemma_apply_rope(X, POS, base_frequency=10000, scale_factor=0.5)


def test_keras_hub_rotary_embedding_with_axes_and_start_index():
    x = RNG.standard_normal((2, 16, 10))  # [B, H, S]: feature_axis=1, sequence_axis=2
    inv = 1.0 / 10000.0 ** (np.arange(0, 16, 2) / 16)
    ang = ((np.arange(10) + 7) / 4.0)[:, None] * inv  # positions / scaling_factor
    want = np.moveaxis(half_rotate(np.moveaxis(x, 1, -1), ang), -1, 1)
    got = cv.keras_hub_rotary_embedding(jnp.asarray(x, jnp.float32), 7, scaling_factor=4.0, sequence_axis=2,
                                        feature_axis=1)
    close(got, want)


@pytest.mark.parametrize("d", [16, 15])
def test_keras_hub_sine_position_encoding(d):
    x = np.zeros((2, 9, d), np.float32)
    j = np.arange(d)
    angle = (np.arange(9) + 3)[:, None] * (1 / 10000.0) ** (2 * (j // 2) / d)
    want = np.where(j % 2 == 0, np.sin(angle), np.cos(angle))
    close(cv.keras_hub_sine_position_encoding(x, 3)[0], want)


def test_big_vision_posemb_sincos_2d():
    h, w, width = 3, 5, 32
    y, x = np.mgrid[:h, :w]
    omega = 1.0 / 10000.0 ** (np.arange(width // 4) / (width // 4 - 1))
    xo, yo = x.reshape(-1)[:, None] * omega, y.reshape(-1)[:, None] * omega
    want = np.concatenate([np.sin(xo), np.cos(xo), np.sin(yo), np.cos(yo)], axis=1)[None]
    close(cv.big_vision_posemb_sincos_2d(h, w, width), want)


@pytest.mark.parametrize("d", [32, 33])
def test_flax_examples_sinusoidal_init(d):
    pe = np.zeros((300, d))
    div = 1.0 * np.exp(np.arange(d // 2) * (-np.log(10000.0 / 1.0) / (d // 2 - 1)))
    pe[:, : d // 2] = np.sin(np.arange(300)[:, None] * div)
    pe[:, d // 2 : 2 * (d // 2)] = np.cos(np.arange(300)[:, None] * div)
    got = cv.flax_sinusoidal_init(300)(jax.random.key(0), (1, 300, d))
    assert got.shape == (1, 300, d)
    close(got[0], pe)


def test_maxtext_kernel_converter_keeps_attention_scores():
    d_in, heads, h = 8, 2, 16
    wq, wk = RNG.standard_normal((d_in, heads, h)), RNG.standard_normal((d_in, heads, h))
    tokens = RNG.standard_normal((1, 6, d_in))
    pos = np.arange(6)[None]

    def scores(wq, wk, rope):
        q = rope(jnp.asarray(np.einsum("bsd,dnh->bsnh", tokens, wq), jnp.float32))
        k = rope(jnp.asarray(np.einsum("bsd,dnh->bsnh", tokens, wk), jnp.float32))
        return np.einsum("bqnh,bknh->bnqk", np.asarray(q, np.float64), np.asarray(k, np.float64))

    interleaved = scores(wq, wk, lambda x: cv.maxtext_llama_rope(x, pos, use_scale=False))
    as_hf = [cv.maxtext_qk_kernel(w, "interleaved", "half") for w in (wq, wk)]
    half = scores(*as_hf, lambda x: cv.maxtext_rope(x, pos))
    close(half, interleaved, 1e-4)
    wrong = scores(wq, wk, lambda x: cv.maxtext_rope(x, pos))  # maxtext#1774: the weights unpermuted
    assert np.abs(wrong - interleaved).max() > 1e-2
    back = cv.maxtext_qk_kernel(as_hf[0], "half", "interleaved")
    assert np.array_equal(back, wq)
