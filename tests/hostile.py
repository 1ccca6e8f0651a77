"""Hostile inputs for the fuzz suite (tests/fuzz/): hypothesis strategies, one per kind of argument.

Each strategy mixes values posenc must accept (kept small, so a fuzz example
costs milliseconds) with values it must refuse: huge integers (10**400),
NaN and infinities, subnormals, wrong types, NumPy scalars and arrays of
every dtype, empty and ragged arrays, strings that look like numbers.
A refused value must come back as a PosEncError that names it; an accepted
one must give a correct result. Sizes are either small or far beyond any
machine (10**15 rows), never "valid but slow".

For the command line, :func:`tokens` gives hostile text for an option.
"""

from __future__ import annotations

import math
import re
from decimal import Decimal
from fractions import Fraction
from typing import Any

import hypothesis.strategies as st
import numpy as np
from hypothesis.extra import numpy as hnp

__all__ = [
    "HUGE_INTS",
    "JUNK",
    "Unread",
    "bases",
    "d_models",
    "dtypes",
    "junk",
    "layouts",
    "lengths",
    "misplaced",
    "misplaced_values",
    "names_the_value",
    "positions",
    "reals",
    "small_ints",
    "tokens",
]

HUGE_INTS = [10**400, -(10**400), 2**53, -(2**53), 2**63, -(2**63), 2**64, 2**1000, 10**15]


class Unread:
    """An array of ``shape`` that fails the test if any value of it is read (``__array__``).

    What "refused before it is read" means, shown without a clock: an entry
    point sizes its output from ``shape`` alone, so a refusal on size must
    come before NumPy is asked for a single value.
    """

    def __init__(self, shape: tuple[int, ...], dtype: Any = np.float64) -> None:
        self.shape, self.dtype, self.ndim = tuple(shape), np.dtype(dtype), len(shape)

    def __len__(self) -> int:
        return self.shape[0]

    def __array__(self, *args: Any, **kwargs: Any) -> np.ndarray:
        raise AssertionError(f"an array of shape {self.shape} was read before its size was refused")


class _Opaque:
    """An object no numeric check should accept, with a plain repr."""

    def __repr__(self) -> str:
        return "<opaque>"


#: Values of a plainly wrong kind: each must be refused (PosEncError, or TypeError for a wrong Python type).
JUNK = [
    None, "4", "", "nan", "1e400", b"12", [], {}, (), {"a": 1}, _Opaque(), 1j, 1 + 2j, np.complex64(1),
    np.datetime64("2020-01-01"), np.str_("7"), Decimal("nan"), Decimal("1e999"), Decimal("-inf"),
]
junk = st.sampled_from(JUNK)

#: Real numbers of every kind, sane and not.
reals = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([
        *HUGE_INTS, 0, -0.0, 5e-324, -5e-324, 2.2e-308, 1.7976931348623157e308, math.nan, math.inf, -math.inf,
        True, False, np.bool_(True), np.float16(65504), np.float32(np.nan), np.float32(1e-45), np.int64(-1),
        np.uint64(2**63), np.int8(-128), Fraction(1, 3), Fraction(10**400, 7), Decimal("2.5"), Decimal("1e-400"),
    ]),
)


def misplaced() -> st.SearchStrategy[Any]:
    """Arrays, tensors and sequences where a scalar or a name belongs (issue 18), and the junk.

    ``base=np.array([1.0, 2.0])``, ``role=np.array(["q"])``, ``base=torch.tensor(1e4)``: an argument
    compared before it is checked (``base != 10000.0``, ``role in ("q", "k")``) answers element by
    element, so it escaped as NumPy's or torch's "truth value is ambiguous", or passed as its one
    element. Drawn for every argument by the pair fuzz (tests/fuzz/test_fuzz_pairs.py); an argument
    that takes arrays (positions) reads them as the arrays they are.
    """
    return st.one_of(st.sampled_from(misplaced_values()), junk)


def misplaced_values() -> list[Any]:
    """The values of :func:`misplaced` besides :data:`JUNK`, as a list (the fuzz tries each in turn)."""
    import torch  # the test environment has it (requirements-dev.txt); posenc itself does not need it

    return [
        np.array([1.0, 2.0]), np.array(10000.0), np.array([8]), np.array([[2, 4]]), np.array([]),
        np.array(["q"]), np.array(["q", "k"]), np.array(["half"]), np.array(["interleaved", "split"]),
        np.array([True]), np.arange(4.0).reshape(2, 2), np.array([np.nan, 1.0]),
        torch.tensor([1.0, 2.0]), torch.tensor(10000.0), torch.tensor(8), torch.tensor([8]),
        torch.tensor([True, False]), torch.zeros(2, 3), [1.0, 2.0], ["q"], (8,), [np.array(2.0)],
    ]


