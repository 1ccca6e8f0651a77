"""posenc.nerf_encoding and posenc.fourier_features: within 1 float32 ulp of the formula, in each framework's layout.

The references' formulas are written here from their sources (bmild/nerf
``run_nerf_helpers.py``, nerfstudio ``field_components/encodings.py``
``NeRFEncoding.forward``, tiny-cuda-nn ``encodings/frequency.h``): nerfstudio
and tiny-cuda-nn cannot be installed with the CPU torch, bmild/nerf is TF.
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from posenc import PosEncError, fourier_features, nerf_encoding
from posenc.fields import NeRF, Nerfstudio, register
from reference import ulp_error

mpmath.mp.dps = 60
PI = mpmath.pi
X = np.array([[0.1, -0.7, 0.33], [0.999, 0.0, -1.0], [1e-4, 0.5, 0.25]])


def exact_nerf(x, n, *, bands, order, include, at="first"):
    """The formula at 60 digits, laid out as the source lays it out."""
    out = []
    for row in x:
        s = [[mpmath.sin(w * mpmath.mpf(float(v))) for w in bands] for v in row]  # [d][n]
        c = [[mpmath.cos(w * mpmath.mpf(float(v))) for w in bands] for v in row]
        if order == "nerf":
            enc = [v for k in range(n) for v in [s[j][k] for j in range(len(row))] + [c[j][k] for j in range(len(row))]]
        elif order == "blocks":
            d = len(row)
            enc = [s[j][k] for j in range(d) for k in range(n)] + [c[j][k] for j in range(d) for k in range(n)]
        else:
            enc = [val for j in range(len(row)) for k in range(n) for val in (s[j][k], c[j][k])]
        raw = [mpmath.mpf(float(v)) for v in row]
        out.append((raw + enc if at == "first" else enc + raw) if include else enc)
    return out


def worst(got, ref):
    return max(ulp_error(float(g), r, np.float32) for grow, rrow in zip(got, ref, strict=True)
               for g, r in zip(grow, rrow, strict=True))


@pytest.mark.parametrize("n", [0, 1, 6, 10])
def test_nerf_bands_are_powers_of_two_without_pi_input_first(n):
    got = nerf_encoding(X.astype(np.float32), n)
    ref = exact_nerf(X.astype(np.float32), n, bands=[mpmath.mpf(2) ** k for k in range(n)], order="nerf",
                     include=True)
    assert got.shape == (3, 3 * (2 * n + 1)) and got.dtype == np.float32
    assert worst(got, ref) <= 1.0


@pytest.mark.parametrize(("lo", "hi", "n"), [(0.0, 8.0, 10), (0.0, 4.0, 4), (-1.0, 2.5, 7), (3.0, 3.0, 1)])
def test_nerfstudio_bands_are_2pi_times_2_to_a_linspace_sin_block_cos_block_input_last(lo, hi, n):
    conv = Nerfstudio(min_freq_exp=lo, max_freq_exp=hi)
    got = nerf_encoding(X, n, convention=conv, include_input=True)
    exps = [mpmath.mpf(lo)] if n == 1 else [mpmath.mpf(lo) + (mpmath.mpf(hi) - lo) * k / (n - 1) for k in range(n)]
    ref = exact_nerf(X, n, bands=[2 * PI * mpmath.power(2, e) for e in exps], order="blocks", include=True, at="last")
    assert worst(got, ref) <= 1.0


def test_tcnn_is_pi_times_powers_of_two_interleaved_per_coordinate():
    got = nerf_encoding(X, 5, convention="tcnn")
    ref = exact_nerf(X, 5, bands=[PI * 2**k for k in range(5)], order="interleaved", include=False)
    assert got.shape == (3, 30) and worst(got, ref) <= 1.0


def _nerfstudio_formula(x: torch.Tensor, n: int, lo: float, hi: float) -> torch.Tensor:
    """nerfstudio's NeRFEncoding.forward, as its source reads (float32 throughout)."""
    scaled = 2 * torch.pi * x
    freqs = 2 ** torch.linspace(lo, hi, n)
    si = (scaled[..., None] * freqs).view(*scaled.shape[:-1], -1)
    return torch.cat([torch.sin(torch.cat([si, si + torch.pi / 2.0], dim=-1)), x], dim=-1)


def _bmild_formula(x: torch.Tensor, n: int) -> torch.Tensor:
    parts = [x]
    for f in 2.0 ** torch.linspace(0.0, n - 1, n):
        parts += [torch.sin(x * f), torch.cos(x * f)]
    return torch.cat(parts, dim=-1)


