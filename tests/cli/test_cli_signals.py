"""The signal tests pass in any shell (issue 31, section 3), and an ignored SIGINT stays ignored mid-write.

Before: a fresh clone's ``make test`` started as a background job failed three
signal tests with exit 0 for 130. A job started with ``&`` inherits SIGINT
as ignored, its children too, and posenc rightly keeps an ignored SIGINT
ignored: the tests were not hermetic. Now every child a test signals starts
from :func:`cli_signals.popen` with the dispositions it needs. Here the
signal tests run once more in a pytest whose SIGINT is ignored, as in a
background job.

Also before: while writing a file, posenc recorded (and acted on) a SIGINT
that the process was started ignoring, though it ignored it at every other
moment.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from cli_signals import Marker, popen

import posenc.cli.files as files

ROOT = Path(__file__).resolve().parents[2]

#: Every test that sends a signal to a child, or to pytest's own process, but
#: ``test_sigint_mid_tour_keeps_the_old_set``: it signals its child through the same
#: ``_held`` (cli_signals.popen) as the three above, after a whole tour's work (13 s)
SIGNAL_TESTS = [
    "tests/cli/test_cli_hostile.py::test_a_signal_while_posenc_loads_is_one_line",
    "tests/cli/test_cli_hostile.py::test_sigterm_before_the_write_begins_is_one_line_and_no_file",
    "tests/cli/test_cli_hostile.py::test_sigint_just_after_the_write_is_one_line_and_the_whole_file",
    "tests/cli/test_cli_table_write.py::test_ctrl_c_keeps_the_old_file",
    "tests/cli/test_cli_table_write.py::test_sigterm_leaves_no_file_when_there_was_none",
    "tests/cli/test_cli_table_write.py::test_sigterm_keeps_the_old_file",
    "tests/cli/test_cli_table_write.py::test_a_storm_of_signals_gives_one_line",
    "tests/cli/test_cli_table_write.py::test_an_interrupt_in_process_gives_the_handlers_back",
]

# in the inner pytest: fail at once unless SIGINT really is ignored there, as in a background job
_INNER = ("import signal, sys, pytest\n"
          "assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN, signal.getsignal(signal.SIGINT)\n"
          "sys.exit(pytest.main(sys.argv[1:]))\n")


def test_the_signal_tests_pass_with_sigint_ignored():
    """As ``make test &`` runs them: before, three of them got exit 0 where 130 was due."""
    proc = popen([sys.executable, "-c", _INNER, "-q", "-p", "no:randomly", "-p", "no:cacheprovider", *SIGNAL_TESTS],
                 dispositions={signal.SIGINT: signal.SIG_IGN}, cwd=ROOT, stdin=subprocess.DEVNULL,
                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    out, _ = proc.communicate(timeout=900)
    text = out.decode(errors="replace")
    assert proc.returncode == 0, text[-3000:]
    assert " passed" in text and "failed" not in text and "skipped" not in text, text[-3000:]


def test_an_ignored_sigint_stays_ignored_mid_write(tmp_path):
    """nohup or ``&``: the SIGINT is dropped, the write goes on; the SIGTERM after it still stops it."""
    out = tmp_path / "t.npy"
    out.write_bytes(b"old")
    marker = Marker(tmp_path / "mid-write")
    env = dict(os.environ, **{files.HOLD_ENV: str(marker.path)})
    argv = [sys.executable, "-m", "posenc", "table", "--length", "30000", "--d-model", "8", "--dtype", "float16",
            "--out", str(out)]
    proc = popen(argv, dispositions={signal.SIGINT: signal.SIG_IGN}, env=env, stdout=subprocess.PIPE,
                 stderr=subprocess.PIPE)
    marker.wait(proc)
    proc.send_signal(signal.SIGINT)  # before: recorded, exit 130
    proc.send_signal(signal.SIGTERM)
    stdout, err = proc.communicate(timeout=120)
    assert (proc.returncode, stdout) == (143, b""), err
    assert err.decode() == f"posenc: error: interrupted by SIGTERM while writing {out}; the old file is unchanged\n"
    assert out.read_bytes() == b"old" and sorted(p.name for p in tmp_path.iterdir()) == ["mid-write", "t.npy"]

