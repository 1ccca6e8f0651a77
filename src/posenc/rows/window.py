"""Which rows a cache holds and computes for a request: the window, grow and sparse policy, as pure functions.

A cache holds one contiguous window of positions ``start … stop-1`` per
dtype. For a request whose positions span ``lo … hi-1`` (``count`` of them),
:func:`for_lookup` says what to do:

- ``"read"``: the window covers it;
- ``"grow"``: extend the window to :func:`grown`, when the growth is at most
  the window's size (doubling: decoding token by token costs amortised O(1)
  rows per token) or a small multiple (:data:`SPARSE_FACTOR`) of the rows
  asked for (a long prefill);
- ``"direct"``: anything sparser (``positions=[0, 2**31 - 2]``,
  ``offset=10**9`` beside a window at 0) is computed for those positions
  alone and not kept: peak extra memory is a small multiple of the output.

:func:`for_reserve` does the same for a caller that asks to hold rows ahead
(before compiling), and :func:`following` keeps a window where a model is
decoding (a patched checkpoint decoding at 10^6). The functions hold no state: a backend keeps its tables
and takes its own lock around a decision and the growth it leads to.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from ..errors import MAX_POSITION, PosEncError

__all__ = ["AHEAD", "DEFAULT_ROWS", "MAX_SLACK", "MIN_GROWTH", "SPARSE_FACTOR", "Span", "check_positions_held",
           "covers", "distinct", "following", "for_lookup", "for_reserve", "grown", "worth_growing"]

#: Positions 0 … DEFAULT_ROWS-1 are computed at construction (``max_len``):
#: torchtune's ``max_seq_len`` default (RotaryPositionalEmbeddings builds its
#: cache at init), between HF's ``max_position_embeddings`` defaults (Marian
#: 1024, Llama 2048) and the 4096 of most checkpoints.
DEFAULT_ROWS = 4096

#: A request may grow the window by this many rows per position it asks for
#: (beyond doubling the window); anything sparser is computed directly.
SPARSE_FACTOR = 4

#: Rows computed at least per growth.
MIN_GROWTH = 256

#: At most this many rows beyond the need per growth.
MAX_SLACK = 1 << 16

#: Rows :func:`following` holds past a request outside the window: the next decode steps read them.
AHEAD = 256

#: ``(start, stop)``: the positions ``start … stop-1`` a window holds.
Span = tuple[int, int]


def covers(held: Span, lo: int, hi: int) -> bool:
    """Whether the window ``held`` holds every position ``lo … hi-1`` (an empty request: always).

    >>> covers((0, 4096), 4000, 4096), covers((0, 4096), 4095, 4097), covers((0, 0), 5, 5)
    (True, False, True)
    """
    return hi <= lo or (held[0] <= lo and hi <= held[1])


def worth_growing(held: Span, lo: int, hi: int, count: int) -> bool:
    """Whether growing ``held`` to cover ``lo … hi-1`` adds at most max(its size, :data:`MIN_GROWTH`, 4·count) rows.

    An empty window sits at its start (0 unless told otherwise), so a far
    first request stays direct.

    >>> worth_growing((0, 4096), 4096, 4097, 1), worth_growing((0, 4096), 10**6, 10**6 + 1, 1)
    (True, False)
    """
    a, z = held
    size = z - a
    return max(z, hi) - min(a, lo) - size <= max(size, MIN_GROWTH, SPARSE_FACTOR * count)


def grown(held: Span, lo: int, hi: int) -> Span:
    """The window after growing ``held`` to cover ``lo … hi-1``.

    Downwards to exactly ``lo``; upwards at least doubling (amortised O(1)
    rows per decoded token) but never more than :data:`MAX_SLACK` past the
    need, and by at least :data:`MIN_GROWTH` rows.

    >>> grown((0, 4096), 4096, 4097), grown((0, 4096), -3, 10), grown((0, 0), 0, 1)
    ((0, 8192), (-3, 4096), (0, 256))
    """
    a, z = held
    new_lo, new_hi = min(a, lo), z
    if hi > z:
        need = hi - new_lo
        new_hi = new_lo + max(need, MIN_GROWTH, min(2 * (z - a), need + MAX_SLACK))
    return new_lo, new_hi


def for_lookup(held: Span, lo: int, hi: int, count: int) -> Literal["read", "grow", "direct"]:
    """What a cache holding ``held`` does for ``count`` positions spanning ``lo … hi-1``.

    >>> for_lookup((0, 4096), 7, 8, 1), for_lookup((0, 4096), 4096, 4097, 1), for_lookup((0, 4096), 0, 2**31, 2)
    ('read', 'grow', 'direct')
    """
    if covers(held, lo, hi):
        return "read"
    return "grow" if worth_growing(held, lo, hi, count) else "direct"


def for_reserve(held: Span, start: int, stop: int) -> Literal["held", "grow", "move"]:
    """What a cache holding ``held`` does when asked to hold ``start … stop-1``.

    ``"grow"`` to :func:`grown`, or, when that would hold far more rows than
    asked for, ``"move"``: the window becomes exactly ``(start, stop)``.

    >>> for_reserve((0, 4096), 0, 100), for_reserve((0, 4096), 0, 8192), for_reserve((0, 4096), 10**9, 10**9 + 8)
    ('held', 'grow', 'move')
    """
    if covers(held, start, stop):
        return "held"
    return "grow" if worth_growing(held, start, stop, stop - start) else "move"


def following(held: Span, lo: int, hi: int) -> Span | None:
    """The rows to hold so the window follows a decode at ``lo … hi-1``, or None when it holds them already.

    Decoding far from the window (at 10^6 beside a window at 0) would
    otherwise compute every step's row on its own (:func:`for_lookup` keeps far
    positions out); here the window moves to the request, or grows when the
    request is just past it, and holds :data:`AHEAD` rows beyond it (at least
    as many as it held, or as asked: doubling as the decode goes on).

    >>> following((0, 4096), 10**6, 10**6 + 1), following((10**6, 10**6 + 257), 10**6 + 257, 10**6 + 258)
    ((1000000, 1004097), (1000000, 1000515))
    >>> following((0, 4096), 5, 6) is None
    True
    """
    a, z = held
    if a <= lo and hi <= z:
        return None
    start = a if a < z and a <= lo and lo - z <= z - a else lo  # just past the window: grow it, else move
    return start, hi + max(AHEAD, z - a, hi - lo)


def check_positions_held(lo: int, hi: int) -> None:
    """Raise unless every position ``lo … hi-1`` satisfies ``|p| < 2**53`` (the rows a table may hold)."""
    worst = max(abs(lo), abs(hi - 1)) if hi > lo else 0
    if worst >= MAX_POSITION:
        raise PosEncError(f"positions must satisfy |p| < 2**53, got {lo} … {hi - 1}")


def distinct(far: np.ndarray) -> tuple[np.ndarray, np.ndarray | None]:
    """The positions to compute for ``far`` (int64 ``[m]``): each distinct one once.

    Returns ``(far, None)`` when none repeats (the rows come in the caller's
    order, no extra copy), else ``(unique, inverse)`` with
    ``unique[inverse] == far``.

    >>> distinct(np.array([5, 9])), distinct(np.array([9, 5, 9]))
    ((array([5, 9]), None), (array([5, 9]), array([1, 0, 1])))
    """
    uniq, inverse = np.unique(far, return_inverse=True)
    if uniq.size == far.size:
        return far, None
    return uniq, inverse.reshape(-1)
