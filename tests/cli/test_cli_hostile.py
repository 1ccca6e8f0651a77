"""The command under a hostile sweep (issue 18, section 4): signals at every moment, odd arguments, sets, links.

Before: a Ctrl-C during the imports printed a 14–37-line KeyboardInterrupt
traceback and ended the process by signal; a SIGTERM before a write began,
or a SIGINT just after it ended, ended it by signal with no line;
``alibi --penalty 1e308`` printed NumPy's overflow warning and ``inf``;
``--scaling yarn:factor=4,factor=8`` took the last; ``page --out ''`` wrote
into the current folder; ``tour`` wrote its six files one by one (new
figures beside the old page after a failure); ``--out`` naming a symlink
replaced the link with a file. Signals go to a real process held at a named
stage by the test-only hook POSENC_TEST_HOLD_AT (no timing); the rest runs
in process.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_signals import Marker, popen

import posenc.cli.files as files
from cli_helpers import run
from posenc.errors import PosEncError

OLD = b"the user's old file\n"
TOUR_FILES = ["heatmap.png", "index.html", "kernel.png", "ladder.png", "rotation.png", "wave.png"]


def _one_line(err: str) -> str:
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert err.count("\n") == 1 and err.startswith("posenc: error: "), err
    return err


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _held(argv: list[str], stage: str, marker: Path, sig: int) -> tuple[int, str, str, str]:
    """Run ARGV, wait until it says it is at STAGE, send SIG: (exit status, stdout, stderr, the marker's text)."""
    env = dict(os.environ, POSENC_TEST_HOLD_AT=f"{stage}:{marker}")  # posenc.cli.signals.HOLD_AT_ENV
    env.pop(files.HOLD_ENV, None)
    # SIGINT at its default in the child, even when pytest runs as a background job (`make test &`)
    held = Marker(marker)  # before the child starts: its hook writes into it
    proc = popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    line = held.wait(proc)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out.decode(), err.decode(), line


def _console_script(tmp_path: Path) -> list[str]:
    """What pip writes for ``[project.scripts] posenc = "posenc.cli:main"``, as a file named posenc."""
    script = tmp_path / "bin" / "posenc"
    script.parent.mkdir()
    script.write_text("import re\nimport sys\nfrom posenc.cli import main\nif __name__ == '__main__':\n"
                      "    sys.argv[0] = re.sub(r'(-script\\.pyw|\\.exe)?$', '', sys.argv[0])\n"
                      "    sys.exit(main())\n")
    return [sys.executable, str(script)]


# ---------------------------------------------------------------- signals at every moment, in a real process


@pytest.mark.parametrize("entry", ["-m", "script"])
@pytest.mark.parametrize(("sig", "code"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_signal_while_posenc_loads_is_one_line(tmp_path, entry, sig, code):
    head = [sys.executable, "-m", "posenc"] if entry == "-m" else _console_script(tmp_path)
    got, stdout, err, marker = _held([*head, "encode", "--d-model", "4", "1"], "import", tmp_path / "m", sig)
    assert marker.split()[1] == "False"  # held before NumPy was imported: the handler came first
    assert got == code and stdout == ""  # not -2 (death by SIGINT), no traceback
    assert _one_line(err) == f"posenc: error: interrupted by {signal.Signals(sig).name}\n"


def test_sigterm_before_the_write_begins_is_one_line_and_no_file(tmp_path):
    out = tmp_path / "t.npy"
    argv = [sys.executable, "-m", "posenc", "table", "--length", "8", "--d-model", "4", "--out", str(out)]
    code, _, err, _ = _held(argv, "before-write", tmp_path / "m", signal.SIGTERM)
    assert code == 143 and _one_line(err) == "posenc: error: interrupted by SIGTERM\n"  # once: killed, no line
    assert _names(tmp_path) == ["m"]


def test_sigint_just_after_the_write_is_one_line_and_the_whole_file(tmp_path):
    out = tmp_path / "t.npy"
    argv = [sys.executable, "-m", "posenc", "table", "--length", "8", "--d-model", "4", "--out", str(out)]
    code, _, err, _ = _held(argv, "after-write", tmp_path / "m", signal.SIGINT)
    assert code == 130 and _one_line(err) == "posenc: error: interrupted by SIGINT\n"
    assert np.load(out).shape == (8, 4) and _names(tmp_path) == ["m", "t.npy"]  # never a partial file


def test_sigint_mid_tour_keeps_the_old_set(tmp_path):
    pytest.importorskip("matplotlib")
    folder = tmp_path / "tour"
    folder.mkdir()
    old = {name: OLD + name.encode() for name in TOUR_FILES}
    for name, data in old.items():
        (folder / name).write_bytes(data)
    argv = [sys.executable, "-m", "posenc", "tour", "--out", str(folder)]
    code, _, err, _ = _held(argv, "mid-set", tmp_path / "m", signal.SIGINT)  # the first figure is aside
    assert code == 130
    assert _one_line(err) == (f"posenc: error: interrupted by SIGINT while writing {folder}; "
                              f"nothing in {folder} was changed\n")
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == old  # and no temporary


# ---------------------------------------------------------------- tour: all six files or none, in process


def _old_tour(folder: Path) -> dict[str, bytes]:
    folder.mkdir()
    old = {name: OLD + name.encode() for name in TOUR_FILES}
    for name, data in old.items():
        (folder / name).write_bytes(data)
    return old


def test_a_full_disk_at_the_page_keeps_the_old_figures(capsys, monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    folder = tmp_path / "tour"
    old = _old_tour(folder)
    real_write, written = os.write, []

    def write(fd, data):  # the last file (the page) meets a full disk; the five figures were fine
        name = os.readlink(f"/proc/self/fd/{fd}")
        written.append(Path(name).name.split(".")[1])
        if ".index.html." in name:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    monkeypatch.setattr(files.os, "write", write)
    code, _, err = run(capsys, "tour", "--out", str(folder))
    assert code == 2 and sorted(set(written)) == ["heatmap", "index", "kernel", "ladder", "rotation", "wave"]
    # once: five new figures beside the old page
    assert _one_line(err) == (f"posenc: error: cannot write {folder / 'index.html'}: No space left on device; "
                              f"nothing in {folder} was changed\n")
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == old


def test_a_failed_rename_puts_the_renamed_files_back(capsys, monkeypatch, tmp_path):
    pytest.importorskip("matplotlib")
    folder = tmp_path / "tour"
    old = _old_tour(folder)
    real_replace = os.replace

    def replace(src, dst):
        if Path(dst).name == "kernel.png" and str(src).endswith(".part"):  # the fourth rename
            raise OSError(errno.EIO, os.strerror(errno.EIO))
        return real_replace(src, dst)

    monkeypatch.setattr(files.os, "replace", replace)
    code, _, err = run(capsys, "tour", "--out", str(folder))
    assert code == 2 and _one_line(err).endswith(f"; nothing in {folder} was changed\n")
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == old  # wave, rotation, heatmap back


# ---------------------------------------------------------------- --out through a symlink


def test_out_naming_a_symlink_writes_through_it(capsys, tmp_path):
    real = tmp_path / "data" / "t.npy"
    real.parent.mkdir()
    real.write_bytes(OLD)
    link = tmp_path / "link.npy"
    link.symlink_to(real)
    code, _, _ = run(capsys, "table", "--length", "3", "--d-model", "4", "--out", str(link))
    assert code == 0 and link.is_symlink() and os.readlink(link) == str(real)  # once: the link became a file
    assert np.load(real).shape == (3, 4) and _names(real.parent) == ["t.npy"]  # written aside there, renamed


def test_a_dangling_symlink_creates_its_target(capsys, tmp_path):
    pytest.importorskip("matplotlib")
    real = tmp_path / "figs" / "w.svg"
    real.parent.mkdir()
    link = tmp_path / "w.svg"
    link.symlink_to(real)
    code, _, _ = run(capsys, "plot", "wave", "--out", str(link))
    assert code == 0 and link.is_symlink() and real.read_bytes().startswith(b"<?xml")


# ---------------------------------------------------------------- arguments


def test_an_alibi_penalty_whose_distance_overflows_is_refused(capsys):
    code, out, err = run(capsys, "alibi", "--heads", "1", "--penalty", "1e308")  # once: a warning, inf, exit 0
    assert code == 2 and out == ""
    assert _one_line(err).startswith("posenc: error: penalty must keep penalty/m_h finite (the distance is "
                                     "float64), got 1e308")
    assert run(capsys, "alibi", "--heads", "1", "--penalty", "1e300")[0] == 0


@pytest.mark.parametrize("spec", ["yarn:factor=4,factor=8", "yarn:factor=4,original_max=4096,"
                                  "original_max_position_embeddings=8192"])
def test_a_scaling_key_given_twice_is_refused(capsys, spec):
    code, _, err = run(capsys, "ladder", "--d-model", "64", "--scaling", spec)
    assert code == 2 and "given twice" in _one_line(err)


@pytest.mark.parametrize("cmd", ["page", "tour"])
@pytest.mark.parametrize("out", ["", "  "])
def test_an_empty_out_folder_is_refused(capsys, monkeypatch, tmp_path, cmd, out):
    monkeypatch.chdir(tmp_path)
    code, stdout, err = run(capsys, cmd, "--out", out)
    assert code == 2 and stdout == "" and "--out: expected a folder, got '" in _one_line(err)
    assert _names(tmp_path) == []  # once: index.html in the current folder


def test_write_page_refuses_an_empty_folder():
    pytest.importorskip("matplotlib")
    from posenc.cli.page import write_page

    with pytest.raises(PosEncError, match="out must name a folder, got ''"):
        write_page("")