def test_the_layouts_are_the_references_and_their_own_error_is_larger():
    x = torch.tensor(X, dtype=torch.float32)
    ours = nerf_encoding(X.astype(np.float32), 10, convention="nerfstudio", include_input=True)
    theirs = _nerfstudio_formula(x, 10, 0.0, 8.0).numpy()
    bands = [2 * PI * mpmath.power(2, mpmath.mpf(8) * k / 9) for k in range(10)]  # 2^linspace(0, 8, 10)
    exact = exact_nerf(X.astype(np.float32), 10, bands=bands, order="blocks", include=True, at="last")
    assert np.abs(ours - theirs).max() < 5e-4  # the same channels: only their float32 rounding apart
    assert worst(ours, exact) <= 1.0 < worst(theirs, exact)
    assert np.abs(nerf_encoding(X.astype(np.float32), 6) - _bmild_formula(x, 6).numpy()).max() < 1e-6


@pytest.mark.parametrize("m", [1, 8])
def test_fourier_features_cos_then_sin_of_2pi_bx(m):
    rng = np.random.default_rng(m)
    b = rng.normal(0, 10, (m, 3))
    got = fourier_features(X, b)
    ref = []
    for row in X:
        ang = [2 * PI * mpmath.fsum(mpmath.mpf(float(b[i, j])) * mpmath.mpf(float(row[j])) for j in range(3))
               for i in range(m)]
        ref.append([mpmath.cos(a) for a in ang] + [mpmath.sin(a) for a in ang])
    assert got.shape == (3, 2 * m) and worst(got, ref) <= 1.0


def test_shapes_and_registry():
    assert nerf_encoding(0.5, 2).shape == (5,)
    assert nerf_encoding(np.zeros((2, 4, 3)), 2, include_input=False).shape == (2, 4, 12)
    assert fourier_features(np.zeros((2, 4, 3)), np.ones((5, 3))).shape == (2, 4, 10)
    register("test-nerf-linear", NeRF(log_sampling=False))
    lin = nerf_encoding(X, 4, convention="test-nerf-linear", include_input=False, dtype=np.float64)
    # linspace(1, 8, 4) = 1, 10/3, 17/3, 8
    ref = exact_nerf(X, 4, bands=[mpmath.mpf(1), mpmath.mpf(10) / 3, mpmath.mpf(17) / 3, mpmath.mpf(8)],
                     order="nerf", include=False)
    assert max(ulp_error(float(g), r, np.float64) for gr, rr in zip(lin, ref, strict=True)
               for g, r in zip(gr, rr, strict=True)) <= 4


@pytest.mark.parametrize(("call", "named"), [
    (lambda: nerf_encoding([[np.nan, 1.0]], 4), "x must be finite"),
    (lambda: nerf_encoding([np.inf], 4), "x must be finite"),
    (lambda: nerf_encoding([1.0], -1), "n_freqs must be >= 0"),
    (lambda: nerf_encoding([1.0], 54), "n_freqs must be <= 53"),
    (lambda: nerf_encoding([1.0], 4, convention="mipnerf"), "'mipnerf'"),
    (lambda: nerf_encoding([1.0], 4, include_input="yes"), "include_input"),
    (lambda: nerf_encoding([2.0**10], 50), "x reach"),
    (lambda: Nerfstudio(max_freq_exp=60), "max_freq_exp"),
    (lambda: fourier_features([[1.0, 2.0]], np.ones((4, 3))), "B must be a matrix [m, d]"),
    (lambda: fourier_features([[1.0, 2.0]], np.ones(2)), "B must be a matrix [m, d]"),
    (lambda: fourier_features([[1.0, 2.0]], [[np.nan, 1.0]]), "B must be finite"),
    (lambda: fourier_features([], [[]]), "x must hold at least one coordinate"),
    (lambda: fourier_features(np.zeros((2, 0)), np.zeros((3, 0))), "x must hold at least one coordinate"),
    (lambda: fourier_features([[np.nan, 2.0]], np.ones((1, 2))), "x must be finite"),
])
def test_bad_input_names_the_value(call, named):
    with pytest.raises(PosEncError) as info:
        call()
    assert named in str(info.value)


