"""The exact angle in 32-bit integers: constants for backends without float64 (JAX with x64 off, TPUs).

A backend that can run only 32-bit operations cannot use the double-double
reduction of :mod:`posenc.exact.core`. It can still get the same rounded
value, with integers only, which no compiler rewrites (no FMA contraction,
no bf16 passes through a dot):

1. **Phase.** For an integer position p, p·ω/2π mod 1 depends only on
   F = frac(ω/2π). F is held as four uint32 words (128 bits, rounded to
   nearest from the ladder's ~160-bit ω); p·F mod 1 is formed exactly from
   16-bit limb products (a negative p as p + 2**32, less 2**32·F cut from the
   same words), so the phase f is known to |p|·2**-129 + 2**-128 < 2**-97. A
   dyadic ω/2π (the π·2**k and 2π·2**e bands of neural fields) is held
   exactly, so sin(kπ) is 0, not a tiny angle.
2. **Reduction.** The top two bits of f are the quadrant; the rest, folded
   about 1/2, give y in [0, 1/2] and the angle x = (π/2)·y in [0, π/4].
3. **Kernel, in fixed point.** sin x = x·(1 − D_s(t)), cos x = 1 − D_c(t) with
   t = (2y)**2, D_s and D_c Taylor polynomials (Horner, unsigned 64-bit
   fixed point as uint32 pairs or 16-bit limbs, each product truncated as
   :func:`~posenc.exact.fixed_sincos.mulhi` defines it). x is normalised
   first (count leading zeros), so a small sine keeps its relative precision.
4. **Rounding.** The 64-bit result is rounded to nearest-even float32 by
   integer bit manipulation, and its bits assembled and bitcast.

:data:`ERROR_BOUND` (2**-56) bounds the relative error of the 64-bit value
before rounding; measured over random phases it is 2**-61
(tests/exact/test_fixed.py). The float32 result is therefore the correctly
rounded value unless the true value lies within 2**-56 (relative) of a
float32 midpoint, a set of measure about 2**-32. The NumPy core's float32
value is the correctly rounded one unless its float64 value (within ~2**-29
of a float32 ulp of the truth) straddles a midpoint, measure about 2**-28.
So the two paths can only disagree on a set of measure about 2**-28 per
value, where the core itself rounds the wrong way; over the tests'
battery (tens of millions of values, every scaling) they agree on every bit.
The bound holds for values above 2**-60; below (the phase is known to
2**-96 absolute) the error is at most 2**-94 absolute.

This module holds the backend-neutral part: the constants, built on the host
from a :class:`~posenc.exact.Ladder`, and :func:`sincos_bits`, the algorithm
written once over an array namespace (NumPy here and in the tests,
``jax.numpy`` in :mod:`posenc.jax`).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction

import numpy as np

from ..errors import PosEncError
from .core import PI_DIGITS, decimal_context
from .ladder import Ladder

__all__ = ["COS_COEFFS", "ERROR_BOUND", "FLOAT_LIMIT", "INT_LIMIT", "MIN_OMEGA", "PI_4", "SIN_COEFFS", "FixedLadder",
           "fixed_ladder", "fixed_turns", "scale_words"]

MASK16 = 0xFFFF

#: Relative error bound of the 64-bit fixed-point sin/cos before the float32 rounding
#: (truncated products, the Taylor tails and the phase error; see the module docstring).
ERROR_BOUND = 2.0**-56

#: The 32-bit phase holds float positions |t| < 2**31 (beyond, or NaN and inf, its rows are NaN: every entry
#: point refuses those first): the range of the device path in torch, JAX and Triton alike.
FLOAT_LIMIT = 2.0**31
#: Integer positions must lie in [−INT_LIMIT, INT_LIMIT): int32, what the 32-bit path holds.
INT_LIMIT = 2**31

#: The slowest frequency the 128-bit phase holds to full precision (ω/2π >= 2**-64).
MIN_OMEGA = 2.0**-60


def _q64(value: Fraction) -> int:
    """value in [0, 1) as an unsigned Q0.64 integer, rounded to nearest."""
    n = round(value * (1 << 64))
    if not 0 <= n < 1 << 64:
        raise ValueError(f"{float(value)} does not fit Q0.64")
    return n


def _pair(n: int) -> tuple[int, int]:
    return n >> 32, n & 0xFFFFFFFF


def _taylor_q64(first: int, count: int) -> tuple[tuple[int, int], ...]:
    """(π/2)**(2k)/(first + 2k - 2)!/4**k for k = 1 … count, as Q0.64 pairs (t = (2y)**2 absorbs 4**k)."""
    with decimal_context():
        half_pi = Decimal(PI_DIGITS) / 2
        out = []
        for k in range(1, count + 1):
            v = half_pi ** (2 * k) / Decimal(math.factorial(first + 2 * k - 2)) / Decimal(4) ** k
            out.append(_pair(_q64(Fraction(v))))
    return tuple(out)


#: D_s(t) = t·(A1 − t·(A2 − …)): sin x / x = 1 − D_s, x = (π/2)·y, t = (2y)**2 <= 1.
#: Eight terms: the first left out is below 2**-63 relative.
SIN_COEFFS = _taylor_q64(3, 8)
#: D_c(t) = t·(C1 − t·(C2 − …)): cos x = 1 − D_c. Nine terms: the tail is below 2**-68.
COS_COEFFS = _taylor_q64(2, 9)


def _pi_4() -> tuple[int, int]:
    with decimal_context():
        return _pair(_q64(Fraction(Decimal(PI_DIGITS) / 4)))


#: π/4 as a Q0.64 pair (x = (π/4)·2y).
PI_4 = _pi_4()


def _omega(ladder: Ladder, i: int) -> Fraction:
    """The ladder's frequency as the exact sum of its three doubles (the value the core reduces)."""
    return Fraction(float(ladder.w0[i])) + Fraction(float(ladder.w1[i])) + Fraction(float(ladder.w2[i]))


