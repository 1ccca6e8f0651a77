"""float32 rows by the quick evaluation (posenc.exact._narrow): its bound holds; every bit is the exact kernel's.

References: mpmath at 400 bits for the bound; the NumPy engine (the exact kernel, no FMA) for the bits.
Adversarial inputs put the value within ~2**-52 of a float32 rounding boundary (p = asin(m)/ω for a midpoint m
of two float32s), where the quick value alone would round either way.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

from posenc.exact import Ladder, fill_sincos, seed_ladder
from posenc.exact.core import NEAR_ANGLE

numba = pytest.importorskip("numba")

from posenc.exact._fused import intrinsics, target_has_fma  # noqa: E402
from posenc.exact._narrow import REL, build_narrow_row, build_narrow_value, build_row_beta  # noqa: E402

pytestmark = pytest.mark.skipif(not target_has_fma(), reason="the quick path runs only where the CPU has FMA")

U = 2.0**-53


@pytest.fixture(scope="module")
def kernels():
    _, _, fma = intrinsics()
    value = build_narrow_value(numba.njit, fma)
    row = build_narrow_row(numba.njit, fma)
    beta = build_row_beta(numba.njit)

    @numba.njit
    def values(p, w0, w1):  # pragma: no cover
        out = np.empty((p.size, w0.size, 3))
        for r in range(p.size):
            for i in range(w0.size):
                out[r, i, 0], out[r, i, 1], out[r, i, 2] = value(p[r], w0[i], w1[i])
        return out

    @numba.njit
    def undecided(p, w0, w1, w2):  # pragma: no cover
        n = w0.size
        kb, sb, cb = np.empty(n), np.empty(n, np.float32), np.empty(n, np.float32)
        t0, t1, t2 = np.max(np.abs(w0)), np.max(np.abs(w1)), np.max(np.abs(w2))
        out = np.empty(p.size, np.bool_)
        for r in range(p.size):
            out[r] = not row(p[r], w0, w1, beta(p[r], t0, t1, t2), kb, sb, cb)
        return out

    return values, undecided


def _ladders() -> dict[str, Ladder]:
    from posenc.timesteps import Diffusers

    return {  # diffusers' Timesteps(256, True, 0) and with scale=1000: the bench's ladders
        "timesteps": Diffusers(True, 0).plan(256).ladder,
        "scale=1000": Diffusers(True, 0, 1000).plan(256).ladder,
        "rope": seed_ladder(64, 10000.0),
        "one": Ladder(np.array([1.0, 0.5, 3.0]), np.zeros(3), np.zeros(3)),
    }


def _positions(lad: Ladder, rng: np.random.Generator) -> np.ndarray:
    top = NEAR_ANGLE / lad.fastest * (1 - 2.0**-19)
    near_quarter = np.round(rng.integers(1, 2**30, 30) * (math.pi / 2) / lad.fastest)  # θ near k·π/2
    return np.concatenate([rng.uniform(-1000, 1000, 30), rng.uniform(0, 1, 10) * 2.0 ** -rng.integers(0, 200, 10),
                           rng.uniform(-top, top, 20), near_quarter, [top, -top, 1.0, 2.0**-300]])


@pytest.mark.parametrize("name", ["timesteps", "scale=1000", "rope", "one"])
def test_the_quick_values_are_within_the_bound_of_mpmath(kernels, name):
    values, _ = kernels
    lad = _ladders()[name]
    rng = np.random.default_rng(len(name))
    p = _positions(lad, rng)
    chans = np.unique(np.concatenate([[0, len(lad) - 1], rng.integers(0, len(lad), 6)]))
    got = values(p, lad.w0[chans].copy(), lad.w1[chans].copy())
    mp = mpmath.mp.clone()
    mp.prec = 400
    half_pi = mp.pi / 2
    for r, pos in enumerate(p):
        for j, i in enumerate(chans):
            k, s, c = got[r, j]
            theta = mp.mpf(pos) * (mp.mpf(lad.w0[i]) + mp.mpf(lad.w1[i]) + mp.mpf(lad.w2[i]))
            x = theta - mp.mpf(k) * half_pi
            a = abs(pos) * float(np.max(np.abs(lad.w0)))
            alpha = 2.0**-100 * (a + 1) + abs(pos) * (5 * U * float(np.max(np.abs(lad.w1)))
                                                     + float(np.max(np.abs(lad.w2))))
            assert abs(x) < 0.79
            assert abs(mp.mpf(s) - mp.sin(x)) <= 8 * U * abs(s) + alpha, (pos, i)
            assert abs(mp.mpf(c) - mp.cos(x)) <= 8 * U * abs(c) + alpha, (pos, i)


def _near_boundaries(lad: Ladder, i: int, count: int, rng: np.random.Generator) -> np.ndarray:
    """Positions whose sine (channel i) lies within ~2**-52 of a midpoint between two float32s."""
    v = rng.uniform(0.01, 0.99, count).astype(np.float32)
    mid = v.astype(np.float64) + np.spacing(v).astype(np.float64) / 2  # halfway to the next float32
    return np.arcsin(mid) / (float(lad.w0[i]) + float(lad.w1[i]))  # θ within ~ulp(θ) of asin(mid)


def _bits(p: np.ndarray, lad: Ladder, engine: str) -> tuple[np.ndarray, np.ndarray]:
    s = np.empty((p.size, len(lad)), np.float32)
    c = np.empty((p.size, len(lad)), np.float32)
    fill_sincos(p, lad, s, c, engine=engine)
    return s.view(np.int32), c.view(np.int32)


@pytest.mark.parametrize("name", ["timesteps", "scale=1000", "rope", "one"])
def test_rows_near_a_rounding_boundary_take_the_exact_kernel(kernels, name):
    _, undecided = kernels
    lad = _ladders()[name]
    rng = np.random.default_rng(7)
    p = np.concatenate([_near_boundaries(lad, i, 40, rng) for i in (0, len(lad) // 2, len(lad) - 1)])
    assert np.mean(undecided(p, lad.w0, lad.w1, lad.w2)) > 0.9  # the quick values do not decide them
    want, got = _bits(p, lad, "numpy"), _bits(p, lad, "numba")
    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])


def test_without_the_bound_the_quick_value_would_round_the_other_way(kernels):
    # why the check is there: near a boundary float32(C) and float32(K) differ
    values, _ = kernels
    lad = _ladders()["one"]
    p = _near_boundaries(lad, 0, 400, np.random.default_rng(3))
    got = values(p, lad.w0[:1].copy(), lad.w1[:1].copy())
    k, s, c = got[:, 0, 0], got[:, 0, 1].astype(np.float32), got[:, 0, 2].astype(np.float32)
    q = (k % 4).astype(int)
    quick = np.choose(q, [s, c, -s, -c])
    exact = _bits(p, lad, "numpy")[0][:, 0].view(np.float32)
    assert np.any(quick != exact)


@pytest.mark.parametrize("name", ["timesteps", "scale=1000", "rope"])
def test_ordinary_rows_are_decided_by_the_quick_values_and_give_the_exact_bits(kernels, name):
    _, undecided = kernels
    lad = _ladders()[name]
    rng = np.random.default_rng(5)
    p = np.concatenate([rng.uniform(0, 1000, 3000), rng.integers(0, 1000, 1000).astype(float),
                        rng.uniform(-1e6, 1e6, 1000), rng.uniform(0, 1, 1000)])
    assert np.mean(undecided(p, lad.w0, lad.w1, lad.w2)) < 0.01  # the quick path does the work
    want, got = _bits(p, lad, "numpy"), _bits(p, lad, "numba")
    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])


def test_the_relative_margin_is_over_three_times_the_proven_bound():
    assert REL >= 3.6 * 140 * U
