"""What a patched model keeps doing: KV-cache generate, left padding, torch.compile, .to(dtype), float64, save/load,
dynamic NTK's kept base, unpatch; and the models it refuses."""

from __future__ import annotations

import copy

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from families import build  # noqa: E402
from matrix import require  # noqa: E402

import posenc  # noqa: E402
import posenc.hf  # noqa: E402
from posenc.hf.rotary import PatchedRotary  # noqa: E402

IDS = torch.tensor([[5, 17, 42, 8, 91, 3, 60, 27]])


def _logits(model, *args, **kwargs):
    with torch.no_grad():
        return model(*args, **kwargs).logits.double()


def test_left_padding_generate_reads_position_ids_from_the_mask():
    require('llama3.1')
    stock, patched = build("llama3.1"), posenc.hf.patch(build("llama3.1"))
    ids = torch.tensor([[0, 0, 0, 5, 17, 42, 8, 91], [5, 17, 42, 8, 91, 3, 60, 27]])
    mask = torch.tensor([[0, 0, 0, 1, 1, 1, 1, 1], [1] * 8])
    with torch.no_grad():
        want = stock.generate(ids, attention_mask=mask, max_new_tokens=5, do_sample=False)
        got = patched.generate(ids, attention_mask=mask, max_new_tokens=5, do_sample=False)
    assert torch.equal(want, got)
    # the padded row's first real token sits at position 0, as in the unpadded prompt
    alone = _logits(patched, ids[:1, 3:])
    padded = _logits(patched, ids[:1], attention_mask=mask[:1], position_ids=(mask[:1].cumsum(-1) - 1).clamp(min=0))
    assert (alone[0, -1] - padded[0, -1]).abs().max().item() <= 2e-5


def test_torch_compile_of_the_patched_model():
    require('qwen3')
    patched = posenc.hf.patch(build("qwen3"))
    want = _logits(patched, IDS)
    compiled = torch.compile(patched, backend="aot_eager")
    assert (_logits(compiled, IDS) - want).abs().max().item() <= 1e-6


def test_to_dtype_keeps_exact_rows_and_float64_models_get_float64_rows():
    require('llama2')
    patched = posenc.hf.patch(build("llama2"))
    rotary = patched.model.rotary_emb
    x = torch.zeros(1, 4, 8)
    positions = torch.tensor([[0, 1, 99_999, 10**6]])
    cos32, _ = rotary(x, positions)
    patched.to(torch.bfloat16)
    cos_bf16, _ = rotary(x.to(torch.bfloat16), positions)
    assert cos_bf16.dtype == torch.bfloat16 and torch.equal(cos_bf16, cos32.to(torch.bfloat16))
    patched.to(torch.float64)
    cos64, sin64 = rotary(x.double(), positions)
    exact_cos, exact_sin = posenc.rope_cos_sin(positions[0].numpy(), 16, base=10000.0, dtype="float64")
    assert cos64.dtype == torch.float64
    assert torch.equal(cos64[0, :, :8], torch.from_numpy(exact_cos)) and torch.equal(sin64[0, :, 8:],
                                                                                     torch.from_numpy(exact_sin))
    assert torch.equal(cos32[0, :, :8], torch.from_numpy(exact_cos.astype("float32")))


def test_state_dict_save_load_and_unpatch(tmp_path):
    require('gemma3')
    model = build("gemma3")
    rotary = sum(type(m).__name__ == "Gemma3RotaryEmbedding" for m in model.modules())  # 4.x: 2 (global, local)
    keys = set(model.state_dict())
    want = _logits(model, IDS)
    posenc.hf.patch(model)
    assert set(model.state_dict()) == keys  # no new keys: the rows are not saved
    model.save_pretrained(tmp_path)
    loaded = posenc.hf.patch(transformers.AutoModelForCausalLM.from_pretrained(tmp_path).eval())
    assert (_logits(loaded, IDS) - want).abs().max().item() <= 2e-5
    assert posenc.hf.patch(model) is model and sum(isinstance(m, PatchedRotary) for m in model.modules()) == rotary >= 1
    posenc.hf.unpatch(model)
    assert type(model.model.rotary_emb).__name__ == "Gemma3RotaryEmbedding"
    assert torch.equal(_logits(model, IDS), want)


def test_dynamic_ntk_keeps_the_enlarged_base_as_transformers_does():
    require('llama-dynamic')
    # max_position_embeddings 64: a call at 200 positions enlarges the base; the call at 100 that follows keeps it
    stock, patched = build("llama-dynamic"), posenc.hf.patch(build("llama-dynamic"))
    ids = torch.arange(200).reshape(1, 200) % 96
    for length in (200, 100, 150, 30, 100):  # grow, keep, keep, reset (below 64), grow again
        got, want = _logits(patched, ids[:, :length]), _logits(stock, ids[:, :length])
        assert (got - want).abs().max().item() <= 2e-5, length
    # posenc's own RotaryEmbedding recomputes the base from each call's length: at 100 after 200 it differs
    fresh = posenc.hf.patch(build("llama-dynamic"))
    assert (_logits(fresh, ids[:, :100]) - _logits(patched, ids[:, :100])).abs().max().item() <= 2e-5
    again = copy.deepcopy(fresh)
    _logits(again, ids)
    assert (_logits(again, ids[:, :100]) - _logits(fresh, ids[:, :100])).abs().max().item() > 1e-4


@pytest.mark.parametrize(("config_cls", "model_cls", "keys", "model_type"), [
    ("GPT2Config", "GPT2LMHeadModel", {"n_embd": 32, "n_head": 4, "n_layer": 1, "vocab_size": 64}, "gpt2"),
    ("BertConfig", "BertModel", {"hidden_size": 32, "num_attention_heads": 4, "num_hidden_layers": 1,
                                 "intermediate_size": 64, "vocab_size": 64}, "bert"),
])
def test_models_without_rope_are_refused_by_model_type(config_cls, model_cls, keys, model_type):
    model = getattr(transformers, model_cls)(getattr(transformers, config_cls)(**keys))
    with pytest.raises(posenc.PosEncError, match=repr(model_type)):
        posenc.hf.patch(model)


def test_patched_models_pickle_and_serve_threads():
    require('llama-dynamic')
    import pickle
    import threading

    patched = posenc.hf.patch(build("llama-dynamic"))
    want = _logits(patched, IDS)
    clone = pickle.loads(pickle.dumps(patched))
    assert torch.equal(_logits(clone, IDS), want)
    ids = torch.arange(100).reshape(1, 100) % 96
    results, errors = [], []

    def work():
        try:
            results.append(_logits(patched, IDS))
        except Exception as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    _logits(patched, ids)
    for t in threads:
        t.join()
    assert not errors and len(results) == 4
