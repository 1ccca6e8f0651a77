"""posenc.hf.patch on tiny transformers models (each tested release) with real checkpoints' RoPE: same model at
small positions, closer to the exact model at 10^5 … 10^6, and from_hf_config(layer=i) as the modeling code.

The references are transformers' own classes (the stock model, its rotary
module's ``inv_freq``, its rotate function) and the patched model run in
float64 (posenc's float64 rows, float64 math).
"""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from families import FAMILIES, build  # noqa: E402
from matrix import require  # noqa: E402

import posenc  # noqa: E402
import posenc.hf  # noqa: E402

IDS = torch.tensor([[5, 17, 42, 8, 91, 3, 60, 27, 33, 14]])
LONG_OFFSETS = (100_000, 999_984)  # the first of 16 positions, at 1e5 and just below 1e6


def _logits(model, ids, positions=None):
    with torch.no_grad():
        return model(ids, position_ids=positions).logits.double()


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_patched_matches_stock_at_small_positions_and_generates_the_same(name):
    require(name)
    stock, patched = build(name), posenc.hf.patch(build(name))
    ids = torch.cat([IDS, IDS.flip(-1)])
    assert (_logits(stock, ids) - _logits(patched, ids)).abs().max().item() <= 2e-5
    with torch.no_grad():
        want = stock.generate(IDS, max_new_tokens=6, do_sample=False)
        got = patched.generate(IDS, max_new_tokens=6, do_sample=False)
    assert torch.equal(want, got)


def long_range_errors(name: str, offset: int, s: int = 16) -> tuple[float, float]:
    """(patched fp32, stock fp32) max |logit - patched float64 logit| at positions offset … offset+s-1."""
    ids = torch.arange(s).reshape(1, s) * 5 % 96
    positions = torch.arange(offset, offset + s).reshape(1, s)
    exact = _logits(posenc.hf.patch(build(name, torch.float64)), ids, positions)
    patched = _logits(posenc.hf.patch(build(name)), ids, positions)
    stock = _logits(build(name), ids, positions)
    return (patched - exact).abs().max().item(), (stock - exact).abs().max().item()


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_patched_fp32_is_no_farther_from_exact_than_stock_at_long_positions(name):
    require(name)
    for offset in LONG_OFFSETS:
        mine, theirs = long_range_errors(name, offset)
        assert math.isfinite(mine) and mine <= theirs, (offset, mine, theirs)


def _stock_inv_freq(model, kind):
    """The ω the modeling code uses: the rotary module's inv_freq (per layer type), or GPT-J / CodeGen's table row 1.

    transformers 4.x's Gemma 3 keeps one module per layer kind (``rotary_emb``, ``rotary_emb_local`` for the
    sliding layers); 5.x one module with ``<kind>_inv_freq`` buffers.
    """
    rotary = {name.rsplit(".", 1)[-1]: m for name, m in model.named_modules()
              if any(b.endswith("inv_freq") for b, _ in m.named_buffers(recurse=False))}
    if not rotary:  # GPT-J / CodeGen: embed_positions row p = [sin(ω p) | cos(ω p)]; ω < π, so row 1 gives ω
        table = next(m.embed_positions for m in model.modules() if hasattr(m, "embed_positions")).double()
        half = table.shape[1] // 2
        return torch.atan2(table[1, :half], table[1, half:]).numpy()
    module = rotary.get("rotary_emb_local") if kind == "sliding_attention" and len(rotary) > 1 else None
    module = module if module is not None else next(iter(rotary.values()))
    held = getattr(module, f"{kind}_inv_freq", None) if kind else None
    return (held if held is not None else module.inv_freq).double().numpy()


