"""The numba engine of the exact path: rows of sines and cosines, compiled from :mod:`.core`'s arithmetic.

:func:`build_fill` assembles one kernel per variant (near or far angles,
two outputs or the halves of one) from the very functions
:mod:`posenc.exact.core` applies to NumPy arrays, recompiled for one
element at a time, so the two engines cannot drift apart. Where the CPU
has FMA it substitutes two things that give the same bits by proof: the
fused error term of a product (:mod:`._fused`) and, into float32, a
quicker evaluation whose error bound decides the rounding
(:mod:`._narrow`). :mod:`posenc.exact.angles` chooses the variant and
calls it; numba is optional (``pip install posenc[fast]``), and without
it :func:`build_fill` raises ImportError.
"""

from __future__ import annotations

import functools
import hashlib
import types
from pathlib import Path
from typing import Any

import numpy as np

from ..support.optional import cacheable
from ._fused import ROW_FLOOR, intrinsics, target_has_fma
from ._narrow import build_narrow_row, build_row_beta
from .core import horner, reduce_core, refold, sincos_core, split, two_prod, two_sum

__all__ = ["build_fill"]


# The kernels' parts are separate numba functions, inlined by LLVM, not by numba (``inline="always"``): numba's
# inlining re-types a callee's whole tree at each call site, so the four row loops and their reductions were
# typed again in every kernel signature. Compiled apart, each part is typed once per argument types and
# reused by every signature. First calls of the eight `encode` kernels (two layouts, near and far, float32
# and float64), one core: 34 s -> 16 s; each kernel runs 5-10% faster (4096 x 256, one thread). Every
# function with a loop asks for 512-bit vectors itself (``wide_vectors()``): the hint marks one LLVM function,
# and each function's loops are vectorised when it is compiled, at its own width (without the hint in the row
# loops, 3 in 4 vector operations were 256-bit). The same operations in the same order: the same bits.
#
# A part whose body depends on the variant is compiled under a name that says which (:func:`_compiled_as`):
# numba names a function by its qualified name and a counter of the process, and a kernel loaded from the
# disk cache links to a function of the same name compiled in this process, taking it for the same code.
# Two variants' parts under one name had the counter meet across processes: a far kernel loaded where the
# near one had been compiled ran the near rows, and other bits (two pytest-xdist workers, float64).


def _compiled_as(njit: Any, name: str) -> Any:
    """A decorator: the function compiled by numba (nogil) under the qualified name ``name``."""

    def compile_named(fn: Any) -> Any:
        fn.__qualname__ = name
        return njit(nogil=True)(fn)

    return compile_named


def _numba_twin(fn: Any, env: dict[str, Any], njit: Any, variant: str) -> Any:
    """fn compiled by numba, its calls to :mod:`.core`'s helpers bound to their compiled twins (``variant``'s)."""
    clone = types.FunctionType(fn.__code__, {**fn.__globals__, **env}, fn.__name__, fn.__defaults__)
    return _compiled_as(njit, f"{fn.__name__}_{variant}")(clone)


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

    smallest, largest = _word_scans(njit)

    @_compiled_as(njit, f"fill_rows_{'near' if near else 'far'}_{'fma' if fused else 'dekker'}")
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
    code from :mod:`.core`, :mod:`._fused` and :mod:`._narrow`, so the name
    carries a digest of those files: an edit to any compiles the kernels
    afresh.
    """
    return f"fill_{'near' if near else 'far'}_{'paired' if paired else 'split'}_{_callee_digest()}"


@functools.cache
def _callee_digest() -> str:
    """12 hex digits of SHA-256 over the sources of the other modules :func:`build_fill` compiles."""
    here = Path(__file__).resolve().parent
    digest = hashlib.sha256()
    for name in ("core.py", "_fused.py", "_narrow.py"):
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
    variant = "dekker" if fused is None else "fma"
    for f in (split, two_prod, two_sum, horner, reduce_core, refold, sincos_core):
        env[f.__name__] = fused if f is two_prod and fused is not None else _numba_twin(f, env, njit, variant)

    r_core, r_fold, sc_core, nb_split = env["reduce_core"], env["refold"], env["sincos_core"], env["split"]
    wide_vectors = intrinsics()[1]

    @_compiled_as(njit, f"one_row_{'near' if near else 'far'}_{'lo' if has_lo else 'p'}_{variant}")
    def one_row(pos, plo, w0, w1, w2, w0h, w0l, w1h, w1l, r, kb, xb, yb, sb, cb):  # pragma: no cover
        wide_vectors()
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

    wide_vectors = intrinsics()[1]

    @njit(nogil=True)
    def store(kb, sb, cb, s_out, s_row, s_col, c_out, c_row, c_col, n):  # pragma: no cover
        wide_vectors()
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


def _word_scans(njit: Any) -> tuple[Any, Any]:
    """``smallest(w)``, ``largest(w)``: the least nonzero and the greatest magnitude of a ladder's words."""

    @njit(nogil=True)
    def smallest(w):  # pragma: no cover
        low = np.inf
        for v in w:
            if v != 0.0 and abs(v) < low:
                low = abs(v)
        return low

    @njit(nogil=True)
    def largest(w):  # pragma: no cover
        top = 0.0
        for v in w:
            top = max(top, abs(v))
        return top

    return smallest, largest
