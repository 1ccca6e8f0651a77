"""The torch rows of ``posenc bench``: modules against their floors, side by side.

- Adding the encoding to activations ``[b, s, d]``: the module's forward
  against ``x + t`` with a precomputed table (the floor).
- RoPE on q and k ``[b, n_h, s, h_d]`` with autograd on: posenc's rotation
  against ``q.clone(); k.clone()`` (the floor) and against the usual
  ``q * cos + rotate_half(q) * sin``.
- RoPE at real positions (EVA-02's and DINOv3's fractional patch
  coordinates, :func:`posenc.eva02_coords`, :func:`posenc.dinov3_coords`):
  :class:`posenc.torch.RotaryEmbedding` with the preset
  (:func:`posenc.rope_preset`), which computes the exact rows at every call,
  against each model's own float32 formula written here from its source
  (rows and rotation, inference), all three timed side by side in one run,
  so ``posenc / formula`` is the two rows' ``median_ms`` divided (the row
  ``posenc RotaryEmbedding / formula``, the formula's time as its floor). Errors are
  against :func:`posenc.apply_rope` in float64 at the float64 coordinates.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import torch

from .measure import time_in_groups, time_side_by_side
from .report import Row

__all__ = ["producers"]


def _sinusoidal(b: int, s: int, d: int) -> Callable[[int], list[Row]]:
    def produce(repeats: int) -> list[Row]:
        from ..torch.sinusoidal import SinusoidalPositionalEncoding

        op = f"x + PE [{b},{s},{d}] f32"
        x = torch.randn(b, s, d)
        mod = SinusoidalPositionalEncoding(d, max_len=s)
        t = mod.cache.lookup(s).clone()
        with torch.no_grad():
            ms = time_side_by_side({"floor: x + t": lambda: x + t, "posenc module": lambda: mod(x)}, repeats)
        floor = ms["floor: x + t"]
        mine = ms["posenc module"]
        return [Row(op, "floor: x + t", floor, 1.0, floor_ms=floor),
                Row(op, "posenc module", mine, mine / floor, floor_ms=floor)]

    return produce


def _rope(b: int, h: int, s: int, d: int) -> Callable[[int], list[Row]]:
    def produce(repeats: int) -> list[Row]:
        try:
            from ..torch.rope import RotaryEmbedding
        except ImportError:
            return []
        rows: list[Row] = []
        for dtype in (torch.float32, torch.bfloat16):
            for layout in ("half", "interleaved"):
                op = f"RoPE q,k [{b},{h},{s},{d}] {str(dtype)[6:]} {layout}"
                q = torch.randn(b, h, s, d, dtype=dtype, requires_grad=True)
                k = torch.randn(b, h, s, d, dtype=dtype, requires_grad=True)
                rope = RotaryEmbedding(d, layout=layout, max_len=s)
                cos, sin = _eager_tables(rope, s, layout)

                fl = "floor: q.clone(); k.clone()"
                ms, floor_of = time_in_groups(
                    (fl, functools.partial(_clone2, q, k)),
                    {"posenc RotaryEmbedding": functools.partial(rope, q, k)},
                    {"q*cos + rotate_half(q)*sin": functools.partial(_naive2, q, k, cos, sin, layout)},
                    repeats=repeats,
                )
                rows += [Row(op, name, v, v / floor_of[name], floor_ms=floor_of[name]) for name, v in ms.items()]
        return rows

    return produce


def _clone2(q: torch.Tensor, k: torch.Tensor) -> Any:
    return q.clone(), k.clone()


def _naive2(q: torch.Tensor, k: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str) -> Any:
    return _rotate_eager(q, cos, sin, layout), _rotate_eager(k, cos, sin, layout)


def _eager_tables(rope: Any, s: int, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    cos, sin = rope.cos_sin(s)
    if layout == "half":  # the usual [c | c] layout of HF's rotate_half
        return torch.cat([cos, cos], -1), torch.cat([sin, sin], -1)
    return cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)


def _rotate_eager(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str) -> torch.Tensor:
    xf = x.float()
    if layout == "half":
        x1, x2 = xf.chunk(2, dim=-1)
        rot = torch.cat([-x2, x1], dim=-1)
    else:
        rot = torch.stack([-xf[..., 1::2], xf[..., 0::2]], dim=-1).flatten(-2)
    return (xf * cos + rot * sin).to(x.dtype)


def _timm_rot(x: torch.Tensor) -> torch.Tensor:
    return torch.stack([-x[..., 1::2], x[..., ::2]], -1).reshape(x.shape)


def _eva02_formula(q: torch.Tensor, k: torch.Tensor, coords: torch.Tensor, head_dim: int) -> Any:
    """timm ``timm/layers/pos_embed_sincos.py``, float32 throughout: ``freq_bands(head_dim // 4,
    temperature=10000, step=1)`` (1 / 10000**(arange(n)/n)), ``build_fourier_pos_embed`` (grid[..., None] ·
    bands, sin and cos), ``build_rotary_pos_embed`` (reshape to [N, -1], ``repeat_interleave(2, -1)``) and
    ``apply_rot_embed_cat`` (x·cos + rot(x)·sin, rot = stack([-x[..., 1::2], x[..., ::2]], -1))."""
    n = head_dim // 4
    bands = 1.0 / (10000.0 ** (torch.arange(0, n, 1, dtype=torch.float32) / n))
    pos = coords.unsqueeze(-1) * bands  # [N, 2, n]
    sin = pos.sin().reshape(coords.shape[0], -1).repeat_interleave(2, -1)
    cos = pos.cos().reshape(coords.shape[0], -1).repeat_interleave(2, -1)
    return q * cos + _timm_rot(q) * sin, k * cos + _timm_rot(k) * sin


def _dinov3_formula(q: torch.Tensor, k: torch.Tensor, coords: torch.Tensor, head_dim: int) -> Any:
    """facebookresearch/dinov3 ``dinov3/layers/rope_position_encoding.py``, float32: periods
    ``base ** (2·arange(D/4) / (D/2))`` (base 100), angles ``2π·coords[:, :, None] / periods`` flattened and
    ``tile(2)``; ``dinov3/layers/attention.py`` ``rope_apply``: x·cos + rope_rotate_half(x)·sin."""
    d4 = head_dim // 4
    periods = 100.0 ** (2 * torch.arange(d4, dtype=torch.float32) / (head_dim // 2))
    angles = (2 * math.pi * coords[:, :, None] / periods[None, None, :]).flatten(1, 2).tile(2)
    cos, sin = torch.cos(angles), torch.sin(angles)

    def rotate_half(x: torch.Tensor) -> torch.Tensor:
        x1, x2 = x.chunk(2, dim=-1)
        return torch.cat([-x2, x1], dim=-1)

    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def _rope_real(model: str, side: int, heads: int, head_dim: int = 64) -> Callable[[int], list[Row]]:
    def produce(repeats: int) -> list[Row]:
        import numpy as np

        from ..rope.apply import apply_rope
        from ..rope.presets import dinov3_coords, eva02_coords, rope_preset
        from ..torch.rope import RotaryEmbedding

        cfg = rope_preset(model, head_dim=head_dim)
        if model == "eva02":  # a fine-tuned grid twice the pretraining one: coordinates 0, 0.5, 1, …
            exact = eva02_coords((side, side), (side // 2, side // 2))
            theirs, plain = torch.from_numpy(exact).float(), _eva02_formula
        else:  # DINOv3's own coordinates c in [-1, 1]; posenc takes 2π·c (dinov3_coords), rounded to float32
            exact = dinov3_coords(side, side)
            axis = (2 * (torch.arange(side, dtype=torch.float32) + 0.5) / side - 1)
            theirs, plain = torch.stack(torch.meshgrid(axis, axis, indexing="ij"), -1).reshape(-1, 2), \
                _dinov3_formula
        s = side * side
        ours = torch.from_numpy(exact).float()
        gen = torch.Generator().manual_seed(0)
        q = torch.randn(1, heads, s, head_dim, generator=gen)
        k = torch.randn(1, heads, s, head_dim, generator=gen)
        rope = RotaryEmbedding(cfg)
        name = f"{model} f32 formula ({'timm' if model == 'eva02' else 'dinov3'})"
        fns: dict[str, Callable[[], Any]] = {
            "floor: q.clone(); k.clone()": functools.partial(_clone2, q, k),
            "posenc RotaryEmbedding": lambda: rope(q, k, positions=ours),
            name: lambda: plain(q, k, theirs, head_dim),
        }
        with torch.no_grad():
            ms = time_side_by_side(fns, repeats)
            want = apply_rope(q.double().numpy(), exact, spec=cfg)
            errs = {m: float(np.max(np.abs(fn()[0].double().numpy() - want))) for m, fn in fns.items()
                    if not m.startswith("floor")}
        op = f"RoPE q,k [1,{heads},{s},{head_dim}] f32 {model} real positions"
        floor = ms["floor: q.clone(); k.clone()"]
        rows = [Row(op, m, v, v / floor, max_abs=errs.get(m), floor_ms=floor) for m, v in ms.items()]
        mine_ms, theirs_ms = ms["posenc RotaryEmbedding"], ms[name]
        return [*rows, Row(op, "posenc RotaryEmbedding / formula", mine_ms, mine_ms / theirs_ms, floor_ms=theirs_ms)]

    return produce


def producers(*, quick: bool = False) -> list[Callable[[int], list[Row]]]:
    """Row producers for :func:`posenc.bench.run` (``extra=``)."""
    if quick:
        return [_sinusoidal(2, 1024, 256), _rope(1, 4, 512, 64), _rope_real("eva02", 16, 4),
                _rope_real("dinov3", 16, 4)]
    return [_sinusoidal(8, 4096, 1024), _rope(4, 16, 2048, 128), _rope_real("eva02", 32, 16),
            _rope_real("dinov3", 32, 16)]
