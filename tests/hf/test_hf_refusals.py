"""What posenc.hf.patch and unpatch refuse, and how they say it; and the cases issue 31 found refused or raw that
are now read right (DBRX's and Moonshine's head keys, a bfloat16-cast model, a model built on the meta device).

References: transformers 5.23's own classes (the stock model), posenc's NumPy
rows (posenc.rope_cos_sin), and the keys of the families' config classes.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from families import build, tiny  # noqa: E402
from matrix import behaviour, have, refused, require  # noqa: E402

import posenc  # noqa: E402
import posenc.hf  # noqa: E402
from posenc.hf.rotary import PatchedRotary  # noqa: E402

IDS = torch.tensor([[5, 17, 42, 8, 91, 3, 60, 27]])
_DBRX = {"d_model": 64, "n_heads": 4, "n_layers": 1, "vocab_size": 96, "max_seq_len": 4096,
         "attn_config": {"kv_n_heads": 2, "rope_theta": 500000.0, "clip_qkv": 8.0},
         "ffn_config": {"ffn_hidden_size": 64, "moe_num_experts": 2, "moe_top_k": 1},
         "rope_parameters": {"rope_type": "default", "rope_theta": 500000.0}}
_MOONSHINE = {"vocab_size": 96, "hidden_size": 64, "intermediate_size": 96, "encoder_num_hidden_layers": 1,
              "decoder_num_hidden_layers": 1, "encoder_num_attention_heads": 4, "decoder_num_attention_heads": 4,
              "pad_token_id": 0, "decoder_start_token_id": 1}


def _logits(model, *args, **kwargs):
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model(*args, **kwargs).logits.double()


def _rows_are_posencs(rotary, positions, kind=None):
    """The patched rotary's float32 rows at positions are posenc's correctly rounded ones (the "cat" form)."""
    rope = rotary.ropes[kind]
    p = torch.tensor([positions])
    cos, sin = rotary(torch.zeros(1, len(positions), 8), p) if kind is None else rotary(
        torch.zeros(1, len(positions), 8), p, kind)
    want_cos, want_sin = posenc.rope_cos_sin(np.array(positions), rope.head_dim, dtype="float32", **rope.kwargs())
    half = rope.rotary_dim // 2
    return np.array_equal(cos[0, :, :half].numpy(), want_cos) and np.array_equal(sin[0, :, :half].numpy(), want_sin)


# -- not a model -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("fn", ["patch", "unpatch"])
@pytest.mark.parametrize(("what", "message"), [
    (lambda: None, "got None"),
    (lambda: "x", "got the string 'x'"),
    (lambda: transformers.LlamaConfig(), "got LlamaConfig (a config: build the model from it first)"),
    (lambda: transformers.LlamaForCausalLM, "got the class LlamaForCausalLM"),
])
def test_patch_and_unpatch_refuse_what_is_not_a_model_instance(fn, what, message):
    with pytest.raises(posenc.PosEncError, match=re.escape(message)):
        getattr(posenc.hf, fn)(what())


# -- refusals that say what was found ----------------------------------------------------------------------------


def test_a_vision_tower_alone_is_refused_as_a_vision_towers_2d_rope():
    model = tiny("PixtralVisionConfig", "PixtralVisionModel", {
        "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1, "num_attention_heads": 4,
        "image_size": 32, "patch_size": 8})
    newest = re.escape("model_type 'pixtral' has only a vision tower's 2-D RoPE (PixtralVisionRotaryEmbedding), "
                       "which posenc leaves as it is")
    with pytest.raises(posenc.PosEncError, match=str(behaviour("pixtral-refusal", newest))) as info:
        posenc.hf.patch(model)
    assert "no rotary embedding" not in str(info.value)


def test_a_model_without_rope_is_refused_with_what_its_config_uses():
    model = tiny("GPT2Config", "GPT2LMHeadModel", {"n_embd": 32, "n_head": 4, "n_layer": 1, "vocab_size": 64})
    with pytest.raises(posenc.PosEncError, match=r"model_type 'gpt2' has no rotary embedding module nor ALiBi .*"
                                                 r"learned absolute positions"):
        posenc.hf.patch(model)


def test_a_rotary_module_posenc_does_not_recognise_is_named():
    class CustomRotaryEmbedding(torch.nn.Module):  # a family's own table, no inv_freq buffer
        def __init__(self):
            super().__init__()
            self.register_buffer("freqs", torch.ones(4), persistent=False)

    model = build("llama2")
    for parent in list(model.modules()):  # 4.45's attention layers hold a rotary_emb of their own too
        if "rotary_emb" in dict(parent.named_children()):
            parent.rotary_emb = CustomRotaryEmbedding()
    with pytest.raises(posenc.PosEncError, match=re.escape(
            "model_type 'llama' has a rotary module posenc does not recognise (CustomRotaryEmbedding)")):
        posenc.hf.patch(model)


def test_a_config_without_the_head_width_names_its_family_and_the_keys_it_has():
    with pytest.raises(posenc.PosEncError, match=r"model_type 'mystery': .*it has 'd_model', 'n_heads'"):
        posenc.from_hf_config({"model_type": "mystery", "d_model": 64, "n_heads": 4, "rope_theta": 10000.0})


# -- DBRX and Moonshine: their head keys ---------------------------------------------------------------------------


def test_dbrx_is_patched_from_d_model_and_n_heads():
    stock, patched = tiny("DbrxConfig", "DbrxForCausalLM", _DBRX), posenc.hf.patch(tiny("DbrxConfig",
                                                                                       "DbrxForCausalLM", _DBRX))
    assert (_logits(stock, IDS) - _logits(patched, IDS)).abs().max().item() <= 2e-5
    rotaries = [m for m in patched.modules() if isinstance(m, PatchedRotary)]  # 4.x: one in each attention
    assert len(rotaries) == sum(type(m).__name__ == "DbrxRotaryEmbedding" for m in stock.modules()) >= 1
    rotary = rotaries[0]
    assert rotary.ropes[None].head_dim == 16
    assert rotary.ropes[None].base == 500000.0 and _rows_are_posencs(rotary, [0, 99_999, 10**6])


def test_dbrx_config_json_reads_the_base_from_attn_config_and_refuses_two_bases():
    # dbrx-instruct's config.json (transformers 4.x): no rope dict; the base in attn_config
    file = {"model_type": "dbrx", "d_model": 6144, "n_heads": 48, "max_seq_len": 32768,
            "attn_config": {"kv_n_heads": 8, "rope_theta": 500000, "clip_qkv": 8}}
    rope = posenc.from_hf_config(file)
    assert (rope.head_dim, rope.rotary_dim, rope.base, rope.max_position) == (128, 128, 500000.0, 32768)
    # what transformers 5.23 makes of that file: rope_parameters with its default base beside the file's
    loaded = transformers.DbrxConfig(**{k: v for k, v in file.items() if k != "model_type"}).to_dict()
    if behaviour("dbrx-config-dict", "two bases") == "read":  # 4.x: attn_config's base alone, read as the file's
        assert "rope_parameters" not in loaded and posenc.from_hf_config(loaded) == rope
        return
    assert loaded["rope_parameters"]["rope_theta"] == 10000.0
    with pytest.raises(posenc.PosEncError, match=r"model_type 'dbrx' gives rope_theta 10000\.0 .* and 500000"):
        posenc.from_hf_config(loaded)


def test_moonshine_is_patched_from_its_decoder_heads():
    have("MoonshineConfig", "MoonshineForConditionalGeneration")
    stock = tiny("MoonshineConfig", "MoonshineForConditionalGeneration", _MOONSHINE)
    patched = posenc.hf.patch(tiny("MoonshineConfig", "MoonshineForConditionalGeneration", _MOONSHINE))
    rotaries = [m for m in patched.modules() if isinstance(m, PatchedRotary)]
    assert len(rotaries) == 2  # the encoder's and the decoder's
    torch.manual_seed(1)
    audio, decoder = torch.randn(1, 3200), torch.tensor([[1, 5, 7, 9]])
    got = _logits(patched, input_values=audio, decoder_input_ids=decoder)
    assert (_logits(stock, input_values=audio, decoder_input_ids=decoder) - got).abs().max().item() <= 2e-5
    assert all(_rows_are_posencs(r, [0, 99_999, 10**6]) for r in rotaries)


# -- bfloat16 casts and the meta device ----------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "dtype"), [("llama3.1", torch.bfloat16), ("gemma3", torch.bfloat16),
                                             ("phi3.5-longrope", torch.float16)])
def test_a_model_cast_to_half_precision_is_patched_as_its_config_says(name, dtype):
    """model.to(bfloat16) rounds inv_freq to bfloat16; the config's RoPE is read, and the rows are the float32 ones."""
    if refused(name) is not None:  # 4.45's Phi-3 LongRoPE: refused by name, cast or not
        with pytest.raises(posenc.PosEncError, match=refused(name)):
            posenc.hf.patch(build(name).to(dtype))
        return
    require(name)
    cast, exact = build(name).to(dtype), posenc.hf.patch(build(name))
    refusal = behaviour(f"{name}-cast", None)
    if refusal is not None:  # 4.57's Gemma 3: a second module built from an edited config, refused by name
        with pytest.raises(posenc.PosEncError, match=rf"^model_type '{cast.config.model_type}' .*{refusal}"):
            posenc.hf.patch(cast)
        assert not any(isinstance(m, PatchedRotary) for m in cast.modules())
        return
    assert all(b.dtype == dtype for n, b in cast.model.rotary_emb.named_buffers() if n.endswith("inv_freq"))
    posenc.hf.patch(cast)
    rotary, reference = cast.model.rotary_emb, exact.model.rotary_emb
    assert isinstance(rotary, PatchedRotary)
    x, p = torch.zeros(1, 4, 8, dtype=dtype), torch.tensor([[0, 7, 99_999, 10**6]])
    for kind in rotary.ropes:
        got = rotary(x, p) if kind is None else rotary(x, p, kind)
        want = reference(x.float(), p) if kind is None else reference(x.float(), p, kind)
        assert all(torch.equal(g, w.to(dtype)) for g, w in zip(got, want, strict=True))


