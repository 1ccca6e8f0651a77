"""The API fuzz's checks for the timestep, neural-field and vision presets (issue 21), against mpmath.

Each takes the result and the keyword arguments that produced it; the
references are the formulas written here at 60 digits, never posenc's code.
"""

from __future__ import annotations

from typing import Any

import mpmath
import numpy as np

from reference import ulp_error

mpmath.mp.dps = 60

#: name -> (shift, angle factor, cos first) of each built-in timestep preset at its defaults.
TIMESTEP_FORMULAS = {"diffusers": (1, 1, False), "ddpm": (1, 1, False), "guided-diffusion": (0, 1, True),
                     "flux": (0, 1000, True)}


def _bound(dt: np.dtype) -> float:
    return 4.0 if dt == np.float64 else 1.0


def check_timestep_embedding(out: np.ndarray, kw: dict[str, Any]) -> None:
    t = np.asarray(kw["t"], dtype=np.float64)
    dim, dt = int(kw["dim"]), np.dtype(kw.get("dtype", np.float32))
    shift, factor, cos_first = TIMESTEP_FORMULAS[kw.get("convention", "diffusers")]
    assert out.shape == (*t.shape, dim) and out.dtype == dt
    assert np.isfinite(out).all() and (np.abs(out) <= 1).all()
    half = dim // 2
    if t.size == 0 or half == 0:
        return
    flat, rows = t.reshape(-1), out.reshape(-1, dim)
    if dim % 2:
        assert (rows[:, -1] == 0).all()
    j = int(np.argmax(np.abs(flat)))
    for k in {0, half - 1}:
        ang = mpmath.mpf(factor) * mpmath.mpf(float(flat[j])) * mpmath.power(10000, -mpmath.mpf(k) / (half - shift))
        if abs(ang) >= 2**31:  # the 1-ulp promise stops at 2**31; beyond, on the unit circle
            continue
        s, c = mpmath.sin(ang), mpmath.cos(ang)
        si, ci = (half + k, k) if cos_first else (k, half + k)
        assert ulp_error(rows[j, si], s, dt) <= _bound(dt), (flat[j], k)
        assert ulp_error(rows[j, ci], c, dt) <= _bound(dt), (flat[j], k)
