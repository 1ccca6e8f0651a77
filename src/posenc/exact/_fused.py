"""The compiled engine's fused product: Dekker's exact error term in one fused multiply-add, where it is the same.

:func:`posenc.exact.core.two_prod` gives ``p + e == a·b`` exactly with
Dekker's algorithm: eight operations after the Veltkamp splits. A fused
multiply-add computes ``a·b − p`` with one rounding, so ``fma(a, b, −p)`` is
the same ``e`` whenever that error is a double, with no splits at all. This
module gives numba that product (``llvm.fma.f64``) for :func:`build_fill
<posenc.exact.fill.build_fill>`, and says where it equals Dekker's bit for bit.

**Where the two agree.** Let ``a·b`` have no overflow and write ``e_a``,
``e_b`` for the exponents (``2**e_a <= |a| < 2**(e_a + 1)``). If
``e_a + e_b >= e_min + p − 1 = −1022 + 53 − 1 = −970``, Dekker's product is
exact (J.-M. Muller et al., *Handbook of Floating-Point Arithmetic*, 2nd ed.,
2018, section 4.4.2: every partial product ``a_h·b_h … a_l·b_l`` and their
sums are exact there), and so is the fused one: ``a·b − p`` is a multiple of
``2**(e_a + e_b − 104) >= 2**−1074`` and below ``ulp(p)/2`` in magnitude, so
it is a double and ``fma`` returns it. Both are then the one exact error,
and the same bits: an error of zero is +0 from both (``x − x`` and every sum
of exact zeros with a +0 in it are +0 when rounding to nearest, and Dekker's
first term ``a_h·b_h − p`` is one; ``fma(a, b, −p)`` is ``a·b + (−p)`` with
the two of opposite signs or both zero of opposite signs). If ``a`` or ``b``
is ±0 both give +0 the same way. Only below that exponent sum (products
under ~2**−968) can either be inexact, and then differently.

**Which rows qualify.** :func:`~posenc.exact.fill.build_fill` forms the
products p·w0, p·w1 (and lo·w0) of a position and the ladder's words, k·P0,
k·P1 (k a whole number, P the words of π/2) and x·x of the reduced angle. It
takes the fused product for a row whose position p (and low part lo) is 0
or has ``fl(|p|·w) >= ROW_FLOOR = 2**−370`` for the smallest nonzero word w
of w0, w1, w2; else Dekker's, as the NumPy engine. In such a row every
product is in the exact range:

- ``|p|·|w| > 2**−371`` for every nonzero word, so ``e_p + e_w >= −372``
  (``|p|·|w| < 2**(e_p + e_w + 2)``), far above −970; k·P0 and k·P1 have
  ``e_k >= 0`` or k = 0.
- x·x: every term the reduction adds up is an integer multiple of
  ``Q = 2**−476``. p·w_j (and fl(p·w2)) are multiples of
  ``2**(e_p + e_w − 104) >= 2**−476`` (p a multiple of ``2**(e_p − 52)``, w
  of ``2**(e_w − 52)``), k·P_j of ``2**(e_P − 52) >= 2**−216`` and the
  two-products' errors of the same quanta; a sum of multiples of Q rounded
  to a double stays one (below ``2**53·Q`` it is a double already; above,
  its ulp is a larger power of two), and two-sums are exact. So the reduced
  x is 0 or ``|x| >= 2**−476``: then ``2·e_x >= −952`` and x·x is exact,
  or both give +0.

So every row's bits are the NumPy engine's. A position below ``~2**−370/w``
(~1e-80 for the usual ladders; 0 itself qualifies) takes the slower row.

**numba's cache.** The kernels that use this module are defined in
:mod:`posenc.exact.core`, whose file stamps numba's cache; their names carry
a digest of this file and :mod:`posenc.exact._narrow`, so an edit to either
compiles them afresh (``fill._variant_name``).

**Where there is no fused multiply-add.** On a target without the FMA
instruction LLVM would call libm's ``fma``: :func:`target_has_fma` says so
first, and the engine then keeps Dekker's product everywhere (no libm in a
computed value). ``NUMBA_CPU_NAME=generic`` (the fingerprint's ``simd-off``
mode) is such a target.

**Vector width.** LLVM's cost model for recent Intel cores prefers 256-bit
vectors even where 512-bit ones exist (``prefer-256-bit``, for the clock
drop of AVX-512 on Skylake). The kernel is throughput-bound float64
arithmetic: :func:`wide_vectors` asks for 512-bit vectors in the function
that calls it (the function attribute clang's ``-mprefer-vector-width=512``
sets). The same IEEE operations run in wider registers: the same bits.
Without AVX-512 the attribute changes nothing.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ROW_FLOOR", "intrinsics", "target_has_fma"]

#: A row whose position p is 0 or has ``fl(|p|·w) >= ROW_FLOOR`` for the ladder's smallest nonzero word w
#: (and the same for its low part) forms only exact products (see the module's docstring).
ROW_FLOOR = 2.0**-370


def target_has_fma() -> bool:
    """True when numba compiles for a CPU with the FMA instruction (its own settings: ``NUMBA_CPU_*`` too).

    Raises ImportError without numba.
    """
    from numba.core import config

    features = getattr(config, "CPU_FEATURES", None)  # set by numba's config from its environment
    if features is None:
        import llvmlite.binding as ll

        features = ll.get_host_cpu_features().flatten()
    return "+fma" in features.split(",")


def intrinsics() -> tuple[Any, Any, Any]:
    """``(two_prod_fused, wide_vectors, fma)`` for numba code (ImportError without numba).

    ``two_prod_fused(a, ah, al, b, bh, bl)`` has :func:`~posenc.exact.core.two_prod`'s
    signature (the halves unused, and dropped by the compiler) and returns
    ``(a·b, fma(a, b, −a·b))``. ``wide_vectors()`` marks the calling function
    for 512-bit vectors. ``fma(a, b, c)``: ``a·b + c`` rounded once (float64).
    """
    from llvmlite import ir
    from numba import njit, types
    from numba.extending import intrinsic

    @intrinsic
    def fma(typingctx: Any, a: Any, b: Any, c: Any) -> Any:  # pragma: no cover - runs inside numba
        f64 = types.float64
        sig = f64(f64, f64, f64)

        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            d = ir.DoubleType()
            fn = builder.module.declare_intrinsic("llvm.fma", [d], ir.FunctionType(d, [d, d, d]))
            return builder.call(fn, args)

        return sig, codegen

    @intrinsic
    def wide_vectors(typingctx: Any) -> Any:  # pragma: no cover - runs inside numba
        def codegen(context: Any, builder: Any, signature: Any, args: Any) -> Any:
            # llvmlite names only the keyword attributes; a string attribute goes in the set as written.
            # A hint: where this llvmlite will not take it, the kernel keeps the default width (same bits)
            try:
                set.add(builder.function.attributes, '"prefer-vector-width"="512"')
            except Exception:
                pass
            return context.get_dummy_value()

        return types.none(), codegen

    @njit(nogil=True, inline="always")
    def two_prod_fused(a, ah, al, b, bh, bl):  # pragma: no cover
        p = a * b
        return p, fma(a, b, -p)

    return two_prod_fused, wide_vectors, fma
