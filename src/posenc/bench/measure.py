"""How the benchmark measures: side-by-side medians, float32 ulp gaps, peak extra memory."""

from __future__ import annotations

import ctypes
import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["peak_extra", "steady_heap", "time_in_groups", "time_side_by_side", "ulp_gap"]


def time_side_by_side(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median ms of each function, run interleaved repetition by repetition after one warm-up.

    Every call runs under the same conditions on average: the heap keeps
    what it frees (:func:`steady_heap`), so no call pays the kernel for
    fresh pages another call returned; and each repetition runs the
    functions in a new order (seeded), so each follows every other equally
    often. A call that writes megabytes (the floor's fill) returns with its
    dirty lines still in the cache, and whatever runs next pays for writing
    them back: in a fixed order that lands on one function every time (up to
    2x on outputs of ~16 MB).
    """
    steady_heap()
    names = list(fns)
    order = np.random.default_rng(0)
    for f in fns.values():  # warm-up: caches, JIT, first-touch of pooled memory
        f()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for i in order.permutation(len(names)).tolist():
            t0 = time.perf_counter()
            fns[names[i]]()
            samples[names[i]].append(time.perf_counter() - t0)
    return {k: statistics.median(v) * 1e3 for k, v in samples.items()}


def time_in_groups(
    floor: tuple[str, Callable[[], Any]], *groups: dict[str, Callable[[], Any]], repeats: int
) -> tuple[dict[str, float], dict[str, float]]:
    """Time each group beside its own run of the floor: (median ms, the floor ms each was divided by).

    posenc's rows and the reference recipes run in separate groups: a
    recipe that churns through 100 MB of temporaries, or torch's worker
    threads that keep spinning after each call, would tax whatever runs
    after it, on a 2-core machine most of all.
    """
    ms: dict[str, float] = {}
    floor_of: dict[str, float] = {}
    for group in groups:
        got = time_side_by_side({floor[0]: floor[1], **group}, repeats)
        floor_of.update({k: got[floor[0]] for k in got if k != floor[0] or floor[0] not in floor_of})
        ms.update({k: v for k, v in got.items() if k != floor[0] or floor[0] not in ms})
    return ms, floor_of


def steady_heap() -> None:
    """Have glibc keep freed memory below 32 MiB in the heap (no trim, no mmap), so page faults do not vary.

    glibc tunes these thresholds as a program frees memory, so whether an
    output lands on fresh pages (a fault per 4 KiB) or on reused ones
    depends on what ran before; fixing them makes every call of a size
    reuse the same memory. A no-op off glibc.
    """
    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # pragma: no cover - not glibc
        return
    mallopt(-1, 1 << 30)  # M_TRIM_THRESHOLD: never give the heap's top back
    mallopt(-3, 32 << 20)  # M_MMAP_THRESHOLD: glibc's largest; bigger blocks are mapped either way


def ulp_gap(got: np.ndarray, ref: np.ndarray) -> float:
    """Largest distance in float32 ulps (steps of the ordered bit pattern) between two arrays."""
    g = got.astype(np.float32).view(np.int32).astype(np.int64)
    r = ref.astype(np.float32).view(np.int32).astype(np.int64)
    top = np.int64(1) << 31
    g = np.where(g < 0, -(g + top), g)
    r = np.where(r < 0, -(r + top), r)
    return float(np.max(np.abs(g - r)))


def peak_extra(fn: Callable[[], np.ndarray]) -> float:
    """Peak memory traced while ``fn`` builds its output, beyond the output, as a fraction of it."""
    tracemalloc.start()
    try:
        out = fn()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return (peak - out.nbytes) / out.nbytes
