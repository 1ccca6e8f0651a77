"""The command, run in process: every subcommand, its JSON, its exit status and its errors.

Expected numbers come from the seed's text or from mpmath (tests/reference.py),
never from posenc's own output.
"""

from __future__ import annotations

import io
import json
import math
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import mpmath
import numpy as np
import pytest

import posenc
from cli_helpers import run, run_json
from posenc import examples
from posenc.cli import main
from posenc.cli import tables as cli_tables
from posenc.cli._base import position
from reference import omega, reference_encoding, sin_cos

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
MISSING = "posenc: error: plotting needs matplotlib: pip install 'posenc[plot]'\n"


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


# ---------------------------------------------------------------- table

def ref_table(start: int, n: int, d: int, base: float = 10000.0) -> np.ndarray:
    w = np.array([float(omega(d, base, i)) for i in range(d // 2)])
    ang = np.arange(start, start + n, dtype=np.float64)[:, None] * w  # small positions: float64 sin is accurate
    out = np.empty((n, d))
    out[:, 0::2], out[:, 1::2] = np.sin(ang), np.cos(ang)
    return out


def test_table_stdout(capsys):
    code, out, _ = run(capsys, "table", "--length", "4", "--start", "-1", "--d-model", "6")
    assert code == 0
    lines = out.splitlines()
    assert lines[0].split() == ["pos", "sin0", "cos0", "sin1", "cos1", "sin2", "cos2"]
    assert len({len(line) for line in lines}) == 1
    got = np.array([[float(x) for x in line.split()[1:]] for line in lines[1:]])
    assert [int(line.split()[0]) for line in lines[1:]] == [-1, 0, 1, 2]
    np.testing.assert_allclose(got, ref_table(-1, 4, 6), atol=5e-7)


def test_table_stdout_json(capsys):
    code, data = run_json(capsys, "table", "--length", "3", "--start", "10", "--d-model", "4", "--dtype", "float64")
    assert code == 0 and data["start"] == 10 and data["columns"] == ["sin0", "cos0", "sin1", "cos1"]
    np.testing.assert_allclose(data["table"], ref_table(10, 3, 4), atol=1e-15)


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".json"])
def test_table_to_file_in_chunks(capsys, monkeypatch, tmp_path, suffix):
    monkeypatch.setattr(cli_tables, "CHUNK_BYTES", 3 * 8 * 8)  # 3 rows of d_model 8 per chunk: 4 chunks
    path = tmp_path / f"t{suffix}"
    code, out, err = run(capsys, "table", "--length", "11", "--start", "-2", "--d-model", "8", "--out", str(path))
    assert code == 0 and err == ""
    assert f"wrote {path}" in out
    if suffix == ".npy":
        got = np.load(path)
        assert got.dtype == np.float32 and got.shape == (11, 8)
    elif suffix == ".csv":
        lines = path.read_text().splitlines()
        assert lines[0].split(",") == ["position", "sin0", "cos0", "sin1", "cos1", "sin2", "cos2", "sin3", "cos3"]
        rows = np.array([[float(x) for x in line.split(",")] for line in lines[1:]])
        assert rows[:, 0].tolist() == list(range(-2, 9))
        got = rows[:, 1:].astype(np.float32)  # 9 significant digits: every float32 bit
    else:
        data = json.loads(path.read_text())
        assert (data["start"], data["length"], data["d_model"], data["dtype"]) == (-2, 11, 8, "float32")
        got = np.array(data["table"], dtype=np.float32)
    ref = np.array([ref_vector(p, 8) for p in range(-2, 9)]).astype(np.float32)
    np.testing.assert_array_max_ulp(got, ref, maxulp=1)


def test_table_empty_and_split_npy(capsys, tmp_path):
    assert run(capsys, "table", "--length", "0", "--d-model", "4", "--out", str(tmp_path / "e.npy"))[0] == 0
    assert np.load(tmp_path / "e.npy").shape == (0, 4)
    path = tmp_path / "s.npy"
    assert run(capsys, "table", "--length", "5", "--d-model", "4", "--layout", "split", "--dtype", "float64",
               "--out", str(path))[0] == 0
    ref = ref_table(0, 5, 4)
    np.testing.assert_allclose(np.load(path), ref[:, [0, 2, 1, 3]], atol=1e-15)


class _Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_table_progress_only_on_a_terminal(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(cli_tables, "CHUNK_BYTES", 8 * 4 * 2)
    code, _, err = run(capsys, "table", "--length", "6", "--d-model", "4", "--out", str(tmp_path / "a.npy"))
    assert code == 0 and err == ""  # captured stderr is not a terminal: no bar
    tty = _Tty()
    monkeypatch.setattr(sys, "stderr", tty)
    code = main(["table", "--length", "6", "--d-model", "4", "--out", str(tmp_path / "b.npy")])
    assert code == 0
    text = tty.getvalue()
    assert "\r" in text and "100.0%" in text and "6 of 6 rows" in text


def test_table_failure_leaves_no_half_file(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(cli_tables, "CHUNK_BYTES", 8 * 4 * 2)
    real = posenc.table
    calls = []

    def flaky(*a, **k):
        calls.append(1)
        if len(calls) == 4:  # two validation calls, one good chunk, then a failure
            raise posenc.PosEncError("simulated failure")
        return real(*a, **k)

    monkeypatch.setattr(posenc, "table", flaky)
    for suffix in (".npy", ".csv"):
        calls.clear()
        path = tmp_path / f"x{suffix}"
        code, _, err = run(capsys, "table", "--length", "6", "--d-model", "4", "--out", str(path))
        assert code == 2 and err == "posenc: error: simulated failure\n"
        assert not path.exists()


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
    monkeypatch.setattr(posenc, "shift", lambda e, k, **kw: real(e, k, **kw) + 1e-6)
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


# ---------------------------------------------------------------- examples, quiz

def test_examples_all_eight_with_errata(capsys):
    code, out, _ = run(capsys, "examples")
    assert code == 0
    for cell, ex in zip("ABCDEFGH", range(1, 9), strict=True):
        assert f"{cell} · Ex {ex} · " in out
    g = next(line for line in out.splitlines() if "10000^(510/512)" in line)
    assert "9655" in g and "9647" in g and "erratum" in g  # seed's figure beside the true one
    assert "8 of 8 cases verified" in out
    for seed_number in ("0.82688", "0.56238", "-0.54402", "-0.83907", "0.998750", "0.6570"):
        assert seed_number in out


def test_examples_cells_and_json(capsys):
    code, out, _ = run(capsys, "examples", "a", "H")
    assert code == 0 and "A · Ex 1" in out and "H · Ex 8" in out and "B · Ex 2" not in out
    code, data = run_json(capsys, "examples", "G")
    assert code == 0 and data["passed"] is True
    fig = next(f for f in data["cases"][0]["figures"] if f["printed"] == "9655")
    assert fig["value"] == pytest.approx(float(mpmath.power(10000, mpmath.mpf(510) / 512)), rel=1e-15)
    assert fig["agrees"] is False and "9647" in fig["erratum"]


def test_examples_exit_1_when_a_check_fails(capsys, monkeypatch):
    real = examples.cases

    def broken(cells=None):
        c = real(cells)[0]
        bad = examples.Case(c.cell, c.example, c.title, c.tricky, c.figures,
                            (*c.checks, examples.Check("a claim that fails", False, "simulated")))
        return [bad]

    monkeypatch.setattr(examples, "cases", broken)
    code, out, _ = run(capsys, "examples", "A")
    assert code == 1 and "✗ a claim that fails" in out


def test_quiz_waits_for_enter(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n" * 6))
    code, out, _ = run(capsys, "quiz")
    assert code == 0
    assert out.count("(Enter for the answer)") == 6
    assert "Q1." in out and "[0, 1, 0, 1]" in out and "Q6." in out
    # each answer comes after its own prompt
    assert out.index("Q1.") < out.index("(Enter") < out.index("cosine channels pinned")


def test_quiz_survives_end_of_input(capsys, monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("\n"))  # one Enter, then EOF
    code, out, err = run(capsys, "quiz")
    assert code == 0 and err == ""
    assert out.count("(Enter for the answer)") == 2
    assert "Q6." in out and "6 of 6 answers checked" in out


def test_quiz_no_input_and_json(capsys):
    code, out, _ = run(capsys, "quiz", "--no-input")
    assert code == 0 and "(Enter" not in out and "60611" in out and "erratum" in out
    code, data = run_json(capsys, "quiz")
    assert code == 0 and len(data["questions"]) == 6 and data["passed"] is True
    lam = data["questions"][5]["figures"][1]
    assert lam["value"] == pytest.approx(float(2 * mpmath.pi * mpmath.power(10000, mpmath.mpf(510) / 512)))


# ---------------------------------------------------------------- plot, tour

@pytest.mark.parametrize("kind", ["wave", "rotation", "heatmap", "kernel", "ladder"])
def test_plot_png(capsys, tmp_path, kind):
    path = tmp_path / f"{kind}.png"
    code, out, err = run(capsys, "plot", kind, "--out", str(path))
    assert code == 0 and err == "" and f"wrote {path}" in out
    assert path.read_bytes()[:8] == PNG_MAGIC


def test_plot_svg_with_options(capsys, tmp_path):
    path = tmp_path / "r.svg"
    code, _, _ = run(capsys, "plot", "rotation", "--by", "-5", "--out", str(path))
    assert code == 0
    assert ET.parse(path).getroot().tag.endswith("svg")
    path = tmp_path / "k.svg"
    assert run(capsys, "plot", "kernel", "--d-model", "16", "--refs", "0", "7", "--max-offset", "20",
               "--out", str(path))[0] == 0
    assert ET.parse(path).getroot().tag.endswith("svg")


def test_plot_without_matplotlib(capsys, monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now raises ImportError
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    for argv in (["plot", "wave", "--out", str(tmp_path / "w.png")], ["tour", "--out", str(tmp_path / "t")]):
        code, out, err = run(capsys, *argv)
        assert (code, out, err) == (2, "", MISSING)
    assert not (tmp_path / "w.png").exists() and not (tmp_path / "t").exists()


def test_tour(capsys, tmp_path):
    out_dir = tmp_path / "tour"
    code, out, err = run(capsys, "tour", "--out", str(out_dir))
    assert code == 0 and err == ""
    for cell, ex in zip("ABCDEFGH", range(1, 9), strict=True):
        assert f"{cell} · Ex {ex} · " in out
    assert "8 of 8 cases verified" in out and "Q6." in out and "(Enter" not in out
    names = ["wave", "rotation", "heatmap", "kernel", "ladder"]
    tail = out.rstrip("\n").splitlines()[-7:]
    assert tail[0] == "Files written:"
    assert [line.strip() for line in tail[1:]] == [str(out_dir / f"{n}.png") for n in names] + [
        str(out_dir / "index.html")]
    for n in names:
        assert (out_dir / f"{n}.png").read_bytes()[:8] == PNG_MAGIC
    assert (out_dir / "index.html").read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


# ---------------------------------------------------------------- errors

BAD = [
    ["encode", "1", "--d-model", "5"],                      # odd d_model
    ["encode", "x", "--d-model", "4"],                      # not a number
    ["encode", "1", "--d-model", "four"],
    ["encode", "1e400", "--d-model", "4"],                  # infinite
    ["encode", "9007199254740993", "--d-model", "4"],       # beyond 2**53
    ["encode", "1", "--d-model", "4", "--base", "1"],
    ["encode", "1", "--d-model", "4", "--layout", "diagonal"],
    ["encode", "1", "--d-model", "4", "--digits", "99"],
    ["table", "--length", "-1", "--d-model", "4"],
    ["table", "--length", "3", "--d-model", "4", "--out", "t.txt"],
    ["table", "--length", "3", "--d-model", "4", "--start", "9007199254740991"],
    ["ladder", "--d-model", "0"],
    ["ladder", "--d-model", "4", "--context", "-5"],
    ["context", "nan", "--d-model", "4"],
    ["shift", "--pos", "3", "--d-model", "4"],              # --by missing
    ["shift", "--pos", "3", "--by", "inf", "--d-model", "4"],
    ["dot", "1", "--d-model", "4"],
    ["alias", "0", "1", "--d-model", "4", "--atol", "-1"],
    ["examples", "Z"],
    ["plot", "spiral", "--out", "x.png"],                   # unknown KIND
    ["plot", "wave", "--out", "x.pdf"],
    ["plot", "wave"],                                       # --out missing
    ["plot", "rotation", "--pair", "2", "--out", "x.png"],  # d_model 4 has pairs 0, 1
    ["plot", "heatmap", "--length", "0", "--out", "x.png"],
    ["plot", "wave", "--dpi", "0", "--out", "x.png"],
    ["frobnicate"],
    [],
]


@pytest.mark.parametrize("argv", BAD, ids=lambda a: " ".join(a) or "(nothing)")
def test_bad_input_exits_2_with_one_line(capsys, argv):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert err.startswith("posenc: error: ") and err.endswith("\n") and err.count("\n") == 1
    assert "Traceback" not in err


def test_unwritable_out(capsys, tmp_path):
    missing = tmp_path / "no" / "such" / "dir"
    for argv in (["table", "--length", "3", "--d-model", "4", "--out", str(missing / "t.npy")],
                 ["table", "--length", "3", "--d-model", "4", "--out", str(missing / "t.csv")],
                 ["plot", "wave", "--out", str(missing / "w.png")]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == ""
        assert err.startswith("posenc: error: cannot write ") and err.count("\n") == 1
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run(capsys, "tour", "--out", str(blocker))
    assert code == 2 and err.startswith("posenc: error: cannot write") and err.count("\n") == 1


def test_help_and_version_exit_0(capsys):
    code, out, _ = run(capsys, "--help")
    assert code == 0
    for name in ("encode", "table", "ladder", "context", "shift", "dot", "alias", "examples", "quiz", "plot", "tour"):
        assert name in out
    code, out, _ = run(capsys, "--version")
    assert code == 0 and posenc.__version__ in out


def test_python_dash_m_posenc():
    proc = subprocess.run([sys.executable, "-m", "posenc", "encode", "0", "--d-model", "4"],
                          capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0 and "[0, 1, 0, 1]" in proc.stdout
    proc = subprocess.run([sys.executable, "-m", "posenc", "encode", "0", "--d-model", "3"],
                          capture_output=True, text=True, check=False, stdin=subprocess.DEVNULL)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def _reject_constant(token: str) -> None:
    raise AssertionError(f"non-strict JSON token {token}")


def test_json_everywhere_is_strict(capsys):
    for argv in (["encode", "1", "--d-model", "4"], ["table", "--length", "2", "--d-model", "4"],
                 ["ladder", "--d-model", "4"], ["context", "10", "--d-model", "2"],
                 ["shift", "--pos", "1", "--by", "2", "--d-model", "4"], ["dot", "1", "2", "--d-model", "4"],
                 ["alias", "1", "2", "--d-model", "4"], ["examples"], ["quiz"]):
        code, out, _ = run(capsys, *argv, "--json")
        assert code == 0
        json.loads(out, parse_constant=_reject_constant)


def test_output_dir_is_relative_to_cwd(capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "plot", "ladder", "--d-model", "16", "--context", "100", "--out", "l.png")
    assert code == 0 and out == "wrote l.png\n" and (Path(tmp_path) / "l.png").read_bytes()[:8] == PNG_MAGIC


def test_readme_session_is_what_the_command_prints(capsys, monkeypatch, tmp_path):
    """Every `$ posenc ...` in the README's console block prints what the README shows."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    block = readme.split("```console\n", 1)[1].split("```", 1)[0]
    monkeypatch.chdir(tmp_path)
    sessions = block.split("$ ")[1:]
    assert len(sessions) >= 4
    code = 0
    for s in sessions:
        cmd, *shown = s.rstrip("\n").split("\n")
        if cmd == "echo $?":
            assert [str(code)] == shown
            continue
        assert cmd.startswith("posenc ")
        code = main(cmd.split()[1:])
        out = capsys.readouterr().out.rstrip("\n").split("\n")
        if "..." in shown:  # the README shows the beginning only
            shown = shown[: shown.index("...")]
            out = out[: len(shown)]
        assert out == shown, cmd


def test_plot_help_states_the_functions_defaults():
    import inspect
    import re

    from posenc.cli.plotting import PLOT_KINDS

    for kind in PLOT_KINDS.values():
        params = inspect.signature(kind.draw).parameters
        for o in kind.options:
            m = re.search(r"\(default ([^)]*)\)", o.help)
            if m is None:
                assert params[o.dest].default is None, (kind.name, o.dest)  # "the slowest" and the like
                continue
            default = params[o.dest].default
            if isinstance(default, tuple):
                shown = " ".join(f"{v:g}" for v in default)
            else:
                shown = default if isinstance(default, str) else f"{default:g}"
            assert m.group(1) == shown, (kind.name, o.dest)


def test_bench_small_json(capsys):
    assert main(["bench", "--shape", "256x16", "--repeats", "1", "--no-scaling", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    rows = {r["method"]: r for r in data["rows"]}
    assert rows["posenc"]["max_ulp"] == 0
    assert rows["floor: fill"]["ratio"] == 1.0
    assert "CPUs" in data["machine"]


@pytest.mark.parametrize(
    "argv", [["bench", "--shape", "12x5"], ["bench", "--repeats", "0"], ["bench", "--shape", "big"]]
)
def test_bench_bad_input_exits_2(argv, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("posenc: error:") and err.count("\n") == 1
