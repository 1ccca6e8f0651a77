"""TableCache: one exact table per dtype behind one lookup, grown only where it pays, never cast."""

from __future__ import annotations

import copy
import pickle
from dataclasses import dataclass, field

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc import PosEncError
from posenc.torch import TableCache
from posenc.torch._cache import DEFAULT_ROWS, SPARSE_FACTOR, drop_keys, position_bounds


@dataclass
class Counting:
    """Rows [p, 2p, 3p] for position p (exact in float32), recording every call."""

    calls: list[tuple[str, int, int]] = field(default_factory=list)

    def rows(self, start: int, length: int, dtype: np.dtype) -> np.ndarray:
        self.calls.append(("rows", start, length))
        return self._of(np.arange(start, start + length), dtype)

    def at(self, positions: np.ndarray, dtype: np.dtype) -> np.ndarray:
        self.calls.append(("at", int(positions.min()), positions.size))
        return self._of(positions, dtype)

    @staticmethod
    def _of(p: np.ndarray, dtype: np.dtype) -> np.ndarray:
        return (p.astype(np.float64)[:, None] * np.array([1.0, 2.0, 3.0])).astype(dtype)


def _expected(pos, dtype=torch.float32):
    p = torch.as_tensor(pos, dtype=torch.float64)[..., None]
    return (p * torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)).to(dtype)


def test_rows_from_construction_then_runs_and_gathers():
    b = Counting()
    c = TableCache(b, (3,))
    assert b.calls == [("rows", 0, DEFAULT_ROWS)] and c.table.shape == (DEFAULT_ROWS, 3)
    assert c.table.dtype == torch.float32
    assert torch.equal(c.lookup(5, offset=2), _expected(range(2, 7)))
    idx = torch.tensor([[9, 0], [3, 3]])
    assert torch.equal(c.lookup(2, positions=idx, batch=2), _expected(idx))
    assert torch.equal(c.lookup(2, offset=torch.tensor([10, 20]), batch=2), _expected([[10, 11], [20, 21]]))
    assert torch.equal(c.lookup(3, offset=np.int64(7)), _expected(range(7, 10)))  # NumPy integers are integers
    assert len(b.calls) == 1  # all of it read from the rows held


def test_growth_computes_only_new_rows_doubles_and_goes_below_zero():
    b = Counting()
    c = TableCache(b, (3,), stop=10)
    c.lookup(1, offset=10)
    assert b.calls[-1] == ("rows", 10, 246) and (c.start, c.stop) == (0, 256)  # at least 256 rows at once
    c.lookup(45, offset=255)
    assert b.calls[-1] == ("rows", 256, 256) and c.stop == 512  # doubles: decoding costs amortised O(1)
    c.lookup(5, offset=-3)
    assert b.calls[-1] == ("rows", -3, 3) and c.start == -3
    assert torch.equal(c.table, _expected(range(-3, 512)))
    n = len(b.calls)
    c.lookup(515, offset=-3)
    assert len(b.calls) == n  # nothing to do


def test_decoding_token_by_token_grows_geometrically():
    b = Counting()
    c = TableCache(b, (3,), stop=0)
    for t in range(20000):
        c.lookup(1, offset=t)
    assert len(b.calls) <= 10 and sum(n for _, _, n in b.calls) < 2 * 20000 + 256


@pytest.mark.parametrize(
    ("ask", "want"),
    [
        ({"positions": torch.tensor([0, 2**31 - 2])}, [0, 2**31 - 2]),  # issue 10: 238 GiB requested before
        ({"offset": 10**9}, [10**9, 10**9 + 1]),
        ({"positions": torch.tensor([5, -(10**12)])}, [5, -(10**12)]),
    ],
)
def test_scattered_positions_are_computed_not_spanned(ask, want):
    b = Counting()
    c = TableCache(b, (3,))
    got = c.lookup(2, **ask)
    assert torch.equal(got, _expected(want))
    assert (c.start, c.stop) == (0, DEFAULT_ROWS)  # the window did not move or grow
    assert sum(n for kind, _, n in b.calls[1:]) <= 2  # only the far rows were computed


