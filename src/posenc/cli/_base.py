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
import sys
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

import numpy as np

from ..errors import SHOW_LIMIT, show_value
from ..sinusoidal.conventions import Vaswani
from ..support.layout import sin_cos_views
from ..support.vocabulary import CHANNEL_LAYOUTS
from .typed import Shown, mark_negatives, unmark, unmarked, written_float, written_int

__all__ = [
    "COMMANDS",
    "Command",
    "CommandError",
    "Parser",
    "Typed",
    "add_json_option",
    "add_output_options",
    "at_least",
    "channel_roles",
    "command",
    "emit_json",
    "fixed",
    "folder",
    "integer",
    "integers",
    "jsonable",
    "model_options",
    "one_line",
    "plain_digits",
    "pos_text",
    "position",
    "real",
    "render_table",
    "short",
    "sig",
    "typed",
    "vector_text",
]

Run = Callable[[argparse.Namespace], int]
Setup = Callable[[argparse.ArgumentParser], None]


class CommandError(Exception):
    """A usage error: printed as one ``posenc: error: ...`` line, exit status 2."""


#: What ``position``, ``integer`` and ``real`` read: a number, optionally times π. A value that starts
#: with ``-`` (``--by -2pi``, ``-1e300``) is a value, not an option (:mod:`.typed`).
#: Each part can match only one way, so a 100 KB argument is read in linear time.
_NUMBER = re.compile(r"^([+-]?)((?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?)?\s*(?:\*\s*)?(pi|π)?$")
#: A word this long in a message is a pasted value, not a path or a name: it is cut to head and tail.
_LONG_WORD = re.compile(r"\S{301,}")


class Parser(argparse.ArgumentParser):
    """argparse, but its errors become :class:`CommandError` (one line, no usage dump).

    Negative numbers in any form a value takes (``-1e300``, ``-2pi``) are
    values: marked before parsing and read unmarked (:mod:`.typed`), through
    argparse's public interface only.
    """

    def parse_known_args(self, args: Iterable[str] | None = None, namespace: Any = None) -> Any:
        return super().parse_known_args(mark_negatives(list(sys.argv[1:] if args is None else args)), namespace)

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        return _reading_unmarked(super().add_argument(*args, **kwargs))

    def add_mutually_exclusive_group(self, **kwargs: Any) -> Any:
        return _adding_unmarked(super().add_mutually_exclusive_group(**kwargs))

    def add_argument_group(self, *args: Any, **kwargs: Any) -> Any:
        return _adding_unmarked(super().add_argument_group(*args, **kwargs))

    def error(self, message: str) -> Any:  # argparse declares NoReturn; raising keeps that promise
        raise CommandError(unmark(message))


def _adding_unmarked(group: Any) -> Any:
    add = group.add_argument
    group.add_argument = lambda *a, **k: _reading_unmarked(add(*a, **k))  # a group's arguments read unmarked too
    return group


def _reading_unmarked(action: argparse.Action) -> argparse.Action:
    if action.nargs != 0:  # it takes values: its type reads them without the mark
        action.type = unmarked(action.type)
    return action


def one_line(message: str) -> str:
    """``message`` on one line, every overlong word (a 100 KB argument) cut to its head and tail."""
    return _LONG_WORD.sub(lambda m: show_value(Shown(m.group()), 2 * SHOW_LIMIT), " ".join(str(message).split()))


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

#: Fullwidth signs and letters a number may be typed with (an East Asian keyboard), as ASCII.
_FULLWIDTH = {ord(c): ord(c) - 0xFEE0 for c in "＋－．ｅＥ＿"}


