"""One-pass RoPE for CPU tensors: the numba kernels of :mod:`posenc.torch._kernels` with autograd.

Used by :mod:`posenc.torch.rope` when it can be: eager mode (never inside
``torch.compile``, which fuses the plain formula itself), CPU tensors,
float32 or bfloat16, ``[..., s, h_d]`` layout, and numba installed (the
``fast`` extra). Otherwise :func:`rotate` returns None and the caller runs
the plain formula. Both give the same bits: the kernels perform the plain
formula's float32 operations in the same order, forward and backward.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import torch

from .._concurrency import default_threads, run_spans, spans
from ._cache import compiling
from ._kernels import kernels

__all__ = ["enabled", "rotate"]

#: Set to False to force the plain formula (tests compare the two).
enabled = True

_DTYPES = (torch.float32, torch.bfloat16)


def _launch(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cfg: tuple[bool, int, int], sign: float
) -> torch.Tensor:
    half, rot, heads = cfg
    x = x.detach().contiguous()
    s, d = x.shape[-2], x.shape[-1]
    xv = x.view(-1, s, d)
    out = torch.empty_like(xv)
    cs = _pairs(cos.detach(), sin.detach(), s).numpy()
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


def _pairs(cos: torch.Tensor, sin: torch.Tensor, s: int) -> torch.Tensor:
    """cos and sin as one ``[g, s, 2, n]`` array: a view of the cache's rows when they are its halves."""
    n = cos.shape[-1]
    cos3 = cos.reshape(-1, s, n)
    sin3 = sin.reshape(-1, s, n)
    g = cos3.shape[0]
    if (
        cos3.stride() == sin3.stride() == (s * 2 * n, 2 * n, 1)
        and sin3.data_ptr() == cos3.data_ptr() + n * cos3.element_size()
    ):
        return torch.as_strided(cos3, (g, s, 2, n), (s * 2 * n, 2 * n, n, 1))
    return torch.stack([cos3, sin3], dim=2).contiguous()


class _Rotate(torch.autograd.Function):
    """y = R(θ)x per pair; the gradient of a rotation is the inverse rotation."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, cfg: Any) -> torch.Tensor:
        ctx.save_for_backward(cos, sin)
        ctx.cfg = cfg
        return _launch(x, cos, sin, cfg, 1.0)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> Any:
        cos, sin = ctx.saved_tensors
        return _launch(grad, cos, sin, ctx.cfg, -1.0), None, None, None


def rotate(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, rotary_dim: int
) -> torch.Tensor | None:
    """Rotate x ``[..., s, h_d]`` by float32 cos/sin ``[s, r/2]`` or ``[b, s, r/2]``, or None if not fused here.

    With ``[b, s, r/2]`` tables, x must be ``[b, ..., s, h_d]`` (heads in between).
    """
    if not enabled or compiling() or x.device.type != "cpu" or x.dtype not in _DTYPES or x.dim() < 2:
        return None
    if cos.dtype != torch.float32 or cos.device.type != "cpu" or cos.requires_grad or sin.requires_grad:
        return None
    s = x.shape[-2]
    if cos.dim() == 2:
        heads = 1
    elif cos.dim() == 3 and x.dim() >= 3 and cos.shape[0] == x.shape[0]:
        heads = int(np.prod(x.shape[1:-2], dtype=np.int64))
    else:
        return None
    if cos.shape[-2] != s or cos.shape[-1] != rotary_dim // 2 or 0 in x.shape:
        return None
    if kernels() is None:
        return None
    out: torch.Tensor = _Rotate.apply(x, cos, sin, (layout == "half", rotary_dim, heads))
    return out
