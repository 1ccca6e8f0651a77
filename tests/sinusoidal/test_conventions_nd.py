"""n-D presets: each against its framework's formula in mpmath, and against the framework's own code.

The mpmath references are transcribed from the framework sources named in
the presets' docstrings (MAE ``util/pos_embed.py``, big_vision
``models/vit.py`` ``posemb_sincos_2d``, positional-encodings
``torch_encodings.py``), evaluated at 60 digits with the coordinates never
rounded, so "within 1 float32 ulp" is an honest bound. The framework
transcriptions in NumPy compute as the frameworks do (MAE in float64,
big_vision in float32); positional-encodings is the installed package.
"""

from __future__ import annotations

import dataclasses
import math

import mpmath
import numpy as np
import pytest

import posenc
from posenc import PosEncError
from posenc.sinusoidal import conventions_nd
from posenc.sinusoidal.conventions_nd import MAE, Axial, BigVision, PositionalEncodingsND
from reference import ulp_error

mpf = mpmath.mpf


# --- the formulas, as the frameworks' code states them, in mpmath -------------------------


def ref_axial(point, d, base=10000.0):
    n = len(point)
    s = d // n
    row = []
    for c in point:
        for i in range(s // 2):
            a = mpf(c) / mpmath.power(mpf(base), mpf(2 * i) / s)
            row += [mpmath.sin(a), mpmath.cos(a)]
    return row


def _mae_1d(dim, pos, base):
    # get_1d_sincos_pos_embed_from_grid: omega = arange(D/2) / (D/2); 1 / base**omega; [sin | cos]
    omega = [1 / mpmath.power(mpf(base), mpf(k) / (mpf(dim) / 2)) for k in range(dim // 2)]
    return [mpmath.sin(mpf(pos) * w) for w in omega] + [mpmath.cos(mpf(pos) * w) for w in omega]


def ref_mae(point, d, base=10000.0):
    # get_2d_sincos_pos_embed_from_grid: grid = meshgrid(grid_w, grid_h); grid[0] (= w) first
    h, w = point
    return _mae_1d(d // 2, w, base) + _mae_1d(d // 2, h, base)


def ref_big_vision(point, d, temperature=10000.0):
    # posemb_sincos_2d: y, x = mgrid[:h, :w]; omega = arange(d//4) / (d//4 - 1); [sin x, cos x, sin y, cos y]
    y, x = point
    q = d // 4
    omega = [1 / mpmath.power(mpf(temperature), mpf(k) / (q - 1)) for k in range(q)]
    return ([mpmath.sin(mpf(x) * w) for w in omega] + [mpmath.cos(mpf(x) * w) for w in omega]
            + [mpmath.sin(mpf(y) * w) for w in omega] + [mpmath.cos(mpf(y) * w) for w in omega])


def ref_positional_encodings(point, ch):
    # PositionalEncoding{1,2,3}D: channels = ceil(ch/2)*2 | ceil(ch/4)*2 | ceil(ch/6)*2 (+1 if odd) per axis;
    # inv_freq = 1/10000**(arange(0, C, 2)/C); per axis stack(sin, cos).flatten; axes side by side; [:ch]
    n = len(point)
    c = int(math.ceil(ch / (2 * n)) * 2)
    if c % 2:
        c += 1
    row = []
    for x in point:
        for i in range(0, c, 2):
            a = mpf(x) / mpmath.power(10000, mpf(i) / c)
            row += [mpmath.sin(a), mpmath.cos(a)]
    return row[:ch]


def _check_rows(got, points, ref, where):
    worst = 0.0
    for row, p in zip(got, points, strict=True):
        expect = ref(p)
        assert len(row) == len(expect), where
        for j, (g, r) in enumerate(zip(row, expect, strict=True)):
            e = ulp_error(float(g), r, np.float32)
            assert e <= 1.0, (where, p, j, float(g), r)
            worst = max(worst, e)
    return worst


POINTS_2D = [(0, 0), (0, 1), (3, 5), (13, 2), (255, 63), (1000, 7), (65537, 100000), (0.5, -2.25)]
POINTS_3D = [(0, 0, 0), (1, 2, 3), (7, 0, 13), (1000, 65537, 2), (-1.5, 0.25, 4)]

CASES_2D = [
    ("axial", lambda p, d: ref_axial(p, d), [4, 8, 16, 64, 128]),
    (Axial(base=100.0), lambda p, d: ref_axial(p, d, 100.0), [8, 32]),
    ("mae", lambda p, d: ref_mae(p, d), [4, 8, 16, 64, 128]),
    (MAE(base=500.0), lambda p, d: ref_mae(p, d, 500.0), [16]),
    ("big_vision", lambda p, d: ref_big_vision(p, d), [8, 16, 64, 128]),
    (BigVision(temperature=777.0), lambda p, d: ref_big_vision(p, d, 777.0), [32]),
    ("positional-encodings", lambda p, d: ref_positional_encodings(p, d), [1, 2, 3, 5, 6, 7, 8, 13, 64, 66]),
]


@pytest.mark.parametrize(("conv", "ref", "dims"), CASES_2D, ids=lambda c: repr(c) if isinstance(c, str) else "")
def test_2d_within_one_float32_ulp_of_the_formula(conv, ref, dims):
    for d in dims:
        got = posenc.encode_nd(POINTS_2D, d, convention=conv)
        assert got.dtype == np.float32 and got.shape == (len(POINTS_2D), d)
        _check_rows(got, POINTS_2D, lambda p, d=d: ref(p, d), (conv, d))


@pytest.mark.parametrize(("conv", "ref"), [
    ("axial", lambda p, d: ref_axial(p, d)),
    ("positional-encodings", lambda p, d: ref_positional_encodings(p, d)),
])
@pytest.mark.parametrize("d", [1, 5, 6, 7, 12, 13, 18, 96])
def test_3d_within_one_float32_ulp_of_the_formula(conv, ref, d):
    if conv == "axial" and d % 6:
        with pytest.raises(PosEncError, match="even shares"):
            posenc.encode_nd(POINTS_3D, d, convention=conv)
        return
    got = posenc.encode_nd(POINTS_3D, d, convention=conv)
    _check_rows(got, POINTS_3D, lambda p: ref(p, d), (conv, d))


def test_large_d_on_a_grid_within_one_ulp():
    pts = posenc.grid(3, 4) * 997 + np.array([5, 11])
    for conv, ref in (("mae", ref_mae), ("big_vision", ref_big_vision), ("axial", ref_axial)):
        got = posenc.encode_nd(pts, 1024, convention=conv)
        _check_rows(got[::5], [tuple(int(x) for x in p) for p in pts[::5]], lambda p, ref=ref: ref(p, 1024), conv)


# --- the frameworks' own code ------------------------------------------------------------


def mae_numpy(embed_dim, grid_h, grid_w):
    """MAE's get_2d_sincos_pos_embed for an (h, w) grid, as its code computes (float64, np.float)."""
    gh = np.arange(grid_h, dtype=np.float32)
    gw = np.arange(grid_w, dtype=np.float32)
    g = np.stack(np.meshgrid(gw, gh), axis=0).reshape([2, 1, grid_h, grid_w])

    def one_d(dim, pos):
        omega = np.arange(dim // 2, dtype=np.float64) / (dim / 2.0)
        omega = 1.0 / 10000**omega
        out = np.einsum("m,d->md", pos.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)

    return np.concatenate([one_d(embed_dim // 2, g[0]), one_d(embed_dim // 2, g[1])], axis=1)


def big_vision_numpy(h, w, width, temperature=10000.0):
    """big_vision's posemb_sincos_2d, float32 throughout as in JAX."""
    y, x = np.mgrid[:h, :w]
    omega = np.arange(width // 4, dtype=np.float32) / np.float32(width // 4 - 1)
    omega = np.float32(1.0) / (np.float32(temperature) ** omega)
    y = np.einsum("m,d->md", y.flatten().astype(np.float32), omega)
    x = np.einsum("m,d->md", x.flatten().astype(np.float32), omega)
    return np.concatenate([np.sin(x), np.cos(x), np.sin(y), np.cos(y)], axis=1)


@pytest.mark.parametrize(("h", "w", "d"), [(14, 14, 768), (16, 9, 64), (1, 5, 8)])
def test_mae_code_agrees(h, w, d):
    ref = mae_numpy(d, h, w).astype(np.float32)  # MAE's models cast the float64 table to float32
    got = posenc.encode_nd(posenc.grid(h, w), d, convention="mae")
    assert got.shape == ref.shape
    # both round a value within ~1e-16 of the truth to float32: the same float or one ulp apart
    assert np.max(np.abs(got.astype(np.float64) - ref)) <= 2**-24
    assert np.mean(got == ref) > 0.999


@pytest.mark.parametrize(("h", "w", "d"), [(14, 14, 768), (16, 9, 64)])
def test_big_vision_code_agrees_to_float32_rounding(h, w, d):
    ref = big_vision_numpy(h, w, d)
    got = posenc.encode_nd(posenc.grid(h, w), d, convention="big_vision")
    # big_vision rounds ω and x·ω to float32: |Δ| <= |x·ω| · 2**-23 for x < 16
    assert np.max(np.abs(got - ref)) <= 16 * 2**-22


@pytest.mark.parametrize("ch", [1, 2, 3, 4, 5, 6, 7, 10, 13, 64, 66, 128])
def test_positional_encodings_2d_package_agrees(ch):
    torch = pytest.importorskip("torch")
    from positional_encodings.torch_encodings import PositionalEncoding2D

    ref = PositionalEncoding2D(ch)(torch.zeros(1, 6, 9, ch))[0].numpy().reshape(-1, ch)
    got = posenc.encode_nd(posenc.grid(6, 9), ch, convention="positional-encodings")
    assert np.max(np.abs(got - ref)) <= 9 * 2**-23  # the package's float32 angles


@pytest.mark.parametrize("ch", [1, 5, 6, 7, 12, 13, 18, 64, 65])
def test_positional_encodings_3d_package_agrees(ch):
    torch = pytest.importorskip("torch")
    from positional_encodings.torch_encodings import PositionalEncoding3D

    ref = PositionalEncoding3D(ch)(torch.zeros(1, 3, 4, 5, ch))[0].numpy().reshape(-1, ch)
    got = posenc.encode_nd(posenc.grid(3, 4, 5), ch, convention="positional-encodings")
    assert np.max(np.abs(got - ref)) <= 5 * 2**-23


def test_positional_encodings_1d_equals_the_1d_preset():
    ps = np.arange(-3, 40)
    for d in (1, 4, 7, 64):
        assert np.array_equal(
            posenc.encode_nd(ps[:, None], d, convention="positional-encodings"),
            posenc.encode(ps, d, convention="positional-encodings"),
        )


# --- layout facts ------------------------------------------------------------------------


def test_mae_first_half_is_the_column():
    e = posenc.encode_nd([[2, 0], [0, 2]], 16, convention="mae", dtype=np.float64)
    # (row 2, column 0): the first half is column 0, the position-zero pattern [0… | 1…]
    assert e[0, :8].tolist() == [0.0] * 4 + [1.0] * 4
    assert e[1, 8:].tolist() == [0.0] * 4 + [1.0] * 4
    assert np.array_equal(e[0, 8:], e[1, :8])


def test_big_vision_slowest_frequency_is_one_over_temperature():
    plan = BigVision(temperature=100.0).plan(16, 2)
    w = plan.blocks[0].ladder.w0
    assert w[0] == 1.0 and w[-1] == 0.01
    assert MAE().plan(16, 2).blocks[0].ladder.w0[-1] == 10000.0 ** -0.75


def test_positional_encodings_channel_blocks():
    plan = PositionalEncodingsND().plan(6, 2)  # C = ceil(6/4)·2 = 4: x gets 4 channels, y the first 2
    assert [(b.axis, b.start, b.width) for b in plan.blocks] == [(0, 0, 4), (1, 4, 2)]
    plan = PositionalEncodingsND().plan(2, 3)  # C = 2: only x fits
    assert [(b.axis, b.width) for b in plan.blocks] == [(0, 2)]


def test_axial_one_axis_is_the_seed_encoding():
    ps = np.array([0, 1, 2.5, 1000, -7, 65537])
    for base in (10000.0, 31.0):
        assert np.array_equal(posenc.encode_nd(ps[:, None], 64, base=base), posenc.encode(ps, 64, base=base))


# --- validation --------------------------------------------------------------------------


def test_names_and_lookup():
    assert conventions_nd.NAMES == ("axial", "mae", "big_vision", "positional-encodings", "timm")
    for name in conventions_nd.NAMES:
        assert conventions_nd.get(name).name == name
    c = MAE()
    assert conventions_nd.get(c) is c
    with pytest.raises(PosEncError, match="'fairseq'"):
        posenc.encode_nd([0, 0], 8, convention="fairseq")


def test_presets_are_frozen_and_validated():
    with pytest.raises(dataclasses.FrozenInstanceError):
        MAE().base = 3.0  # type: ignore[misc]
    with pytest.raises(PosEncError, match="temperature"):
        BigVision(temperature=1.0)
    with pytest.raises(PosEncError, match="base"):
        Axial(base=float("nan"))


@pytest.mark.parametrize(("conv", "d", "n", "match"), [
    ("mae", 6, 2, "divisible by 4"),
    ("mae", 8, 3, "2-axis"),
    ("big_vision", 4, 2, ">= 8"),
    ("big_vision", 8, 1, "2-axis"),
    ("positional-encodings", 8, 4, "1 or 2 or 3"),
    ("axial", 10, 2, "even shares"),
    ("axial", 9, 3, "even shares"),
    ("axial", 0, 2, "d_model"),
])
def test_bad_shapes_raise(conv, d, n, match):
    with pytest.raises(PosEncError, match=match):
        posenc.encode_nd(np.zeros((2, n)), d, convention=conv)


def test_base_with_a_preset_is_an_error():
    with pytest.raises(PosEncError, match="part of the convention"):
        posenc.encode_nd([0, 0], 8, base=100.0, convention="mae")
