"""Every writer of the command proves what it wrote before the rename (issue 31 §2): a bad file never lands.

Each writer is made to write a damaged file (``os.write`` patched to change
one byte, or to drop the end, of what goes to the file aside); the
command must then exit 2 with one line naming the file and keep the old
file, with no temporary left. Before, nothing read a file back: the
command printed ``wrote t.npy`` over a file ``np.load`` refused.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import posenc.cli.files as files
from cli_helpers import run
from posenc.cli import _base

OLD = b"the user's old file\n"
Mutate = Callable[[bytes, int], bytes]


def _damage(monkeypatch: pytest.MonkeyPatch, name: str, mutate: Mutate) -> list[int]:
    """Patch os.write so that what goes to the temporary of ``name`` passes through ``mutate(data, call)``."""
    real, calls = os.write, []

    def write(fd: int, data: bytes) -> int:
        if f"/.{name}." in os.readlink(f"/proc/self/fd/{fd}"):
            calls.append(1)
            data = bytes(data)
            real(fd, mutate(data, len(calls)))
            return len(data)
        return real(fd, data)

    monkeypatch.setattr(files.os, "write", write)
    return calls


def _flip_last(data: bytes, call: int) -> bytes:
    return data[:-1] + bytes([data[-1] ^ 0x01]) if call > 1 else data  # a value's low bit, past the header


def _flip_header(data: bytes, call: int) -> bytes:
    return data.replace(b"'shape': (", b"'shape': [") if call == 1 else data


def _cut_end(data: bytes, call: int) -> bytes:
    return data[:-8] + b" " * 8 if len(data) > 8 else b" " * len(data)


def _flip_middle(data: bytes, call: int) -> bytes:
    k = len(data) // 2
    return data[:k] + bytes([data[k] ^ 0x10]) + data[k + 1:]


def _letter(data: bytes, call: int) -> bytes:
    return data[:-2] + b"x\n" if call > 1 and data.endswith(b"\n") else data


def _one_line(err: str) -> str:
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("posenc: error: "), err
    return err


@pytest.mark.parametrize(("suffix", "mutate", "says"), [
    (".npy", _flip_last, "np.load: row 5 reads back otherwise than it was computed"),
    (".npy", _flip_header, "np.load refuses it"),
    (".csv", _letter, "line 7 is not 5 numbers separated by commas"),
    (".csv", _flip_last, "line 7 is not 5 numbers"),  # "\n" flipped: the last line has no end
    (".json", _cut_end, "json.loads refuses it"),
])
def test_a_table_that_does_not_read_back_keeps_the_old_file(capsys, monkeypatch, tmp_path, suffix, mutate, says):
    out = tmp_path / f"t{suffix}"
    out.write_bytes(OLD)
    calls = _damage(monkeypatch, out.name, mutate)
    code, stdout, err = run(capsys, "table", "--length", "6", "--d-model", "4", "--out", str(out))
    assert calls and (code, stdout) == (2, "")
    assert _one_line(err).startswith(f"posenc: error: cannot write {out}: the file written does not read back (")
    assert says in err and err.endswith("); the old file is unchanged\n"), err
    assert out.read_bytes() == OLD and [p.name for p in tmp_path.iterdir()] == [out.name]


def test_a_table_that_does_not_read_back_creates_no_file(capsys, monkeypatch, tmp_path):
    out = tmp_path / "t.npy"
    _damage(monkeypatch, out.name, _flip_last)
    code, _, err = run(capsys, "table", "--length", "100", "--d-model", "8", "--out", str(out))
    assert code == 2 and _one_line(err).endswith("; no file was created\n")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(("suffix", "mutate", "says"), [
    (".png", _flip_middle, "fails its CRC|runs past the end"),
    (".png", _cut_end, "fails its CRC|cut short|runs past the end|IEND"),
    (".svg", _cut_end, "the XML parser refuses it"),
])
def test_a_figure_that_does_not_read_back_keeps_the_old_file(capsys, monkeypatch, tmp_path, suffix, mutate, says):
    pytest.importorskip("matplotlib")
    out = tmp_path / f"w{suffix}"
    out.write_bytes(OLD)
    _damage(monkeypatch, out.name, mutate)
    code, stdout, err = run(capsys, "plot", "wave", "--out", str(out))
    assert (code, stdout) == (2, "")
    assert _one_line(err).startswith(f"posenc: error: cannot write {out}: the file written does not read back (")
    assert err.rstrip().endswith("; the old file is unchanged") and re.search(says, err), err
    assert out.read_bytes() == OLD and [p.name for p in tmp_path.iterdir()] == [out.name]


def test_a_page_that_does_not_read_back_keeps_the_old_page(capsys, monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    page = tmp_path / "index.html"
    page.write_bytes(OLD)
    _damage(monkeypatch, "index.html", _cut_end)  # "</html>\n" gone
    code, _, err = run(capsys, "page", "--out", str(tmp_path))
    assert code == 2 and _one_line(err) == (
        f"posenc: error: cannot write {page}: the file written does not read back (html.parser finds no </body> "
        f"and </html> at its end); nothing in {tmp_path} was changed\n")  # the site: all its pages or none
    assert page.read_bytes() == OLD and [p.name for p in tmp_path.iterdir()] == ["index.html"]


TOUR = ["heatmap.png", "index.html", "kernel.png", "ladder.png", "rotation.png", "wave.png"]


@pytest.mark.parametrize("bad", ["kernel.png", "index.html"])
def test_a_tour_with_a_file_that_does_not_read_back_changes_nothing(capsys, monkeypatch, tmp_path, bad):
    pytest.importorskip("matplotlib")
    old = {name: OLD + name.encode() for name in TOUR}
    for name, data in old.items():
        (tmp_path / name).write_bytes(data)
    _damage(monkeypatch, bad, _cut_end)
    code, _, err = run(capsys, "tour", "--out", str(tmp_path))
    assert code == 2
    assert _one_line(err).startswith(f"posenc: error: cannot write {tmp_path / bad}: the file written does not "
                                     "read back (")
    assert err.rstrip().endswith(f"; nothing in {tmp_path} was changed")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == old


def test_json_that_does_not_read_back_is_not_printed(capsys, monkeypatch):
    real = _base.json.dumps
    monkeypatch.setattr(_base.json, "dumps", lambda *a, **k: real(*a, **k)[:-1])  # its closing brace lost
    code, out, err = run(capsys, "ladder", "--d-model", "4", "--json")
    assert (code, out) == (2, "")
    assert _one_line(err).startswith("posenc: error: the JSON output does not read back (")
    assert err.rstrip().endswith("; nothing printed")


def test_a_good_file_is_proved_and_renamed(capsys, tmp_path, monkeypatch):
    proved: list[Path] = []
    real = files.prove

    def spy(tmp, shown, expect, poll):
        proved.append(shown)
        assert expect is not None and expect.shape == (6, 4) and sorted(expect.rows) == [0, 3, 5]
        return real(tmp, shown, expect, poll)

    monkeypatch.setattr(files, "prove", spy)
    out = tmp_path / "t.npy"
    assert run(capsys, "table", "--length", "6", "--d-model", "4", "--out", str(out))[0] == 0
    assert proved == [out] and np.load(out).shape == (6, 4)
