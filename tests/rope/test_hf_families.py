"""config.json dicts of real families, read as their modeling code reads them (transformers 5.23)."""

from __future__ import annotations

import pytest

from posenc import Linear, Llama3, LongRoPE, PosEncError, from_hf_config, rope_frequencies
from posenc.rope import register_scaling


def test_pythia_rotary_pct_and_rotary_emb_base():
    pythia = {"model_type": "gpt_neox", "hidden_size": 512, "num_attention_heads": 8, "rotary_pct": 0.25,
              "rotary_emb_base": 10000, "max_position_embeddings": 2048}
    cfg = from_hf_config(pythia)
    assert (cfg.head_dim, cfg.rotary_dim, cfg.base, cfg.layout) == (64, 16, 10000.0, "half")
    assert from_hf_config({k: v for k, v in pythia.items() if k != "rotary_pct"}).rotary_dim == 16  # default 0.25
    assert from_hf_config(dict(pythia, rotary_emb_base=1e6)).base == 1e6


def test_gptj_rotary_dim_interleaved_and_n_head():
    cfg = from_hf_config({"model_type": "gptj", "n_embd": 4096, "n_head": 16, "rotary_dim": 64})
    assert (cfg.head_dim, cfg.rotary_dim, cfg.base, cfg.layout) == (256, 64, 10000.0, "interleaved")


