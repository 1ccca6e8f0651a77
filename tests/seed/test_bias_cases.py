"""The relative biases' worked cases: every stated figure is the library's value and the true one; every claim holds."""

from __future__ import annotations

import math

import mpmath
import pytest

from cli_helpers import run, run_json
from posenc import PosEncError
from posenc.seed import bias_cases

# the stated figures, recomputed here from the formulas (mpmath), independently of posenc
INDEPENDENT = {
    "slope of the last head (11), 2^-3.5": 2 ** mpmath.mpf(-3.5),
    "slope of head 8, first of the 16-head series' odd terms, 2^-0.5": 2 ** mpmath.mpf(-0.5),
    "bias of the last head at distance 5, −5·2^-3.5": -5 * 2 ** mpmath.mpf(-3.5),
    "that key's weight factor, e^-8": mpmath.exp(-8),
    "ζ_0 = 0.4/1.4 (fastest pair)": mpmath.mpf(2) / 7,
    "ζ_63 = (126/128 + 0.4)/1.4 (slowest pair)": (mpmath.mpf(126) / 128 + mpmath.mpf("0.4")) / mpmath.mpf("1.4"),
    "decay of pair 0 at offset 1024, ζ_0²": (mpmath.mpf(2) / 7) ** 2,
    "q factor of pair 0 at position 0 of a 1024-token sequence, ζ_0^(-512/512)": mpmath.mpf(7) / 2,
}


@pytest.mark.parametrize("cell", bias_cases.CELLS)
def test_every_figure_agrees_and_every_check_passes(cell: str) -> None:
    c = bias_cases.case(cell)
    assert c.errata == ()
    assert all(f.agrees for f in c.figures), [f.label for f in c.figures if not f.agrees]
    assert c.passed, [k.claim for k in c.checks if not k.passed]


@mpmath.workdps(30)
def test_stated_figures_are_the_true_values() -> None:
    seen = 0
    for c in bias_cases.cases():
        for f in c.figures:
            if f.label in INDEPENDENT:
                exact = INDEPENDENT[f.label]
                assert abs(mpmath.mpf(f.value) - exact) <= abs(exact) * 1e-15
                assert abs(float(exact) - float(f.printed)) <= 0.5 * 10.0 ** -f.decimals
                seen += 1
    assert seen == len(INDEPENDENT)


def test_t5_figures_follow_the_formula_by_hand() -> None:
    c = {f.label: f for f in bias_cases.case("T5").figures}
    # distance 20 in the decoder: 16 + int(log(20/16)/log(128/16)·16) = 16 + int(1.717…) = 17
    assert 16 + int(math.log(20 / 16) / math.log(8) * 16) == 17 == c["decoder at offset −20"].value
    assert 8 + int(math.log(91 / 8) / math.log(16) * 8) == 15 and 8 + int(math.log(90 / 8) / math.log(16) * 8) == 14
    assert c["where the last bucket (15) starts"].value == 91


def test_the_command_shows_them(capsys) -> None:
    code, out, err = run(capsys, "examples", "bias")
    assert code == 0 and err == "" and "3 of 3 cases verified: 13 of 13 checks passed" in out
    assert "bias Ex 1" in out and "ALiBi with 12 heads" in out
    code, data = run_json(capsys, "examples", "xpos", "A")
    assert code == 0 and sorted(c["cell"] for c in data["cases"]) == ["A", "XPOS"]
    assert sorted(c["source"] for c in data["cases"]) == ["seed", "worked"]


def test_unknown_names() -> None:
    with pytest.raises(PosEncError, match="cell must be one of ALIBI, T5, XPOS"):
        bias_cases.case("rope")
    with pytest.raises(PosEncError):
        bias_cases.cases(["t5", "nope"])
