"""posenc.hf.patch's check of each rotary module against posenc's rows: the families whose check raised raw errors
or read the wrong RoPE (issue 31), now patched as their module computes or refused with a PosEncError by name.

References: transformers 5.23's own classes (the stock model), and the
patched model run in float64 (posenc's float64 rows).
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from families import TINY, tiny  # noqa: E402
from matrix import behaviour, have  # noqa: E402

import posenc  # noqa: E402
import posenc.hf  # noqa: E402
from posenc.hf.rotary import PatchedRotary  # noqa: E402

IDS = torch.tensor([[5, 17, 42, 8, 91, 3, 60, 27]])
_MOE = {"moe_intermediate_size": 32, "num_experts": 2, "num_experts_per_tok": 1}
_WIDE = {**TINY, "hidden_size": 256, "num_attention_heads": 2, "num_key_value_heads": 1,
         "max_position_embeddings": 32768}

#: with their defaults every layer is full_attention, while the rope dict also defines sliding_attention
#: (KeyError: 'sliding_attention'), or the module's layer_type has no default (Step3p7: TypeError)
LAYER_TYPED = {
    "mellum": ("MellumConfig", "MellumForCausalLM", {**TINY, "num_hidden_layers": 2, **_MOE}),
    "laguna": ("LagunaConfig", "LagunaForCausalLM", {**TINY, "num_hidden_layers": 2}),
    "step3p7": ("Step3p7TextConfig", "Step3p7TextModel", {
        **TINY, "num_hidden_layers": 2, "head_dim": 16, "moe_intermediate_size": 32, "n_routed_experts": 2,
        "num_experts_per_tok": 1, "share_expert_dim": 32, "sliding_window": 512}),
}

#: M-RoPE families whose config leaves mrope_section out: the module's default sections (read as 1-D RoPE
#: before, so the patched model failed on [3, b, s] position_ids)
MROPE_DEFAULTS = {
    "glm_ocr_text": ("GlmOcrTextConfig", "GlmOcrTextModel", {**_WIDE, "head_dim": 128,
                                                             "partial_rotary_factor": 0.5}),
    "glm_image_text": ("GlmImageTextConfig", "GlmImageTextModel", {**_WIDE, "head_dim": 128,
                                                                   "partial_rotary_factor": 0.5}),
    "paddleocr_vl_text": ("PaddleOCRTextConfig", "PaddleOCRTextModel", {**_WIDE, "head_dim": 128}),
    "qwen2_5_omni_text": ("Qwen2_5OmniTextConfig", "Qwen2_5OmniThinkerTextModel", {**_WIDE, "head_dim": 128}),
    "qwen3_5_text": ("Qwen3_5TextConfig", "Qwen3_5TextModel", {**_WIDE, "head_dim": 256,
                                                               "layer_types": ["full_attention"]}),
}


def _out(model, ids, positions):
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = model(ids, position_ids=positions)
    return (out.logits if hasattr(out, "logits") else out.last_hidden_state).double()


def _axes(offset: int, s: int) -> torch.Tensor:
    p = torch.arange(s)
    return torch.stack([p, p // 4, p % 4]).reshape(3, 1, s) + offset


def _close_then_closer(entry, positions_at):
    """Patched = stock at small positions; at 10^5 and ~10^6 no farther than stock from the float64 patched run."""
    stock, patched = tiny(*entry), posenc.hf.patch(tiny(*entry))
    assert any(isinstance(m, PatchedRotary) for m in patched.modules())
    small = positions_at(0)
    assert (_out(stock, IDS, small) - _out(patched, IDS, small)).abs().max().item() <= 2e-5
    exact_model = posenc.hf.patch(tiny(*entry, torch.float64))
    for offset in (100_000, 999_984):
        far = positions_at(offset)
        exact = _out(exact_model, IDS, far)
        mine = (_out(patched, IDS, far) - exact).abs().max().item()
        theirs = (_out(stock, IDS, far) - exact).abs().max().item()
        assert mine <= theirs, (offset, mine, theirs)


@pytest.mark.parametrize("name", sorted(LAYER_TYPED))
def test_layer_typed_modules_with_one_layer_type_are_patched(name):
    """Same logits as stock at small positions; far out, the rows are posenc's (their MoE has no float64 kernels)."""
    have(*LAYER_TYPED[name][:2])
    stock, patched = tiny(*LAYER_TYPED[name]), posenc.hf.patch(tiny(*LAYER_TYPED[name]))
    small = torch.arange(8).reshape(1, 8)
    assert (_out(stock, IDS, small) - _out(patched, IDS, small)).abs().max().item() <= 2e-5
    rotary = next(m for m in patched.modules() if isinstance(m, PatchedRotary))
    assert list(rotary.ropes) == ["full_attention"]  # the one type the layers use, passed as the module wants
    rope = rotary.ropes["full_attention"]
    far = torch.tensor([[0, 99_999, 999_983, 10**6]])
    cos, sin = rotary(torch.zeros(1, 4, 16), far, "full_attention")
    want_cos, want_sin = posenc.rope_cos_sin(far[0].numpy(), rope.head_dim, dtype="float32", **rope.kwargs())
    half = rope.rotary_dim // 2
    assert np.array_equal(cos[0, :, :half].numpy(), want_cos) and np.array_equal(sin[0, :, :half].numpy(), want_sin)


