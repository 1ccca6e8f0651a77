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

import math
from dataclasses import dataclass
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from ..errors import PosEncError, as_array, check_int, show_value
from ..exact.power import log_float32, nearest_log
from ..support.arguments import check_flag, given, set_fields, settings_of
from ..support.memory import allocate, check_size, shape_of

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's from Python 3.11; only read by the type checker

__all__ = ["T5Buckets", "T5Settings", "t5_bias", "t5_bucket", "t5_bucket_edges", "t5_buckets", "table_buckets"]

_LIMIT = 2**53  # offsets beyond it are no longer distinct float64 integers


@dataclass(frozen=True)
class T5Buckets:
    """A validated T5 bucket setting.

    Attributes:
        bidirectional: keys after the query get their own buckets (encoder).
        num_buckets: buckets in all (HF ``relative_attention_num_buckets``).
        max_distance: distances >= it share the last bucket
            (HF ``relative_attention_max_distance``).
    """

    bidirectional: bool = True  # T5's encoder; its decoder uses False
    num_buckets: int = 32  # T5's default
    max_distance: int = 128  # T5's default

    def __post_init__(self) -> None:
        bd = check_flag(self.bidirectional, "bidirectional")
        nb = check_int(self.num_buckets, "num_buckets", minimum=2, maximum=2**16)  # rows of a bias table (T5: 32)
        if bd and nb < 4:
            raise PosEncError(
                "num_buckets must be >= 4 when bidirectional (each direction needs an exact bucket), "
                f"got {show_value(nb)}"
            )
        md = check_int(self.max_distance, "max_distance", maximum=_LIMIT)  # a distance between positions < 2**53
        if not 2 * md > nb:
            raise PosEncError(
                f"max_distance must be > num_buckets/2 = {nb / 2:g} (the logarithmic buckets start there), "
                f"got {show_value(md)}"
            )
        set_fields(self, bidirectional=bd, num_buckets=nb, max_distance=md)

    @property
    def per_direction(self) -> int:
        """Buckets for one direction: n = num_buckets // 2 if bidirectional, else num_buckets."""
        return self.num_buckets // 2 if self.bidirectional else self.num_buckets

    @property
    def max_exact(self) -> int:
        """Distances below it get a bucket each: e = n // 2."""
        return self.per_direction // 2

    def distance_bucket(self, d: np.ndarray) -> np.ndarray:
        """The bucket (within one direction) of distances d >= 0, int64, as T5 computes it in float32."""
        d = np.asarray(d, dtype=np.int64)
        flat = d.reshape(-1)
        table = _near_buckets(self)
        out = table[np.minimum(flat, table.shape[0] - 1)]
        far = flat >= table.shape[0]
        # buckets never decrease with the distance (each float32 step is monotonic): past a last bucket, the last
        if far.any() and table[-1] < self.per_direction - 1:  # each distinct float32 distance once
            x, where = np.unique(flat[far].astype(np.float32), return_inverse=True)
            out[far] = self.log_bucket(x)[where.reshape(-1)]
        return out.reshape(d.shape)

    def log_bucket(self, d: np.ndarray) -> np.ndarray:
        """T5's float32 steps for distances d >= max_exact (int or float32 ``d``): the logarithmic buckets."""
        n, e = self.per_direction, self.max_exact
        x = np.asarray(d).astype(np.float32) / np.float32(e)  # T5's relative_position.float() / max_exact
        large = e + (log_float32(x) / _denominator(self) * np.float32(n - e)).astype(np.int64)  # x >= 1: floor
        return np.minimum(large, n - 1)


class T5Settings(TypedDict, total=False):
    """T5's bucket settings as keywords: ``t5_bucket(r, **settings)`` means ``T5Buckets(**settings)``.

    Taken as ``**settings: Unpack[T5Settings]`` by every bucket entry point
    (NumPy, torch, JAX, the plots); the defaults are :class:`T5Buckets`'s
    fields alone. A name outside these three is refused, and beside
    ``spec=`` so is each one, even at its default value.
    """

    bidirectional: bool  # T5Buckets.bidirectional: True (the encoder's)
    num_buckets: int  # T5Buckets.num_buckets: 32
    max_distance: int  # T5Buckets.max_distance: 128


_NEAR = 1 << 12  # distances tabulated per setting (T5's own reach every offset below max_distance = 128 … 256)


@lru_cache(maxsize=64)
def _near_buckets(cfg: T5Buckets) -> np.ndarray:
    """The bucket of every distance below min(max_distance + 1, 4096) (and at least max_exact), read-only."""
    stop = max(min(cfg.max_distance + 1, _NEAR), cfg.max_exact)
    d = np.arange(stop, dtype=np.int64)
    out = d.copy()
    e = cfg.max_exact
    out[e:] = cfg.log_bucket(d[e:])
    out.setflags(write=False)
    return out


@lru_cache(maxsize=64)
def _denominator(cfg: T5Buckets) -> np.float32:
    """float32(log(max_distance / max_exact)): HF's Python float (``math.log``), rounded to float32 by torch.

    The float64 log is posenc's correctly rounded one, not the platform's ``math.log``.
    """
    return np.float32(nearest_log(Fraction(cfg.max_distance / cfg.max_exact), np.float64))


