"""Positions and offsets asked of a torch position table: every check written once, into a :class:`Request`.

A caller passes ``positions`` (a tensor ``[s]`` or ``[b, s]``) or an
``offset`` (an int, or an integer tensor ``[]`` / ``[b]``);
:func:`parse_request` checks the shapes and dtypes always and the values in
eager mode only (inside torch.compile nothing is synced), and returns a run
``first … first+s-1`` or an index tensor, with the bounds the cache needs to
decide whether to grow.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from ..errors import MAX_POSITION, PosEncError, check_int
from ..rows.window import check_positions_held

__all__ = ["Request", "check_positions_held", "parse_request", "position_bounds"]


@dataclass(frozen=True)
class Request:
    """Validated positions: a run ``first … first+s-1`` (``index`` None) or an index ``[s]`` / ``[b, s]``."""

    s: Any
    first: Any = 0
    index: torch.Tensor | None = None
    lo: int = 0  # bounds, eager only
    hi: int = 0

    @property
    def count(self) -> int:
        return int(self.s) if self.index is None else int(self.index.numel())


def parse_request(s: Any, positions: Any, offset: Any, batch: int | None, eager: bool) -> Request:
    """The checks on positions and offsets, written once."""
    offset_given = isinstance(offset, torch.Tensor) or (offset is not None and not _is_zero(offset))
    if positions is not None and offset_given:
        raise PosEncError(f"pass either positions or offset, not both (got offset={offset!r})")
    if positions is not None:
        return _positions_request(s, positions, batch, eager)
    if isinstance(offset, torch.Tensor):
        return _tensor_offset_request(s, offset, batch, eager)
    if not eager:
        return Request(s=s, first=int(offset) if isinstance(offset, np.integer) else offset)
    first = check_int(offset, "offset")
    if max(abs(first), abs(first + s - 1)) >= MAX_POSITION:
        raise PosEncError(f"positions offset … offset+s-1 must satisfy |p| < 2**53, got offset={first}")
    return Request(s=s, first=first, lo=first, hi=first + s)


def _positions_request(s: Any, positions: Any, batch: int | None, eager: bool) -> Request:
    if not isinstance(positions, torch.Tensor):
        raise PosEncError(f"positions must be a torch.Tensor, got {type(positions).__name__}")
    if positions.dtype == torch.bool or positions.is_complex():
        raise PosEncError(f"positions must hold integers, got dtype {positions.dtype}")
    shape = tuple(positions.shape)
    if not (shape == (s,) or (batch is not None and len(shape) == 2 and shape[1] == s and shape[0] in (1, batch))):
        want = f"[s] = [{s}]" + ("" if batch is None else f" or [b, s] = [{batch}, {s}]")
        raise PosEncError(f"positions must have shape {want}, got {list(shape)}")
    lo, hi = position_bounds(positions) if eager else (0, 0)
    index = positions if _is_int_tensor(positions) else positions.to(torch.float64).to(torch.long)
    return Request(s=s, index=index, lo=lo, hi=hi)


def _tensor_offset_request(s: Any, offset: torch.Tensor, batch: int | None, eager: bool) -> Request:
    if not _is_int_tensor(offset):
        raise PosEncError(f"a tensor offset must hold integers, got dtype {offset.dtype}")
    if offset.dim() == 1 and batch is not None and offset.shape[0] in (1, batch):
        index = offset.to(torch.long)[:, None]
    elif offset.dim() == 0:
        index = offset.to(torch.long)
    else:
        want = "[]" if batch is None else f"[] or [b] = [{batch}]"
        rows = "[s]" if batch is None else "[s] or [b, s]"
        raise PosEncError(f"a tensor offset must have shape {want}, got {list(offset.shape)} (for {rows} rows)")
    index = index + torch.arange(s, device=offset.device)
    if not eager:
        return Request(s=s, index=index)
    lo, hi = position_bounds(offset, "offset")
    check_positions_held(lo, hi - 1 + s)
    return Request(s=s, index=index, lo=lo, hi=hi - 1 + s)


def _is_int_tensor(t: torch.Tensor) -> bool:
    return not (t.dtype == torch.bool or t.is_complex() or t.is_floating_point())


def _is_zero(offset: Any) -> bool:
    try:
        return bool(offset == 0)
    except (TypeError, ValueError):
        return False


def position_bounds(positions: torch.Tensor, name: str = "positions") -> tuple[int, int]:
    """Validate a positions tensor and return ``(min, max + 1)`` as Python ints.

    Integer tensors, or floating tensors holding integers, with every
    ``|p| < 2**53``. One device sync; eager only.

    Raises:
        PosEncError: for bool or complex tensors, NaN, infinities,
            non-integers or ``|p| >= 2**53``, naming the first bad value.
    """
    if not isinstance(positions, torch.Tensor):
        raise PosEncError(f"{name} must be a torch.Tensor, got {type(positions).__name__}")
    if positions.dtype == torch.bool or positions.is_complex():
        raise PosEncError(f"{name} must hold integers, got dtype {positions.dtype}")
    if positions.numel() == 0:
        return 0, 0
    p = positions.detach()
    if p.is_floating_point():
        q = p.to(torch.float64)
        bad = ~torch.isfinite(q) | (q != torch.trunc(q)) | (q.abs() >= MAX_POSITION)
        lo_hi = torch.stack([bad.any().to(torch.float64), q.min(), q.max()]).tolist()
        if lo_hi[0]:
            value = q[bad][0].item()
            raise PosEncError(
                f"{name} must be finite integers with |p| < 2**53 (the table is indexed by "
                f"position), got {value!r}"
            )
        return int(lo_hi[1]), int(lo_hi[2]) + 1
    lo, hi = (int(v) for v in torch.stack([p.min(), p.max()]).tolist())
    worst = hi if abs(hi) >= abs(lo) else lo
    if abs(worst) >= 2**53:
        raise PosEncError(f"{name} must satisfy |p| < 2**53, got {worst}")
    return lo, hi + 1
