"""The ``posenc`` command (:func:`main`): :mod:`posenc.cli.command` parses and runs it.

This package's own module imports nothing at import time: ``import posenc``
loads :mod:`posenc.cli.signals` first (signals, before NumPy; it acts only
in the command's own process) and nothing else of the command. :func:`main` and the
names below load :mod:`posenc.cli.command` when first used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["REWORD_WITHIN", "build_parser", "main", "reworded"]


def main(argv: list[str] | None = None) -> int:
    """Run the command (:func:`posenc.cli.command.main`); returns the exit status."""
    from .command import main as run

    return run(argv)


def __getattr__(name: str) -> Any:
    if name in ("REWORD_WITHIN", "build_parser", "reworded"):
        from . import command

        return getattr(command, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
