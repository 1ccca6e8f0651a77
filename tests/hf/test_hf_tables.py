"""RoPE held as tables (GPT-J, CodeGen, RoFormer) patched in every tested release with the same bits; holders and
releases posenc has not verified refused by name; transformers 4.x's seq_len call.

References: posenc's float64 rows (:func:`posenc.rope_cos_sin`) rounded once
to float32, which is what the rows of each release's stock table are meant
to be; RoFormer's own rotation (``apply_rotary_position_embeddings``) and
stock model; the releases' facts in :mod:`posenc.hf.versions`.
"""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from families import ROFORMER, build, tiny  # noqa: E402
from matrix import VERSION, require  # noqa: E402

import posenc  # noqa: E402
import posenc.hf  # noqa: E402
from posenc.hf.rotary import PatchedRotary  # noqa: E402
from posenc.hf.tables import SeqLenPatchedRotary  # noqa: E402
from posenc.hf.versions import ATTENTION_BUFFER, ATTENTION_TABLE, ROTARY_TABLE, expected_holder  # noqa: E402

POSITIONS = torch.tensor([[0, 1, 7, 4097, 99_999, 10**6]])
IDS = torch.tensor([[5, 17, 42, 8, 91, 3, 60, 27]])


def _reference(positions: torch.Tensor, rotary_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """(sin, cos) float32 of posenc's correctly rounded float64 rows, base 10000 (GPT-J, CodeGen, RoFormer)."""
    cos, sin = posenc.rope_cos_sin(positions.flatten().numpy(), rotary_dim, base=10000.0, dtype=np.float64)
    return sin.astype(np.float32), cos.astype(np.float32)


def _rows_the_attention_receives(model, positions: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """GPT-J / CodeGen: the (sin, cos) the first attention rotates q and k with, read where this release holds them."""
    holder = expected_holder(model.config.model_type, VERSION)
    if holder == ROTARY_TABLE:  # 5.24 on: the model's rotary module, called as the model calls it
        sin, cos = model.transformer.rotary_emb(torch.zeros(1, dtype=torch.float32), positions)
    else:
        attn = model.transformer.h[0].attn
        if holder == ATTENTION_TABLE:  # GPT-J: gathered from _get_embed_positions, cast to the key's dtype (4.57 on)
            table = attn._get_embed_positions(positions)
            sincos = torch.gather(table, 1, positions.unsqueeze(-1).repeat(1, 1, table.shape[-1])).float()
        else:
            assert holder == ATTENTION_BUFFER
            sincos = attn.embed_positions[positions]
        sin, cos = torch.split(sincos, sincos.shape[-1] // 2, dim=-1)
    return sin, cos


@pytest.mark.parametrize("name", ["gptj", "codegen"])
def test_gptj_and_codegen_rows_are_posencs_bit_for_bit_in_every_release(name):
    model = posenc.hf.patch(build(name))
    sin, cos = _rows_the_attention_receives(model, POSITIONS)
    want_sin, want_cos = _reference(POSITIONS, 8)
    assert sin.dtype == cos.dtype == torch.float32
    assert np.array_equal(sin[0].numpy(), want_sin) and np.array_equal(cos[0].numpy(), want_cos)
    stock_sin, _ = _rows_the_attention_receives(build(name), POSITIONS)
    assert not torch.equal(stock_sin, sin)  # the stock float32 table is not exact at 10^5 … 10^6: the patch changed it


def test_roformer_is_patched_with_posencs_rows_and_stays_the_model():
    stock, patched = tiny(*ROFORMER), posenc.hf.patch(tiny(*ROFORMER))
    keys = set(stock.state_dict())
    table = patched.roformer.encoder.embed_positions
    assert type(table).__name__ == "PatchedSinusoidal" and set(patched.state_dict()) == keys
    rows = table(torch.Size((1, 16)), 500)  # positions 500 … 515: [sin | cos] over each 16-wide head
    want_sin, want_cos = _reference(torch.arange(500, 516), 16)
    assert np.array_equal(rows.numpy(), np.concatenate([want_sin, want_cos], axis=-1))
    with torch.no_grad():
        assert (stock(IDS).logits - patched(IDS).logits).abs().max().item() <= 2e-5
        assert torch.equal(stock.generate(IDS, max_new_tokens=5, do_sample=False),
                           patched.generate(IDS, max_new_tokens=5, do_sample=False))
    posenc.hf.unpatch(patched)
    assert type(patched.roformer.encoder.embed_positions).__name__ == "RoFormerSinusoidalPositionalEmbedding"


def test_roformer_config_reads_interleaved_as_its_attention_rotates():
    """from_hf_config(RoFormer) + apply_rope = RoFormerSelfAttention.apply_rotary_position_embeddings (was "half")."""
    from transformers.models.roformer.modeling_roformer import RoFormerSelfAttention

    rope = posenc.from_hf_config(transformers.RoFormerConfig(hidden_size=64, num_attention_heads=4))
    assert (rope.head_dim, rope.rotary_dim, rope.base, rope.layout) == (16, 16, 10000.0, "interleaved")
    positions = np.array([0, 1, 5, 300])
    sin, cos = (torch.from_numpy(t) for t in _reference(torch.from_numpy(positions), 16))
    sinusoidal = torch.cat([sin, cos], dim=-1).double()[None, None]
    q = torch.randn(1, 2, 4, 16, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    want, _ = RoFormerSelfAttention.apply_rotary_position_embeddings(sinusoidal, q, q)
    got = posenc.apply_rope(q.numpy(), positions, layout=rope.layout, **rope.kwargs())
    assert np.abs(got - want.numpy()).max() < 1e-6  # the reference's rows are float32: a few float32 ulps


def test_a_holder_posenc_has_not_verified_for_the_release_is_refused_by_name(monkeypatch):
    model = build("gptj")
    real = expected_holder("gptj", VERSION)
    other = "5.23.0" if real == ROTARY_TABLE else "5.24.0"  # a release that holds GPT-J's table elsewhere
    monkeypatch.setattr(posenc.hf.patching, "_transformers_version", lambda: other)  # where patch reads the release
    with pytest.raises(posenc.PosEncError, match=rf"^model_type 'gptj' under transformers {other}: "):
        posenc.hf.patch(model)
    assert not any("Patched" in type(m).__name__ for m in model.modules())


@pytest.mark.parametrize("release", ["4.44.2", "5.26.0", "6.0.0.dev0"])
@pytest.mark.parametrize("name", ["llama2", "bloom"])
def test_releases_outside_the_tested_span_are_refused_by_name(monkeypatch, release, name):
    from families import build_any

    model = build_any(name)
    monkeypatch.setattr(posenc.hf.patching, "_transformers_version", lambda: release)
    with pytest.raises(posenc.PosEncError, match=rf"^model_type '{model.config.model_type}' under transformers "
                                                 rf"{release}: posenc.hf is tested with transformers 4.45.0 "
                                                 r"through the 5.25 series"):
        posenc.hf.patch(model)
    assert getattr(model, "_posenc_alibi_hooks", None) is None
    assert not any(isinstance(m, PatchedRotary) for m in model.modules())


def test_a_4x_rotary_call_with_seq_len_gets_the_same_rows():
    """transformers 4.45's Gemma / Phi-3 / DBRX pass seq_len; posenc's rows depend on the positions alone."""
    require("llama2")
    model = posenc.hf.patch(build("llama2"))
    plain = model.model.rotary_emb
    with_seq_len = SeqLenPatchedRotary(plain.stock, plain.ropes, plain.form, plain.original_max)
    x, positions = torch.zeros(1, 3, 4), torch.tensor([[0, 9, 10**6]])
    for got, want in zip(with_seq_len(x, positions, seq_len=17), plain(x, positions), strict=True):
        assert torch.equal(got, want)