def _turns(omega: Fraction) -> Fraction:
    """ω/2π to ~230 bits."""
    with decimal_context():
        w = Decimal(omega.numerator) / Decimal(omega.denominator)
        return Fraction(w / (2 * Decimal(PI_DIGITS)))


def _q128(turns: Fraction) -> int:
    """turns·2**128 rounded to nearest: an ω/2π that is a dyadic rational (π·2**k, 2π·2**e bands) is then exact."""
    return round(turns * (1 << 128))


def _split(bits: int) -> list[int]:
    return [(bits >> (32 * (3 - j))) & 0xFFFFFFFF for j in range(4)]


def _words(turns: Fraction) -> list[int]:
    """frac(turns) as four uint32 words, Q0.128, most significant first (rounded to nearest)."""
    return _split(_q128(turns) & ((1 << 128) - 1))


@dataclass(frozen=True, eq=False)
class FixedLadder:
    """A ladder as 32-bit words, per frequency ω_i (each an array ``[4, n]`` or ``[n]`` of uint32).

    Attributes:
        frac_words: frac(ω_i/2π) in Q0.128 (rounded), most significant word first.
        unwrap_words: frac(−2**32·ω_i/2π) of the same rounded value: a negative
            int32 p, read as p + 2**32, has 2**32·ω_i/2π too much, taken back
            by adding these words.
        int_words: floor(ω_i/2π) mod 2**32 (real-valued positions need it).
        turns: ω_i/2π exactly, for :meth:`offset_words`.
    """

    frac_words: np.ndarray
    unwrap_words: np.ndarray
    int_words: np.ndarray
    turns: tuple[Fraction, ...]

    def __len__(self) -> int:
        return int(self.int_words.shape[0])

    def offset_words(self, origin: int | Fraction) -> np.ndarray:
        """frac(origin·ω_i/2π) as uint32 ``[4, n]``: a static shift of every position (a convention's origin)."""
        out = np.array([_words(Fraction(origin) * t) for t in self.turns], dtype=np.uint32).T.reshape(4, -1)
        return np.ascontiguousarray(out)


@functools.lru_cache(maxsize=64)
def fixed_ladder(ladder: Ladder) -> FixedLadder:
    """The 32-bit words of ``ladder``'s frequencies (cached per ladder object).

    Raises:
        PosEncError: for a frequency below :data:`MIN_OMEGA` (its phase would
            lose bits at 128) or of 2**31·2π and above.

    >>> from posenc.exact import geometric_ladder
    >>> words = fixed_ladder(geometric_ladder(1, 10.0, Fraction(1))).frac_words[:, 0]
    >>> hex(int(words[0]))  # 1/2π = 0.159154943… = 0x28be60db…/2**32
    '0x28be60db'
    """
    n = len(ladder)
    turns = []
    for i in range(n):
        omega = _omega(ladder, i)
        if omega < MIN_OMEGA or omega >= 2**31 * 2 * math.pi:
            raise PosEncError(
                f"frequency ω_{i} = {float(omega):.6g} is outside [2**-60, 2**31·2π), the range the 32-bit "
                "exact path (posenc.jax) holds to full precision"
            )
        turns.append(_turns(omega))
    return fixed_turns(tuple(turns))


def fixed_turns(turns: tuple[Fraction, ...]) -> FixedLadder:
    """The words of any positive rates ``turns`` (what multiplies a position, in turns): :func:`fixed_ladder`'s
    layout, so :func:`~posenc.exact.fixed_phase.phase_of_integers` reads them (xPos's exponents in posenc.jax).

    >>> hex(int(fixed_turns((Fraction(5, 4),)).frac_words[0, 0])), int(fixed_turns((Fraction(5, 4),)).int_words[0])
    ('0x40000000', 1)
    """
    n = len(turns)
    q = [_q128(t) for t in turns]  # ω/2π in Q96.128, rounded once; every word below is cut from it exactly
    full = (1 << 128) - 1
    frac = np.array([_split(v & full) for v in q], dtype=np.uint32).T.reshape(4, n)
    # −2**32·(ω/2π) mod 1 of the same rounded value: a negative p (read as p + 2**32) then gets p·q exactly
    unwrap = np.array([_split((-(v << 32)) & full) for v in q], dtype=np.uint32).T.reshape(4, n)
    whole = np.array([(v >> 128) % (1 << 32) for v in q], dtype=np.uint32)
    arrays = [np.ascontiguousarray(a) for a in (frac, unwrap)]
    for a in (*arrays, whole):
        a.setflags(write=False)
    return FixedLadder(arrays[0], arrays[1], whole, tuple(turns))


def scale_words(factor: float) -> tuple[int, int, int]:
    """A static float64 factor (an attention factor) as (hi, lo, exponent): factor = (hi·2**32 + lo)·2**(e − 64).

    The mantissa is normalised (top bit set), so multiplying a normalised value
    keeps 63 bits.

    >>> scale_words(1.5)
    (3221225472, 0, 1)
    """
    if not (math.isfinite(factor) and factor > 0):
        raise PosEncError(f"a scale factor must be a positive finite number, got {factor!r}")
    m, e = math.frexp(factor)  # factor = m·2**e, m in [0.5, 1)
    q = int(Fraction(m) * (1 << 64))  # exact: m has 53 bits
    return q >> 32, q & 0xFFFFFFFF, e
