"""Worked cases for rotary embeddings (RoPE) and their long-context scalings, the seed's way.

Each :class:`~posenc.seed.claims.Printed` pairs the library's value with a
text written from an independent computation of the same number (the paper's
formula in :mod:`decimal` at 60 digits, cos and sin by their Taylor series), so
a figure that stopped agreeing with its formula shows as an erratum; nothing
is typed-in output. Each claim is checked against the library.
``posenc page`` shows them on its RoPE and scalings pages.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_HALF_EVEN, Decimal, localcontext

import numpy as np

from ..exact import Ladder, decimal_pi, sincos
from ..rope.apply import apply_rope
from ..rope.cos_sin import rope_cos_sin
from ..rope.frequencies import rope_frequencies
from ..rope.permute import qk_permutation
from ..rope.scaling import NTK, DynamicNTK, Linear, Llama3, LongRoPE, Proportional, YaRN
from .claims import Case, CaseSet, Printed, check

__all__ = ["CELLS", "SCALING_CELLS", "case", "cases", "scaling_case", "scaling_cases"]


_PREC = 60


def _mp(expr: Callable[[], Decimal | int], digits: int) -> str:
    """An independent value (decimal arithmetic at 60 digits), written with ``digits`` decimals."""
    with localcontext() as ctx:
        ctx.prec = _PREC
        v = Decimal(expr())
    out = v.quantize(Decimal(1).scaleb(-digits), rounding=ROUND_HALF_EVEN)
    return format(abs(out) if out == 0 else out, "f")


def _d(x: float | int | str) -> Decimal:
    return Decimal(x)


def _ln(x: Decimal | int) -> Decimal:
    return Decimal(x).ln()


def _pow(a: Decimal | float | int, b: Decimal) -> Decimal:
    return (Decimal(a).ln() * b).exp()


def _cos_sin(x: Decimal | int | float) -> tuple[Decimal, Decimal]:
    """cos and sin by their Taylor series after reducing x by a multiple of 2π (π from posenc.exact, 70 digits)."""
    with localcontext() as ctx:
        ctx.prec = _PREC + 10
        two_pi = 2 * decimal_pi()
        r = Decimal(x)
        r -= (r / two_pi).to_integral_value() * two_pi
        c, s, term, k = Decimal(0), Decimal(0), Decimal(1), 0
        while abs(term) > Decimal(10) ** -(_PREC + 5) or k < 2:
            if k % 2 == 0:
                c += term if k % 4 == 0 else -term
            else:
                s += term if k % 4 == 1 else -term
            k += 1
            term = term * r / k
        return +c, +s


def _cos(x: Decimal | int | float) -> Decimal:
    return _cos_sin(x)[0]


def _sin(x: Decimal | int | float) -> Decimal:
    return _cos_sin(x)[1]


def _omega(base: float, i: int, r: int) -> Decimal:
    return _pow(base, Decimal(-2 * i) / r)


def _rotation() -> Case:
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    out = apply_rope(x, [1], base=100.0)[0]  # half layout: pair 0 = (x0, x2), pair 1 = (x1, x3)
    c, s = rope_cos_sin([1, 5], 4, base=100.0, dtype=np.float64)
    norm_in = math.hypot(1.0, 3.0)
    norm_out = math.hypot(out[0], out[2])
    back = apply_rope(out[None], [-1], base=100.0)[0]
    return Case(
        "R1", 1, "Rotating one pair", "each pair (x1, x2) turns by ω_i·p as a 2-D vector: its length is kept, "
        "and p = −1 undoes p = 1",
        (
            Printed("ω_0 = 100^0", _mp(lambda: _omega(100.0, 0, 4), 0),
                    float(rope_frequencies(4, base=100.0).inv_freq[0])),
            Printed("ω_1 = 100^(−2/4)", _mp(lambda: _omega(100.0, 1, 4), 2),
                    float(rope_frequencies(4, base=100.0).inv_freq[1])),
            Printed("cos(ω_0·1) = cos 1", _mp(lambda: _cos(1), 5), float(c[0, 0])),
            Printed("sin(ω_0·1) = sin 1", _mp(lambda: _sin(1), 5), float(s[0, 0])),
            Printed("x1' = 1·cos 1 − 3·sin 1", _mp(lambda: _cos(1) - 3 * _sin(1), 5), float(out[0])),
            Printed("x2' = 3·cos 1 + 1·sin 1", _mp(lambda: 3 * _cos(1) + _sin(1), 5), float(out[2])),
            Printed("cos(ω_1·5) = cos 0.5", _mp(lambda: _cos(_d("0.5")), 5), float(c[1, 1])),
        ),
        (
            check("the rotation keeps the pair's length: |(1, 3)| = |(x1', x2')| = √10",
                  abs(norm_out - norm_in) < 1e-15, f"{norm_in!r} vs {norm_out!r}"),
            check("rotating back by p = −1 returns x to 1e-15", bool(np.allclose(back, x[0], rtol=0, atol=1e-15)),
                  f"{np.round(back, 15).tolist()}"),
            check("at p = 0 the rotation is the identity, bit for bit",
                  bool(np.array_equal(apply_rope(x, [0], base=100.0), x)), "cos 0 = 1, sin 0 = 0 exactly"),
        ),
    )


def _offset() -> Case:
    rng = np.random.default_rng(7)
    q, k = rng.normal(size=64), rng.normal(size=64)

    def score(pq: float, pk: float) -> float:
        return float(apply_rope(q[None], [pq])[0] @ apply_rope(k[None], [pk])[0])

    ref = score(0, 7)
    far = [score(p, p + 7) for p in (1000, 123456, 10**6)]
    back = score(7, 0)
    spread = max(abs(v - ref) for v in far)
    return Case(
        "R2", 2, "The score depends on the offset alone",
        "⟨R(p)q, R(p+Δ)k⟩ is the same at p = 0 and p = 10^6; Δ and −Δ differ (RoPE is not symmetric, the seed's "
        "dot product is)",
        (
            Printed("score at (0, 7)", f"{ref:.6f}", ref),
            Printed("score at (1000, 1007), printed as the score at (0, 7)", f"{ref:.6f}", far[0]),
            Printed("score at (10^6, 10^6 + 7), printed as the score at (0, 7)", f"{ref:.6f}", far[2]),
        ),
        (
            check("the same offset Δ = 7 gives the same score at p = 0, 1000, 123456, 10^6 (to 1e-12)",
                  spread < 1e-12, f"largest difference {spread:.1e}"),
            check("Δ = −7 gives another score: q and k are not swapped, so the score is not even in Δ",
                  abs(back - ref) > 1e-3, f"(7, 0): {back:.6f} vs (0, 7): {ref:.6f}"),
        ),
    )


def _layouts() -> Case:
    x = np.arange(1.0, 9.0)[None]
    half = apply_rope(x, [3], base=100.0, layout="half")[0]
    inter = apply_rope(x, [3], base=100.0, layout="interleaved")[0]
    perm = qk_permutation(8, 1, "half", "interleaved")
    moved = apply_rope(x[:, perm], [3], base=100.0, layout="interleaved")[0]
    c, s = rope_cos_sin([3], 8, base=100.0, dtype=np.float64)
    return Case(
        "R3", 3, "Half or interleaved: which channels form a pair",
        "HF's rotate_half pairs (i, i + r/2), Meta's checkpoints (2i, 2i + 1): the same weights give other "
        "scores unless the rows are permuted",
        (
            Printed("half, channel 0: 1·cos 3 − 5·sin 3", _mp(lambda: _cos(3) - 5 * _sin(3), 5),
                    float(half[0])),
            Printed("interleaved, channel 0: 1·cos 3 − 2·sin 3", _mp(lambda: _cos(3) - 2 * _sin(3), 5),
                    float(inter[0])),
            Printed("cos(ω_1·3), ω_1 = 100^(−2/8)", _mp(lambda: _cos(3 * _omega(100.0, 1, 8)), 5),
                    float(c[0, 1])),
        ),
        (
            check("the two layouts rotate different channel pairs: the outputs differ",
                  not np.allclose(half, inter), f"half {np.round(half[:2], 4).tolist()}, "
                  f"interleaved {np.round(inter[:2], 4).tolist()}"),
            check("permuting the rows (qk_permutation) turns one into the other, bit for bit",
                  bool(np.array_equal(moved, half[perm])), f"permutation {perm.tolist()}"),
            check("the cos/sin tables are the same for both layouts: only the channel map differs",
                  bool(np.array_equal(c, rope_cos_sin([3], 8, base=100.0, dtype=np.float64)[0])
                       and s.shape == (1, 4)), "rope_cos_sin has no layout argument"),
        ),
    )


def _partial() -> Case:
    x = np.arange(1.0, 65.0)[None]
    out = apply_rope(x, [100], rotary_dim=16)[0]
    f = rope_frequencies(64, rotary_dim=16)
    return Case(
        "R4", 4, "Partial rotary: only the first r channels turn",
        "with rotary_dim r < head_dim the ladder runs over r, not head_dim; the other channels pass unchanged",
        (
            Printed("ω_1 = 10000^(−2/16)", _mp(lambda: _omega(10000.0, 1, 16), 6), float(f.inv_freq[1])),
            Printed("ω_7 = 10000^(−14/16) (the slowest of 8 pairs)", _mp(lambda: _omega(10000.0, 7, 16), 6),
                    float(f.inv_freq[7])),
        ),
        (
            check("channels 16 … 63 are returned unchanged, bit for bit", bool(np.array_equal(out[16:], x[0, 16:])),
                  "x[..., r:] copied"),
            check("the ladder has r/2 = 8 pairs over r, not 32 over head_dim", f.inv_freq.size == 8
                  and f.inv_freq[1] != rope_frequencies(64).inv_freq[1], f"ω_1 = {f.inv_freq[1]:.6f}"),
        ),
    )


def _far() -> Case:
    p = 10**6
    f = rope_frequencies(128, base=500000.0)
    w32 = f.inv_freq.astype(np.float32)
    angle32 = np.float32(p) * w32  # transformers' (p·inv_freq).float(), one float32 product
    c_exact, _ = rope_cos_sin([p], 128, base=500000.0, dtype=np.float64)
    _, c_ref = sincos(angle32[:1].astype(np.float64), Ladder.from_decimals([Decimal(1)]))
    err = float(abs(c_ref[0, 0] - c_exact[0, 0]))
    ulp = float(np.spacing(np.float32(p)))
    return Case(
        "R5", 5, "Position 10^6 in float32",
        "the float32 angle p·ω_0 = 10^6 is exact, but its neighbours are 0.0625 apart: a float32 angle rounds to "
        "that grid before sin/cos see it",
        (
            Printed("cos(10^6), the true value", _mp(lambda: _cos(10**6), 6), float(c_exact[0, 0])),
            Printed("float32 spacing of angles near 10^6, 2^(19−23)", _mp(lambda: _d(2) ** -4, 4), ulp),
        ),
        (
            check("pair 0's float32 angle is exact at 10^6 (ω_0 = 1), so its error is that of cos alone",
                  err < 1e-12, f"|cos(float32 angle) − cos(10^6)| = {err:.1e}"),
            check("for the other pairs the float32 angle is off by up to half that spacing",
                  float(np.max(np.abs(angle32.astype(np.float64) - p * f.inv_freq))) > 1e-3,
                  f"largest angle error {np.max(np.abs(angle32.astype(np.float64) - p * f.inv_freq)):.3g} rad"),
        ),
    )


def _ratio(scaled: np.ndarray, plain: np.ndarray) -> np.ndarray:
    return np.asarray(scaled, dtype=np.float64) / np.asarray(plain, dtype=np.float64)


def _linear() -> Case:
    f = rope_frequencies(64, scaling=Linear(4.0))
    plain = rope_frequencies(64)
    c4, s4 = rope_cos_sin([4000], 64, scaling=Linear(4.0), dtype=np.float64)
    c1, s1 = rope_cos_sin([1000], 64, dtype=np.float64)
    return Case(
        "S1", 1, "Linear (position interpolation), factor 4",
        "every ω_i is divided by the factor: position 4p lands exactly where p did, the fast pairs lose resolution",
        (Printed("ω_0 / 4", _mp(lambda: _d(1) / 4, 2), float(f.inv_freq[0])),),
        (
            check("every pair is slowed by exactly 4", bool(np.all(_ratio(f.inv_freq, plain.inv_freq) == 0.25)),
                  "ω_i/ω_i(plain) = 0.25 for all 32 pairs"),
            check("cos/sin at 4000 with factor 4 equal those at 1000 unscaled, bit for bit",
                  bool(np.array_equal(c4, c1) and np.array_equal(s4, s1)), "dividing by 4 is exact in binary"),
        ),
    )


def _ntk() -> Case:
    f = rope_frequencies(128, scaling=NTK(8.0))
    plain = rope_frequencies(128)
    r = _ratio(f.inv_freq, plain.inv_freq)
    return Case(
        "S2", 2, "NTK-aware, factor 8",
        "the base is raised instead: base·8^(r/(r−2)); the fastest pair is untouched and the slowest is slowed "
        "by exactly 8",
        (
            Printed("new base 10000·8^(128/126)", _mp(lambda: 10000 * _pow(8, _d(128) / 126), 1),
                    f.base),
            Printed("λ_max / λ_max(plain)", _mp(lambda: 8, 6), float(f.wavelengths[-1] / plain.wavelengths[-1])),
        ),
        (
            check("pair 0 is unchanged", r[0] == 1.0, "ω_0 = 1 for every base"),
            check("the slowdown grows smoothly from 1 to 8 across the pairs", bool(np.all(np.diff(r) < 0))
                  and abs(1 / r[-1] - 8) < 1e-9, f"1/ratio: {1 / r[1]:.4f} … {1 / r[-1]:.4f}"),
        ),
    )


def _dynamic() -> Case:
    dyn = DynamicNTK(2.0, 4096)
    short = rope_frequencies(64, scaling=dyn, seq_len=4096)
    long = rope_frequencies(64, scaling=dyn, seq_len=16384)
    plain = rope_frequencies(64)
    return Case(
        "S3", 3, "Dynamic NTK, factor 2, trained at 4096",
        "the base follows the length: unchanged up to 4096, then base·(2·L/4096 − 1)^(r/(r−2)); a cache built "
        "at one length is wrong at another",
        (Printed("base at L = 16384: 10000·7^(64/62)",
                 _mp(lambda: 10000 * _pow(7, _d(64) / 62), 1), long.base),),
        (
            check("up to the trained length it is plain RoPE, bit for bit",
                  bool(np.array_equal(short.inv_freq, plain.inv_freq)), f"base {short.base:g}"),
            check("at 16384 every pair but the first is slower", bool(np.all(long.inv_freq[1:] < plain.inv_freq[1:])),
                  f"slowest pair ×{plain.inv_freq[-1] / long.inv_freq[-1]:.3f}"),
        ),
    )


def _yarn() -> Case:
    y = YaRN(8.0, 4096)
    f = rope_frequencies(128, base=10000.0, scaling=y)
    plain = rope_frequencies(128, base=10000.0)
    r = _ratio(f.inv_freq, plain.inv_freq)
    turns = 4096 / plain.wavelengths
    kept, divided = r == 1.0, r == 0.125
    return Case(
        "S4", 4, "YaRN, factor 8, trained at 4096",
        "three bands by how often a pair turns over the trained length: over β_fast = 32 turns kept, under "
        "β_slow = 1 divided by the factor, a linear ramp between; and cos, sin multiplied by 0.1·ln 8 + 1",
        (Printed("attention factor 0.1·ln 8 + 1", _mp(lambda: _d("0.1") * _ln(8) + 1, 6),
                 f.attention_factor),),
        (
            check("pairs that turn more than 32 times over 4096 are kept", bool(np.all(kept[turns > 32])),
                  f"{int(kept.sum())} pairs kept"),
            check("pairs that turn less than once are divided by 8", bool(np.all(divided[turns < 1])),
                  f"{int(divided.sum())} pairs divided"),
            check("the ramp between is monotone, strictly between 1/8 and 1",
                  bool(np.all(np.diff(r) <= 0)) and bool(np.all((r[~kept & ~divided] > 0.125)
                                                              & (r[~kept & ~divided] < 1))),
                  f"{int((~kept & ~divided).sum())} pairs on the ramp"),
        ),
    )


def _llama3() -> Case:
    s = Llama3(8.0, 1.0, 4.0, 8192)
    f = rope_frequencies(128, base=500000.0, scaling=s)
    plain = rope_frequencies(128, base=500000.0)
    r = _ratio(f.inv_freq, plain.inv_freq)
    lam = plain.wavelengths
    mid = (lam >= 8192 / 4) & (lam <= 8192)
    return Case(
        "S5", 5, "Llama 3.1's smoothing, factor 8, trained at 8192",
        "by wavelength: under L/4 = 2048 kept, over L = 8192 divided by 8, between a smooth blend in 1/λ",
        (Printed("pairs with λ < 2048 (kept)", str(int(np.sum(lam < 2048))), float(np.sum(r == 1.0))),),
        (
            check("short wavelengths kept, long ones divided by 8", bool(np.all(r[lam < 2048] == 1.0))
                  and bool(np.all(r[lam > 8192] == 0.125)), f"{int(np.sum(lam > 8192))} divided"),
            check("the blend is strictly between", bool(np.all((r[mid] > 0.125) & (r[mid] < 1.0))),
                  f"{int(mid.sum())} pairs blended"),
        ),
    )


def _longrope() -> Case:
    n = 32
    short = tuple(1.0 + 0.05 * i for i in range(n))
    long = tuple(1.0 + 0.5 * i for i in range(n))
    s = LongRoPE(short, long, 4096, factor=8.0)
    at_short = rope_frequencies(64, scaling=s, seq_len=4096)
    at_long = rope_frequencies(64, scaling=s, seq_len=4097)
    plain = rope_frequencies(64)
    return Case(
        "S6", 6, "LongRoPE's switch at the trained length",
        "one factor per pair, the short list up to 4096 tokens and the long list beyond: the whole table changes "
        "when the sequence grows past 4096",
        (Printed("attention factor √(1 + ln 8 / ln 4096)",
                 _mp(lambda: (1 + _ln(8) / _ln(4096)).sqrt(), 6), at_long.attention_factor),),
        (
            check("at 4096 the short factors divide ω", bool(np.allclose(plain.inv_freq / at_short.inv_freq, short,
                                                                            rtol=1e-15)), "ω_i/short_i"),
            check("at 4097 the long factors do", bool(np.allclose(plain.inv_freq / at_long.inv_freq, long,
                                                                     rtol=1e-15)), "ω_i/long_i"),
        ),
    )


def _proportional() -> Case:
    f = rope_frequencies(64, rotary_dim=16, scaling=Proportional(64))
    plain16 = rope_frequencies(64, rotary_dim=16)
    return Case(
        "S7", 7, "Proportional (Gemma 4's full layers): 16 of 64 channels",
        "the rotated pairs keep the whole head's ladder, base^(−2i/64), instead of a ladder over the 16 channels",
        (Printed("ω_1 = 10000^(−2/64)", _mp(lambda: _omega(10000.0, 1, 64), 6), float(f.inv_freq[1])),),
        (
            check("the 8 pairs are the first 8 of the 64-channel ladder", bool(np.array_equal(
                f.inv_freq, rope_frequencies(64).inv_freq[:8])), "bit for bit"),
            check("unlike partial rotary's ladder over r = 16", not np.array_equal(f.inv_freq, plain16.inv_freq),
                  f"ω_1: {f.inv_freq[1]:.6f} vs {plain16.inv_freq[1]:.6f}"),
        ),
    )


_SET = CaseSet("RoPE cell", {"R1": _rotation, "R2": _offset, "R3": _layouts, "R4": _partial, "R5": _far})
_SCALING_SET = CaseSet("scaling cell", {"S1": _linear, "S2": _ntk, "S3": _dynamic, "S4": _yarn, "S5": _llama3,
                                        "S6": _longrope, "S7": _proportional})
#: The RoPE cases, in order.
CELLS: tuple[str, ...] = _SET.cells
#: The scaling cases, in order.
SCALING_CELLS: tuple[str, ...] = _SCALING_SET.cells


def case(cell: str) -> Case:
    """One RoPE case by name (``"R1"`` … ``"R5"``).

    >>> case("r2").passed
    True
    """
    return _SET.case(cell)


def cases(cells: list[str] | tuple[str, ...] | None = None) -> list[Case]:
    """The RoPE cases (all by default)."""
    return _SET.cases(cells)


def scaling_case(cell: str) -> Case:
    """One scaling case by name (``"S1"`` … ``"S7"``).

    >>> scaling_case("s4").passed
    True
    """
    return _SCALING_SET.case(cell)


def scaling_cases(cells: list[str] | tuple[str, ...] | None = None) -> list[Case]:
    """The scaling cases (all by default)."""
    return _SCALING_SET.cases(cells)
