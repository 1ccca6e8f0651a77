"""posenc's worker threads and locks: the one place that knows about threads.

One shared pool runs the kernels that release the GIL.

NumPy ufuncs and posenc's numba kernels release the GIL, so splitting a large
table or tensor into spans and running them on plain threads uses every core.
Plain threads are used instead of numba's parallel regions because those
stall when another process holds a core.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

__all__ = ["BoundedCache", "default_threads", "run_spans", "spans"]

V = TypeVar("V")

_POOL: list[ThreadPoolExecutor] = []
_POOL_LOCK = threading.Lock()


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
    if len(work) == 1:
        fn(*work[0])
        return
    with _POOL_LOCK:  # created once: starting threads per call costs more than a small table
        if not _POOL:
            _POOL.append(ThreadPoolExecutor(max_workers=default_threads(), thread_name_prefix="posenc"))
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
