"""Framework presets: golden tables against each framework's formula, written here in mpmath.

Each reference below is transcribed from the framework's source (the file
named in the preset's docstring), evaluated at 60 digits with the position
never rounded, so "within 1 float32 ulp" is an honest bound.
"""

from __future__ import annotations

import dataclasses
import math

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import posenc
from posenc import PosEncError, conventions
from posenc.conventions import Fairseq, HFMarian, Keras, PositionalEncodings, Tensor2Tensor, Vaswani
from reference import ulp_error

mpf = mpmath.mpf
DIMS = [2, 3, 4, 5, 127, 128, 512]
POSITIONS = [0, 1, 2, 7, 255, 1000, 65537, 100000]


# --- the frameworks' formulas, exactly as their code states them -------------------------


def ref_vaswani(t, d, base=10000.0, layout="interleaved"):
    row = [None] * d
    for i in range(d // 2):
        a = mpf(t) / mpmath.power(mpf(base), mpf(2 * i) / d)
        if layout == "interleaved":
            row[2 * i], row[2 * i + 1] = mpmath.sin(a), mpmath.cos(a)
        else:
            row[i], row[d // 2 + i] = mpmath.sin(a), mpmath.cos(a)
    return row


def ref_t2t(t, d, min_timescale=1.0, max_timescale=1.0e4, start_index=0):
    # get_timing_signal_1d: position = range(length) + start_index; log increment over max(n-1, 1)
    n = d // 2
    inc = mpmath.log(mpf(max_timescale) / mpf(min_timescale)) / max(n - 1, 1)
    inv = [mpf(min_timescale) * mpmath.exp(-k * inc) for k in range(n)]
    pos = mpf(t) + start_index
    return [mpmath.sin(pos * w) for w in inv] + [mpmath.cos(pos * w) for w in inv] + [0] * (d % 2)


def ref_fairseq(t, d, padding_idx=1):
    # make_positions: first token at padding_idx + 1; get_embedding zeroes row padding_idx
    r = t + padding_idx + 1
    if r == padding_idx:
        return [0] * d
    h = d // 2
    step = mpmath.log(10000) / (h - 1)
    inv = [mpmath.exp(-k * step) for k in range(h)]
    return [mpmath.sin(r * w) for w in inv] + [mpmath.cos(r * w) for w in inv] + [0] * (d % 2)


def ref_marian(t, d):
    # position_enc[pos, j] = pos / 10000^(2 (j // 2) / d); sines from even j, then cosines from odd j
    ang = [mpf(t) / mpmath.power(10000, mpf(2 * (j // 2)) / d) for j in range(d)]
    return [mpmath.sin(a) for a in ang[0::2]] + [mpmath.cos(a) for a in ang[1::2]]


def ref_keras(t, d, max_wavelength=10000.0):
    # timescales = (1/max_wavelength)^(2 (j // 2) / d); sin on even j, cos on odd j
    out = []
    for j in range(d):
        a = mpf(t) * mpmath.power(1 / mpf(max_wavelength), mpf(2 * (j // 2)) / d)
        out.append(mpmath.sin(a) if j % 2 == 0 else mpmath.cos(a))
    return out


def ref_positional_encodings(t, d):
    # channels padded to even C; inv_freq = 1/10000^(arange(0, C, 2)/C); stack(sin, cos) flattened; [:d]
    c = 2 * math.ceil(d / 2)
    out = []
    for i in range(0, c, 2):
        a = mpf(t) / mpmath.power(10000, mpf(i) / c)
        out += [mpmath.sin(a), mpmath.cos(a)]
    return out[:d]


CASES = [
    (Vaswani(), ref_vaswani),
    (Vaswani(base=500.0, layout="split"), lambda t, d: ref_vaswani(t, d, 500.0, "split")),
    (Tensor2Tensor(), ref_t2t),
    (Tensor2Tensor(min_timescale=2.0, max_timescale=5e3, start_index=3), lambda t, d: ref_t2t(t, d, 2.0, 5e3, 3)),
    (Fairseq(), ref_fairseq),
    (Fairseq(padding_idx=0), lambda t, d: ref_fairseq(t, d, 0)),
    (HFMarian(), ref_marian),
    (Keras(), ref_keras),
    (Keras(max_wavelength=777.5), lambda t, d: ref_keras(t, d, 777.5)),
    (PositionalEncodings(), ref_positional_encodings),
]


def _takes(conv, d):
    if isinstance(conv, Vaswani):
        return d % 2 == 0
    return not (isinstance(conv, Fairseq) and d in (2, 3))


def _check_row(got, ref, where):
    assert len(got) == len(ref), where
    for j, (g, r) in enumerate(zip(got, ref, strict=True)):
        if isinstance(r, int):
            assert g == 0.0, (where, j, g)
        else:
            assert ulp_error(float(g), r, np.float32) <= 1.0, (where, j, float(g), r)


@pytest.mark.parametrize(("conv", "ref"), CASES, ids=lambda c: repr(c) if not callable(c) else "")
@pytest.mark.parametrize("d", DIMS)
def test_golden_tables_within_one_float32_ulp(conv, ref, d):
    if not _takes(conv, d):
        with pytest.raises(PosEncError, match="d_model"):
            posenc.encode(POSITIONS, d, convention=conv)
        return
    positions = POSITIONS if d < 512 else [0, 1, 1000, 100000]
    extra = [-1] if isinstance(conv, Fairseq) else []  # the padding row
    got = posenc.encode(positions + extra, d, convention=conv)
    assert got.dtype == np.float32 and got.shape == (len(positions) + len(extra), d)
    for row, t in zip(got, positions + extra, strict=True):
        _check_row(row, ref(t, d), (conv, d, t))


def test_research_values_at_d5_position3():
    # the same (d=5, pos=3) evaluated by hand in four frameworks (their sources are cited in posenc.conventions)
    def at(conv, p=3):
        return posenc.encode(p, 5, convention=conv, dtype=np.float64).round(3).tolist()

    assert at("positional-encodings") == [0.141, -0.99, 0.139, 0.99, 0.006]
    assert at("keras") == [0.141, -0.99, 0.075, 0.997, 0.002]
    assert at("hf-marian") == [0.141, 0.075, 0.002, -0.99, 0.997]
    # fairseq's table row 3 is token 1 (first token at padding_idx + 1 = 2)
    assert at("fairseq", 1) == [0.141, 0.0, -0.99, 1.0, 0.0]


@pytest.mark.parametrize("base", [10000.0, 2.0, 1e6])
@pytest.mark.parametrize("layout", ["interleaved", "split"])
def test_vaswani_preset_is_the_default_encoding(base, layout):
    ps = np.array([0, 1, 5, 1000, 65537, -3, 2.5])
    a = posenc.encode(ps, 64, base=base, layout=layout)
    b = posenc.encode(ps, 64, convention=Vaswani(base=base, layout=layout))
    assert np.array_equal(a, b)
    assert np.array_equal(
        posenc.table(50, 64, start=7, base=base, layout=layout),
        posenc.table(50, 64, start=7, convention=Vaswani(base, layout)),
    )


@given(
    st.integers(0, 80),
    st.integers(1, 40),
    st.integers(-(10**6), 10**6),
    st.sampled_from([c for c, _ in CASES]),
)
def test_table_is_encode_of_arange(n, d, start, conv):
    if not _takes(conv, d):
        return
    t = posenc.table(n, d, start=start, convention=conv)
    assert t.shape == (n, d)
    assert np.array_equal(t, posenc.encode(np.arange(start, start + n), d, convention=conv))


def test_fairseq_padding_row_and_origin():
    t = posenc.table(5, 8, start=-3, convention="fairseq", dtype=np.float64)  # tokens -3 … 1
    assert np.array_equal(t[2], np.zeros(8))  # token -1 = row padding_idx
    assert not np.any(np.all(t[[0, 1, 3, 4]] == 0, axis=1))
    # row 0 of fairseq's table (angle 0, token -2) is the position-zero pattern [0… | 1…]
    assert t[1].tolist() == [0.0] * 4 + [1.0] * 4
    assert np.array_equal(posenc.encode([-1, -1], 8, convention=Fairseq()), np.zeros((2, 8), np.float32))
    # padding_idx=0 starts one angle earlier: tokens 1… of it are tokens 0… of padding_idx=1
    assert np.array_equal(
        posenc.table(4, 8, convention=Fairseq(padding_idx=0))[1:], posenc.table(3, 8, convention=Fairseq())
    )


def test_tensor2tensor_min_timescale_is_multiplied():
    # the code's ω_0 is min_timescale itself (not 1/min): sin(2t) in channel 0 for min=2
    # references in mpmath, not libm (whose last bit differs between CPUs); posenc's bound: under 1 ulp
    e = posenc.encode(3, 4, convention=Tensor2Tensor(min_timescale=2.0, max_timescale=100.0), dtype=np.float64)
    assert ulp_error(e[0], mpmath.sin(6), np.float64) < 1
    # ω_1 = min · (max/min)^-1 = min²/max = 0.04
    assert ulp_error(e[1], mpmath.sin(3 * mpmath.mpf(2) ** 2 / 100), np.float64) < 1
    # d = 2, 3: max(n - 1, 1) keeps it finite
    e = posenc.encode(1, 3, convention="tensor2tensor", dtype=np.float64)
    assert ulp_error(e[0], mpmath.sin(1), np.float64) < 1 and ulp_error(e[1], mpmath.cos(1), np.float64) < 1
    assert e[2] == 0.0


def test_start_index_shifts_exactly_for_fractional_positions():
    conv = Tensor2Tensor(start_index=2**40)
    got = posenc.encode([0.5, -0.25], 6, convention=conv)
    for row, t in zip(got, [0.5, -0.25], strict=True):
        _check_row(row, ref_t2t(t, 6, start_index=2**40), t)


def test_odd_dims_and_tiny_dims():
    (k,) = posenc.encode(5, 1, convention="keras", dtype=np.float64)
    assert ulp_error(k, mpmath.sin(5), np.float64) < 1
    assert posenc.encode(5, 1, convention="tensor2tensor").tolist() == [0.0]
    assert posenc.encode(5, 1, convention="fairseq").tolist() == [0.0]
    for d in (2, 3):
        with pytest.raises(PosEncError, match="half_dim - 1"):
            Fairseq().plan(d)
    with pytest.raises(PosEncError, match="even"):
        posenc.encode(1, 5, convention="vaswani")


def test_lookup_by_name():
    assert conventions.NAMES == (
        "vaswani", "tensor2tensor", "fairseq", "hf-marian", "keras", "positional-encodings",
    )
    for name in conventions.NAMES:
        c = conventions.get(name)
        assert c.name == name
        assert conventions.get(c) is c
    assert conventions.get("fairseq") == Fairseq(padding_idx=1)
    with pytest.raises(PosEncError, match="'nope'"):
        conventions.get("nope")
    with pytest.raises(PosEncError, match="preset"):
        posenc.encode(1, 4, convention=3)


def test_presets_are_frozen_and_validated():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Fairseq().padding_idx = 3  # type: ignore[misc]
    with pytest.raises(PosEncError, match="min_timescale"):
        Tensor2Tensor(min_timescale=0.0)
    with pytest.raises(PosEncError, match="max_timescale"):
        Tensor2Tensor(max_timescale=float("nan"))
    with pytest.raises(PosEncError, match="max_wavelength"):
        Keras(max_wavelength=1.0)
    with pytest.raises(PosEncError, match="padding_idx"):
        Fairseq(padding_idx=-1)
    with pytest.raises(PosEncError, match="layout"):
        Vaswani(layout="sideways")
    with pytest.raises(PosEncError, match="base"):
        Vaswani(base=0.5)


def test_base_or_layout_with_a_convention_is_an_error():
    with pytest.raises(PosEncError, match="part of the convention"):
        posenc.encode(1, 4, base=100.0, convention="keras")
    with pytest.raises(PosEncError, match="part of the convention"):
        posenc.table(3, 4, layout="split", convention="vaswani")


def test_bad_positions_raise_before_work():
    with pytest.raises(PosEncError, match="finite"):
        posenc.encode([0, float("nan")], 8, convention="fairseq")
    with pytest.raises(PosEncError, match="2\\*\\*53"):
        posenc.encode(2**53, 8, convention="keras")
    with pytest.raises(PosEncError, match="origin"):
        posenc.encode(2.0**53 - 2, 8, convention="fairseq")  # + origin 2 reaches 2**53
    with pytest.raises(PosEncError, match="origin"):
        posenc.table(3, 8, start=2**53 - 3, convention="fairseq")
    with pytest.raises(PosEncError, match="dtype"):
        posenc.encode(1, 8, convention="keras", dtype=np.int32)
