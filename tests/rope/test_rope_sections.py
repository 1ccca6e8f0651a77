"""Multi-axis RoPE (M-RoPE, Qwen3-VL's interleaved sections, axial): exactness, the 1-D reduction,
agreement with transformers' Qwen2-VL / Qwen3-VL / vision rotary modules, and config reading.

The pair-to-axis assignments below are written from transformers' code
(``Qwen2VLRotaryEmbedding.recomposition_frequencies``: chunks of
``mrope_section``, chunk i from axis i % 3; ``Qwen3VLTextRotaryEmbedding``:
``slice(offset, 3·section[dim], 3)`` from axis ``dim``), not from posenc.
"""

from __future__ import annotations

import dataclasses

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from posenc import (
    Linear,
    PosEncError,
    Sections,
    Text,
    VisionGrid,
    YaRN,
    apply_rope,
    from_hf_config,
    mrope_positions,
    rope_cos_sin,
    rope_frequencies,
)
from reference import ulp_error

mpf = mpmath.mpf


def hf_contiguous_axes(section):
    """Qwen2-VL: freq.split(mrope_section) → chunk i takes axis i % 3."""
    return np.concatenate([np.full(s, i % 3) for i, s in enumerate(section)])


def hf_interleaved_axes(section):
    """Qwen3-VL: start from t everywhere; pairs slice(offset, section[dim]*3, 3) from dim = offset (h, w)."""
    axes = np.zeros(sum(section), dtype=int)
    for dim, offset in ((1, 1), (2, 2)):
        axes[offset : section[dim] * 3 : 3] = dim
    return axes


def ref_omega(i, axes, section, base, rotary_dim, per_axis):
    if not per_axis:  # one ladder over the rotary dim: 1/θ^(2i/r)
        return 1 / mpmath.power(mpf(base), mpf(2 * i) / rotary_dim)
    a = axes[i]
    j = int(np.sum(axes[:i] == a))  # the j-th pair of its axis
    share = 2 * section[a]  # Qwen2VLVisionRotaryEmbedding: 1/θ^(arange(0, dim, 2)/dim), dim = the axis's share
    return 1 / mpmath.power(mpf(base), mpf(2 * j) / share)


