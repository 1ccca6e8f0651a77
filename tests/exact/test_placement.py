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


@settings(max_examples=60, deadline=None)
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


@settings(max_examples=80, deadline=None)
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
