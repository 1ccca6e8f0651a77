"""The plugin through vLLM's own seam: loaded by the entry point, posenc's classes from get_rope, float32 caches."""

from __future__ import annotations

import logging
import types

import pytest
import torch
import vllm.plugins
from vllm.model_executor.custom_op import CustomOp, op_registry_oot
from vllm.model_executor.layers.rotary_embedding import Phi3LongRoPEScaledRotaryEmbedding
from vllm_helpers import get_rope

import posenc.vllm
from posenc.vllm.classes import CLASSES, LOGGER
from posenc.vllm.rows import PATCHED, STOCK

# rope_parameters as vLLM's models pass them to get_rope, and the vLLM class get_rope builds for them
PARAMS = [
    ({"rope_theta": 1e6}, "RotaryEmbedding"),
    ({"rope_type": "linear", "factor": 2.0}, "LinearScalingRotaryEmbedding"),
    ({"rope_type": "dynamic", "factor": 2.0}, "DynamicNTKScalingRotaryEmbedding"),
    ({"rope_type": "dynamic", "alpha": 1000.0}, "DynamicNTKAlphaRotaryEmbedding"),
    ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024}, "YaRNScalingRotaryEmbedding"),
    ({"rope_type": "deepseek_yarn", "factor": 4.0, "original_max_position_embeddings": 1024, "mscale": 1.0,
      "mscale_all_dim": 1.0}, "DeepseekScalingRotaryEmbedding"),
    ({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
      "original_max_position_embeddings": 1024}, "Llama3RotaryEmbedding"),
    ({"rope_type": "default", "mrope_section": [8, 12, 12]}, "MRotaryEmbedding"),
    ({"rope_type": "default", "mrope_section": [12, 10, 10], "mrope_interleaved": True}, "MRotaryEmbedding"),
    ({"rope_type": "openpangu", "mrope_section": [8, 12, 12], "mrope_interleaved": True},
     "MRotaryEmbeddingInterleaved"),
    ({"rope_type": "bailing_mrope", "mrope_section": [8, 12, 12]}, "BailingMRotaryEmbedding"),
    ({"rope_type": "proportional", "partial_rotary_factor": 0.25}, "Gemma4RotaryEmbedding"),
]


def test_the_entry_point_registered_every_patched_class():
    assert posenc.vllm.registered() == list(PATCHED)
    assert {n: op_registry_oot[n] for n in PATCHED} == CLASSES
    posenc.vllm.register()  # vLLM may load plugins again: idempotent, no duplicate registration
    assert posenc.vllm.registered() == list(PATCHED)


@pytest.mark.parametrize(("params", "vllm_name"), PARAMS, ids=[n for _, n in PARAMS])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_get_rope_builds_posencs_class_with_a_float32_cache(params, vllm_name, dtype):
    rope = get_rope(64, 4096, params, dtype)
    assert type(rope) is CLASSES[vllm_name]
    assert vllm_name in [c.__name__ for c in type(rope).__mro__]  # a subclass of vLLM's own
    assert rope.cos_sin_cache.dtype == torch.float32
    assert rope.name == "rotary_embedding"  # custom_ops directives ("+rotary_embedding") still reach it
    pos = torch.tensor([0, 7, 4000])
    if "MRotary" in vllm_name:
        pos = torch.stack([pos, pos, pos])  # (t, h, w)
    q, k = torch.randn(3, 2 * 64, dtype=dtype), torch.randn(3, 2 * 64, dtype=dtype)
    out_q, out_k = rope.forward_native(pos, q, k)
    assert out_q.dtype == dtype and out_k.dtype == dtype  # the model's dtype out, whatever the cache holds
    assert rope.cos_sin_cache.dtype == torch.float32  # and the call kept it float32


@pytest.mark.parametrize(("params", "vllm_name"), PARAMS[:1], ids=["RotaryEmbedding"])
def test_stock_vllm_casts_the_cache_to_the_model_dtype(params, vllm_name):
    """What the plugin changes: stock vLLM's bfloat16 cache (rounded from its float32 angle)."""
    assert get_rope(64, 4096, params, torch.bfloat16, stock=True).cos_sin_cache.dtype == torch.bfloat16


def test_longrope_stays_stock(monkeypatch):
    """vLLM's LongRoPE is a plain nn.Module: CustomOp.__new__, the seam, never sees it."""
    from vllm.model_executor.layers.rotary_embedding import phi3_long_rope_scaled_rope as phi3

    # it reads max_model_len from the model config, which this CPU setting has none of
    model = types.SimpleNamespace(model_config=types.SimpleNamespace(max_model_len=4096))
    monkeypatch.setattr(phi3, "get_current_vllm_config", lambda: model)
    params = {"rope_type": "longrope", "short_factor": [1.0] * 32, "long_factor": [2.0] * 32,
              "original_max_position_embeddings": 1024}
    assert not issubclass(Phi3LongRoPEScaledRotaryEmbedding, CustomOp)
    rope = get_rope(64, 4096, params, torch.bfloat16)
    assert type(rope) is Phi3LongRoPEScaledRotaryEmbedding
    assert rope.long_short_cos_sin_cache.dtype == torch.bfloat16


def test_register_logs_the_stock_classes_once(monkeypatch):
    records: list[logging.LogRecord] = []
    handler = logging.Handler()
    handler.emit = records.append  # type: ignore[method-assign]
    LOGGER.addHandler(handler)
    LOGGER.setLevel(logging.INFO)
    monkeypatch.setattr(posenc.vllm, "_DONE", [])
    held = {n: op_registry_oot.pop(n) for n in PATCHED}
    try:
        posenc.vllm.register()
        posenc.vllm.register()
    finally:
        LOGGER.removeHandler(handler)
        op_registry_oot.update(held)
    assert len(records) == 1
    message = records[0].getMessage()
    assert all(name in message for name in STOCK)
    assert "Phi3LongRoPEScaledRotaryEmbedding (a plain nn.Module" in message


def test_vllm_plugins_switches_it_off(monkeypatch):
    monkeypatch.setenv("VLLM_PLUGINS", "lora_filesystem_resolver")
    assert "posenc" not in vllm.plugins.load_plugins_by_group(vllm.plugins.DEFAULT_PLUGINS_GROUP)
    monkeypatch.setenv("VLLM_PLUGINS", "posenc")
    loaded = vllm.plugins.load_plugins_by_group(vllm.plugins.DEFAULT_PLUGINS_GROUP)
    assert loaded == {"posenc": posenc.vllm.register}
