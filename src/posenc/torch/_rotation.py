"""The rotation of q and k by cos/sin rows, shared by :class:`~posenc.torch.RotaryEmbedding` and the functional RoPE.

Shapes as :mod:`posenc.torch.rope`: q and k ``[..., s, h_d]`` (``sequence_dim=-2``)
or ``[..., s, n_h, h_d]`` (``-3``); cos and sin ``[s, r/2]`` or ``[b, s, r/2]``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..errors import PosEncError
from ..support.vocabulary import RopeLayout

__all__ = [
    "FLOATS", "batch_size", "broadcast_rows", "check_qk", "check_sequence_dim", "rotate_pairs", "table_dtype",
]

#: the dtypes q, k and x may have
FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)


def table_dtype(x: torch.Tensor) -> torch.dtype:
    """float64 rows for float64 tensors (the float64 math of posenc.apply_rope), float32 otherwise."""
    return torch.float64 if x.dtype == torch.float64 else torch.float32


def check_sequence_dim(sequence_dim: Any) -> int:
    """``sequence_dim`` as an int, -2 or -3, or PosEncError naming both layouts."""
    if not isinstance(sequence_dim, (int, np.integer)) or isinstance(sequence_dim, (bool, np.bool_)) \
            or sequence_dim not in (-2, -3):  # an int: a tensor or array would compare element by element
        raise PosEncError(
            f"sequence_dim must be -2 (q/k [b, n_h, s, h_d]) or -3 ([b, s, n_h, h_d]), got {sequence_dim!r}"
        )
    return int(sequence_dim)


def check_qk(name: str, x: Any, head_dim: int, sequence_dim: int) -> None:
    """Raise unless ``x`` is a float tensor with room for s (per ``sequence_dim``) and ``h_d = head_dim``."""
    if not isinstance(x, torch.Tensor) or x.dtype not in FLOATS:
        what = f"a {x.dtype} tensor" if isinstance(x, torch.Tensor) else type(x).__name__
        raise PosEncError(f"{name} must be a float16/bfloat16/float32/float64 tensor, got {what}")
    if x.dim() < -sequence_dim or x.shape[-1] != head_dim:
        want = "[..., s, h_d]" if sequence_dim == -2 else "[..., s, n_h, h_d]"
        raise PosEncError(f"{name} must be {want} with h_d = {head_dim}, got shape {tuple(x.shape)}")


def batch_size(x: torch.Tensor) -> int | None:
    """The batch size that ``[b, s]`` positions pair with: the dim before heads and s (4-D and up)."""
    return int(x.shape[-4]) if x.dim() >= 4 else None


def broadcast_rows(table: torch.Tensor, x: torch.Tensor, sequence_dim: int, batched: bool) -> torch.Tensor:
    """cos or sin ``[s, n]`` / ``[b, s, n]`` shaped to broadcast against x's pairs."""
    if sequence_dim == -3:
        table = table.unsqueeze(-2)  # [(b,) s, 1, n]
    elif batched:
        table = table.unsqueeze(-3)  # [b, 1, s, n]
    if batched and x.dim() < table.dim():
        raise PosEncError(f"[b, s] positions need a batch dimension in x, got shape {tuple(x.shape)}")
    return table


def rotate_pairs(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: RopeLayout,
                 rotary_dim: int) -> torch.Tensor:
    """(x1·cos - x2·sin, x2·cos + x1·sin) per pair, in float32 (float64 for float64 x), back in x.dtype.

    ``layout`` is a :data:`posenc.support.vocabulary.RopeLayout`: the pairs of the
    first rotary_dim channels (``half``, ``interleaved``), or ``head_half``'s
    (i, i + h_d/2) for i < rotary_dim/2 (:func:`posenc.rope.scaling.proportional.rotate_head_half`).
    """
    ct = torch.float64 if x.dtype == torch.float64 else torch.float32
    c = cos.to(ct)
    s = sin.to(ct)
    n = rotary_dim // 2
    if layout == "head_half":
        h = x.shape[-1]
        if h % 2 or n > h // 2:
            raise PosEncError(f"layout 'head_half' needs an even head_dim >= rotary_dim, got {h} and {rotary_dim}")
        a, b = x[..., :n].to(ct), x[..., h // 2:h // 2 + n].to(ct)
        o1, o2 = (a * c - b * s).to(x.dtype), (b * c + a * s).to(x.dtype)
        return torch.cat([o1, x[..., n:h // 2], o2, x[..., h // 2 + n:]], dim=-1)
    if layout == "half":
        x1, x2 = x[..., :n], x[..., n:rotary_dim]
    else:
        x1, x2 = x[..., 0:rotary_dim:2], x[..., 1:rotary_dim:2]
    a = x1.to(ct)
    b = x2.to(ct)
    o1 = a * c - b * s
    o2 = b * c + a * s
    if layout == "half":
        out = torch.cat([o1, o2], dim=-1)
    else:
        out = torch.stack([o1, o2], dim=-1).flatten(-2)
    out = out.to(x.dtype)
    if rotary_dim < x.shape[-1]:
        out = torch.cat([out, x[..., rotary_dim:]], dim=-1)
    return out
