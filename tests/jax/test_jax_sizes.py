"""posenc.jax sizes its output (and working arrays) before any work, eagerly and under jit: refused before any row.

Before, ``pj.timestep_embedding(jnp.zeros(10**6, jnp.int32), 65536)`` ran
out of memory after 4.7 s, ``nerf_encoding`` of (10^7, 64) after 22 s, and
reading a huge Fourier-feature result once aborted the process (issue 31).
The declarations are held against what XLA itself reports it needs
(``memory_analysis`` of the compiled program: temporaries and output), as
tests/test_memory.py holds the NumPy functions' against tracemalloc.
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

import jax
import posenc.jax as pj
import posenc.jax.timesteps as pj_timesteps
from posenc import PosEncError
from posenc.support import memory

GIB = 2**30


def spec(shape, dtype=jnp.float32):
    return jax.ShapeDtypeStruct(shape, dtype)  # traced at its shape: nothing allocated


def _never(*args, **kwargs):
    raise AssertionError("a row was computed before the size was refused")


def test_the_sweeps_calls_are_refused_before_any_row_is_computed(monkeypatch):
    # before: 4.7 s and 22 s of work, then out of memory; now the row builder is never reached (eval_shape
    # traces at the shapes alone: nothing is allocated)
    monkeypatch.setattr(memory, "_memory", lambda: 16 * GIB)  # the same verdict on any machine
    monkeypatch.setattr(pj_timesteps, "sincos_rows", _never)
    t = jnp.zeros(10**6, jnp.int32)
    with pytest.raises(PosEncError, match=r"embedding of shape \(1000000, 65536\) in float32 needs 244\.1 GiB"):
        pj.timestep_embedding(t, 65536)
    with pytest.raises(PosEncError, match=r"timestep embedding of shape \(1000000, 65536\)"):
        jax.jit(lambda t: pj.timestep_embedding(t, 65536))(t)
    with pytest.raises(PosEncError, match=r"NeRF encoding of shape \(10000000, 1344\)"):
        jax.eval_shape(lambda x: pj.nerf_encoding(x, 10), spec((10**7, 64)))
    with pytest.raises(PosEncError, match=r"Fourier features of shape \(1000000, 2048\)"):
        jax.eval_shape(pj.fourier_features, spec((10**6, 64)), spec((1024, 64)))


@pytest.mark.parametrize("call", [
    lambda: jax.eval_shape(lambda p: pj.encode(p, 4096), spec((10**7,), jnp.int32)),
    lambda: jax.eval_shape(lambda p: pj.rope_cos_sin(p, 4096), spec((10**7,), jnp.int32)),
    lambda: jax.eval_shape(lambda c: pj.encode_nd(c, 4096), spec((10**7, 2), jnp.int32)),
    lambda: jax.eval_shape(lambda p: pj.alibi_bias(4096, 4096, 64, positions=p), spec((8, 4096), jnp.int32)),
    lambda: jax.eval_shape(lambda x, p: pj.apply_rope(x, p), spec((64, 2**20, 128)), spec((2**20,), jnp.int32)),
    lambda: pj.t5_bias(jnp.ones((32, 64)), 2**16, 2**16),
], ids=["encode", "rope_cos_sin", "encode_nd", "alibi_bias", "apply_rope", "t5_bias"])
def test_every_sized_entry_point_refuses_by_name(monkeypatch, call):
    monkeypatch.setattr(memory, "_memory", lambda: 8 * GIB)
    with pytest.raises(PosEncError, match=r"of shape \(.*needs .* more than this machine's 8\.0 GiB"):
        call()


#: name -> (function, its arguments): moderate shapes whose compiled programs XLA can measure
MEASURED = {
    "timestep_embedding": (lambda t: pj.timestep_embedding(t, 256), (jnp.linspace(0, 1, 4096),)),
    "encode": (lambda p: pj.encode(p, 256), (jnp.arange(4096),)),
    "rope_cos_sin": (lambda p: pj.rope_cos_sin(p, 256), (jnp.arange(4096),)),
    "nerf_encoding": (lambda x: pj.nerf_encoding(x, 10), (jnp.ones((2048, 64)),)),
    "fourier_features d=3": (pj.fourier_features, (jnp.ones((2048, 3)), jnp.ones((128, 3)))),
    "fourier_features d=64": (pj.fourier_features, (jnp.ones((512, 64)), jnp.ones((64, 64)))),
    "encode_nd": (lambda c: pj.encode_nd(c, 256), (jnp.ones((2048, 2), jnp.int32),)),
    "apply_rope": (pj.apply_rope, (jnp.ones((4, 2048, 128)), jnp.arange(2048))),
    "alibi_bias": (lambda p: pj.alibi_bias(64, 2048, 8, positions=p), (jnp.arange(2048),)),
}


@pytest.mark.parametrize("name", sorted(MEASURED))
def test_the_declared_size_covers_what_xla_needs(monkeypatch, name):
    fn, args = MEASURED[name]
    analysis = jax.jit(fn).lower(*args).compile().memory_analysis()
    need = analysis.temp_size_in_bytes + analysis.output_size_in_bytes
    monkeypatch.setattr(memory, "_memory", lambda: need - 1)
    with pytest.raises(PosEncError, match="more than this machine's"):
        fn(*args)
    monkeypatch.setattr(memory, "_memory", lambda: 6 * need)  # the declarations are not wildly above the truth
    assert np.asarray(jax.tree_util.tree_leaves(fn(*args))[0]).size
