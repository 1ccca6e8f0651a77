"""posenc's worker threads: one shared pool for the kernels that release the GIL.

NumPy ufuncs and posenc's numba kernels release the GIL, so splitting a large
table or tensor into spans and running them on plain threads uses every core.
Plain threads are used instead of numba's parallel regions because those
stall when another process holds a core.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

__all__ = ["default_threads", "run_spans", "spans"]

_POOL: list[ThreadPoolExecutor] = []


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
    if not _POOL:  # created once: starting threads per call costs more than a small table
        _POOL.append(ThreadPoolExecutor(max_workers=default_threads(), thread_name_prefix="posenc"))
    futures = [_POOL[0].submit(fn, a, z) for a, z in work[:-1]]
    fn(*work[-1])
    for f in futures:
        f.result()
