"""T5's relative position buckets (Raffel et al. 2020, arXiv:1910.10683, §2.1).

Each head learns one scalar per *bucket* of the offset ``j − i`` (key minus
query, "memory position minus query position"), added to the attention score.
Small distances get a bucket each; beyond ``max_exact`` the buckets grow
logarithmically up to ``max_distance``, past which every offset shares the
last bucket. With ``bidirectional`` (the encoder) half of the buckets serve
keys after the query (``j − i > 0``), half the rest; otherwise (the decoder)
keys after the query all fall in bucket 0, which a causal mask hides anyway.

The formula, from mesh-tensorflow's ``_relative_position_bucket``
(``mesh_tensorflow/transformer/transformer_layers.py``) as HF transcribes
it (``models/t5/modeling_t5.py``, ``T5Attention._relative_position_bucket``)::

    n = num_buckets (halved when bidirectional), e = n // 2
    bucket(d) = d                                            for d < e
              = min(n − 1, e + int(log(float32(d) / e)
                                   / float32(log(max_distance / e)) * (n − e)))

**The arithmetic is float32** (``relative_position.float()``, then float32
log, division and product, truncated toward zero), and the rounding can
decide a bucket where the true quotient is an integer: with 18 buckets and
``max_distance=128``, bidirectional, offset −8 is bucket 5 in float32 (and
exactly) but 4 in float64. posenc repeats T5's float32 steps: IEEE division
and product, and the logarithms correctly rounded (``log(x)`` to float32,
``log(max_distance/max_exact)`` to float64 then float32) by posenc's own
arithmetic (:func:`posenc.exact.power.log_float32`), not the platform's
libm, so the buckets are the same on every machine. Its buckets
equal HF's on every offset of T5's own settings and of the many tested
(``tests/bias/test_t5_bucket.py``, millions of offsets each).

One caveat, measured: torch's float32 ``log`` is not correctly rounded on
every CPU and build (MKL's or Sleef's, chosen by the CPU's capability), and
at an offset where the exact quotient is an integer its last bit can tip the
bucket the other way. A sweep of 145,098 settings (198.6 million offsets) on
one machine found 42 such offsets, in settings such as 34 buckets with
``max_distance=27`` (offset −12: HF 11 there, posenc 10); on another (torch
2.13, AVX-512) HF agreed with posenc at all of them. T5's published settings
(32 buckets, 128 or 256) have none. There the answer depends on the
platform's log, so no single rule reproduces "T5" everywhere; posenc's is
the correctly rounded one, the same on every machine.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from . import functions
from .numpy_backend import NUMPY_BIAS
from .spec import T5Buckets, T5Settings, t5_buckets, table_buckets

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's from Python 3.11; only read by the type checker

__all__ = ["T5Buckets", "T5Settings", "t5_bias", "t5_bucket", "t5_bucket_edges", "t5_buckets", "table_buckets"]



def t5_bucket(
    relative_position: Any, *, spec: T5Buckets | None = None, **settings: Unpack[T5Settings],
) -> np.ndarray:
    """T5's bucket of each offset ``j − i`` (key position minus query position).

    Equal to HF ``T5Attention._relative_position_bucket`` (and mesh-tensorflow)
    for every integer offset: the same float32 steps.

    Args:
        relative_position: integers, any shape, |r| < 2**53.
        spec: a :class:`T5Buckets` holding the three settings (checked once,
            when it was built); leave them out beside it.
        **settings: :class:`T5Settings`, without ``spec``: ``bidirectional``,
            True for T5's encoder (keys after the query get buckets
            ``num_buckets // 2 …``), False for its decoder (they all get
            bucket 0); ``num_buckets``, >= 2 (>= 4 when bidirectional; 32);
            ``max_distance``, > num_buckets / 2 (128).

    Returns:
        int64 buckets, same shape, in ``[0, num_buckets)``.

    Raises:
        PosEncError: for any bad argument, before any work.

    >>> t5_bucket([-1, 0, 1, -8, -12, -16, -127, -128, -1000]).tolist()
    [1, 0, 17, 8, 9, 10, 15, 15, 15]
    >>> t5_bucket([-20, 0, 5], bidirectional=False).tolist()
    [17, 0, 0]
    >>> t5_bucket([-20, 0, 5], spec=T5Buckets(bidirectional=False)).tolist()
    [17, 0, 0]
    """
    return functions.t5_bucket(NUMPY_BIAS, relative_position, spec=spec, **settings)


def t5_bucket_edges(**settings: Unpack[T5Settings]) -> np.ndarray:
    """Where each bucket starts: the smallest distance |j − i| in each bucket of one direction.

    T5's buckets are a non-decreasing function of the distance d = |j − i|
    (every float32 step is monotonic), so bucket b holds the distances
    ``edges[b] <= d < edges[b + 1]`` (the last: ``d >= edges[-1]``).
    Bidirectional: buckets ``b`` (keys at or before the query, j − i <= 0)
    and ``num_buckets // 2 + b`` (after it, j − i > 0) share ``edges[b]``;
    bucket ``num_buckets // 2`` itself is never used (distance 0 is never
    after the query). A bucket no distance reaches (the logarithmic buckets
    narrower than one position, max_distance close to num_buckets/2) has
    edge ``-1``.

    Returns:
        int64 ``[num_buckets // 2]`` if bidirectional, else ``[num_buckets]``.

    >>> t5_bucket_edges().tolist()
    [0, 1, 2, 3, 4, 5, 6, 7, 8, 12, 16, 23, 32, 46, 64, 91]
    """
    cfg = t5_buckets(None, "t5_bucket_edges", **settings)
    n, e = cfg.per_direction, cfg.max_exact
    edges = np.full(n, -1, dtype=np.int64)
    edges[:e] = np.arange(e)
    # first d with bucket >= b, for every logarithmic bucket b at once (bisection on a monotonic function)
    want = np.arange(e, n)
    lo = np.full(want.shape, e, dtype=np.int64)
    hi = np.full(want.shape, max(cfg.max_distance, e), dtype=np.int64)  # bucket(max_distance) = n - 1
    while np.any(lo < hi):
        mid = (lo + hi) // 2
        below = cfg.distance_bucket(mid) < want
        lo = np.where(below, mid + 1, lo)
        hi = np.where(below, hi, mid)
    reached = cfg.distance_bucket(lo) == want
    edges[e:] = np.where(reached, lo, -1)
    return edges


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
) -> np.ndarray:
    """T5's relative attention bias ``[n_heads, q_len, k_len]``: ``weights[bucket(j − i)]``, head first.

    The lookup T5 adds to its attention scores (HF ``T5Attention.compute_bias``
    without its batch axis): query r at position ``offset + r`` (``offset``:
    HF's ``past_seen_tokens``), key j at j, unless positions are given.

    Args:
        weights: ``[num_buckets, n_heads]`` floats, the learned table (HF
            ``relative_attention_bias.weight``); num_buckets is its first axis.
        q_len, k_len: queries and keys, >= 1.
        offset: the first query's position when ``q_positions`` is None.
        q_positions, k_positions: None, or integer positions ``[q_len]`` /
            ``[k_len]`` (|p| < 2**53).
        bidirectional, max_distance: as :func:`t5_bucket`.

    Returns:
        ``[n_heads, q_len, k_len]`` in weights' dtype: each value one of
        weights' own (nothing is computed from them).

    Raises:
        PosEncError: for weights that are not a non-empty float matrix, bad
            lengths, offset or settings, positions that are not integers of
            their lengths, offsets ``j − i`` at or past 2**53, or an output
            larger than this machine's memory, before any work.

    >>> t5_bias(np.arange(64.0).reshape(32, 2), 1, 3)[0].tolist()
    [[0.0, 34.0, 36.0]]
    """
    return functions.t5_bias(NUMPY_BIAS, weights, q_len, k_len, offset=offset, q_positions=q_positions,
                             k_positions=k_positions, bidirectional=bidirectional, max_distance=max_distance)
