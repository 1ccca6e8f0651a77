"""The torch rows of ``posenc bench``: modules against their floors, side by side.

- Adding the encoding to activations ``[b, s, d]``: the module's forward
  against ``x + t`` with a precomputed table (the floor).
- RoPE on q and k ``[b, n_h, s, h_d]`` with autograd on: posenc's rotation
  against ``q.clone(); k.clone()`` (the floor) and against the usual
  ``q * cos + rotate_half(q) * sin``.
"""

from __future__ import annotations

import functools
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


def producers(*, quick: bool = False) -> list[Callable[[int], list[Row]]]:
    """Row producers for :func:`posenc.bench.run` (``extra=``)."""
    if quick:
        return [_sinusoidal(2, 1024, 256), _rope(1, 4, 512, 64)]
    return [_sinusoidal(8, 4096, 1024), _rope(4, 16, 2048, 128)]