@pytest.mark.parametrize(("section", "layout", "ladder", "axes"), [
    ((16, 24, 24), "contiguous", "shared", hf_contiguous_axes((16, 24, 24))),
    ((24, 20, 20), "interleaved", "shared", hf_interleaved_axes((24, 20, 20))),
    ((2, 3, 3), "contiguous", "shared", hf_contiguous_axes((2, 3, 3))),
    ((4, 2, 2), "interleaved", "shared", hf_interleaved_axes((4, 2, 2))),
    ((8, 8), "contiguous", "per_axis", np.repeat([0, 1], 8)),
])
def test_cos_sin_within_one_float32_ulp(section, layout, ladder, axes):
    r = 2 * sum(section)
    base = 1e6 if ladder == "shared" else 10000.0
    n = len(section)
    pos = np.array([[0] * n, [5, 3, 9, 1][:n], [100000, 7, 65537, 2][:n], [-3, 2**30, 11, 0][:n],
                    [2.5, -0.75, 1e4, 3][:n]])
    f = rope_frequencies(r, base=base, sections=section, section_layout=layout, ladder=ladder)
    assert f.pair_axes.tolist() == list(axes)
    cos, sin = rope_cos_sin(pos, r, base=base, sections=section, section_layout=layout, ladder=ladder)
    assert cos.shape == (len(pos), r // 2) and cos.dtype == np.float32
    for row, p in enumerate(pos):
        for i in range(r // 2):
            w = ref_omega(i, axes, section, base, r, ladder == "per_axis")
            a = mpf(float(p[axes[i]])) * w
            assert ulp_error(float(cos[row, i]), mpmath.cos(a), np.float32) <= 1, (p, i)
            assert ulp_error(float(sin[row, i]), mpmath.sin(a), np.float32) <= 1, (p, i)


@pytest.mark.parametrize("layout", ["contiguous", "interleaved"])
def test_text_tokens_are_plain_rope_bit_for_bit(layout):
    sec = (24, 20, 20)
    p = np.arange(-5, 300)
    cos1, sin1 = rope_cos_sin(p, 128, base=1e6)
    cos3, sin3 = rope_cos_sin(np.stack([p, p, p], -1), 128, base=1e6, sections=sec, section_layout=layout)
    assert np.array_equal(cos1, cos3) and np.array_equal(sin1, sin3)
    # in a batch mixing text and image tokens, the text rows still equal plain RoPE's
    mixed = np.stack([p, p, p], -1)
    mixed[100:164] = [[100, 100 + i // 8, 100 + i % 8] for i in range(64)]
    cosm, sinm = rope_cos_sin(mixed, 128, base=1e6, sections=sec, section_layout=layout)
    text = np.r_[0:100, 164:len(p)]
    assert np.array_equal(cosm[text], cos1[text]) and np.array_equal(sinm[text], sin1[text])
    x = np.random.default_rng(0).standard_normal((2, 4, len(p), 128)).astype(np.float32)
    assert np.array_equal(apply_rope(x, p, base=1e6),
                          apply_rope(x, np.stack([p, p, p], -1), base=1e6, sections=sec, section_layout=layout))


@given(st.lists(st.tuples(st.integers(-10**6, 10**6), st.integers(0, 500), st.integers(0, 500)),
                min_size=1, max_size=40),
       st.sampled_from(["contiguous", "interleaved"]))
def test_each_row_depends_only_on_its_positions(points, layout):
    # the dense-range, distinct-value and 1-D paths all give a position's exact bits
    pts = np.array(points)
    cos, sin = rope_cos_sin(pts, 32, sections=(6, 5, 5), section_layout=layout)
    for row, p in enumerate(pts[:6]):
        c1, s1 = rope_cos_sin(p[None], 32, sections=(6, 5, 5), section_layout=layout)
        assert np.array_equal(c1[0], cos[row]) and np.array_equal(s1[0], sin[row])


@pytest.mark.parametrize("layout", ["contiguous", "interleaved"])
def test_score_depends_on_each_axis_offset_only(layout):
    rng = np.random.default_rng(3)
    q, k = rng.standard_normal((2, 64))
    kw = {"sections": (12, 10, 10), "section_layout": layout, "base": 1e4}

    def score(p, pk):
        return float(apply_rope(q[None], [p], **kw)[0] @ apply_rope(k[None], [pk], **kw)[0])

    base_score = score([3, 4, 5], [10, 2, 40])
    for shift in ([7, 0, 0], [0, 100, 0], [1000, -3, 17]):
        s = np.array(shift)
        assert abs(score(np.array([3, 4, 5]) + s, np.array([10, 2, 40]) + s) - base_score) < 1e-12
    # moving only h changes only the pairs that serve h
    f = rope_frequencies(64, **kw)
    h_pairs = f.pair_axes == 1
    a = apply_rope(q[None], [[3, 4, 5]], **kw)[0]
    b = apply_rope(q[None], [[3, 9, 5]], **kw)[0]
    moved = ~np.isclose(a, b, rtol=0, atol=0)
    assert np.array_equal(moved[:32] | moved[32:], h_pairs)


def test_apply_rope_shapes():
    x = np.zeros((2, 3, 5, 16))
    pos = np.zeros((2, 1, 5, 3), dtype=np.int64)  # HF's [3, b, s] moved to [b, 1, s, 3]
    assert apply_rope(x, pos, sections=(4, 2, 2)).shape == x.shape
    assert apply_rope(x, np.zeros((5, 3)), sections=(4, 2, 2)).shape == x.shape
    with pytest.raises(PosEncError, match="trailing axis"):
        apply_rope(x, np.zeros((4, 5, 3)), sections=(4, 2, 2))
    with pytest.raises(PosEncError, match=r"\[\.\.\., 3\]"):
        apply_rope(x, np.zeros(5), sections=(4, 2, 2))
    with pytest.raises(PosEncError, match="moveaxis"):
        rope_cos_sin(np.zeros((3, 2, 5)), 16, sections=(4, 2, 2))


@pytest.mark.parametrize(("kwargs", "match"), [
    ({"sections": (16, 24, 23)}, "sum to rotary_dim / 2"),
    ({"sections": (8, 4, 4), "rotary_dim": 32, "ladder": "per_axis", "scaling": Linear(2.0)}, "no scaling"),
    ({"sections": (2, 15, 15), "section_layout": "interleaved"}, "axis 0 must hold"),
    ({"sections": (16, 0, 48)}, "sections\\[1\\]"),
    ({"sections": "16,24,24"}, "sequence"),
    ({"sections": (32, 32), "section_layout": "diagonal"}, "section_layout"),
    ({"sections": (32, 32), "ladder": "mine"}, "ladder"),
    ({"section_layout": "interleaved"}, "need sections"),
    ({"sections": Sections((32, 32)), "ladder": "per_axis"}, "inside the Sections"),
])
def test_bad_sections(kwargs, match):
    with pytest.raises(PosEncError, match=match):
        rope_frequencies(128, **kwargs)


def test_sections_is_frozen_and_scaling_applies_to_the_shared_ladder():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Sections((1, 1)).layout = "interleaved"  # type: ignore[misc]
    plain = rope_frequencies(128, base=1e6, scaling=YaRN(4.0, 32768))
    multi = rope_frequencies(128, base=1e6, scaling=YaRN(4.0, 32768), sections=(16, 24, 24))
    assert np.array_equal(plain.inv_freq, multi.inv_freq)
    assert multi.attention_factor == plain.attention_factor != 1.0


# --- transformers' modules --------------------------------------------------------------


def _mrope_positions(text_before, grid_thw, text_after):
    """(t, h, w) ids of text, one grid (merged), text: posenc's get_rope_index (tests/rope/test_mrope_ids.py)."""
    return mrope_positions([Text(text_before), VisionGrid(*grid_thw), Text(text_after)])[0]


def _hf_text(kind):
    torch = pytest.importorskip("torch")
    if kind == "qwen2":
        from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLTextConfig
        from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLRotaryEmbedding

        cfg = Qwen2VLTextConfig(hidden_size=1024, num_attention_heads=8, num_key_value_heads=8,
                                rope_scaling={"type": "mrope", "mrope_section": [16, 24, 24]}, rope_theta=1e6)
        return torch, cfg, Qwen2VLRotaryEmbedding(cfg)
    from transformers.models.qwen3_vl.configuration_qwen3_vl import Qwen3VLTextConfig
    from transformers.models.qwen3_vl.modeling_qwen3_vl import Qwen3VLTextRotaryEmbedding

    cfg = Qwen3VLTextConfig(hidden_size=1024, num_attention_heads=8, num_key_value_heads=8, head_dim=128,
                            rope_parameters={"rope_type": "default", "rope_theta": 5e6, "mrope_interleaved": True,
                                             "mrope_section": [24, 20, 20]})
    return torch, cfg, Qwen3VLTextRotaryEmbedding(cfg)


@pytest.mark.parametrize("kind", ["qwen2", "qwen3"])
def test_transformers_text_rotary_agrees(kind):
    torch, cfg, hf = _hf_text(kind)
    ours = from_hf_config(cfg)
    assert ours.sections == ((16, 24, 24) if kind == "qwen2" else (24, 20, 20))
    pos = _mrope_positions(40, (2, 12, 16), 30)  # [s, 3]
    ids = torch.from_numpy(pos.T[:, None, :].copy())  # HF's [3, b=1, s]
    x = torch.zeros(1, 1, dtype=torch.float32)
    hc, hs = (t[0].numpy() for t in hf(x, ids))  # [s, 128]: cat(freq, freq)
    c, s = rope_cos_sin(pos, ours.head_dim, **ours.kwargs())
    assert np.max(np.abs(np.concatenate([c, c], -1) - hc)) <= 2e-5  # HF's float32 angles at positions < 300
    assert np.max(np.abs(np.concatenate([s, s], -1) - hs)) <= 2e-5
    # the rotation itself, against HF's apply_rotary_pos_emb on the same q, k
    from transformers.models.qwen2_vl.modeling_qwen2_vl import apply_rotary_pos_emb

    q = torch.randn(1, 8, len(pos), 128, generator=torch.Generator().manual_seed(0))
    qh, _ = apply_rotary_pos_emb(q, q, torch.from_numpy(hc)[None], torch.from_numpy(hs)[None])
    mine = apply_rope(q.numpy(), pos, **ours.kwargs())
    assert np.max(np.abs(mine - qh.numpy())) <= 1e-4


def test_transformers_vision_rotary_agrees():
    torch = pytest.importorskip("torch")
    from transformers.models.qwen2_vl.configuration_qwen2_vl import Qwen2VLVisionConfig
    from transformers.models.qwen2_vl.modeling_qwen2_vl import Qwen2VLVisionRotaryEmbedding

    vcfg = Qwen2VLVisionConfig(embed_dim=320, num_heads=4, depth=1)  # head_dim 80
    hf = Qwen2VLVisionRotaryEmbedding(vcfg)
    ours = from_hf_config(vcfg)
    assert (ours.head_dim, ours.sections, ours.ladder) == (80, (20, 20), "per_axis")
    hw = np.array([[i, j] for i in range(24) for j in range(36)])  # [N, 2]: (h, w)
    hc, hs = (t.numpy() for t in hf(torch.zeros(1), torch.from_numpy(hw)))
    c, s = rope_cos_sin(hw, 80, **ours.kwargs())
    assert np.max(np.abs(np.concatenate([c, c], -1) - hc)) <= 1e-5
    assert np.max(np.abs(np.concatenate([s, s], -1) - hs)) <= 1e-5


# --- configs ----------------------------------------------------------------------------


QWEN2_VL_7B = {  # Qwen/Qwen2-VL-7B-Instruct config.json (the RoPE-relevant keys)
    "model_type": "qwen2_vl", "hidden_size": 3584, "num_attention_heads": 28, "rope_theta": 1000000.0,
    "max_position_embeddings": 32768, "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]},
    "vision_config": {"embed_dim": 1280, "num_heads": 16},
}
QWEN3_VL = {  # Qwen3-VL's nested layout: the language model's keys under text_config
    "model_type": "qwen3_vl",
    "text_config": {"model_type": "qwen3_vl_text", "hidden_size": 4096, "num_attention_heads": 32, "head_dim": 128,
                    "rope_theta": 5000000, "rope_scaling": {"mrope_interleaved": True, "mrope_section": [24, 20, 20],
                                                            "rope_type": "default"}},
}


def test_config_reading():
    c = from_hf_config(QWEN2_VL_7B)
    assert (c.head_dim, c.sections, c.section_layout, c.ladder) == (128, (16, 24, 24), "contiguous", "shared")
    c = from_hf_config(QWEN3_VL)
    assert (c.head_dim, c.base, c.sections, c.section_layout) == (128, 5e6, (24, 20, 20), "interleaved")
    # the model's own defaults when a config leaves the keys out (as Qwen3VLTextRotaryEmbedding does)
    bare = {**QWEN3_VL["text_config"], "rope_scaling": {"rope_type": "default"}}
    assert from_hf_config(bare).sections == (24, 20, 20)
    assert from_hf_config(bare).section_layout == "interleaved"
    v = from_hf_config({"model_type": "qwen2_vl_vision", "embed_dim": 1280, "num_heads": 16, "hidden_size": 3584})
    assert (v.head_dim, v.sections, v.ladder) == (80, (20, 20), "per_axis")
    plain = from_hf_config({"hidden_size": 256, "num_attention_heads": 4})
    assert plain.sections is None and "sections" not in plain.kwargs()


@pytest.mark.parametrize(("rope", "match"), [
    ({"type": "mrope", "mrope_section": [16, 24, 20]}, "does not fit"),
    ({"type": "mrope", "mrope_section": "16,24,24"}, "list of pair counts"),
    ({"mrope_section": [32, 16, 16], "mrope_interleaved": "yes"}, "true or false"),
    ({"mrope_interleaved": True}, "no mrope_section"),
])
def test_config_errors(rope, match):
    with pytest.raises(PosEncError, match=match):
        from_hf_config({"hidden_size": 1024, "num_attention_heads": 8, "rope_scaling": rope})


@pytest.mark.parametrize("layout", ["contiguous", "interleaved"])
def test_numpy_placement_equals_the_compiled_one(layout, monkeypatch):
    import posenc.exact.placement as placement

    pos = np.concatenate([np.repeat(np.arange(300)[:, None], 3, 1),
                          np.array([[300, 300 + i // 40, 300 + i % 40] for i in range(1200)]),
                          np.array([[10**7 + 0.5, 3, -2]] * 5)])  # a far, fractional axis: the distinct-value tables
    kw = {"sections": (12, 10, 10), "section_layout": layout}
    fast = rope_cos_sin(pos, 64, **kw)
    monkeypatch.setattr(placement, "_kernels", lambda values: None)
    slow = rope_cos_sin(pos, 64, **kw)
    assert np.array_equal(fast[0], slow[0]) and np.array_equal(fast[1], slow[1])
    half = rope_cos_sin(pos, 64, dtype=np.float16, **kw)
    assert np.array_equal(half[0], rope_cos_sin(pos, 64, dtype=np.float64, **kw)[0].astype(np.float16))
