"""Independent reference values (mpmath, 50+ digits) and ulp measures for the tests.

Nothing here imports posenc: the references are written from the formulas.
"""

from __future__ import annotations

import math
from typing import Any

import mpmath
import numpy as np

mpmath.mp.dps = 60


def omega(d: int, base: float, i: int) -> mpmath.mpf:
    """ω_i = base**(-2i/d), exact to 60 digits."""
    return mpmath.power(mpmath.mpf(base), -mpmath.mpf(2 * i) / d)


def sin_cos(p: float, w: mpmath.mpf) -> tuple[mpmath.mpf, mpmath.mpf]:
    th = mpmath.mpf(float(p)) * w
    return mpmath.sin(th), mpmath.cos(th)


def ulp_error(got: float, ref: mpmath.mpf, dtype: type) -> float:
    """|got - ref| in units of the last place of ``ref`` in ``dtype``."""
    ft = np.dtype(dtype).type
    r = ft(float(ref))
    if r == 0:
        tiny = np.finfo(dtype).smallest_subnormal
        return float(abs(mpmath.mpf(float(got)) - ref) / mpmath.mpf(float(tiny)))
    # the ulp of the binade of |ref|: spacing of the value just below |r| when |r| is a power of two
    mag = abs(r)
    spacing = np.spacing(np.nextafter(mag, ft(0)) if mag > abs(ref) else mag)
    return float(abs(mpmath.mpf(float(got)) - ref) / mpmath.mpf(float(spacing)))


def reference_encoding(p: float, d: int, base: float) -> list[mpmath.mpf]:
    """The seed's interleaved vector [sin ω_0 p, cos ω_0 p, sin ω_1 p, …]."""
    out: list[mpmath.mpf] = []
    for i in range(d // 2):
        s, c = sin_cos(p, omega(d, base, i))
        out += [s, c]
    return out


def mrope_reference(segments: Any, advance: str = "max") -> tuple[list[list[int]], int]:
    """(t, h, w) rows and rope delta of a multimodal prompt, slowly, from the rules of transformers' get_rope_index.

    Text: c, c+1, … on every axis. A grid (t, h, w, time_step): (c + τ(i), c + j, c + k) in C order, τ(i) the
    float32 product of i and the step, truncated (transformers' ``(arange(t) * time_interval).long()``); then
    c = max so far + 1 ("max": transformers 4.x, Qwen's code) or c + max(h, w) ("spatial": transformers 5.3+).
    Reads only the segments' fields (n; t, h, w, time_step).
    """
    rows: list[list[int]] = []
    c = 0
    for seg in segments:
        if hasattr(seg, "n"):
            rows += [[c + i] * 3 for i in range(seg.n)]
            c += seg.n
            continue
        tau = [math.trunc(float(np.float32(i) * np.float32(seg.time_step))) for i in range(seg.t)]
        rows += [[c + tau[i], c + j, c + k] for i in range(seg.t) for j in range(seg.h) for k in range(seg.w)]
        c = max(max(r) for r in rows) + 1 if advance == "max" else c + max(seg.h, seg.w)
    return rows, max(max(r) for r in rows) + 1 - len(rows)
