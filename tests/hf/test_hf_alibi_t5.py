"""ALiBi models patched with posenc's correctly rounded slopes; T5's buckets already posenc's."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

import posenc  # noqa: E402
import posenc.hf  # noqa: E402

IDS = torch.tensor([[5, 17, 42, 8, 91, 3, 60, 27]])

ALIBI = {
    "bloom": ("BloomConfig", "BloomForCausalLM", {"vocab_size": 96, "hidden_size": 64, "n_head": 4, "n_layer": 1}),
    "mpt": ("MptConfig", "MptForCausalLM", {"vocab_size": 96, "d_model": 64, "n_heads": 4, "n_layers": 1,
                                            "max_seq_len": 64}),
    "falcon-alibi": ("FalconConfig", "FalconForCausalLM", {"vocab_size": 96, "hidden_size": 64,
                                                           "num_attention_heads": 4, "num_hidden_layers": 1,
                                                           "alibi": True}),
}


def _build(name, **extra):
    config_cls, model_cls, keys = ALIBI[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        config = getattr(transformers, config_cls)(**{**keys, **extra})
        config._attn_implementation = "eager"
        torch.manual_seed(0)
        return getattr(transformers, model_cls)(config).eval()


def _logits(model, ids=IDS, **kw):
    with torch.no_grad():
        return model(ids, **kw).logits.double()


@pytest.mark.parametrize("name", sorted(ALIBI))
def test_alibi_models_patched_match_stock_and_generate_the_same(name):
    stock, patched = _build(name), posenc.hf.patch(_build(name))
    assert (_logits(stock) - _logits(patched)).abs().max().item() <= 2e-5
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1]])
    assert (_logits(stock, attention_mask=mask) - _logits(patched, attention_mask=mask)).abs().max().item() <= 2e-5
    with torch.no_grad():
        assert torch.equal(stock.generate(IDS, max_new_tokens=5, do_sample=False),
                           patched.generate(IDS, max_new_tokens=5, do_sample=False))
    posenc.hf.unpatch(patched)
    assert torch.equal(_logits(stock), _logits(patched))


def test_bloom_slopes_for_12_heads_are_posencs_rounded_once():
    from transformers.models.bloom import modeling_bloom

    patched = posenc.hf.patch(_build("bloom", n_head=12, hidden_size=96))
    seen = []
    hook = patched.transformer.register_forward_hook(
        lambda m, a, out: seen.append(modeling_bloom._get_alibi_slopes(12, torch.device("cpu"))))
    _logits(patched)
    hook.remove()
    want = torch.tensor(posenc.alibi_slopes(12), dtype=torch.float32)
    # inside the patched forward: posenc's; outside it (other models): transformers' own float32 pow
    assert torch.equal(seen[0], want)
    theirs = modeling_bloom._get_alibi_slopes(12, torch.device("cpu"))
    ulp = np.spacing(want.numpy())  # torch's float32 pow: close, not correctly rounded (a CPU's libm decides)
    assert (np.abs(theirs.numpy() - want.numpy()) <= 2 * ulp).all()


def test_t5_buckets_already_match():
    from transformers.models.t5.modeling_t5 import T5Attention

    offsets = torch.arange(-3000, 3001)
    for bidirectional in (True, False):
        theirs = T5Attention._relative_position_bucket(offsets, bidirectional=bidirectional, num_buckets=32,
                                                       max_distance=128)
        mine = posenc.t5_bucket(offsets.numpy(), bidirectional=bidirectional, num_buckets=32, max_distance=128)
        assert (theirs.numpy() == mine).all()


def test_t5_is_refused_by_patch_with_its_model_type():
    config = transformers.T5Config(vocab_size=64, d_model=32, d_kv=8, d_ff=64, num_layers=1, num_heads=4)
    with pytest.raises(posenc.PosEncError, match="'t5'"):
        posenc.hf.patch(transformers.T5ForConditionalGeneration(config))
