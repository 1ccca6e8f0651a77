"""The arithmetic of the exact path, written once for NumPy arrays and numba scalars alike.

Everything here is IEEE additions, multiplications, ``rint`` and ``floor``
on float64 — no libm, no fused multiply-add — so it gives the same bits on
every machine, applied elementwise to NumPy arrays (:mod:`.angles`) or
compiled by numba for one element at a time (:func:`build_fill`, the
optional ``fast`` engine). The numba kernel is assembled from these very
functions, so the two engines cannot drift apart. Its substitutions, on
a CPU with FMA, give the same bits by proof: :func:`two_prod`'s error term
by one fused multiply-add, for the rows where that is Dekker's exact error
(:mod:`posenc.exact._fused`); and float32 values from a quicker evaluation
where its error bound decides the rounding (:mod:`posenc.exact._narrow`). The page's explorer runs a
JavaScript twin of them (``posenc/page/exact.js``): a change here must be made
there too, and tests/page/test_page_exact.py fails until the bits agree again.

References: T. J. Dekker, "A floating-point technique for extending the
available precision", Numer. Math. 18 (1971) (two-sum, two-product,
Veltkamp splitting); M. Payne and R. Hanek, "Radian reduction for
trigonometric functions", SIGNUM Newsletter 18 (1983) (reduction with a
multi-word π).
"""

from __future__ import annotations

import functools
import hashlib
import math
import types
from contextlib import AbstractContextManager
from decimal import Context, Decimal, getcontext, localcontext
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from ..support.optional import cacheable

__all__ = [
    "DECIMAL_PREC",
    "FAST_EPS",
    "NEAR_ANGLE",
    "build_fill",
    "decimal_context",
    "quadrant",
    "reduce_core",
    "refold",
    "sincos_core",
    "split",
    "turns_core",
    "two_prod",
    "two_sum",
]

#: Decimal digits for every high-precision constant (~232 bits): frequencies,
#: wavelengths, scalings and the words of π/2 are all computed at this precision.
DECIMAL_PREC = 70


def decimal_context(prec: int = DECIMAL_PREC) -> AbstractContextManager[Context]:
    """The one Decimal context of posenc's high-precision constants: :data:`DECIMAL_PREC` digits.

    Whatever the caller's context, ``with decimal_context():`` computes at
    ``prec`` digits and restores it after (a thread's context is its own).

    >>> with decimal_context():
    ...     len(str(Decimal(1) / 3)) - 2
    70
    """
    ctx = getcontext().copy()
    ctx.prec = prec
    return localcontext(ctx)

#: Bound on |fast table path - exact path| in float64 (see posenc.exact.consecutive).
FAST_EPS = 2.0**-48

SPLITTER = 134217729.0  # 2**27 + 1: Veltkamp's constant for 53-bit doubles

# π to 120 digits (the one copy: posenc.exact.decimal_pi); checked against mpmath in tests/test_exact.py.
PI_DIGITS = (
    "3.14159265358979323846264338327950288419716939937510"
    "58209749445923078164062862089986280348253421170679"
    "82148086513282306647"
)


def split(a: Any) -> tuple[Any, Any]:
    """Veltkamp: ``hi + lo == a`` with each half holding at most 26 bits."""
    t = SPLITTER * a
    hi = t - (t - a)
    return hi, a - hi


def two_prod(a: Any, ah: Any, al: Any, b: Any, bh: Any, bl: Any) -> tuple[Any, Any]:
    """Dekker: ``p + e == a * b`` exactly, given the Veltkamp halves of a and b."""
    p = a * b
    e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
    return p, e


