"""The precision view's numbers: how far the usual float32/bfloat16/float16 tables drift from posenc's exact value.

For a rotary ladder ω (after any scaling) and each position p:

- **float32 angle**: transformers' ``(inv_freq.float() @ position_ids.float())``,
  one float32 product of float32(ω_i) and float32(p), then its cos and sin
  taken exactly (so the error is that of the angle alone);
- **bfloat16 table**: the exact cos/sin rounded to float32, then to bfloat16
  (``.to(torch.bfloat16)`` of a float32 table);
- **float16 table**: the exact cos/sin rounded once to float16 (posenc's
  ``dtype=float16``).

Each error is the largest over the pairs and over cos and sin, in float64,
against posenc's float64 value (within 1 ulp of the true one). The page's
``rope.js`` computes the same numbers in the browser (bit for bit: the
roundings are exact there too); diffusers' float32 timesteps are computed
here only (the timesteps page shows them as built).
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np

from ..exact import Ladder, sincos
from ..timesteps import timestep_embedding
from ..timesteps.conventions import get

__all__ = ["POSITIONS", "bf16_of", "rope_precision", "timestep_precision"]

#: Positions 1 … 10^6, 20 a decade (the page's precision view uses the same).
POSITIONS = np.unique(np.round(10.0 ** (np.arange(121) / 20.0)))

_ONE = Ladder.from_decimals([Decimal(1)])


def bf16_of(x: np.ndarray) -> np.ndarray:
    """float64 → float32 → bfloat16 (half to even), returned as float64.

    >>> bf16_of(np.array([1.0, 1 + 2.0**-8, 1 + 3 * 2.0**-8])).tolist()
    [1.0, 1.0, 1.015625]
    """
    u = np.asarray(x, dtype=np.float64).astype(np.float32).view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16) << 16
    return r.astype(np.uint32).view(np.float32).astype(np.float64)


def rope_precision(ladder: Ladder, positions: np.ndarray = POSITIONS) -> dict[str, np.ndarray]:
    """Errors ``[len(positions)]`` of the float32 angle, the bfloat16 table and the float16 table.

    >>> from posenc import rope_frequencies
    >>> e = rope_precision(rope_frequencies(8).ladder, np.array([1.0, 1e6]))
    >>> bool(e["f32"][1] > e["f32"][0])
    True
    """
    p = np.asarray(positions, dtype=np.float64)
    s, c = sincos(p, ladder)
    a32 = np.float32(1) * p.astype(np.float32)[:, None] * ladder.w0.astype(np.float32)[None, :]
    s32, c32 = sincos(a32.astype(np.float64).reshape(-1), _ONE)
    s32, c32 = s32.reshape(s.shape), c32.reshape(c.shape)
    f32 = np.maximum(np.abs(c32 - c), np.abs(s32 - s)).max(axis=1)
    b16 = np.maximum(np.abs(bf16_of(c) - c), np.abs(bf16_of(s) - s)).max(axis=1)
    h16 = np.maximum(np.abs(c.astype(np.float16).astype(np.float64) - c),
                     np.abs(s.astype(np.float16).astype(np.float64) - s)).max(axis=1)
    return {"f32": f32, "bf16": b16, "f16": h16}


def timestep_precision(dim: int = 256, timesteps: np.ndarray = POSITIONS) -> dict[str, np.ndarray]:
    """diffusers' float32 ``get_timestep_embedding`` against the exact embedding, and the float16/bfloat16 tables.

    The float32 path: ``timesteps.float() * exp(exponent)``, with the
    frequency float32(ω_k) (diffusers takes ``torch.exp`` of a float32
    exponent, which may land an ulp away), then sin and cos of that float32
    angle taken exactly.

    >>> e = timestep_precision(8, np.array([1.0, 999.0]))
    >>> sorted(e)
    ['bf16', 'f16', 'f32']
    """
    t = np.asarray(timesteps, dtype=np.float64)
    w = get("diffusers").plan(dim).ladder.w0
    exact = timestep_embedding(t, dim, convention="diffusers", dtype=np.float64)
    a32 = t.astype(np.float32)[:, None] * w.astype(np.float32)[None, :]
    s32, c32 = sincos(a32.astype(np.float64).reshape(-1), _ONE)
    approx = np.concatenate([s32.reshape(a32.shape), c32.reshape(a32.shape)], axis=1)
    f32 = np.abs(approx - exact).max(axis=1)
    b16 = np.abs(bf16_of(exact) - exact).max(axis=1)
    h16 = np.abs(exact.astype(np.float16).astype(np.float64) - exact).max(axis=1)
    return {"f32": f32, "bf16": b16, "f16": h16}
