"""Children a test signals, started with the signal dispositions the test needs, whatever shell ran pytest.

A job started with ``&`` from a non-interactive shell inherits SIGINT (and
SIGQUIT) as ignored, and a child inherits that in turn: ``posenc`` then keeps
ignoring SIGINT, as it should (``posenc.cli.signals``), and a test that expects
exit 130 after a Ctrl-C got 0. So every child a test signals starts from
:func:`popen`, which sets SIGINT, SIGTERM and SIGPIPE to their defaults in
the child before it runs (what a foreground shell gives), or to what the
test asks.

The moment a test signals at (posenc's test hooks, ``posenc._early.hold``
and the mid-write hold of ``posenc._files``) is waited for with
:class:`Marker`: the child's write of its marker wakes the test, no polling.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

#: The dispositions a foreground shell gives a command.
DEFAULTS: dict[int, Any] = {signal.SIGINT: signal.SIG_DFL, signal.SIGTERM: signal.SIG_DFL,
                            signal.SIGPIPE: signal.SIG_DFL}


def popen(argv: Sequence[str], *, dispositions: Mapping[int, Any] | None = None,
          then: Callable[[], None] | None = None, **kwargs: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **kwargs)`` whose child starts with :data:`DEFAULTS`, updated by ``dispositions``.

    ``then`` runs in the child after them (a file-size limit, say).
    """
    wanted = {**DEFAULTS, **(dispositions or {})}

    def child() -> None:
        for signum, handler in wanted.items():
            signal.signal(signum, handler)
        if then is not None:
            then()

    return subprocess.Popen(list(argv), preexec_fn=child, **kwargs)


class Marker:
    """A FIFO at ``path``, where a child's test hook writes its marker line: :meth:`wait` wakes on that write.

    Made before the child starts: its read end is open already, so the child's ``open(path, "w")`` goes through
    and its line lands in the pipe. Linux reports no hang-up on a FIFO until a writer has come (and gone), so
    the wait sleeps until the line arrives, checking once a second that the child is still alive.
    """

    def __init__(self, path: Path) -> None:
        os.mkfifo(path)
        self.path = path
        self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)

    def wait(self, proc: subprocess.Popen[bytes], timeout: float = 120.0) -> str:
        """The marker's line (once it ends in a newline); the test fails if ``proc`` exits or ``timeout`` passes."""
        deadline = time.monotonic() + timeout  # a bound against a hang, not a timing: the child waits for us
        data = b""
        try:
            with selectors.DefaultSelector() as sel:
                sel.register(self._fd, selectors.EVENT_READ)
                while not data.endswith(b"\n"):
                    left = deadline - time.monotonic()
                    assert left > 0, f"the child never wrote {self.path}"
                    if sel.select(min(left, 1.0)):
                        data += os.read(self._fd, 4096)
                    elif proc.poll() is not None:
                        raise AssertionError(proc.communicate())
        finally:
            os.close(self._fd)
        return data.decode()
