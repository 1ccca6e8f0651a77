"""Vision/video RoPE presets against their references: diffusers' FluxPosEmbed, WanRotaryPosEmbed and
get_3d_rotary_pos_embed; timm's EVA-02 and transformers' Qwen2-VL vision formulas written here.

timm cannot be imported with the CPU torch of the test environment, so its
``pos_embed_sincos.py`` (``freq_bands``, ``build_fourier_pos_embed``,
``build_rotary_pos_embed``, ``RotaryEmbeddingCat``) is written independently below.
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import torch
from diffusers.models.embeddings import apply_rotary_emb, get_3d_rotary_pos_embed
from diffusers.models.transformers.transformer_flux import FluxPosEmbed
from diffusers.models.transformers.transformer_wan import WanRotaryPosEmbed

from posenc import PosEncError, apply_rope, eva02_coords, rope_preset
from reference import ulp_error

RNG = np.random.default_rng(7)


def _rotate_with(cos: torch.Tensor, sin: torch.Tensor, x: np.ndarray) -> np.ndarray:
    """diffusers' apply_rotary_emb (interleaved pairs, use_real_unbind_dim=-1) in float64."""
    xt = torch.tensor(x, dtype=torch.float64)[None, None]
    return apply_rotary_emb(xt, (cos.double(), sin.double()), use_real=True, use_real_unbind_dim=-1)[0, 0].numpy()


def _ours(name: str, x: np.ndarray, coords: np.ndarray, **kw) -> np.ndarray:
    cfg = rope_preset(name, **kw)
    return apply_rope(x, coords, layout=cfg.layout, **cfg.kwargs())


def test_flux_is_diffusers_flux_pos_embed():
    h, w = 6, 5
    img = np.stack(np.meshgrid(np.arange(h), np.arange(w), indexing="ij"), -1).reshape(-1, 2)
    ids = np.concatenate([np.zeros((4, 3)), np.concatenate([np.zeros((h * w, 1)), img], 1)]).astype(np.float64)
    cos, sin = FluxPosEmbed(theta=10000, axes_dim=[16, 56, 56])(torch.tensor(ids))
    x = RNG.normal(size=(ids.shape[0], 128))
    assert np.abs(_ours("flux", x, ids) - _rotate_with(cos, sin, x)).max() < 1e-6  # their float32 cos/sin


def test_wan_is_diffusers_wan_rotary_pos_embed():
    emb = WanRotaryPosEmbed(attention_head_dim=128, patch_size=(1, 2, 2), max_seq_len=64)
    f, hh, ww = 3, 4, 6
    cos, sin = emb(torch.zeros(1, 16, f, 2 * hh, 2 * ww))
    grid = np.stack(np.meshgrid(np.arange(f), np.arange(hh), np.arange(ww), indexing="ij"), -1).reshape(-1, 3)
    x = RNG.normal(size=(grid.shape[0], 128))
    ref = _rotate_with(cos[0, :, 0], sin[0, :, 0], x)
    assert np.abs(_ours("wan", x, grid.astype(np.float64)) - ref).max() < 1e-6


@pytest.mark.parametrize("head_dim", [64, 128])
def test_cogvideox_is_get_3d_rotary_pos_embed_with_its_fractional_grid(head_dim):
    gh, gw, t = 4, 6, 3
    cos, sin = get_3d_rotary_pos_embed(head_dim, ((0, 0), (gh, gw)), (gh, gw), t)
    # its linspace grid, as it computes it (float32): row i at i·(H-1)/H·H/(H-1) … fractional in general
    lh = torch.linspace(0, gh * (gh - 1) / gh, gh, dtype=torch.float32).double().numpy()
    lw = torch.linspace(0, gw * (gw - 1) / gw, gw, dtype=torch.float32).double().numpy()
    lt = torch.linspace(0, t * (t - 1) / t, t, dtype=torch.float32).double().numpy()
    grid = np.stack(np.meshgrid(lt, lh, lw, indexing="ij"), -1).reshape(-1, 3)
    x = RNG.normal(size=(grid.shape[0], head_dim))
    got = _ours("cogvideox", x, grid, head_dim=head_dim)
    assert np.abs(got - _rotate_with(cos, sin, x)).max() < 1e-5


def _timm_eva02(x: np.ndarray, feat: tuple[int, int], ref: tuple[int, int] | None, head_dim: int) -> np.ndarray:
    """timm's RotaryEmbeddingCat(dim=head_dim, in_pixels=False, ref_feat_shape=ref), in mpmath, then applied."""
    n = head_dim // 4
    bands = [mpmath.power(10000, -mpmath.mpf(k) / n) for k in range(n)]  # freq_bands(dim//4, step=1)
    axes = [[mpmath.mpf(i) / f * r if ref else mpmath.mpf(i) for i in range(f)]
            for f, r in zip(feat, ref or feat, strict=True)]
    out = np.empty_like(x)
    row = 0
    for a in axes[0]:
        for b in axes[1]:
            ang = [a * w for w in bands] + [b * w for w in bands]  # [sin_h | sin_w], then repeat_interleave(2)
            for j, th in enumerate(ang):
                c, s = float(mpmath.cos(th)), float(mpmath.sin(th))
                x0, x1 = x[row, 2 * j], x[row, 2 * j + 1]
                out[row, 2 * j], out[row, 2 * j + 1] = x0 * c - x1 * s, x1 * c + x0 * s  # timm's rot(): [-x1, x0]
            row += 1
    return out