def _stock_layout(model, rotary_dim: int) -> str | None:
    """The pairs the modeling module's rotation mixes: e_0's partner at r/2 ("half") or 1 ("interleaved").

    ``rotate_every_two`` (GPT-J), the complex form (Llama 4), DeepSeek-V3's
    ``apply_rotary_pos_emb_interleave`` at angle π/2 on pair 0, or ``rotate_half``.
    """
    mod = importlib.import_module(type(model).__module__)
    e0 = torch.zeros(1, 1, 1, rotary_dim)
    e0[..., 0] = 1.0
    if hasattr(mod, "rotate_every_two"):
        out = mod.rotate_every_two(e0)
    elif hasattr(mod, "apply_rotary_emb"):  # the complex form: pairs (2i, 2i+1) of view_as_complex
        angle = torch.zeros(1, 1, rotary_dim // 2)
        angle[..., 0] = math.pi / 2
        freqs = torch.polar(torch.ones_like(angle), angle)
        out, _ = mod.apply_rotary_emb(e0.transpose(1, 2), e0.transpose(1, 2), freqs)
        out = out.transpose(1, 2)
    elif hasattr(mod, "apply_rotary_pos_emb_interleave") and model.config.rope_interleave:
        # it writes its output de-interleaved (the same order for q and k): find the input channel whose
        # rotation lands on the same two output channels as channel 0's, at angle π/4 on pair 0
        cos, sin = torch.ones(1, 1, rotary_dim), torch.zeros(1, 1, rotary_dim)
        cos[..., 0] = cos[..., rotary_dim // 2] = sin[..., 0] = sin[..., rotary_dim // 2] = math.sqrt(0.5)
        eye = torch.eye(rotary_dim).reshape(rotary_dim, 1, 1, rotary_dim)
        out, _ = mod.apply_rotary_pos_emb_interleave(eye, eye, cos, sin)
        support = [frozenset(torch.nonzero(o.flatten()).flatten().tolist()) for o in out]
        partner = next(j for j in range(1, rotary_dim) if support[j] == support[0])
        return {rotary_dim // 2: "half", 1: "interleaved"}.get(partner)
    elif hasattr(mod, "rotate_half"):
        out = mod.rotate_half(e0)
    else:
        return None
    partner = int(out.flatten().abs().argmax())
    return {rotary_dim // 2: "half", 1: "interleaved"}.get(partner)


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_from_hf_config_per_layer_is_what_the_modeling_code_uses(name):
    require(name)
    model = build(name)
    n = model.config.num_hidden_layers
    layers = [posenc.from_hf_config(model.config, layer=i) for i in range(n)]
    assert [r is None for r in layers] == [_is_nope(model, i) for i in range(n)]
    for i, rope in enumerate(layers):
        if rope is None:
            continue
        inv = _stock_inv_freq(model, (getattr(model.config, "layer_types", None) or [None] * n)[i])
        mine = posenc.rope_frequencies(rope.head_dim, **rope.kwargs()).inv_freq
        if rope.layout == "head_half":  # Gemma 4's proportional RoPE: inv_freq 0 past the pairs that turn
            assert len(inv) == rope.head_dim // 2 and not inv[len(mine):].any(), (i, inv)
            inv = inv[:len(mine)]
        # float32 frequencies (Llama 3's blend in float32 steps): a few float32 ulps
        assert mine.shape == inv.shape and np.allclose(mine, inv, rtol=2e-6, atol=0), (i, mine, inv)
        if rope.layout == "head_half":  # rotate_half over the whole head: channel 0's partner is h_d/2
            assert _stock_layout(model, rope.head_dim) == "half", i
        else:
            assert rope.layout == _stock_layout(model, rope.rotary_dim), i
    if len({(r is None, r) for r in layers}) > 1:
        with pytest.raises(posenc.PosEncError, match="layer="):
            posenc.from_hf_config(model.config)


def _is_nope(model, i: int) -> bool:
    """What the attention of layer i does: no RoPE where use_rope is off (Llama 4, SmolLM3) or Cohere2's full layers."""
    attn = next(m for name, m in model.named_modules() if name.endswith(f"layers.{i}.self_attn")
                or name.endswith(f"h.{i}.attn") or name.endswith(f"layers.{i}.attention")
                or name.endswith(f"h.{i}.self_attention"))
    if hasattr(attn, "use_rope"):
        return not attn.use_rope
    if type(attn).__name__.startswith("Cohere2"):
        return attn.sliding_window is None
    return False
