"""The seed's closing self-test: each question, its answer, and the live numbers behind it."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..sinusoidal.frequencies import context_report, frequencies
from ..sinusoidal.shift import shift_matrix
from ..sinusoidal.similarity import aliasing, similarity
from .cells import BASE, D, seed_pe
from .claims import Check, Printed, check

__all__ = ["QuizItem", "quiz"]


@dataclass(frozen=True)
class QuizItem:
    """One question of the seed's self-test and its answer, backed by live numbers."""

    question: str
    answer: str
    figures: tuple[Printed, ...]
    checks: tuple[Check, ...]


def quiz() -> list[QuizItem]:
    """The seed's closing self-test, each answer with the numbers behind it.

    An answer quotes the true value; where the seed printed another, it is marked:

    >>> quiz()[5].answer
    'Base 100 wraps (λ_max ≈ 617); base 10000 does not (λ_max ≈ 60611; the seed misprints it as 60650).'
    """
    return [ask() for ask in _QUESTIONS]


def _q1() -> QuizItem:
    pe0 = seed_pe(0)
    return QuizItem(
        "PE(0) for d_model = 4 is …",
        "[0, 1, 0, 1]: cosine channels pinned to 1, not all zeros.",
        tuple(Printed(f"PE(0)[{j}]", s, float(pe0[j])) for j, s in enumerate("0101")),
        (check("PE(0) = [0, 1, 0, 1]", np.array_equal(pe0, [0, 1, 0, 1]), str(pe0.tolist())),),
    )


def _q2() -> QuizItem:
    a = aliasing(0, 2 * math.pi, D, base=BASE)
    return QuizItem(
        "Why doesn't a single-channel repeat cause a full-vector collision?",
        "Other channels use different frequencies, so at least one differs until an "
        "astronomically large common period.",
        (),
        (check("dims 0, 1 repeat at 2π but the vectors differ", not a.collide and bool(a.coincide[0]),
               f"|PE(0) - PE(2π)| = {a.distance:.5f}"),),
    )


def _q3() -> QuizItem:
    t = shift_matrix(5, D, base=BASE)
    return QuizItem(
        "In matrix form, which entry of the 2D sub-vector goes on top?",
        "The sine (sin θ); cosine goes below: that ordering makes the rotation matrix work.",
        (),
        (check("[[cos φ, sin φ], [-sin φ, cos φ]] maps (sin 0.03, cos 0.03) to (sin 0.08, cos 0.08)",
               np.allclose(t @ seed_pe(3), seed_pe(8), rtol=0, atol=4e-16),
               f"T_5 top row [{t[2, 2]:.6f}, {t[2, 3]:.6f}]"),),
    )


def _q4() -> QuizItem:
    t = shift_matrix(5, D, base=BASE)
    tm = shift_matrix(-5, D, base=BASE)
    return QuizItem(
        "A position offset of k acts on each 2D sub-vector as a …",
        "rotation by angle ω_i k; negative k is the inverse (opposite-direction) rotation.",
        (),
        (check("T_-5 · T_5 = I", np.allclose(tm @ t, np.eye(D), rtol=0, atol=4e-16),
               f"φ = ω_1·(-5) = {-5 * float(frequencies(D, BASE)[1]):.2f} rad"),),
    )


def _q5() -> QuizItem:
    forth, back = float(similarity(8, 3, D, base=BASE)), float(similarity(3, 8, D, base=BASE))
    return QuizItem(
        "Why does the dot product depend only on |p - q|?",
        "It equals Σ cos(ω_i (p - q)) and cosine is even, so the sign of the gap doesn't matter.",
        (),
        (check("similarity(8, 3) = similarity(3, 8)", forth == back, f"PE(8)·PE(3) = PE(3)·PE(8) = {forth:.6f}"),),
    )


def _q6() -> QuizItem:
    ok = context_report(8192, 512, 10000.0)
    bad = context_report(8192, 512, 100.0)
    lam_bad = Printed("λ_max for base 100", "617", bad.max_wavelength)
    lam_ok = Printed("λ_max for base 10000", "60650", ok.max_wavelength)
    return QuizItem(
        "Base 100 vs 10000 for 8192-token docs?",
        # the seed answers "≈ 60650", its Ex 7 misprint; the answer quotes the true value
        f"Base 100 wraps (λ_max ≈ {lam_bad.cited}); base 10000 does not (λ_max ≈ {lam_ok.cited}).",
        (lam_bad, lam_ok),
        (check("base 100 wraps over 8192, base 10000 does not", bad.wraps and not ok.wraps,
               f"{bad.max_wavelength:.1f} vs {ok.max_wavelength:.1f}"),),
    )


_QUESTIONS = (_q1, _q2, _q3, _q4, _q5, _q6)
