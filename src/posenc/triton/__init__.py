"""Triton kernels with exact angles: RoPE fused with its rows, and the rows alone (extra ``posenc[triton]``).

:func:`apply_rope` rotates q and k in one pass: each program builds the row
of one position from its int32 value with the 32-bit exact algorithm
(:mod:`posenc.exact.fixed`; the Triton code is generated from
:mod:`posenc.exact.fixed_sincos` itself, :mod:`posenc.triton._emit`), once,
and turns every head of q and k by it. The angle p·ω is never rounded to
float32 before its sine (vLLM's, FlashInfer's, TensorRT-LLM's and llama.cpp's
kernels all round it first): the rows are the NumPy float32 core's bits.

:class:`posenc.torch.RotaryEmbedding`, :class:`~posenc.torch.Timesteps` and
:class:`~posenc.torch.NeRFEncoding` use :func:`sincos_rows` for CUDA tensors
when Triton imports (:func:`use_triton`), and the torch integer operations
otherwise. With ``TRITON_INTERPRET=1`` the kernels run on CPU tensors
through Triton's interpreter (the tests do).
"""

from __future__ import annotations

import os
from typing import Any

import torch

from ..errors import PosEncError
from ..exact.fixed import fixed_ladder
from ..exact.ladder import Ladder
from .positions import check_range

__all__ = ["apply_rope", "available", "rows_unchecked", "sincos_rows", "timestep_embedding", "use_triton"]


def available() -> bool:
    """Whether Triton imports here."""
    try:
        import triton  # noqa: F401
    except ImportError:
        return False
    return True


def use_triton(device: torch.device) -> bool:
    """Whether posenc.torch builds rows on ``device`` with the Triton kernel: a CUDA device, Triton present.

    ``POSENC_TRITON=0`` in the environment turns it off (the torch integer path then serves).

    >>> use_triton(torch.device("cpu"))
    False
    """
    if device.type != "cuda" or os.environ.get("POSENC_TRITON", "1") == "0":
        return False
    return available()


def _words(ladder: Ladder, device: torch.device) -> torch.Tensor:
    fx = fixed_ladder(ladder)
    import numpy as np

    w = np.concatenate([fx.frac_words, fx.unwrap_words, fx.int_words[None, :]]).astype(np.uint32)
    return torch.from_numpy(w.view(np.int32).copy()).to(device)


def _positions32(p: torch.Tensor) -> torch.Tensor:
    """int32 or float32 positions (already inside the 32-bit range: :func:`~posenc.triton.positions.check_range`)."""
    if p.is_floating_point():
        if p.dtype == torch.float64:
            raise PosEncError("float64 positions are not held by the 32-bit kernel: pass float32 or integers")
        return p.to(torch.float32).contiguous()
    return p.to(torch.int32).contiguous()


def sincos_rows(positions: torch.Tensor, ladder: Ladder, factor: float = 1.0,
                ) -> tuple[torch.Tensor, torch.Tensor]:
    """sin and cos of ``positions[..., None]·ω`` (times ``factor``), float32 ``[..., n]``, by the Triton kernel.

    Args:
        positions: integers inside int32 or float32 (float16, bfloat16)
            with |p| < 2**31, ``[...]``, on a CUDA device (or the CPU under
            ``TRITON_INTERPRET=1``).
        ladder: the frequencies.
        factor: a static multiplier (an attention factor), rounded in once.

    Raises:
        PosEncError: for a position outside that range, NaN or ±inf (read
            before the kernel runs: never NaN rows), or float64 positions.
    """
    if positions.dtype == torch.float64:
        raise PosEncError("float64 positions are not held by the 32-bit kernel: pass float32 or integers")
    check_range(positions, "triton")
    return rows_unchecked(positions, ladder, factor)


