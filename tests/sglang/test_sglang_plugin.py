"""posenc.sglang through SGLang's own seam: the entry point's hooks, posenc's rows in SGLang's caches, bit for bit.

posenc's side is :func:`posenc.from_hf_config` and :func:`posenc.rope_cos_sin`
(the rows :func:`posenc.hf.patch` gives transformers); SGLang's is its
``get_rope`` with the arguments its models pass for that config. The
long-range reference is mpmath at 40 digits from the papers' formulas,
written here.
"""

from __future__ import annotations

import logging
import math

import mpmath
import numpy as np
import pytest
import torch
from sglang.srt.layers.rotary_embedding import factory
from sglang.srt.plugins import hook_registry, load_plugins_by_group

import posenc
import posenc.sglang

mpmath.mp.dps = 40
HEAD = 64


def _config(rope: dict, max_pos: int = 4096) -> dict:
    return {"head_dim": HEAD, "hidden_size": 8 * HEAD, "num_attention_heads": 8, "max_position_embeddings": max_pos,
            "rope_parameters": {"rope_theta": 1e6, **rope}}


CASES = [
    ("default", _config({"rope_type": "default"})),
    ("llama3", _config({"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                        "original_max_position_embeddings": 1024})),
    ("yarn", _config({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 1024})),
]


def _get_rope(cfg: dict, dtype: torch.dtype, head: int = HEAD) -> torch.nn.Module:
    """SGLang's get_rope as its Llama code calls it (rope_scaling None for the default), never a memoized layer."""
    factory._ROPE_DICT.clear()
    params = dict(cfg["rope_parameters"])
    theta = params.pop("rope_theta")
    scaling = None if params.get("rope_type") == "default" else params
    return factory.get_rope(head, head, cfg["max_position_embeddings"], theta, True, scaling, dtype)


def _posenc_rows(cfg: dict, n: int) -> np.ndarray:
    cos, sin = posenc.rope_cos_sin(np.arange(n), posenc.from_hf_config(cfg), dtype=np.float32)
    return np.concatenate([cos, sin], axis=-1)


def test_the_entry_point_applied_the_hooks():
    assert posenc.sglang.registered() == list(posenc.sglang.TARGETS)
    assert set(posenc.sglang.TARGETS) <= hook_registry.HookRegistry._patched
    posenc.sglang.register()  # SGLang may load plugins again: idempotent
    assert posenc.sglang.registered() == list(posenc.sglang.TARGETS)


def test_sglang_plugins_switches_it_off(monkeypatch):
    monkeypatch.setenv("SGLANG_PLUGINS", "someone_else")
    assert "posenc" not in load_plugins_by_group("sglang.srt.plugins")
    monkeypatch.setenv("SGLANG_PLUGINS", "posenc")
    assert load_plugins_by_group("sglang.srt.plugins")["posenc"][0] is posenc.sglang.register


@pytest.mark.parametrize(("case", "cfg"), CASES, ids=[c[0] for c in CASES])
def test_sglang_holds_posencs_rows_bit_for_bit(case, cfg, monkeypatch):
    """With SGLang's float32 cache (its rule on CUDA; SGLANG_ROPE_CACHE_FP32=1 here) the rows are posenc's."""
    monkeypatch.setenv("SGLANG_ROPE_CACHE_FP32", "1")
    cache = _get_rope(cfg, torch.bfloat16).cos_sin_cache.numpy()
    assert cache.dtype == np.float32
    want = _posenc_rows(cfg, cache.shape[0])
    assert cache.view(np.uint32).tolist() == want.view(np.uint32).tolist()


@pytest.mark.parametrize(("case", "cfg"), CASES, ids=[c[0] for c in CASES])
def test_a_bfloat16_cache_is_posencs_rows_rounded_once(case, cfg):
    """SGLang's CPU rule casts the cache to the model's dtype: from posenc's rows, one rounding."""
    cache = _get_rope(cfg, torch.bfloat16).cos_sin_cache
    assert cache.dtype == torch.bfloat16
    want = torch.from_numpy(_posenc_rows(cfg, cache.shape[0])).to(torch.bfloat16)
    assert torch.equal(cache, want)


@pytest.mark.parametrize(("case", "cfg"), CASES, ids=[c[0] for c in CASES])
def test_a_grown_cache_holds_posencs_rows(case, cfg, monkeypatch):
    monkeypatch.setenv("SGLANG_ROPE_CACHE_FP32", "1")
    rope = _get_rope(cfg, torch.float32)
    n = rope.cos_sin_cache.shape[0]
    rope._ensure_cos_sin_cache_length(n + 5)
    grown = rope.cos_sin_cache.numpy()
    assert grown.shape[0] == ((n + 5 + 128) // 128) * 128  # SGLang's alignment (SGLANG_ROPE_CACHE_ALIGN)
    want = _posenc_rows(cfg, grown.shape[0])
    assert grown.view(np.uint32).tolist() == want.view(np.uint32).tolist()


def test_a_setting_posenc_does_not_read_back_stays_stock_and_is_logged(caplog):
    """YaRN with mscale and mscale_all_dim: SGLang folds them into one float before the cache."""
    cfg = _config({"rope_type": "yarn", "factor": 4.0, "mscale": 0.707, "mscale_all_dim": 0.707,
                   "original_max_position_embeddings": 1024})
    posenc.sglang._WARNED.discard("YaRNScalingRotaryEmbedding")
    with caplog.at_level(logging.WARNING, logger="sglang.srt.plugins.posenc"):
        cache = _get_rope(cfg, torch.float32).cos_sin_cache
        _get_rope(cfg, torch.float32)
    lines = [r.getMessage() for r in caplog.records if r.name == "sglang.srt.plugins.posenc"]
    assert lines == ["posenc.sglang: YaRNScalingRotaryEmbedding left stock: mscale/mscale_all_dim/attn_factor/"
                     "extrapolation_factor other than YaRN's defaults"]
    want = _posenc_rows(cfg, cache.shape[0])  # posenc's rows would differ: this cache is SGLang's own
    assert not np.array_equal(cache.numpy(), want)


def _ladder(base: float, d: int) -> list[mpmath.mpf]:
    return [mpmath.mpf(base) ** (-mpmath.mpf(2 * i) / d) for i in range(d // 2)]


def test_long_range_ten_times_closer_than_stock(monkeypatch):
    """Default θ = 10^6, head 128, positions 10^5 … 10^6: stock's float32 angle is visibly off, posenc's is not."""
    monkeypatch.setenv("SGLANG_ROPE_CACHE_FP32", "1")
    head, n = 128, 10**6
    cfg = _config({"rope_type": "default"}, max_pos=n)
    positions = np.unique(np.geomspace(10**5, n - 1, 24).astype(np.int64))
    omegas = _ladder(1e6, head)
    want = np.array([[float(f(int(p) * w)) for f in (mpmath.cos, mpmath.sin) for w in omegas] for p in positions])
    errors = []
    for stock in (True, False):
        if stock:
            monkeypatch.setattr(posenc.sglang, "_spec", lambda layer: None)
        else:
            monkeypatch.undo()
            monkeypatch.setenv("SGLANG_ROPE_CACHE_FP32", "1")
        cache = _get_rope(cfg, torch.float32, head=head).cos_sin_cache
        errors.append(float(np.abs(cache[torch.as_tensor(positions)].double().numpy() - want).max()))
        del cache
    stock_err, exact_err = errors
    print(f"sglang default theta 1e6: stock {stock_err:.3g}, posenc {exact_err:.3g}, ratio {stock_err / exact_err:.3g}")
    assert stock_err > 1e-3
    assert exact_err * 10 <= stock_err
    assert exact_err <= 2.0**-24  # one float32 rounding of values below 1: half an ulp
    assert math.isfinite(exact_err)


def test_the_layers_forward_keeps_the_float32_rows_and_gives_the_models_dtype(monkeypatch):
    """SGLang's CPU forward (no AMX kernel here: forward_native) reads the float32 rows beside bfloat16 q/k."""
    monkeypatch.setenv("SGLANG_ROPE_CACHE_FP32", "1")
    rope = _get_rope(CASES[0][1], torch.bfloat16)
    q = torch.randn(3, 2 * HEAD, dtype=torch.bfloat16)
    pos = torch.tensor([0, 5, 4000])
    out_q, out_k = rope(pos, q.clone(), q.clone())
    assert out_q.dtype == out_k.dtype == torch.bfloat16
    assert rope.cos_sin_cache.dtype == torch.float32  # the call kept it
    assert torch.equal(out_q, rope.forward_native(pos, q.clone(), q.clone())[0])
    assert not torch.equal(out_q, q)  # rotated (positions 5 and 4000)
