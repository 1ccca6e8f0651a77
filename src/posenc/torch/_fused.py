"""One-pass RoPE for CPU tensors: the numba kernels of :mod:`posenc.torch._kernels` with autograd.

Used by :mod:`posenc.torch.rope` when it can be: eager mode (never inside
``torch.compile``, which fuses the plain formula itself), CPU tensors,
float32 or bfloat16, ``[..., s, h_d]`` layout, and numba installed (the
``fast`` extra). Otherwise :func:`rotate` returns None and the caller runs
the plain formula. Both give the same bits: the kernels perform the plain
formula's float32 operations in the same order, forward and backward.

The kernels receive the cache's rows whole (``[g, s, 2, r/2]``: cos and sin
side by side, as the cache stores them) and the pair layout; nothing is
reassembled from pointers. The backward is the same Function with the angle
negated, so it is differentiable in turn: double backward (``create_graph``)
works and matches the plain formula.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from ..support.concurrency import default_threads, run_spans, spans
from ..support.vocabulary import RopeLayout
from ._cache import compiling
from ._kernels import kernels

__all__ = ["enabled", "rotate"]

#: Set to False to force the plain formula (tests compare the two).
enabled = True

_DTYPES = (torch.float32, torch.bfloat16)


def _launch(x: torch.Tensor, rows: torch.Tensor, cfg: tuple[bool, int, int], sign: float) -> torch.Tensor:
    half, rot, heads = cfg
    x = x.detach().contiguous()
    s, d = x.shape[-2], x.shape[-1]
    xv = x.view(-1, s, d)
    out = torch.empty_like(xv)
    cs = rows.detach().reshape(-1, s, 2, rows.shape[-1]).contiguous().numpy()  # a view when the rows are
    f32, bf16 = kernels()  # type: ignore[misc]
    kern: Any
    if x.dtype == torch.bfloat16:
        xa = xv.view(torch.int16).numpy().view(np.uint16)
        oa = out.view(torch.int16).numpy().view(np.uint16)
        kern = bf16
    else:
        xa, oa, kern = xv.numpy(), out.numpy(), f32
    bh = xv.shape[0]
    run_spans(spans(bh, default_threads() if bh * s * d >= 1 << 16 else 1),
              lambda a, z: kern(xa, cs, oa, heads, half, rot, sign, a, z))
    return out.view(x.shape)


class _Rotate(torch.autograd.Function):
    """y = R(sign·θ)x per pair; the gradient of a rotation is the inverse rotation (this Function again)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, rows: torch.Tensor, cfg: Any, sign: float) -> torch.Tensor:
        ctx.save_for_backward(rows)
        ctx.cfg = cfg
        ctx.sign = sign
        return _launch(x, rows, cfg, sign)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        (rows,) = ctx.saved_tensors
        back: torch.Tensor = _Rotate.apply(grad, rows, ctx.cfg, -ctx.sign)
        return back, None, None, None


def rotate(x: torch.Tensor, rows: torch.Tensor, layout: RopeLayout, rotary_dim: int) -> torch.Tensor | None:
    """Rotate x ``[..., s, h_d]`` by float32 rows ``[s, 2, r/2]`` or ``[b, s, 2, r/2]``, or None if not fused here.

    ``rows[..., 0, :]`` is cos and ``rows[..., 1, :]`` sin. With ``[b, ...]``
    rows, x must be ``[b, ..., s, h_d]`` (heads in between).
    """
    if not enabled or compiling() or layout == "head_half" or x.device.type != "cpu" or x.dtype not in _DTYPES \
            or x.dim() < 2:
        return None
    if rows.dtype != torch.float32 or rows.device.type != "cpu" or rows.requires_grad:
        return None
    s = x.shape[-2]
    if rows.dim() == 3:
        heads = 1
    elif rows.dim() == 4 and x.dim() >= 3 and rows.shape[0] == x.shape[0]:
        heads = int(np.prod(x.shape[1:-2], dtype=np.int64))
    else:
        return None
    if rows.shape[-3] != s or rows.shape[-2] != 2 or rows.shape[-1] != rotary_dim // 2 or 0 in x.shape:
        return None
    if kernels() is None:
        return None
    out: torch.Tensor = _Rotate.apply(x, rows, (layout == "half", rotary_dim, heads), 1.0)
    return out
