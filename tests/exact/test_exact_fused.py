"""The compiled engine's fused product (posenc.exact._fused): Dekker's error term, by one FMA, where both are exact.

Dekker's ``two_prod`` and ``fma(a, b, -a·b)`` are the exact error of ``a·b`` when ``e_a + e_b >= -970``, and
differ below; the engine takes the fused product only for rows whose products all lie in that range
(``ROW_FLOOR``). The references here are Fraction arithmetic and the NumPy engine, which keeps Dekker's product.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

import numpy as np
import pytest

from posenc.exact import Ladder, fill_sincos, seed_ladder
from posenc.exact.core import P0, P1, P2, split, two_prod

numba = pytest.importorskip("numba")

from posenc.exact._fused import ROW_FLOOR, intrinsics, target_has_fma  # noqa: E402


@pytest.fixture(scope="module")
def fused_prod():
    two_prod_fused, _, _ = intrinsics()

    @numba.njit
    def run(a, b):  # pragma: no cover
        out = np.empty((a.size, 2))
        for i in range(a.size):
            out[i, 0], out[i, 1] = two_prod_fused(a[i], 0.0, 0.0, b[i], 0.0, 0.0)
        return out

    return run


def _pairs(rng: np.random.Generator, exp_sum: int, size: int) -> tuple[np.ndarray, np.ndarray]:
    """Random normal doubles a, b of both signs with e_a + e_b == exp_sum (|e| <= 900: no overflow in a split)."""
    ea = rng.integers(max(-1022, exp_sum - 900), min(900, exp_sum + 1022) + 1, size)
    ma = rng.uniform(1, 2, size) * rng.choice([-1.0, 1.0], size)
    mb = rng.uniform(1, 2, size) * rng.choice([-1.0, 1.0], size)
    return np.ldexp(ma, ea), np.ldexp(mb, exp_sum - ea)


def _dekker(a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    ah, al = split(a)
    bh, bl = split(b)
    return two_prod(a, ah, al, b, bh, bl)


@pytest.mark.parametrize("exp_sum", [-970, -969, -900, -476, -100, 0, 40, 100])
def test_the_fused_error_is_dekkers_and_exact_in_the_range(fused_prod, exp_sum):
    a, b = _pairs(np.random.default_rng(exp_sum + 2000), exp_sum, 400)
    p, e = _dekker(a, b)
    got = fused_prod(a, b)
    assert np.array_equal(got[:, 0], p)
    assert np.array_equal(got[:, 1].view(np.int64), e.view(np.int64))  # bits: a zero error is +0 from both
    for x, y, hi, lo in zip(a[:50], b[:50], p[:50], e[:50], strict=True):
        assert Fraction(x) * Fraction(y) == Fraction(hi) + Fraction(lo)


def test_zero_factors_and_exact_products_give_plus_zero_both_ways(fused_prod):
    a = np.array([0.0, -0.0, 0.0, -0.0, 3.0, -3.0, 0.5, -(2.0**-500)])
    b = np.array([5.0, 5.0, -5.0, -5.0, 0.25, -0.25, 2.0**-400, 2.0**-300])
    _, e = _dekker(a, b)
    got = fused_prod(a, b)
    assert np.array_equal(got[:, 1].view(np.int64), e.view(np.int64))
    assert np.all(e.view(np.int64) == 0)  # +0.0, never -0.0


def test_below_the_range_the_two_errors_differ(fused_prod):
    # why rows with a product under ~2**-968 keep Dekker's: there the two round differently
    a, b = _pairs(np.random.default_rng(1), -1040, 2000)
    _, e = _dekker(a, b)
    got = fused_prod(a, b)
    assert not np.array_equal(got[:, 1], e)


def _engines(p: np.ndarray, lad: Ladder, dtype: type = np.float64, lo: np.ndarray | None = None) -> None:
    n = len(lad)
    outs = []
    for engine in ("numpy", "numba"):
        s, c = np.empty((p.size, n), dtype), np.empty((p.size, n), dtype)
        fill_sincos(p, lad, s, c, lo, engine=engine)
        outs.append((s.view(np.uint8), c.view(np.uint8)))
    assert np.array_equal(outs[0][0], outs[1][0]) and np.array_equal(outs[0][1], outs[1][1])


def _tiny_ladder() -> Ladder:
    # the smallest frequencies a ladder holds, a word w1 of 2**-1000, and ordinary ones beside them
    w0 = np.array([2.0**-960, 3 * 2.0**-950, 1e-250, 1.0, 1e-4, 0.7])
    w1 = np.array([0.0, 2.0**-1010, 2.0**-1000, 2.0**-60, 1e-21, 0.0])
    w2 = np.array([0.0, 0.0, 2.0**-1070, 0.0, 1e-38, 2.0**-1074])
    return Ladder(w0, w1, w2)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_rows_either_side_of_the_floor_give_the_numpy_bits(dtype):
    lad = _tiny_ladder()
    low = min(float(np.min(np.abs(w[w != 0]))) for w in (lad.w0, lad.w1, lad.w2))
    edge = ROW_FLOOR / low
    p = np.array([0.0, -0.0, 5e-324, -5e-324, 2.0**-1022, 1e-300, 1e-200, 1.0, -3.5, 1e6, 2.0**52,
                  *[edge * f for f in (0.5, 1 - 2.0**-52, 1.0, 1 + 2.0**-52, 2.0)]])
    p = np.concatenate([p, -p])
    p = p[np.abs(p) < 2.0**53]
    _engines(p, lad, dtype)
    lo = np.random.default_rng(0).choice([0.0, 1e-310, 2.0**-600, 1e-20], p.size)
    _engines(p, lad, dtype, lo)


def test_rows_above_the_floor_with_an_ordinary_ladder_give_the_numpy_bits():
    rng = np.random.default_rng(2)
    for lad in (seed_ladder(256, 10000.0), seed_ladder(64, 1e6)):
        small = rng.uniform(-1, 1, 200) * np.exp2(rng.integers(-300, 0, 200))
        p = np.concatenate([small, rng.uniform(-1e6, 1e6, 200), rng.integers(0, 1000, 100).astype(float)])
        _engines(p, lad)
        _engines(p, lad, lo=rng.uniform(-1e-9, 1e-9, p.size))


def test_a_half_pi_ladder_reduces_to_tiny_angles_and_keeps_the_numpy_bits():
    # ω = π/2 to three words: p·ω lands within ~P3 of a multiple of π/2, the reduced x ~2**-160, x·x ~2**-320
    lad = Ladder(np.array([P0, P0 / 3]), np.array([P1, 0.0]), np.array([P2, 0.0]))
    p = np.concatenate([np.arange(1.0, 400.0), 3.0 * np.arange(1.0, 400.0), [2.0**40, 2.0**52 - 1]])
    _engines(p, lad)


def test_target_has_fma_reads_numbas_target(monkeypatch):
    from numba.core import config

    monkeypatch.setattr(config, "CPU_FEATURES", "")  # what NUMBA_CPU_NAME=generic gives: the simd-off mode
    assert target_has_fma() is False
    monkeypatch.setattr(config, "CPU_FEATURES", "+avx,+fma,+sse2")
    assert target_has_fma() is True
    monkeypatch.setattr(config, "CPU_FEATURES", "+avx,-fma")
    assert target_has_fma() is False


def test_the_kernel_takes_512_bit_vectors_where_the_cpu_has_them():
    import llvmlite.binding as ll
    from numba.core import config

    from posenc.exact.angles import _build_near_paired

    features = config.CPU_FEATURES if config.CPU_FEATURES is not None else ll.get_host_cpu_features().flatten()
    wide = "+avx512f" in features.split(",")
    kern = numba.njit(nogil=True)(_build_near_paired().py_func)  # compiled here: numba hides a cached kernel's asm
    lad = seed_ladder(64, 10000.0)
    out = np.empty((3, 64), np.float32)
    w0h, w0l, w1h, w1l = lad.splits
    kern(np.arange(3.0), np.arange(3.0), False, lad.w0, lad.w1, lad.w2, w0h, w0l, w1h, w1l, out, 32, 0, 0, 3)
    asm = "".join(kern.inspect_asm().values())
    assert bool(re.search(r"%zmm\d", asm)) == wide
    if wide:  # every part of the kernel asks for the width, not only its outer loop (3 in 4 were 256-bit)
        zmm, ymm = (len(re.findall(rf"v\w+pd\s+%{r}mm", asm)) for r in ("z", "y"))
        assert ymm * 20 < zmm, (ymm, zmm)
    assert bool(re.search(r"vfmsub\w*pd", asm)) == target_has_fma()  # the fused product, vectorised
    assert math.isclose(float(out[1, 0]), math.cos(1.0), rel_tol=1e-6)


def test_the_kernels_cache_names_carry_the_sources_they_compile():
    # numba stamps the cache with fill.py's file alone: an edit to core.py, _fused.py or _narrow.py, whose
    # functions the kernels compile too, must rename the kernels
    import hashlib
    from pathlib import Path

    from posenc.exact import fill

    here = Path(fill.__file__).parent
    sources = b"".join((here / name).read_bytes() for name in ("core.py", "_fused.py", "_narrow.py"))
    want = hashlib.sha256(sources).hexdigest()[:12]
    names = {fill._variant_name(near, paired) for near in (False, True) for paired in (False, True)}
    assert len(names) == 4 and all(name.endswith("_" + want) for name in names)
    assert fill.build_fill(near=True, paired=True).py_func.__qualname__ == fill._variant_name(True, True)
