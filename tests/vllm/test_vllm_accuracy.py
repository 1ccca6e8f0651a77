"""vLLM's forward_native with posenc's cache against an mpmath reference: far closer at 10^5 … 10^6, stock's near 0.

The reference frequencies are written here from the papers' formulas (each
rope type as transformers defines it), in mpmath at 40 digits; the reference
rotation is float64 of the float32 q/k. Stock vLLM forms ``p · ω`` in float32
(the angle rounded before the sine: ~0.07 rad off at 10^6, head 128).
"""

from __future__ import annotations

import gc
import math

import mpmath
import numpy as np
import pytest
import torch
from vllm_helpers import get_rope

mpmath.mp.dps = 40
HEAD = 128


def _ladder(base: float, d: int = HEAD) -> list[mpmath.mpf]:
    return [mpmath.mpf(base) ** (-mpmath.mpf(2 * i) / d) for i in range(d // 2)]


def _linear(base: float, factor: float) -> tuple[list[mpmath.mpf], mpmath.mpf]:
    return [w / factor for w in _ladder(base)], mpmath.mpf(1)


def _llama3(base: float, factor: float, low: float, high: float, original: int) -> tuple[list[mpmath.mpf], mpmath.mpf]:
    out = []
    for w in _ladder(base):
        wavelength = 2 * mpmath.pi / w
        if wavelength < original / high:
            out.append(w)
        elif wavelength > original / low:
            out.append(w / factor)
        else:
            s = (original / wavelength - low) / (high - low)
            out.append((1 - s) * w / factor + s * w)
    return out, mpmath.mpf(1)


def _yarn(base: float, factor: float, original: int) -> tuple[list[mpmath.mpf], mpmath.mpf]:
    # Peng et al. 2023: ramp between the channels that turn beta_fast=32 and beta_slow=1 times over the original
    # length (floored/ceiled, as transformers), attention factor 0.1·ln(s) + 1
    def dim(rotations: float) -> float:
        return HEAD * math.log(original / (rotations * 2 * math.pi)) / (2 * math.log(base))

    low, high = max(math.floor(dim(32)), 0), min(math.ceil(dim(1)), HEAD - 1)
    out = []
    for i, w in enumerate(_ladder(base)):
        ramp = min(max((i - low) / (high - low), 0.0), 1.0)  # 1: interpolated, 0: kept
        out.append(w / factor * ramp + w * (1 - ramp))
    return out, mpmath.mpf("0.1") * mpmath.log(factor) + 1


def _reference(positions: np.ndarray, omegas: list[mpmath.mpf], scale: mpmath.mpf) -> tuple[np.ndarray, np.ndarray]:
    cos = np.array([[float(scale * mpmath.cos(int(p) * w)) for w in omegas] for p in positions])
    sin = np.array([[float(scale * mpmath.sin(int(p) * w)) for w in omegas] for p in positions])
    return cos, sin


def _rotate(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """NeoX pairs (i, i + 64) of every head, in float64."""
    x = x.reshape(x.shape[0], -1, HEAD)
    a, b = x[..., : HEAD // 2], x[..., HEAD // 2:]
    c, s = cos[:, None, :], sin[:, None, :]
    return np.concatenate([a * c - b * s, b * c + a * s], axis=-1).reshape(x.shape[0], -1)


def _errors(max_position: int, params: dict, positions: np.ndarray, omegas, scale) -> tuple[float, float]:
    """(stock's, posenc's) largest |forward_native - reference| over q and k, float32 model."""
    torch.manual_seed(0)
    q = torch.randn(len(positions), 2 * HEAD, dtype=torch.float32)
    k = torch.randn(len(positions), 2 * HEAD, dtype=torch.float32)
    cos, sin = _reference(positions, omegas, scale)
    want = [_rotate(t.double().numpy(), cos, sin) for t in (q, k)]
    out = []
    for stock in (True, False):
        rope = get_rope(HEAD, max_position, params, torch.float32, stock=stock)
        got = rope.forward_native(torch.as_tensor(positions), q.clone(), k.clone())
        out.append(max(float(np.abs(g.double().numpy() - w).max()) for g, w in zip(got, want, strict=True)))
        del rope
        gc.collect()
    return out[0], out[1]


# (name, max_position, rope_parameters, reference frequencies and attention factor); each cache 10^6 rows
def _ntk_alpha(base: float, alpha: float) -> tuple[list[mpmath.mpf], mpmath.mpf]:
    # HunYuan's fixed alpha (transformers' compute_ntk_alpha_rope_parameters): base · alpha^(d/(d-2))
    return _ladder(mpmath.mpf(base) * mpmath.mpf(alpha) ** (mpmath.mpf(HEAD) / (HEAD - 2))), mpmath.mpf(1)


CASES = [
    ("default theta 1e6", 10**6, {"rope_theta": 1e6}, lambda: (_ladder(1e6), mpmath.mpf(1))),
    ("ntk alpha 1000", 10**6, {"rope_type": "dynamic", "alpha": 1000.0, "rope_theta": 1e4},
     lambda: _ntk_alpha(1e4, 1000.0)),
    ("bailing mrope, text", 250_000, {"rope_type": "bailing_mrope", "mrope_section": [16, 24, 24], "rope_theta": 1e6},
     lambda: (_ladder(1e6), mpmath.mpf(1))),  # a cache of 4 × 250000 rows; 1-D positions: the plain rotation
    ("linear x4", 250_000, {"rope_type": "linear", "factor": 4.0, "rope_theta": 1e6}, lambda: _linear(1e6, 4.0)),
    ("llama3", 10**6, {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                       "original_max_position_embeddings": 8192, "rope_theta": 5e5},
     lambda: _llama3(5e5, 8.0, 1.0, 4.0, 8192)),
    ("yarn x4", 10**6, {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 250_000,
                        "rope_theta": 1e6}, lambda: _yarn(1e6, 4.0, 250_000)),
]


@pytest.mark.parametrize(("name", "max_position", "params", "ref"), CASES, ids=[c[0] for c in CASES])
def test_long_range_ten_times_closer_than_stock(name, max_position, params, ref):
    positions = np.unique(np.geomspace(10**5, 10**6 - 1, 24).astype(np.int64))
    stock, exact = _errors(max_position, params, positions, *ref())
    print(f"{name}: stock {stock:.3g}, posenc {exact:.3g}, ratio {stock / exact:.3g}")
    assert stock > 1e-3  # stock's float32 angle is visibly off this far out (the 9e-3 … 7e-2)
    assert exact * 10 <= stock
    assert exact < 1e-5  # float32 rounding of the rotation alone


SMALL = [(n, 4096, {**p, **({"original_max_position_embeddings": 1024} if "original_max_position_embeddings" in p
                             and p["rope_type"] == "yarn" else {})}) for n, _, p, _ in CASES]


@pytest.mark.parametrize(("name", "max_position", "params"), SMALL, ids=[c[0] for c in SMALL])
def test_small_positions_agree_with_stock_within_its_error(name, max_position, params):
    positions = np.arange(64)
    omegas, scale = {"default theta 1e6": lambda: (_ladder(1e6), mpmath.mpf(1)),
                     "ntk alpha 1000": lambda: _ntk_alpha(1e4, 1000.0),
                     "bailing mrope, text": lambda: (_ladder(1e6), mpmath.mpf(1)),
                     "linear x4": lambda: _linear(1e6, 4.0),
                     "llama3": lambda: _llama3(5e5, 8.0, 1.0, 4.0, 8192),
                     "yarn x4": lambda: _yarn(1e6, 4.0, 1024)}[name]()
    stock, exact = _errors(max_position, params, positions, omegas, scale)
    print(f"{name} at 0 … 63: stock {stock:.3g}, posenc {exact:.3g}")
    assert stock < 3e-5  # the float32 angle's rounding only, this close to 0 (ulp(63) = 3.8e-6 rad)
    assert exact <= stock