def test_a_request_grows_the_window_by_at_most_a_small_multiple_of_itself():
    b = Counting()
    c = TableCache(b, (3,), stop=1000)
    c.lookup(3, offset=1000 + 1000 + 256 + SPARSE_FACTOR * 3 + 10)  # beyond doubling, and sparse: direct
    assert (c.start, c.stop) == (0, 1000)
    c.lookup(3, offset=1500)  # within doubling: the window grows
    assert c.stop == 2000
    long = 10000
    c.lookup(long, offset=2000 + SPARSE_FACTOR * long - long)  # a long prefill past the window: grows
    assert c.stop >= 2000 + SPARSE_FACTOR * long


def test_far_reserve_moves_the_window_and_huge_sizes_fail_fast():
    b = Counting()
    c = TableCache(b, (3,))
    c.reserve(10**9 + 16, 10**9)
    assert (c.start, c.stop) == (10**9, 10**9 + 16)
    assert torch.equal(c.lookup(16, offset=10**9), _expected(range(10**9, 10**9 + 16)))
    with pytest.raises(PosEncError, match="GiB"):
        c.reserve(2**45)  # not a MemoryError: refused before any allocation
    with pytest.raises(PosEncError, match="GiB"):
        TableCache(b, (3,), stop=2**45)
    with pytest.raises(PosEncError, match="2\\*\\*53"):
        c.reserve(2**53 + 1)


def test_float64_rows_on_demand_with_their_own_window():
    b = Counting()
    c = TableCache(b, (3,), stop=100)
    assert c.held(torch.float64) == (0, 0) and c.table64.dtype == torch.float64
    got = c.lookup(4, offset=2**40, dtype=torch.float64)  # far: direct, exact in float64
    assert got.dtype == torch.float64 and torch.equal(got, _expected(range(2**40, 2**40 + 4), torch.float64))
    assert torch.equal(c.lookup(4, offset=3, dtype=torch.float64), _expected(range(3, 7), torch.float64))
    assert c.held(torch.float64) == (0, 256) and c.held() == (0, 100)
    c.reserve(300, -20, dtype=torch.float64)
    assert c.held(torch.float64) == (-20, 492)  # doubled from its first row
    with pytest.raises(PosEncError, match=r"float32 or torch\.float64"):
        c.lookup(1, dtype=torch.float16)


def test_multi_dimensional_rows():
    class Pairs:
        def rows(self, start, length, dtype):
            return self.at(np.arange(start, start + length), dtype)

        def at(self, p, dtype):
            p = p.astype(dtype)
            return np.stack([np.stack([p, -p], 1), np.stack([p + 1, p - 1], 1)], 1)  # [n, 2, 2]

    c = TableCache(Pairs(), (2, 2), stop=6)
    got = c.lookup(3, positions=torch.tensor([[1, 5, 2]]), batch=1)
    assert got.shape == (1, 3, 2, 2)
    assert got[0, 1].tolist() == [[5.0, -5.0], [6.0, 4.0]]
    assert c.lookup(2, offset=4).shape == (2, 2, 2)
    far = c.lookup(2, positions=torch.tensor([3, 10**6]))
    assert far[1].tolist() == [[1e6, -1e6], [1e6 + 1, 1e6 - 1]] and far[0].tolist() == [[3, -3], [4, 2]]


def test_casts_never_reach_the_table():
    c = TableCache(Counting(), (3,), stop=20)
    for cast in (torch.bfloat16, torch.float16, torch.float64):
        c.to(cast)
        assert c.table.dtype == torch.float32 and torch.equal(c.table, _expected(range(20)))
    c.half()
    c.double()
    assert torch.equal(c.table, _expected(range(20))) and c.table64.dtype == torch.float64


