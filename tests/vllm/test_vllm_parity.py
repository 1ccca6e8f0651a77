"""Trainer/inference parity: for one Hugging Face config, vLLM's cache holds posenc's rows bit for bit, per scaling.

posenc's side is :func:`posenc.from_hf_config` and :func:`posenc.rope_cos_sin`
(the rows :func:`posenc.hf.patch` gives transformers); vLLM's is ``get_rope``
with the arguments vLLM's models pass for that config (``head_dim``,
``max_position_embeddings``, the config's ``rope_parameters``; DeepSeek's
model code renames ``yarn`` to ``deepseek_yarn``). Where stock vLLM's rule
differs from transformers', the test shows stock off and posenc on
transformers' value.
"""

from __future__ import annotations

import types

import numpy as np
import pytest
import torch
from vllm_helpers import get_rope

import posenc

HEAD = 64


def _config(rope: dict, max_pos: int = 4096, **extra) -> dict:
    return {"head_dim": HEAD, "hidden_size": 8 * HEAD, "num_attention_heads": 8, "max_position_embeddings": max_pos,
            "rope_parameters": {"rope_theta": 1e6, **rope}, **extra}


# (case, HF config, rope_parameters vLLM's model code hands get_rope)
CASES = [
    ("default", _config({"rope_type": "default"}), None),
    ("linear", _config({"rope_type": "linear", "factor": 2.0}), None),
    ("dynamic", _config({"rope_type": "dynamic", "factor": 2.0}), None),
    ("yarn", _config({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}), None),
    ("yarn attention_factor", _config({"rope_type": "yarn", "factor": 4.0, "attention_factor": 0.8,
                                       "original_max_position_embeddings": 1024}), None),
    ("deepseek yarn", _config({"rope_type": "yarn", "factor": 4.0, "mscale": 0.707, "mscale_all_dim": 0.707,
                               "original_max_position_embeddings": 1024}), "deepseek_yarn"),
    ("deepseek yarn, mscale alone", _config({"rope_type": "yarn", "factor": 4.0, "mscale": 0.707,
                                             "original_max_position_embeddings": 1024}), "deepseek_yarn"),
    ("llama3", _config({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_position_embeddings": 1024})),
    ("mrope", _config({"rope_type": "default", "mrope_section": [8, 12, 12]}, model_type="qwen2_vl"), None),
    ("mrope interleaved", _config({"rope_type": "default", "mrope_section": [12, 10, 10], "mrope_interleaved": True},
                                  model_type="qwen3_vl"), None),
    ("mrope yarn", _config({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024,
                            "mrope_section": [12, 10, 10], "mrope_interleaved": True}, model_type="qwen3_vl"), None),
    ("proportional", _config({"rope_type": "proportional", "partial_rotary_factor": 0.25}), None),
]
CASES = [(c[0], c[1], c[2] if len(c) > 2 else None) for c in CASES]


def _vllm_cache(cfg: dict, rope_type: str | None, *, stock: bool = False) -> torch.Tensor:
    params = dict(cfg["rope_parameters"])
    if rope_type is not None:
        params["rope_type"] = rope_type
    return get_rope(HEAD, cfg["max_position_embeddings"], params, torch.bfloat16, stock=stock).cos_sin_cache


def _posenc_rows(cfg: dict, n: int) -> np.ndarray:
    spec = posenc.from_hf_config(cfg)
    pos = np.arange(n)
    if spec.sections is not None:  # text tokens: every axis at the same position
        pos = np.stack([pos] * len(spec.sections), axis=-1)
    cos, sin = posenc.rope_cos_sin(pos, spec, dtype=np.float32)
    pad = HEAD // 2 - cos.shape[-1]  # proportional RoPE: vLLM holds the unrotated pairs as angle 0
    if pad:
        cos = np.concatenate([cos, np.ones((n, pad), np.float32)], axis=-1)
        sin = np.concatenate([sin, np.zeros((n, pad), np.float32)], axis=-1)
    return np.concatenate([cos, sin], axis=-1)


@pytest.mark.parametrize(("case", "cfg", "rope_type"), CASES, ids=[c[0] for c in CASES])
def test_vllm_holds_posencs_rows_bit_for_bit(case, cfg, rope_type):
    cache = _vllm_cache(cfg, rope_type).numpy()
    assert cache.dtype == np.float32
    want = _posenc_rows(cfg, cache.shape[0])
    assert cache.shape == want.shape
    assert cache.view(np.uint32).tolist() == want.view(np.uint32).tolist()


def test_linear_rows_of_every_factor_sit_at_vllms_offsets():
    """LoRA adapters with several factors share one table (vLLM's offsets): each block is that factor's rows."""
    from posenc.vllm.classes import ExactLinearScalingRotaryEmbedding

    multi = ExactLinearScalingRotaryEmbedding(HEAD, HEAD, 1024, 1e6, True, [1.0, 2.0, 4.0], torch.float32)
    assert multi.scaling_factor_to_offset == {1.0: 0, 2.0: 1024, 4.0: 3072}
    two = get_rope(HEAD, 1024, {"rope_type": "linear", "factor": 2.0, "rope_theta": 1e6}, torch.float32)
    assert torch.equal(multi.cos_sin_cache[1024:3072], two.cos_sin_cache)


def test_where_stock_vllm_departs_from_transformers_posenc_follows_transformers():
    """DeepSeek's ``mscale`` without ``mscale_all_dim``: transformers' attention factor is 0.1·ln 4 + 1."""
    cfg = dict(CASES[[c[0] for c in CASES].index("deepseek yarn, mscale alone")][1])
    stock = _vllm_cache(cfg, "deepseek_yarn", stock=True).float().numpy()
    ours = _vllm_cache(cfg, "deepseek_yarn").numpy()
    hf = 0.1 * np.log(4.0) + 1  # transformers' _compute_yarn_parameters: get_mscale(factor)
    vllm_rule = 0.1 * 0.707 * np.log(4.0) + 1  # vLLM's yarn_get_mscale(factor, mscale) / 1
    assert ours[0, 0] == np.float32(hf)  # position 0: cos 0 = 1 times the attention factor
    assert abs(stock[0, 0] - vllm_rule) < 1e-2 < abs(stock[0, 0] - hf)


def test_deepseeks_explicit_attention_factor_is_read_from_the_model_config(monkeypatch):
    """vLLM #48621 (Ministral 3): get_rope drops attention_factor 1.0 for DeepSeek's class; stock cos(0) is 1.277."""
    import vllm.config

    cfg = _config({"rope_type": "yarn", "factor": 16.0, "attention_factor": 1.0,
                   "original_max_position_embeddings": 256})
    model = types.SimpleNamespace(hf_text_config=types.SimpleNamespace(rope_parameters=cfg["rope_parameters"]))
    monkeypatch.setattr(vllm.config, "get_current_vllm_config", lambda: types.SimpleNamespace(model_config=model))
    stock = _vllm_cache(cfg, "deepseek_llama_scaling", stock=True).float().numpy()
    ours = _vllm_cache(cfg, "deepseek_llama_scaling").numpy()
    assert abs(stock[0, 0] - (0.1 * np.log(16.0) + 1)) < 1e-2  # vLLM: g(16, 1) / g(16, 0), in bfloat16
    assert ours[0, 0] == 1.0
    want = _posenc_rows(cfg, ours.shape[0])
    assert ours.view(np.uint32).tolist() == want.view(np.uint32).tolist()


def test_hunyuans_ntk_alpha_rows_are_posencs_ntk_and_transformers_frequencies():
    """HunYuan's ``dynamic`` + ``alpha``: vLLM's DynamicNTKAlpha holds posenc's NTK(alpha) rows, bit for bit.

    The checkpoint's definition is transformers' HunYuan
    ``compute_ntk_alpha_rope_parameters`` (base · alpha^(d/(d-2)), float32 in
    transformers): posenc's frequencies sit within float32's rounding of it.
    """
    from transformers.models.hunyuan_v1_dense.modeling_hunyuan_v1_dense import HunYuanDenseV1RotaryEmbedding

    from posenc.rope.frequencies import spec_frequencies
    from posenc.rope.scaling import NTK

    alpha, theta = 1000.0, 10000.0
    params = {"rope_type": "dynamic", "alpha": alpha, "rope_theta": theta}
    cache = get_rope(HEAD, 4096, params, torch.bfloat16).cos_sin_cache.numpy()
    assert cache.dtype == np.float32 and cache.shape == (4096, HEAD)
    spec = posenc.RopeConfig(HEAD, base=theta, scaling=NTK(alpha))
    cos, sin = posenc.rope_cos_sin(np.arange(4096), spec, dtype=np.float32)
    want = np.concatenate([cos, sin], axis=-1)
    assert cache.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    hf = types.SimpleNamespace(head_dim=HEAD, rope_parameters=params)
    inv_freq, factor = HunYuanDenseV1RotaryEmbedding.compute_ntk_alpha_rope_parameters(hf)
    assert factor == 1.0
    np.testing.assert_allclose(spec_frequencies(spec, None).inv_freq,
                               inv_freq.double().numpy(), rtol=4e-7)  # float32's half ulp and a few roundings


def test_bailings_cache_is_the_plain_rows_and_its_mixed_axes_read_them():
    """bailing_mrope: M-RoPE's plain cache (4 × max_position rows); H/W alternate per pair, T takes the tail."""
    params = {"rope_type": "bailing_mrope", "mrope_section": [8, 12, 12], "rope_theta": 1e6}
    rope = get_rope(HEAD, 1024, params, torch.bfloat16)
    cache = rope.cos_sin_cache.numpy()
    assert cache.dtype == np.float32 and cache.shape == (4096, HEAD)
    want = _posenc_rows(_config({"rope_type": "default"}), 4096)
    assert cache.view(np.uint32).tolist() == want.view(np.uint32).tolist()
    t, h, w = 5, 700, 3000
    cos, _ = rope.select_cos_sin(torch.tensor([[t], [h], [w]]))
    spatial = [want[h if i % 2 == 0 else w, i] for i in range(24)]
    assert cos[0].tolist() == spatial + want[t, 24:32].tolist()
