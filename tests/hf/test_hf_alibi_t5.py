"""ALiBi models patched with posenc's correctly rounded slopes; T5's buckets already posenc's."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from families import ALIBI, build_alibi  # noqa: E402
from matrix import require  # noqa: E402

import posenc  # noqa: E402
import posenc.hf  # noqa: E402

IDS = torch.tensor([[5, 17, 42, 8, 91, 3, 60, 27]])

def _build(name, **extra):
    return build_alibi(name, **extra)


def _logits(model, ids=IDS, **kw):
    with torch.no_grad():
        return model(ids, **kw).logits.double()


@pytest.mark.parametrize("name", sorted(ALIBI))
def test_alibi_models_patched_match_stock_and_generate_the_same(name):
    require(name)
    stock, patched = _build(name), posenc.hf.patch(_build(name))
    assert (_logits(stock) - _logits(patched)).abs().max().item() <= 2e-5
    mask = torch.tensor([[0, 0, 1, 1, 1, 1, 1, 1]])
    assert (_logits(stock, attention_mask=mask) - _logits(patched, attention_mask=mask)).abs().max().item() <= 2e-5
    with torch.no_grad():
        assert torch.equal(stock.generate(IDS, max_new_tokens=5, do_sample=False),
                           patched.generate(IDS, max_new_tokens=5, do_sample=False))
    posenc.hf.unpatch(patched)
    assert torch.equal(_logits(stock), _logits(patched))


def _bloom_slopes(modeling_bloom, n):
    """BLOOM's slopes as its modeling code computes them: ``_get_alibi_slopes`` (5.x), or position 1's bias (4.x)."""
    if hasattr(modeling_bloom, "_get_alibi_slopes"):
        return modeling_bloom._get_alibi_slopes(n, torch.device("cpu"))
    return modeling_bloom.build_alibi_tensor(torch.ones(1, 2, dtype=torch.long), n, torch.float32)[:, 0, 1]


def test_bloom_slopes_for_12_heads_are_posencs_rounded_once():
    from transformers.models.bloom import modeling_bloom

    patched = posenc.hf.patch(_build("bloom", n_head=12, hidden_size=96))
    seen = []
    hook = patched.transformer.register_forward_hook(lambda m, a, out: seen.append(_bloom_slopes(modeling_bloom, 12)))
    _logits(patched)
    hook.remove()
    want = torch.tensor(posenc.alibi_slopes(12), dtype=torch.float32)
    # inside the patched forward: posenc's; outside it (other models): transformers' own float32 pow
    assert torch.equal(seen[0], want)
    theirs = _bloom_slopes(modeling_bloom, 12)
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
