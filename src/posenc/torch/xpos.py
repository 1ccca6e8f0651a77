"""xPos rows for :class:`posenc.torch.RotaryEmbedding`: cos and sin already multiplied by the decay factors.

Each position's row is ``[4, r/2]``: (cos·f_q, sin·f_q, cos·f_k, sin·f_k)
with f_q = ζ^((p − c)/scale_base) and f_k = 1/f_q, from
:func:`posenc.rope.xpos.xpos_rows`, so the module's q and k equal
:func:`posenc.apply_rope` with ``xpos=`` bit for bit (float32 rows for
float32 and narrower tensors, float64 rows for float64 ones). The rows live
in a :class:`~posenc.torch._cache.TableCache` (not saved, never cast,
thread-safe, a gather or slice under ``torch.compile``).

The centre c = N//2 belongs to the rows: N is the module's ``seq_len`` when
given (fixed rows: use it for generation with a KV cache, whose keys keep the
centre they were scaled with), else max(position) + 1 of each eager call, as
rotary-embedding-torch's ``rotate_queries_and_keys``; a new centre rebuilds
the rows.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import torch
from torch import nn

from ..errors import PosEncError
from ..rope.frequencies import RopeFrequencies
from ..rope.xpos import XPos, check_xpos, check_xpos_range, xpos_rows
from ..support.compile import host_only
from ._cache import TableCache, compiling

__all__ = ["XPosTable"]

# the range a factor must stay in, per tensor dtype (bfloat16 has float32's exponents)
_RANGE = {torch.float16: np.float16, torch.bfloat16: np.float32, torch.float32: np.float32, torch.float64: np.float64}


@dataclass(frozen=True, eq=False)
class _XPosRows:
    """A picklable row builder for one centre."""

    freqs: RopeFrequencies
    xpos: XPos
    middle: int

    def rows(self, start: int, length: int, dtype: np.dtype) -> np.ndarray:
        return xpos_rows(self.freqs, self.xpos, np.arange(start, start + length), self.middle, dtype)

    def at(self, positions: np.ndarray, dtype: np.dtype) -> np.ndarray:
        return xpos_rows(self.freqs, self.xpos, positions, self.middle, dtype)


class XPosTable(nn.Module):
    """The xPos rows of one rotary embedding and the centre they were built for.

    Under torch.compile the rows are read in the graph only when nothing
    about them depends on the call: a fixed centre, and a window whose every
    factor was checked (on the host) to fit the tensor dtype. Otherwise the
    rows come from an eager lookup between two graphs (the centre follows the
    real length, the positions asked are range-checked as in eager mode), and
    ``fullgraph=True`` fails with a line naming the remedy.
    """

    def __init__(self, freqs: RopeFrequencies, xpos: Any, seq_len: int | None, max_len: int) -> None:
        super().__init__()
        xp = check_xpos(xpos, "q")
        if not isinstance(xp, XPos):  # check_xpos returns it or raises; this narrows the type
            raise PosEncError(f"xpos must be a posenc.XPos, got {xpos!r}")
        self.xpos = xp
        self.freqs = freqs
        self.seq_len = seq_len
        self.follows_length = bool(xp.center and seq_len is None)
        self.middle = xp.middle(seq_len) if seq_len is not None else 0
        held = 0 if self.follows_length else max_len
        self.cache = TableCache(_XPosRows(freqs, xp, self.middle), (4, freqs.rotary_dim // 2), stop=held)
        # per tensor dtype: the (start, stop, centre) of the rows whose factors all fit it
        self._checked: dict[torch.dtype, tuple[int, int, int]] = {}
        self._check_window()

    def _check_window(self) -> None:
        """Record, per tensor dtype, whether every held row's factors fit it (what a compiled graph may read)."""
        for x_dtype, npd in _RANGE.items():
            a, z = self.cache.held(_rows_dtype(x_dtype))
            key = (a, z, self.middle)
            if self._checked.get(x_dtype) == key:
                continue
            self._checked.pop(x_dtype, None)
            try:
                if z > a:
                    check_xpos_range(a, z - 1, self.middle, self.xpos, self.freqs.rotary_dim, npd)
            except PosEncError:
                continue
            self._checked[x_dtype] = key

    def reserve(self, stop: int, start: int = 0, *, dtype: torch.dtype = torch.float32) -> None:
        """Hold the rows for positions ``start … stop-1`` (a fixed centre's; without seq_len they follow the length)."""
        self.cache.reserve(stop, start, dtype=dtype)
        self._check_window()

    def rows(
        self, s: Any, positions: Any, offset: Any, device: Any, batch: int | None, dtype: torch.dtype,
        x_dtype: torch.dtype,
    ) -> torch.Tensor:
        """``[(b,) s, 4, r/2]`` for s tokens, after checking the factors fit ``x_dtype``."""
        if compiling():
            if self.follows_length:
                return _centred_on_host(self, s, positions, offset, device, batch, dtype, x_dtype)
            a, z = self.cache.held(dtype)
            if self._checked.get(x_dtype) != (a, z, self.middle):
                return _checked_on_host(self, s, positions, offset, device, batch, dtype, x_dtype)

        def before(lo: int, hi: int) -> None:  # under the cache's lock, before any row is computed
            if hi <= lo:
                return
            if self.follows_length:
                mid = self.xpos.middle(hi)
                if mid != self.middle:
                    self.middle = mid
                    self.cache.reset(_XPosRows(self.freqs, self.xpos, mid))
            check_xpos_range(lo, hi - 1, self.middle, self.xpos, self.freqs.rotary_dim, _RANGE[x_dtype])

        out = self.cache.lookup(s, positions=positions, offset=offset, batch=batch, device=device, dtype=dtype,
                                before=before)
        if not compiling():
            self._check_window()
        return out

    def extra_repr(self) -> str:
        return f"{self.xpos!r}, middle={self.middle}"


def _rows_dtype(x_dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if x_dtype == torch.float64 else torch.float32


def _eager_rows(
    table: XPosTable, s: Any, positions: Any, offset: Any, device: Any, batch: int | None, dtype: torch.dtype,
    x_dtype: torch.dtype,
) -> torch.Tensor:
    return table.rows(int(s), positions, offset, device, batch, dtype, x_dtype)


_centred_on_host = host_only(
    "posenc.torch.RotaryEmbedding(xpos=...) without seq_len centres its xPos rows on each call's length, on the "
    "host: pass seq_len=N (a fixed centre) to compile with fullgraph=True, or compile with fullgraph=False"
)(_eager_rows)
_checked_on_host = host_only(
    "posenc.torch.RotaryEmbedding(xpos=...): some rows it holds have xPos factors outside the range of this "
    "tensor dtype, so each call's positions are checked on the host: hold fewer rows (max_len, reserve()) "
    "around the centre seq_len//2 to compile with fullgraph=True, or compile with fullgraph=False"
)(_eager_rows)
