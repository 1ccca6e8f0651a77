"""Gemma 4's proportional RoPE and the per-model defaults of transformers 5.23's config classes, against its modules.

References: the config classes themselves (their defaults), their rotary
modules' outputs, and their modeling files' ``apply_rotary_pos_emb``.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from matrix import applies, require  # noqa: E402

import posenc  # noqa: E402


def _quiet(factory, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return factory(*args, **kwargs)


def test_gemma4_proportional_rotation_is_the_modeling_code():
    """apply_rope(layout="head_half") on random q equals Gemma 4's rotary module + apply_rotary_pos_emb."""
    require("gemma4")
    from transformers.models.gemma4 import modeling_gemma4 as mod

    config = _quiet(transformers.Gemma4TextConfig, num_hidden_layers=2, head_dim=16, global_head_dim=32,
                    layer_types=["sliding_attention", "full_attention"])
    rotary = _quiet(mod.Gemma4TextRotaryEmbedding, config)
    positions = torch.tensor([[0, 1, 7, 300, 4097]])
    for layer, kind in enumerate(config.layer_types):
        rope = posenc.from_hf_config(config, layer=layer)
        q = torch.randn(1, 2, positions.shape[1], rope.head_dim, generator=torch.Generator().manual_seed(layer),
                        dtype=torch.float64)
        cos, sin = rotary(q.float(), positions, layer_type=kind)
        want = mod.apply_rotary_pos_emb(q, cos.double(), sin.double())  # x, cos, sin: rotate_half over the head
        got = posenc.apply_rope(q.numpy(), positions.numpy()[:, None, :], layout=rope.layout, **rope.kwargs())
        # stock cos/sin are float32 of float32 angles: a few float32 ulps of the angle at 4097
        assert np.abs(got - want.numpy()).max() < 1e-3, (kind, rope)
        if rope.layout == "head_half":
            k = rope.rotary_dim // 2
            passed = np.r_[k:rope.head_dim // 2, rope.head_dim // 2 + k:rope.head_dim]
            assert np.array_equal(got[..., passed], q.numpy()[..., passed])  # angle 0: copied bit for bit


def test_gemma4_default_config_per_layer():
    """Gemma4TextConfig(): sliding layers rotate the 256-wide head at 1e4; full layers a quarter of 512 at 1e6."""
    require("gemma4")
    config = _quiet(transformers.Gemma4TextConfig)
    sliding, full = (posenc.from_hf_config(config, layer=i) for i in (0, 5))
    assert (sliding.head_dim, sliding.rotary_dim, sliding.base, sliding.layout) == (256, 256, 1e4, "half")
    assert (full.head_dim, full.rotary_dim, full.base, full.layout) == (512, 128, 1e6, "head_half")
    # the same from a config.json that names global_head_dim instead of per_layer_config
    raw = {"model_type": "gemma4_text", "head_dim": 256, "global_head_dim": 512, "num_hidden_layers": 6}
    read = posenc.from_hf_config(raw, layer=5)
    assert (read.head_dim, read.rotary_dim, read.base, read.scaling, read.layout) == \
        (full.head_dim, full.rotary_dim, full.base, full.scaling, full.layout)
    with pytest.raises(posenc.PosEncError, match="layer="):
        posenc.from_hf_config(config)


def test_stablelm_default_partial_rotary_factor_is_the_modules():
    applies("stablelm-rotary-from-config")
    from transformers.models.stablelm.modeling_stablelm import StableLmRotaryEmbedding

    config = _quiet(transformers.StableLmConfig)
    rope = posenc.from_hf_config(config)
    inv = StableLmRotaryEmbedding(config).inv_freq.double().numpy()
    assert rope.rotary_dim == 2 * len(inv) == int(rope.head_dim * 0.25)
    assert np.allclose(posenc.rope_frequencies(rope.head_dim, **rope.kwargs()).inv_freq, inv, rtol=2e-6, atol=0)


def test_glm41v_mrope_section_default_is_the_modules():
    """GLM-4.1V-9B's text config (partial_rotary_factor 0.5, no mrope_section): the module's [8, 12, 12]."""
    require("glm-4.1v")
    applies("glm-4.1v-module-sections")
    from transformers.models.glm4v.modeling_glm4v import Glm4vTextRotaryEmbedding

    config = _quiet(transformers.Glm4vTextConfig, rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                                                   "partial_rotary_factor": 0.5})
    rotary = _quiet(Glm4vTextRotaryEmbedding, config)
    rope = posenc.from_hf_config(config)
    assert rope.sections == tuple(rotary.mrope_section) == (8, 12, 12) and rope.layout == "interleaved"
    axes = torch.tensor([[[0, 3, 9, 70]], [[0, 1, 2, 5]], [[0, 4, 4, 11]]])  # [3, b, s]: (t, h, w)
    cos, sin = rotary(torch.zeros(1, 4, 8), axes)
    mine_cos, mine_sin = posenc.rope_cos_sin(axes[:, 0].T.numpy(), rope.head_dim, dtype=np.float64, **rope.kwargs())
    # the module repeats each pair's row twice (rotate_half_llm pairs (2i, 2i+1))
    assert np.allclose(np.repeat(mine_cos, 2, -1), cos[0].double().numpy(), atol=2e-6, rtol=0)
    assert np.allclose(np.repeat(mine_sin, 2, -1), sin[0].double().numpy(), atol=2e-6, rtol=0)


def test_glm41v_class_default_is_refused_as_its_module_fails():
    """Glm4vTextConfig() rotates all 64 pairs but [8, 12, 12] holds 32: transformers' forward fails, posenc refuses."""
    require("glm-4.1v")
    applies("glm-4.1v-module-sections")
    from transformers.models.glm4v.modeling_glm4v import Glm4vTextRotaryEmbedding

    config = _quiet(transformers.Glm4vTextConfig)
    with pytest.raises(RuntimeError, match="split"):
        _quiet(Glm4vTextRotaryEmbedding, config)(torch.zeros(1, 2, 8), torch.zeros(3, 1, 2, dtype=torch.long))
    with pytest.raises(posenc.PosEncError, match=r"mrope_section \[8, 12, 12\]"):
        posenc.from_hf_config(config)
