"""TableCache: the exact, growing, never-cast table shared by the torch modules."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
import torch

from posenc import PosEncError
from posenc.torch import TableCache
from posenc.torch._cache import drop_keys, position_bounds


@dataclass
class Counting:
    """Rows [p, 2p, 3p] for position p (exact in float32), recording every call."""

    calls: list[tuple[int, int]] = field(default_factory=list)

    def __call__(self, start: int, length: int) -> np.ndarray:
        self.calls.append((start, length))
        p = np.arange(start, start + length, dtype=np.float64)[:, None]
        return p * np.array([1.0, 2.0, 3.0])


def _expected(lo, hi):
    return torch.arange(lo, hi, dtype=torch.float32)[:, None] * torch.tensor([1.0, 2.0, 3.0])


def test_rows_and_take_read_the_builders_rows():
    c = TableCache(Counting(), (3,), stop=10)
    assert c.table.dtype == torch.float32 and c.table.shape == (10, 3)
    assert torch.equal(c.rows(2, 5), _expected(2, 7))
    idx = torch.tensor([[9, 0], [3, 3]])
    assert torch.equal(c.take(idx), _expected(0, 10)[idx])


def test_growth_computes_only_new_rows_and_goes_below_zero():
    b = Counting()
    c = TableCache(b, (3,), stop=10)
    c.ensure(0, 10)
    assert b.calls == [(0, 10)]
    c.ensure(5, 11)
    assert b.calls[-1] == (10, 246) and (c.start, c.stop) == (0, 256)  # at least 256 rows at once
    c.ensure(0, 300)
    assert b.calls[-1] == (256, 256) and c.stop == 512  # doubles
    c.ensure(-3, 2)
    assert b.calls[-1] == (-3, 3) and c.start == -3
    assert torch.equal(c.table, _expected(-3, 512))
    assert torch.equal(c.take(torch.tensor([-3, 0, 511])), _expected(-3, 512)[[0, 3, 514]])
    n = len(b.calls)
    c.ensure(-3, 512)
    assert len(b.calls) == n  # nothing to do


def test_far_positions_grow_only_a_bounded_slack():
    c = TableCache(Counting(), (3,))
    c.ensure(0, 10)
    c.ensure(100000, 100001)
    assert 100001 <= c.stop <= 100001 + 2**16


def test_multi_dimensional_rows():
    def build(start, length):
        p = np.arange(start, start + length, dtype=np.float32)
        return np.stack([np.stack([p, -p], 1), np.stack([p + 1, p - 1], 1)], 1)  # [length, 2, 2]

    c = TableCache(build, (2, 2), stop=6)
    got = c.take(torch.tensor([[1, 5, 2]]))
    assert got.shape == (1, 3, 2, 2)
    assert got[0, 1].tolist() == [[5.0, -5.0], [6.0, 4.0]]
    assert c.rows(4, 2).shape == (2, 2, 2)


def test_casts_never_reach_the_table():
    c = TableCache(Counting(), (3,), stop=20)
    for cast in (torch.bfloat16, torch.float16, torch.float64):
        c.to(cast)
        assert c.table.dtype == torch.float32 and torch.equal(c.table, _expected(0, 20))
    c.half()
    c.double()
    assert torch.equal(c.table, _expected(0, 20))


def test_meta_then_to_empty_recomputes():
    b = Counting()
    with torch.device("meta"):
        c = TableCache(b, (3,), stop=20)
    assert c.table.is_meta and b.calls == []  # no work on meta
    c.to_empty(device="cpu")
    assert torch.equal(c.table, _expected(0, 20))
    c.to("meta")
    assert c.table.is_meta and c.table.shape == (20, 3)
    c.to("cpu")  # from meta: recomputed, not an error
    assert torch.equal(c.table, _expected(0, 20))


def test_replaced_or_cast_buffers_are_recomputed_on_ensure():
    c = TableCache(Counting(), (3,), stop=20)
    c.table = c.table.to(torch.bfloat16) + 0.5
    c.ensure(0, 5)
    assert c.table.dtype == torch.float32 and torch.equal(c.table, _expected(0, 20))
    c.table = torch.zeros(20, 3)
    c.ensure(0, 5)
    assert torch.equal(c.table, _expected(0, 20))


def test_state_dict_and_legacy_key():
    c = TableCache(Counting(), (3,), stop=4)
    assert c.state_dict() == {}
    parent = torch.nn.Module()
    parent.cache = c
    parent.load_state_dict({"cache.table": torch.zeros(4, 3)}, strict=True)
    assert torch.equal(c.table, _expected(0, 4))
    sd = {"a.inv_freq": 1, "a.keep": 2}
    assert drop_keys(sd, "a.", ("inv_freq", "cos_cached")) == {"inv_freq": 1}
    assert sd == {"a.keep": 2}


def test_tables_made_under_inference_mode_are_normal_tensors():
    c = TableCache(Counting(), (3,))
    with torch.inference_mode():
        c.ensure(0, 50)
    assert not c.table.is_inference()
    x = torch.ones(50, 3, requires_grad=True)
    (x * c.rows(0, 50)).sum().backward()
    assert torch.equal(x.grad, _expected(0, 50))


def test_reset_and_bad_builder():
    b = Counting()
    c = TableCache(b, (3,), stop=8)
    c.reset()
    assert c.table.shape == (0, 3) and (c.start, c.stop) == (0, 0)
    c.reset(lambda s, n: np.zeros((n, 4), dtype=np.float32))
    with pytest.raises(PosEncError, match="shape"):
        c.ensure(0, 3)


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