def test_meta_then_to_empty_recomputes():
    b = Counting()
    with torch.device("meta"):
        c = TableCache(b, (3,), stop=20)
    assert c.table.is_meta and b.calls == []  # no work on meta
    assert c.lookup(4, offset=2, device="meta").is_meta
    c.to_empty(device="cpu")
    assert torch.equal(c.table, _expected(range(20)))
    c.to("meta")
    assert c.table.is_meta and c.table.shape == (20, 3)
    c.to("cpu")  # from meta: recomputed, not an error
    assert torch.equal(c.table, _expected(range(20)))


def test_replaced_or_cast_buffers_are_recomputed_at_the_next_lookup():
    c = TableCache(Counting(), (3,), stop=20)
    c.table = c.table.to(torch.bfloat16) + 0.5
    c.lookup(5)
    assert c.table.dtype == torch.float32 and torch.equal(c.table, _expected(range(20)))
    c.table = torch.zeros(20, 3)
    assert torch.equal(c.lookup(5), _expected(range(5)))


def test_state_dict_legacy_key_and_copies():
    c = TableCache(Counting(), (3,), stop=4)
    assert c.state_dict() == {}
    parent = torch.nn.Module()
    parent.cache = c
    parent.load_state_dict({"cache.table": torch.zeros(4, 3)}, strict=True)
    assert torch.equal(c.table, _expected(range(4)))
    sd = {"a.inv_freq": 1, "a.keep": 2}
    assert drop_keys(sd, "a.", ("inv_freq", "cos_cached")) == {"inv_freq": 1}
    assert sd == {"a.keep": 2}
    for other in (copy.deepcopy(c), pickle.loads(pickle.dumps(c))):  # each copy gets its own lock
        assert torch.equal(other.lookup(3, offset=300), _expected(range(300, 303)))
        assert other._lock is not c._lock


def test_tables_made_under_inference_mode_are_normal_tensors():
    c = TableCache(Counting(), (3,), stop=0)
    with torch.inference_mode():
        c.lookup(50)
    assert not c.table.is_inference()
    x = torch.ones(50, 3, requires_grad=True)
    (x * c.lookup(50)).sum().backward()
    assert torch.equal(x.grad, _expected(range(50)))


def test_reset_and_bad_builder():
    b = Counting()
    c = TableCache(b, (3,), stop=8)
    c.reset()
    assert c.table.shape == (0, 3) and (c.start, c.stop) == (0, 0)

    class Wrong(Counting):
        def rows(self, start, length, dtype):
            return np.zeros((length, 4), dtype=dtype)

    c.reset(Wrong())
    with pytest.raises(PosEncError, match="shape"):
        c.lookup(3)


@pytest.mark.parametrize(
    ("kw", "match"),
    [
        ({"positions": torch.arange(3)}, r"positions must have shape \[s\] = \[4\], got \[3\]"),
        ({"positions": torch.zeros(3, 4, dtype=torch.long), "batch": 2}, r"\[b, s\] = \[2, 4\], got \[3, 4\]"),
        ({"positions": torch.zeros(2, 4, dtype=torch.long)}, r"\[s\] = \[4\], got \[2, 4\]"),
        ({"offset": torch.tensor([1, 2, 3]), "batch": 2}, r"\[\] or \[b\] = \[2\], got \[3\]"),
        ({"offset": torch.tensor([1, 2])}, r"shape \[\], got \[2\]"),
        ({"offset": torch.tensor(1.0)}, "integers"),
        ({"offset": 1.5}, "offset must be an integer"),
        ({"offset": True}, "offset must be an integer"),
        ({"offset": 2**53}, "2\\*\\*53"),
        ({"offset": torch.tensor([2**53 - 2]), "batch": 1}, "2\\*\\*53"),
        ({"positions": torch.arange(4), "offset": 1}, "either"),
        ({"positions": [0, 1, 2, 3]}, "torch.Tensor"),
        ({"positions": torch.tensor([0.0, 1.0, float("nan"), 2.0])}, "nan"),
    ],
)
def test_bad_requests_name_the_value_and_shapes_before_any_work(kw, match):
    b = Counting()
    c = TableCache(b, (3,), stop=8)
    with pytest.raises(PosEncError, match=match):
        c.lookup(4, **kw)
    assert len(b.calls) == 1 and (c.start, c.stop) == (0, 8)


