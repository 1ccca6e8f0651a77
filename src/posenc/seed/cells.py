"""The seed's eight worked cases (A–H), computed live.

Each :class:`~posenc.seed.claims.Case` holds the seed's printed numbers beside
the values posenc computes for them, and its "Verify" claims as checks run
against the library. The command (``posenc examples``) and the tests share
these; nothing here is typed-in output.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ..sinusoidal.encoding import encode
from ..sinusoidal.frequencies import context_report, frequencies, max_wavelength, wavelengths
from ..sinusoidal.shift import shift, shift_matrix
from ..sinusoidal.similarity import aliasing, similarity
from .claims import Case, CaseSet, Printed, check

__all__ = ["BASE", "CELLS", "D", "case", "cases", "seed_pe"]


D, BASE = 4, 10000.0  # the seed's tiny model


def seed_pe(p: float | list[float]) -> np.ndarray:
    """PE(p) of the seed's tiny model, float64."""
    return encode(p, D, base=BASE, dtype=np.float64)


def _case_a() -> Case:
    pe0 = seed_pe(0)
    return Case(
        "A", 1, "Position zero", "sin 0 = 0, cos 0 = 1: a fixed pattern, not 'no encoding'",
        tuple(Printed(f"PE(0)[{j}]", t, float(pe0[j])) for j, t in enumerate(["0", "1", "0", "1"])),
        (
            check("PE(0) = [0, 1, 0, 1], not all zeros", np.array_equal(pe0, [0, 1, 0, 1]),
                   f"PE(0) = {pe0.tolist()}"),
            check("every cosine channel is pinned to 1", np.all(pe0[1::2] == 1.0),
                   f"cos channels {pe0[1::2].tolist()}"),
        ),
    )


def _case_b() -> Case:
    s = seed_pe(list(range(8)))[:, 0]
    printed = ["0", "0.8415", "0.9093", "0.1411", "-0.7568", "-0.9589", "-0.2794", "0.6570"]
    lam0 = float(wavelengths(D, BASE)[0])
    figs = [Printed(f"sin({p})", t, float(s[p])) for p, t in enumerate(printed)]
    figs.append(Printed("period 2π of channel 0", "6.2832", lam0))
    return Case(
        "B", 2, "Fastest channel (i = 0, ω = 1)", "angle in radians = position; wraps fast",
        tuple(figs),
        (
            check("ω_0 = 1: the angle equals the position", frequencies(D, BASE)[0] == 1.0,
                   f"ω_0 = {frequencies(D, BASE)[0]}"),
            check("pos 6 is close to a full turn but not on it: sin 6 ≠ 0", s[6] != 0.0,
                   f"sin(6) = {s[6]:.4f}"),
            check("the fast channel repeats after 2π ≈ 6.28 positions",
                   abs(lam0 - 2 * math.pi) <= 1e-15 * 2 * math.pi, f"λ_0 = {lam0:.6f}"),
        ),
    )


def _case_c() -> Case:
    pe = seed_pe([0, 50, 100])
    s = pe[:, 2]
    lam = wavelengths(D, BASE)
    loops_fast = 100 / float(lam[0])
    return Case(
        "C", 3, "Slowest channel (large i)", "the angle barely moves; near-linear",
        (
            Printed("wavelength of channel 1, 2π/0.01", "628", float(lam[1])),
            Printed("sin(0.5)", "0.4794", float(s[1])),
            Printed("sin(1.0)", "0.8415", float(s[2])),
            Printed("loops of the fast channel over 0…100", "16", loops_fast),
        ),
        (
            check("the sine stays below the angle (bending away from linear)",
                   bool(s[1] < 0.5 and s[2] < 1.0), f"{s[1]:.4f} < 0.5, {s[2]:.4f} < 1.0"),
            check("over 0 → 100 the slow channel moves only 0 → 0.8415, inside [-1, 1]",
                   bool(np.all(np.abs(s) <= 1) and s[0] == 0), f"values {np.round(s, 4).tolist()}"),
            check("the fast channel loops ~16 times meanwhile", abs(loops_fast - 16) < 0.5,
                   f"{loops_fast:.2f} loops"),
        ),
    )


