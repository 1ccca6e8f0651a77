"""Independent reference values (mpmath, 50+ digits) and ulp measures for the tests.

Nothing here imports posenc: the references are written from the formulas.
"""

from __future__ import annotations

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
