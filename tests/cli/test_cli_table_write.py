"""``posenc table --out`` under faults (issue 10, section 3): the old file or the whole new one, never half.

Before: Ctrl-C during a write deleted the user's old file; SIGTERM left a
full-size .npy of zeros that np.load opened; a file-size limit left a partial
.csv; ``--length 10**12`` started an 8 TB file; two Ctrl-Cs printed a
traceback. Signals are sent to a real process (``python -m posenc``), held
mid-write by the test-only hook POSENC_TEST_HOLD_WRITE, so nothing depends on
timing; disk faults come from RLIMIT_FSIZE in the child (EFBIG) and from
os.write / os.posix_fallocate patched to fail (ENOSPC).
"""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_signals import Marker, popen

import posenc
import posenc.cli.files as files
from cli_helpers import run
from posenc.cli import main
from posenc.cli import tables as cli_tables

OLD = b"the user's old table\n"


def _command(out: Path, length: int = 30_000, d_model: int = 8, dtype: str = "float16") -> list[str]:
    # small and float16: no numba to load in the child, so each run takes about a second
    return [sys.executable, "-m", "posenc", "table", "--length", str(length), "--d-model", str(d_model),
            "--dtype", dtype, "--out", str(out)]


def _start(argv: list[str], marker: Path | None = None, fsize: int | None = None) -> subprocess.Popen[bytes]:
    env = dict(os.environ)
    if marker is not None:
        env[files.HOLD_ENV] = str(marker)

    def limit() -> None:  # in the child: a file-size limit, as `ulimit -f` sets it
        if fsize is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))

    # SIGINT at its default in the child, even when pytest runs as a background job (`make test &`)
    return popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, then=limit)


def _finish(proc: subprocess.Popen[bytes]) -> tuple[int, str, str]:
    out, err = proc.communicate(timeout=120)
    return proc.returncode, out.decode(), err.decode()


def _one_line(err: str) -> str:
    assert "Traceback" not in err and "Exception ignored" not in err, err
    assert err.count("\n") == 1 and err.startswith("posenc: error: "), err
    return err


def _folder(path: Path) -> list[str]:
    return sorted(p.name for p in path.parent.iterdir())


# ---------------------------------------------------------------- signals, in a real process


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".json"])
def test_ctrl_c_keeps_the_old_file(tmp_path, suffix):
    out = tmp_path / "work" / f"t{suffix}"
    out.parent.mkdir()
    out.write_bytes(OLD)
    marker = Marker(tmp_path / "mid-write")
    proc = _start(_command(out), marker.path)
    marker.wait(proc)
    proc.send_signal(signal.SIGINT)
    code, stdout, err = _finish(proc)
    assert code == 130 and stdout == ""
    assert _one_line(err) == f"posenc: error: interrupted by SIGINT while writing {out}; the old file is unchanged\n"
    assert out.read_bytes() == OLD
    assert _folder(out) == [out.name]  # no temporary behind


def test_sigterm_leaves_no_file_when_there_was_none(tmp_path):
    out = tmp_path / "work" / "t.npy"
    out.parent.mkdir()
    marker = Marker(tmp_path / "mid-write")
    proc = _start(_command(out), marker.path)
    marker.wait(proc)
    assert len(_folder(out)) == 1  # the temporary, half written
    proc.send_signal(signal.SIGTERM)
    code, _, err = _finish(proc)
    assert code == 143
    assert _one_line(err) == f"posenc: error: interrupted by SIGTERM while writing {out}; no file was created\n"
    assert _folder(out) == []  # once a full-size .npy of zeros


def test_sigterm_keeps_the_old_file(tmp_path):
    out = tmp_path / "work" / "t.json"
    out.parent.mkdir()
    out.write_bytes(OLD)
    marker = Marker(tmp_path / "mid-write")
    proc = _start(_command(out), marker.path)
    marker.wait(proc)
    proc.send_signal(signal.SIGTERM)
    code, _, err = _finish(proc)
    assert code == 143 and "SIGTERM" in _one_line(err) and str(out) in err
    assert out.read_bytes() == OLD and _folder(out) == [out.name]


def test_a_storm_of_signals_gives_one_line(tmp_path):
    # two Ctrl-Cs once printed a traceback; now every signal after the first is recorded and ignored
    out = tmp_path / "work" / "t.npy"
    out.parent.mkdir()
    out.write_bytes(OLD)
    marker = Marker(tmp_path / "mid-write")
    proc = _start(_command(out), marker.path)
    marker.wait(proc)
    for k in range(40):
        if proc.poll() is not None:
            break
        proc.send_signal(signal.SIGINT if k % 3 else signal.SIGTERM)
    for _ in range(20):  # and a few more while it exits, if it has not yet
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
    code, _, err = _finish(proc)
    # Python runs pending handlers in signal-number order, so SIGINT may be seen first: either way, one line
    name = "SIGINT" if code == 130 else "SIGTERM"
    assert code in (143, 130) and f"interrupted by {name} while writing {out}" in _one_line(err)
    assert out.read_bytes() == OLD and _folder(out) == [out.name]


