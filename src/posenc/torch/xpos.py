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
from ._cache import TableCache

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
    """The xPos rows of one rotary embedding and the centre they were built for."""

    def __init__(self, freqs: RopeFrequencies, xpos: Any, seq_len: int | None, max_len: int) -> None:
        super().__init__()
        xp = check_xpos(xpos, "q")
        if not isinstance(xp, XPos):  # check_xpos returns it or raises; this narrows the type
            raise PosEncError(f"xpos must be a posenc.XPos, got {xpos!r}")
        self.xpos = xp
        self.freqs = freqs
        self.seq_len = seq_len
        self.middle = xp.middle(seq_len) if seq_len is not None else 0
        held = max_len if (seq_len is not None or not xp.center) else 0
        self.cache = TableCache(_XPosRows(freqs, xp, self.middle), (4, freqs.rotary_dim // 2), stop=held)

    def rows(
        self, s: Any, positions: Any, offset: Any, device: Any, batch: int | None, dtype: torch.dtype,
        x_dtype: torch.dtype,
    ) -> torch.Tensor:
        """``[(b,) s, 4, r/2]`` for s tokens, after checking the factors fit ``x_dtype``."""

        def before(lo: int, hi: int) -> None:  # under the cache's lock, before any row is computed
            if hi <= lo:
                return
            if self.xpos.center and self.seq_len is None:
                mid = self.xpos.middle(hi)
                if mid != self.middle:
                    self.middle = mid
                    self.cache.reset(_XPosRows(self.freqs, self.xpos, mid))
            check_xpos_range(lo, hi - 1, self.middle, self.xpos, self.freqs.rotary_dim, _RANGE[x_dtype])

        return self.cache.lookup(s, positions=positions, offset=offset, batch=batch, device=device, dtype=dtype,
                                 before=before)

    def extra_repr(self) -> str:
        return f"{self.xpos!r}, middle={self.middle}"