def plain_digits(text: str) -> str:
    """``text`` with every decimal digit ASCII (fullwidth ``１０``, Arabic-Indic ``١٠``), and ``＋－．ｅ＿`` too.

    Python's ``int`` and ``float`` read any script's digits; this reads them
    the same way for every kind of number the command takes, and nothing
    else: a superscript ``²`` is no digit.

    >>> plain_digits("１ｅ６"), plain_digits("١٠"), plain_digits("2²")
    ('1e6', '10', '2²')
    """
    out = []
    for ch in text.translate(_FULLWIDTH):
        d = unicodedata.decimal(ch, None) if not ch.isascii() else None
        out.append(ch if d is None else str(d))
    return "".join(out)


#: A count as the command reads it: a sign, digits with single ``_`` between them (as Python writes
#: ``1_000_000``), a fraction, an exponent (``1e6``, ``2.0E3``, ``1e1``); integral in value. Each part can
#: match one way only, so a 100 KB argument is read in linear time.
_COUNT = re.compile(r"([+-]?)((?:\d(?:_?\d)*(?:\.(?:\d(?:_?\d)*)?)?|\.\d(?:_?\d)*)(?:[eE][+-]?\d{1,9})?)", re.ASCII)
#: The same, without fraction or exponent: a position written so is an exact Python int.
_DIGITS = re.compile(r"[+-]?\d(?:_?\d)*", re.ASCII)


def position(text: str) -> int | float:
    """A position: an integer, a real number, or a multiple of π (``2pi``, ``0.5*π``).

    Integers written as digits stay Python ints so that the library, not
    float rounding, judges how large they may be. The value remembers its
    text for messages.

    >>> [type(position(t)).__name__ for t in ("12", "1e6", "2pi", "１０")], position("1_000") + 0
    (['WrittenInt', 'WrittenFloat', 'WrittenFloat', 'WrittenInt'], 1000)
    """
    ascii_text = plain_digits(text).strip()
    if _DIGITS.fullmatch(ascii_text):
        return written_int(int(ascii_text), text)
    m = _NUMBER.match(ascii_text)
    if m and m.group(3):
        sign, factor, _ = m.groups()
        value = math.pi if factor is None else float(factor) * math.pi
        return written_float(-value if sign == "-" else value, text)
    try:
        return written_float(float(ascii_text), text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected a number (e.g. 3, -2.5, 1e6, 2pi), got {show_value(text)}"
        ) from None


#: Counts above this are no count anyone means; refusing them keeps ``int()`` from building a huge number.
_MAX_DIGITS = 30


def integer(text: str) -> int:
    """A count: the one reader of every integer the command takes, alone or in a list (``--grid 64,1e2``).

    Written as positions are: ``4096``, ``1e6``, ``1E6``, ``1_000_000``,
    ``+5``, ``5.0``, ``１０``; refused: a value that is no integer (``2.5``,
    ``1e-3``), ``0x10`` (no base prefixes), ``inf``, and values of
    :data:`_MAX_DIGITS` digits or more.

    >>> [int(integer(t)) for t in ("1e6", "-3", "2.0E3", "+5", "１０")], integer("1e6")  # each shows as typed
    ([1000000, -3, 2000, 5, 10], 1e6)
    """
    m = _COUNT.fullmatch(plain_digits(text).strip())
    if m is None:
        raise argparse.ArgumentTypeError(f"expected an integer (e.g. 4096, 1e6), got {show_value(text)}")
    exact = Decimal(m.group(1) + m.group(2).replace("_", ""))
    if exact != exact.to_integral_value():
        raise argparse.ArgumentTypeError(f"expected an integer, got {show_value(text)}")
    if exact and exact.adjusted() >= _MAX_DIGITS:
        raise argparse.ArgumentTypeError(f"expected an integer below 1e{_MAX_DIGITS}, got {show_value(text)}")
    return written_int(int(exact), text)


