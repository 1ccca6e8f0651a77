"""Functional RoPE for PyTorch: :func:`rope_cos_sin`, :func:`apply_rope` (exact cos/sin per call), packed positions.

For a model, :class:`posenc.torch.RotaryEmbedding` keeps the cos/sin rows
cached; these functions compute what they need on each call.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import torch

from ..errors import PosEncError
from ..rope import functions
from ..rope.spec import RopeConfig, RopeFrequencySettings, RopeSettings
from ..support.compile import host_only
from . import backend  # an attribute read per call: posenc.torch.backend may import first
from ._cache import compiling
from ._fixed import round_once
from ._memory import check_device_size

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["apply_rope", "positions_from_cu_seqlens", "rope_cos_sin"]


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



@host_only(
    "posenc.torch.apply_rope computes its cos/sin in NumPy on the host at every call, which torch.compile "
    "cannot trace: inside a compiled model use posenc.torch.RotaryEmbedding (cached rows, one graph), "
    "or compile with fullgraph=False")
def apply_rope(
    x: torch.Tensor,
    positions: Any,
    *,
    spec: RopeConfig | None = None,
    seq_len: int | None = None,
    sequence_dim: int = -2,
    xpos: Any = None,
    role: Literal["q", "k"] | None = None,
    **settings: Unpack[RopeSettings],
) -> torch.Tensor:
    """Functional RoPE, equal to :func:`posenc.apply_rope` bit for bit.

    :func:`posenc.rope.functions.apply_rope` on :data:`posenc.torch.backend.TORCH`:
    the cos/sin come from the NumPy core on the CPU each call (float64 for
    float64 x, float32 otherwise; the tables :func:`posenc.apply_rope` rotates
    by), moved to x's device: convenient and exact, but use
    :class:`~posenc.torch.RotaryEmbedding` (cached rows) inside a model.

    Args:
        x: ``[..., s, h_d]`` (or ``[..., s, n_h, h_d]`` with ``sequence_dim=-3``).
        positions: ``[s]`` or ``[b, s]`` (tensor or array-like; non-integers allowed);
            with sections ``[s, n_axes]`` or ``[b, s, n_axes]``.
        spec: a :class:`posenc.RopeConfig` holding every setting (then leave
            the settings out), as :func:`posenc.apply_rope`'s.
        seq_len, xpos, role: as :func:`posenc.apply_rope`.
        sequence_dim: -2 (``[..., s, h_d]``) or -3 (``[..., s, n_h, h_d]``).
        **settings: without a spec, its fields, as :func:`posenc.apply_rope`
            (:class:`~posenc.rope.spec.RopeSettings`; ``layout="head_half"``,
            Gemma 4's pairs, included).

    >>> import posenc
    >>> cfg = posenc.RopeConfig(4, layout="interleaved")
    >>> x = torch.ones(1, 2, 3, 4)
    >>> torch.equal(apply_rope(x, torch.arange(3), spec=cfg), apply_rope(x, torch.arange(3), layout="interleaved"))
    True
    """
    return functions.apply_rope(backend.TORCH, x, positions, spec=spec, seq_len=seq_len, xpos=xpos, role=role,
                                sequence_dim=sequence_dim, **settings)


@host_only(
    "posenc.torch.rope_cos_sin computes its cos/sin in NumPy on the host at every call, which torch.compile "
    "cannot trace: inside a compiled model use posenc.torch.RotaryEmbedding (its cos_sin method: cached rows, "
    "one graph), or compile with fullgraph=False")
def rope_cos_sin(
    positions: Any,
    head_dim: int | RopeConfig,
    *,
    seq_len: int | None = None,
    dtype: torch.dtype = torch.float32,
    **settings: Unpack[RopeFrequencySettings],
) -> tuple[torch.Tensor, torch.Tensor]:
    """(cos, sin) ``[..., r/2]`` each, on the positions' device: :func:`posenc.rope_cos_sin`'s bits.

    :func:`posenc.rope.functions.rope_cos_sin` on :data:`posenc.torch.backend.TORCH`,
    as :func:`apply_rope`: the rows NumPy's, computed on the CPU (the rows
    :class:`~posenc.torch.RotaryEmbedding` caches), moved to the positions' device.

    Args:
        positions: a tensor (any real dtype, any device) or array-like ``[...]``
            (``[..., n_axes]`` with sections); non-integers allowed.
        head_dim, seq_len, settings: as :func:`posenc.rope_cos_sin`.
        dtype: torch.float16, bfloat16 (the float64 rows rounded once), float32 or float64.

    Raises:
        PosEncError: what :func:`posenc.rope_cos_sin` refuses, a bad dtype or
            a positions tensor on the meta device, before any work.

    >>> cos, sin = rope_cos_sin(torch.tensor([0, 1]), 4, base=100.0, dtype=torch.float64)
    >>> cos.round(decimals=4).tolist()
    [[1.0, 1.0], [0.5403, 0.995]]
    """
    if not isinstance(dtype, torch.dtype) or dtype not in backend._HOST_DTYPES:  # a tensor is not hashed
        raise PosEncError(f"dtype must be torch.float16, bfloat16, float32 or float64, got {dtype!r}")
    device = positions.device if isinstance(positions, torch.Tensor) else None
    if device is not None and device.type == "meta":
        raise PosEncError("positions is a tensor on the meta device, which holds no values")
    cos, sin = functions.rope_cos_sin(backend.TORCH, positions, head_dim, seq_len=seq_len,
                                      dtype=backend._HOST_DTYPES[dtype], **settings)
    rows = [round_once(r, dtype) if r.dtype != dtype else r for r in (cos, sin)]
    if device is not None and device.type != "cpu":
        rows = [r.to(device) for r in rows]
    return rows[0], rows[1]