def two_sum(a: Any, b: Any) -> tuple[Any, Any]:
    """Knuth: ``s + e == a + b`` exactly, for any magnitudes."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


def _words(numerator: Decimal, denominator: int, count: int) -> list[float]:
    parts = []
    with decimal_context():
        rest = numerator / denominator
        for _ in range(count):
            f = float(rest)
            parts.append(f)
            rest = rest - Decimal(f)
    return parts


# π/2 as four doubles (~210 bits), with the Veltkamp halves of the first two for exact k·P.
HALF_PI = _words(Decimal(PI_DIGITS), 2, 4)
P0, P1, P2, P3 = HALF_PI
P0H, P0L = split(P0)
P1H, P1L = split(P1)
TWO_OVER_PI = 2.0 / math.pi


def _taylor(first: int, last: int) -> np.ndarray:
    """(-1)**j / n! for n = first, first+2, ..., last, correctly rounded."""
    out = [float(Fraction(-1 if (n // 2) % 2 else 1, math.factorial(n))) for n in range(first, last + 1, 2)]
    return np.array(out, dtype=np.float64)


SIN_C = _taylor(3, 21)  # sin x = x + x**3 (c3 + c5 x**2 + ... + c21 x**18): truncation < 2**-66 on |x| <= 1
COS_C = _taylor(4, 22)  # cos x = 1 - x**2/2 + x**4 (c4 + ... + c22 x**18)


def horner(c: np.ndarray, z: Any) -> Any:
    """c[0] + c[1] z + … + c[-1] z**(len-1)."""
    acc = c[-1] * z + c[-2]
    for j in range(c.shape[0] - 3, -1, -1):
        acc = acc * z + c[j]
    return acc


def reduce_core(
    p: Any, ph: Any, pl: Any, plo: Any, qh: Any, ql: Any, has_lo: bool,
    w0: Any, w1: Any, w2: Any, w0h: Any, w0l: Any, w1h: Any, w1l: Any,
) -> tuple[Any, Any, Any]:
    """θ = (p + plo)·(w0 + w1 + w2) = k·π/2 + (x + y), |x| <= ~π/4 below |θ| ~ 2**50.

    ``ph, pl`` (and ``qh, ql``) are the Veltkamp halves of p (and plo), ``w0h …``
    those of the ladder's words.
    """
    h0, l0 = two_prod(p, ph, pl, w0, w0h, w0l)
    h1, l1 = two_prod(p, ph, pl, w1, w1h, w1l)
    k = np.rint(h0 * TWO_OVER_PI)
    kh, kl = split(k)
    a0, b0 = two_prod(k, kh, kl, P0, P0H, P0L)
    a1, b1 = two_prod(k, kh, kl, P1, P1H, P1L)
    # h0 and k·P0 agree in their leading bits: the cancellation happens here, and two_sum keeps it exact
    s, e = two_sum(h0, -a0)
    small = (l1 - b1) + (p * w2 - k * P2) - k * P3
    s, err = two_sum(s, l0)
    e = e + err
    s, err = two_sum(s, -b0)
    e = e + err
    s, err = two_sum(s, h1)
    e = e + err
    s, err = two_sum(s, -a1)
    e = e + err
    if has_lo:
        c0, d0 = two_prod(plo, qh, ql, w0, w0h, w0l)
        small = small + d0 + plo * w1
        s, err = two_sum(s, c0)
        e = e + err
    x, y = two_sum(s, e + small)
    return k, x, y


def refold(x: Any, y: Any) -> tuple[Any, Any, Any]:
    """For |x| > 0.8 (θ·2/π rounded to a neighbouring k above |θ| ~ 2**50): (k2, x', y') with x' back in range."""
    k2 = np.rint(x * TWO_OVER_PI)
    k2h, k2l = split(k2)
    t0, u0 = two_prod(k2, k2h, k2l, P0, P0H, P0L)
    x, err = two_sum(x, -t0)
    y = y + err - u0 - k2 * P1
    x, y = two_sum(x, y)
    return k2, x, y


def turns_core(hi: Any, lo: Any) -> tuple[Any, Any, Any]:
    """A phase of ``hi + lo`` turns (``|lo| <= ulp(hi)``) as ``(q, f, g)``: hi + lo = n + q/4 + (f + g) exactly.

    n is an integer (dropped: whole turns), q ∈ {0, 1, 2, 3} the quarter
    turns and ``|f + g| <= 1/8`` (to a rounding), ``|g| <= ulp(f)/2``. Every
    step is exact, whatever the magnitude: ``hi − rint(hi)`` (``hi`` within
    1/2 of an integer that is a multiple of its ulp, or Sterbenz below 1),
    the renormalising two-sum, and ``r − k/4`` (``|r − k/4| <= 1/8 <= |r|``
    and k/4 a multiple of ulp(r)). So a phase that is a multiple of 1/4
    gives f = g = 0 exactly, and sin/cos of 2π·(f + g) never meets an
    angle past π/4 (see :func:`quadrant` for the turn back).
    """
    r, e = two_sum(hi - np.rint(hi), lo)
    k = np.rint(4.0 * r)
    f, g = two_sum(r - 0.25 * k, e)
    return k - 4.0 * np.floor(k * 0.25), f, g