def test_a_half_precision_buffer_that_is_not_the_configs_is_refused_naming_it():
    model = build("llama3.1").to(torch.bfloat16)
    model.model.rotary_emb.inv_freq[3] *= 2
    with pytest.raises(posenc.PosEncError, match=r"LlamaRotaryEmbedding holds inv_freq in bfloat16 .* not its "
                                                 r"config's frequencies rounded to bfloat16"):
        posenc.hf.patch(model)
    assert not isinstance(model.model.rotary_emb, PatchedRotary)


def test_a_model_built_on_the_meta_device_is_patched_and_exact_once_loaded():
    real = posenc.hf.patch(build("llama3.1"))
    with torch.device("meta"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = transformers.LlamaConfig(**{k: v for k, v in real.config.to_dict().items()
                                            if k not in ("transformers_version", "architectures")})
        config._attn_implementation = "eager"
        model = transformers.LlamaForCausalLM(config).eval()
    posenc.hf.patch(model)  # before: "Cannot copy out of meta tensor"
    assert isinstance(model.model.rotary_emb, PatchedRotary)
    model.to_empty(device="cpu")
    model.load_state_dict(real.state_dict())
    far = torch.arange(99_996, 100_004).reshape(1, 8)
    assert torch.equal(_logits(model, IDS, position_ids=far), _logits(real, IDS, position_ids=far))


@pytest.mark.parametrize("half", [torch.bfloat16, torch.float16])
def test_a_model_cast_to_half_precision_and_back_to_float64_is_read_from_its_config(half):
    """model.to(bfloat16).to(float64) keeps inv_freq's bfloat16 values in a float64 buffer (refused before: "computes
    rows posenc does not reproduce"); read from the config as a bfloat16 buffer is, the rows are float64's."""
    cast, exact = build("llama3.1").to(half).to(torch.float64), posenc.hf.patch(build("llama3.1").to(torch.float64))
    held = cast.model.rotary_emb.inv_freq
    assert held.dtype == torch.float64 and torch.equal(held.to(half).double(), held)
    posenc.hf.patch(cast)
    rotary, reference = cast.model.rotary_emb, exact.model.rotary_emb
    assert isinstance(rotary, PatchedRotary)
    x, p = torch.zeros(1, 4, 8, dtype=torch.float64), torch.tensor([[0, 7, 99_999, 10**6]])
    assert all(torch.equal(g, w) for g, w in zip(rotary(x, p), reference(x, p), strict=True))


def test_a_float64_buffer_of_half_precision_values_that_are_not_the_configs_is_refused_naming_it():
    model = build("llama3.1").to(torch.bfloat16)
    model.model.rotary_emb.inv_freq[3] *= 2
    model.to(torch.float64)
    with pytest.raises(posenc.PosEncError, match=r"LlamaRotaryEmbedding holds inv_freq in float64 with values rounded "
                                                 r"to bfloat16 .* not its config's frequencies rounded to bfloat16"):
        posenc.hf.patch(model)
    assert not isinstance(model.model.rotary_emb, PatchedRotary)


def test_a_float32_buffer_whose_values_bfloat16_holds_exactly_is_read_as_it_is():
    """Base 256 over a 16-wide head: inv_freq = 2^(-i), exact in bfloat16 without any cast; patched as stock."""
    keys = {"vocab_size": 96, "hidden_size": 64, "intermediate_size": 96, "num_hidden_layers": 1,
            "num_attention_heads": 4, "num_key_value_heads": 2, "rope_theta": 256.0}
    if int(transformers.__version__.split(".")[0]) >= 5:
        keys = {**{k: v for k, v in keys.items() if k != "rope_theta"},
                "rope_parameters": {"rope_type": "default", "rope_theta": 256.0}}
    stock, model = tiny("LlamaConfig", "LlamaForCausalLM", keys), tiny("LlamaConfig", "LlamaForCausalLM", keys)
    held = model.model.rotary_emb.inv_freq
    assert held.dtype == torch.float32 and torch.equal(held, 2.0 ** -torch.arange(8.0))
    posenc.hf.patch(model)
    assert isinstance(model.model.rotary_emb, PatchedRotary) and model.model.rotary_emb.ropes[None].base == 256.0
    assert (_logits(stock, IDS) - _logits(model, IDS)).abs().max().item() <= 2e-5