# ---------------------------------------------------------------- a file-size limit (EFBIG), in a real process


def test_file_size_limit_mid_write_keeps_the_old_file(tmp_path):
    # .csv: only a lower bound of the size is known (1.1 MB), so the limit (2 MiB) is met mid-write (4.4 MB)
    out = tmp_path / "t.csv"
    out.write_bytes(OLD)
    proc = _start(_command(out, length=60_000), fsize=2 << 20)
    code, _, err = _finish(proc)
    assert code == 2
    assert _one_line(err) == f"posenc: error: cannot write {out}: File too large; the old file is unchanged\n"
    assert out.read_bytes() == OLD and _folder(out) == [out.name]


def test_file_size_limit_known_in_advance_is_refused_at_once(tmp_path):
    out = tmp_path / "t.npy"
    proc = _start(_command(out, length=100_000, d_model=512, dtype="float32"), fsize=1 << 20)
    code, _, err = _finish(proc)
    assert code == 2
    assert f"cannot write {out}: the file needs 195.3 MiB, over this process's file-size limit" in _one_line(err)
    assert _folder(out) == []


# ---------------------------------------------------------------- a full disk (ENOSPC), in process


def _fail_on_write(monkeypatch, call: int, code: int = errno.ENOSPC) -> list[int]:
    real = os.write
    calls: list[int] = []

    def write(fd, data):
        calls.append(fd)
        if len(calls) == call:
            raise OSError(code, os.strerror(code))
        return real(fd, data)

    monkeypatch.setattr(files.os, "write", write)
    return calls


@pytest.mark.parametrize("suffix", [".npy", ".csv", ".json"])
def test_disk_full_mid_write_keeps_the_old_file(capsys, monkeypatch, tmp_path, suffix):
    monkeypatch.setattr(cli_tables, "CHUNK_BYTES", 8 * 8 * 4)  # 4 rows a chunk: many writes
    out = tmp_path / f"t{suffix}"
    out.write_bytes(OLD)
    calls = _fail_on_write(monkeypatch, 3)
    code, stdout, err = run(capsys, "table", "--length", "40", "--d-model", "8", "--out", str(out))
    assert len(calls) == 3 and code == 2 and stdout == ""
    assert _one_line(err) == f"posenc: error: cannot write {out}: No space left on device; the old file is unchanged\n"
    assert out.read_bytes() == OLD and _folder(out) == [out.name]


