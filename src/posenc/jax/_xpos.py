"""xPos in posenc.jax: the RoPE rows times ζ_i^(±(p − c)/scale_base), in 32-bit integers inside the graph.

:func:`posenc.apply_rope` (:mod:`posenc.rope.xpos`) rounds twice in float64:
cos·f, with cos and the factor f each correctly rounded float64 values, is
rounded to float64 and then to float32. Here the same product is formed
inside the traced program from integers only, without float64:

1. **Exponent.** f = 2**v, v = σ·(p − c)·K_i with K_i = −ln ζ_i/(scale_base·ln 2) > 0
   (σ = −1 for queries, +1 for keys), K_i held on the host as 128-bit words
   (:func:`posenc.exact.fixed.fixed_turns`). The fraction φ = frac(v) is
   formed exactly by the RoPE phase code (:mod:`posenc.exact.fixed_phase`:
   int32 and float32 positions, c a static shift); the integer part n comes
   from a float32 estimate of v less φ, rounded: the estimate is within
   2**-14 of v over the range of factors a float32 holds, so n is exact.
2. **2**φ.** φ = j/32 + t: 2**(j/32) from a 32-entry table (Q1.63), and
   exp(t·ln 2) for t·ln 2 < 0.0217 from its Taylor polynomial to x**8 (the
   tail < 2**-68), by Horner in 64-bit fixed point (16-bit limbs).
3. **Product and rounding.** The 64-bit cos and sin of
   :func:`posenc.exact.fixed_sincos.sincos_bits` (relative error < 2**-56),
   times the attention factor and the factor, rounded once to float32 by
   integer bit manipulation (:func:`round_f32_full`: subnormals and overflow too).

The 64-bit product is within 2**-55 (relative) of the exact cos·f, so the
float32 row is the correctly rounded one except where the exact value lies
within 2**-55 of a float32 rounding boundary, so always within 1 float32 ulp;
NumPy's row is the correctly rounded one except within ~2**-52 of one. The
two agree everywhere else: tests/jax/test_jax_xpos.py counts the values over
every offset of a few rotary dimensions and variants.

Positions whose factors leave the normal range of what q or k will be
(float32; float16 for float16 x) are NaN rows under ``jit`` — the positions
NumPy refuses, decided by NumPy's own float64 test, turned on the host into
bounds on p. Concrete positions never reach this code: their rows are
NumPy's (:func:`posenc.rope.xpos.xpos_cos_sin`), bit for bit, refusals included.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

import jax.numpy as jnp
import numpy as np

import jax

from ..errors import PosEncError
from ..exact.core import decimal_context
from ..exact.fixed import FLOAT_LIMIT, INT_LIMIT, FixedLadder, fixed_ladder, fixed_turns, scale_words
from ..exact.fixed_phase import add128, neg128, phase_of_floats, phase_of_integers
from ..exact.fixed_sincos import (
    Ops,
    Pair,
    columns,
    limbs,
    mulhi,
    mulhi_limbs,
    plus_high,
    scale,
    shift_up,
    shift_up_once,
    sincos_bits,
    square_hi,
)
from ..exact.ladder import Ladder
from ..rope.frequencies import RopeFrequencies
from ..rope.xpos import XPos, _limit, _log_rate, _zeta, xpos_cos_sin
from ._rows import JAX_OPS, computed_once
from .inputs import is_traced

__all__ = ["EXP_COEFFS", "LN2_32", "POW2_32", "exp2_fraction", "factor_turns", "jax_xpos_cos_sin", "reach",
           "round_f32_full", "traced_factors", "xpos_bounds"]

M32 = 0xFFFFFFFF


def _pair(n: int) -> tuple[int, int]:
    if not 0 <= n < 1 << 64:
        raise ValueError(f"{n} does not fit 64 bits")
    return n >> 32, n & M32


def _constants() -> tuple[tuple[tuple[int, int], ...], tuple[int, int], tuple[tuple[int, int], ...]]:
    with decimal_context(60):
        ln2 = Decimal(2).ln()
        coeffs = tuple(_pair(round(Fraction(1, math.factorial(k)) * (1 << 64))) for k in range(2, 9))
        ln2_32 = _pair(round(Fraction(ln2 / 32) * (1 << 64)))
        table = tuple(_pair(round(Fraction((Decimal(j) / 32 * ln2).exp()) * (1 << 63))) for j in range(32))
    return coeffs, ln2_32, table


#: 1/k! for k = 2 … 8 as Q0.64: exp(x) = 1 + x + x²·(1/2 + x·(1/6 + …)).
#: LN2_32: ln 2/32 as Q0.64. POW2_32: 2**(j/32), j < 32, as Q1.63.
EXP_COEFFS, LN2_32, POW2_32 = _constants()


@functools.lru_cache(maxsize=64)
def factor_turns(gamma: float, scale_base: float, rotary_dim: int) -> FixedLadder:
    """K_i = −ln ζ_i/(scale_base·ln 2), i < r/2, as words: ζ_i^(u/scale_base) = 2**(−u·K_i).

    >>> k = factor_turns(0.4, 512.0, 4).turns                # ζ = (2/7, 9/14)
    >>> [round(float(t) * 512, 6) for t in k]                 # −log2 ζ_i
    [1.807355, 0.63743]
    """
    out = []
    with decimal_context(90):
        ln2 = Decimal(2).ln()
        for z in _zeta(gamma, rotary_dim):
            out.append(Fraction(-(Decimal(z.numerator) / Decimal(z.denominator)).ln() / (Decimal(scale_base) * ln2)))
    return fixed_turns(tuple(out))


def _add64(o: Ops, a: Pair, b: Pair) -> Pair:
    lo = a[1] + b[1]
    return a[0] + b[0] + o.u32(lo < a[1]), lo


def exp2_fraction(o: Ops, phi: tuple[Any, Any, Any, Any]) -> Pair:
    """2**φ for φ in [0, 1) (four Q0.128 words) as a 64-bit m with 2**φ = m·2**-62, within 2**-59 (relative).

    The Horner brackets are kept as limbs, each c_k + mulhi(x, acc) formed in one pass
    (:func:`~posenc.exact.fixed_sincos.plus_high`): the values of :func:`mulhi` and a 64-bit add.
    """
    xp = o.xp
    j = phi[0] >> 27
    t = ((phi[0] << 5) | (phi[1] >> 27), (phi[1] << 5) | (phi[2] >> 27))  # 32·(φ − j/32), Q0.64
    x = mulhi_limbs(limbs(t), limbs(LN2_32))  # (φ − j/32)·ln 2 < 0.0217
    xl = limbs(x)
    y = limbs(EXP_COEFFS[-1])
    for c in reversed(EXP_COEFFS[:-1]):
        y = plus_high(c, columns(xl, y))
    s = _add64(o, x, mulhi_limbs(limbs(square_hi(xl)), y))  # exp(x) − 1 < 0.022
    top = xp.asarray(1 << 31, dtype=xp.uint32)  # a Python 2**31 would be read as an int32
    a = ((s[0] >> 1) | top, (s[1] >> 1) | (s[0] << 31))  # exp(x) as Q1.63
    idx = j.astype(xp.int32)
    th = xp.take(xp.asarray(np.array([h for h, _ in POW2_32], dtype=np.uint32)), idx)
    tl = xp.take(xp.asarray(np.array([lo for _, lo in POW2_32], dtype=np.uint32)), idx)
    return mulhi(a, (th, tl))


def _exponent(o: Ops, e: Any) -> Any:
    """A wrapping uint32 exponent (the sincos code's) as int32: its true value is small."""
    return (e + 1024).astype(o.xp.int32) - 1024


def round_f32_full(o: Ops, m: Pair, e: Any) -> Any:
    """The float32 bits nearest (ties to even) to m·2**(e − 64), e int32: subnormals, 0 and inf included."""
    xp = o.xp
    (h, lo), s = shift_up(o, m)
    field = e + 126 - s.astype(xp.int32)  # the float32 exponent field of a normal result
    sh = 40 + xp.maximum(0, 1 - field)  # bits of the 64 below the kept ones (a subnormal keeps fewer)
    k = xp.minimum(sh - 32, 32)  # the shift of h: 8 (normal) … 32
    far = sh > 64
    q = xp.where(k >= 32, 0, h >> o.u32(xp.minimum(k, 31)))
    kr = o.u32(xp.clip(k - 1, 0, 31))
    rb = xp.where(far, 0, (h >> kr) & 1)
    below = xp.where(far, h, h & ((o.u32(xp.ones_like(k)) << kr) - 1))
    sticky = o.u32((below | lo) != 0)
    q = q + (rb & (sticky | (q & 1)))
    bits = (o.u32(xp.clip(field - 1, 0, 254)) << 23) + q  # a carry out of q moves the exponent up: exact
    bits = xp.where(field >= 255, 0x7F800000, xp.minimum(bits, 0x7F800000))
    return xp.where((m[0] | m[1]) == 0, 0, bits)


def reach(xpos: XPos, rotary_dim: int, dtype: Any) -> float:
    """The largest float64 a that :func:`posenc.apply_rope` takes as max|p − c| (its test: fl(a·rate) > limit)."""
    rate = float(np.max(np.abs(_log_rate(xpos.gamma, xpos.scale_base, rotary_dim)[0])))
    lim = _limit(np.dtype(dtype))
    a = lim / rate
    while a * rate > lim:
        a = math.nextafter(a, 0.0)
    while math.nextafter(a, math.inf) * rate <= lim:
        a = math.nextafter(a, math.inf)
    return a


@functools.lru_cache(maxsize=256)
def xpos_bounds(xpos: XPos, rotary_dim: int, middle: int, dtype: str) -> tuple[int, int, float, float]:
    """(lo, hi) for int32 positions and (lo, hi) for float32 ones: what NumPy takes with centre ``middle``.

    NumPy refuses a call where fl(|fl(p − c)|·rate) > limit for some p
    (:func:`posenc.rope.xpos._check_range`); that set of p is an interval,
    here its ends, as int32 values and as float32 values (clamped to what the
    32-bit rows hold at all).
    """
    a = reach(xpos, rotary_dim, dtype)
    rate = float(np.max(np.abs(_log_rate(xpos.gamma, xpos.scale_base, rotary_dim)[0])))
    lim = _limit(np.dtype(dtype))
    whole = min(math.floor(a), 1 << 33)
    lo_i, hi_i = max(middle - whole, -INT_LIMIT), min(middle + whole, INT_LIMIT - 1)
    top = np.float32(np.nextafter(np.float32(FLOAT_LIMIT), np.float32(0)))

    def ok(p: np.float32) -> bool:
        return abs(float(np.float64(p) - middle)) * rate <= lim

    def end(start: float, way: float) -> float:
        if abs(start) >= FLOAT_LIMIT:
            return float(np.copysign(top, start))
        p = np.float32(start)
        while not ok(p):
            p = np.nextafter(p, np.float32(-way * np.inf))
        while abs(float(np.nextafter(p, np.float32(way * np.inf)))) < FLOAT_LIMIT and ok(
                np.nextafter(p, np.float32(way * np.inf))):
            p = np.nextafter(p, np.float32(way * np.inf))
        return float(p)

    return lo_i, hi_i, end(middle - min(a, 2.0**33), -1.0), end(middle + min(a, 2.0**33), 1.0)


@dataclass(frozen=True)
class _Plan:
    """What the traced rows depend on (static: one compiled program per plan and shape)."""

    ladder: Ladder | None  # None: the factors alone
    attention: float
    xpos: XPos
    rotary_dim: int
    middle: int
    sign: int  # σ: −1 for queries (ζ^(+u)), +1 for keys
    bounds: tuple[int, int, float, float]


def _factors(p: jax.Array, plan: _Plan, ladder: FixedLadder | None) -> tuple[Pair, Any, Any, Any]:
    """(m, e, bad, phase): the factors 2**v = m·2**(e − 64) (m normalised) of positions ``[..., 1]``, where
    they are out of range, and the RoPE phase of ``ladder`` (None: none)."""
    o = JAX_OPS
    xp = jnp
    bad = None
    if np.dtype(p.dtype).kind == "i" and np.dtype(p.dtype).itemsize > 4:  # a traced int64 (x64 on)
        bad = (p < -INT_LIMIT) | (p >= INT_LIMIT)
        p = p.astype(jnp.int32)
    lo_i, hi_i, lo_f, hi_f = plan.bounds
    words = factor_turns(plan.xpos.gamma, plan.xpos.scale_base, plan.rotary_dim)
    phase = None
    if p.dtype == jnp.int32:
        out = (p < lo_i) | (p > hi_i)
        kphase = phase_of_integers(o, p, words)
        if ladder is not None:
            phase = phase_of_integers(o, p, ladder)
    else:
        out = ~((p >= np.float32(lo_f)) & (p <= np.float32(hi_f)) & (jnp.abs(p) < FLOAT_LIMIT))  # NaN too
        kphase = phase_of_floats(o, p, words)
        if ladder is not None:
            phase = phase_of_floats(o, p, ladder)
    bad = out if bad is None else bad | out
    if plan.middle:  # w = (p − c)·K: the centre a static shift of the phase
        off = words.offset_words(-plan.middle)
        kphase = add128(o, kphase, (xp.asarray(off[0]), xp.asarray(off[1]), xp.asarray(off[2]), xp.asarray(off[3])))
    phi = kphase if plan.sign > 0 else neg128(o, kphase)
    # n = v − φ, an integer: from float32 estimates (within 2**-14 of v where a factor fits float32)
    kf = np.array([float(t) for t in words.turns], dtype=np.float32)
    v = plan.sign * (p.astype(jnp.float32) - np.float32(plan.middle)) * kf
    n = jnp.round(v - (phi[0] >> 8).astype(jnp.float32) * np.float32(2.0**-24)).astype(jnp.int32)
    n = jnp.clip(n, -400, 400)  # only out-of-range positions (NaN rows) get here clipped
    fm, fs = shift_up(o, exp2_fraction(o, phi))
    return fm, 2 + n - fs.astype(jnp.int32), bad, phase


@functools.partial(jax.jit, static_argnums=(1,))
def _factor_values(positions: jax.Array, plan: _Plan) -> jax.Array:
    fm, fe, bad, _ = _factors(positions[..., None], plan, None)
    return jnp.where(bad, jnp.nan, JAX_OPS.to_f32(round_f32_full(JAX_OPS, fm, fe)))


def traced_factors(positions: Any, xpos: XPos, rotary_dim: int, *, middle: int = 0, role: str = "q",
                   dtype: str = "float32") -> jax.Array:
    """The float32 factors ζ_i^(±(p − middle)/scale_base) ``[..., r/2]`` as the traced rows multiply by them.

    Built in the graph from int32 or float32 positions, NaN where the
    factor leaves ``dtype``'s normal range (what NumPy refuses): the
    exponential of the rows, on its own (the tests read it).

    >>> traced_factors(jnp.array([0, 512, 1024]), XPos(), 4, middle=512).tolist()
    [[3.5, 1.5555555820465088], [1.0, 1.0], [0.2857142984867096, 0.6428571343421936]]
    """
    plan = _Plan(None, 1.0, xpos, rotary_dim, int(middle), -1 if role == "q" else 1,
                 xpos_bounds(xpos, rotary_dim, int(middle), dtype))
    return _factor_values(jnp.asarray(positions), plan)


def _rows(positions: jax.Array, plan: _Plan) -> tuple[jax.Array, jax.Array]:
    o = JAX_OPS
    xp = jnp
    if plan.ladder is None:  # a plan of traced_factors: no rows
        raise PosEncError("xPos rows need the rotation's frequencies")
    fm, fe, bad, phase = _factors(positions[..., None], plan, fixed_ladder(plan.ladder))
    sin_m, sin_e, cos_m, cos_e, q, swap = sincos_bits(o, phase)
    words_att = None if plan.attention == 1.0 else scale_words(plan.attention)

    def times(m: Pair, e: Any) -> Any:
        m, e = scale(m, e, words_att, o)
        m, s = shift_up_once(o, m)  # a sine or cosine, scaled or not: in [2**62, 2**64) or 0
        return round_f32_full(o, mulhi(m, fm), _exponent(o, e - s) + fe)

    sb, cb = times(sin_m, sin_e), times(cos_m, cos_e)
    sw = swap == 1
    s_mag, c_mag = xp.where(sw, cb, sb), xp.where(sw, sb, cb)
    sin = o.to_f32(s_mag | (o.u32((q >= 2) & (s_mag != 0)) << 31))
    cos = o.to_f32(c_mag | (o.u32(((q == 1) | (q == 2)) & (c_mag != 0)) << 31))
    return jnp.where(bad, jnp.nan, cos), jnp.where(bad, jnp.nan, sin)


_int_rows = jax.jit(_rows, static_argnums=(1,))


@functools.partial(jax.custom_jvp, nondiff_argnums=(1,))
def _real_rows(positions: jax.Array, plan: _Plan) -> tuple[jax.Array, jax.Array]:
    return _int_rows(positions, plan)


@_real_rows.defjvp
def _real_rows_jvp(plan: _Plan, primals: Any, tangents: Any) -> tuple[Any, Any]:
    # d/dp (cos, sin)(ω p)·f(p) with f = 2**(σ(p − c)K), f' = σ·K·ln 2·f: the bit path itself has no
    # derivative (jax would give 0 silently)
    (p,), (dp,) = primals, tangents
    cos, sin = _int_rows(p, plan)
    w = jnp.asarray(np.asarray(getattr(plan.ladder, "w0", 0.0), dtype=np.float32))
    turns = factor_turns(plan.xpos.gamma, plan.xpos.scale_base, plan.rotary_dim).turns
    lam = jnp.asarray(np.array([plan.sign * float(t) * math.log(2) for t in turns], dtype=np.float32))
    d = dp[..., None]
    return (cos, sin), ((lam * cos - w * sin) * d, (w * cos + lam * sin) * d)


def traced_rows(positions: jax.Array, plan: _Plan) -> tuple[jax.Array, jax.Array]:
    """float32 (cos·f, sin·f) ``[..., r/2]`` of traced positions (no checks: the caller's)."""
    if np.dtype(positions.dtype).kind == "f":
        return _real_rows(positions, plan)
    return _int_rows(positions, plan)


def range_dtype(x_dtype: Any) -> str:
    """The dtype whose normal range the factors must stay in: float16 x's own, else float32 (the rows')."""
    return "float16" if jnp.dtype(x_dtype) == jnp.float16 else "float32"


def jax_xpos_cos_sin(
    pos: jax.Array, freqs: RopeFrequencies, xpos: XPos, role: str, seq_len: int | None, x_dtype: Any
) -> tuple[jax.Array, jax.Array]:
    """The float32 rows times xPos's factors for ``role``, ``[..., r/2]`` each.

    Concrete positions: NumPy's rows (its refusal for factors out of range).
    Traced ones: built in the graph, NaN where NumPy would refuse; the centre
    needs a static ``seq_len`` (max(positions) + 1 would be a traced value).
    """
    dt = range_dtype(x_dtype)
    if not is_traced(pos):
        cos, sin = xpos_cos_sin(np.asarray(pos).astype(np.float64), freqs, xpos, role, seq_len,
                                np.dtype(np.float32), np.dtype(dt))
        return jnp.asarray(cos), jnp.asarray(sin)
    if xpos.center and seq_len is None:
        raise PosEncError(
            "xpos with center=True measures positions from seq_len//2: pass seq_len (a static int) to "
            "posenc.jax.apply_rope under jit (the same for q and k); max(positions) + 1 is a traced value"
        )
    middle = xpos.middle(seq_len) if xpos.center and seq_len is not None else 0
    plan = _Plan(freqs.ladder, float(freqs.attention_factor), xpos, freqs.rotary_dim, middle,
                 -1 if role == "q" else 1, xpos_bounds(xpos, freqs.rotary_dim, middle, dt))
    return computed_once(lambda p: traced_rows(p, plan), pos)