def quadrant(k: Any, s: Any, c: Any) -> tuple[Any, Any]:
    """sin and cos of k·π/2 + t from ``s``, ``c`` = sin t, cos t (k a whole float): a swap and signs, exact.

    >>> quadrant(np.array([0.0, 1.0, 2.0, -1.0]), np.array([0.6] * 4), np.array([0.8] * 4))
    (array([ 0.6,  0.8, -0.6, -0.8]), array([ 0.8, -0.6, -0.8,  0.6]))
    """
    q = k - 4.0 * np.floor(k * 0.25)
    odd = (q == 1.0) | (q == 3.0)
    s, c = np.where(odd, c, s), np.where(odd, s, c)
    return np.where(q >= 2.0, -s, s), np.where((q == 1.0) | (q == 2.0), -c, c)


def sincos_core(x: Any, y: Any) -> tuple[Any, Any]:
    """sin and cos of x + y (|x + y| <= 1, |y| <= ulp(x)), to under 1 float64 ulp."""
    xh, xl = split(x)
    zh, zl = two_prod(x, xh, xl, x, xh, xl)  # x**2 exactly
    poly = horner(SIN_C, zh)
    hz = 0.5 * zh
    sin_r = x + (x * zh * poly + y * (1.0 - hz))
    poly = horner(COS_C, zh)
    w = 1.0 - hz
    # (1 - w) - hz recovers the rounding error of 1 - hz exactly (Sterbenz)
    cos_r = w + ((((1.0 - w) - hz) - 0.5 * zl) + (zh * zh * poly - x * y))
    return sin_r, cos_r


def _numba_twin(fn: Any, env: dict[str, Any], njit: Any) -> Any:
    """fn compiled by numba, its calls to this module's helpers bound to their compiled twins."""
    clone = types.FunctionType(fn.__code__, {**fn.__globals__, **env}, fn.__name__, fn.__defaults__)
    return njit(nogil=True, inline="always")(clone)


#: Below this |θ| the reduction's x stays under 0.8, so :func:`refold` never runs (see :func:`build_fill`).
NEAR_ANGLE = 2.0**40