def test_disk_full_at_preallocation(capsys, monkeypatch, tmp_path):
    def full(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(files.os, "posix_fallocate", full)
    calls = _fail_on_write(monkeypatch, 10**9)
    out = tmp_path / "t.npy"
    code, _, err = run(capsys, "table", "--length", "40", "--d-model", "8", "--out", str(out))
    assert code == 2 and "No space left on device; no file was created" in _one_line(err)
    assert calls == [] and _folder(out) == []  # failed before the first byte


def test_no_preallocation_on_this_file_system_still_writes(capsys, monkeypatch, tmp_path):
    def unsupported(fd, offset, length):
        raise OSError(errno.EOPNOTSUPP, os.strerror(errno.EOPNOTSUPP))

    monkeypatch.setattr(files.os, "posix_fallocate", unsupported)
    out = tmp_path / "t.npy"
    assert run(capsys, "table", "--length", "5", "--d-model", "8", "--out", str(out))[0] == 0
    np.testing.assert_array_equal(np.load(out), posenc.table(5, 8))


def test_free_space_is_checked_before_the_first_byte(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(files, "_free_bytes", lambda folder: 500)

    def no_temp(*a, **k):
        raise AssertionError("a temporary file was created")

    monkeypatch.setattr(files.tempfile, "mkstemp", no_temp)
    out = tmp_path / "t.npy"
    code, _, err = run(capsys, "table", "--length", "40", "--d-model", "8", "--out", str(out))
    # 128-byte header + 40 × 8 float32
    assert code == 2
    assert _one_line(err) == (f"posenc: error: cannot write {out}: the file needs 1.4 KiB and 500 bytes is free "
                              "there; nothing written\n")
    code, _, err = run(capsys, "table", "--length", "40", "--d-model", "8", "--out", str(tmp_path / "t.csv"))
    assert code == 2 and "needs at least 720 bytes" in err  # text: a lower bound, 2 bytes a value


def test_length_10_12_fails_at_once(capsys, monkeypatch, tmp_path):
    computed = []
    real = posenc.table
    monkeypatch.setattr(cli_tables, "table", lambda *a, **k: computed.append(a) or real(*a, **k))
    out = tmp_path / "t.npy"
    code, _, err = run(capsys, "table", "--length", str(10**12), "--d-model", "512", "--out", str(out))
    assert code == 2
    assert f"cannot write {out}: the file needs 1.8 PiB" in _one_line(err)
    assert len(computed) == 2 and all(a[0] <= 1 for a in computed)  # the two checks only: no rows computed
    assert _folder(out) == []


# ---------------------------------------------------------------- how the file is written


def test_no_memory_map(capsys, monkeypatch, tmp_path):
    # a memory-mapped file on a full disk is a bus error; the writer uses plain writes
    def no_map(*a, **k):
        raise AssertionError("memory map used")

    monkeypatch.setattr(np, "memmap", no_map)
    monkeypatch.setattr(np.lib.format, "open_memmap", no_map)
    monkeypatch.setattr(cli_tables, "CHUNK_BYTES", 8 * 8 * 3)
    out = tmp_path / "t.npy"
    assert run(capsys, "table", "--length", "10", "--start", "7", "--d-model", "8", "--dtype", "float64",
               "--out", str(out))[0] == 0
    got = np.load(out)
    assert got.dtype == np.float64 and got.shape == (10, 8)
    np.testing.assert_array_equal(got, posenc.table(10, 8, start=7, dtype=np.float64))


def test_written_aside_synced_then_renamed(capsys, monkeypatch, tmp_path):
    events: list[tuple[str, str]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(fd):
        events.append(("fsync", os.readlink(f"/proc/self/fd/{fd}")))
        return real_fsync(fd)

    def replace(src, dst):
        events.append(("replace", f"{src} -> {dst}"))
        return real_replace(src, dst)

    monkeypatch.setattr(files.os, "fsync", fsync)
    monkeypatch.setattr(files.os, "replace", replace)
    out = tmp_path / "t.json"
    out.write_bytes(OLD)
    assert run(capsys, "table", "--length", "3", "--d-model", "4", "--out", str(out))[0] == 0
    kinds = [k for k, _ in events]
    assert kinds == ["fsync", "replace", "fsync"]  # the file, the rename, the folder
    temp = events[0][1]
    assert Path(temp).parent == tmp_path and Path(temp).name.startswith(".t.json.") and temp.endswith(".part")
    assert events[1][1] == f"{temp} -> {out}"
    assert events[2][1] == str(tmp_path)
    assert json.loads(out.read_text())["length"] == 3


def test_replacing_a_file_keeps_its_permissions(capsys, tmp_path):
    out = tmp_path / "t.npy"
    out.write_bytes(OLD)
    out.chmod(0o640)
    assert run(capsys, "table", "--length", "3", "--d-model", "4", "--out", str(out))[0] == 0
    assert out.stat().st_mode & 0o777 == 0o640
    new = tmp_path / "new.npy"
    mask = os.umask(0o027)
    try:
        assert run(capsys, "table", "--length", "3", "--d-model", "4", "--out", str(new))[0] == 0
    finally:
        os.umask(mask)
    assert new.stat().st_mode & 0o777 == 0o640  # a new file gets 0666 less the umask, as open() would give


def test_a_folder_as_target(capsys, tmp_path):
    code, _, err = run(capsys, "table", "--length", "3", "--d-model", "4", "--out", str(tmp_path / "d.npy"))
    assert code == 0
    (tmp_path / "x.npy").mkdir()
    code, _, err = run(capsys, "table", "--length", "3", "--d-model", "4", "--out", str(tmp_path / "x.npy"))
    assert code == 2 and _one_line(err) == f"posenc: error: cannot write {tmp_path / 'x.npy'}: it is a folder\n"


def test_failure_mid_table_keeps_the_old_file(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(cli_tables, "CHUNK_BYTES", 8 * 4 * 2)
    real = posenc.table
    calls = []

    def flaky(*a, **k):
        calls.append(1)
        if len(calls) == 4:  # two checks, one good chunk, then a failure
            raise posenc.PosEncError("simulated failure")
        return real(*a, **k)

    monkeypatch.setattr(cli_tables, "table", flaky)
    out = tmp_path / "x.npy"
    out.write_bytes(OLD)
    code, _, err = run(capsys, "table", "--length", "6", "--d-model", "4", "--out", str(out))
    assert code == 2 and err == "posenc: error: simulated failure\n"
    assert out.read_bytes() == OLD and _folder(out) == [out.name]


@pytest.fixture
def python_ctrl_c():
    """Python's own Ctrl-C handler for the test: pytest run as a background job has SIGINT ignored, and an
    ignored SIGINT stays ignored while posenc writes."""
    saved = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, saved)


def test_an_interrupt_in_process_gives_the_handlers_back(capsys, monkeypatch, tmp_path, python_ctrl_c):
    # main(argv) called from Python: after the interrupted write, SIGINT and SIGTERM act as before
    monkeypatch.setattr(cli_tables, "CHUNK_BYTES", 8 * 4 * 2)
    real = posenc.table
    calls = []

    def interrupted(*a, **k):
        calls.append(1)
        if len(calls) == 4:
            os.kill(os.getpid(), signal.SIGINT)  # recorded by the writer, acted on at the next write
        return real(*a, **k)

    monkeypatch.setattr(cli_tables, "table", interrupted)
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    out = tmp_path / "x.csv"
    code = main(["table", "--length", "6", "--d-model", "4", "--out", str(out)])
    _, err = capsys.readouterr()
    assert code == 130 and "interrupted by SIGINT" in _one_line(err)
    assert _folder(out) == []
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before
