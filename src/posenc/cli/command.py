"""The ``posenc`` command's parser and run: a thin layer over the public API.

Each subcommand lives in the module of its group and registers itself in
:data:`posenc.cli._base.COMMANDS`:

- :mod:`.analysis`: ``encode``, ``ladder``, ``context``, ``shift``, ``dot``, ``alias``
- :mod:`.tables`: ``table`` (stdout, or ``.npy``/``.csv``/``.json`` streamed in chunks)
- :mod:`.seed`: ``examples``, ``quiz``, ``tour`` (the seed's worked cases, live)
- :mod:`.bias`: ``alibi``, ``buckets`` (relative position biases)
- :mod:`.plotting`: ``plot KIND`` (figures, extra ``posenc[plot]``)
- :mod:`.page`: ``page`` (the worked examples as one web page, extra ``posenc[plot]``)

Exit status: 0 ok, 1 a failed check (``examples``, ``quiz``, ``shift``,
``context --check``), 2 bad input (one ``posenc: error: ...`` line on
stderr, no traceback), 130 for SIGINT and 143 for SIGTERM at any moment
(one line too: :mod:`posenc.cli.signals`).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import time
import traceback

from ..errors import PosEncError
from ..support.version import __version__
from . import analysis, bench, bias, page, parity, plotting, seed, tables, timesteps  # noqa: F401  (each registers its subcommands)
from . import signals as _early
from ._base import COMMANDS, CommandError, Parser, one_line
from .files import Interrupted, refusing_writes
from .typed import plain_namespace, respelled

__all__ = ["REWORD_WITHIN", "build_parser", "main", "reworded"]

#: Seconds: a refusal that came later than this, after real work, is not reworded (:func:`reworded` would
#: repeat the work); refusals come before any work, in milliseconds.
REWORD_WITHIN = 5.0

# how `posenc --help` lists them; subcommands registered later follow
_ORDER = ("encode", "table", "ladder", "context", "shift", "dot", "alias", "alibi", "buckets", "examples", "quiz",
          "plot", "page", "tour", "bench", "parity")


def build_parser() -> Parser:
    """The argument parser, one subparser per registered subcommand."""
    parser = Parser(
        prog="posenc",
        description="Exact sinusoidal positional encodings: the seed's worked examples, figures and analysis, live.",
    )
    parser.add_argument("--version", action="version", version=f"posenc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    listed = [COMMANDS[n] for n in _ORDER if n in COMMANDS]
    for cmd in listed + [c for c in COMMANDS.values() if c.name not in _ORDER]:
        p = sub.add_parser(cmd.name, help=cmd.help, description=cmd.help)
        cmd.setup(p)
        p.set_defaults(run=cmd.run)
    return parser


def _error(message: str) -> int:
    print(f"posenc: error: {one_line(message)}", file=sys.stderr)  # whatever the message held
    return 2


def _utf8_or_replace() -> None:
    # A C-locale terminal cannot print ω or ✓; print '?' rather than crash.
    for stream in (sys.stdout, sys.stderr):
        enc = (getattr(stream, "encoding", None) or "").lower().replace("-", "")
        if enc != "utf8" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="replace")


def main(argv: list[str] | None = None) -> int:
    """Run the command; returns the exit status (0 ok, 1 a failed check, 2 bad input, 130/143 a signal).

    As the process's own command (``posenc``, ``python -m posenc``), SIGINT
    and SIGTERM are one ``posenc: error:`` line and exit 130 or 143 at every
    moment, from the first import to the exit (:mod:`posenc.cli.signals`).
    """
    if argv is not None or not _early.guarded():
        return _run(argv)
    _early.run_phase()
    try:
        code = _run(argv)
    except KeyboardInterrupt as exc:  # landed while an error was being reported
        code = _interrupted(exc)
    _early.exit_phase()
    return code


def _interrupted(exc: KeyboardInterrupt) -> int:
    _early.mute()
    name = "SIGTERM" if isinstance(exc, _early.Terminated) else "SIGINT"
    _error(f"interrupted by {name}")
    return _early.EXIT_STATUS[signal.SIGTERM if name == "SIGTERM" else signal.SIGINT]


def _run(argv: list[str] | None) -> int:
    _utf8_or_replace()
    typed: argparse.Namespace | None = None
    began = time.monotonic()
    try:
        typed = build_parser().parse_args(argv)
        typed.as_command = argv is None  # the process's own command: it may keep signals muted while it exits
        began = time.monotonic()
        return int(typed.run(plain_namespace(typed)))  # the library gets plain numbers, never the spelling
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except (CommandError, PosEncError) as exc:
        try:
            late = time.monotonic() - began > REWORD_WITHIN
            return _error(str(exc) if typed is None or late else reworded(exc, typed))
        except KeyboardInterrupt as stop:  # Ctrl-C while the message was being worded
            return _interrupted(stop)
    except BrokenPipeError:
        # the reader went away (`posenc table ... | head`): stop quietly
        try:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        return 0
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        return _error(f"cannot write {where}{exc.strerror or exc}")
    except ImportError as exc:  # a missing extra; the message names it
        return _error(str(exc))
    except Interrupted as exc:  # a file write stopped by a signal: the old file is untouched
        _early.mute()
        _error(str(exc))
        return exc.exit_status
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated) in the process's own command
        return _interrupted(exc)


class _Discard:
    """A stream that keeps nothing: the output of :func:`reworded`'s second run."""

    encoding = "utf-8"

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def _raised_at(exc: BaseException) -> tuple[str, int, str] | None:
    frames = traceback.extract_tb(exc.__traceback__)
    return (frames[-1].filename, frames[-1].lineno or 0, type(exc).__name__) if frames else None


def reworded(exc: CommandError | PosEncError, typed: argparse.Namespace) -> str:
    """The message of ``exc``, raised by a run on plain numbers, with the numbers as the user typed them.

    The run is made again with the typed numbers (their ``repr`` is the text
    typed, :mod:`.typed`), which every message shows through
    :func:`posenc.errors.show_value`; nothing of that second run gets out:
    its output is discarded and any file write refused before a byte.
    Its message is used only when it was raised where the first one was
    (same file, line and class): the same check, on the same values. Run
    only when some number was typed otherwise than Python writes it.
    """
    message = str(exc)
    if not respelled(vars(typed)):
        return message
    where = _raised_at(exc)
    try:
        with contextlib.redirect_stdout(_Discard()), contextlib.redirect_stderr(_Discard()), refusing_writes():
            typed.run(typed)
    except (CommandError, PosEncError) as again:
        if where is not None and _raised_at(again) == where:
            return str(again)
    except Exception:  # a refused write, or any other end: the first message stands
        pass
    return message