def build_fill(near: bool = False, paired: bool = False) -> Any:
    """The numba engine: ``fill(pos, plo, has_lo, w0, w1, w2, w0h, w0l, w1h, w1l, sin_out, cos_out, first, last)``.

    Rows ``first … last-1`` of ``sin_out``/``cos_out`` ``[m, n]``, one element at
    a time, with the functions above (compiled without fastmath: no FMA
    contraction, the same bits as NumPy). Raises ImportError without numba.

    On a CPU with FMA, a row whose position (and low part) is 0 or has
    ``|p|·w >= ROW_FLOOR`` for the ladder's smallest word forms every exact
    product with one fused multiply-add (:mod:`posenc.exact._fused`: there
    it is Dekker's error, the same bits); the other rows keep Dekker's. The
    kernel asks for 512-bit vectors. [4096, 128] near kernel, one thread,
    this CPU (AVX-512): 2.6 -> 1.7 ms (median of 41), ~1.25x from each.
    Into float32, the near kernel first tries each such row (no low part,
    p ≠ 0) by a quicker evaluation with a proven bound, and keeps it where
    the bound decides every float32 (:mod:`posenc.exact._narrow`: then it
    is this kernel's rounding; about one row in 1000 is computed again
    here): 1.7 -> 0.95 ms.

    ``near=True`` compiles it without the far branch (:func:`refold`), for
    angles |θ| < :data:`NEAR_ANGLE` only, where that branch is never taken:
    k = rint(h0·2/π) is within 1/2 + 3.1·2**-53·|θ|·2/π of θ·2/π (three
    roundings: h0, 2/π and their product), so |x| <= π/4 + 3.1·2**-53·|θ| +
    an ulp, under 0.786 < 0.8 there. The same operations run on every value
    it takes, so the bits are the full kernel's; it is ~30% faster
    (vectorised, the far branch is computed for every lane and then selected).

    ``paired=True``: ``sin_out, cos_out`` become ``out, s_col, c_col``, one
    C-contiguous ``[m, ≥ n]`` array and the first columns of the sines and
    the cosines in it (the two halves of one output, as
    :class:`posenc.torch.Timesteps` writes). The halves as two views are
    non-contiguous arrays to numba, stored element by element with a
    runtime stride; row slices of one C array are contiguous, and their
    stores vectorise (~10% of the whole kernel on [4096, 256] float32). The
    values and their rounding are the same.
    """
    from numba import njit

    from ._fused import ROW_FLOOR, intrinsics, target_has_fma
    from ._narrow import build_narrow_row, build_row_beta

    fused = target_has_fma()  # else Dekker's product everywhere: no libm fma
    two_prod_fused, wide_vectors, fma = intrinsics()
    narrow = fused and near  # float32 rows by the quick evaluation first (posenc.exact._narrow)
    narrow_row, row_beta = build_narrow_row(njit, fma), build_row_beta(njit)
    rows = _row_kernel(near, False, njit), _row_kernel(near, True, njit)
    quick = _row_kernel(near, False, njit, two_prod_fused), _row_kernel(near, True, njit, two_prod_fused)
    store = _quadrant_store(njit)
    # Each row is computed into float64 buffers of its own, then stored: LLVM vectorises the arithmetic loops
    # only where it can prove their stores do not overlap, which two halves of one output (sin and cos side
    # by side, a strided view) defeat. Measured on 4096 x 128 float32, one thread: 10.7 ms into the two
    # halves of one [4096, 256] array, 2.1 ms with the buffers (1.9 ms into two separate arrays either way).
    # A buffer holds the float64 value; the store rounds it once, as a direct store would: the same bits.
    one_row, one_row_lo = rows
    quick_row, quick_row_lo = quick

    @njit(nogil=True, inline="always")
    def smallest(w):  # pragma: no cover
        low = np.inf
        for v in w:
            if v != 0.0 and abs(v) < low:
                low = abs(v)
        return low

    @njit(nogil=True, inline="always")
    def largest(w):  # pragma: no cover
        top = 0.0
        for v in w:
            top = max(top, abs(v))
        return top

    @njit(nogil=True, inline="always")
    def fill_rows(pos, plo, has_lo, w0, w1, w2, w0h, w0l, w1h, w1l, s_out, s_col, c_out, c_col, first,
                  last):  # pragma: no cover
        wide_vectors()
        n = w0.shape[0]
        kb, xb, yb, sb, cb = np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.empty(n)
        low = min(smallest(w0), smallest(w1), smallest(w2))
        top0, top1, top2 = largest(w0), largest(w1), largest(w2)
        s32, c32 = np.empty(n, np.float32), np.empty(n, np.float32)
        for r in range(first, last):
            # the fused product where every product is exact both ways (see posenc.exact._fused)
            p = pos[r]
            ok = fused and (p == 0.0 or abs(p) * low >= ROW_FLOOR)
            if (narrow and ok and not has_lo and p != 0.0 and s_out.itemsize == 4
                    and narrow_row(p, w0, w1, row_beta(p, top0, top1, top2), kb, s32, c32)):
                store(kb, s32, c32, s_out, r, s_col, c_out, r, c_col, n)
                continue
            if has_lo:
                q = plo[r]
                if ok and (q == 0.0 or abs(q) * low >= ROW_FLOOR):
                    quick_row_lo(pos, plo, w0, w1, w2, w0h, w0l, w1h, w1l, r, kb, xb, yb, sb, cb)
                else:
                    one_row_lo(pos, plo, w0, w1, w2, w0h, w0l, w1h, w1l, r, kb, xb, yb, sb, cb)
            elif ok:
                quick_row(pos, plo, w0, w1, w2, w0h, w0l, w1h, w1l, r, kb, xb, yb, sb, cb)
            else:
                one_row(pos, plo, w0, w1, w2, w0h, w0l, w1h, w1l, r, kb, xb, yb, sb, cb)
            store(kb, sb, cb, s_out, r, s_col, c_out, r, c_col, n)

    template = _fill_paired if paired else _fill
    # the row loop is a global of the kernel, not a closure cell: a closure over a compiled function defeats
    # numba's cache (posenc.support.optional.cacheable)
    return njit(cache=True, nogil=True)(cacheable(template, {"_fill_rows": fill_rows}, _variant_name(near, paired)))


def _variant_name(near: bool, paired: bool) -> str:
    """The name a :func:`build_fill` kernel is compiled and cached under: one per variant and callees' sources.

    numba stamps the cache with this file alone; the kernels also compile
    code from :mod:`._fused` and :mod:`._narrow`, so the name carries a
    digest of those files: an edit to either compiles the kernels afresh.
    """
    return f"fill_{'near' if near else 'far'}_{'paired' if paired else 'split'}_{_callee_digest()}"


