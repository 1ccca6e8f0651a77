"""The seed's eight worked cases (A–H) and its self-test, computed live.

Each :class:`Case` holds the seed's printed numbers beside the values posenc
computes for them (:class:`Figure`), and its "Verify" claims as checks run
against the library (:class:`Check`). The command (``posenc examples``,
``posenc quiz``) and the tests share these; nothing here is typed-in output.

Where a printed number is not the true value to its printed digits, the
figure is an *erratum*: the seed's text is kept, the true value is shown
beside it, and no check of the library fails because of it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from .errors import PosEncError
from .frequencies import context_report, frequencies, max_wavelength, wavelengths
from .shift import shift, shift_matrix
from .similarity import aliasing, similarity
from .sinusoidal import encode

__all__ = ["CELLS", "Case", "Check", "Figure", "QuizItem", "case", "cases", "errata", "quiz"]


@dataclass(frozen=True)
class Figure:
    """One number printed in the seed, against the value posenc computes.

    Attributes:
        label: what it is, e.g. ``"sin(1000)"``.
        printed: the seed's text for it, e.g. ``"0.82688"``.
        value: posenc's value (float64, exact to 1 ulp).
    """

    label: str
    printed: str
    value: float

    @property
    def decimals(self) -> int:
        """Digits after the point in the printed figure."""
        exp = Decimal(self.printed).as_tuple().exponent
        return max(0, -int(exp))

    @property
    def agrees(self) -> bool:
        """True when the value, rounded to the printed digits, is the printed figure."""
        step = Decimal(1).scaleb(-self.decimals)
        return abs(Decimal(self.value) - Decimal(self.printed)) <= step / 2

    @property
    def true_text(self) -> str:
        """The value written with as many digits as the seed used."""
        return f"{self.value:.{self.decimals}f}"

    @property
    def erratum(self) -> str | None:
        """``None``, or a sentence naming the seed's wrong figure and the true one."""
        if self.agrees:
            return None
        return f"{self.label}: the seed prints {self.printed}, the true value is {self.true_text}"


@dataclass(frozen=True)
class Check:
    """One "Verify" claim of the seed, checked against the library."""

    claim: str
    passed: bool
    detail: str


@dataclass(frozen=True)
class Case:
    """A cell of the seed's scenario matrix and its worked example."""

    cell: str
    example: int
    title: str
    tricky: str
    figures: tuple[Figure, ...]
    checks: tuple[Check, ...]

    @property
    def passed(self) -> bool:
        """Every check of the library holds (errata in the seed's text do not count)."""
        return all(c.passed for c in self.checks)

    @property
    def errata(self) -> tuple[str, ...]:
        return tuple(e for e in (f.erratum for f in self.figures) if e)


D, BASE = 4, 10000.0  # the seed's tiny model


def _pe(p: float | list[float]) -> np.ndarray:
    return encode(p, D, base=BASE, dtype=np.float64)


def _check(claim: str, passed: bool | np.bool_, detail: str) -> Check:
    return Check(claim, bool(passed), detail)


def _case_a() -> Case:
    pe0 = _pe(0)
    return Case(
        "A", 1, "Position zero", "sin 0 = 0, cos 0 = 1: a fixed pattern, not 'no encoding'",
        tuple(Figure(f"PE(0)[{j}]", t, float(pe0[j])) for j, t in enumerate(["0", "1", "0", "1"])),
        (
            _check("PE(0) = [0, 1, 0, 1], not all zeros", np.array_equal(pe0, [0, 1, 0, 1]),
                   f"PE(0) = {pe0.tolist()}"),
            _check("every cosine channel is pinned to 1", np.all(pe0[1::2] == 1.0),
                   f"cos channels {pe0[1::2].tolist()}"),
        ),
    )