def rows_unchecked(positions: torch.Tensor, ladder: Ladder, factor: float = 1.0, odd: bool = False,
                   ) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`sincos_rows` for positions already checked (``posenc::sincos32`` checks them before its node).

    ``odd``: float32 rounded to odd, so a cast to float16 or bfloat16 rounds the exact value once.
    """
    from .kernels import kernel_module

    p = _positions32(positions.detach())
    flat = p.reshape(-1)
    n = len(ladder)
    m = flat.shape[0]
    s = torch.empty((m, n), dtype=torch.float32, device=p.device)
    c = torch.empty_like(s)
    if m and n:
        mod = kernel_module("float" if p.is_floating_point() else "int", float(factor), odd)
        bn = max(16, 1 << (n - 1).bit_length())
        bm = max(1, min(64, 4096 // bn))
        mod.rows_kernel[((m + bm - 1) // bm,)](flat, _words(ladder, p.device), s, c, m, n, BM=bm, BN=bn)
    return s.reshape(*p.shape, n), c.reshape(*p.shape, n)


def apply_rope(q: torch.Tensor, k: torch.Tensor, positions: torch.Tensor, spec: Any, *,
               inplace: bool = False) -> tuple[torch.Tensor, torch.Tensor]:
    """q and k ``[b, h, s, d]`` rotated by exact RoPE at integer ``positions`` (``[s]`` or ``[b, s]``): one kernel.

    Args:
        q: float32, float16 or bfloat16 ``[b, h_q, s, head_dim]`` (any strides).
        k: the same dtype, ``[b, h_k, s, head_dim]`` (grouped heads welcome).
        positions: integer ``[s]`` or ``[b, s]``, each inside int32.
        spec: a :class:`posenc.RopeConfig` (layout ``"half"`` or
            ``"interleaved"``, partial rotary by ``rotary_dim``; no sections),
            or a head_dim.
        inplace: rotate q and k in place (and return them).

    Returns:
        (q, k) rotated: each pair in float32 (``x1·cos − x2·sin``,
        ``x2·cos + x1·sin``, as :func:`posenc.apply_rope`) and rounded once to
        the dtype; channels past rotary_dim pass through.

    Raises:
        PosEncError: for another dtype, shapes that do not match, a
            multi-axis spec, float positions, or a position outside int32.
    """
    from ..rope.cos_sin import default_seq_len
    from ..rope.frequencies import spec_frequencies
    from ..rope.spec import RopeConfig
    from .kernels import kernel_module

    cfg = spec if isinstance(spec, RopeConfig) else RopeConfig(int(spec))
    if cfg.multi_axis is not None:
        raise PosEncError("posenc.triton.apply_rope rotates one position axis: a multi-axis spec (sections) is not "
                          "fused here; use posenc.torch.RotaryEmbedding")
    if cfg.layout not in ("half", "interleaved"):
        raise PosEncError(f"posenc.triton.apply_rope fuses the 'half' and 'interleaved' layouts, not {cfg.layout!r}")
    ok = (torch.float32, torch.float16, torch.bfloat16)
    if q.dtype not in ok or k.dtype != q.dtype:
        raise PosEncError(f"q and k must share one of float32, float16, bfloat16, got {q.dtype} and {k.dtype}")
    if q.dim() != 4 or k.dim() != 4 or q.shape[0] != k.shape[0] or q.shape[2:] != k.shape[2:]:
        raise PosEncError(f"q and k must be [b, h, s, head_dim] with the same b, s and head_dim, got "
                          f"{list(q.shape)} and {list(k.shape)}")
    b, hq, s, d = q.shape
    if d != cfg.head_dim:
        raise PosEncError(f"q's head_dim is {d}, the spec's {cfg.head_dim}")
    if positions.is_floating_point() or tuple(positions.shape) not in ((s,), (1, s), (b, s)):
        raise PosEncError(f"positions must be integers [s] or [b, s] (s = {s}, b = {b}), got {positions.dtype} "
                          f"{list(positions.shape)}")
    wide = positions.detach().to(torch.int64)
    if wide.numel() and bool(((wide < -2**31) | (wide >= 2**31)).any()):
        raise PosEncError("positions must lie inside int32 for the 32-bit kernel")
    pos = wide.to(torch.int32).reshape(-1, s).contiguous()
    freqs = spec_frequencies(cfg, default_seq_len(cfg.scaling, wide.cpu().numpy()))  # as posenc.apply_rope
    r = int(cfg.rotary_dim or d)
    n = r // 2
    qo, ko = (q, k) if inplace else (q.clone(), k.clone())
    if q.numel() and k.numel() and n:
        mod = kernel_module("int", float(freqs.attention_factor))
        spb = 0 if pos.shape[0] == 1 else pos.stride(0)
        bn = max(16, 1 << (n - 1).bit_length())
        mod.rope_kernel[(b * s,)](
            q, k, qo, ko, pos, _words(freqs.ladder, q.device), s, hq, k.shape[1], n,
            *q.stride(), *k.stride(), *qo.stride(), *ko.stride(), spb, pos.stride(1),
            INTERLEAVED=cfg.layout == "interleaved", BF16=q.dtype == torch.bfloat16, BN=bn)
    return qo, ko


def timestep_embedding(t: torch.Tensor, dim: int, *, convention: Any = "diffusers") -> torch.Tensor:
    """:func:`posenc.timestep_embedding` of a tensor t on the GPU: ``[..., dim]`` float32, rows by the kernel.

    Args:
        t: integer steps (inside int32) or float32 (float16, bfloat16) times ``[...]``.
        dim: output channels (odd: the last is zero).
        convention: a :mod:`posenc.timesteps` preset or its name; Flux with a
            ``time_dtype`` rounding is not formed here (use
            :class:`posenc.torch.Timesteps`).

    Returns:
        ``[..., dim]`` float32: sin and cos of t·ω_k, the NumPy float32 core's
        bits (integer t; float t: the correctly rounded values, within 1 ulp).
    """
    from ..errors import check_channels
    from ..timesteps.conventions import Flux, get

    preset = get(convention)
    if isinstance(preset, Flux) and preset.time_dtype is not None:
        raise PosEncError(f"{preset!r}: time_factor·t rounded to a dtype is not formed by posenc.triton; use "
                          "posenc.torch.Timesteps")
    plan = preset.plan(check_channels(dim, "dim"))
    n = len(plan.ladder)
    parts = []
    if n:
        s, c = sincos_rows(t, plan.ladder)
        parts = [c, s] if plan.cos_first else [s, c]
    if plan.dim > 2 * n:
        parts.append(torch.zeros((*t.shape, plan.dim - 2 * n), dtype=torch.float32, device=t.device))
    return torch.cat(parts, dim=-1)
