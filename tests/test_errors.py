"""Bad input: a PosEncError (a ValueError) naming the value, before any work."""

from __future__ import annotations

import math

import numpy as np
import pytest

import posenc
from posenc import PosEncError
from posenc.bias.alibi import alibi_table


def test_is_a_value_error():
    assert issubclass(PosEncError, ValueError)


@pytest.mark.parametrize(
    ("call", "needle"),
    [
        (lambda: posenc.encode(1, 5), "5"),
        (lambda: posenc.encode(1, 0), "positive even"),
        (lambda: posenc.encode(1, -4), "-4"),
        (lambda: posenc.encode(1, 4.0), "4.0"),
        (lambda: posenc.encode(1, True), "True"),
        (lambda: posenc.encode(1, "4"), "'4'"),
        (lambda: posenc.encode(1, 4, base=1.0), "1.0"),
        (lambda: posenc.encode(1, 4, base=0.5), "0.5"),
        (lambda: posenc.encode(1, 4, base=math.inf), "inf"),
        (lambda: posenc.encode(1, 4, base=math.nan), "nan"),
        (lambda: posenc.encode(math.nan, 4), "nan"),
        (lambda: posenc.encode([0, math.inf], 4), "inf"),
        (lambda: posenc.encode(2.0**53, 4), "2**53"),
        (lambda: posenc.encode(2**60, 4), "1152921504606846976"),
        (lambda: posenc.encode(-(2**53), 4), "2**53"),
        (lambda: posenc.encode(10**30, 4), "2**53"),
        (lambda: posenc.encode(np.array([1, 2], dtype=np.uint64) * 2**62, 4), "2**53"),
        (lambda: posenc.encode([True, False], 4), "bool"),
        (lambda: posenc.encode(1 + 2j, 4), "complex"),
        (lambda: posenc.encode("seven", 4), "seven"),
        (lambda: posenc.encode(1, 4, layout="sideways"), "'interleaved', 'split'"),
        (lambda: posenc.encode(1, 4, dtype=np.int32), "int32"),
        (lambda: posenc.encode(1, 4, dtype="complex64"), "complex64"),
        (lambda: posenc.encode(1, 4, dtype="nonsense"), "nonsense"),
        (lambda: posenc.table(-1, 4), "-1"),
        (lambda: posenc.table(3, 4, start=1.5), "1.5"),
        (lambda: posenc.table(3, 4, start=2**53 - 2), "2**53"),
        (lambda: posenc.context_report(0, 512), "0"),
        (lambda: posenc.context_report(-8, 512), "-8"),
        (lambda: posenc.context_report(math.nan, 512), "nan"),
        (lambda: posenc.min_base(0, 512), "0"),
        (lambda: posenc.min_base(100, 2), "d_model=2"),
        (lambda: posenc.max_wavelength(3, 100.0), "3"),
        (lambda: posenc.frequencies(6, base=-3), "-3"),
        (lambda: posenc.wavelengths(7), "7"),
        (lambda: posenc.shift_matrix(math.nan, 4), "nan"),
        (lambda: posenc.shift_matrix([1, 2], 4), "single"),
        (lambda: posenc.shift(np.zeros(5), 1), "5"),
        (lambda: posenc.shift(np.zeros(4, dtype=np.int64), 1), "int64"),
        (lambda: posenc.shift(np.zeros((2, 4)), [1, 2, 3]), "broadcast"),
        (lambda: posenc.similarity(1, math.inf, 4), "inf"),
        (lambda: posenc.similarity(2.0**52 + 2.0**51, -(2.0**52), 4), "p - q"),
        (lambda: posenc.aliasing(0, 1, 4, atol=-1), "-1"),
        (lambda: posenc.aliasing([0, 1], 1, 4), "single"),
        (lambda: posenc.min_separation(1, 4), "1"),
        (lambda: posenc.min_separation(10, 3), "3"),
    ],
)
def test_bad_input_is_named(call, needle):
    with pytest.raises(PosEncError) as info:
        call()
    assert needle in str(info.value)


def test_odd_d_model_message_says_why():
    with pytest.raises(PosEncError, match=r"\(sin, cos\) pairs"):
        posenc.encode(0, 7)


def test_rejected_before_any_work(monkeypatch):
    # the NumPy backend's fills are where work happens; validation must fail before reaching them
    import posenc.sinusoidal.numpy_backend as mod

    def boom(*a, **k):
        raise AssertionError("work started before validation")

    monkeypatch.setattr(mod, "fill_sincos", boom)
    monkeypatch.setattr(mod, "fill_range", boom)
    with pytest.raises(PosEncError):
        posenc.encode([1, 2, math.nan], 4)
    with pytest.raises(PosEncError):
        posenc.table(10, 4, dtype="int8")
    for valid in (lambda: posenc.encode([1, 2], 4), lambda: posenc.table(10, 4)):  # the patched places are live
        with pytest.raises(AssertionError, match="work started"):
            valid()


# ---------------------------------------------------------------- integers judged exactly, shown as given


class _Typed(int):
    """An int that shows itself as the text it was typed as, as the command's arguments do."""

    def __repr__(self) -> str:
        return "1E25"


def test_a_number_that_shows_itself_is_shown_so():
    from posenc.errors import check_int

    with pytest.raises(PosEncError, match=r"n must be <= 5, got 1E25$"):
        check_int(_Typed(10**25), "n", maximum=5)
    with pytest.raises(PosEncError, match=r"got 1E25$"):
        posenc.encode([0, _Typed(10**25)], 4)  # the element as given, not its float64 rounding
    got = check_int(_Typed(10**25), "n")
    assert got == 10**25 and repr(got) == "1E25"  # kept: a later check can still show it so
    assert type(check_int(np.int64(7), "n")) is int


@pytest.mark.parametrize(
    ("start", "length", "needle"),
    [
        (_Typed(10**25), 3, "got start = 1E25"),
        (0, _Typed(10**25), "got start+length-1 = 9999999999999999999999999 (start 0, length 1E25)"),
        (2**53 - 1, 2, "got start+length-1 = 9007199254740992 (start 9007199254740991, length 2)"),
        (-(2**53), 1, "got start = -9007199254740992"),
    ],
)
@pytest.mark.parametrize("build", [
    lambda s, n: posenc.table(n, 4, start=s),
    lambda s, n: posenc.rope_table(posenc.rope_frequencies(4), s, n),
    lambda s, n: alibi_table(2, s, n),
])
def test_a_span_past_2_53_names_its_end_exactly(build, start, length, needle):
    # before: the ends went through float64, so 10**25 - 1 was shown as 1e+25 and the typed text was lost
    with pytest.raises(PosEncError) as info:
        build(start, length)
    assert str(info.value).startswith("positions start … start+length-1 must satisfy |p| < 2**53")
    assert str(info.value).endswith(needle)


def test_a_span_just_inside_2_53_is_built():
    assert posenc.table(2, 4, start=2**53 - 2, dtype=np.float64).shape == (2, 4)
    assert posenc.table(1, 4, start=-(2**53 - 1)).shape == (1, 4)


def test_huge_python_int_positions_are_shown_exactly():
    with pytest.raises(PosEncError) as info:
        posenc.encode([3, 10**25 - 1], 4)
    assert str(info.value).endswith("got 9999999999999999999999999")  # not 1e+25, a different number
