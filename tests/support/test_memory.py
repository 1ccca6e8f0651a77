"""Sizes checked on every temporary, before any work (issue 18, section 4).

Before: only outputs were sized. ``encode(np.broadcast_to(1.0, (10**5, 10**5)), 4)``
failed with a MemoryError after 8 s (a float64 copy of the view), ``t5_bucket``
on a 10**10-element view after 36 s, ``AlibiBias(8)(10**6, 10**6)``,
``T5RelativeBias(4)(1, 10**12)`` and ``positions_from_cu_seqlens`` reached
torch's allocator, ``T5RelativeBias(4)(30000, 30000)`` worked 17 s before it
failed, and temporaries reached 1.15–3.8× the output. Now each entry point
declares its output and its working arrays to :func:`posenc.support.memory.check_size`
before it reads a value. Two kinds of test hold every declaration:

- *honest*: the machine's memory set (``posenc.support.memory._memory``) to one byte
  below the peak tracemalloc measures for a call, the call is refused by the
  size check, before any work; with a few times that peak it runs;
- *at once*: views of 10**12 elements are refused with a message naming the
  size and the limit, while tracemalloc sees less than a megabyte allocated.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import posenc
import posenc.support.memory as memory
from posenc.errors import PosEncError

N = 100_000  # positions: outputs of a few tens of MB, far above any fixed overhead
_FIELDS_RNG = np.random.default_rng(31)  # coordinates and B for the neural-field entries (issue 31 §4)

#: name -> (the inputs, built before the measure: the caller's, not the call's; the call)
CALLS: dict[str, tuple[Callable[[], Any], Callable[[Any], Any]]] = {
    "encode": (lambda: np.arange(N, dtype=np.float64), lambda p: posenc.encode(p, 64)),
    "encode d=4": (lambda: np.arange(16 * N), lambda p: posenc.encode(p, 4)),
    "encode list": (lambda: list(range(N)), lambda p: posenc.encode(p, 64)),
    "encode fairseq (origin)": (lambda: np.arange(8 * N), lambda p: posenc.encode(p, 8, convention="fairseq")),
    "encode keras odd": (lambda: np.arange(N), lambda p: posenc.encode(p, 63, convention="keras")),
    "encode strided view": (lambda: np.arange(2 * N, dtype=np.float64)[::2], lambda p: posenc.encode(p, 32)),
    "table": (lambda: None, lambda _: posenc.table(N, 64)),
    "table keras odd": (lambda: None, lambda _: posenc.table(N, 63, convention="keras")),
    "encode_nd": (lambda: np.stack([np.arange(N), np.arange(N)], -1), lambda c: posenc.encode_nd(c, 64)),
    "rope_cos_sin": (lambda: np.arange(N), lambda p: posenc.rope_cos_sin(p, 64)),
    "rope_cos_sin yarn": (lambda: np.arange(N), lambda p: posenc.rope_cos_sin(p, 64, scaling=posenc.YaRN(4.0, 4096))),
    "apply_rope": (lambda: (np.ones((N, 64), np.float32), np.arange(N)), lambda a: posenc.apply_rope(*a)),
    "apply_rope float16": (lambda: (np.ones((N, 64), np.float16), np.arange(N)), lambda a: posenc.apply_rope(*a)),
    "apply_rope xpos": (lambda: (np.ones((N // 4, 64), np.float32), np.arange(N // 4)),
                        lambda a: posenc.apply_rope(*a, xpos=posenc.XPos(), role="q")),
    "xpos_scale": (lambda: np.arange(N // 4), lambda p: posenc.xpos_scale(p, 64)),
    "xpos_decay": (lambda: np.arange(N // 4), lambda p: posenc.xpos_decay(p, 64)),
    "t5_bucket": (lambda: np.arange(-8 * N, 8 * N), posenc.t5_bucket),
    "t5_bucket int32 view": (lambda: np.arange(-8 * N, 8 * N, dtype=np.int32)[::2], posenc.t5_bucket),
    "alibi_bias": (lambda: None, lambda _: posenc.alibi_bias(300, 300, 8)),
    "alibi_bias positions": (lambda: np.arange(300)[None].repeat(2, 0),
                             lambda p: posenc.alibi_bias(300, 300, 8, positions=p)),
    # issue 31 §4: fourier_features was not sized (a MemoryError for 745 GiB); nerf_encoding sized only after
    # reading x
    "nerf": (lambda: _FIELDS_RNG.uniform(-1, 1, (N, 3)), lambda x: posenc.nerf_encoding(x, 10)),
    "nerf tcnn (turns)": (lambda: _FIELDS_RNG.uniform(-1, 1, (N, 3)),
                          lambda x: posenc.nerf_encoding(x, 10, convention="tcnn")),
    "nerfstudio float64 input": (lambda: _FIELDS_RNG.uniform(-1, 1, (N, 3)),
                                 lambda x: posenc.nerf_encoding(x, 10, convention="nerfstudio", include_input=True,
                                                                dtype=np.float64)),
    "nerf wide rows": (lambda: _FIELDS_RNG.uniform(-1, 1, (4, 20_000)),
                       lambda x: posenc.nerf_encoding(x, 6, convention="tcnn")),
    "fourier_features": (lambda: (_FIELDS_RNG.uniform(-1, 1, (N, 3)), _FIELDS_RNG.normal(0, 5, (64, 3))),
                         lambda a: posenc.fourier_features(*a)),
    "fourier_features wide B": (lambda: (_FIELDS_RNG.uniform(-1, 1, (4, 3)), _FIELDS_RNG.normal(0, 5, (50_000, 3))),
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

    call()  # warm: caches, lazily built ladders
    peak = _peak(call)
    monkeypatch.setattr(memory, "_memory", lambda: peak - 1)
    tracemalloc.start()
    try:
        with pytest.raises(PosEncError, match=r"more than this machine's .* of memory"):
            call()
        refused_at = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert refused_at < peak / 4  # refused by the size check, before the work (once: a MemoryError, or worse)
    monkeypatch.setattr(memory, "_memory", lambda: 6 * peak)  # the declarations are not wildly above the truth
    call()


HUGE = (10**6, 10**6)  # 10**12 elements: beyond any machine's memory, as a view of one value


@pytest.mark.parametrize(("name", "call", "message"), [
    ("encode", lambda: posenc.encode(np.broadcast_to(1.0, HUGE), 4),
     r"encoding of shape \(1000000, 1000000, 4\) in float32 needs 14\.6 TiB with .* of working arrays"),
    ("t5_bucket", lambda: posenc.t5_bucket(np.broadcast_to(np.int64(1), HUGE)),
     r"t5_bucket output of shape \(1000000, 1000000\) in int64 needs 7\.3 TiB with"),
    ("rope_cos_sin", lambda: posenc.rope_cos_sin(np.broadcast_to(1, HUGE), 8),
     r"cos table of shape \(1000000000000, 4\) in float32 needs 14\.6 TiB with"),
    ("apply_rope", lambda: posenc.apply_rope(np.ones((1, 8), np.float32), np.broadcast_to(1, HUGE)),
     r"apply_rope output of shape \(1, 8\) in float32 needs 32 bytes with .* TiB of working arrays"),
    ("xpos_scale", lambda: posenc.xpos_scale(np.broadcast_to(1.0, HUGE), 8), r"xpos_scale output of shape"),
    ("xpos_decay", lambda: posenc.xpos_decay(np.broadcast_to(1.0, HUGE), 8), r"xpos_decay output of shape"),
    ("encode_nd", lambda: posenc.encode_nd(np.broadcast_to(1.0, (*HUGE, 2)), 4), r"encode_nd output of shape"),
])
def test_a_huge_view_is_refused_before_it_is_read(name, call, message):
    tracemalloc.start()
    try:
        with pytest.raises(PosEncError, match=message) as info:
            call()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 2**20  # not a float64 copy of the view: nothing was read
    assert "more than this machine's" in str(info.value) and len(str(info.value)) < 300


def test_a_table_that_fits_but_whose_work_does_not_is_refused(monkeypatch):
    # the output alone (6.4 MB) fits in 7 MB; with the positions' float64 copies it does not
    monkeypatch.setattr(memory, "_memory", lambda: 7_000_000)
    with pytest.raises(PosEncError, match=r"needs 6\.1 MiB with .* of working arrays \(.* in all\)"):
        posenc.encode(np.arange(N), 16)
    monkeypatch.setattr(memory, "_memory", lambda: 70_000_000)
    assert posenc.encode(np.arange(N), 16).shape == (N, 16)


def test_shape_of_reads_no_value():
    assert memory.shape_of(np.broadcast_to(1.0, HUGE)) == HUGE
    assert memory.shape_of([[1, 2], [3, 4], [5, 6]]) == (3, 2)
    assert memory.shape_of(7) == ()
    assert memory.shape_of([[1], [2, 3]]) is None  # ragged: the positions check names it