def _case_d() -> Case:
    two_pi = 2 * math.pi
    a = aliasing(0, two_pi, D, base=BASE)
    pe = seed_pe(two_pi)
    return Case(
        "D", 4, "Aliasing: two positions look identical?", "one dim can repeat; the vector cannot",
        (
            Printed("slow angle at pos 2π, 0.01·2π", "0.06283", float(frequencies(D, BASE)[1]) * two_pi),
            Printed("PE(2π) dim 2 = sin(0.06283)", "0.06279", float(pe[2])),
        ),
        (
            check("dims 0, 1 coincide at 0 and 2π", bool(a.coincide[0] and a.coincide[1]),
                   f"|Δ| = {a.diff[0]:.1e}, {a.diff[1]:.1e}"),
            check("dim 2 differs, so the full vectors differ", bool(not a.coincide[2] and not a.collide),
                   f"|PE(0) - PE(2π)| = {a.distance:.5f}"),
        ),
    )


def _case_e() -> Case:
    pe3, pe8 = seed_pe(3), seed_pe(8)
    t5, tm5 = shift_matrix(5, D, base=BASE), shift_matrix(-5, D, base=BASE)
    phi = float(frequencies(D, BASE)[1]) * 5
    top = float((t5 @ pe3)[2])
    far = seed_pe([100, 105])
    return Case(
        "E", 5, "Relative shift = rotation T_k", "offset k maps to a rotation angle; sign of k",
        (
            Printed("sin(0.03)", "0.029996", float(pe3[2])),
            Printed("cos(0.03)", "0.99955", float(pe3[3])),
            Printed("sin(0.08)", "0.079915", float(pe8[2])),
            Printed("cos(0.08)", "0.996802", float(pe8[3])),
            Printed("φ = ω_1·k", "0.05", phi),
            Printed("top row of T_5·PE(3)", "0.079915", top),
        ),
        (
            check("T_5 · PE(3) = PE(8)", np.allclose(t5 @ pe3, pe8, rtol=0, atol=4e-16),
                   f"max |Δ| = {np.max(np.abs(t5 @ pe3 - pe8)):.1e}"),
            check("k = -5 is the inverse rotation: T_-5 · PE(8) = PE(3), T_-5 = T_5ᵀ",
                   np.allclose(tm5 @ pe8, pe3, rtol=0, atol=4e-16) and np.allclose(tm5, t5.T, rtol=0, atol=0),
                   f"max |Δ| = {np.max(np.abs(tm5 @ pe8 - pe3)):.1e}"),
            check("the angle depends only on k, never on p: T_5 · PE(100) = PE(105)",
                   np.allclose(shift(far[0], 5, base=BASE), far[1], rtol=0, atol=4e-15),
                   f"max |Δ| = {np.max(np.abs(shift(far[0], 5, base=BASE) - far[1])):.1e}"),
        ),
    )


def _case_f() -> Case:
    pe = seed_pe(1000)
    lam = wavelengths(D, BASE)
    return Case(
        "F", 6, "Large position / extrapolation (pos = 1000)", "values stay bounded; no explosion",
        (
            Printed("loops of the fast channel, 1000/2π", "159.15", 1000 / float(lam[0])),
            Printed("sin(1000)", "0.82688", float(pe[0])),
            Printed("cos(1000)", "0.56238", float(pe[1])),
            Printed("loops of the slow channel, 10/2π", "1.59", 1000 / float(lam[1])),
            Printed("sin(10)", "-0.54402", float(pe[2])),
            Printed("cos(10)", "-0.83907", float(pe[3])),
        ),
        (
            check("every entry of PE(1000) lies in [-1, 1]", np.all(np.abs(pe) <= 1.0),
                   f"PE(1000) = {np.round(pe, 5).tolist()}"),
            check("bounded for positions far beyond any table: |PE(10⁹)| ≤ 1",
                   np.all(np.abs(seed_pe(1e9)) <= 1.0), f"max |PE(1e9)| = {np.max(np.abs(seed_pe(1e9))):.5f}"),
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
            Printed("10000^(510/512)", "9655", w_ok),
            Printed("λ_max for base 10000", "60650", ok.max_wavelength),
            Printed("100^(510/512)", "98.24", w_bad),
            Printed("λ_max for base 100", "617.3", bad.max_wavelength),
            Printed("loops of the slowest channel, base 100", "13", float(bad.loops[-1])),
        ),
        (
            check("base 10000: λ_max ≫ 8192, no wrap", ok.suffices and ok.max_wavelength > 8192,
                   f"λ_max = {ok.max_wavelength:.1f}"),
            check("base 100: λ_max < 8192, the slowest channel wraps", bad.wraps,
                   f"λ_max = {bad.max_wavelength:.1f}, {bad.loops[-1]:.2f} loops"),
            check("λ_max = 2π·b^((d-2)/d)",
                   math.isclose(max_wavelength(512, 10000.0), 2 * math.pi * w_ok, rel_tol=1e-15),
                   f"{max_wavelength(512, 10000.0):.3f}"),
            check("past ~60k tokens base 10000 wraps too", context_report(65536, 512, 10000.0).wraps,
                   f"min base for 65536: {context_report(65536, 512, 10000.0).min_base:.0f}"),
        ),
    )


