"""Tiny random transformers models with the RoPE settings of real checkpoints (no weights: built from config).

Each entry: the config class and model class names, and the config keys. The
rope keys are the checkpoints' (config.json on the Hub); sizes are tiny
(hidden 64, 4 heads of 16, 1-2 layers; 128 where a quarter of the head is
rotated, so that RoPE has 4 pairs) so that two shared cores cope. The keys
are read by every tested transformers release (``make test``'s matrix,
tests/hf/matrix.py), except where :data:`KEYS_4X` gives a 4.x release the
checkpoint's 4.x keys (Gemma 3's config.json is written in those).
"""

from __future__ import annotations

import warnings
from typing import Any

TINY = {"vocab_size": 96, "pad_token_id": 0, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1,
        "num_attention_heads": 4, "num_key_value_heads": 2}

_LLAMA3 = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
           "original_max_position_embeddings": 8192}
_SHORT = [1.0, 1.02, 1.05, 1.1, 1.3, 1.7, 2.2, 3.0]  # Phi-3.5's lists shortened to r/2 entries, same shape
_LONG = [1.0, 1.1, 1.4, 2.5, 6.0, 15.0, 30.0, 50.0]

#: name -> (config class, model class, config keys)
FAMILIES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "llama2": ("LlamaConfig", "LlamaForCausalLM", {**TINY, "rope_theta": 10000.0, "max_position_embeddings": 4096}),
    "llama3.1": ("LlamaConfig", "LlamaForCausalLM", {**TINY, "rope_theta": 500000.0,
                                                     "max_position_embeddings": 131072, "rope_scaling": _LLAMA3}),
    "llama4": ("Llama4TextConfig", "Llama4ForCausalLM", {
        **TINY, "num_hidden_layers": 2, "head_dim": 16, "intermediate_size_mlp": 96, "num_local_experts": 2,
        "num_experts_per_tok": 1, "rope_theta": 500000.0, "max_position_embeddings": 131072,
        "no_rope_layers": [1, 0], "interleave_moe_layer_step": 1, "attention_chunk_size": 8192,
        "rope_scaling": {"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0, "high_freq_factor": 1.0,
                         "original_max_position_embeddings": 8192}}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {**TINY, "rope_theta": 1000000.0, "sliding_window": None,
                                                        "max_position_embeddings": 32768}),
    "qwen2-yarn": ("Qwen2Config", "Qwen2ForCausalLM", {
        **TINY, "rope_theta": 1000000.0, "max_position_embeddings": 131072,
        "rope_scaling": {"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32768}}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {**TINY, "head_dim": 16, "rope_theta": 1000000.0,
                                                  "max_position_embeddings": 40960}),
    "gemma2": ("Gemma2Config", "Gemma2ForCausalLM", {**TINY, "head_dim": 16, "rope_theta": 10000.0,
                                                     "max_position_embeddings": 8192}),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", {
        **TINY, "num_hidden_layers": 2, "head_dim": 16, "layer_types": ["sliding_attention", "full_attention"],
        "max_position_embeddings": 131072, "sliding_window": 512,
        "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                            "full_attention": {"rope_type": "linear", "factor": 8.0, "rope_theta": 1000000.0}}}),
    "phi3.5-longrope": ("Phi3Config", "Phi3ForCausalLM", {
        **TINY, "rope_theta": 10000.0, "max_position_embeddings": 131072, "original_max_position_embeddings": 4096,
        "rope_scaling": {"type": "longrope", "short_factor": _SHORT, "long_factor": _LONG}}),
    "phi4-mini": ("Phi3Config", "Phi3ForCausalLM", {
        **TINY, "rope_theta": 10000.0, "partial_rotary_factor": 0.75, "max_position_embeddings": 131072,
        "original_max_position_embeddings": 4096,
        "rope_scaling": {"type": "longrope", "short_factor": _SHORT[:6], "long_factor": _LONG[:6]}}),
    "pythia": ("GPTNeoXConfig", "GPTNeoXForCausalLM", {
        **TINY, "hidden_size": 128, "rotary_pct": 0.25, "rotary_emb_base": 10000, "max_position_embeddings": 2048,
        "use_parallel_residual": True}),
    "gptj": ("GPTJConfig", "GPTJForCausalLM", {
        "vocab_size": 96, "n_embd": 64, "n_head": 4, "n_layer": 1, "rotary_dim": 8, "n_positions": 2**20 + 64}),
    # CodeGen (Salesforce/codegen-350M-mono: rotary_dim 32 of 64 per head; here 8 of 16), a table to 10^6 + 64
    "codegen": ("CodeGenConfig", "CodeGenForCausalLM", {
        "vocab_size": 96, "n_embd": 64, "n_head": 4, "n_layer": 1, "rotary_dim": 8, "n_positions": 2**20 + 64}),
    "deepseek-v3": ("DeepseekV3Config", "DeepseekV3ForCausalLM", {
        **TINY, "num_key_value_heads": 4, "q_lora_rank": None, "kv_lora_rank": 16, "qk_rope_head_dim": 8,
        "qk_nope_head_dim": 8, "v_head_dim": 16, "first_k_dense_replace": 1, "n_routed_experts": 2,
        "num_experts_per_tok": 1,
        "n_group": 1, "topk_group": 1, "rope_theta": 10000.0, "max_position_embeddings": 163840,
        "rope_scaling": {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32,
                         "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}}),
    "cohere": ("CohereConfig", "CohereForCausalLM", {**TINY, "rope_theta": 8000000.0,
                                                     "max_position_embeddings": 131072}),
    "glm4": ("Glm4Config", "Glm4ForCausalLM", {**TINY, "partial_rotary_factor": 0.5, "rope_theta": 10000.0,
                                               "max_position_embeddings": 131072}),
    "olmo2": ("Olmo2Config", "Olmo2ForCausalLM", {**TINY, "rope_theta": 500000.0, "max_position_embeddings": 4096}),
    "stablelm": ("StableLmConfig", "StableLmForCausalLM", {**TINY, "hidden_size": 128, "rope_theta": 10000.0,
                                                           "max_position_embeddings": 4096}),
    "falcon": ("FalconConfig", "FalconForCausalLM", {
        "vocab_size": 96, "hidden_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1,
        "new_decoder_architecture": False, "multi_query": True, "alibi": False, "rope_theta": 10000.0}),
    "smollm3": ("SmolLM3Config", "SmolLM3ForCausalLM", {
        **TINY, "num_hidden_layers": 2, "no_rope_layer_interval": 2, "rope_theta": 5000000.0,
        "max_position_embeddings": 65536}),
    "granite": ("GraniteConfig", "GraniteForCausalLM", {**TINY, "rope_theta": 10000000.0,
                                                        "max_position_embeddings": 131072}),
    "llama-dynamic": ("LlamaConfig", "LlamaForCausalLM", {
        **TINY, "rope_theta": 10000.0, "max_position_embeddings": 64,
        "rope_scaling": {"rope_type": "dynamic", "factor": 2.0}}),
    "cohere2": ("Cohere2Config", "Cohere2ForCausalLM", {
        **TINY, "num_hidden_layers": 2, "layer_types": ["sliding_attention", "full_attention"],
        "sliding_window": 512, "rope_theta": 50000.0, "max_position_embeddings": 131072}),
    # Gemma 4: sliding layers default RoPE over head_dim; full layers proportional RoPE over global_head_dim
    # (a quarter of its pairs turn, the rest pass through), as google/gemma-4's config.json
    "gemma4": ("Gemma4TextConfig", "Gemma4ForCausalLM", {
        **TINY, "num_hidden_layers": 2, "head_dim": 16, "global_head_dim": 32, "hidden_size_per_layer_input": 8,
        "vocab_size_per_layer_input": 96, "layer_types": ["sliding_attention", "full_attention"],
        "sliding_window": 512, "max_position_embeddings": 131072,
        "rope_parameters": {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
                            "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25,
                                               "rope_theta": 1000000.0}}}),
}


#: name -> the config keys a transformers 4.x release reads in place of FAMILIES' (rope_parameters is 5.x's)
KEYS_4X: dict[str, dict[str, Any]] = {
    # google/gemma-3-*'s config.json: rope_theta (global), rope_local_base_freq, rope_scaling of the global layers
    "gemma3": {**{k: v for k, v in FAMILIES["gemma3"][2].items() if k != "rope_parameters"},
               "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0,
               "rope_scaling": {"rope_type": "linear", "factor": 8.0}},
}


def keys(name: str) -> dict[str, Any]:
    """The config keys of family ``name`` as the installed transformers reads them."""
    if _major() < 5 and name in KEYS_4X:
        return KEYS_4X[name]
    return FAMILIES[name][2]


_MROPE_TINY = {"vocab_size": 96, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1,
               "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 32768, "head_dim": 16}
VISION = {"depth": 1, "embed_dim": 16, "hidden_size": 64, "num_heads": 2, "out_hidden_size": 64,
          "intermediate_size": 32}

#: multi-axis RoPE: name -> (text config class, text model class, rope dict); the checkpoints' section shapes,
#: shrunk
MROPE: dict[str, tuple[str, str, dict[str, Any]]] = {
    "qwen2-vl": ("Qwen2VLTextConfig", "Qwen2VLTextModel", {"mrope_section": [2, 3, 3]}),
    "qwen2.5-vl": ("Qwen2_5_VLTextConfig", "Qwen2_5_VLTextModel", {"mrope_section": [2, 3, 3]}),
    "qwen3-vl": ("Qwen3VLTextConfig", "Qwen3VLTextModel", {"mrope_section": [4, 2, 2], "mrope_interleaved": True}),
    "glm-4.1v": ("Glm4vTextConfig", "Glm4vTextModel", {"partial_rotary_factor": 0.5}),  # the default [8, 12, 12]
}

#: the whole vision-language models (tiny vision tower) of two MROPE families: name -> (class prefix, MROPE entry)
VL_MODELS = {"qwen2-vl-full": ("Qwen2VL", "qwen2-vl"), "qwen3-vl-full": ("Qwen3VL", "qwen3-vl")}

#: ALiBi families: name -> (config class, model class, config keys)
ALIBI: dict[str, tuple[str, str, dict[str, Any]]] = {
    "bloom": ("BloomConfig", "BloomForCausalLM", {"vocab_size": 96, "hidden_size": 64, "n_head": 4, "n_layer": 1}),
    "mpt": ("MptConfig", "MptForCausalLM", {"vocab_size": 96, "d_model": 64, "n_heads": 4, "n_layers": 1,
                                            "max_seq_len": 64}),
    "falcon-alibi": ("FalconConfig", "FalconForCausalLM", {"vocab_size": 96, "hidden_size": 64,
                                                           "num_attention_heads": 4, "num_hidden_layers": 1,
                                                           "alibi": True}),
}

#: RoFormer (junnyu/roformer_chinese_base: sinusoidal RoPE over each 64-wide head; here 16), a causal decoder
ROFORMER = ("RoFormerConfig", "RoFormerForCausalLM", {
    "vocab_size": 96, "hidden_size": 64, "embedding_size": 64, "num_attention_heads": 4, "num_hidden_layers": 1,
    "intermediate_size": 96, "max_position_embeddings": 512, "is_decoder": True, "pad_token_id": 0,
    "bos_token_id": 1, "eos_token_id": 2})


def _major() -> int:
    import transformers

    return int(transformers.__version__.split(".")[0])


def mrope_text_keys(name: str) -> dict[str, Any]:
    """The text config keys of MROPE family ``name``: 5.x's rope_parameters, or 4.x's rope_theta + rope_scaling."""
    rope = MROPE[name][2]
    keys = dict(_MROPE_TINY)
    if name == "glm-4.1v":  # a 128-wide head, so that the default sections [8, 12, 12] fit its 32 rotary pairs
        keys.update(hidden_size=256, head_dim=128)
    if _major() < 5:
        prf = {k: v for k, v in rope.items() if k == "partial_rotary_factor"}
        if name == "glm-4.1v":  # 5.x's default sections, which 4.x has none of: its attention reads rope_scaling's
            rope = {**rope, "mrope_section": [8, 12, 12]}
        return {**keys, **prf, "rope_theta": 1e6, "rope_scaling": {
            "rope_type": "default", **{k: v for k, v in rope.items() if k != "partial_rotary_factor"}}}
    return {**keys, "rope_parameters": {"rope_type": "default", "rope_theta": 1e6, **rope}}


def build_mrope(name: str, dtype: Any = None) -> Any:
    """The tiny text model of MROPE family ``name`` (no LM head)."""
    config_cls, model_cls, _ = MROPE[name]
    return tiny(config_cls, model_cls, mrope_text_keys(name), dtype)


def build_vl(name: str) -> Any:
    """The whole tiny vision-language model ``name`` of VL_MODELS, seeded, eager, in eval mode."""
    import torch
    import transformers

    prefix, text = VL_MODELS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = getattr(transformers, f"{prefix}Config")(text_config=mrope_text_keys(text), vision_config=VISION,
                                                          image_token_id=90, video_token_id=91,
                                                          vision_start_token_id=92)
        config._attn_implementation = "eager"
        torch.manual_seed(0)
        return getattr(transformers, f"{prefix}ForConditionalGeneration")(config).eval()


def build_alibi(name: str, **extra: Any) -> Any:
    """The tiny ALiBi model ``name`` (extra config keys on top)."""
    config_cls, model_cls, keys = ALIBI[name]
    return tiny(config_cls, model_cls, {**keys, **extra})


def build_any(name: str) -> Any:
    """Any family's tiny model by name: FAMILIES, MROPE, VL_MODELS, ALIBI or ``"roformer"``."""
    if name in FAMILIES:
        return build(name)
    if name in MROPE:
        return build_mrope(name)
    if name in VL_MODELS:
        return build_vl(name)
    if name in ALIBI:
        return build_alibi(name)
    if name == "roformer":
        return tiny(*ROFORMER)
    raise KeyError(name)


#: every family's tiny model, by name
ALL = (*FAMILIES, *MROPE, *VL_MODELS, *ALIBI, "roformer")


def build(name: str, dtype: Any = None) -> Any:
    """The tiny model ``name``, seeded, in eval mode (random weights; the same for every call)."""
    config_cls, model_cls, _ = FAMILIES[name]
    return tiny(config_cls, model_cls, keys(name), dtype)


def tiny(config_cls: str, model_cls: str, keys: dict[str, Any], dtype: Any = None) -> Any:
    """``model_cls(config_cls(**keys))`` from transformers, seeded, eager attention, in eval mode."""
    import torch
    import transformers

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = getattr(transformers, config_cls)(**keys)
        config._attn_implementation = "eager"
        torch.manual_seed(0)
        model = getattr(transformers, model_cls)(config).eval()
    return model if dtype is None else model.to(dtype)
