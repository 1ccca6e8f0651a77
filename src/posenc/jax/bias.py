"""Relative biases in JAX: ALiBi and T5's buckets, with traced positions, exact in the graph."""

from __future__ import annotations

import math
from typing import Any

import jax.numpy as jnp
import numpy as np

import jax

from ..bias import functions
from ..bias.alibi import alibi_bias as numpy_alibi_bias
from ..bias.alibi import alibi_convention
from ..bias.numpy_backend import NUMPY_BIAS
from ..bias.spec import AlibiSpec, T5Buckets
from ..bias.t5 import t5_bias as numpy_t5_bias
from ..bias.t5 import t5_bucket as numpy_t5_bucket
from ..bias.t5 import t5_bucket_edges
from ..errors import PosEncError, check_int
from ..exact.fixed import INT_LIMIT
from ..exact.fixed_product import times_int_f32
from ..support.memory import shape_of
from ..support.signatures import parameters_of
from ._rows import JAX_OPS
from .inputs import check_output, check_traced_positions
from .rope import _out_dtype, float_array

__all__ = ["JAX_BIAS", "JaxBias", "alibi_bias", "t5_bias", "t5_bucket"]


class JaxBias:
    """The :class:`~posenc.bias.backend.BiasBackend` primitives over JAX arrays, traced or not.

    Positions and offsets are integers read by :mod:`posenc.jax.inputs`' rule
    (int32, traced or concrete). ALiBi without positions is NumPy's bias, a
    constant; with them each value m_h·t is formed exactly in 32-bit integers
    and rounded as NumPy rounds it. T5's bucket is the last static edge
    (:func:`posenc.t5_bucket_edges`) the distance reaches: comparisons only.
    """

    name = "jax"

    def alibi_dtype(self, dtype: Any) -> Any:
        return _out_dtype(dtype)

    def check_alibi(self, spec: AlibiSpec, positions: Any, dtype: Any) -> None:
        if positions is None:  # NumPy's bias, in float32, made a constant
            NUMPY_BIAS.check_alibi(spec, None, np.dtype(np.float32))
            return
        shape = shape_of(positions)
        if shape is not None and len(shape) in (1, 2):  # else the positions' check names them
            # the bias, its coefficients and the heads' rows before they are stacked
            h, q, k, batch = spec.n_heads, spec.q_len, spec.k_len, shape[:-1]
            check_output((*batch, h, q, k), "ALiBi bias", dtype=dtype,
                         work=(2 * h + 1) * 4 * math.prod(batch) * q * k)

    def alibi_positions(self, positions: Any, spec: AlibiSpec) -> jax.Array:
        kp = check_traced_positions(positions)
        if np.dtype(kp.dtype).kind != "i":
            raise PosEncError(f"positions for the in-graph ALiBi bias must be integers (int32), got dtype {kp.dtype}")
        if kp.ndim not in (1, 2) or kp.shape[-1] != spec.k_len:
            raise PosEncError(f"positions must be [k_len] or [b, k_len] with k_len = {spec.k_len}, "
                              f"got shape {tuple(kp.shape)}")
        return kp

    def alibi_rows(self, spec: AlibiSpec, positions: jax.Array | None, dtype: Any) -> jax.Array:
        if positions is None:
            return jnp.asarray(NUMPY_BIAS.alibi_rows(spec, None, np.dtype(np.float32))).astype(dtype)
        kp = positions
        q, k, off, conv, slopes, causal = spec.q_len, spec.k_len, spec.offset, spec.convention, spec.slopes, spec.causal
        qp = kp[..., off : off + q]
        t = conv.coefficient(qp[..., :, None], kp[..., None, :], kp[..., -1:, None], bool(causal))
        t = jnp.broadcast_to(t, (*kp.shape[:-1], q, k))
        bad = None
        if kp.dtype != jnp.int32:  # a traced int64 (x64 on): NaN where the coefficient leaves int32
            bad, t = (t < -INT_LIMIT) | (t >= INT_LIMIT), t.astype(jnp.int32)
        out = jnp.stack([times_int_f32(JAX_OPS, t, float(m)) for m in slopes], axis=-3)
        if not causal and type(conv).coefficient is type(alibi_convention("press")).coefficient:
            out = jnp.where(t[..., None, :, :] == 0, -0.0, out)  # NumPy's −|0.0| is −0.0
        if bad is not None:
            out = jnp.where(bad[..., None, :, :], jnp.nan, out)
        if causal:
            future = np.arange(k)[None, :] > np.arange(off, off + q)[:, None]
            out = jnp.where(jnp.asarray(future), -jnp.inf, out)
        return out.astype(dtype)

    def check_buckets(self, relative_position: Any) -> None:
        shape = shape_of(relative_position)
        if shape is not None:  # the int32 buckets and the unsigned distances beside them
            check_output(shape, "t5_bucket output", dtype=jnp.int32, work=3 * 4 * math.prod(shape))

    def bucket_offsets(self, value: Any, name: str, what: str) -> jax.Array:
        rel = check_traced_positions(value, name)
        if np.dtype(rel.dtype).kind != "i":
            raise PosEncError(f"{name} must be integers ({what}), got dtype {rel.dtype}")
        return rel

    def buckets(self, spec: T5Buckets, offsets: jax.Array) -> jax.Array:
        return _bucket_of(spec, offsets, jnp.zeros_like(offsets))

    def t5_weights(self, weights: Any) -> jax.Array:
        w = float_array(weights, "weights")
        if w.ndim != 2 or 0 in w.shape:
            raise PosEncError(f"weights must be [num_buckets, n_heads], got shape {tuple(w.shape)}")
        return w

    def check_t5(self, weights: jax.Array, q_len: int, k_len: int) -> None:
        q = check_int(q_len, "q_len", minimum=1, maximum=2**31 - 1)  # int32 positions reach them
        k = check_int(k_len, "k_len", minimum=1, maximum=2**31 - 1)
        # the bias [n_heads, q, k] and its int32 buckets: refused at once if no machine could hold them
        check_output((weights.shape[1], q, k), "T5 bias", work=q * k * 4)

    def t5_positions(self, value: Any, first: int, length: int, name: str, weights: jax.Array) -> jax.Array:
        pos = check_traced_positions(jnp.arange(length, dtype=jnp.int32) + first if value is None else value, name)
        if np.dtype(pos.dtype).kind != "i":
            raise PosEncError(f"{name} must be integers (positions), got dtype {pos.dtype}")
        return pos

    def t5_lookup(self, weights: jax.Array, spec: T5Buckets, q_positions: jax.Array, k_positions: jax.Array,
                  offset: int) -> jax.Array:
        buckets = _bucket_of(spec, k_positions[None, :], q_positions[:, None])  # the offsets j − i, never wrapped
        return jnp.moveaxis(jnp.take(weights, buckets, axis=0), -1, 0)


