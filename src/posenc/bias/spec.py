"""The bias families' specs: an ALiBi bias's settings and geometry, T5's bucket settings, each checked once.

:class:`AlibiSpec` and :class:`T5Buckets` are what every form of
:func:`posenc.alibi_bias`, :func:`posenc.t5_bucket` and :func:`posenc.t5_bias`
(NumPy, torch, JAX: :mod:`posenc.bias.functions`) builds first: the
settings, validated in one place, before any backend sees an array.

>>> AlibiSpec(2, 3, 4).slopes.tolist()
[0.25, 0.0625, 0.015625, 0.00390625]
>>> t5_buckets(num_buckets=16).max_exact
4
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import TYPE_CHECKING, Any, TypedDict

import numpy as np

from ..errors import PosEncError, check_int, show_value
from ..exact.power import log_float32, nearest_log
from ..support.arguments import check_flag, given, set_fields, settings_of
from .alibi_variants import alibi_convention, variant_slopes

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's from Python 3.11; only read by the type checker

__all__ = ["LIMIT", "AlibiSpec", "T5Buckets", "T5Settings", "check_placement", "t5_buckets", "table_buckets"]

#: offsets and positions at or beyond it are no longer distinct float64 integers
LIMIT = 2**53


@dataclass(frozen=True)
class AlibiSpec:
    """One ALiBi bias's settings and geometry, checked once (what the NumPy and JAX forms build alike).

    Attributes:
        q_len, k_len: queries and keys, >= 1.
        n_heads: heads, >= 1.
        offset: the first query's key index.
        convention: a variant's name or the variant; stored as the variant.
        causal: mask keys after the query.
        slopes: the variant's float64 slopes ``[n_heads]`` (derived).
    """

    q_len: int
    k_len: int
    n_heads: int
    offset: int = 0  # no KV cache
    convention: Any = "press"  # the paper's
    causal: bool = True  # a decoder's mask
    slopes: np.ndarray = field(default=None, init=False, repr=False, compare=False)  # type: ignore[arg-type]

    def __post_init__(self) -> None:
        q = check_int(self.q_len, "q_len", minimum=1)
        k = check_int(self.k_len, "k_len", minimum=1)
        conv = alibi_convention(self.convention)
        slopes = variant_slopes(conv, self.n_heads)  # a user's variant too: n_heads finite slopes > 0, checked
        off = check_int(self.offset, "offset")
        if not isinstance(self.causal, (bool, np.bool_)):
            raise PosEncError(f"causal must be True or False, got {self.causal!r}")
        set_fields(self, q_len=q, k_len=k, n_heads=int(slopes.shape[0]), offset=off, convention=conv,
                   causal=bool(self.causal), slopes=slopes)

    def check_positions(self, positions: Any) -> None:
        """Query r is key ``offset + r``: it must exist under ``causal`` or with explicit positions."""
        check_placement(self.q_len, self.k_len, self.offset, self.causal, positions)


def check_placement(q: int, k: int, offset: int, causal: bool, positions: Any) -> None:
    if (causal or positions is not None) and not (0 <= offset and offset + q <= k):
        why = ("with causal=True query r is key r + offset, which must exist" if causal
               else "queries take positions[..., offset + r]")
        raise PosEncError(
            f"offset + q_len must be <= k_len with 0 <= offset ({why}; q_len > k_len is meaningless there), "
            f"got q_len={q}, k_len={k}, offset={offset}"
        )


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
        md = check_int(self.max_distance, "max_distance", maximum=LIMIT)  # a distance between positions < 2**53
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


def table_buckets(rows: int, bidirectional: Any, max_distance: Any) -> T5Buckets:
    """The buckets of a learned table of ``rows`` rows (num_buckets: its first axis), checked, naming the table."""
    try:
        return T5Buckets(bidirectional, rows, max_distance)
    except PosEncError as exc:
        raise PosEncError(f"{exc} (num_buckets is weights' first axis: {rows} rows)") from None
