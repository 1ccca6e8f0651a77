"""nerf_encoding and fourier_features declare their memory before any work (issue 31 §4).

As tests/test_memory.py holds the other entry points: with the machine's
memory set one byte below the peak tracemalloc measures for a call, the call
is refused by the size check before it works; with six times the peak it
runs. Before, fourier_features was not sized at all (a MemoryError for
745 GiB), and nerf_encoding sized its output only after validating x (24 s
for a huge view). timestep_embedding's: tests/timesteps/test_timesteps_trust.py.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import posenc
import posenc.memory as memory
from posenc.errors import PosEncError

N = 100_000
RNG = np.random.default_rng(31)

CALLS: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
    "nerf": (lambda: RNG.uniform(-1, 1, (N, 3)), lambda x: posenc.nerf_encoding(x, 10)),
    "nerf tcnn (turns)": (lambda: RNG.uniform(-1, 1, (N, 3)), lambda x: posenc.nerf_encoding(x, 10, convention="tcnn")),
    "nerfstudio float64 input": (lambda: RNG.uniform(-1, 1, (N, 3)),
                                 lambda x: posenc.nerf_encoding(x, 10, convention="nerfstudio", include_input=True,
                                                                dtype=np.float64)),
    "nerf wide rows": (lambda: RNG.uniform(-1, 1, (4, 20_000)),
                       lambda x: posenc.nerf_encoding(x, 6, convention="tcnn")),
    "fourier_features": (lambda: (RNG.uniform(-1, 1, (N, 3)), RNG.normal(0, 5, (64, 3))),
                         lambda a: posenc.fourier_features(*a)),
    "fourier_features wide B": (lambda: (RNG.uniform(-1, 1, (4, 3)), RNG.normal(0, 5, (50_000, 3))),
                                lambda a: posenc.fourier_features(*a)),
}


def _peak(call: Callable[[], Any]) -> int:
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("name", list(CALLS))
def test_the_size_check_covers_the_measured_peak(monkeypatch, name):
    setup, fn = CALLS[name]
    args = setup()

    def call() -> Any:
        return fn(args)

    call()  # warm: ladders and engines
    peak = _peak(call)
    monkeypatch.setattr(memory, "_memory", lambda: peak - 1)
    tracemalloc.start()
    try:
        with pytest.raises(PosEncError, match=r"more than this machine's .* of memory"):
            call()
        refused_at = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused_at < peak / 4  # refused by the size check, before the work
    monkeypatch.setattr(memory, "_memory", lambda: 6 * peak)  # the declarations are not wildly above the truth
    call()
