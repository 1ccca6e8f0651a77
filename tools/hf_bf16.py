"""What a bfloat16 transformers model gains from posenc.hf.patch, and what a float32 rotation of q/k would add.

Measures, on tiny random models of tests/hf/families.py (weights rounded to
bfloat16 once, the same weights for every run), the max |logit - exact| over
16 tokens from offset 10^5 and from 999984, where "exact" is the same
bfloat16-valued weights run in float64 with posenc's float64 rows:

- stock: the bfloat16 model as ``from_pretrained(dtype=torch.bfloat16)`` gives
  it (inv_freq kept float32; cos/sin computed in float32, then rounded to bf16);
- patched: ``posenc.hf.patch`` (posenc's exact rows, rounded once to bf16);
- patched, fp32 rotation: posenc's float32 rows, and ``q·cos + rotate(q)·sin``
  computed in float32 from the bf16 q/k, rounded once to bf16 (what a
  ``rotation_dtype=torch.float32`` option would do; applied here by replacing
  the family's ``apply_rotary_pos_emb`` for the run).

And the same three at the rotation itself (max |rotated q - exact| over
random bf16 q of unit scale, head_dim 16, 64 positions from each offset).

Run: ``PYTHONPATH=src python tools/hf_bf16.py`` (about a minute on two cores).
"""

from __future__ import annotations

import copy
import importlib
import sys
import warnings
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "hf"))
from families import build

import posenc
import posenc.hf

OFFSETS = (100_000, 999_984)
NAMES = ("llama3.1", "qwen3", "mistral")


def _logits(model: Any, positions: torch.Tensor) -> torch.Tensor:
    ids = torch.arange(positions.shape[-1]).reshape(1, -1) * 5 % 96
    with torch.no_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model(ids, position_ids=positions).logits.double()


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _fp32_rotation(q: Any, k: Any, cos: Any, sin: Any, unsqueeze_dim: int = 1) -> tuple[Any, Any]:
    cos, sin = cos.unsqueeze(unsqueeze_dim).float(), sin.unsqueeze(unsqueeze_dim).float()
    qf, kf = q.float(), k.float()
    return (qf * cos + _rotate_half(qf) * sin).to(q.dtype), (kf * cos + _rotate_half(kf) * sin).to(k.dtype)


def _fp32_rows(model: Any) -> Any:
    """The patched rotary's rows left in float32 (the cast to x's dtype skipped)."""
    rotary = model.model.rotary_emb
    forward = rotary.forward
    rotary.forward = lambda x, position_ids, layer_type=None: forward(x.float(), position_ids, layer_type)
    return model


def model_errors(name: str) -> dict[str, list[float]]:
    base = build(name)
    weights = copy.deepcopy(base).to(torch.bfloat16)
    exact = posenc.hf.patch(copy.deepcopy(base).to(torch.float64))
    exact.load_state_dict(weights.state_dict())  # the bf16-valued weights, held in float64
    stock = copy.deepcopy(weights)
    stock.model.rotary_emb.load_state_dict(base.model.rotary_emb.state_dict())
    for buffer_name, buffer in base.model.rotary_emb.named_buffers():  # from_pretrained keeps inv_freq float32
        setattr(stock.model.rotary_emb, buffer_name, buffer.clone())
    patched = posenc.hf.patch(copy.deepcopy(weights))
    rotated = _fp32_rows(posenc.hf.patch(copy.deepcopy(weights)))
    modeling = importlib.import_module(type(base).__module__)
    out: dict[str, list[float]] = {"stock": [], "patched": [], "patched, fp32 rotation": []}
    for offset in OFFSETS:
        positions = torch.arange(offset, offset + 16).reshape(1, 16)
        want = _logits(exact, positions)
        out["stock"].append((_logits(stock, positions) - want).abs().max().item())
        out["patched"].append((_logits(patched, positions) - want).abs().max().item())
        original = modeling.apply_rotary_pos_emb
        modeling.apply_rotary_pos_emb = _fp32_rotation
        try:
            out["patched, fp32 rotation"].append((_logits(rotated, positions) - want).abs().max().item())
        finally:
            modeling.apply_rotary_pos_emb = original
    return out


def rotation_errors() -> dict[str, list[float]]:
    torch.manual_seed(0)
    q = torch.randn(1, 8, 64, 16).to(torch.bfloat16)
    inv_freq = 1.0 / (10000.0 ** (torch.arange(0, 16, 2, dtype=torch.float) / 16))
    out: dict[str, list[float]] = {"stock": [], "patched": [], "patched, fp32 rotation": []}
    for offset in OFFSETS:
        p = torch.arange(offset, offset + 64)
        cos64, sin64 = (torch.from_numpy(t) for t in posenc.rope_cos_sin(p.numpy(), 16, dtype="float64"))
        c64, s64 = torch.cat((cos64, cos64), -1), torch.cat((sin64, sin64), -1)
        exact = q.double() * c64 + _rotate_half(q.double()) * s64
        freqs = p[:, None].float() * inv_freq  # LlamaRotaryEmbedding.forward, float32
        c32, s32 = torch.cat((freqs, freqs), -1).cos(), torch.cat((freqs, freqs), -1).sin()
        stock = q * c32.to(torch.bfloat16) + _rotate_half(q) * s32.to(torch.bfloat16)
        c, s = c64.float(), s64.float()
        patched = q * c.to(torch.bfloat16) + _rotate_half(q) * s.to(torch.bfloat16)
        fp32 = (q.float() * c + _rotate_half(q.float()) * s).to(torch.bfloat16)
        for key, got in (("stock", stock), ("patched", patched), ("patched, fp32 rotation", fp32)):
            out[key].append((got.double() - exact).abs().max().item())
    return out


def main() -> None:
    print(f"torch {torch.__version__}; max |error| from offset {OFFSETS[0]}, {OFFSETS[1]}")
    print("rotation of bf16 q (head_dim 16):")
    for key, errors in rotation_errors().items():
        print(f"  {key:24s} " + "  ".join(f"{e:.3g}" for e in errors))
    for name in NAMES:
        print(f"{name} logits:")
        for key, errors in model_errors(name).items():
            print(f"  {key:24s} " + "  ".join(f"{e:.3g}" for e in errors))


if __name__ == "__main__":
    main()
