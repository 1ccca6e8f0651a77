"""The JAX rows of ``posenc bench``: RoPE on q and k under ``jax.jit`` on the CPU, beside the plain formula.

Three jit-compiled programs on the same q, k ``[b, s, n_h, h_d]`` (float32,
half layout), timed side by side:

- the plain ``x*cos + rotate_half(x)*sin`` with full-width tables passed in
  (the JAX users' formula; the ratio's denominator);
- posenc with the exact rows built in the graph from the positions
  (:mod:`posenc.jax._rows`), once per position for q, k and every head;
- posenc with gathered rows: an exact table (a constant) taken by positions;
- for context, the formula as MaxText and the flax gemma example run it, with
  ``jnp.sin``/``jnp.cos`` of float32 angles ``position / timescale`` in the
  same program (MaxText ``layers/embeddings.py`` ``RotaryEmbedding``; flax
  ``examples/gemma/positional_embeddings.py`` ``apply_rope``): XLA fuses the
  sine into each consumer, so it is evaluated for q, k and every head.

Targets (issue 22): in-graph at most 2x the plain formula, gathered at most 1.2x.
The in-graph rows cost a fixed ~1,300 integer operations per (position,
frequency) value, spread over the heads: with 16 heads of 128 they are below
the plain formula's time; with 4 heads of 64 (the quick shape) about 2-3.2x
(2-2.5x measured on an AVX-512 CPU, 2.4-3.2x on an AVX2-only one).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np

import jax

from ..rope import rope_table
from .measure import time_side_by_side
from .report import Row

__all__ = ["producers"]

PLAIN = "plain x*cos + rotate_half(x)*sin"
IN_GRAPH_SIN = "MaxText/gemma formula, jnp.sin/cos in the graph"


def _programs(s: int, d: int) -> dict[str, Any]:
    from ..jax.rope import cos_sin_rows, rope_frequencies, rotate

    freqs = rope_frequencies(d)
    table = jnp.asarray(rope_table(freqs, 0, s))  # [s, 2, d/2], the exact rows

    def half(x: jax.Array) -> jax.Array:
        return jnp.concatenate([-x[..., d // 2 :], x[..., : d // 2]], axis=-1)

    def plain(q: jax.Array, k: jax.Array, cos: jax.Array, sin: jax.Array) -> Any:
        return q * cos + half(q) * sin, k * cos + half(k) * sin

    def both(q: jax.Array, k: jax.Array, cos: jax.Array, sin: jax.Array) -> Any:
        cos, sin = cos[..., None, :], sin[..., None, :]
        return rotate(q, cos, sin, "half", d), rotate(k, cos, sin, "half", d)

    def in_graph(q: jax.Array, k: jax.Array, p: jax.Array) -> Any:
        return both(q, k, *cos_sin_rows(p, freqs))  # built once (posenc.jax._rows.computed_once)

    def gathered(q: jax.Array, k: jax.Array, p: jax.Array) -> Any:
        rows = jnp.take(table, p, axis=0)
        return both(q, k, rows[..., 0, :], rows[..., 1, :])

    def sources(q: jax.Array, k: jax.Array, p: jax.Array) -> Any:
        # timescale = base**(2i/d), angle = position / timescale in float32, then sin and cos
        timescale = 10000.0 ** (2 * jnp.arange(d // 2, dtype=jnp.float32) / d)
        angle = (p[..., None].astype(jnp.float32) / timescale)[..., None, :]
        sin, cos = jnp.sin(angle), jnp.cos(angle)

        def one(x: jax.Array) -> jax.Array:
            a, b = jnp.split(x, 2, axis=-1)
            return jnp.concatenate([a * cos - b * sin, b * cos + a * sin], axis=-1)

        return one(q), one(k)

    return {"plain": jax.jit(plain), "in_graph": jax.jit(in_graph), "gathered": jax.jit(gathered),
            "sources": jax.jit(sources), "table": table}


def _rope(b: int, s: int, h: int, d: int, min_repeats: int) -> Callable[[int], list[Row]]:
    def produce(repeats: int) -> list[Row]:
        # a sub-millisecond call on a 2-core machine: the median of 3 or 7 is noise (the quick shape's ratio
        # was seen anywhere from 1.7 to 2.9 with 3); a few hundred calls cost a fraction of a second
        repeats = max(repeats, min_repeats)
        progs = _programs(s, d)
        rng = np.random.default_rng(0)
        q = jnp.asarray(rng.standard_normal((b, s, h, d), dtype=np.float32))
        k = jnp.asarray(rng.standard_normal((b, s, h, d), dtype=np.float32))
        pos = jnp.broadcast_to(jnp.arange(s, dtype=jnp.int32), (b, s))
        tab = progs["table"]
        cos = jnp.concatenate([tab[:, 0], tab[:, 0]], -1)[None, :, None, :]
        sin = jnp.concatenate([tab[:, 1], tab[:, 1]], -1)[None, :, None, :]

        def run(name: str, *args: Any) -> Callable[[], Any]:
            return lambda: jax.block_until_ready(progs[name](*args))

        ms = time_side_by_side({
            PLAIN: run("plain", q, k, cos, sin),
            "posenc.jax in-graph exact rows": run("in_graph", q, k, pos),
            "posenc.jax gathered rows": run("gathered", q, k, pos),
            IN_GRAPH_SIN: run("sources", q, k, pos),
        }, repeats)
        op = f"JAX jit RoPE q,k [{b},{s},{h},{d}] f32 half"
        base = ms[PLAIN]
        return [Row(op, name, v, v / base, floor_ms=base) for name, v in ms.items()]

    return produce


PLAIN_FOURIER = "plain concat(x, cos 2πxBᵀ, sin 2πxBᵀ), float32"


def _fourier_programs() -> dict[str, Any]:
    from ..jax import fourier_features

    def plain(x: jax.Array, b: jax.Array) -> jax.Array:
        a = jnp.float32(2 * np.pi) * (x @ b.T)
        return jnp.concatenate([x, jnp.cos(a), jnp.sin(a)], axis=-1)

    def exact(x: jax.Array, b: jax.Array) -> jax.Array:
        return jnp.concatenate([x, fourier_features(x, b)], axis=-1)

    return {PLAIN_FOURIER: jax.jit(plain), "posenc.jax fourier_features": jax.jit(exact)}


def _fourier(n: int, m: int, min_repeats: int) -> Callable[[int], list[Row]]:
    """A NeRF-style input [x | γ(x)] with B traced (a Flax parameter): posenc's exact features beside the formula.

    No target ratio: the exact phase costs a few hundred integer operations
    per feature where the formula costs one float32 multiply-add per
    coordinate. The row is here for the regression it caught: XLA fused a
    concatenation of separately computed sines and cosines with the integer
    arithmetic and ran 600x slower than the same program's two outputs
    (:func:`posenc.jax.fields._dot_features`).
    """

    def produce(repeats: int) -> list[Row]:
        repeats = max(repeats, min_repeats)
        rng = np.random.default_rng(0)
        x = jnp.asarray(rng.uniform(-4, 4, (n, 3)).astype(np.float32))
        b = jnp.asarray(rng.normal(0, 3, (m, 3)).astype(np.float32))
        progs = _fourier_programs()

        def run(f: Any) -> Callable[[], Any]:
            return lambda: jax.block_until_ready(f(x, b))

        ms = time_side_by_side({k: run(f) for k, f in progs.items()}, repeats)
        op = f"JAX jit concat(x, Fourier features) x [{n},3] B [{m},3] traced"
        base = ms[PLAIN_FOURIER]
        return [Row(op, name, v, v / base, floor_ms=base) for name, v in ms.items()]

    return produce


def producers(*, quick: bool = False) -> list[Callable[[int], list[Row]]]:
    """Row producers for :func:`posenc.bench.run` (``extra=``)."""
    if quick:
        return [_rope(1, 512, 4, 64, min_repeats=301), _fourier(1024, 16, min_repeats=31)]
    return [_rope(1, 2048, 16, 128, min_repeats=21), _fourier(16384, 24, min_repeats=11)]
