"""The ``posenc`` command: a thin layer over the public API.

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
(one line too: :mod:`posenc._early`).
"""

from __future__ import annotations

import os
import signal
import sys

from .. import __version__, _early
from .._files import Interrupted
from ..errors import PosEncError
from . import analysis, bench, bias, page, plotting, seed, tables, timesteps  # noqa: F401  (each registers its subcommands)
from ._base import COMMANDS, CommandError, Parser, one_line

__all__ = ["build_parser", "main"]

# how `posenc --help` lists them; subcommands registered later follow
_ORDER = ("encode", "table", "ladder", "context", "shift", "dot", "alias", "alibi", "buckets", "examples", "quiz",
          "plot", "page", "tour", "bench")


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
    moment, from the first import to the exit (:mod:`posenc._early`).
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
    try:
        args = build_parser().parse_args(argv)
        args.as_command = argv is None  # the process's own command: it may keep signals muted while it exits
        return int(args.run(args))
    except SystemExit as exc:  # --help, --version
        return exc.code if isinstance(exc.code, int) else 0
    except (CommandError, PosEncError) as exc:
        return _error(str(exc))
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
