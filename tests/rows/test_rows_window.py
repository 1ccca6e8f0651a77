"""The window policy, without torch: which rows a cache reads, grows or computes directly.

The expectations are written out here from the rules in the docstring of
posenc.rows.window, never taken from its functions' own output.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc import PosEncError
from posenc.rows.window import (
    AHEAD,
    MAX_SLACK,
    MIN_GROWTH,
    SPARSE_FACTOR,
    check_positions_held,
    covers,
    distinct,
    following,
    for_lookup,
    for_reserve,
    grown,
)


def test_decoding_token_by_token_costs_amortised_constant_rows():
    held, built = (0, 4096), 0
    for p in range(4096, 200_000):  # one token at a time past the window
        action = for_lookup(held, p, p + 1, 1)
        if action == "grow":
            new = grown(held, p, p + 1)
            built += (new[1] - new[0]) - (held[1] - held[0])
            held = new
        else:
            assert action == "read"
    assert held[0] == 0 and held[1] >= 200_000
    assert built <= 2 * 200_000  # doubling: at most twice the rows ever needed
    # and the window grew by doubling: 4096 -> 8192 -> ... (never past the need by more than MAX_SLACK)
    assert held[1] - 200_000 <= max(200_000, MAX_SLACK)


def test_far_and_sparse_positions_are_computed_directly():
    assert for_lookup((0, 4096), 0, 2**31 - 1, 2) == "direct"  # positions=[0, 2**31 - 2]
    assert for_lookup((0, 4096), 10**9, 10**9 + 8, 8) == "direct"  # offset=10**9 beside a window at 0
    assert for_lookup((0, 0), 10**6, 10**6 + 1, 1) == "direct"  # an empty window sits at 0
    assert for_lookup((0, 4096), 5, 9, 4) == "read"
    assert for_lookup((0, 4096), 9, 9, 0) == "read"  # nothing asked


@pytest.mark.parametrize("long", [10_000, 50_000])
def test_a_long_prefill_past_the_window_grows_it(long):
    # growth beyond doubling is allowed up to SPARSE_FACTOR rows per row asked for
    start = 4096 + SPARSE_FACTOR * long - long
    assert for_lookup((0, 4096), start, start + long, long) == "grow"
    assert for_lookup((0, 4096), start + 4096 + 1, start + 4096 + 1 + long, long) == "direct"


def test_growth_rules():
    assert grown((0, 4096), 4096, 4097) == (0, 8192)  # doubling
    assert grown((0, 0), 0, 1) == (0, MIN_GROWTH)  # at least MIN_GROWTH rows
    assert grown((-5, 10), -20, 0) == (-20, 10)  # downwards: exactly to the need
    assert grown((0, 10**6), 10**6, 10**6 + 1) == (0, 10**6 + 1 + MAX_SLACK)  # never far past the need


@given(a=st.integers(-10**6, 10**6), size=st.integers(0, 10**5), lo=st.integers(-2 * 10**6, 2 * 10**6),
       n=st.integers(1, 10**5))
def test_growth_always_covers_and_keeps_the_window(a, size, lo, n):
    held, hi = (a, a + size), lo + n
    new = grown(held, lo, hi)
    assert covers(new, lo, hi) and covers(new, *held)  # the request and every row held before
    action = for_lookup(held, lo, hi, n)
    if covers(held, lo, hi):
        assert action == "read"
    else:
        growth = (max(held[1], hi) - min(held[0], lo)) - size
        assert action == ("grow" if growth <= max(size, MIN_GROWTH, SPARSE_FACTOR * n) else "direct")


def test_reserve():
    assert for_reserve((0, 4096), 0, 4096) == "held"
    assert for_reserve((0, 4096), 5, 5) == "held"  # nothing asked
    assert for_reserve((0, 4096), 0, 8192) == "grow"
    assert for_reserve((0, 4096), 10**9, 10**9 + 8) == "move"


def test_positions_held_below_2_53():
    check_positions_held(-(2**53) + 1, 2**53)
    for lo, hi in [(0, 2**53 + 1), (-(2**53), 0)]:
        with pytest.raises(PosEncError, match=r"\|p\| < 2\*\*53"):
            check_positions_held(lo, hi)


def test_distinct_computes_each_position_once():
    far = np.array([7, 3, 7, 7, 3], dtype=np.int64)
    ask, inverse = distinct(far)
    assert ask.tolist() == [3, 7] and inverse is not None and ask[inverse].tolist() == far.tolist()
    once = np.array([9, 2, 5], dtype=np.int64)
    ask, inverse = distinct(once)
    assert ask is once and inverse is None  # the caller's order, no copy


def test_the_window_follows_a_decode_far_from_it():
    held, built = (0, 4096), 0
    start = 10**6
    for p in range(start, start + 20_000):  # decoding at 10^6, a token at a time
        span = following(held, p, p + 1)
        if span is None:
            assert held[0] <= p < held[1]
            continue
        assert span[0] <= p and p + 1 + AHEAD <= span[1]  # it holds the step and the next AHEAD
        built += span[1] - span[0] if not (held[0] <= span[0] <= held[1]) else span[1] - held[1]
        held = span
    assert held[0] == start  # moved once to the decode, grown from there
    assert built <= 2 * 20_000 + AHEAD  # doubling: amortised O(1) rows per token
    assert following(held, 5, 6) == (5, 6 + max(AHEAD, held[1] - held[0], 1))  # a jump back: it moves there