def _case_b() -> Case:
    s = _pe(list(range(8)))[:, 0]
    printed = ["0", "0.8415", "0.9093", "0.1411", "-0.7568", "-0.9589", "-0.2794", "0.6570"]
    lam0 = float(wavelengths(D, BASE)[0])
    figs = [Figure(f"sin({p})", t, float(s[p])) for p, t in enumerate(printed)]
    figs.append(Figure("period 2π of channel 0", "6.2832", lam0))
    return Case(
        "B", 2, "Fastest channel (i = 0, ω = 1)", "angle in radians = position; wraps fast",
        tuple(figs),
        (
            _check("ω_0 = 1: the angle equals the position", frequencies(D, BASE)[0] == 1.0,
                   f"ω_0 = {frequencies(D, BASE)[0]}"),
            _check("pos 6 is close to a full turn but not on it: sin 6 ≠ 0", s[6] != 0.0,
                   f"sin(6) = {s[6]:.4f}"),
            _check("the fast channel repeats after 2π ≈ 6.28 positions",
                   abs(lam0 - 2 * math.pi) <= 1e-15 * 2 * math.pi, f"λ_0 = {lam0:.6f}"),
        ),
    )


def _case_c() -> Case:
    pe = _pe([0, 50, 100])
    s = pe[:, 2]
    lam = wavelengths(D, BASE)
    loops_fast = 100 / float(lam[0])
    return Case(
        "C", 3, "Slowest channel (large i)", "the angle barely moves; near-linear",
        (
            Figure("wavelength of channel 1, 2π/0.01", "628", float(lam[1])),
            Figure("sin(0.5)", "0.4794", float(s[1])),
            Figure("sin(1.0)", "0.8415", float(s[2])),
            Figure("loops of the fast channel over 0…100", "16", loops_fast),
        ),
        (
            _check("the sine stays below the angle (bending away from linear)",
                   bool(s[1] < 0.5 and s[2] < 1.0), f"{s[1]:.4f} < 0.5, {s[2]:.4f} < 1.0"),
            _check("over 0 → 100 the slow channel moves only 0 → 0.8415, inside [-1, 1]",
                   bool(np.all(np.abs(s) <= 1) and s[0] == 0), f"values {np.round(s, 4).tolist()}"),
            _check("the fast channel loops ~16 times meanwhile", abs(loops_fast - 16) < 0.5,
                   f"{loops_fast:.2f} loops"),
        ),
    )


def _case_d() -> Case:
    two_pi = 2 * math.pi
    a = aliasing(0, two_pi, D, base=BASE)
    pe = _pe(two_pi)
    return Case(
        "D", 4, "Aliasing: two positions look identical?", "one dim can repeat; the vector cannot",
        (
            Figure("slow angle at pos 2π, 0.01·2π", "0.06283", float(frequencies(D, BASE)[1]) * two_pi),
            Figure("PE(2π) dim 2 = sin(0.06283)", "0.06279", float(pe[2])),
        ),
        (
            _check("dims 0, 1 coincide at 0 and 2π", bool(a.coincide[0] and a.coincide[1]),
                   f"|Δ| = {a.diff[0]:.1e}, {a.diff[1]:.1e}"),
            _check("dim 2 differs, so the full vectors differ", bool(not a.coincide[2] and not a.collide),
                   f"|PE(0) - PE(2π)| = {a.distance:.5f}"),
        ),
    )