def integers(text: str, sep: str = ",") -> tuple[int, ...]:
    """Counts separated by ``sep`` (``64,64``; ``4096x512`` with ``sep="x"``), each read by :func:`integer`.

    >>> [int(n) for n in integers("4e0,6.0,1_0")], [int(n) for n in integers("1e3X8", "x")]
    ([4, 6, 10], [1000, 8])
    """
    parts = re.split(re.escape(sep), text, flags=re.IGNORECASE) if sep else [text]
    example = "4096x512" if sep.lower() == "x" else "64,64"
    what = f"integers separated by {sep!r}" if sep != "," else "integers separated by commas"
    values = []
    for part in parts:
        try:
            values.append(integer(part))
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(
                f"expected {what} (e.g. {example}), each written as a count is (4096, 1e6), "
                f"got {show_value(part)} in {show_value(text)}") from None
    return tuple(values)


def folder(text: str) -> str:
    """A folder to write into: not empty (``--out ''`` once meant the current folder, unasked).

    >>> folder("out/")
    'out/'
    """
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a folder, got {show_value(text)}")
    return text


def real(text: str) -> float:
    """A real-number argument (the library checks its range); it remembers its text for messages.

    >>> real("１ｅ３"), float(real("１ｅ３"))
    (１ｅ３, 1000.0)
    """
    try:
        return written_float(float(plain_digits(text)), text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {show_value(text)}") from None


def add_json_option(parser: argparse.ArgumentParser) -> None:
    """``--json``: the same data, full precision (``examples`` and ``quiz``, whose digits are the seed's)."""
    parser.add_argument("--json", action="store_true", help="print the same data as JSON (full precision)")


def add_output_options(parser: argparse.ArgumentParser, digits: int = 6) -> None:
    """``--json`` and ``--digits``, shared by every subcommand that prints a table of computed values."""
    add_json_option(parser)
    parser.add_argument("--digits", type=_digits, default=digits, metavar="N",
                        help=f"decimal places in the table (default {digits})")


def _digits(text: str) -> int:
    n = integer(text)
    if not 0 <= n <= 17:
        raise argparse.ArgumentTypeError(f"expected 0 … 17 decimal places, got {show_value(n)}")  # as typed
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
    """Print ``obj`` as strict JSON (no NaN or Infinity tokens), read back before a character is printed."""
    text = json.dumps(jsonable(obj), indent=2, ensure_ascii=False, allow_nan=False)
    try:
        json.loads(text, parse_constant=_no_constant)
    except ValueError as exc:
        raise CommandError(f"the JSON output does not read back ({exc}); nothing printed") from None
    print(text)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is no JSON value")


class Typed(argparse.Action):
    """Store the option's value and note that it was typed: :func:`typed` then passes it on.

    An entry point refuses a setting beside a preset even at its default value
    (``--convention mae --base 10000``), so the command passes a setting only
    where the user typed it, never its default.
    """

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        namespace.typed_options = {*getattr(namespace, "typed_options", ()), self.dest}


def typed(args: argparse.Namespace, *names: str) -> dict[str, Any]:
    """The options among ``names`` (by ``dest``) that the user typed, for ``**`` into an entry point.

    >>> p = argparse.ArgumentParser()
    >>> _ = p.add_argument("--base", type=float, default=10000.0, action=Typed)
    >>> typed(p.parse_args([]), "base"), typed(p.parse_args(["--base", "10000"]), "base")
    ({}, {'base': 10000.0})
    """
    given = getattr(args, "typed_options", ())
    return {n: getattr(args, n) for n in names if n in given}


def model_options(parser: argparse.ArgumentParser, *, layout: bool = False, dtype: bool = False) -> None:
    """``--d-model`` (required) and ``--base``; ``--layout``/``--dtype`` where they matter."""
    parser.add_argument("--d-model", type=integer, required=True, metavar="D",
                        help="channels (a positive even integer)")
    parser.add_argument("--base", type=real, default=Vaswani.base, metavar="B", action=Typed,
                        help="ω_i = B^(-2i/D) (default 10000)")
    if layout:
        parser.add_argument("--layout", choices=CHANNEL_LAYOUTS, default=Vaswani.layout, action=Typed,
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