def test_deepseek_v3_mla_rope_channels_interleaved():
    ds = {"model_type": "deepseek_v3", "hidden_size": 7168, "num_attention_heads": 128, "qk_rope_head_dim": 64,
          "qk_nope_head_dim": 128, "max_position_embeddings": 163840, "rope_theta": 10000,
          "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32,
                           "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}}
    cfg = from_hf_config(ds)
    assert (cfg.head_dim, cfg.rotary_dim, cfg.layout) == (64, 64, "interleaved")
    assert from_hf_config(dict(ds, rope_interleave=False)).layout == "half"


def test_gemma3_local_base_per_layer():
    g3 = {"model_type": "gemma3_text", "head_dim": 256, "num_hidden_layers": 12, "rope_theta": 1e6,
          "rope_local_base_freq": 1e4, "rope_scaling": {"rope_type": "linear", "factor": 8.0}}
    assert [from_hf_config(g3, layer=i).base for i in range(6)] == [1e4] * 5 + [1e6]
    assert from_hf_config(g3, layer=5).scaling == Linear(8.0) and from_hf_config(g3, layer=0).scaling is None
    with pytest.raises(PosEncError, match="layer="):
        from_hf_config(g3)


def test_transformers5_per_layer_type_dicts_and_modernbert():
    g3 = {"model_type": "gemma3_text", "head_dim": 32, "layer_types": ["sliding_attention", "full_attention"],
          "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 1e4},
                              "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1e6}}}
    assert from_hf_config(g3, layer=1).base == 1e6 and from_hf_config(g3, layer=0).base == 1e4
    mb = {"model_type": "modernbert", "hidden_size": 768, "num_attention_heads": 12, "num_hidden_layers": 4,
          "global_rope_theta": 160000.0, "local_rope_theta": 10000.0}
    assert [from_hf_config(mb, layer=i).base for i in range(4)] == [160000.0, 1e4, 1e4, 160000.0]


def test_llama4_nope_layers_equal_freq_factors_and_complex_layout():
    l4 = {"model_type": "llama4_text", "hidden_size": 5120, "num_attention_heads": 40, "head_dim": 128,
          "num_hidden_layers": 4, "rope_theta": 500000.0, "no_rope_layers": [1, 1, 1, 0],
          "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0,
                           "original_max_position_embeddings": 8192}}
    cfg = from_hf_config(l4, layer=0)
    assert cfg.layout == "interleaved" and cfg.scaling == Llama3(16.0, 1.0, 1.0, 8192)
    assert from_hf_config(l4, layer=3) is None
    with pytest.raises(PosEncError, match="layer="):
        from_hf_config(l4)
    # low == high: below L the ω stay, above they are divided, as _compute_llama3_parameters computes
    f = rope_frequencies(128, **cfg.kwargs())
    plain = rope_frequencies(128, base=500000.0)
    long = 2 * 3.141592653589793 / plain.inv_freq > 8192
    assert (f.inv_freq[~long] == plain.inv_freq[~long]).all()
    assert f.inv_freq[long] == pytest.approx(plain.inv_freq[long] / 16, rel=1e-15)


def test_llama4_scout_empty_no_rope_layers_means_every_fourth():
    scout = {"model_type": "llama4_text", "head_dim": 128, "num_hidden_layers": 8, "rope_theta": 500000.0,
             "no_rope_layers": []}  # Llama-4-Scout's config.json: Llama4TextConfig fills the interval-4 default
    assert [from_hf_config(scout, layer=i) is None for i in range(8)] == [False, False, False, True] * 2
    sm = {"model_type": "smollm3", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 4}
    assert [from_hf_config(sm, layer=i) is None for i in range(4)] == [False, False, False, True]


def test_smollm3_interval_and_cohere2_global_layers_are_nope():
    sm = {"model_type": "smollm3", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 8,
          "no_rope_layer_interval": 4}
    assert [from_hf_config(sm, layer=i) is None for i in range(8)] == [False, False, False, True] * 2
    c2 = {"model_type": "cohere2", "hidden_size": 256, "num_attention_heads": 4, "num_hidden_layers": 4,
          "sliding_window_pattern": 4}
    assert [from_hf_config(c2, layer=i) is None for i in range(4)] == [False, False, False, True]
    assert from_hf_config(c2, layer=0).layout == "interleaved"


def test_per_model_defaults_stablelm_glm4v():
    assert from_hf_config({"model_type": "stablelm", "hidden_size": 2560, "num_attention_heads": 32}).rotary_dim == 20
    # GLM-4.1V-9B's config.json sets partial_rotary_factor 0.5 and leaves mrope_section to the modeling default
    glm = from_hf_config({"model_type": "glm4v_text", "hidden_size": 4096, "num_attention_heads": 32,
                          "partial_rotary_factor": 0.5})
    assert glm.sections == (8, 12, 12) and glm.rotary_dim == 64 and glm.layout == "interleaved"


def test_phimoe_mscales():
    phimoe = {"model_type": "phimoe", "hidden_size": 4096, "num_attention_heads": 32,
              "max_position_embeddings": 131072,
              "rope_scaling": {"type": "longrope", "short_factor": [1.0] * 64, "long_factor": [2.0] * 64,
                               "short_mscale": 1.243, "long_mscale": 1.243,
                               "original_max_position_embeddings": 4096}}
    cfg = from_hf_config(phimoe)
    assert isinstance(cfg.scaling, LongRoPE) and cfg.scaling.long_mscale == 1.243
    assert rope_frequencies(128, **cfg.kwargs(), seq_len=10**5).attention_factor == 1.243


@pytest.mark.parametrize(("config", "needle"), [
    ({"model_type": "bert", "hidden_size": 768, "num_attention_heads": 12}, "'bert'"),
    ({"model_type": "gpt2", "n_embd": 768, "n_head": 12}, "'gpt2'"),
    ({"model_type": "falcon", "hidden_size": 4544, "num_attention_heads": 71, "alibi": True}, "alibi"),
    ({"model_type": "granite_swa", "head_dim": 64, "layer_rope_theta": [1e4]}, "layer_rope_theta"),
    ({"head_dim": 64, "use_mem_rope": True}, "use_mem_rope"),
    ({"model_type": "llama", "head_dim": 64, "no_rope_layers": [1, 2]}, "no_rope_layers"),
])
def test_refused_by_name(config, needle):
    with pytest.raises(PosEncError, match=needle):
        from_hf_config(config)


def test_register_scaling_reads_a_new_rope_type_through_the_public_api():
    from dataclasses import dataclass
    from decimal import Decimal

    from posenc.rope.scaling import Scaled

    @dataclass(frozen=True)
    class Halve:  # every ω halved, and cos/sin scaled by 1.5
        attention: float

        def cache_key(self, seq_len):
            return None

        def scale(self, dim, base, seq_len):
            ln = base.ln()
            return Scaled([(-(ln * (2 * i)) / dim).exp() / 2 for i in range(dim // 2)], base, self.attention)

    register_scaling("halve_test", lambda rope, cfg: Halve(float(rope.get("attention", 1.0))), replace=True)
    cfg = from_hf_config({"head_dim": 8, "rope_parameters": {"rope_type": "halve_test", "attention": 1.5}})
    f = rope_frequencies(8, **cfg.kwargs())
    assert f.inv_freq.tolist() == [0.5, 0.05, 0.005, 0.0005] and f.attention_factor == 1.5
    assert cfg.scaling == Halve(1.5) and isinstance(Decimal(1), Decimal)
    with pytest.raises(PosEncError, match="already registered"):
        register_scaling("halve_test", lambda rope, cfg: None)
    register_scaling("not_a_scaling_test", lambda rope, cfg: "yarn", replace=True)
    with pytest.raises(PosEncError, match="not a scaling"):
        from_hf_config({"head_dim": 8, "rope_parameters": {"rope_type": "not_a_scaling_test"}})


def test_yarn_ramp_bounds_follow_transformers_float64_rule():
    import math
    from decimal import Decimal

    from posenc import YaRN

    base = 91830668759514.55  # d(32) is 6 + 2.6e-17 exactly, 5.999999999999999 in float64
    low, high = YaRN(4.0, 4096).ramp_range(128, Decimal(base))

    def d(rotations):  # transformers' find_correction_dim, in Python floats
        return (128 * math.log(4096 / (rotations * 2 * math.pi))) / (2 * math.log(base))

    assert (low, high) == (math.floor(d(32)), min(math.ceil(d(1)), 127)) and low == 5