@pytest.mark.parametrize(("feat", "ref"), [((4, 4), None), ((6, 4), (3, 2)), ((5, 3), (16, 16))])
def test_eva02_is_timms_rotary_embedding_cat_with_ref_feat_shape(feat, ref):
    x = RNG.normal(size=(feat[0] * feat[1], 64))
    got = _ours("eva02", x, eva02_coords(feat, ref))
    assert np.abs(got - _timm_eva02(x, feat, ref, 64)).max() < 1e-12


def test_qwen2_vl_vision_is_its_rotate_half_formula():
    hw = np.array([[0, 0], [3, 7], [12, 1]], dtype=np.float64)
    x = RNG.normal(size=(3, 80))
    inv = [mpmath.power(10000, -mpmath.mpf(2 * j) / 40) for j in range(20)]  # 1/θ^(arange(0, 40, 2)/40)
    ref = np.empty_like(x)
    for r, (h, w) in enumerate(hw):
        ang = [h * v for v in inv] + [w * v for v in inv]  # cat(h freqs, w freqs), then cat(emb, emb)
        for j, th in enumerate(ang):
            c, s = float(mpmath.cos(th)), float(mpmath.sin(th))
            ref[r, j] = x[r, j] * c - x[r, j + 40] * s
            ref[r, j + 40] = x[r, j + 40] * c + x[r, j] * s
    assert np.abs(_ours("qwen2-vl-vision", x, hw) - ref).max() < 1e-12


def test_float32_tables_are_within_an_ulp_at_fractional_coordinates():
    cfg = rope_preset("eva02")
    coords = eva02_coords((3, 3), (7, 7))  # i·7/3: no float holds it exactly; posenc uses the coordinate given
    eye = np.zeros((9, 64), dtype=np.float32)
    eye[:, 0] = 1.0  # rotating e_0 reads off cos and sin of pair 0
    got = apply_rope(eye, coords, layout=cfg.layout, **cfg.kwargs())
    for r in range(9):
        th = mpmath.mpf(float(coords[r, 0]))
        assert ulp_error(float(got[r, 0]), mpmath.cos(th), np.float32) <= 1.0
        assert ulp_error(float(got[r, 1]), mpmath.sin(th), np.float32) <= 1.0


def test_overrides_and_bad_names():
    assert rope_preset("flux", base=2000.0).base == 2000.0
    assert rope_preset("eva02", head_dim=96).sections == (24, 24)
    assert rope_preset("flux", sections=(8, 24, 32)).sections == (8, 24, 32)
    with pytest.raises(PosEncError, match="'sd3'"):
        rope_preset("sd3")
    with pytest.raises(PosEncError, match="no field 'colour'"):
        rope_preset("wan", colour=1)
    with pytest.raises(PosEncError, match="head_dim divisible by 16"):
        rope_preset("cogvideox", head_dim=40)


def test_dinov3_is_its_rope_position_embedding():
    """facebookresearch/dinov3 RopePositionEmbedding (base 100, separate normalisation), written in mpmath."""
    from posenc import dinov3_coords

    h, w, d = 3, 4, 64
    x = RNG.normal(size=(h * w, d))
    periods = [mpmath.power(100, mpmath.mpf(2 * j) / (d // 2)) for j in range(d // 4)]
    ref = np.empty_like(x)
    row = 0
    for i in range(h):
        for j in range(w):
            c = [2 * (mpmath.mpf(i) + mpmath.mpf(1) / 2) / h - 1, 2 * (mpmath.mpf(j) + mpmath.mpf(1) / 2) / w - 1]
            ang = [2 * mpmath.pi * ca / p for ca in c for p in periods]  # [HW, 2, D/4] flattened, then tile(2)
            for k, th in enumerate(ang):
                cs, sn = float(mpmath.cos(th)), float(mpmath.sin(th))
                ref[row, k] = x[row, k] * cs - x[row, k + d // 2] * sn
                ref[row, k + d // 2] = x[row, k + d // 2] * cs + x[row, k] * sn
            row += 1
    assert np.abs(_ours("dinov3", x, dinov3_coords(h, w)) - ref).max() < 1e-13


def test_torch_functional_rope_takes_a_preset_and_fractional_coordinates():
    import posenc.torch as pt

    cfg = rope_preset("eva02")
    coords = eva02_coords((4, 4), (7, 7))
    x = RNG.normal(size=(1, 2, 16, 64)).astype(np.float32)
    got = pt.apply_rope(torch.tensor(x), torch.tensor(coords), layout=cfg.layout, **cfg.kwargs())
    assert np.array_equal(got.numpy(), apply_rope(x, coords, layout=cfg.layout, **cfg.kwargs()))
