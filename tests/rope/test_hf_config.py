"""Reading HF config.json dicts: key names old and new, and clear errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from posenc import DynamicNTK, Linear, Llama3, LongRoPE, PosEncError, YaRN, from_hf_config, rope_frequencies

LLAMA31_8B = {  # meta-llama/Llama-3.1-8B config.json (the RoPE-relevant keys, plus some others)
    "architectures": ["LlamaForCausalLM"],
    "hidden_size": 4096,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "max_position_embeddings": 131072,
    "rope_theta": 500000.0,
    "rope_scaling": {
        "factor": 8.0,
        "low_freq_factor": 1.0,
        "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
        "rope_type": "llama3",
    },
    "torch_dtype": "bfloat16",
}

QWEN25_YARN = {  # Qwen/Qwen2.5-7B-Instruct with the model card's long-context addition
    "hidden_size": 3584,
    "num_attention_heads": 28,
    "max_position_embeddings": 32768,
    "rope_theta": 1000000.0,
    "rope_scaling": {"factor": 4.0, "original_max_position_embeddings": 32768, "type": "yarn"},
}

PHI3 = {  # the phi-3-mini 128k shape; factor lists shortened to the right length with dummies
    "hidden_size": 3072,
    "num_attention_heads": 32,
    "max_position_embeddings": 131072,
    "original_max_position_embeddings": 4096,
    "rope_theta": 10000.0,
    "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 48, "long_factor": [2.0] * 48},
}


def test_llama31_config_is_llama3_scaling_half_layout_128k():
    cfg = from_hf_config(LLAMA31_8B)
    assert (cfg.head_dim, cfg.rotary_dim, cfg.base, cfg.max_position) == (128, 128, 500000.0, 131072)
    assert cfg.scaling == Llama3(8.0, 1.0, 4.0, 8192)
    assert cfg.layout == "half"
    f = rope_frequencies(cfg.head_dim, **cfg.kwargs())
    assert f.inv_freq[0] == 1.0


def test_qwen_legacy_type_key():
    cfg = from_hf_config(QWEN25_YARN)
    assert cfg.scaling == YaRN(4.0, 32768)
    assert cfg.base == 1e6 and cfg.head_dim == 128


def test_phi3_longrope_and_legacy_su():
    cfg = from_hf_config(PHI3)
    assert isinstance(cfg.scaling, LongRoPE)
    assert cfg.scaling.original_max == 4096 and cfg.scaling.factor == 32.0
    f = rope_frequencies(cfg.head_dim, **cfg.kwargs())
    assert f.attention_factor == pytest.approx(math.sqrt(1 + math.log(32) / math.log(4096)), rel=1e-15)
    su = dict(PHI3, rope_scaling=dict(PHI3["rope_scaling"], type="su"))
    assert from_hf_config(su).scaling == cfg.scaling


def test_transformers5_rope_parameters_with_theta_inside():
    cfg = from_hf_config({
        "head_dim": 64, "hidden_size": 999, "num_attention_heads": 7, "max_position_embeddings": 4096,
        "rope_theta": 1.0e4,  # the dict's own rope_theta wins
        "rope_parameters": {"rope_type": "linear", "factor": 2.0, "rope_theta": 5e5},
    })
    assert cfg.head_dim == 64 and cfg.base == 5e5 and cfg.scaling == Linear(2.0)


def test_no_rope_dict_means_plain_rope():
    cfg = from_hf_config({"hidden_size": 512, "num_attention_heads": 8})
    assert cfg.scaling is None and cfg.base == 10000.0 and cfg.head_dim == 64
    cfg = from_hf_config({"head_dim": 64, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6}})
    assert cfg.scaling is None and cfg.base == 1e6


def test_dynamic_uses_max_position_embeddings():
    cfg = from_hf_config({"head_dim": 128, "max_position_embeddings": 4096,
                          "rope_scaling": {"type": "dynamic", "factor": 2.0}})
    assert cfg.scaling == DynamicNTK(2.0, 4096)


def test_yarn_optional_keys_and_top_level_original_max():
    cfg = from_hf_config({
        "head_dim": 64, "max_position_embeddings": 163840, "original_max_position_embeddings": 2048,
        "rope_scaling": {"type": "yarn", "factor": 40, "beta_fast": 32, "beta_slow": 1, "mscale": 0.707,
                         "mscale_all_dim": 0.707, "original_max_position_embeddings": 4096, "truncate": False},
    })
    # top-level original_max_position_embeddings wins, as HF's standardize_rope_params
    assert cfg.scaling == YaRN(40, 2048, mscale=0.707, mscale_all_dim=0.707, truncate=False)


def test_yarn_null_factor_is_max_over_original():
    cfg = from_hf_config({"head_dim": 64, "max_position_embeddings": 16384,
                          "rope_parameters": {"rope_type": "yarn", "factor": None,
                                              "original_max_position_embeddings": 4096}})
    assert cfg.scaling.factor == 4.0


def test_partial_rotary_factor():
    cfg = from_hf_config({"hidden_size": 2560, "num_attention_heads": 32, "partial_rotary_factor": 0.4})
    assert (cfg.head_dim, cfg.rotary_dim) == (80, 32)
    cfg = from_hf_config({"head_dim": 64, "rope_parameters": {"rope_type": "default", "partial_rotary_factor": 0.5}})
    assert cfg.rotary_dim == 32


def test_accepts_objects_with_to_dict():
    class Config:
        def to_dict(self):
            return dict(LLAMA31_8B)

    assert from_hf_config(Config()).scaling == Llama3(8.0, 1.0, 4.0, 8192)


@pytest.mark.parametrize(
    ("config", "needles"),
    [
        ({"head_dim": 64, "rope_scaling": {"type": "xpos", "factor": 2}}, ["unknown rope_type 'xpos'"]),
        ({"head_dim": 64, "rope_scaling": {"rope_type": "ntk", "factor": 2}}, ["'ntk'"]),
        ({"head_dim": 64, "rope_scaling": {"type": "linear", "factor": 2, "scale": 3}}, ["unknown key", "'scale'"]),
        ({"head_dim": 64, "rope_scaling": {"type": "linear"}}, ["missing ['factor']"]),
        (dict(LLAMA31_8B, rope_scaling={"rope_type": "llama3", "factor": 8.0}),
         ["missing", "high_freq_factor", "low_freq_factor"]),  # original_max falls back (standardize_rope_params)
        ({"head_dim": 96, "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 48}}, ["long_factor"]),
        ({"head_dim": 64, "rope_scaling": {"type": "linear", "factor": 0}}, ["Linear.factor must be > 0"]),
        ({"head_dim": 64, "rope_scaling": {"type": "linear", "factor": -2.0}}, ["factor"]),
        ({"head_dim": 64, "rope_scaling": {"type": "dynamic", "factor": 2.0}}, ["max_position_embeddings"]),
        ({"head_dim": 65}, ["head_dim", "65"]),
        ({"head_dim": 64, "partial_rotary_factor": 0.3}, ["int(64 * 0.3) = 19"]),
        ({"head_dim": 64, "partial_rotary_factor": 1.5}, ["partial_rotary_factor"]),
        ({"hidden_size": 512}, ["num_attention_heads"]),
        ({"head_dim": 64, "rope_theta": 1.0}, ["rope_theta"]),
        ({"head_dim": 64, "rope_scaling": [1, 2]}, ["must be a dict"]),
        ({"head_dim": 64, "rope_parameters": {"full_attention": {"rope_type": "default"}}},
         ["per-layer", "layer_types"]),
        (dict(PHI3, rope_scaling={"type": "longrope", "short_factor": [1.0] * 4, "long_factor": [1.0] * 4}),
         ["rotary_dim/2 = 48"]),
        ("not a config", ["config must be a dict"]),
    ],
)
def test_bad_configs_name_the_problem(config, needles):
    with pytest.raises(PosEncError) as info:
        from_hf_config(config)
    for needle in needles:
        assert needle in str(info.value)


@pytest.mark.parametrize(
    ("config", "needles"),
    [
        # rope_type ["linear"] used to raise TypeError (unhashable), a rope_theta array a plain ValueError
        ({"head_dim": 64, "rope_scaling": {"rope_type": ["linear"], "factor": 2}}, ["rope_type", "['linear']"]),
        ({"head_dim": 64, "rope_scaling": {"type": {"linear"}, "factor": 2}}, ["rope_type", "{'linear'}"]),
        ({"head_dim": 64, "rope_theta": np.array([1e4, 2e4])}, ["rope_theta", "array"]),
        ({"head_dim": 64, "rope_parameters": {"rope_theta": [1e4]}}, ["rope_theta", "[10000.0]"]),
        ({"head_dim": 64, "rope_theta": 10**400}, ["rope_theta", "401 digits"]),
        ({"head_dim": 10**400}, ["head_dim", "401 digits"]),
        ({"hidden_size": 2**70, "num_attention_heads": 2}, ["head_dim", "<= 65536"]),
        ({"head_dim": 64, "max_position_embeddings": 10**400,
          "rope_scaling": {"type": "yarn", "factor": None, "original_max_position_embeddings": 4096}},
         ["max_position_embeddings", "<= 9007199254740992"]),
        ({"head_dim": 64, "rope_scaling": {"type": "linear", "factor": 2, 1: 2, (3,): 4}}, ["unknown key", "(3,)"]),
        ({"head_dim": 64, "rope_scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": 64,
                                           "beta_fast": np.array([1.0, 2.0])}}, ["YaRN.beta_fast", "array"]),
        ({"head_dim": 64, "rope_scaling": {"type": "yarn", "factor": 4, "original_max_position_embeddings": 64,
                                           "mscale": -100, "mscale_all_dim": 1}}, ["YaRN.mscale must be >= 0"]),
        ({"head_dim": 64, "rope_scaling": {"type": "linear", "factor": 1e-320}}, ["Linear.factor", "1e-320"]),
        ({"head_dim": 2, "rope_scaling": {"type": "dynamic", "factor": 2.0}, "max_position_embeddings": 64},
         ["rotary_dim >= 4"]),
    ],
)
def test_hostile_configs_name_the_value(config, needles):
    with pytest.raises(PosEncError) as info:
        cfg = from_hf_config(config)
        rope_frequencies(cfg.head_dim, **cfg.kwargs(), seq_len=128)
    for needle in needles:
        assert needle in str(info.value)
