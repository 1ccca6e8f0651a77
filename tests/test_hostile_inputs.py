"""Unbounded or slow inputs (issue 18, section 4): refused at once, with a short message.

Before: ``rope_frequencies(128, sections=[1]*10**6)`` took 6.5 s and raised a
3 MB message; ``sections=itertools.repeat(1)`` never returned;
``mrope_positions`` over 4 million segments took 9.5 s (45 s for vision
grids) before its size error; ``grid(*[1]*64)`` raised NumPy's ValueError
(an ``[*sizes, n]`` array has 65 dimensions). Each bound here is a limit
posenc already states (a head's pairs, the machine's memory), applied while
the input is read rather than after.
"""

from __future__ import annotations

import itertools
import time

import numpy as np
import pytest

import posenc
import posenc.support.memory as memory
from posenc import Text, VisionGrid
from posenc.errors import PosEncError


@pytest.mark.parametrize("sections", [[1] * 10**6, itertools.repeat(1), (20000, 20000), range(1, 10**9)])
def test_sections_are_read_no_further_than_a_head_holds(sections):
    start = time.monotonic()
    with pytest.raises(PosEncError, match=r"sections must hold at most 32768 pairs in all") as info:
        posenc.rope_frequencies(128, sections=sections)
    assert time.monotonic() - start < 5  # a bound against the old hang, not a timing: it takes ~0.1 s
    assert len(str(info.value)) < 300  # once 3 MB


def test_a_sections_message_is_short():
    with pytest.raises(PosEncError) as info:
        posenc.rope_frequencies(128, sections=[1] * 1000)  # 1000 pairs, not 64: the sum is named, the tuple clipped
    assert len(str(info.value)) < 400 and "1000 pairs" in str(info.value)


@pytest.mark.parametrize("n_axes", [64, 65, 200])
def test_grid_takes_many_axes(n_axes):
    g = posenc.grid(*[1] * (n_axes - 1), 2)  # once: NumPy's "maximum supported dimension ... is 64"
    assert g.shape == (2, n_axes) and g[:, -1].tolist() == [0, 1] and not g[:, :-1].any()


def test_grid_beyond_a_head_of_axes_is_refused():
    with pytest.raises(PosEncError, match="grid takes at most 32768 axes"):
        posenc.grid(*[1] * 40000)


@pytest.mark.parametrize("sizes", [(2, 3), (3, 1, 4), (0, 3), (5,), (2, 2, 2, 2)])
def test_grid_is_c_order(sizes):
    ref = np.stack(np.meshgrid(*[np.arange(n) for n in sizes], indexing="ij"), -1).reshape(-1, len(sizes))
    assert np.array_equal(posenc.grid(*sizes), ref)


@pytest.mark.parametrize("segment", [Text(10**6), VisionGrid(1, 1000, 1000)])
def test_mrope_refuses_at_the_segment_that_passes_memory(monkeypatch, segment):
    monkeypatch.setattr(memory, "_memory", lambda: 2**30)  # 1 GiB: 44.7 million rows of [s, 3]
    with pytest.raises(PosEncError, match=r"M-RoPE positions of segments\[0 … 44\] of shape \(45000000, 3\)"):
        posenc.mrope_positions([segment] * 4_000_000)  # once: all 4 million looked at first (9.5 s, 45 s)
