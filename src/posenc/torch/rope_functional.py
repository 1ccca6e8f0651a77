"""Functional RoPE for PyTorch: :func:`apply_rope` (exact cos/sin per call) and packed-batch positions.

For a model, :class:`posenc.torch.RotaryEmbedding` keeps the cos/sin rows
cached; these functions compute what they need on each call.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import torch

from ..errors import PosEncError, check_positions
from ..rope.apply import check_head_dim_of_x, spec_cos_sin
from ..rope.sections import Sections
from ..rope.spec import RopeConfig, spec_of
from ..support.arguments import default
from ..support.vocabulary import LadderSharing, RopeLayout, SectionLayout
from ._cache import compiling
from ._memory import check_device_size
from ._rotation import FLOATS, broadcast_rows, check_sequence_dim, rotate_pairs

__all__ = ["apply_rope", "positions_from_cu_seqlens"]


def positions_from_cu_seqlens(cu_seqlens: torch.Tensor) -> torch.Tensor:
    """Positions of a packed batch: 0 … len_j - 1 for each sequence j, ``[total]``.

    ``cu_seqlens`` is flash-attn's ``[n + 1]`` cumulative lengths (0, l0,
    l0 + l1, …); the result restarts at 0 where each sequence starts.

    >>> positions_from_cu_seqlens(torch.tensor([0, 3, 5])).tolist()
    [0, 1, 2, 0, 1]
    """
    if not isinstance(cu_seqlens, torch.Tensor) or cu_seqlens.dtype.is_floating_point or cu_seqlens.is_complex() \
            or cu_seqlens.dtype == torch.bool or cu_seqlens.dim() != 1 or cu_seqlens.numel() < 1:
        raise PosEncError(f"cu_seqlens must be a 1-D integer tensor [n + 1], got {cu_seqlens!r}"[:200])
    cu = cu_seqlens.to(torch.long)
    lengths = cu[1:] - cu[:-1]
    if not compiling():
        if cu.is_meta:
            raise PosEncError("cu_seqlens on the meta device has no values: the total length is unknown")
        if int(cu[0]) != 0 or bool((lengths < 0).any()):
            raise PosEncError(f"cu_seqlens must start at 0 and never decrease, got {cu_seqlens.tolist()}"[:200])
        total = int(cu[-1])  # the output and each token's start, int64 [total]
        check_device_size((total,), torch.int64, "positions of cu_seqlens", cu.device, 2 * total * 8)
    else:  # no sync in a graph: the same check, asserted on the device
        torch._assert_async((cu[0] == 0) & (lengths >= 0).all(),
                            "posenc.torch.positions_from_cu_seqlens: cu_seqlens must start at 0 and never decrease")
    starts = torch.repeat_interleave(cu[:-1], lengths)  # [total]: each token's sequence start
    return torch.arange(starts.shape[0], device=cu.device) - starts



@torch.compiler.disable(reason=(
    "posenc.torch.apply_rope computes its cos/sin in NumPy on the host at every call, which torch.compile "
    "cannot trace: inside a compiled model use posenc.torch.RotaryEmbedding (cached rows, one graph), "
    "or compile with fullgraph=False"))
def apply_rope(
    x: torch.Tensor,
    positions: Any,
    *,
    base: float = default(10000.0),
    scaling: Any = None,
    layout: RopeLayout = default("half"),
    rotary_dim: int | None = None,
    seq_len: int | None = None,
    sequence_dim: int = -2,
    sections: Any = None,
    section_layout: SectionLayout = default("contiguous"),
    ladder: LadderSharing = default("shared"),
    xpos: Any = None,
    role: Literal["q", "k"] | None = None,
    spec: RopeConfig | None = None,
) -> torch.Tensor:
    """Functional RoPE, equal to :func:`posenc.apply_rope` bit for bit.

    The cos/sin come from the NumPy core on the CPU each call (float64 for
    float64 x, float32 otherwise; :func:`posenc.rope.apply.spec_cos_sin`, the
    tables :func:`posenc.apply_rope` rotates by): convenient and exact, but
    use :class:`~posenc.torch.RotaryEmbedding` (cached rows) inside a model.

    Args:
        x: ``[..., s, h_d]`` (or ``[..., s, n_h, h_d]`` with ``sequence_dim=-3``).
        positions: ``[s]`` or ``[b, s]`` (tensor or array-like; non-integers allowed);
            with sections ``[s, n_axes]`` or ``[b, s, n_axes]``.
        spec: a :class:`posenc.RopeConfig` holding every setting (then leave
            base … ladder out), as :func:`posenc.apply_rope`'s.
        base, scaling, layout, rotary_dim, seq_len, sections, section_layout, ladder, xpos, role: as
            :func:`posenc.apply_rope` (``layout="head_half"``, Gemma 4's pairs, included).

    >>> import posenc
    >>> cfg = posenc.RopeConfig(4, layout="interleaved")
    >>> x = torch.ones(1, 2, 3, 4)
    >>> torch.equal(apply_rope(x, torch.arange(3), spec=cfg), apply_rope(x, torch.arange(3), layout="interleaved"))
    True
    """
    sd = check_sequence_dim(sequence_dim)
    if not isinstance(x, torch.Tensor) or x.dtype not in FLOATS:
        raise PosEncError(f"x must be a float16/bfloat16/float32/float64 tensor, got {type(x).__name__}")
    if x.dim() < -sd:
        raise PosEncError(f"x must be [..., s, h_d] (sequence_dim {sd}), got shape {tuple(x.shape)}")
    check_head_dim_of_x(int(x.shape[-1]))
    cfg = spec_of(spec, x.shape[-1], base=base, scaling=scaling, layout=layout, rotary_dim=rotary_dim,
                  sections=sections, section_layout=section_layout, ladder=ladder)
    if isinstance(positions, torch.Tensor):
        p = positions.detach().cpu()
        positions = (p.to(torch.float64) if p.is_floating_point() else p).numpy()
    pos = check_positions(positions)
    s = x.shape[sd]
    _check_positions(pos, x, s, cfg.multi_axis)
    ct = np.dtype(np.float64) if x.dtype == torch.float64 else np.dtype(np.float32)
    # xPos's factors are judged against what q or k will be: bfloat16 as float32 (NumPy has no bfloat16)
    like = np.dtype(str(x.dtype).removeprefix("torch.")) if x.dtype != torch.bfloat16 else np.dtype(np.float32)
    cos, sin = spec_cos_sin(pos, cfg, seq_len, xpos, role, ct, like)
    batched = cos.ndim == 3
    c = broadcast_rows(torch.from_numpy(np.ascontiguousarray(cos)).to(x.device), x, sd, batched)
    sn = broadcast_rows(torch.from_numpy(np.ascontiguousarray(sin)).to(x.device), x, sd, batched)
    return rotate_pairs(x, c, sn, cfg.layout, int(cfg.rotary_dim or cfg.head_dim))


def _check_positions(pos: np.ndarray, x: torch.Tensor, s: int, sec: Sections | None) -> None:
    """Raise unless ``pos`` is ``[s]`` / ``[b, s]`` (``[(b,) s, n_axes]`` with sections) with a b that x has."""
    if sec is None and (pos.ndim not in (1, 2) or pos.shape[-1] != s):
        raise PosEncError(f"positions must be [s] or [b, s] with s = {s}, got shape {pos.shape}")
    if sec is not None and (pos.ndim not in (2, 3) or pos.shape[-2:] != (s, sec.n_axes)):
        raise PosEncError(f"positions for sections {sec.shown} must be [s, {sec.n_axes}] or [b, s, {sec.n_axes}] "
                          f"with s = {s}, got shape {pos.shape}")
    batch_ndim = 2 if sec is None else 3
    if pos.ndim == batch_ndim and (x.dim() < 4 or pos.shape[0] not in (1, x.shape[-4])):
        raise PosEncError(
            f"batched positions {pos.shape} need x with a batch dimension b = {pos.shape[0]} before the heads "
            f"([b, n_h, s, h_d] or [b, s, n_h, h_d]), got x of shape {tuple(x.shape)}"
        )
