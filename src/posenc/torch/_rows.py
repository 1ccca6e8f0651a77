"""Rows of a torch position table: handed to torch, gathered, and sparse rows computed directly.

A :class:`~posenc.rows.builder.RowBuilder` (the backend-neutral core,
:mod:`posenc.rows`) computes exact rows in NumPy, checked there;
:func:`host_rows` hands them to torch, outside any compiled graph. :func:`gather_rows` reads any
positions out of a held table, and :func:`direct_rows` serves positions far
outside the held window (``positions=[0, 2**31 - 2]``) row by row through the
exact per-position path, so their peak memory is a small multiple of the
output rather than the span between them.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from ..rows.builder import RowBuilder, build_rows
from ..rows.window import distinct
from ..support.compile import host_only
from ._positions import Request

__all__ = ["NUMPY_DTYPES", "RowBuilder", "direct_rows", "gather_rows", "host_rows", "to_device"]

#: the table dtypes a cache holds, and the NumPy dtype its builder computes in
NUMPY_DTYPES: dict[torch.dtype, np.dtype] = {
    torch.float32: np.dtype(np.float32), torch.float64: np.dtype(np.float64)
}


_HOST = (
    "posenc.torch computes the rows of its position tables in NumPy, on the host, where torch.compile cannot "
    "trace them: build the module before the compiled region (rows 0 … max_len-1 are computed then; reserve() "
    "holds more), or compile with fullgraph=False"
)


@host_only(_HOST)
def host_rows(
    build: RowBuilder, shape: tuple[int, ...], dtype: torch.dtype, *, start: int = 0,
    positions: np.ndarray | None = None,
) -> torch.Tensor:
    """``build.rows(start, shape[0])`` (or ``build.at(positions)``) as a CPU tensor: always eager, never traced.

    The builders are NumPy code whose exactness Dynamo's NumPy emulation does
    not keep (issue 18), so even a module built inside a compiled function
    computes its rows here, between two graphs.
    """
    return torch.from_numpy(build_rows(build, shape, NUMPY_DTYPES[dtype], start=start, positions=positions))


def to_device(t: torch.Tensor, device: torch.device) -> torch.Tensor:
    """``t`` (a CPU tensor) on ``device``, with no copy when that is the CPU."""
    return t if device.type == "cpu" else t.to(device)


def gather_rows(table: torch.Tensor, idx: torch.Tensor, row_shape: tuple[int, ...]) -> torch.Tensor:
    """Rows ``idx`` (any shape) of ``table [n, *row_shape]``: ``[*idx.shape, *row_shape]``."""
    # one embedding lookup on the flattened rows: a single gather kernel, also inside compiled graphs
    width = math.prod(row_shape)
    out = torch.nn.functional.embedding(idx.to(torch.long), table.reshape(table.shape[0], width))
    return out if len(row_shape) == 1 else out.reshape(*idx.shape, *row_shape)


def direct_rows(
    build: RowBuilder, table: torch.Tensor, start: int, req: Request, row_shape: tuple[int, ...],
    dtype: torch.dtype, device: torch.device,
) -> torch.Tensor:
    """Rows computed for these positions alone (the ones in ``table``, rows from ``start``, gathered), not kept."""
    if req.index is None:
        shape = (int(req.s), *row_shape)
        return to_device(host_rows(build, shape, dtype, start=int(req.first)), device)
    flat = req.index.reshape(-1).to(table.device) - start
    inside = (flat >= 0) & (flat < table.shape[0])
    far = (flat[~inside] + start).cpu().numpy()
    ask, inverse = distinct(far)  # each distinct position computed once
    rows = host_rows(build, (ask.shape[0], *row_shape), dtype, positions=ask)
    if inverse is not None:
        rows = rows[torch.from_numpy(inverse)]
    rows = to_device(rows, table.device)
    if bool(inside.any()):
        out = torch.empty((flat.shape[0], *row_shape), dtype=dtype, device=table.device)
        out[inside] = gather_rows(table, flat[inside], row_shape)
        out[~inside] = rows
        rows = out
    return rows.reshape(*req.index.shape, *row_shape)
