"""nerf_encoding and fourier_features against the trust sweeps (issue 31 §4, issue 36): each finding pinned.

- Quarter turns: a band 2π·2^e (tcnn's π·2^k, nerfstudio's whole exponents)
  takes the phase in turns, so sin/cos at a multiple of π/2 are exactly
  +0 and ±1 (before: 1.1e-49, -7.0e-43, and -0.0 where posenc.jax gives +0),
  the bits equal posenc.jax's, and every value is within 1 float64 ulp of
  mpmath (the phase held as a Fraction, sinpi/cospi at 300 bits).
- float16 ``include_input`` past 65504 is refused (before: inf and a warning).
- Arrays NumPy cannot read (bfloat16, meta, grad-requiring tensors, an
  ``__array__`` that raises) are refused by name (before: raw TypeError,
  RuntimeError).
- Outputs are sized before x or B is read: fourier_features of (10**5, 1)
  by (10**6, 1) is refused by name (before: MemoryError, "745 GiB"), a
  (10**7, 64) view with 50 bands in milliseconds (before: 24 s).
- A huge B is named as B, with B's bound (before: a position's message).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch

from hostile import Unread
from posenc import PosEncError, fourier_features, nerf_encoding
from posenc.fields import Nerfstudio
from reference import ulp_error

RNG = np.random.default_rng(3136)


def _quarter_rich(n: int, dtype: type) -> np.ndarray:
    """Coordinates k/8, k/64 and large multiples of 1/4 (angles on quarter turns), and random ones beside them."""
    k = RNG.integers(-4096, 4097, n)
    parts = [k / 8, k / 64, k * 3.0 + 0.25, RNG.uniform(-1, 1, n), RNG.uniform(-2e4, 2e4, n)]
    return np.concatenate(parts).astype(dtype).reshape(-1, 1)


def test_the_issues_sines_of_multiples_of_pi_are_exact_zeros():
    got = nerf_encoding([1.0], 3, convention="tcnn", dtype=np.float64)  # sin(π), cos(π), sin(2π), …
    assert got.tolist() == [0.0, -1.0, 0.0, 1.0, 0.0, 1.0] and not np.signbit(got[::2]).any()
    a = nerf_encoding(np.float32([[12301.495]]), 9, convention="nerfstudio")[0, 17]  # was -7.0e-43
    b = nerf_encoding(np.float32([[0.75]]), 24, convention="tcnn", dtype=np.float64)[0, -2]  # was -7.0e-43
    assert a == 0 and b == 0 and not np.signbit(a) and not np.signbit(b)


def _exact_turns(x: float, tau: Fraction) -> tuple[mpmath.mpf, mpmath.mpf]:
    """sin and cos of 2π·x·τ from the phase x·τ mod 1 held exactly, at 300 bits."""
    t = (Fraction(x) * tau) % 1
    with mpmath.workprec(300):
        turn = mpmath.mpf(t.numerator) / t.denominator
        return mpmath.sinpi(2 * turn), mpmath.cospi(2 * turn)


@pytest.mark.parametrize(("convention", "n", "taus"), [
    ("tcnn", 24, [Fraction(2) ** (k - 1) for k in range(24)]),
    (Nerfstudio(min_freq_exp=-3.0, max_freq_exp=8.0), 12, [Fraction(2) ** e for e in range(-3, 9)]),
])
def test_every_turn_band_is_within_an_ulp_and_exact_on_quarter_turns(convention, n, taus):
    x = np.concatenate([_quarter_rich(12, np.float32).astype(np.float64),
                        np.array([[0.75 + 2.0**-40], [2.0**30 + 0.125], [-(2.0**-30)], [-0.0], [3e-300]])])
    got = nerf_encoding(x, n, convention=convention, dtype=np.float64)
    order = "interleaved" if convention == "tcnn" else "blocks"
    bad, exact = [], 0
    for r, (v,) in enumerate(x.tolist()):
        for k, tau in enumerate(taus):
            s_ref, c_ref = _exact_turns(v, tau)
            cols = (2 * k, 2 * k + 1) if order == "interleaved" else (k, n + k)
            for col, ref in zip(cols, (s_ref, c_ref), strict=True):
                g = got[r, col]
                if ref in (0, 1, -1):  # a quarter turn: the value itself, a zero +0
                    exact += 1
                    if g != float(ref) or (ref == 0 and np.signbit(g)):
                        bad.append((v, k, col, float(g), float(ref)))
                elif ulp_error(float(g), ref, np.float64) > 1.0:
                    bad.append((v, k, col, float(g), float(ref)))
    assert bad == [] and exact > 200


@pytest.mark.parametrize(("convention", "n"), [("tcnn", 12), ("nerfstudio", 10), (Nerfstudio(0.0, 9.0), 10),
                                               ("nerf", 8)])
@pytest.mark.parametrize("include", [False, True])
def test_the_bits_are_posenc_jaxs(convention, n, include):
    import jax.numpy as jnp

    import posenc.jax as pj

    x = _quarter_rich(64, np.float32).reshape(-1, 2)
    x[0] = -0.0
    want = nerf_encoding(x, n, convention=convention, include_input=include)
    got = np.asarray(pj.nerf_encoding(jnp.asarray(x), n, convention=convention, include_input=include))
    assert got.dtype == np.float32 and np.array_equal(got.view(np.uint32), want.view(np.uint32))


def test_float16_include_input_past_65504_is_refused_before_work():
    with pytest.raises(PosEncError, match=r"x reaches \|x\| = 70000, which float16 cannot hold \(largest 65504\)"):
        nerf_encoding([70000.0], 1, dtype=np.float16)
    with pytest.raises(PosEncError, match="float16 cannot hold"):
        nerf_encoding([[1.0, -65520.0]], 2, convention="nerfstudio", include_input=True, dtype=np.float16)
    # the largest value float16 rounds to finite is taken, and without the raw channel any x is
    assert np.isfinite(nerf_encoding([[65519.0]], 1, dtype=np.float16)).all()
    assert np.isfinite(nerf_encoding([70000.0], 1, include_input=False, dtype=np.float16)).all()


class _Raises:
    def __array__(self, *args, **kwargs):
        raise RuntimeError("boom")


@pytest.mark.parametrize(("value", "named"), [
    (torch.tensor([[0.5]], dtype=torch.bfloat16), r"x must be real numbers, got a torch\.Tensor of dtype bfloat16"),
    (torch.tensor([[0.5]], device="meta"), r"on meta, which holds no values"),
    (torch.tensor([[0.5]], requires_grad=True), r"requires grad: pass x\.detach\(\)"),
    (_Raises(), r"x must be real numbers, got .*_Raises.* reading it raised RuntimeError: boom"),
])
@pytest.mark.parametrize("fn", ["nerf", "fourier"])
def test_what_numpy_cannot_read_is_refused_by_name(value, named, fn):
    with pytest.raises(PosEncError, match=named):
        if fn == "nerf":
            nerf_encoding(value, 2)
        else:
            fourier_features(value, [[1.0]])


def test_b_that_numpy_cannot_read_is_named_b():
    with pytest.raises(PosEncError, match=r"B must be an array .* requires grad: pass B\.detach\(\)"):
        fourier_features([[0.5]], torch.ones(1, 1, requires_grad=True))


def test_a_huge_b_is_named_with_bs_own_bound():
    with pytest.raises(PosEncError, match=r"B must satisfy \|B\| < 2\*\*53 .*got 1e\+300") as info:
        fourier_features([[0.5]], [[1e300]])
    assert "|p|" not in str(info.value) and "position" not in str(info.value)


def test_outputs_are_sized_before_x_or_b_is_read():
    # was a MemoryError for 745 GiB, and 24 s of validating a 6.4e8-value view before the refusal: Unread fails
    # the test if a value is read before the size is refused
    with pytest.raises(PosEncError, match=r"fourier_features output of shape \(100000, 2000000\) in float32 needs "
                                          r"745\.1 GiB"):
        fourier_features(Unread((10**5, 1)), Unread((10**6, 1)))
    with pytest.raises(PosEncError, match=r"field encoding of shape \(10000000, 6464\) in float32 needs"):
        nerf_encoding(Unread((10**7, 64)), 50)
