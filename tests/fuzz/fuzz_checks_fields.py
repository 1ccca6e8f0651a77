"""The API fuzz's checks for the timestep, neural-field and vision presets (issue 21), against mpmath.

Each takes the result and the keyword arguments that produced it; the
references are the formulas written here at 60 digits, never posenc's code.
"""

from __future__ import annotations

from fractions import Fraction
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


#: name -> (band k as an mpmath value, order, input default, input first) of each built-in field preset.
FIELD_FORMULAS = {
    "nerf": (lambda k, n: mpmath.mpf(2) ** k, "nerf", True, True),
    "nerfstudio": (lambda k, n: 2 * mpmath.pi * mpmath.power(2, mpmath.mpf(8) * k / max(n - 1, 1)), "blocks", False,
                   False),
    "tcnn": (lambda k, n: mpmath.pi * mpmath.mpf(2) ** k, "interleaved", False, False),
}


def _field_channel(order: str, d: int, n: int, j: int, k: int) -> tuple[int, int]:
    """The (sin, cos) channels of coordinate j, band k, in each order."""
    if order == "nerf":
        return 2 * d * k + j, 2 * d * k + d + j
    if order == "blocks":
        return j * n + k, d * n + j * n + k
    return 2 * (j * n + k), 2 * (j * n + k) + 1


def check_nerf_encoding(out: np.ndarray, kw: dict[str, Any]) -> None:
    x = np.asarray(kw["x"], dtype=np.float64)
    x = x.reshape(1) if x.ndim == 0 else x
    n, dt = int(kw["n_freqs"]), np.dtype(kw.get("dtype", np.float32))
    band, order, default, first = FIELD_FORMULAS[kw.get("convention", "nerf")]
    keep = kw.get("include_input") if kw.get("include_input") is not None else default
    d = x.shape[-1]
    assert out.shape == (*x.shape[:-1], d * (2 * n + int(keep))) and out.dtype == dt
    assert np.isfinite(out).all()
    if out.size == 0 or n == 0:
        return
    rows, pts = out.reshape(-1, out.shape[-1]), x.reshape(-1, d)
    i = int(np.argmax(np.abs(pts).max(axis=1)))
    off = d if keep and first else 0
    if keep:
        raw = rows[i, :d] if first else rows[i, -d:]
        assert np.array_equal(raw, pts[i].astype(dt))
    for j in {0, d - 1}:
        for k in {0, n - 1}:
            ang = band(k, n) * mpmath.mpf(float(pts[i, j]))
            if abs(ang) >= 2**31:
                continue
            si, ci = _field_channel(order, d, n, j, k)
            assert ulp_error(rows[i, off + si], mpmath.sin(ang), dt) <= _bound(dt), (pts[i, j], k)
            assert ulp_error(rows[i, off + ci], mpmath.cos(ang), dt) <= _bound(dt), (pts[i, j], k)


def check_fourier_features(out: np.ndarray, kw: dict[str, Any]) -> None:
    x = np.asarray(kw["x"], dtype=np.float64)
    x = x.reshape(1) if x.ndim == 0 else x
    b, dt = np.asarray(kw["b"], dtype=np.float64), np.dtype(kw.get("dtype", np.float32))
    m = b.shape[0]
    assert out.shape == (*x.shape[:-1], 2 * m) and out.dtype == dt
    rows, pts = out.reshape(-1, 2 * m), x.reshape(-1, x.shape[-1])
    for i in range(min(rows.shape[0], 2)):
        # B·v mod 1 exactly (any size: the angle is in turns), then cos/sin of 2π times it by cospi/sinpi,
        # exact at the quarter turns where the function's 0 and ±1 are exact
        t = sum((Fraction(float(b[0, j])) * Fraction(float(pts[i, j])) for j in range(b.shape[1])), Fraction(0)) % 1
        with mpmath.workprec(300):
            turn = mpmath.mpf(t.numerator) / t.denominator
            cos, sin = mpmath.cospi(2 * turn), mpmath.sinpi(2 * turn)
        assert ulp_error(rows[i, 0], cos, dt) <= _bound(dt)
        assert ulp_error(rows[i, m], sin, dt) <= _bound(dt)


#: The RoPE presets and the (sections) each has at its default width.
ROPE_PRESET_SECTIONS = {"flux": (8, 28, 28), "wan": (22, 21, 21), "cogvideox": (8, 12, 12), "eva02": (16, 16),
                        "dinov3": (16, 16), "qwen2-vl-vision": (20, 20)}


def check_rope_preset(cfg: Any, kw: dict[str, Any]) -> None:
    import posenc

    assert isinstance(cfg, posenc.RopeConfig)
    assert cfg.sections is not None and 2 * sum(cfg.sections) == cfg.rotary_dim == cfg.head_dim
    if set(kw) == {"name"}:
        assert cfg.sections == ROPE_PRESET_SECTIONS[kw["name"]]
    coords = np.zeros((1, len(cfg.sections)))
    x = np.ones((1, cfg.head_dim))
    assert np.array_equal(posenc.apply_rope(x, coords, layout=cfg.layout, **cfg.kwargs()), x)  # position 0: identity


def check_eva02_coords(out: np.ndarray, kw: dict[str, Any]) -> None:
    feat = [int(s) for s in kw["feat_shape"]]
    ref = kw.get("ref_feat_shape")
    assert out.shape == (int(np.prod(feat)), len(feat)) and out.dtype == np.float64
    last = [(f - 1) / f * (int(r) if ref is not None else f) for f, r in zip(feat, ref or feat, strict=True)]
    assert np.allclose(out[-1], last, rtol=1e-15, atol=0) and (out[0] == 0).all()


def check_dinov3_coords(out: np.ndarray, kw: dict[str, Any]) -> None:
    h, w = int(kw["h"]), int(kw["w"])
    assert out.shape == (h * w, 2) and out.dtype == np.float64
    assert np.all(np.abs(out) < 2 * np.pi) and np.isclose(out[0, 0], 2 * np.pi * (1 / h - 1), rtol=1e-15)