def test_position_bounds_span_the_positions_and_reject_non_integers():
    assert position_bounds(torch.tensor([[3, -2], [7, 0]])) == (-2, 8)
    assert position_bounds(torch.tensor([1.0, 5.0], dtype=torch.bfloat16)) == (1, 6)
    assert position_bounds(torch.zeros(0, dtype=torch.long)) == (0, 0)
    for bad, match in [
        (torch.tensor([0.0, float("nan")]), "nan"),
        (torch.tensor([float("-inf")]), "inf"),
        (torch.tensor([0.5]), "0.5"),
        (torch.tensor([2.0**53]), "9007199254740992"),
        (torch.tensor([-(2**53)]), "-9007199254740992"),
        (torch.tensor([True]), "bool"),
        (torch.tensor([1 + 1j]), "complex"),
    ]:
        with pytest.raises(PosEncError, match=match):
            position_bounds(bad)
    with pytest.raises(PosEncError, match=r"torch\.Tensor"):
        position_bounds([1, 2])  # type: ignore[arg-type]


_OFFSETS = st.one_of(
    st.integers(-(2**60), 2**60),
    st.integers(-100, 5000),
    st.floats(allow_nan=True, allow_infinity=True),
    st.booleans(),
    st.none(),
    st.sampled_from([np.int64(7), np.uint64(2**63), np.int8(-3), np.float64(3.0), "3", 2**53 - 2]),
)


@given(offset=_OFFSETS, s=st.integers(0, 5))
def test_any_offset_gives_the_exact_rows_or_posenc_error(offset, s):
    c = TableCache(Counting(), (3,), stop=64)
    try:
        got = c.lookup(s, offset=offset)
    except PosEncError as exc:
        assert repr(offset)[:20] in str(exc) or "2**53" in str(exc) or "integer" in str(exc)
        assert (c.start, c.stop) == (0, 64)
        return
    assert torch.equal(got, _expected(range(int(offset), int(offset) + s)))


@given(
    values=st.lists(st.one_of(st.integers(-(2**62), 2**62), st.integers(-50, 500),
                              st.floats(allow_nan=True, allow_infinity=True)), min_size=1, max_size=6),
    dtype=st.sampled_from([torch.int64, torch.int32, torch.float64, torch.float32, torch.bool, torch.complex64]),
    batched=st.booleans(),
)
def test_any_positions_give_the_exact_rows_or_posenc_error(values, dtype, batched):
    try:
        pos = torch.tensor(values, dtype=torch.float64 if any(isinstance(v, float) for v in values) else None).to(dtype)
    except (RuntimeError, OverflowError):
        return  # not a tensor torch can hold
    if batched:
        pos = pos[None]
    c = TableCache(Counting(), (3,), stop=64)
    if not _valid(pos):
        with pytest.raises(PosEncError):
            c.lookup(len(values), positions=pos, batch=1 if batched else None)
        assert (c.start, c.stop) == (0, 64)
        return
    got = c.lookup(len(values), positions=pos, batch=1 if batched else None)
    assert torch.equal(got, _expected(pos.to(torch.int64)))


def _valid(pos: torch.Tensor) -> bool:
    """Integers (or integer-valued floats) with |p| < 2**53, written out here."""
    if pos.dtype in (torch.bool, torch.complex64):
        return False
    if pos.is_floating_point():
        p = pos.to(torch.float64)
        return bool((p.isfinite() & (p == p.trunc()) & (p.abs() < 2**53)).all())
    # through float64: abs() of int64's minimum overflows back to itself
    return bool((pos.to(torch.int64).to(torch.float64).abs() < 2**53).all())