def small_ints(lo: int, hi: int) -> st.SearchStrategy[Any]:
    """Integers a call accepts in [lo, hi], as int or NumPy integers."""
    return st.integers(lo, hi).flatmap(
        lambda v: st.sampled_from([v, np.int64(v), *([np.uint32(v)] if 0 <= v < 2**32 else [])])
    )


def d_models(hi: int = 64) -> st.SearchStrategy[Any]:
    """Even widths 2 … hi, or widths that must be refused."""
    return st.one_of(
        st.integers(1, hi // 2).map(lambda k: 2 * k),
        st.sampled_from([0, -2, 1, 3, 65537, 65538, 10**9, 2**62, 10**400, 4.0, np.float64(8), True]),
        junk,
    )


def bases() -> st.SearchStrategy[Any]:
    """Bases in (1, 2**950], or not."""
    return st.one_of(
        st.floats(1.0001, 1e7),
        st.sampled_from([2.0, 10000.0, 500000.0, 1e6, 2.0**950, 10**6, np.float32(1e4)]),
        st.sampled_from([1.0, 0.5, 0.0, -3.0, 2.0**951, 1e300, 10**400, Fraction(10**400, 3)]),
        reals,
        junk,
    )


def layouts(names: tuple[str, ...]) -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(names), st.sampled_from(["", "INTERLEAVED", "half ", "split", "half"]), junk)


def dtypes() -> st.SearchStrategy[Any]:
    return st.sampled_from([
        np.float16, np.float32, np.float64, "float32", "float64", "f2", np.dtype(">f4"),
        np.int32, "int8", "complex64", "bfloat16", "nonsense", object, bool, "V8", np.longdouble, 3,
    ])


def lengths() -> st.SearchStrategy[Any]:
    """Row counts: small, or beyond any machine, or not counts at all."""
    return st.one_of(
        small_ints(0, 40),
        st.sampled_from([-1, -(10**12), 10**15, 2**53, 2**60, 10**400, 1.5, 3.0, "3", True]),
        junk,
    )


_POSITION_DTYPES = st.sampled_from([
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint32, np.uint64,
    np.float16, np.float32, np.float64, np.bool_, np.complex64,
])


def positions(max_size: int = 6) -> st.SearchStrategy[Any]:
    """Positions: scalars, lists (ragged too) and arrays of any dtype, with edge values."""
    edge = st.sampled_from([2**31 - 1, -(2**31), 2**53 - 1, -(2**53 - 1), 2.0**53, 0.5, -0.0, 5e-324, 1e-300])
    scalar = st.one_of(st.integers(-(2**31), 2**31), st.floats(-1e7, 1e7), edge, reals)
    arrays = _POSITION_DTYPES.flatmap(
        lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=max_size))
    )
    return st.one_of(
        scalar,
        st.lists(st.one_of(st.integers(-(2**31), 2**31), st.floats(-1e7, 1e7), edge), max_size=max_size),
        st.lists(st.lists(st.integers(-100, 100), max_size=3), max_size=3),  # ragged
        st.lists(reals, max_size=3),
        arrays,
        st.just(np.array([1, 2], dtype=object)),
        st.just(np.array(["1", "2"])),
        junk,
    )


def tokens(valid: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Text for a command-line value: a valid one, or a hostile one."""
    hostile = st.sampled_from([
        "nan", "inf", "-inf", "-1", "0", "1e400", "-1e400", "9" * 400, "-" + "9" * 400, "abc", "", " ", "0x10",
        "1_000", "1e6", "2**53", "1/3", "-", "π", "½", "٣", "1e-320", "4.0", "1e308", "1000000000000",
        "9007199254740993", "-0", "true", "None", "2pi", "\x00", "1e15",
    ])
    return st.one_of(valid, hostile)


def _shown(value: Any) -> str:
    from posenc.errors import show_value

    return show_value(value)


def names_the_value(message: str, names: Any, values: Any) -> bool:
    """True when a refusal's message names an argument or shows one of the values.

    ``names`` are the parameter names (``d_model`` also matches ``d-model``),
    ``values`` the arguments given.
    """
    names, values = list(names), list(values)
    for v in list(values):  # a config names its keys, a list its items: look inside
        if isinstance(v, (list, tuple)):
            values.extend(v[:8])
        if isinstance(v, dict):
            for key, inner in v.items():
                names.append(key)
                values.append(inner)
                if isinstance(inner, dict):
                    names.extend(inner)
                    values.extend(inner.values())
    low = message.lower()
    for name in names:
        n = str(name).lower().lstrip("-")
        for form in {n, n.replace("-", "_"), n.replace("_", "-")} - {""}:
            if re.search(rf"(?<!\w){re.escape(form)}(?!\w)", low):  # a word: "q" names q, not "required"
                return True
    for v in values:
        for text in {_shown(v), str(v) if isinstance(v, str) else _shown(v)}:
            head = text[:12].lower()
            if head and head in low:
                return True
    return False
