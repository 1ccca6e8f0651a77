"""The RoPE and scaling worked cases: every claim holds, every figure agrees with its independent formula."""

from __future__ import annotations

from decimal import Decimal

import mpmath
import pytest

from posenc import PosEncError
from posenc.seed import rope_cases


@pytest.mark.parametrize("case", rope_cases.cases() + rope_cases.scaling_cases(), ids=lambda c: c.cell)
def test_every_claim_holds_and_every_figure_agrees(case):
    assert case.checks and case.passed, [k for k in case.checks if not k.passed]
    assert case.errata == ()
    for f in case.figures:
        assert f.agrees, (f.label, f.printed, f.true_text)


@pytest.mark.parametrize("x", [0, 1, 3, "0.5", 10**6, "123456.789", -7])
def test_the_formulas_cos_and_sin_are_mpmaths(x):
    c, s = rope_cases._cos_sin(Decimal(x))
    with mpmath.workdps(60):
        assert abs(mpmath.mpf(str(c)) - mpmath.cos(mpmath.mpf(str(x)))) < mpmath.mpf(10) ** -50
        assert abs(mpmath.mpf(str(s)) - mpmath.sin(mpmath.mpf(str(x)))) < mpmath.mpf(10) ** -50


def test_a_changed_value_shows_as_an_erratum():
    """The figures would catch a wrong library value: the same formula text beside a moved value disagrees."""
    f = rope_cases.case("R1").figures[2]  # cos 1
    moved = type(f)(f.label, f.printed, f.value + 1e-4)
    assert f.agrees and not moved.agrees


def test_cells_are_named():
    assert rope_cases.CELLS == ("R1", "R2", "R3", "R4", "R5")
    assert rope_cases.SCALING_CELLS == tuple(f"S{k}" for k in range(1, 8))
    with pytest.raises(PosEncError, match="RoPE cell must be one of"):
        rope_cases.case("R9")