def _case_h() -> Case:
    p8, p3 = seed_pe(8), seed_pe(3)
    terms = similarity(8, 3, D, base=BASE, per_channel=True)
    dot_slow = float(p8[2] * p3[2] + p8[3] * p3[3])
    back = similarity(3, 8, D, base=BASE, per_channel=True)
    return Case(
        "H", 8, "Exam twist: dot product of two encodings", "depends only on the offset (incl. negative)",
        (
            Printed("sin(0.08)", "0.079915", float(p8[2])),
            Printed("cos(0.08)", "0.996802", float(p8[3])),
            Printed("sin(0.03)", "0.029996", float(p3[2])),
            Printed("cos(0.03)", "0.999550", float(p3[3])),
            Printed("sin 0.08 sin 0.03 + cos 0.08 cos 0.03", "0.998750", dot_slow),
            Printed("cos(0.05)", "0.998750", float(terms[1])),
            Printed("cos(-0.05), the gap p - q = -5", "0.998750", float(back[1])),
        ),
        (
            check("the slow-pair dot product equals cos(ω_1 (p - q)) = cos(0.05)",
                   math.isclose(dot_slow, float(terms[1]), rel_tol=0, abs_tol=4e-16),
                   f"{dot_slow:.15f} vs {float(terms[1]):.15f}"),
            check("symmetric: the gaps +5 and -5 score the same",
                   float(similarity(8, 3, D, base=BASE)) == float(similarity(3, 8, D, base=BASE)),
                   f"PE(8)·PE(3) = {float(similarity(8, 3, D, base=BASE)):.6f}"),
            check("depends only on the offset: PE(1008)·PE(1003) = PE(8)·PE(3)",
                   math.isclose(float(similarity(1008, 1003, D, base=BASE)), float(similarity(8, 3, D, base=BASE)),
                                rel_tol=0, abs_tol=0),
                   "closed form Σ cos(ω_i·5)"),
            check("the closed form equals the dot product of the encodings",
                   math.isclose(float(seed_pe(8) @ seed_pe(3)), float(similarity(8, 3, D, base=BASE)), abs_tol=1e-15),
                   f"{float(seed_pe(8) @ seed_pe(3)):.15f}"),
        ),
    )


_BUILDERS: dict[str, Callable[[], Case]] = {
    "A": _case_a, "B": _case_b, "C": _case_c, "D": _case_d,
    "E": _case_e, "F": _case_f, "G": _case_g, "H": _case_h,
}

#: The cells of the seed's scenario matrix, in order.
_SET = CaseSet("cell", _BUILDERS)
CELLS: tuple[str, ...] = _SET.cells


def case(cell: str) -> Case:
    """Compute one worked case (``"A"`` … ``"H"``, case-insensitive).

    >>> c = case("F")
    >>> [f.printed for f in c.figures if f.label.startswith("sin")], c.passed
    (['0.82688', '-0.54402'], True)
    """
    return _SET.case(cell)



def cases(cells: list[str] | tuple[str, ...] | None = None) -> list[Case]:
    """Compute the worked cases (all eight by default), validating every name first."""
    return _SET.cases(cells)
