"""The NumPy row cache: exact rows by the window policy, and safe under threads, without torch.

The rows are a closed form written here (row p = [p, -2p, 3p], exact in
float32 for |p| < 2**22), so every answer is checked against it.
"""

from __future__ import annotations

import pickle
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from posenc import PosEncError
from posenc.rows import DEFAULT_ROWS, RowCache

_COUNTING = threading.Lock()


class Linear:
    """Row p = [p, -2p, 3p]; counts the rows it computes."""

    def __init__(self) -> None:
        self.built = 0

    def rows(self, start: int, length: int, dtype: np.dtype) -> np.ndarray:
        return self.at(np.arange(start, start + length, dtype=np.int64), dtype)

    def at(self, positions: np.ndarray, dtype: np.dtype) -> np.ndarray:
        with _COUNTING:
            self.built += positions.size
        return (positions.astype(np.float64)[:, None] * np.array([1.0, -2.0, 3.0])).astype(dtype)


def expected(positions, dtype=np.float32) -> np.ndarray:
    p = np.asarray(positions, dtype=np.float64)
    return np.stack([p, -2 * p, 3 * p], axis=-1).astype(dtype)


def test_rows_from_construction_and_reads():
    b = Linear()
    c = RowCache(b, (3,))
    assert c.held() == (0, DEFAULT_ROWS) and b.built == DEFAULT_ROWS
    np.testing.assert_array_equal(c.run(10, 5), expected(range(10, 15)))
    np.testing.assert_array_equal(c.at([[3, 0], [7, 4095]]), expected([[3, 0], [7, 4095]]))
    assert b.built == DEFAULT_ROWS  # read from the window
    with pytest.raises(ValueError):
        c.run(0, 2)[0, 0] = 1.0  # read-only: a view of a window nothing writes again


def test_decoding_grows_the_window_far_positions_are_not_kept():
    b = Linear()
    c = RowCache(b, (3,), stop=16)
    for p in range(16, 3000):
        np.testing.assert_array_equal(c.run(p, 1), expected([p]))
    assert c.held()[0] == 0 and c.held()[1] >= 3000 and b.built <= 2 * 3000 + 256
    before = (c.held(), b.built)
    np.testing.assert_array_equal(c.at([5, 2**31 - 2, 2**31 - 2, 10**9]), expected([5, 2**31 - 2, 2**31 - 2, 10**9]))
    assert c.held() == before[0] and b.built == before[1] + 2  # each far position once, nothing kept
    np.testing.assert_array_equal(c.run(-(10**12), 3), expected(range(-(10**12), -(10**12) + 3), np.float64)
                                  .astype(np.float32))


def test_float64_rows_have_their_own_window():
    c = RowCache(Linear(), (3,), stop=8)
    assert c.held(np.float64) == (0, 0)
    np.testing.assert_array_equal(c.run(2, 3, np.float64), expected(range(2, 5), np.float64))
    assert c.held(np.float64)[1] >= 5 and c.held() == (0, 8)


def test_reserve_grows_or_moves():
    c = RowCache(Linear(), (3,), stop=100)
    c.reserve(1000)
    assert c.held() == (0, 1000)
    c.reserve(10**9 + 8, 10**9)
    assert c.held() == (10**9, 10**9 + 8)
    np.testing.assert_array_equal(c.run(10**9 + 1, 2), expected([10**9 + 1, 10**9 + 2]))
    c.reset()
    assert c.held() == (0, 0)


@pytest.mark.parametrize(("call", "says"), [
    (lambda c: c.run(2**53 - 1, 2), "2**53"),
    (lambda c: c.at([0, 2**53]), "2**53"),
    (lambda c: c.at(np.array([2**64 - 1], dtype=np.uint64)), "2**53"),
    (lambda c: c.at([0.5]), "positions must be integers"),
    (lambda c: c.run(0, 1, np.float16), "dtype must be float32 or float64"),
    (lambda c: c.run(0, -1), "length must be >= 0"),
    (lambda c: RowCache(object(), (3,)), "build must be a row builder"),
    (lambda c: RowCache(Linear(), "abc"), "row_shape must be"),
])
def test_bad_requests_are_refused_before_any_work(call, says):
    c = RowCache(Linear(), (3,), stop=4)
    with pytest.raises(PosEncError, match=says.replace("*", r"\*")):
        call(c)


def test_a_builder_answering_the_wrong_shape_is_refused():
    class Wrong(Linear):
        def at(self, positions, dtype):
            return super().at(positions, dtype)[:, :2]

    with pytest.raises(PosEncError, match=r"table builder returned shape \(4, 2\), expected \(4, 3\)"):
        RowCache(Wrong(), (3,), stop=4)


def test_pickles_with_a_fresh_lock():
    c = RowCache(Linear(), (3,), stop=8)
    d = pickle.loads(pickle.dumps(c))
    assert d._lock is not c._lock and d.held() == (0, 8)
    np.testing.assert_array_equal(d.run(20, 2), expected([20, 21]))


def test_concurrent_callers_always_get_exact_rows():
    """Many threads decode, prefill, look up sparse positions and reserve on one cache at once.

    Every answer is checked against the closed form when it returns and
    again at the end: a view handed out is never changed by another thread's
    growth.
    """
    c = RowCache(Linear(), (3,), stop=64)
    kept: list[tuple[np.ndarray, np.ndarray]] = []
    errors: list[str] = []
    barrier = threading.Barrier(8)

    def worker(seed: int) -> None:
        rng = np.random.default_rng(seed)
        barrier.wait()
        for step in range(300):
            kind = step % 4
            if kind == 0:  # decode: the next position of this thread's stream
                p = 64 + seed * 7 + step * 3
                got, want = c.run(p, 1), expected([p])
            elif kind == 1:  # a prefill
                p = int(rng.integers(-500, 5000))
                got, want = c.run(p, 40), expected(range(p, p + 40))
            elif kind == 2:  # sparse and near positions mixed, repeats too
                pos = np.concatenate([rng.integers(0, 2000, 5), rng.integers(10**6, 10**6 + 3, 3)])
                got, want = c.at(pos), expected(pos)
            else:
                c.reserve(int(rng.integers(100, 6000)), int(rng.integers(-300, 100)), np.float64)
                p = int(rng.integers(-300, 100))
                got, want = c.run(p, 8, np.float64), expected(range(p, p + 8), np.float64)
            if not np.array_equal(got, want):
                errors.append(f"thread {seed} step {step}")
            kept.append((got, want))

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(worker, range(8)))
    assert errors == []
    assert all(np.array_equal(got, want) for got, want in kept)  # nothing handed out changed later
    assert len(kept) == 8 * 300