def _case_e() -> Case:
    pe3, pe8 = _pe(3), _pe(8)
    t5, tm5 = shift_matrix(5, D, base=BASE), shift_matrix(-5, D, base=BASE)
    phi = float(frequencies(D, BASE)[1]) * 5
    top = float((t5 @ pe3)[2])
    far = _pe([100, 105])
    return Case(
        "E", 5, "Relative shift = rotation T_k", "offset k maps to a rotation angle; sign of k",
        (
            Figure("sin(0.03)", "0.029996", float(pe3[2])),
            Figure("cos(0.03)", "0.99955", float(pe3[3])),
            Figure("sin(0.08)", "0.079915", float(pe8[2])),
            Figure("cos(0.08)", "0.996802", float(pe8[3])),
            Figure("φ = ω_1·k", "0.05", phi),
            Figure("top row of T_5·PE(3)", "0.079915", top),
        ),
        (
            _check("T_5 · PE(3) = PE(8)", np.allclose(t5 @ pe3, pe8, rtol=0, atol=4e-16),
                   f"max |Δ| = {np.max(np.abs(t5 @ pe3 - pe8)):.1e}"),
            _check("k = -5 is the inverse rotation: T_-5 · PE(8) = PE(3), T_-5 = T_5ᵀ",
                   np.allclose(tm5 @ pe8, pe3, rtol=0, atol=4e-16) and np.allclose(tm5, t5.T, rtol=0, atol=0),
                   f"max |Δ| = {np.max(np.abs(tm5 @ pe8 - pe3)):.1e}"),
            _check("the angle depends only on k, never on p: T_5 · PE(100) = PE(105)",
                   np.allclose(shift(far[0], 5, base=BASE), far[1], rtol=0, atol=4e-15),
                   f"max |Δ| = {np.max(np.abs(shift(far[0], 5, base=BASE) - far[1])):.1e}"),
        ),
    )


def _case_f() -> Case:
    pe = _pe(1000)
    lam = wavelengths(D, BASE)
    return Case(
        "F", 6, "Large position / extrapolation (pos = 1000)", "values stay bounded; no explosion",
        (
            Figure("loops of the fast channel, 1000/2π", "159.15", 1000 / float(lam[0])),
            Figure("sin(1000)", "0.82688", float(pe[0])),
            Figure("cos(1000)", "0.56238", float(pe[1])),
            Figure("loops of the slow channel, 10/2π", "1.59", 1000 / float(lam[1])),
            Figure("sin(10)", "-0.54402", float(pe[2])),
            Figure("cos(10)", "-0.83907", float(pe[3])),
        ),
        (
            _check("every entry of PE(1000) lies in [-1, 1]", np.all(np.abs(pe) <= 1.0),
                   f"PE(1000) = {np.round(pe, 5).tolist()}"),
            _check("bounded for positions far beyond any table: |PE(10⁹)| ≤ 1",
                   np.all(np.abs(_pe(1e9)) <= 1.0), f"max |PE(1e9)| = {np.max(np.abs(_pe(1e9))):.5f}"),
        ),
    )


def _case_g() -> Case:
    ok = context_report(8192, 512, 10000.0)
    bad = context_report(8192, 512, 100.0)
    w_ok = 1 / float(frequencies(512, 10000.0)[-1])
    w_bad = 1 / float(frequencies(512, 100.0)[-1])
    return Case(
        "G", 7, "Choosing the base", "base and wavelength for a task: 8192-token documents",
        (
            Figure("10000^(510/512)", "9655", w_ok),
            Figure("λ_max for base 10000", "60650", ok.max_wavelength),
            Figure("100^(510/512)", "98.24", w_bad),
            Figure("λ_max for base 100", "617.3", bad.max_wavelength),
            Figure("loops of the slowest channel, base 100", "13", float(bad.loops[-1])),
        ),
        (
            _check("base 10000: λ_max ≫ 8192, no wrap", ok.suffices and ok.max_wavelength > 8192,
                   f"λ_max = {ok.max_wavelength:.1f}"),
            _check("base 100: λ_max < 8192, the slowest channel wraps", bad.wraps,
                   f"λ_max = {bad.max_wavelength:.1f}, {bad.loops[-1]:.2f} loops"),
            _check("λ_max = 2π·b^((d-2)/d)",
                   math.isclose(max_wavelength(512, 10000.0), 2 * math.pi * w_ok, rel_tol=1e-15),
                   f"{max_wavelength(512, 10000.0):.3f}"),
            _check("past ~60k tokens base 10000 wraps too", context_report(65536, 512, 10000.0).wraps,
                   f"min base for 65536: {context_report(65536, 512, 10000.0).min_base:.0f}"),
        ),
    )


