"""posenc.exact.placement: outputs pieced together from diagonal rows.

The reference for every placement is NumPy fancy indexing written here:
``table[key_row[:, axes], arange(width)]``. Both engines (the numba kernels
and NumPy's takes) must give it bit for bit, for every dtype, axis pattern
(long runs, interleaved, random) and number of axes (over four takes
several select passes).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import posenc.exact.placement as placement
from posenc.exact.placement import SPAN, KeyScan, TableRows, consecutive_start, place_rows, scan_keys, table_rows


def expected(table: np.ndarray, rows: TableRows, axes: np.ndarray) -> np.ndarray:
    row_of = (rows.keys - rows.start).astype(np.intp)
    return np.ascontiguousarray(table[row_of[:, axes], np.arange(axes.shape[0])])


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and a.dtype == b.dtype and bool(np.array_equal(
        np.ascontiguousarray(a).view(np.uint8), np.ascontiguousarray(b).view(np.uint8)))


def axis_pattern(kind: str, n_axes: int, width: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "runs":  # contiguous sections, n-D blocks
        return np.sort(rng.integers(0, n_axes, width))
    if kind == "interleaved":  # Qwen3-VL: a, a + n, a + 2n, …
        return np.arange(width) % n_axes
    return rng.integers(0, n_axes, width)


def place_both(table: np.ndarray, rows: TableRows, axes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    fast = np.full((rows.keys.shape[0], axes.shape[0]), 7, dtype=table.dtype)
    place_rows(table, rows, axes, fast)
    slow = np.full_like(fast, 7)
    placement._place_numpy(table, rows, axes, slow)
    return fast, slow


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("kind", ["runs", "interleaved", "random"])
@pytest.mark.parametrize("n_axes", [1, 2, 3, 4, 5, 9])
def test_both_engines_give_the_fancy_index_bit_for_bit(dtype, kind, n_axes):
    rng = np.random.default_rng(n_axes * 10 + len(kind))
    m, width = 40_000, 70  # large enough for the compiled kernels and two threads
    keys = rng.integers(-50, 250, size=(m, n_axes)).astype(np.float64)
    keys[::5] = keys[::5, :1]  # text tokens: every axis at one position
    rows = table_rows(keys, scan_keys(keys))
    table = rng.standard_normal((rows.count, width)).astype(dtype)
    axes = axis_pattern(kind, n_axes, width, rng)
    want = expected(table, rows, axes)
    fast, slow = place_both(table, rows, axes)
    assert same_bits(fast, want)
    assert same_bits(slow, want)


@pytest.mark.parametrize("n_axes", [2, 3])
def test_grids_in_c_order_reuse_the_slow_axes_rows_correctly(n_axes):
    # the select kernel keeps the slow axes' part while their keys repeat; a repeat after a change must not reuse
    sizes = (3, 17, 29)[-n_axes:]
    keys = np.stack(np.meshgrid(*[np.arange(s) for s in sizes], indexing="ij"), -1).reshape(-1, n_axes)
    keys = np.concatenate([keys, keys[::-1], keys[:, ::-1], keys] * 40).astype(np.float64) + 1000
    rows = table_rows(keys, scan_keys(keys))
    table = np.random.default_rng(1).standard_normal((rows.count, 48)).astype(np.float32)
    axes = np.arange(48) % n_axes
    fast, slow = place_both(table, rows, axes)
    assert same_bits(fast, expected(table, rows, axes)) and same_bits(slow, fast)


@settings(max_examples=settings().max_examples, deadline=None)
@given(
    m=st.integers(1, 300),
    n_axes=st.integers(1, 6),
    width=st.integers(1, 40),
    spread=st.sampled_from([3, 5000, 2**40]),
    fractional=st.booleans(),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_keys_and_columns(m, n_axes, width, spread, fractional, seed):
    rng = np.random.default_rng(seed)
    keys = rng.integers(-spread, spread, size=(m, n_axes)).astype(np.float64)
    if fractional:
        keys += rng.integers(0, 4, size=keys.shape) / 4
    rows = table_rows(keys, scan_keys(keys))
    assert rows.count <= max(SPAN, m) or rows.values is not None
    table = rng.standard_normal((rows.count, width)).astype(np.float32)
    axes = rng.integers(0, n_axes, width)
    fast, slow = place_both(table, rows, axes)
    want = expected(table, rows, axes)
    assert same_bits(fast, want) and same_bits(slow, want)


def test_strided_outputs_take_numpys_path_and_agree():
    keys = np.array([[3.0, 5.0], [4.0, 4.0], [5.0, 3.0]])
    rows = table_rows(keys, scan_keys(keys))
    table = np.arange(rows.count * 4, dtype=np.float64).reshape(rows.count, 4)
    wide = np.zeros((3, 8))
    place_rows(table, rows, np.array([0, 1, 0, 1]), wide[:, ::2])
    assert wide[:, ::2].tolist() == expected(table, rows, np.array([0, 1, 0, 1])).tolist()
    assert not wide[:, 1::2].any()


def test_table_rows_tabulates_a_short_integer_range_whole():
    keys = np.array([[10.0, 12.0], [11.0, 30.0]])
    rows = table_rows(keys, scan_keys(keys))
    assert (rows.start, rows.count, rows.values) == (10, 21, None)
    assert rows.keys is keys


def test_table_rows_takes_distinct_values_when_sparse_or_fractional():
    far = np.array([[0.0, 10.0**12], [5.0, 0.0]])
    rows = table_rows(far, scan_keys(far))
    assert rows.values.tolist() == [0.0, 5.0, 10.0**12]
    assert rows.keys.tolist() == [[0, 2], [1, 0]] and rows.start == 0
    half = np.array([[0.5, 1.0]])
    assert table_rows(half, scan_keys(half)).values.tolist() == [0.5, 1.0]


@settings(max_examples=settings().max_examples * 4 // 3, deadline=None)  # the profile's, scaled
@given(st.lists(st.lists(st.integers(-(2**52), 2**52) | st.floats(-1e15, 1e15, allow_nan=False), min_size=3,
                         max_size=3), min_size=1, max_size=50))
def test_scan_agrees_with_plain_numpy(values):
    keys = np.array(values, dtype=np.float64) + 0.0  # -0.0 becomes 0.0, as positions are validated
    got = scan_keys(keys)
    assert got == KeyScan(float(keys.min()), float(keys.max()), bool(np.all(np.mod(keys, 1) == 0)),
                          all(len(set(r)) == 1 for r in keys.tolist()))


@pytest.mark.parametrize("last", [70_000.0, -0.5, 2.0**52 + 0.5, -(2.0**52) - 1, 0.25])
def test_scan_with_numba_loaded_and_without_agree(last, monkeypatch):
    keys = np.repeat(np.arange(70_000.0)[:, None], 3, axis=1)
    assert scan_keys(keys).diagonal
    keys[-1, 2] = last
    compiled = scan_keys(keys)
    want = KeyScan(float(min(0.0, last)), float(max(69_999.0, last)), last == np.floor(last), False)
    assert compiled == want
    monkeypatch.setattr(placement, "_kernels", lambda values: None)
    assert scan_keys(keys) == want


def test_consecutive_start():
    assert consecutive_start(np.arange(5.0, 9.0)) == 5
    assert consecutive_start(np.array([-3.0, -2.0])) == -3
    for bad in ([1.0], [1.5, 2.5], [1.0, 3.0], [1.0, 2.0, 2.0], [2.0, 1.0]):
        assert consecutive_start(np.array(bad)) is None


def test_concurrent_callers_get_their_own_rows():
    rng = np.random.default_rng(5)
    jobs = []
    for j in range(12):
        keys = rng.integers(0, 400, size=(30_000, 3)).astype(np.float64)
        rows = table_rows(keys, scan_keys(keys))
        table = rng.standard_normal((rows.count, 64)).astype(np.float32)
        axes = axis_pattern(("runs", "interleaved")[j % 2], 3, 64, rng)
        jobs.append((table, rows, axes, expected(table, rows, axes)))
    bad: list[int] = []

    def run(k: int) -> None:
        for j in range(k, len(jobs), 4):
            table, rows, axes, want = jobs[j]
            for _ in range(3):
                out = np.empty_like(want)
                place_rows(table, rows, axes, out)
                if not same_bits(out, want):
                    bad.append(j)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []


# ---------------------------------------------------------------- assemble: text runs filled, the rest placed

def diagonal_value(p: np.ndarray, width: int) -> np.ndarray:
    """The row of the diagonal point p, any function of (p, column) will do: p·1000 + column."""
    return (p[:, None] * 1000.0 + np.arange(width)).astype(np.float64)


def fill_rows(rows: TableRows, dest: np.ndarray) -> None:
    p = np.arange(rows.start, rows.start + rows.count, dtype=np.float64) if rows.values is None else rows.values
    dest[:] = diagonal_value(p, dest.shape[1])


def text_and_grids(layout: list[tuple[str, int]], n_axes: int = 3) -> np.ndarray:
    """Qwen2-VL-like keys: ("text", n) runs on the diagonal, ("grid", side) blocks of side x side points."""
    out, nxt = [], 0
    for kind, size in layout:
        if kind == "text":
            out.append(np.repeat(np.arange(nxt, nxt + size, dtype=np.float64)[:, None], n_axes, axis=1))
        else:
            g = np.stack(np.meshgrid(np.arange(size), np.arange(size), indexing="ij"), -1).reshape(-1, 2) + nxt
            out.append(np.concatenate([np.full((g.shape[0], n_axes - 2), float(nxt)), g], axis=1))
        nxt = int(out[-1].max()) + 1
    return np.concatenate(out)


@pytest.mark.parametrize("layout", [
    [("text", 600), ("grid", 40), ("text", 700)],
    [("grid", 30), ("text", 300), ("grid", 20), ("text", 257), ("grid", 9)],
    [("text", 255), ("grid", 10), ("text", 256)],  # one run just under RUN_MIN, one at it
    [("text", 3000)],
    [("grid", 50)],
])
@pytest.mark.parametrize("kind", ["runs", "interleaved"])
def test_assemble_fills_text_runs_and_places_the_rest(layout, kind):
    keys = text_and_grids(layout)
    width = 48
    axes = axis_pattern(kind, 3, width, np.random.default_rng(0))
    want = diagonal_value(keys.reshape(-1), width).reshape(keys.shape[0], 3, width)[
        np.arange(keys.shape[0])[:, None], axes, np.arange(width)]
    out = np.full((keys.shape[0], width), np.nan)
    placement.assemble(keys, axes, out, fill_rows)
    assert np.array_equal(out, want)


def test_assemble_computes_each_text_position_once_and_the_images_from_one_table():
    # text 0…899, a 60x60 image at 900 (its first point (900, 900, 900) extends the text run), text 960…1459,
    # a 30x30 image at 1460 (the same)
    keys = text_and_grids([("text", 900), ("grid", 60), ("text", 500), ("grid", 30)])
    calls: list[tuple[int, int, bool]] = []
    lock = threading.Lock()

    def spy(rows: TableRows, dest: np.ndarray) -> None:
        with lock:
            calls.append((rows.start, rows.count, rows.values is None))
        fill_rows(rows, dest)

    out = np.zeros((keys.shape[0], 32))
    placement.assemble(keys, np.arange(32) % 3, out, spy)
    assert calls[0] == (900, 1489 - 900 + 1, True)  # first the table: every diagonal point the images need
    text = np.zeros(1500, dtype=int)
    for start, count, ranged in calls[1:]:  # then the text runs, cut among the threads
        assert ranged
        text[start : start + count] += 1
    assert text[:901].tolist() == [1] * 901 and text[960:1461].tolist() == [1] * 501
    assert text.sum() == 901 + 501


@settings(max_examples=settings().max_examples * 2 // 3, deadline=None)
@given(sizes=st.lists(st.integers(1, 500), min_size=1, max_size=6), weights=st.lists(st.sampled_from([1.0, 1.6]),
       min_size=6, max_size=6), parts=st.integers(1, 4))
def test_shared_work_covers_every_row_once(sizes, weights, parts):
    seen: list[tuple[int, int]] = []
    lock = threading.Lock()

    def record(a: int, z: int) -> None:
        with lock:
            seen.append((a, z))

    edges = np.cumsum([0, *sizes]).tolist()
    pieces = [(a, z, w, record) for a, z, w in zip(edges[:-1], edges[1:], weights, strict=False)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(placement, "default_threads", lambda: parts)
        patch.setattr(placement, "_PARALLEL_MIN", 1)
        placement._run_shared(pieces)
    covered = np.zeros(edges[-1], dtype=int)
    for a, z in seen:
        assert a < z
        covered[a:z] += 1
    assert covered.tolist() == [1] * edges[-1]
