"""What every subcommand shares: the registry, argument types, and output helpers.

A subcommand is one function ``run(args) -> int`` plus one ``setup(parser)``
that declares its arguments, registered with :func:`command`. The parser is
built from the registry, so adding a subcommand (``posenc bench``) or an
option to one (``ladder --rope``) touches only the module that owns it.
"""

from __future__ import annotations

import argparse
import json
import math
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

import numpy as np

from ..layout import LAYOUTS, sin_cos_views

__all__ = [
    "COMMANDS",
    "Command",
    "CommandError",
    "Parser",
    "add_output_options",
    "at_least",
    "channel_roles",
    "command",
    "emit_json",
    "fixed",
    "integer",
    "jsonable",
    "model_options",
    "pos_text",
    "position",
    "real",
    "render_table",
    "short",
    "sig",
    "vector_text",
]

Run = Callable[[argparse.Namespace], int]
Setup = Callable[[argparse.ArgumentParser], None]


class CommandError(Exception):
    """A usage error: printed as one ``posenc: error: ...`` line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse, but its errors become :class:`CommandError` (one line, no usage dump)."""

    def error(self, message: str) -> Any:  # argparse declares NoReturn; raising keeps that promise
        raise CommandError(message)


@dataclass(frozen=True)
class Command:
    """A registered subcommand."""

    name: str
    help: str
    setup: Setup
    run: Run


#: Subcommands in the order ``posenc --help`` lists them.
COMMANDS: dict[str, Command] = {}


def command(name: str, help: str, setup: Setup) -> Callable[[Run], Run]:
    """Register ``run`` as subcommand ``name``; ``setup`` adds its arguments."""

    def register(run: Run) -> Run:
        if name in COMMANDS:
            raise RuntimeError(f"subcommand {name!r} registered twice")
        COMMANDS[name] = Command(name, help, setup, run)
        return run

    return register


# ---------------------------------------------------------------- argument types

_PI = re.compile(r"^\s*([+-]?)((?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)?\s*\*?\s*(?:pi|π)\s*$")


def position(text: str) -> int | float:
    """A position: an integer, a real number, or a multiple of π (``2pi``, ``0.5*π``).

    Integers stay Python ints so that the library, not float rounding, judges
    how large they may be.
    """
    try:
        return int(text)
    except ValueError:
        pass
    m = _PI.match(text)
    if m:
        sign, factor = m.groups()
        value = math.pi if factor is None else float(factor) * math.pi
        return -value if sign == "-" else value
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number (e.g. 3, -2.5, 1e6, 2pi), got {text!r}") from None


def integer(text: str) -> int:
    """An integer argument."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


def real(text: str) -> float:
    """A real-number argument (the library checks its range)."""
    try:
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None


def add_output_options(parser: argparse.ArgumentParser, digits: int = 6) -> None:
    """``--json`` and ``--digits``, shared by every analysis subcommand."""
    parser.add_argument("--json", action="store_true", help="print the same data as JSON (full precision)")
    parser.add_argument("--digits", type=_digits, default=digits, metavar="N",
                        help=f"decimal places in the table (default {digits})")


def _digits(text: str) -> int:
    n = integer(text)
    if not 0 <= n <= 17:
        raise argparse.ArgumentTypeError(f"expected 0 … 17 decimal places, got {n}")
    return n


# ---------------------------------------------------------------- text output

def fixed(x: float, digits: int) -> str:
    """``x`` with ``digits`` decimal places; never ``-0.000``."""
    text = f"{x:.{digits}f}"
    return text[1:] if text.startswith("-") and float(text) == 0 else text


def short(x: float, digits: int) -> str:
    """``x`` to ``digits`` places without trailing zeros, the way the seed writes it (``0``, ``0.8415``)."""
    text = fixed(x, digits)
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def vector_text(values: Iterable[float], digits: int) -> str:
    """``[0, 1, 0, 1]``: a vector as the seed prints it."""
    return "[" + ", ".join(short(float(v), digits) for v in values) + "]"


def render_table(headers: Sequence[str], rows: Iterable[Sequence[str]], align: str, indent: int = 2) -> str:
    """Aligned columns: ``align`` holds ``l`` or ``r`` per column (missing ones: ``l``).

    >>> print(render_table(["x", "value"], [["a", "1.5"], ["bb", "-10.25"]], "lr", indent=0))
    x    value
    a      1.5
    bb  -10.25
    """
    align = align.ljust(len(headers), "l")[: len(headers)]
    body = [list(r) for r in rows]
    widths = [len(h) for h in headers]
    for r in body:
        widths = [max(w, len(c)) for w, c in zip(widths, r, strict=False)]

    def line(cells: Sequence[str]) -> str:
        out = [c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align, strict=True)]
        return (" " * indent + "  ".join(out)).rstrip()

    return "\n".join([line(headers)] + [line(r) for r in body])


# ---------------------------------------------------------------- JSON output

def jsonable(obj: Any) -> Any:
    """Plain JSON values: arrays become lists, infinities ``None`` (JSON has none)."""
    if isinstance(obj, dict):
        return {str(k): jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return jsonable(obj.tolist())
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, (int, np.integer)):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    return obj


def emit_json(obj: Any) -> None:
    """Print ``obj`` as strict JSON (no NaN or Infinity tokens)."""
    print(json.dumps(jsonable(obj), indent=2, ensure_ascii=False, allow_nan=False))


def model_options(parser: argparse.ArgumentParser, *, layout: bool = False, dtype: bool = False) -> None:
    """``--d-model`` (required) and ``--base``; ``--layout``/``--dtype`` where they matter."""
    parser.add_argument("--d-model", type=integer, required=True, metavar="D",
                        help="channels (a positive even integer)")
    parser.add_argument("--base", type=real, default=10000.0, metavar="B", help="ω_i = B^(-2i/D) (default 10000)")
    if layout:
        parser.add_argument("--layout", choices=LAYOUTS, default="interleaved",
                            help="interleaved: sin at 2i, cos at 2i+1 (default); split: all sines, then all cosines")
    if dtype:
        parser.add_argument("--dtype", choices=("float16", "float32", "float64"), default="float32",
                            help="of the values (default float32)")


def pos_text(p: float) -> str:
    """A position as typed: ``1000``, ``-2.5``, ``6.283185307`` (2π)."""
    if isinstance(p, int) or float(p).is_integer():
        return str(int(p))
    return f"{p:.10g}"


def channel_roles(d: int, layout: str) -> list[tuple[int, str]]:
    """``(pair i, "sin"|"cos")`` of every channel in ``layout``."""
    n = d // 2
    roles: list[tuple[int, str]] = [(0, "")] * d
    s, c = sin_cos_views(np.arange(d), n, layout)
    for i in range(n):
        roles[int(s[i])] = (i, "sin")
        roles[int(c[i])] = (i, "cos")
    return roles


def sig(x: float, digits: int) -> str:
    """``digits`` significant digits, for values spanning magnitudes (ω, λ)."""
    return f"{x:.{max(digits, 1)}g}"


def at_least(x: float, digits: int) -> str:
    """``x`` to ``digits`` significant digits, rounded up: "use base >= that" must hold."""
    q = Decimal(x)
    step = Decimal(1).scaleb(q.adjusted() - max(digits, 1) + 1)
    return f"{q.quantize(step, rounding=ROUND_CEILING).normalize():f}"