def _quarter_cases():
    """(x, B, k): B·x = k/4 exactly, with d = 1 (x = k/4; B = k; products with a rounding word) and d = 3."""
    rng = np.random.default_rng(7)
    ks = [*range(-40, 41), 4 * 10**8 + 1, 4 * 10**8 + 2, 4 * 10**8 + 3, 4 * 10**8 + 1 + 4 * 10**8,
          *(int(k) for k in rng.integers(-(2**52), 2**52, 60))]
    for k in ks:
        yield [[k / 4]], [[1.0]], k
        yield [[0.25]], [[float(k)]], k
        yield [[k / 8, k / 8 + 0.75, -0.375]], [[1.0, 1.0, 2.0]], k
    for _ in range(60):  # 30-bit odd integers: the product (60 bits) has a nonzero rounding word
        a, c = (int(v) | 1 for v in rng.integers(2**29, 2**30, 2))
        yield [[c / 4]], [[float(a)]], a * c
        a2, c2 = (int(v) | 1 for v in rng.integers(2**29, 2**30, 2))
        yield [[c / 4, c2 / 2]], [[float(a), float(a2)]], a * c + 2 * a2 * c2


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_quarter_turns_give_exact_zeros_and_ones(dt):
    # cos/sin(2π·k/4) are 1, 0, -1, 0 / 0, 1, 0, -1 exactly, the zeros +0, at any size of B·x
    want = {0: (1.0, 0.0), 1: (0.0, 1.0), 2: (-1.0, 0.0), 3: (0.0, -1.0)}
    wrong = []
    cases = list(_quarter_cases())
    for x, b, k in cases:
        got = fourier_features(x, b, dtype=dt)[0]
        c, s = want[k % 4]
        if not (got[0] == c and got[1] == s and not np.signbit(got[0 if c == 0 else 1])):
            wrong.append((x, b, k, got.tolist()))
    assert len(cases) > 500 and wrong == []


def _wide(lo: int, hi: int):
    """A float ±m·2**e, m in [1, 2) with 53 bits, e in [lo, hi]: every magnitude the exact path takes."""
    return st.builds(lambda s, m, e: s * m * 2.0**e, st.sampled_from([-1.0, 1.0]),
                     st.floats(1.0, 2.0, exclude_max=True), st.integers(lo, hi))


def _cos_sin_turns(b_row, v):
    """cos and sin of 2π·(B·v) from B·v mod 1 exactly (Fractions) and mpmath's cospi/sinpi at 300 bits."""
    t = sum((Fraction(float(p)) * Fraction(float(q)) for p, q in zip(b_row, v, strict=True)), Fraction(0)) % 1
    with mpmath.workprec(300):
        turn = mpmath.mpf(t.numerator) / t.denominator
        return mpmath.cospi(2 * turn), mpmath.sinpi(2 * turn)


@given(st.integers(1, 3).flatmap(lambda d: st.tuples(
    st.lists(_wide(-80, 52), min_size=d, max_size=d),
    st.lists(st.lists(_wide(-80, 52), min_size=d, max_size=d), min_size=1, max_size=3))))
def test_any_size_of_b_dot_x_is_within_an_ulp(case):
    # no angle limit: |x|, |B| up to 2**53 make B·x up to ~2**106, and the phase mod 1 still holds
    v, b = case
    d, m = len(v), len(b)
    for dt, floor_ in ((np.float32, 2.0**-77), (np.float64, 2.0**-45)):
        got = fourier_features([v], b, dtype=dt)[0]
        for i in range(m):
            for col, ref in zip((i, m + i), _cos_sin_turns(b[i], v), strict=True):
                if abs(ref) >= d**3 * floor_:
                    assert ulp_error(float(got[col]), ref, dt) <= 1.0, (v, b[i], dt)
                else:  # a value near its zero: the phase's absolute bound, and the output's own rounding
                    bound = 2 * PI * 4 * d**3 * mpmath.mpf(2) ** -106 + float(np.spacing(dt(abs(float(ref)))))
                    assert abs(mpmath.mpf(float(got[col])) - ref) <= bound, (v, b[i], dt)


def test_the_largest_angles_are_accepted_and_exact_for_one_coordinate():
    big = float(2**53 - 1)
    x = np.array([[big], [big / 4], [2.0**52 + 0.5], [3.0**33 + 0.125]])
    b = np.array([[big], [0.75 - 2.0**-53]])
    got = fourier_features(x, b, dtype=np.float64)
    for r, v in enumerate(x):
        for i in range(2):
            c, s = _cos_sin_turns(b[i], v)
            assert ulp_error(float(got[r, i]), c, np.float64) <= 1.0
            assert ulp_error(float(got[r, 2 + i]), s, np.float64) <= 1.0
