"""Every transformers 5.23 config class with a rotary module: posenc reads it as the module computes, or refuses it.

The reference is transformers itself: each model family's ``*RotaryEmbedding``
built from the family's default config, its ``inv_freq`` buffer (per
layer type where it keeps several), and the pairs its modeling file's
rotate function mixes. posenc reads the same config
(``config.to_dict()``); its frequencies must match to float32 rounding, or
``from_hf_config`` must refuse the config with a :class:`PosEncError`. No
third outcome: a family posenc reads differently from its modeling code
fails here.
"""

from __future__ import annotations

import importlib
import inspect
import warnings

import numpy as np
import pytest

import posenc
from posenc.hf.config import rope_layer_plan

transformers = pytest.importorskip("transformers")
torch = pytest.importorskip("torch")

# the axial vision tower keeps one ladder per axis (posenc: both, concatenated); tests/rope/test_rope_sections.py
# checks it against Qwen2VLVisionRotaryEmbedding row by row
_OTHER_REPRESENTATION = {"qwen2_vl_vision"}


def _families():
    from transformers import CONFIG_MAPPING
    from transformers.utils import logging

    logging.set_verbosity_error()
    out = []
    for model_type in sorted(CONFIG_MAPPING.keys()):
        cls = CONFIG_MAPPING[model_type]
        name = cls.__module__.replace("configuration_", "modeling_")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mod = importlib.import_module(name)
                config = cls()
        except Exception:
            continue
        rotary = [c for n, c in vars(mod).items() if inspect.isclass(c) and n.endswith("RotaryEmbedding")
                  and c.__module__ == name]
        for candidate in (config, getattr(config, "text_config", None)):
            built = None
            for r in rotary:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        built = r(candidate)
                    break
                except Exception:
                    continue
            if built is not None:
                out.append((model_type, candidate, built))
                break
    return out


def _modeling_layout(module, config) -> str | None:
    """The pairs the family's modeling file rotates, read from its functions (None: no rule applies)."""
    mod = importlib.import_module(type(module).__module__)
    if hasattr(mod, "apply_rotary_pos_emb_interleave"):  # DeepSeek-V3's form: interleaved unless switched off
        return "half" if getattr(config, "rope_interleave", True) is False else "interleaved"
    if hasattr(mod, "rotate_every_two") or "view_as_complex" in inspect.getsource(mod):
        return "interleaved"
    rotate = getattr(mod, "rotate_half_llm", None) or getattr(mod, "rotate_half", None)  # GLM-4V: the LM's own
    if rotate is not None:
        e0 = torch.zeros(1, 8)
        e0[0, 0] = 1.0
        partner = int(rotate(e0).abs().argmax())
        return {4: "half", 1: "interleaved"}.get(partner)
    return None


def test_every_family_is_read_as_its_rotary_module_or_refused():
    agree, refused, differ = [], [], []
    checked = 0
    for model_type, config, module in _families():
        if model_type in _OTHER_REPRESENTATION:
            continue
        try:
            kinds, _ = rope_layer_plan(config)
        except posenc.PosEncError:
            refused.append(model_type)
            continue
        for kind, rope in kinds.items():
            if rope is None:
                continue
            buffer = f"{kind}_inv_freq" if hasattr(module, f"{kind}_inv_freq") else "inv_freq"
            held = getattr(module, buffer, None)
            if held is None:  # a module that computes its frequencies in forward: checked in tests/hf
                continue
            ref = held.double().numpy()
            mine = posenc.rope_frequencies(rope.head_dim, **rope.kwargs()).inv_freq
            if rope.layout == "head_half":  # proportional RoPE: 0 past the turning pairs, rotate_half over the head
                if ref.shape != (rope.head_dim // 2,) or ref[len(mine):].any():
                    differ.append((model_type, kind, "head_half", ref.shape, ref[len(mine):].tolist()))
                ref = ref[:len(mine)]
            if ref.shape != mine.shape or not np.allclose(mine, ref, rtol=2e-6, atol=0):
                differ.append((model_type, kind, ref.shape, mine.shape))
            layout = _modeling_layout(module, config)
            checked += layout is not None
            if layout is not None and layout != {"head_half": "half"}.get(rope.layout, rope.layout):
                differ.append((model_type, kind, "layout", rope.layout, layout))
        agree.append(model_type)
    print(f"sweep: {len(agree)} read, {len(refused)} refused, {len(differ)} misread")
    assert not differ, differ
    assert checked >= 150  # families whose layout was read off their modeling file
    # the families of the lists are read, not refused
    for must in ("llama", "mistral", "qwen2", "qwen3", "gemma2", "gemma3_text", "phi3", "gpt_neox", "deepseek_v3",
                 "cohere", "cohere2", "glm4", "olmo2", "stablelm", "falcon", "smollm3", "granite", "llama4_text",
                 "modernbert", "phimoe", "deepseek_v2", "persimmon", "phi", "gemma4", "gemma4_text",
                 "qwen2_vl", "qwen3_vl"):
        assert must in agree, (must, must in refused)
    # 200 read, 73 refused with transformers 5.23 (dbrx, moonshine read since issue 31; glm_image(_text) and
    # qwen4_exp(_text) refused: they were read as 1-D RoPE
    # while their modules split by default mrope_sections that do not fit their default head)
    assert len(agree) >= 200