def _case_h() -> Case:
    p8, p3 = _pe(8), _pe(3)
    terms = similarity(8, 3, D, base=BASE, per_channel=True)
    dot_slow = float(p8[2] * p3[2] + p8[3] * p3[3])
    back = similarity(3, 8, D, base=BASE, per_channel=True)
    return Case(
        "H", 8, "Exam twist: dot product of two encodings", "depends only on the offset (incl. negative)",
        (
            Figure("sin(0.08)", "0.079915", float(p8[2])),
            Figure("cos(0.08)", "0.996802", float(p8[3])),
            Figure("sin(0.03)", "0.029996", float(p3[2])),
            Figure("cos(0.03)", "0.999550", float(p3[3])),
            Figure("sin 0.08 sin 0.03 + cos 0.08 cos 0.03", "0.998750", dot_slow),
            Figure("cos(0.05)", "0.998750", float(terms[1])),
            Figure("cos(-0.05), the gap p - q = -5", "0.998750", float(back[1])),
        ),
        (
            _check("the slow-pair dot product equals cos(ω_1 (p - q)) = cos(0.05)",
                   math.isclose(dot_slow, float(terms[1]), rel_tol=0, abs_tol=4e-16),
                   f"{dot_slow:.15f} vs {float(terms[1]):.15f}"),
            _check("symmetric: the gaps +5 and -5 score the same",
                   float(similarity(8, 3, D, base=BASE)) == float(similarity(3, 8, D, base=BASE)),
                   f"PE(8)·PE(3) = {float(similarity(8, 3, D, base=BASE)):.6f}"),
            _check("depends only on the offset: PE(1008)·PE(1003) = PE(8)·PE(3)",
                   math.isclose(float(similarity(1008, 1003, D, base=BASE)), float(similarity(8, 3, D, base=BASE)),
                                rel_tol=0, abs_tol=0),
                   "closed form Σ cos(ω_i·5)"),
            _check("the closed form equals the dot product of the encodings",
                   math.isclose(float(_pe(8) @ _pe(3)), float(similarity(8, 3, D, base=BASE)), abs_tol=1e-15),
                   f"{float(_pe(8) @ _pe(3)):.15f}"),
        ),
    )


_BUILDERS: dict[str, Callable[[], Case]] = {
    "A": _case_a, "B": _case_b, "C": _case_c, "D": _case_d,
    "E": _case_e, "F": _case_f, "G": _case_g, "H": _case_h,
}

#: The cells of the seed's scenario matrix, in order.
CELLS: tuple[str, ...] = tuple(_BUILDERS)


def case(cell: str) -> Case:
    """Compute one worked case (``"A"`` … ``"H"``, case-insensitive).

    >>> c = case("F")
    >>> [f.printed for f in c.figures if f.label.startswith("sin")], c.passed
    (['0.82688', '-0.54402'], True)
    """
    key = cell.upper() if isinstance(cell, str) else cell
    if key not in _BUILDERS:
        raise PosEncError(f"cell must be one of {', '.join(CELLS)}, got {cell!r}")
    return _BUILDERS[key]()


def cases(cells: list[str] | tuple[str, ...] | None = None) -> list[Case]:
    """Compute the worked cases (all eight by default), validating every name first."""
    keys = list(CELLS if not cells else cells)
    for k in keys:
        if not isinstance(k, str) or k.upper() not in _BUILDERS:
            raise PosEncError(f"cell must be one of {', '.join(CELLS)}, got {k!r}")
    return [case(k) for k in keys]


@dataclass(frozen=True)
class QuizItem:
    """One question of the seed's self-test and its answer, backed by live numbers."""

    question: str
    answer: str
    figures: tuple[Figure, ...]
    checks: tuple[Check, ...]