def t5_buckets(spec: T5Buckets | None = None, /, where: str = "t5_buckets",
               **settings: Unpack[T5Settings]) -> T5Buckets:
    """A :class:`T5Buckets` of the settings, validated (the checks shared by every entry point), or ``spec`` itself.

    Beside a spec the three settings must be left out (one setting, one place): one passed is
    refused, even at its default value, since either may have been meant. ``where`` names the
    entry point in the message about an unknown keyword.

    >>> t5_buckets(num_buckets=16)
    T5Buckets(bidirectional=True, num_buckets=16, max_distance=128)
    """
    chosen = settings_of(settings, T5Settings, where)
    if spec is None:
        return T5Buckets(**chosen)
    if not isinstance(spec, T5Buckets):
        raise PosEncError(f"spec must be a posenc.bias.T5Buckets (or None), got {show_value(spec)}")
    if chosen:
        raise PosEncError(f"{given(chosen, T5Settings)}: part of the spec, so leave them out beside spec=")
    return spec


def _offsets(relative_position: Any, name: str = "relative_position", what: str = "key − query") -> np.ndarray:
    arr = as_array(relative_position, name)
    if arr.dtype.kind == "O":
        try:
            arr = np.asarray(relative_position, dtype=np.int64)
        except (OverflowError, ValueError, TypeError) as exc:
            raise PosEncError(f"{name} must be integers with |r| < 2**53, got {arr!r}"[:200]) from exc
    if arr.dtype.kind not in "iu":
        raise PosEncError(f"{name} must be integers ({what}), got dtype {arr.dtype}")
    if arr.dtype.kind == "u" and arr.size and int(arr.max()) >= _LIMIT:
        raise PosEncError(f"{name} must satisfy |r| < 2**53, got {int(arr.max())}")
    arr = arr.astype(np.int64, copy=False)
    if arr.size:
        lo, hi = int(arr.min()), int(arr.max())
        worst = lo if -lo >= hi else hi
        if abs(worst) >= _LIMIT:
            raise PosEncError(f"{name} must satisfy |r| < 2**53, got {worst}")
    return arr


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
    cfg = t5_buckets(spec, "t5_bucket", **settings)
    shape = shape_of(relative_position)
    if shape is not None:  # before any offset is read: the output, an int64 copy, one chunk's temporaries
        check_size(shape, np.int64, "t5_bucket output", work=math.prod(shape) * 8 + _CHUNK * 8 * 12)
    rel = _offsets(relative_position)
    flat = rel.reshape(-1)
    out = allocate((flat.shape[0],), np.int64, "t5_bucket output")
    for a in range(0, flat.shape[0], _CHUNK):  # in chunks: the float32 steps' temporaries stay a few MB
        out[a:a + _CHUNK] = _buckets_of(cfg, flat[a:a + _CHUNK])
    return out.reshape(rel.shape)


#: Offsets per chunk of :func:`t5_bucket` (a dozen temporaries of this many elements).
_CHUNK = 1 << 17


def _buckets_of(cfg: T5Buckets, rel: np.ndarray) -> np.ndarray:
    if cfg.bidirectional:
        return np.where(rel > 0, cfg.per_direction, 0) + cfg.distance_bucket(np.abs(rel))
    return cfg.distance_bucket(-np.minimum(rel, 0))


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
    w = as_array(weights, "weights")
    if w.dtype.kind != "f" or w.ndim != 2 or 0 in w.shape:
        raise PosEncError(f"weights must be a float matrix [num_buckets, n_heads], got {show_value(weights)}")
    cfg = table_buckets(w.shape[0], bidirectional, max_distance)
    q = check_int(q_len, "q_len", minimum=1)
    k = check_int(k_len, "k_len", minimum=1)
    off = check_int(offset, "offset")
    # the output, and the offsets and buckets (int64 [q, k] each)
    check_size((w.shape[1], q, k), w.dtype, "T5 bias", work=2 * q * k * 8)
    qp = np.arange(off, off + q) if q_positions is None else _offsets(q_positions, "q_positions", "positions")
    kp = np.arange(k) if k_positions is None else _offsets(k_positions, "k_positions", "positions")
    if qp.shape != (q,) or kp.shape != (k,):
        raise PosEncError(f"q_positions and k_positions must be [{q}] and [{k}], got {qp.shape} and {kp.shape}")
    reach = max(abs(int(kp.max()) - int(qp.min())), abs(int(kp.min()) - int(qp.max())))
    if reach >= _LIMIT:
        raise PosEncError(f"the offsets j − i of these positions (offset = {off}) reach {reach}, "
                          "past 2**53 (T5's buckets take |j − i| < 2**53)")
    buckets = t5_bucket(kp[None, :] - qp[:, None], spec=cfg)
    return w.T[:, buckets]


def table_buckets(rows: int, bidirectional: Any, max_distance: Any) -> T5Buckets:
    """The buckets of a learned table of ``rows`` rows (num_buckets: its first axis), checked, naming the table."""
    try:
        return T5Buckets(bidirectional, rows, max_distance)
    except PosEncError as exc:
        raise PosEncError(f"{exc} (num_buckets is weights' first axis: {rows} rows)") from None
