"""The command as a whole: bad input, help, version, JSON, python -m.

Run in process. Expected numbers come from the seed's text or from mpmath
(tests/reference.py), never from posenc's own output.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import posenc
from cli_helpers import run

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


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


