"""The grid worked cases: every check holds, every hand-worked figure is the true value, and the
checks fail when the library is wrong.

The references below are the figures' formulas in mpmath (60 digits), written
from the case titles, not from posenc.
"""

from __future__ import annotations

import importlib

import mpmath
import numpy as np
import pytest

from cli_helpers import run, run_json
from posenc import PosEncError, seed

gc = importlib.import_module("posenc.seed.grid_cases")  # the module (posenc.seed.grid_cases is the function)
mp = mpmath.mpf
TWO_PI = 2 * mpmath.pi

REFERENCES = {
    "N1": [0, 1, 0, 1, 0, 1, 0, 1],
    "N2": [TWO_PI, 64 / TWO_PI, TWO_PI * mpmath.power(10000, mp(126) / 128), TWO_PI * 10000],
    "N3": [mp("0.01") * 2 * mpmath.pi, mpmath.sin(mp("0.01") * 2 * mpmath.pi), mpmath.cos(mp("0.01") * 2 * mpmath.pi)],
    "N4": [mpmath.sin(mp("0.05")), mpmath.cos(mp("0.05")), mp("0.05"), mpmath.sin(mp("0.1"))],
    "N5": [mpmath.sin(1), mpmath.sin(mp("0.01")), mpmath.cos(1), 0],
    "N6": [mpmath.cos(3), mpmath.cos(mp("0.3")), mpmath.cos(mp("0.03")), mpmath.cos(mp("0.003")),
           mpmath.cos(mp("0.005"))],
}


def test_every_case_passes_with_no_errata():
    cases = seed.grid_cases()
    assert [c.cell for c in cases] == list(seed.GRID_CELLS) == ["N1", "N2", "N3", "N4", "N5", "N6"]
    for c in cases:
        assert c.passed, [k for k in c.checks if not k.passed]
        assert c.errata == (), c.errata
        assert c.example == int(c.cell[1]) and c.title and c.tricky and len(c.checks) >= 3


@pytest.mark.parametrize("cell", list(REFERENCES))
def test_figures_are_the_true_values(cell):
    c = seed.grid_case(cell)
    assert len(c.figures) == len(REFERENCES[cell])
    for f, ref in zip(c.figures, REFERENCES[cell], strict=True):
        # float64 values of quantities of magnitude <= 6·10^4: a few ulps at most
        assert abs(mp(f.value) - ref) <= 1e-15 * max(1, abs(ref)), (f.label, f.value, ref)
        assert f.agrees


def test_checks_fail_when_the_library_is_wrong(monkeypatch):
    real = gc.encode_nd

    def swapped(coords, d_model, **kw):  # a library that encodes the axes in the wrong order
        return real(np.asarray(coords)[..., ::-1], d_model, **kw)

    monkeypatch.setattr(gc, "encode_nd", swapped)
    assert not seed.grid_case("N3").passed and not seed.grid_case("N4").passed
    monkeypatch.undo()
    real_rope = gc.rope_cos_sin

    def off_by_one_ulp(positions, *args, **kw):
        c, s = real_rope(positions, *args, **kw)
        if np.asarray(positions).ndim == 2:
            c = np.nextafter(c, 2.0)
        return c, s

    monkeypatch.setattr(gc, "rope_cos_sin", off_by_one_ulp)
    assert not seed.grid_case("N6").passed


def test_names():
    assert seed.grid_case("n2").cell == "N2"
    with pytest.raises(PosEncError, match="N1"):
        seed.grid_case("N7")
    with pytest.raises(PosEncError, match="N1"):
        seed.grid_cases(["N1", "A"])


def test_examples_shows_both_sets(capsys):
    code, out, _ = run(capsys, "examples")
    assert code == 0
    assert "8 of 8 cases verified" in out and "6 of 6 cases verified" in out
    assert out.index("H · Ex 8") < out.index("N1 · grid Ex 1")
    code, out, _ = run(capsys, "examples", "grid")
    assert code == 0 and "A · Ex 1" not in out and "N6 · grid Ex 6" in out and "worked" in out
    code, data = run_json(capsys, "examples", "n5", "b")
    assert code == 0 and [c["cell"] for c in data["cases"]] == ["B", "N5"]
    code, _, err = run(capsys, "examples", "N9")
    assert code == 2 and "N9" in err
