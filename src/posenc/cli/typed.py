"""Values as the user typed them, and negative numbers read as values: the command's side of its arguments.

The library shows a value in a message with :func:`posenc.errors.show_value`,
which shows a number whose type defines its own ``__repr__`` by that repr.
The command's argument types return such numbers (:class:`WrittenInt`,
:class:`WrittenFloat`), whose repr is the text typed (``1e300``, ``2pi``), so
a message from deep in the library quotes the argument as the user wrote it.
The library knows nothing of the command: any caller may pass numbers that
show themselves.

argparse reads an argument that starts with ``-`` as an option unless it
looks like a negative number to argparse (``-3``, ``-2.5``, not ``-1e300``,
``-2pi`` or ``-inf``). Rather than override argparse's private matcher, the
command marks each such argument before parsing (:func:`mark_negatives`): a
leading NUL, which no real command-line argument can hold (the operating
system passes them as C strings), so argparse, which takes an argument that
does not start with ``-`` for a value, reads it as a value. Every argument
type is wrapped (:func:`unmarked`) to read the text without the mark, and
every parser message drops it (:func:`unmark`).

The typed numbers are for messages only. The library receives plain
``int`` and ``float`` (:func:`plain`): NumPy writes a ``.npy`` header from
``repr``, so a :class:`WrittenInt` handed to it once wrote ``(1e6, 4)`` for
the shape, a file nothing can load. When a run with plain numbers is
refused, the command words the refusal with the numbers as typed
(:func:`posenc.cli.reworded`): the same run, again with the typed numbers,
its output discarded and every file write refused, up to the same refusal.
"""

from __future__ import annotations

import argparse
import copy
import functools
import re
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["MARK", "NEGATIVE", "Shown", "WrittenFloat", "WrittenInt", "mark_negatives", "plain", "plain_namespace",
           "respelled", "unmark", "unmarked", "written_float", "written_int"]

#: What the command reads as a negative value, not an option: ``-3``, ``-.5``, ``-1e300``, ``-2pi``, ``-inf``.
NEGATIVE = re.compile(r"^-(?:\d|\.\d|pi|π|inf|nan)", re.IGNORECASE)

#: The mark put before a negative value: no argument the operating system passes can hold a NUL.
MARK = "\x00"


class WrittenInt(int):
    """An integer argument that shows as it was typed (``1e6``): its repr is the text; ``str`` the digits.

    >>> n = written_int(1000000, " 1e6 ")
    >>> repr(n), str(n), n + 1
    ('1e6', '1000000', 1000001)
    """

    text: str

    def __repr__(self) -> str:
        return self.text

    __str__ = int.__repr__


class WrittenFloat(float):
    """A real argument that shows as it was typed (``1e300``, ``2pi``): its repr is the text; ``str`` the number.

    >>> x = written_float(2e300, "2e300")
    >>> repr(x), str(x)
    ('2e300', '2e+300')
    """

    text: str

    def __repr__(self) -> str:
        return self.text

    __str__ = float.__repr__


class Shown(str):
    """A string shown as it is, without quotes, by :func:`posenc.errors.show_value`.

    >>> repr(Shown("a long word"))
    'a long word'
    """

    def __repr__(self) -> str:
        return str.__str__(self)


def written_int(value: int, text: str) -> WrittenInt:
    """``value``, shown as ``text`` (stripped)."""
    out = WrittenInt(value)
    out.text = text.strip()
    return out


def written_float(value: float, text: str) -> WrittenFloat:
    """``value``, shown as ``text`` (stripped)."""
    out = WrittenFloat(value)
    out.text = text.strip()
    return out


def mark_negatives(args: Sequence[str]) -> list[str]:
    """``args`` with every negative value (:data:`NEGATIVE`) marked, so argparse reads it as a value.

    >>> mark_negatives(["encode", "-2pi", "--d-model", "8", "-3"])
    ['encode', '\\x00-2pi', '--d-model', '8', '\\x00-3']
    """
    return [MARK + a if isinstance(a, str) and NEGATIVE.match(a) else a for a in args]


#: The mark before a ``-``, as is or as a repr shows it (argparse quotes a rejected value with ``%r``).
_MARKED = re.compile(r"(?:\x00|\\x00)(?=-)")


def unmark(text: str) -> str:
    """``text`` without the marks :func:`mark_negatives` added (an argument, or a parser message quoting one).

    >>> unmark(mark_negatives(["-3"])[0]), unmark(repr(mark_negatives(["-3"])[0]))
    ('-3', "'-3'")
    """
    return _MARKED.sub("", text)


def unmarked(kind: Any) -> Callable[[str], Any]:
    """The argument type ``kind`` (None: the text itself) reading its text unmarked.

    Its errors read as argparse's own would, with the text as typed.
    """
    convert: Callable[[str], Any] = (lambda text: text) if kind is None else kind
    name = getattr(convert, "__name__", repr(convert))

    @functools.wraps(convert)
    def read(text: str) -> Any:
        plain = unmark(text) if isinstance(text, str) else text
        try:
            return convert(plain)
        except argparse.ArgumentTypeError:
            raise
        except (TypeError, ValueError):  # argparse's own wording, quoting the text as typed
            raise argparse.ArgumentTypeError(f"invalid {name} value: {plain!r}") from None

    return read


def plain(value: Any) -> Any:
    """``value`` with every typed number in it (lists and tuples too) a plain ``int`` or ``float``.

    >>> n = written_int(10**6, "1e6")
    >>> out = plain([n, (written_float(0.5, "5e-1"), "x")])
    >>> out, [type(v).__name__ for v in (out[0], out[1][0])]
    ([1000000, (0.5, 'x')], ['int', 'float'])
    """
    if isinstance(value, WrittenInt):
        return int(value)
    if isinstance(value, WrittenFloat):
        return float(value)
    if type(value) in (list, tuple):
        return type(value)(plain(v) for v in value)
    return value


def plain_namespace(args: Any) -> Any:
    """A copy of the parsed arguments ``args`` (an ``argparse.Namespace``) holding plain numbers only."""
    out = copy.copy(args)
    for key, value in vars(args).items():
        setattr(out, key, plain(value))
    return out


def respelled(value: Any) -> bool:
    """Whether ``value`` holds a number typed otherwise than Python writes it (``1e6``, not ``1000000``).

    >>> respelled([written_int(7, "7"), "x"]), respelled({"n": written_int(7, "7e0")})
    (False, True)
    """
    if isinstance(value, WrittenInt):
        return value.text != int.__repr__(value)
    if isinstance(value, WrittenFloat):
        return value.text != float.__repr__(value)
    if isinstance(value, dict):
        return any(respelled(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return any(respelled(v) for v in value)
    return False
