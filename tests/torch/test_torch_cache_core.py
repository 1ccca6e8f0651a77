"""The torch cache and the NumPy cache follow one policy: same requests, same windows, same bits.

posenc.rows.window decides which rows a cache holds; posenc.torch.TableCache
keeps them in buffers, posenc.rows.RowCache in NumPy arrays. Driven by the
same requests, both hold the same window after each one and return the same
rows, bit for bit (the rows are a closed form written here, so both are also
checked against it).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from posenc.rows import RowCache
from posenc.torch import TableCache


class Affine:
    """Row p = [p + 0.5, -3p] in the asked dtype."""

    def rows(self, start: int, length: int, dtype: np.dtype) -> np.ndarray:
        return self.at(np.arange(start, start + length, dtype=np.int64), dtype)

    def at(self, positions: np.ndarray, dtype: np.dtype) -> np.ndarray:
        p = positions.astype(np.float64)
        return np.stack([p + 0.5, -3 * p], axis=-1).astype(dtype)


def _want(positions, dtype=np.float32) -> np.ndarray:
    p = np.asarray(positions, dtype=np.float64)
    return np.stack([p + 0.5, -3 * p], axis=-1).astype(dtype)


# (first, length) runs and explicit position lists: decoding, a prefill, far and sparse ones, below the window
_REQUESTS = [(4096, 1), (4097, 1), (8190, 10), [3, 10**6, 10**6], (-40, 8), (10**9, 4), (20_000, 50_000),
             [0, 2**31 - 2], (70_000, 1), [-41, 5, 69_999]]


@pytest.mark.parametrize(("tdtype", "ndtype"), [(torch.float32, np.float32), (torch.float64, np.float64)])
def test_same_requests_same_windows_same_bits(tdtype, ndtype):
    t, n = TableCache(Affine(), (2,)), RowCache(Affine(), (2,))
    for req in _REQUESTS:
        if isinstance(req, tuple):
            got_t = t.lookup(req[1], offset=req[0], dtype=tdtype).numpy()
            got_n = n.run(req[0], req[1], ndtype)
            want = _want(range(req[0], req[0] + req[1]), ndtype)
        else:
            got_t = t.lookup(len(req), positions=torch.tensor(req), dtype=tdtype).numpy()
            got_n = n.at(req, ndtype)
            want = _want(req, ndtype)
        np.testing.assert_array_equal(got_t, want)
        np.testing.assert_array_equal(got_n, want)
        assert t.held(tdtype) == n.held(ndtype), req
    t.reserve(10**9 + 16, 10**9, dtype=tdtype)
    n.reserve(10**9 + 16, 10**9, ndtype)
    assert t.held(tdtype) == n.held(ndtype) == (10**9, 10**9 + 16)
