"""timm's 2-D sincos preset and encode_nd's cls_token, against the sources' formulas written here.

timm cannot be imported with the CPU torch of the test environment (its
torchvision does not match), so huggingface/pytorch-image-models
``timm/layers/pos_embed_sincos.py`` (``freq_bands``,
``build_sincos2d_pos_embed``, read at 0647e28) is written independently
below twice: the formula in mpmath (60 digits, coordinates never rounded)
and the table procedure step by step in NumPy (reversed ``feat_shape``,
``ndgrid``, ``stack``/``flatten``) in float64 and in timm's float32. MAE's
``cls_token`` is facebookresearch/mae ``util/pos_embed.py``
``get_2d_sincos_pos_embed`` (read at a9f5c70).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

import posenc
from posenc import PosEncError
from posenc.sinusoidal.conventions_nd import MAE, Timm
from reference import ulp_error

mpf = mpmath.mpf
mpmath.mp.dps = 60


def ref_timm(point, d, temperature=10000.0, reverse_coord=False, interleave_sin_cos=False):
    """bands = 1/T**(arange(0, d/4, 1)/(d/4)); [sin a, sin b, cos a, cos b] (interleave: [sin a, cos a, sin b, cos b]);
    a the row h, b the column w (reverse_coord: a = w, b = h)."""
    h, w = point
    a, b = (w, h) if reverse_coord else (h, w)
    q = d // 4
    bands = [1 / mpmath.power(mpf(temperature), mpf(k) / q) for k in range(q)]
    sin = [[mpmath.sin(mpf(c) * f) for f in bands] for c in (a, b)]
    cos = [[mpmath.cos(mpf(c) * f) for f in bands] for c in (a, b)]
    if interleave_sin_cos:
        return sin[0] + cos[0] + sin[1] + cos[1]
    return sin[0] + sin[1] + cos[0] + cos[1]


def timm_table(feat_shape, dim, temperature=10000.0, reverse_coord=False, interleave_sin_cos=False,
               dtype=np.float64):
    """build_sincos2d_pos_embed's steps, in NumPy, in ``dtype`` (timm's own: float32)."""
    q = dim // 4
    exp = np.arange(0, q, 1).astype(dtype) / dtype(q)
    bands = dtype(1.0) / (dtype(temperature) ** exp)
    shape = list(feat_shape)[::-1] if reverse_coord else list(feat_shape)
    grid = np.stack(np.meshgrid(*[np.arange(s).astype(dtype) for s in shape], indexing="ij"))  # ndgrid
    grid = grid.reshape(2, -1).T  # flatten(1).transpose(0, 1): [HW, 2]
    pos2 = grid[:, :, None] * bands[None, None, :]  # [HW, 2, q]
    stack = np.stack([np.sin(pos2), np.cos(pos2)], axis=2 if interleave_sin_cos else 1)
    return stack.reshape(grid.shape[0], -1)


FLAGS = [(False, False), (True, False), (False, True), (True, True)]
POINTS = [(0, 0), (0, 1), (3, 5), (13, 2), (255, 63), (1000, 7), (65537, 100000), (0.5, -2.25)]


@pytest.mark.parametrize(("reverse", "interleave"), FLAGS)
@pytest.mark.parametrize(("d", "temperature"), [(4, 10000.0), (16, 10000.0), (64, 10000.0), (128, 10000.0),
                                                 (32, 100.0), (24, 7777.0)])
def test_within_one_float32_ulp_of_timms_formula(reverse, interleave, d, temperature):
    conv = Timm(temperature=temperature, reverse_coord=reverse, interleave_sin_cos=interleave)
    got = posenc.encode_nd(POINTS, d, convention=conv)
    assert got.dtype == np.float32 and got.shape == (len(POINTS), d)
    worst = 0.0
    for row, p in zip(got, POINTS, strict=True):
        for j, (g, r) in enumerate(zip(row, ref_timm(p, d, temperature, reverse, interleave), strict=True)):
            e = ulp_error(float(g), r, np.float32)
            assert e <= 1.0, (conv, d, p, j, float(g), r)
            worst = max(worst, e)
    assert worst > 0.0


@pytest.mark.parametrize(("reverse", "interleave"), FLAGS)
@pytest.mark.parametrize(("h", "w", "d"), [(14, 14, 768), (16, 9, 64), (3, 7, 8)])
def test_timms_table_procedure_agrees_rows_and_channels(reverse, interleave, h, w, d):
    ref = timm_table((h, w), d, reverse_coord=reverse, interleave_sin_cos=interleave)
    # timm's rows: C order over (h, w), or over (w, h) when reverse_coord reverses feat_shape
    coords = posenc.grid(w, h)[:, ::-1] if reverse else posenc.grid(h, w)
    conv = Timm(reverse_coord=reverse, interleave_sin_cos=interleave)
    got64 = posenc.encode_nd(coords, d, convention=conv, dtype=np.float64)
    assert got64.shape == ref.shape
    # float64 libm against the exact angle: a few float64 ulps of angles below 2**5
    assert np.max(np.abs(got64 - ref)) <= 2**-46
    got = posenc.encode_nd(coords, d, convention=conv)
    assert np.max(np.abs(got.astype(np.float64) - ref)) <= 2**-24
    # timm's own float32 error, for the record: its rounded bands and products, up to |angle|·2**-23
    own = timm_table((h, w), d, reverse_coord=reverse, interleave_sin_cos=interleave, dtype=np.float32)
    assert np.max(np.abs(own - ref)) <= max(h, w) * 2**-22


def test_timm_is_mae_with_its_channels_reordered():
    pts = posenc.grid(5, 7) * 31 + np.array([2, 9])
    mae = posenc.encode_nd(pts, 32, convention="mae")
    # reverse_coord + interleave_sin_cos: [sin w | cos w | sin h | cos h], MAE's order, bit for bit
    assert np.array_equal(posenc.encode_nd(pts, 32, convention=Timm(reverse_coord=True, interleave_sin_cos=True)), mae)
    timm = posenc.encode_nd(pts, 32, convention="timm")  # [sin h | sin w | cos h | cos w]
    q = 8
    sin_w, cos_w, sin_h, cos_h = (mae[:, i * q : (i + 1) * q] for i in range(4))  # MAE: [sin w | cos w | sin h | cos h]
    assert np.array_equal(timm, np.concatenate([sin_h, sin_w, cos_h, cos_w], axis=1))


def test_timm_grid_report_names_its_channels():
    r = posenc.grid_report((16, 16), 16, convention="timm")
    assert [a.axis for a in r.axes] == [0, 1]
    assert r.axes[0].channels == (0, 1, 2, 3, 8, 9, 10, 11)  # sin_h then cos_h
    assert r.axes[0].pair_channels == ((0, 8), (1, 9), (2, 10), (3, 11))
    assert r.axes[1].channels == (4, 5, 6, 7, 12, 13, 14, 15)
    assert r.axes[0].omega[-1] == MAE().plan(16, 2).blocks[0].ladder.w0[-1]


@pytest.mark.parametrize(("kw", "match"), [
    ({"temperature": 1.0}, "temperature"),
    ({"temperature": float("inf")}, "temperature"),
    ({"reverse_coord": "yes"}, "reverse_coord must be True or False"),
    ({"interleave_sin_cos": 1}, "interleave_sin_cos must be True or False"),
])
def test_timm_settings_are_validated(kw, match):
    with pytest.raises(PosEncError, match=match):
        Timm(**kw)


@pytest.mark.parametrize(("d", "n", "match"), [(6, 2, "divisible by 4"), (0, 2, "d_model"), (8, 3, "2-axis")])
def test_timm_shapes_are_validated(d, n, match):
    with pytest.raises(PosEncError, match=match):
        posenc.encode_nd(np.zeros((2, n)), d, convention="timm")


# --- cls_token ---------------------------------------------------------------------------


def mae_with_cls_token(embed_dim, grid_size):
    """MAE's get_2d_sincos_pos_embed(embed_dim, grid_size, cls_token=True), its steps in float64."""
    g = np.stack(np.meshgrid(np.arange(grid_size, dtype=np.float64), np.arange(grid_size, dtype=np.float64)))

    def one_d(dim, pos):
        omega = 1.0 / 10000 ** (np.arange(dim // 2, dtype=np.float64) / (dim / 2.0))
        out = np.einsum("m,d->md", pos.reshape(-1), omega)
        return np.concatenate([np.sin(out), np.cos(out)], axis=1)

    emb = np.concatenate([one_d(embed_dim // 2, g[0]), one_d(embed_dim // 2, g[1])], axis=1)
    return np.concatenate([np.zeros([1, embed_dim]), emb], axis=0)


@pytest.mark.parametrize(("size", "d"), [(14, 768), (4, 16)])
def test_cls_token_is_mae_s_zero_row(size, d):
    ref = mae_with_cls_token(d, size)
    got = posenc.encode_nd(posenc.grid(size, size), d, convention="mae", cls_token=True, dtype=np.float64)
    assert got.shape == ref.shape == (1 + size * size, d)
    assert np.array_equal(got[0], np.zeros(d)) and not np.signbit(got[0]).any()
    assert np.max(np.abs(got - ref)) <= 2**-46
    plain = posenc.encode_nd(posenc.grid(size, size), d, convention="mae", dtype=np.float64)
    assert np.array_equal(got[1:], plain)


@pytest.mark.parametrize("conv", [None, "mae", "big_vision", "positional-encodings", "timm"])
def test_cls_token_counts_and_batches(conv):
    pts = np.stack([posenc.grid(3, 4), posenc.grid(3, 4) + 7])  # [b=2, m=12, 2]
    plain = posenc.encode_nd(pts, 16, convention=conv)
    for k, want in ((False, 0), (0, 0), (True, 1), (1, 1), (3, 3), (np.bool_(True), 1)):
        got = posenc.encode_nd(pts, 16, convention=conv, cls_token=k)
        assert got.shape == (2, want + 12, 16) and got.dtype == np.float32
        assert not got[:, :want].any() and np.array_equal(got[:, want:], plain)


@pytest.mark.parametrize(("kw", "match"), [
    ({"cls_token": -1}, "cls_token"),
    ({"cls_token": 1.5}, "cls_token"),
    ({"cls_token": "yes"}, "cls_token"),
    ({"cls_token": 2**17}, "cls_token"),
])
def test_bad_cls_token_is_refused(kw, match):
    with pytest.raises(PosEncError, match=match):
        posenc.encode_nd(posenc.grid(2, 2), 8, **kw)


def test_cls_token_needs_a_points_axis():
    with pytest.raises(PosEncError, match=r"cls_token needs coords \[\.\.\., m, n\]"):
        posenc.encode_nd([3, 4], 8, cls_token=True)


@pytest.mark.parametrize("extra", [1, 2])
def test_cls_token_count_is_diffusers_extra_tokens(extra):
    """diffusers' get_2d_sincos_pos_embed(cls_token=True, extra_tokens=k): k zero rows, then MAE's table."""
    from diffusers.models.embeddings import get_2d_sincos_pos_embed

    ref = get_2d_sincos_pos_embed(64, 16, cls_token=True, extra_tokens=extra, base_size=16, output_type="pt").numpy()
    got = posenc.encode_nd(posenc.grid(16, 16), 64, convention="mae", cls_token=extra, dtype=np.float64)
    assert got.shape == ref.shape == (extra + 256, 64)
    assert not ref[:extra].any() and not got[:extra].any()
    assert np.max(np.abs(got - ref)) <= 2**-44  # diffusers' float64 libm and ω
