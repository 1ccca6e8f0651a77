"""The timestep and field worked cases: each stated figure is the library's value and the true one; each claim holds."""

from __future__ import annotations

import mpmath
import pytest

from cli_helpers import run, run_json
from posenc import PosEncError
from posenc.seed import time_cases

# the stated figures, recomputed here from the formulas (mpmath), independently of posenc
INDEPENDENT = {
    "last frequency with shift 1, 10000^(−159/159)": mpmath.mpf(1) / 10000,
    "last frequency with shift 0 (guided-diffusion), 10000^(−159/160)": mpmath.power(10000, -mpmath.mpf(159) / 160),
    "slowest period with shift 1, 2π·10000": 2 * mpmath.pi * 10000,
    "slowest period with shift 0": 2 * mpmath.pi * mpmath.power(10000, mpmath.mpf(159) / 160),
    "slowest sine at t = 999 (shift 1): sin(0.0999)": mpmath.sin(mpmath.mpf(999) / 10000),
    "channel 0 at t = 1, flipped: cos(1)": mpmath.cos(1),
    "channel 3 at t = 500, unflipped: sin(500·10000^(−1))": mpmath.sin(mpmath.mpf(500) / 10000),
    "angle step of the top band per ulp of x, 512·2^−24 (rad)": mpmath.mpf(512) * mpmath.mpf(2) ** -24,
}


@pytest.mark.parametrize("cell", time_cases.CELLS)
def test_every_figure_agrees_and_every_check_passes(cell: str) -> None:
    c = time_cases.case(cell)
    assert c.errata == ()
    assert c.passed, [k.claim for k in c.checks if not k.passed]


@mpmath.workdps(30)
def test_stated_figures_are_the_true_values() -> None:
    seen = 0
    for c in time_cases.cases():
        for f in c.figures:
            if f.label in INDEPENDENT:
                exact = INDEPENDENT[f.label]
                assert abs(mpmath.mpf(f.value) - exact) <= abs(exact) * 1e-14
                assert abs(float(exact) - float(f.printed)) <= 0.5 * 10.0 ** -f.decimals
                seen += 1
    assert seen == len(INDEPENDENT)


def test_the_command_shows_the_times_set(capsys) -> None:
    code, out, _ = run(capsys, "examples", "times")
    assert code == 0 and "SHIFT · times Ex 1" in out and "NERFBAND" in out and "3 of 3 cases verified" in out
    code, data = run_json(capsys, "examples", "flip", "--json")
    assert code == 0 and [c["cell"] for c in data["cases"]] == ["FLIP"] and data["passed"]


def test_unknown_cells_are_refused() -> None:
    with pytest.raises(PosEncError, match="'nope'"):
        time_cases.cases(["shift", "nope"])
