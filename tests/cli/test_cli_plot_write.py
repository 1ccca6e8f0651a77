"""``posenc plot --out`` and ``posenc tour`` under faults: the old file or the whole new one, never half.

Before: both called ``fig.savefig(target)``, which writes the target in place,
so a file-size limit (``ulimit -f``) or a full disk mid-image left a partial
PNG where the user's old file was. Now the figure is rendered in memory and
written aside and renamed (:func:`posenc.cli.files.atomic_file`). The file-size
limit is set in a real child process (``python -m posenc``), where it meets
the old code and the new alike; a full disk comes from ``os.write`` patched
to fail, as in tests/cli/test_cli_table_write.py.
"""

from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

import posenc.cli.files as files
from cli_helpers import run
from posenc.page.families import SITE

OLD = b"the user's old figure\n"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
TOUR_FILES = ["heatmap.png", "index.html", "kernel.png", "ladder.png", "rotation.png", "wave.png"]


def _child(argv: list[str], fsize: int) -> tuple[int, str, str]:
    """``python -m posenc ARGV`` under a file-size limit of ``fsize`` bytes, as ``ulimit -f`` sets it."""
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    proc = subprocess.run([sys.executable, "-m", "posenc", *argv], capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL, preexec_fn=limit, timeout=300)
    return proc.returncode, proc.stdout, proc.stderr


def _one_line(err: str) -> str:
    assert "Traceback" not in err and err.count("\n") == 1 and err.startswith("posenc: error: "), err
    return err


def _names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def _old_tour(folder: Path) -> dict[str, bytes]:
    folder.mkdir()
    old = {name: OLD + name.encode() for name in TOUR_FILES}
    for name, data in old.items():
        (folder / name).write_bytes(data)
    return old


def _disk_full(monkeypatch) -> list[int]:
    """Every ``os.write`` of the writer fails with ENOSPC; returns the calls."""
    calls: list[int] = []

    def write(fd, data):
        calls.append(fd)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "write", write)
    return calls


# ---------------------------------------------------------------- a file-size limit, in a real process


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_over_the_file_size_limit_keeps_the_old_file(tmp_path, suffix):
    out = tmp_path / f"w{suffix}"
    out.write_bytes(OLD)
    code, stdout, err = _child(["plot", "wave", "--out", str(out)], fsize=4096)  # the figure is ~30-60 KB
    assert code == 2 and stdout == ""
    assert f"cannot write {out}: the file needs " in _one_line(err)
    assert err.rstrip().endswith("over this process's file-size limit (ulimit -f) of 4.0 KiB; nothing written")
    assert out.read_bytes() == OLD  # once the first 4 KiB of a PNG
    assert _names(tmp_path) == [out.name]  # no temporary behind


def test_tour_over_the_file_size_limit_keeps_every_old_file(tmp_path):
    folder = tmp_path / "tour"
    old = _old_tour(folder)
    code, stdout, err = _child(["tour", "--out", str(folder)], fsize=4096)
    assert code == 2 and "8 of 8 cases verified" in stdout  # the cases came first; the figures failed
    assert f"cannot write {folder / 'wave.png'}: the file needs " in _one_line(err)
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == old  # and no temporary


# ---------------------------------------------------------------- a full disk, in process


@pytest.mark.parametrize("suffix", [".png", ".svg"])
def test_plot_on_a_full_disk_keeps_the_old_file(capsys, monkeypatch, tmp_path, suffix):
    out = tmp_path / f"a{suffix}"
    out.write_bytes(OLD)
    calls = _disk_full(monkeypatch)
    code, stdout, err = run(capsys, "plot", "alibi", "--heads", "4", "--out", str(out))
    assert calls and code == 2 and stdout == ""
    assert _one_line(err) == f"posenc: error: cannot write {out}: No space left on device; the old file is unchanged\n"
    assert out.read_bytes() == OLD and _names(tmp_path) == [out.name]


def test_plot_on_a_full_disk_creates_nothing(capsys, monkeypatch, tmp_path):
    _disk_full(monkeypatch)
    out = tmp_path / "new.png"
    code, _, err = run(capsys, "plot", "wave", "--out", str(out))
    assert code == 2 and _one_line(err).endswith("No space left on device; no file was created\n")
    assert _names(tmp_path) == []


def test_tour_on_a_full_disk_keeps_every_old_file(capsys, monkeypatch, tmp_path):
    folder = tmp_path / "tour"
    old = _old_tour(folder)
    calls = _disk_full(monkeypatch)
    code, _, err = run(capsys, "tour", "--out", str(folder))
    assert len(calls) == 1 and code == 2  # the first figure's write: the tour stops there
    assert _one_line(err) == (f"posenc: error: cannot write {folder / 'wave.png'}: No space left on device; "
                              f"nothing in {folder} was changed\n")
    assert {name: (folder / name).read_bytes() for name in _names(folder)} == old


# ---------------------------------------------------------------- how the file is written


def test_plot_writes_aside_then_renames_keeping_permissions(capsys, monkeypatch, tmp_path):
    replaced: list[tuple[str, str]] = []
    real = os.replace

    def replace(src, dst):
        assert Path(dst).read_bytes() == OLD  # the target is untouched until the whole new file is there
        assert Path(src).read_bytes()[:8] == PNG_MAGIC
        replaced.append((str(src), str(dst)))
        return real(src, dst)

    monkeypatch.setattr(files.os, "replace", replace)
    out = tmp_path / "b.png"
    out.write_bytes(OLD)
    out.chmod(0o640)
    code, stdout, _ = run(capsys, "plot", "buckets", "--out", str(out))
    assert code == 0 and stdout == f"wrote {out}\n"
    [(src, dst)] = replaced
    assert dst == str(out) and Path(src).parent == tmp_path and Path(src).name.startswith(".b.png.")
    assert out.read_bytes()[:8] == PNG_MAGIC and out.stat().st_mode & 0o777 == 0o640
    assert _names(tmp_path) == [out.name]


def test_tour_writes_each_figure_aside(capsys, monkeypatch, tmp_path):
    targets: list[str] = []
    real = os.replace

    def replace(src, dst):
        targets.append(Path(dst).name)
        return real(src, dst)

    monkeypatch.setattr(files.os, "replace", replace)
    folder = tmp_path / "tour"
    assert run(capsys, "tour", "--out", str(folder))[0] == 0
    site = [name for name, _ in SITE]  # the worked-examples site, index.html first
    assert targets == ["wave.png", "rotation.png", "heatmap.png", "kernel.png", "ladder.png", *site]
    assert _names(folder) == sorted({*TOUR_FILES, *site})