@pytest.mark.parametrize("name", sorted(MROPE_DEFAULTS))
def test_mrope_families_default_sections_are_read_and_patched(name):
    have(*MROPE_DEFAULTS[name][:2])
    _close_then_closer(MROPE_DEFAULTS[name], lambda offset: _axes(offset, 8))


@pytest.mark.parametrize(("config_cls", "model_cls", "sections"), [
    ("GlmImageTextConfig", "GlmImageTextModel", "[8, 12, 12]"),
    ("GlmOcrTextConfig", "GlmOcrTextModel", "[8, 12, 12]"),
    ("PaddleOCRTextConfig", "PaddleOCRTextModel", "[16, 24, 24]"),
])
def test_a_default_mrope_section_that_does_not_fit_is_a_posenc_error(config_cls, model_cls, sections):
    """A 16-wide head has 8 pairs; the default sections hold 32 or 64: the stock module fails (split_with_sizes)."""
    have(config_cls, model_cls)
    model = tiny(config_cls, model_cls, {**TINY, "head_dim": 16, "partial_rotary_factor": 1.0})
    with pytest.raises(posenc.PosEncError, match=re.escape(f"mrope_section {sections} does not fit")):
        posenc.hf.patch(model)
    assert not any(isinstance(m, PatchedRotary) for m in model.modules())


def test_a_module_that_fails_on_its_own_config_is_a_posenc_error_naming_it():
    """HunYuan-VL's text rotary reads mrope_section, which its default config leaves None (TypeError inside)."""
    have("HunYuanVLTextConfig", "HunYuanVLTextModel")
    model = tiny("HunYuanVLTextConfig", "HunYuanVLTextModel", {**TINY, "head_dim": 16})
    with pytest.raises(posenc.PosEncError, match=r"HunYuanVLRotaryEmbedding \(all layers\) fails on its own config"):
        posenc.hf.patch(model)


def test_a_module_whose_sections_differ_from_the_configs_is_refused():
    have("Qwen2VLTextConfig", "Qwen2VLTextModel")
    rope = {"rope_type": "default", "rope_theta": 1e6, "mrope_section": [2, 3, 3]}
    keys = {"rope_parameters": rope} if int(transformers.__version__.split(".")[0]) >= 5 else {
        "rope_theta": 1e6, "rope_scaling": {k: v for k, v in rope.items() if k != "rope_theta"}}
    model = tiny("Qwen2VLTextConfig", "Qwen2VLTextModel", {**TINY, "head_dim": 16, **keys})
    model.rotary_emb.mrope_section = [3, 3, 2]  # what the module computes with, no longer the config's
    if behaviour("qwen2-vl-module-sections", "refused") == "patched":  # 4.x: the attention splits the sections
        stock = _out(tiny("Qwen2VLTextConfig", "Qwen2VLTextModel", {**TINY, "head_dim": 16, **keys}), IDS,
                     _axes(0, 8))
        posenc.hf.patch(model)
        assert isinstance(model.rotary_emb, PatchedRotary)
        assert (stock - _out(model, IDS, _axes(0, 8))).abs().max().item() <= 2e-5
        return
    with pytest.raises(posenc.PosEncError, match=r"splits its rows by mrope_section \[3, 3, 2\], but posenc read"):
        posenc.hf.patch(model)


def test_multi_axis_position_ids_to_a_one_axis_rotary_are_refused():
    rotary = posenc.hf.patch(tiny("LlamaConfig", "LlamaForCausalLM", dict(TINY))).model.rotary_emb
    with pytest.raises(posenc.PosEncError, match=r"position_ids of shape \[3, 1, 1\]"):
        rotary(torch.zeros(1, 1, 16), torch.zeros(3, 1, 1, dtype=torch.long))
