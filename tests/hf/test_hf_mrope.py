"""posenc.hf.patch on multi-axis RoPE (M-RoPE): tiny Qwen2-VL, Qwen2.5-VL, Qwen3-VL and GLM-4.1V text models.

position_ids are ``[3, b, s]`` (t, h, w); each pair turns with its section's
axis (contiguous sections for Qwen2-VL / GLM-4.1V, interleaved for Qwen3-VL).
References: transformers 5.23's own classes (stock model), and the patched
model in float64.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from families import MROPE, build_mrope, build_vl  # noqa: E402
from matrix import require  # noqa: E402

import posenc.hf  # noqa: E402
from posenc.hf.rotary import PatchedRotary  # noqa: E402

TEXT = MROPE


def _build(name: str, dtype=None):
    return build_mrope(name, dtype)


def _axes(offset: int, s: int) -> torch.Tensor:
    """[3, 1, s]: time runs on; height and width repeat (a 2 × 4 grid), all from offset."""
    p = torch.arange(s)
    return torch.stack([p, p // 4, p % 4]).reshape(3, 1, s) + offset


def _hidden(model, ids, positions):
    with torch.no_grad():
        return model(ids, position_ids=positions).last_hidden_state.double()


@pytest.mark.parametrize("name", sorted(TEXT))
def test_mrope_patched_matches_stock_and_is_closer_to_exact_far_out(name):
    require(name)
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


@pytest.mark.parametrize("name", ["qwen2-vl-full", "qwen3-vl-full"])
def test_mrope_generate_gives_the_same_tokens(name):
    """The full vision-language model (tiny vision tower, left alone): generate builds [3, b, s] positions itself."""
    require(name)
    stock, patched = build_vl(name), posenc.hf.patch(build_vl(name))
    ids = torch.tensor([[5, 17, 42, 8, 61, 3, 60, 27]])
    with torch.no_grad():
        assert (stock(ids).logits - patched(ids).logits).abs().max().item() <= 2e-5
        want = stock.generate(ids, max_new_tokens=6, do_sample=False)
        got = patched.generate(ids, max_new_tokens=6, do_sample=False)
    assert torch.equal(want, got)
    posenc.hf.unpatch(patched)
    assert not any(isinstance(m, PatchedRotary) for m in patched.modules())
