"""The JAX rows of posenc bench: what they time is the same rotation four ways (never their timings)."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np

from posenc.bench.jax_rows import IN_GRAPH_SIN, PLAIN, PLAIN_FOURIER, _fourier_programs, _programs, producers


def test_the_programs_rotate_alike():
    s, d = 64, 32
    progs = _programs(s, d)
    rng = np.random.default_rng(0)
    q = jnp.asarray(rng.standard_normal((1, s, 2, d), dtype=np.float32))
    pos = jnp.arange(s, dtype=jnp.int32)[None]
    tab = progs["table"]
    cos = jnp.concatenate([tab[:, 0], tab[:, 0]], -1)[None, :, None, :]
    sin = jnp.concatenate([tab[:, 1], tab[:, 1]], -1)[None, :, None, :]
    plain = progs["plain"](q, q, cos, sin)[0]
    in_graph = progs["in_graph"](q, q, pos)[0]
    gathered = progs["gathered"](q, q, pos)[0]
    assert np.array_equal(np.asarray(in_graph), np.asarray(gathered))  # the same exact rows, the same rotation
    np.testing.assert_allclose(np.asarray(plain), np.asarray(in_graph), rtol=1e-6, atol=1e-6)
    # the sources' formula: float32 angles p / base**(2i/d) and XLA's sin/cos, close at these small positions
    sources = progs["sources"](q, q, pos)[0]
    np.testing.assert_allclose(np.asarray(sources), np.asarray(in_graph), rtol=1e-4, atol=1e-4)


def test_quick_rows_name_every_method():
    rows = producers(quick=True)[0](1)
    assert [r.method for r in rows] == [PLAIN, "posenc.jax in-graph exact rows", "posenc.jax gathered rows",
                                        IN_GRAPH_SIN]
    assert rows[0].ratio == 1.0 and all(r.median_ms > 0 for r in rows)


def test_the_fourier_programs_give_the_same_features():
    progs = _fourier_programs()
    rng = np.random.default_rng(1)
    x = jnp.asarray(rng.uniform(-1, 1, (64, 3)).astype(np.float32))
    b = jnp.asarray(rng.normal(0, 1, (8, 3)).astype(np.float32))
    plain, exact = (np.asarray(f(x, b)) for f in progs.values())
    assert plain.shape == exact.shape == (64, 3 + 16) and np.array_equal(plain[:, :3], exact[:, :3])
    np.testing.assert_allclose(plain, exact, atol=2e-5)  # small phases: float32's formula is close here


def test_quick_fourier_rows():
    rows = producers(quick=True)[1](1)
    assert [r.method for r in rows] == [PLAIN_FOURIER, "posenc.jax fourier_features"]
    assert rows[0].ratio == 1.0 and all(r.median_ms > 0 for r in rows) and "traced" in rows[0].operation
