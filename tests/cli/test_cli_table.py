"""table: rows to stdout or streamed to a file.

Run in process. Expected numbers come from the seed's text or from mpmath
(tests/reference.py), never from posenc's own output.
"""

from __future__ import annotations

import io
import json
import sys

import numpy as np
import pytest

import posenc
from cli_helpers import run, run_json
from posenc.cli import main
from posenc.cli import tables as cli_tables
from reference import omega, reference_encoding


def ref_vector(p: float, d: int = 4, base: float = 10000.0) -> np.ndarray:
    return np.array([float(v) for v in reference_encoding(p, d, base)])


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

    monkeypatch.setattr(cli_tables, "table", flaky)
    for suffix in (".npy", ".csv"):
        calls.clear()
        path = tmp_path / f"x{suffix}"
        code, _, err = run(capsys, "table", "--length", "6", "--d-model", "4", "--out", str(path))
        assert code == 2 and err == "posenc: error: simulated failure\n"
        assert not path.exists()
