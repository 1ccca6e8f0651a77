"""posenc's worker threads and locks: the one place that knows about threads.

One shared pool runs the kernels that release the GIL.

NumPy ufuncs and posenc's numba kernels release the GIL, so splitting a large
table or tensor into spans and running them on plain threads uses every core.
Plain threads are used instead of numba's parallel regions because those
stall when another process holds a core.

What is shared between callers, and how it stays safe (any number of threads
may call posenc at once; ``tests/torch/test_torch_threads.py`` holds every
output to the single-threaded one):

- the kernels keep no state (each call has its own scratch), so they need no
  launch lock; :class:`Memo` compiles each one once, however many threads
  ask first;
- memo tables of exact rows (:class:`BoundedCache`, ``functools.lru_cache``)
  hold read-only arrays;
- the row caches (``posenc.rows.cache``, ``posenc.torch._cache``) take a
  lock per cache and replace tables instead of writing into them
  (``tests/rows/test_rows_cache.py`` stresses the policy they share);
- :func:`run_spans` called from a pool worker runs its spans inline, so
  nested parallel work cannot wait on a pool it occupies.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

__all__ = ["BoundedCache", "Memo", "default_threads", "run_spans", "spans"]

V = TypeVar("V")

_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()
_LOCAL = threading.local()  # .worker is True on the pool's own threads


def _mark_worker() -> None:
    _LOCAL.worker = True


def default_threads() -> int:
    """Threads for large work: the CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not Linux
        return max(1, os.cpu_count() or 1)


def spans(total: int, parts: int, align: int = 1) -> list[tuple[int, int]]:
    """Split ``range(total)`` into at most ``parts`` spans whose starts are multiples of ``align``.

    >>> spans(10, 3, align=2)
    [(0, 4), (4, 8), (8, 10)]
    """
    if total <= 0:
        return []
    per = -(-total // (max(1, parts) * align)) * align
    return [(a, min(total, a + per)) for a in range(0, total, per)]


def run_spans(work: list[tuple[int, int]], fn: Callable[[int, int], object]) -> None:
    """Call ``fn(first, last)`` for every span: the last on this thread, the rest on the pool."""
    if not work:
        return
    if len(work) == 1 or getattr(_LOCAL, "worker", False):
        # one span, or already on a pool thread: waiting on the pool from inside it could deadlock
        for a, z in work:
            fn(a, z)
        return
    with _POOL_LOCK:  # created once: starting threads per call costs more than a small table
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(
                max_workers=default_threads(), thread_name_prefix="posenc", initializer=_mark_worker
            ))
    futures = [_POOL[0].submit(fn, a, z) for a, z in work[:-1]]
    fn(*work[-1])
    for f in futures:
        f.result()


class BoundedCache(Generic[V]):
    """A memo of at most ``size`` entries (the oldest dropped first), safe under concurrent callers.

    The build runs outside the lock, so a slow build never blocks readers of
    other keys; when two threads build one key at once, the first stored
    value wins and both get it, so equal keys always give the same object.

    >>> cache = BoundedCache[int](2)
    >>> cache.get(("a",), lambda: 1), cache.get(("a",), lambda: 2)
    (1, 1)
    """

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: dict[Hashable, V] = {}
        self._lock = threading.Lock()

    def get(self, key: Hashable, build: Callable[[], V]) -> V:
        """The value stored for ``key``, built and stored on first use."""
        with self._lock:
            if key in self._items:
                return self._items[key]
        value = build()
        with self._lock:
            if key in self._items:
                return self._items[key]
            while len(self._items) >= self._size:
                self._items.pop(next(iter(self._items)))
            self._items[key] = value
            return value


class Memo(Generic[V]):
    """Values built at most once per key, however many threads ask at once (the others wait for it).

    For compiled kernels: building one takes seconds, so it is built once,
    under a lock; reads after that take no lock.

    >>> memo = Memo[int]()
    >>> memo.get("k", lambda: 1), memo.get("k", lambda: 2), memo.peek("k"), memo.peek("other")
    (1, 1, 1, None)
    """

    def __init__(self) -> None:
        self._items: dict[Hashable, V] = {}
        self._lock = threading.RLock()

    def get(self, key: Hashable, build: Callable[[], V]) -> V:
        """The value for ``key``, built by the first caller."""
        try:
            return self._items[key]
        except KeyError:
            pass
        with self._lock:
            if key not in self._items:
                self._items[key] = build()
            return self._items[key]

    def peek(self, key: Hashable) -> V | None:
        """The value if it has been built, else None (never builds)."""
        return self._items.get(key)