def quiz() -> list[QuizItem]:
    """The seed's closing self-test, each answer with the numbers behind it."""
    pe0 = _pe(0)
    a = aliasing(0, 2 * math.pi, D, base=BASE)
    t = shift_matrix(5, D, base=BASE)
    tm = shift_matrix(-5, D, base=BASE)
    ok = context_report(8192, 512, 10000.0)
    bad = context_report(8192, 512, 100.0)
    return [
        QuizItem(
            "PE(0) for d_model = 4 is …",
            "[0, 1, 0, 1]: cosine channels pinned to 1, not all zeros.",
            tuple(Figure(f"PE(0)[{j}]", s, float(pe0[j])) for j, s in enumerate("0101")),
            (_check("PE(0) = [0, 1, 0, 1]", np.array_equal(pe0, [0, 1, 0, 1]), str(pe0.tolist())),),
        ),
        QuizItem(
            "Why doesn't a single-channel repeat cause a full-vector collision?",
            "Other channels use different frequencies, so at least one differs until an "
            "astronomically large common period.",
            (),
            (_check("dims 0, 1 repeat at 2π but the vectors differ", not a.collide and bool(a.coincide[0]),
                    f"|PE(0) - PE(2π)| = {a.distance:.5f}"),),
        ),
        QuizItem(
            "In matrix form, which entry of the 2D sub-vector goes on top?",
            "The sine (sin θ); cosine goes below: that ordering makes the rotation matrix work.",
            (),
            (_check("[[cos φ, sin φ], [-sin φ, cos φ]] maps (sin 0.03, cos 0.03) to (sin 0.08, cos 0.08)",
                    np.allclose(t @ _pe(3), _pe(8), rtol=0, atol=4e-16),
                    f"T_5 top row [{t[2, 2]:.6f}, {t[2, 3]:.6f}]"),),
        ),
        QuizItem(
            "A position offset of k acts on each 2D sub-vector as a …",
            "rotation by angle ω_i k; negative k is the inverse (opposite-direction) rotation.",
            (),
            (_check("T_-5 · T_5 = I", np.allclose(tm @ t, np.eye(D), rtol=0, atol=4e-16),
                    f"φ = ω_1·(-5) = {-5 * float(frequencies(D, BASE)[1]):.2f} rad"),),
        ),
        QuizItem(
            "Why does the dot product depend only on |p - q|?",
            "It equals Σ cos(ω_i (p - q)) and cosine is even, so the sign of the gap doesn't matter.",
            (),
            (_check("similarity(8, 3) = similarity(3, 8)",
                    float(similarity(8, 3, D, base=BASE)) == float(similarity(3, 8, D, base=BASE)),
                    f"PE(8)·PE(3) = PE(3)·PE(8) = {float(similarity(8, 3, D, base=BASE)):.6f}"),),
        ),
        QuizItem(
            "Base 100 vs 10000 for 8192-token docs?",
            "Base 100 wraps (λ_max ≈ 617); base 10000 does not (≈ 60650).",
            (
                Figure("λ_max for base 100", "617", bad.max_wavelength),
                Figure("λ_max for base 10000", "60650", ok.max_wavelength),
            ),
            (_check("base 100 wraps over 8192, base 10000 does not", bad.wraps and not ok.wraps,
                    f"{bad.max_wavelength:.1f} vs {ok.max_wavelength:.1f}"),),
        ),
    ]


def errata() -> list[str]:
    """Every printed figure of the seed that is not its true value, with the true value."""
    out: list[str] = []
    for c in cases():
        out.extend(f"Ex {c.example} ({c.cell}) {e}" for e in c.errata)
    for i, q in enumerate(quiz(), 1):
        out.extend(f"self-test Q{i} {f.erratum}" for f in q.figures if f.erratum)
    return out
