"""encode, ladder, context, shift, dot and alias: the seed's analysis from a terminal.

Run in process. Expected numbers come from the seed's text or from mpmath
(tests/reference.py), never from posenc's own output.
"""

from __future__ import annotations

import math

import mpmath
import numpy as np
import pytest

import posenc
from cli_helpers import run, run_json
from posenc.cli import analysis as cli_analysis
from posenc.cli._base import position
from reference import omega, reference_encoding, sin_cos


def ref_vector(p: float, d: int = 4, base: float = 10000.0) -> np.ndarray:
    return np.array([float(v) for v in reference_encoding(p, d, base)])


# ---------------------------------------------------------------- encode

def test_encode_ex1_position_zero_is_not_all_zeros(capsys):
    code, out, _ = run(capsys, "encode", "0", "--d-model", "4")
    assert code == 0
    assert "PE(0) = [0, 1, 0, 1]" in out


def test_encode_ex6_pos_1000(capsys):
    code, out, _ = run(capsys, "encode", "1000", "--d-model", "4", "--digits", "5")
    assert code == 0
    assert "PE(1000) = [0.82688, 0.56238, -0.54402, -0.83907]" in out
    # and in the per-channel table, one per row
    rows = [line.split() for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [r[-1] for r in rows] == ["0.82688", "0.56238", "-0.54402", "-0.83907"]


def test_encode_table_is_aligned(capsys):
    _, out, _ = run(capsys, "encode", "0", "1000", "-7.5", "--d-model", "8")
    block = out.split("\n\n")[1].splitlines()
    assert len(block) == 9  # header + 8 channels
    assert len({len(line) for line in block}) == 1  # every row as wide: right-aligned columns


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_encode_json_matches_mpmath(capsys, dtype):
    pos = [0, 1000, -3.25, 65537]
    code, data = run_json(capsys, "encode", *map(str, pos), "--d-model", "8", "--base", "500", "--dtype", dtype)
    assert code == 0
    assert data["positions"] == pos
    assert data["frequencies"] == pytest.approx([float(omega(8, 500.0, i)) for i in range(4)], rel=1e-16)
    for p, row in zip(pos, data["encoding"], strict=True):
        ref = ref_vector(p, 8, 500.0)
        if dtype == "float32":
            np.testing.assert_array_max_ulp(np.float32(row), ref.astype(np.float32), maxulp=1)
        else:
            np.testing.assert_allclose(row, ref, rtol=0, atol=4e-16)


def test_encode_split_layout(capsys):
    _, inter = run_json(capsys, "encode", "5", "--d-model", "6")
    _, split = run_json(capsys, "encode", "5", "--d-model", "6", "--layout", "split")
    a, b = np.array(inter["encoding"][0]), np.array(split["encoding"][0])
    assert b.tolist() == np.concatenate([a[0::2], a[1::2]]).tolist()


def test_positions_accept_multiples_of_pi():
    assert position("2pi") == 2 * math.pi
    assert position("2π") == 2 * math.pi
    assert position("-pi") == -math.pi
    assert position("0.5*pi") == 0.5 * math.pi
    assert position("1e6") == 1e6
    assert position("-3") == -3 and isinstance(position("-3"), int)


# ---------------------------------------------------------------- ladder, context

def test_ladder_ex2_ex3(capsys):
    code, out, _ = run(capsys, "ladder", "--d-model", "4", "--context", "100")
    assert code == 0
    assert "6.28319" in out and "628.319" in out and "15.92" in out  # Ex 2: 2π, Ex 3: 628, ~16 loops


def test_ladder_json(capsys):
    code, data = run_json(capsys, "ladder", "--d-model", "512", "--context", "8192")
    assert code == 0
    w = [omega(512, 10000.0, i) for i in range(256)]
    lam = [2 * mpmath.pi / x for x in w]
    assert data["omega"] == pytest.approx([float(x) for x in w], rel=1e-15)
    assert data["wavelength"] == pytest.approx([float(x) for x in lam], rel=1e-15)
    assert data["loops"] == pytest.approx([float(8192 / x) for x in lam], rel=1e-15)
    assert data["wraps"] == [bool(x < 8192) for x in lam]
    assert data["wrapped_channels"] == sum(bool(x < 8192) for x in lam)


def test_context_ex7_base_100_fails_the_check(capsys):
    code, out, _ = run(capsys, "context", "8192", "--d-model", "512", "--base", "100", "--check")
    assert code == 1
    assert "FAILS" in out and "617.1" in out and "13.27" in out
    assert run(capsys, "context", "8192", "--d-model", "512", "--base", "100")[0] == 0  # no --check: a report


def test_context_ex7_base_10000_passes(capsys):
    code, out, _ = run(capsys, "context", "8192", "--d-model", "512", "--check")
    assert code == 0 and "OK" in out and "60611" in out


def test_context_json(capsys):
    code, data = run_json(capsys, "context", "8192", "--d-model", "512", "--base", "100", "--check")
    assert code == 1
    lam_max = 2 * mpmath.pi * mpmath.power(100, mpmath.mpf(510) / 512)
    assert data["max_wavelength"] == pytest.approx(float(lam_max), rel=1e-15)
    assert data["wraps"] is True and data["suffices"] is False
    # the smallest float64 base whose true λ_max reaches the context (posenc.min_base's contract)
    mb = data["min_base"]
    assert 2 * mpmath.pi * mpmath.power(mb, mpmath.mpf(510) / 512) >= 8192
    assert 2 * mpmath.pi * mpmath.power(math.nextafter(mb, 0), mpmath.mpf(510) / 512) < 8192
    _, data2 = run_json(capsys, "context", "100", "--d-model", "2")
    assert data2["min_base"] is None  # no base helps d_model 2; strict JSON has no Infinity


def test_context_suggested_base_is_rounded_up(capsys):
    _, out, _ = run(capsys, "context", "8192", "--d-model", "512", "--base", "100")
    shown = float(out.split("use base >= ")[1].split()[0])
    assert 2 * mpmath.pi * mpmath.power(mpmath.mpf(shown), mpmath.mpf(510) / 512) >= 8192


# ---------------------------------------------------------------- shift, dot, alias

def test_shift_ex5(capsys):
    code, out, _ = run(capsys, "shift", "--pos", "3", "--by", "5", "--d-model", "4")
    assert code == 0
    for seed_number in ("0.029996", "0.999550", "0.079915", "0.996802", "0.998750", "0.049979", "-0.049979"):
        assert seed_number in out
    assert "✓ T_5 · PE(3) = PE(8)" in out and "✗" not in out


def test_shift_negative_k_is_the_inverse_rotation(capsys):
    code, data = run_json(capsys, "shift", "--pos", "8", "--by", "-5", "--d-model", "4")
    assert code == 0 and data["passed"] and data["inverse_passed"]
    c, s = float(mpmath.cos(0.05)), float(mpmath.sin(0.05))
    # T_-5 = [[cos 0.05, -sin 0.05], [sin 0.05, cos 0.05]] (seed, Ex 5 step 4)
    np.testing.assert_allclose(data["blocks"][1], [[c, -s], [s, c]], rtol=0, atol=2e-16)
    np.testing.assert_allclose(np.ravel(data["rotated"]), ref_vector(3), rtol=0, atol=1e-15)
    np.testing.assert_allclose(data["target_direct"], ref_vector(3), rtol=0, atol=4e-16)


def test_shift_reports_a_failed_check(capsys, monkeypatch):
    real = posenc.shift
    monkeypatch.setattr(cli_analysis, "shift", lambda e, k, **kw: real(e, k, **kw) + 1e-6)
    code, out, _ = run(capsys, "shift", "--pos", "3", "--by", "5", "--d-model", "4")
    assert code == 1 and "✗" in out


def test_dot_ex8(capsys):
    code, out, _ = run(capsys, "dot", "8", "3", "--d-model", "4")
    assert code == 0 and "0.998750" in out and "the same" in out
    code, data = run_json(capsys, "dot", "8", "3", "--d-model", "4")
    terms = [float(mpmath.cos(5)), float(mpmath.cos(mpmath.mpf(5) / 100))]
    assert data["offset"] == 5
    np.testing.assert_allclose(data["terms"], terms, rtol=0, atol=2e-16)
    assert data["sum"] == pytest.approx(sum(terms), abs=4e-16)
    assert data["reversed_sum"] == data["sum"]
    assert data["direct_dot"] == pytest.approx(float(ref_vector(8) @ ref_vector(3)), abs=1e-15)


def test_dot_negative_position(capsys):
    code, data = run_json(capsys, "dot", "3", "-5", "--d-model", "4")
    assert code == 0 and data["offset"] == 8
    assert data["terms"][1] == pytest.approx(float(mpmath.cos(mpmath.mpf(8) / 100)), abs=2e-16)


def test_alias_ex4(capsys):
    code, out, _ = run(capsys, "alias", "0", "2pi", "--d-model", "4")
    assert code == 0 and "0.062791" in out and "the vectors differ" in out
    _, data = run_json(capsys, "alias", "0", "2pi", "--d-model", "4")
    assert data["coincide"] == [True, True, False, False] and data["collide"] is False
    gap = mpmath.mpf(2 * math.pi)
    dist = mpmath.sqrt(sum((2 * mpmath.sin(omega(4, 10000.0, i) * gap / 2)) ** 2 for i in range(2)))
    assert data["distance"] == pytest.approx(float(dist), rel=1e-14)
    assert data["pe_q"][2] == pytest.approx(float(sin_cos(2 * math.pi, omega(4, 10000.0, 1))[0]), abs=1e-16)


def test_alias_identical_positions_collide(capsys):
    code, out, _ = run(capsys, "alias", "7", "7", "--d-model", "4")
    assert code == 0 and "COLLIDE" in out
