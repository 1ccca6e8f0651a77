"""The command's signals, from its first instruction to its last: one line and the conventional exit code.

``posenc`` (the console script) and ``python -m posenc`` import the package
before :func:`posenc.cli.main` runs, and NumPy, matplotlib and the
subcommands take half a second to load. A Ctrl-C there used to print a
14–37-line ``KeyboardInterrupt`` traceback and end the process by signal.
So ``posenc/__init__.py`` imports this module before any other, and it calls :func:`guard`: when
the process is the command (and only then), SIGINT and SIGTERM print one
line and exit 130 or 143 (128 + the signal's number) until ``main`` takes
over (:func:`run_phase`), and again once it is done (:func:`exit_phase`),
when the signals are finally blocked so that none can kill the process
during Python's finalisation. A signal the shell set to be ignored
(``nohup``, ``&``) stays ignored.

This module imports only ``os``, ``signal``, ``sys`` and ``time``: it runs
before NumPy is loaded.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections.abc import Callable
from typing import Any

__all__ = ["EXIT_STATUS", "Terminated", "exit_phase", "guard", "guarded", "hold", "is_command", "mute", "run_phase"]

#: 128 + the signal's number, as a shell reports a process ended by it.
EXIT_STATUS: dict[int, int] = {signal.SIGINT: 130, signal.SIGTERM: 143}

#: Set by the fault tests only: ``STAGE:MARKER`` makes the command create MARKER at STAGE
#: (``import``, ``before-write``, ``after-write``, ``mid-set``) and wait (at most a minute) for a signal.
HOLD_AT_ENV = "POSENC_TEST_HOLD_AT"

_guarded = False


def guarded() -> bool:
    """Whether :func:`guard` took over this process's signals (it is the command)."""
    return _guarded


def mute() -> None:
    """A signal is being reported: ignore any further one, so no second Ctrl-C can raise a traceback."""
    if _guarded:
        _set({signal.SIGINT: signal.SIG_IGN, signal.SIGTERM: signal.SIG_IGN})


class Terminated(KeyboardInterrupt):
    """SIGTERM while the command runs: raised where it lands, so ``finally`` blocks run, like Ctrl-C's."""


def is_command() -> bool:
    """Whether this process is the ``posenc`` command (console script or ``python -m posenc``)."""
    argv0 = sys.argv[0] if sys.argv else ""
    name = os.path.basename(argv0)
    for tail in ("-script.pyw", "-script.py", ".exe"):
        name = name.removesuffix(tail)
    if name == "posenc":
        return True
    orig = list(getattr(sys, "orig_argv", []))
    if argv0 == "-m" and "-m" in orig:  # runpy imports the package before it finds __main__
        at = orig.index("-m")
        return orig[at + 1:at + 2] == ["posenc"]
    return "-mposenc" in orig


def _line(signum: int) -> str:
    return f"posenc: error: interrupted by {signal.Signals(signum).name}\n"


def _leave(signum: int, frame: Any) -> None:
    """Outside ``main``'s work: flush what was printed, say one line, exit 128 + signum."""
    try:
        sys.stdout.flush()
    except BaseException:  # a reentrant flush, a closed pipe: the line still goes out
        pass
    try:
        os.write(2, _line(signum).encode())
    finally:
        os._exit(EXIT_STATUS.get(signum, 128 + signum))


def _terminate(signum: int, frame: Any) -> None:
    raise Terminated(signal.Signals(signum).name)


def _set(handlers: dict[int, Any]) -> None:
    for s, h in handlers.items():
        if signal.getsignal(s) is not signal.SIG_IGN:  # nohup, `&`: the user asked for it
            signal.signal(s, h)


def guard() -> None:
    """Called first thing by ``posenc/__init__.py``: in the command only, signals end it with one line."""
    global _guarded
    if _guarded or not is_command():
        return
    _guarded = True
    _set({signal.SIGINT: _leave, signal.SIGTERM: _leave})
    hold("import")


def run_phase() -> None:
    """``main`` runs: SIGINT raises KeyboardInterrupt and SIGTERM :class:`Terminated`, caught by ``main``."""
    _set({signal.SIGINT: signal.default_int_handler, signal.SIGTERM: _terminate})


def exit_phase() -> None:
    """``main`` is done: a signal still pending is one line and its code; later ones are blocked.

    Blocked, not handled: Python's finalisation restores the default handlers, and a signal then
    would end the process by signal with no line.
    """
    try:
        sys.stdout.flush()
    except (OSError, ValueError):
        pass
    if not hasattr(signal, "pthread_sigmask"):  # pragma: no cover - not POSIX
        return
    _set({signal.SIGINT: _leave, signal.SIGTERM: _leave})
    signal.pthread_sigmask(signal.SIG_BLOCK, set(EXIT_STATUS))
    pending = signal.sigpending() & set(EXIT_STATUS)
    if pending:
        _leave(min(pending), None)


def hold(stage: str, stop: Callable[[], bool] | None = None) -> None:
    """The fault tests' hook (:data:`HOLD_AT_ENV`): at ``stage``, create the marker and wait for a signal.

    ``stop``: where a signal is only recorded (mid-write), whether one has been.
    """
    spec = os.environ.get(HOLD_AT_ENV, "")
    want, _, marker = spec.partition(":")
    if want != stage or not marker:
        return
    with open(marker, "w") as f:
        f.write(f"{os.getpid()} {'numpy' in sys.modules}\n")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and not (stop is not None and stop()):
        time.sleep(0.005)


guard()  # on import, before posenc loads NumPy: a no-op unless this process is the command
