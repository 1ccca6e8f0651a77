"""How the benchmark measures: side-by-side medians, float32 ulp gaps, peak extra memory."""

from __future__ import annotations

import statistics
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np

__all__ = ["peak_extra", "time_side_by_side", "ulp_gap"]


def time_side_by_side(fns: dict[str, Callable[[], Any]], repeats: int) -> dict[str, float]:
    """Median ms of each function, run interleaved repetition by repetition after one warm-up."""
    for f in fns.values():  # warm-up: caches, JIT, first-touch of pooled memory
        f()
    samples: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            samples[k].append(time.perf_counter() - t0)
    return {k: statistics.median(v) * 1e3 for k, v in samples.items()}


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
