"""Relative biases in JAX: ALiBi and T5's buckets, with traced positions, exact in the graph."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jax.numpy as jnp
import numpy as np

import jax

from ..bias import alibi_bias as np_alibi_bias
from ..bias import t5_bucket_edges
from ..bias.alibi import AlibiSpec, alibi_convention
from ..bias.t5 import T5Buckets, T5Settings, t5_buckets, table_buckets
from ..errors import PosEncError, check_int
from ..exact.fixed import INT_LIMIT
from ..exact.fixed_product import times_int_f32
from ._rows import JAX_OPS
from .inputs import check_output, check_traced_positions
from .rope import _out_dtype, float_array

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["alibi_bias", "t5_bias", "t5_bucket"]


def alibi_bias(
    q_len: int,
    k_len: int,
    n_heads: int,
    *,
    offset: int = 0,
    positions: Any = None,
    convention: Any = "press",
    causal: bool = True,
    dtype: Any = jnp.float32,
) -> jax.Array:
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
    dt = _out_dtype(dtype)
    if positions is None:
        return jnp.asarray(np_alibi_bias(q_len, k_len, n_heads, offset=offset, convention=convention,
                                         causal=causal, dtype=np.float32)).astype(dt)
    spec = AlibiSpec(q_len, k_len, n_heads, offset, convention, causal)  # the NumPy form's checks, once
    q, k, off, conv, slopes, causal = spec.q_len, spec.k_len, spec.offset, spec.convention, spec.slopes, spec.causal
    spec.check_positions(positions)
    kp = check_traced_positions(positions)
    if np.dtype(kp.dtype).kind != "i":
        raise PosEncError(f"positions for the in-graph ALiBi bias must be integers (int32), got dtype {kp.dtype}")
    if kp.ndim not in (1, 2) or kp.shape[-1] != k:
        raise PosEncError(f"positions must be [k_len] or [b, k_len] with k_len = {k}, got shape {tuple(kp.shape)}")
    # the bias, its coefficients and the heads' rows before they are stacked
    check_output((*kp.shape[:-1], len(slopes), q, k), "ALiBi bias", dtype=dt,
                 work=(2 * len(slopes) + 1) * 4 * int(np.prod(kp.shape[:-1], dtype=object)) * q * k)
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
    return out.astype(dt)


def t5_bucket(
    relative_position: Any, *, spec: T5Buckets | None = None, **settings: Unpack[T5Settings],
) -> jax.Array:
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
    cfg = t5_buckets(spec, "posenc.jax.t5_bucket", **settings)
    rel = check_traced_positions(relative_position, "relative_position")
    if np.dtype(rel.dtype).kind != "i":
        raise PosEncError(f"relative_position must be integers (key − query), got dtype {rel.dtype}")
    zero = jnp.zeros_like(rel)
    return _bucket_of(cfg, rel, zero)


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


def t5_bias(
    weights: Any,
    q_len: int,
    k_len: int,
    *,
    offset: int = 0,
    q_positions: Any = None,
    k_positions: Any = None,
    bidirectional: bool = T5Buckets.bidirectional,
    max_distance: int = T5Buckets.max_distance,
) -> jax.Array:
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
    w = float_array(weights, "weights")
    if w.ndim != 2 or 0 in w.shape:
        raise PosEncError(f"weights must be [num_buckets, n_heads], got shape {tuple(w.shape)}")
    q = check_int(q_len, "q_len", minimum=1, maximum=2**31 - 1)
    k = check_int(k_len, "k_len", minimum=1, maximum=2**31 - 1)
    # the bias [n_heads, q, k] and its int32 buckets: refused at once if no machine could hold them
    check_output((w.shape[1], q, k), "T5 bias", work=q * k * 4)
    qp = jnp.arange(q, dtype=jnp.int32) + check_int(offset, "offset") if q_positions is None else q_positions
    kp = jnp.arange(k, dtype=jnp.int32) if k_positions is None else k_positions
    qp, kp = check_traced_positions(qp, "q_positions"), check_traced_positions(kp, "k_positions")
    if qp.shape != (q,) or kp.shape != (k,):
        raise PosEncError(f"q_positions and k_positions must be [{q}] and [{k}], got {qp.shape} and {kp.shape}")
    for name, pos in (("q_positions", qp), ("k_positions", kp)):
        if np.dtype(pos.dtype).kind != "i":
            raise PosEncError(f"{name} must be integers (positions), got dtype {pos.dtype}")
    cfg = table_buckets(w.shape[0], bidirectional, max_distance)
    buckets = _bucket_of(cfg, kp[None, :], qp[:, None])  # the offsets j − i, never wrapped
    return jnp.moveaxis(jnp.take(w, buckets, axis=0), -1, 0)