#: the JAX primitives (no state: one is enough)
JAX_BIAS = JaxBias()


@parameters_of(numpy_alibi_bias, dtype=jnp.float32)
def alibi_bias(*args: Any, **kwargs: Any) -> jax.Array:
    """The ALiBi bias ``[…, n_heads, q_len, k_len]`` (:func:`posenc.alibi_bias`), positions traced.

    Without ``positions`` everything is static and the bias is the NumPy
    one, a constant. With int32 ``positions`` ``[k_len]`` or ``[b, k_len]``
    (BLOOM's left-padded rows), each value is m_h·t formed exactly in 32-bit
    integers and rounded as NumPy rounds it (float64, then float32): the same
    bits, for |t| < 2**31.

    Raises:
        PosEncError: for static arguments the NumPy function refuses,
            positions that are not integers ``[k_len]`` or ``[b, k_len]``, a
            positions array of another framework (a torch tensor), a float64
            JAX array (``jax_enable_x64`` on), concrete positions (NumPy,
            Python, a JAX array outside a trace) outside int32, NaN, infinite,
            at or past 2**31 or not float32 values, or an output larger than
            the device's memory, before any work.
            Under ``jax.jit`` JAX itself converts a NumPy int64 argument to
            int32 by keeping its low 32 bits (2**31 + 5 arrives as
            −2**31 + 5), and a float64 one to float32, silently, before posenc
            sees it: pass :func:`posenc.jax.positions` of it instead, which
            checks it.

    >>> alibi_bias(2, 2, 1, positions=jnp.array([0, 1])).tolist()
    [[[0.0, -inf], [-0.00390625, 0.0]]]
    """
    return functions.alibi_bias(JAX_BIAS, *args, **kwargs)