@functools.cache
def _callee_digest() -> str:
    """12 hex digits of SHA-256 over the sources of the other modules :func:`build_fill` compiles."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in ("_fused.py", "_narrow.py"):
        digest.update((here / name).read_bytes())
    return digest.hexdigest()[:12]


def _fill_rows(*args: Any) -> None:  # pragma: no cover - each kernel's own compiled rows, bound by build_fill
    raise NotImplementedError("bound to a variant's compiled rows by build_fill")


def _fill_paired(pos, plo, has_lo, w0, w1, w2, w0h, w0l, w1h, w1l, out, s_col, c_col, first,
                 last):  # pragma: no cover - compiled
    # slices of a C row: contiguous, so the rounding stores vectorise
    _fill_rows(pos, plo, has_lo, w0, w1, w2, w0h, w0l, w1h, w1l, out, s_col, out, c_col, first, last)


def _fill(pos, plo, has_lo, w0, w1, w2, w0h, w0l, w1h, w1l, sin_out, cos_out, first,
          last):  # pragma: no cover - compiled
    _fill_rows(pos, plo, has_lo, w0, w1, w2, w0h, w0l, w1h, w1l, sin_out, 0, cos_out, 0, first, last)


def _row_kernel(near: bool, has_lo: bool, njit: Any, fused: Any = None) -> Any:
    """:func:`build_fill`'s arithmetic for one row, in two loops: ``one_row(pos, plo, w0 … w1l, r, kb, …, cb)``.

    ``has_lo`` is compiled in (the low parts of the positions read or not):
    as an argument its branch stayed in the loop.

    The first loop reduces every angle of the row (k into ``kb``, the
    reduced x + y into ``xb``, ``yb``), the second writes sin and cos of
    x + y (:func:`sincos_core`) into ``sb``, ``cb``. One loop doing both
    was as long as the out-of-order window: each element's chain of
    dependent roundings (~200 cycles) ran with little else beside it. Split,
    each loop body is short enough for several iterations to overlap
    (4096 x 128, one thread: ~25% less time with the float quadrant of
    :func:`_quadrant_store`). A float64 value stored and read back is the
    same value: the operations, their order and the bits are unchanged.

    ``fused``: a two-product to use in place of :func:`two_prod`
    (:mod:`posenc.exact._fused`), for the rows where it gives the same bits.
    """
    env: dict[str, Any] = {}
    for f in (split, two_prod, two_sum, horner, reduce_core, refold, sincos_core):
        env[f.__name__] = fused if f is two_prod and fused is not None else _numba_twin(f, env, njit)

    r_core, r_fold, sc_core, nb_split = env["reduce_core"], env["refold"], env["sincos_core"], env["split"]

    @njit(nogil=True, inline="always")
    def one_row(pos, plo, w0, w1, w2, w0h, w0l, w1h, w1l, r, kb, xb, yb, sb, cb):  # pragma: no cover
        n = w0.shape[0]
        p = pos[r]
        ph, pl = nb_split(p)
        lo = plo[r] if has_lo else 0.0
        qh, ql = nb_split(lo)
        for i in range(n):
            k, x, y = r_core(p, ph, pl, lo, qh, ql, has_lo, w0[i], w1[i], w2[i], w0h[i], w0l[i], w1h[i], w1l[i])
            if not near and abs(x) > 0.8:  # near (and has_lo): constants, folded away by the compiler
                k2, x, y = r_fold(x, y)
                k = k + k2
            kb[i] = k
            xb[i] = x
            yb[i] = y
        for i in range(n):
            sb[i], cb[i] = sc_core(xb[i], yb[i])

    return one_row


def _quadrant_store(njit: Any) -> Any:
    """``store(kb, sb, cb, s_out, s_row, s_col, c_out, c_row, c_col, n)``: :func:`quadrant`, into two row slices.

    ``s_out[s_row, s_col:s_col + n]`` gets the sines of k·π/2 + t from
    ``kb``, ``sb``, ``cb`` (k, sin t, cos t), ``c_out[c_row, c_col:…]`` the
    cosines. In floats, as :func:`quadrant` itself: q = k mod 4 is a whole
    float, so the comparisons pick what an integer q would (converting each
    k to an integer was a scalar instruction per lane).
    """

    @njit(nogil=True, inline="always")
    def store(kb, sb, cb, s_out, s_row, s_col, c_out, c_row, c_col, n):  # pragma: no cover
        s_dst = s_out[s_row, s_col:s_col + n]
        c_dst = c_out[c_row, c_col:c_col + n]
        for i in range(n):
            k, sin_t, cos_t = kb[i], sb[i], cb[i]  # read unconditionally: loads under a branch stay scalar
            q = k - 4.0 * np.floor(k * 0.25)
            odd = q == 1.0 or q == 3.0
            sv = cos_t if odd else sin_t
            cv = sin_t if odd else cos_t
            s_dst[i] = -sv if q >= 2.0 else sv
            c_dst[i] = -cv if (q == 1.0 or q == 2.0) else cv

    return store
