"""posenc.hf.patch on multi-axis RoPE (M-RoPE): tiny Qwen2-VL, Qwen2.5-VL, Qwen3-VL and GLM-4.1V text models.

position_ids are ``[3, b, s]`` (t, h, w); each pair turns with its section's
axis (contiguous sections for Qwen2-VL / GLM-4.1V, interleaved for Qwen3-VL).
References: transformers 5.23's own classes (stock model), and the patched
model in float64.
"""

from __future__ import annotations

import math
import warnings

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from families import tiny  # noqa: E402

import posenc.hf  # noqa: E402
from posenc.torch.hf_rotary import PatchedRotary  # noqa: E402

_TINY = {"vocab_size": 96, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1,
         "num_attention_heads": 4, "num_key_value_heads": 2, "max_position_embeddings": 32768, "head_dim": 16}
_VISION = {"depth": 1, "embed_dim": 16, "hidden_size": 64, "num_heads": 2, "out_hidden_size": 64,
           "intermediate_size": 32}

#: name -> (text config class, text model class, rope dict); the sections are the checkpoints' shapes, shrunk
TEXT = {
    "qwen2-vl": ("Qwen2VLTextConfig", "Qwen2VLTextModel", {"mrope_section": [2, 3, 3]}),
    "qwen2.5-vl": ("Qwen2_5_VLTextConfig", "Qwen2_5_VLTextModel", {"mrope_section": [2, 3, 3]}),
    "qwen3-vl": ("Qwen3VLTextConfig", "Qwen3VLTextModel", {"mrope_section": [4, 2, 2], "mrope_interleaved": True}),
    "glm-4.1v": ("Glm4vTextConfig", "Glm4vTextModel", {"partial_rotary_factor": 0.5}),  # the default [8, 12, 12]
}


def _build(name: str, dtype=None):
    config_cls, model_cls, rope = TEXT[name]
    keys = dict(_TINY, rope_parameters={"rope_type": "default", "rope_theta": 1e6, **rope})
    if name == "glm-4.1v":  # a 128-wide head, so that the default sections [8, 12, 12] fit its 32 rotary pairs
        keys.update(hidden_size=256, head_dim=128)
    return tiny(config_cls, model_cls, keys, dtype)


def _axes(offset: int, s: int) -> torch.Tensor:
    """[3, 1, s]: time runs on; height and width repeat (a 2 × 4 grid), all from offset."""
    p = torch.arange(s)
    return torch.stack([p, p // 4, p % 4]).reshape(3, 1, s) + offset


def _hidden(model, ids, positions):
    with torch.no_grad():
        return model(ids, position_ids=positions).last_hidden_state.double()


@pytest.mark.parametrize("name", sorted(TEXT))
def test_mrope_patched_matches_stock_and_is_closer_to_exact_far_out(name):
    ids = torch.tensor([[5, 17, 42, 8, 91, 3, 60, 27]])
    stock, patched = _build(name), posenc.hf.patch(_build(name))
    assert any(isinstance(m, PatchedRotary) for m in patched.modules())
    assert (_hidden(stock, ids, _axes(0, 8)) - _hidden(patched, ids, _axes(0, 8))).abs().max().item() <= 2e-5
    exact = posenc.hf.patch(_build(name, torch.float64))
    for offset in (100_000, 999_984):
        positions = _axes(offset, 8)
        want = _hidden(exact, ids, positions)
        mine = (_hidden(patched, ids, positions) - want).abs().max().item()
        theirs = (_hidden(stock, ids, positions) - want).abs().max().item()
        assert math.isfinite(mine) and mine <= theirs, (offset, mine, theirs)


@pytest.mark.parametrize("name", ["Qwen2VL", "Qwen3VL"])
def test_mrope_generate_gives_the_same_tokens(name):
    """The full vision-language model (tiny vision tower, left alone): generate builds [3, b, s] positions itself."""
    rope = dict(TEXT["qwen2-vl" if name == "Qwen2VL" else "qwen3-vl"][2])
    text = dict(_TINY, rope_parameters={"rope_type": "default", "rope_theta": 1e6, **rope})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = getattr(transformers, f"{name}Config")(text_config=text, vision_config=_VISION, image_token_id=90,
                                                         video_token_id=91, vision_start_token_id=92)
        config._attn_implementation = "eager"
        models = []
        for _ in range(2):
            torch.manual_seed(0)
            models.append(getattr(transformers, f"{name}ForConditionalGeneration")(config).eval())
    stock, patched = models[0], posenc.hf.patch(models[1])
    ids = torch.tensor([[5, 17, 42, 8, 61, 3, 60, 27]])
    with torch.no_grad():
        assert (stock(ids).logits - patched(ids).logits).abs().max().item() <= 2e-5
        want = stock.generate(ids, max_new_tokens=6, do_sample=False)
        got = patched.generate(ids, max_new_tokens=6, do_sample=False)
    assert torch.equal(want, got)
    assert type(posenc.hf.unpatch(patched).model.language_model.rotary_emb).__name__.endswith("RotaryEmbedding")