@parameters_of(numpy_t5_bucket)
def t5_bucket(*args: Any, **kwargs: Any) -> jax.Array:
    """T5's bucket of each traced offset ``j − i`` (:func:`posenc.t5_bucket`), int32, the same integers.

    T5's bucket is a non-decreasing function of the distance, so it is the
    last static edge (:func:`posenc.t5_bucket_edges`) the distance reaches:
    comparisons only, no float log in the graph.

    Raises:
        PosEncError: for settings the NumPy function refuses, offsets that are
            not integers, of another framework, or (concrete) outside int32,
            before any work (a traced int64 offset, ``jax_enable_x64`` on, is
            bucketed exactly).
            Under ``jax.jit`` JAX itself converts a NumPy int64 argument to
            int32 by keeping its low 32 bits (2**31 + 5 arrives as
            −2**31 + 5), and a float64 one to float32, silently, before posenc
            sees it: pass :func:`posenc.jax.positions` of it instead, which
            checks it.

    >>> t5_bucket(jnp.array([-1, 0, 1, -8, -12, -128])).tolist()
    [1, 0, 17, 8, 9, 15]
    """
    return functions.t5_bucket(JAX_BIAS, *args, **kwargs)


def _bucket_of(cfg: T5Buckets, k: jax.Array, q: jax.Array) -> jax.Array:
    """The bucket of each offset ``k − q`` (int32 or traced int64, broadcast), its distance formed unsigned.

    The difference of two int32 positions can pass int32 (2**31 − 1 − (−2**31)); its magnitude is taken in
    uint32 (uint64), where the wrapped difference of the two's-complement words is exact, so no offset wraps.
    """
    edges = t5_bucket_edges(bidirectional=cfg.bidirectional, num_buckets=cfg.num_buckets,
                            max_distance=cfg.max_distance)
    wide = jnp.int64 in (k.dtype, q.dtype)  # traced int64 (x64 on): every distance in uint64, exactly
    unsigned, top = (jnp.uint64, 2**64) if wide else (jnp.uint32, 2**32)
    ku, qu = k.astype(unsigned), q.astype(unsigned)
    after, before = k > q, k < q
    # distances unsigned (|−2**31| = 2**31 fits; an int32 abs would wrap, and XLA may assume it does not)
    if cfg.bidirectional:
        d, base = jnp.where(before, qu - ku, ku - qu), jnp.where(after, cfg.per_direction, 0)
    else:
        d, base = jnp.where(before, qu - ku, jnp.zeros_like(ku - qu)), jnp.zeros(after.shape, jnp.int32)
    bucket = jnp.zeros(d.shape, jnp.int32)
    for b, edge in enumerate(edges.tolist()):
        if b and 0 <= edge < top:  # -1: a bucket no distance reaches; >= top: none an offset of rel's dtype reaches
            bucket = jnp.where(d >= jnp.asarray(edge, dtype=unsigned), b, bucket)
    return (base + bucket).astype(jnp.int32)


@parameters_of(numpy_t5_bias)
def t5_bias(*args: Any, **kwargs: Any) -> jax.Array:
    """T5's relative attention bias ``[n_heads, q_len, k_len]``: ``weights[bucket(j − i)]``.

    Args:
        weights: ``[num_buckets, n_heads]``, the learned table (HF
            ``relative_attention_bias.weight``; a Flax ``nn.Embed``'s ``embedding``).
        q_len, k_len: static lengths; query r at position ``offset + r``, key j at j,
            unless ``q_positions`` ``[q_len]`` / ``k_positions`` ``[k_len]`` (int32, traced) are given.
        bidirectional, max_distance: as :func:`t5_bucket`; num_buckets is weights' first axis.

    Raises:
        PosEncError: for weights that are not ``[num_buckets, n_heads]``
            floats, bad lengths or settings, q/k positions not of their
            lengths, positions :mod:`posenc.jax.inputs` refuses, or an output larger
            than the device's memory, before any work (under ``jax.jit``,
            which narrows int64 and float64 arguments itself, pass
            :func:`posenc.jax.positions`).

    >>> t5_bias(jnp.arange(64.0).reshape(32, 2), 1, 3)[0].tolist()
    [[0.0, 34.0, 36.0]]
    """
    return functions.t5_bias(JAX_BIAS, *args, **kwargs)
